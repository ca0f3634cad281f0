//! Codex CLI sessions loaded through the adapter seam into the neutral trace, checked against the
//! recording's ground truth (`tests/recordings/codex-0.171.0/`: the mock model's log of every
//! request it received, with the true input size of each), replayed, listed, classified, and
//! loaded from damaged rollouts.
//!
//! `cargo test --test it codex_trace -- --nocapture` prints the per-request sizing table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tierscope_engine::episode::classify;
use tierscope_engine::episode::rules::Rules;
use tierscope_engine::episode::segment::{self, Segmentation};
use tierscope_engine::episode::EpisodeKind;
use tierscope_engine::formats::codex::to_trace::{SUMMARY_PREFIX, WIRE};
use tierscope_engine::policy;
use tierscope_engine::replay;
use tierscope_engine::session::{self, LoadOptions, LoadedSession};
use tierscope_engine::trace::{
    CompactionStyle, DiagnosticKind, ListingCache, ModelRef, PartKind, RequestStatus, SourceKind,
    ToolStatus, Trace, UserKind,
};

const REC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/codex-0.171.0"
);
const THREAD: &str = "01a23555-a9c3-78b2-acc5-cacf3e71aa76";
const BIN: &str = env!("CARGO_BIN_EXE_tierscope");

fn rec(rel: &str) -> PathBuf {
    Path::new(REC).join(rel)
}

fn home() -> PathBuf {
    rec("dot-codex")
}

fn rollout_path() -> PathBuf {
    rec("dot-codex/sessions/2026/12/02/rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa76.jsonl")
}

/// The mock's log: one line per request it received.
fn mock_log() -> Vec<Value> {
    let p = rec("log/compaction_logscan.mock.jsonl");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("mock line"))
        .collect()
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn trace_of(path: &Path) -> Trace {
    tierscope_engine::trace::open(Some(path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .load_session(None)
        .expect("the thread loads")
}

fn load(path: &Path) -> LoadedSession {
    session::load(&LoadOptions {
        path: Some(path.to_owned()),
        ..LoadOptions::default()
    })
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// The thread's requests are the model's, one to one and in order: each request's prompt is the
/// input the model counted, its usage the model's (made disjoint), compaction calls where the
/// model received them.
#[test]
fn every_request_is_one_the_model_received() {
    let t = trace_of(&home());
    let log = mock_log();
    assert_eq!(t.requests.len(), log.len());
    assert_eq!(t.requests.len(), 23);
    for (r, m) in t.requests.iter().zip(&log) {
        let seq = u(m, "seq");
        assert_eq!(r.prompt, u(m, "input_tokens"), "seq {seq}: prompt");
        assert_eq!(r.recorded_prompt(), r.prompt);
        assert_eq!(r.usage.input + r.usage.cache_read, u(m, "input_tokens"));
        assert_eq!(r.usage.cache_read, u(m, "cached_tokens"), "seq {seq}");
        assert_eq!(r.usage.output + r.usage.reasoning, u(m, "output_tokens"));
        assert_eq!(r.usage.reasoning, u(m, "reasoning_tokens"), "seq {seq}");
        assert_eq!(r.usage.cache_write, 0);
        assert_eq!(r.synthetic_call, m["kind"] == "compaction", "seq {seq}");
        assert_eq!(r.status, RequestStatus::Ok, "seq {seq}");
        let msg = &t.messages[r.message_index];
        assert!(msg.is_assistant() && msg.id == r.message_id);
        assert_eq!(msg.summary, r.synthetic_call);
        assert_eq!(
            r.model,
            Some(ModelRef {
                provider_id: "mock".into(),
                model_id: "scripted-1".into()
            })
        );
        // Every request answers a human turn.
        let user = r.user_message_id.as_deref().expect("user message");
        assert_eq!(
            t.message(user).and_then(|m| m.user_kind),
            Some(UserKind::Human)
        );
        assert!(r.cost > 0.0);
    }
    // Requests in time order, each on its own assistant message.
    assert!(
        t.requests
            .windows(2)
            .all(|w| w[0].message_index < w[1].message_index
                && w[0].time_created <= w[1].time_created)
    );
}

/// Summed usage equals ccusage 20.0.24's report of this thread (see `codex_rollout.rs`):
/// inputTokens 176,464 (uncached), cacheReadTokens 340,736, outputTokens 2,717 (reasoning
/// included: tierscope's `output` leaves the 24 reasoning tokens out), no cache writes.
#[test]
fn usage_equals_ccusage() {
    let t = trace_of(&home());
    let u = t.total_usage();
    assert_eq!(
        (
            u.input,
            u.cache_read,
            u.output + u.reasoning,
            u.reasoning,
            u.cache_write
        ),
        (176_464, 340_736, 2_717, 24, 0)
    );
    // Priced by the table's default (the mock's model is in no table), and said.
    assert!(
        (t.total_cost() - 0.290342).abs() < 1e-9,
        "{}",
        t.total_cost()
    );
    assert!(t.diagnostics.items().iter().any(|d| d
        .example
        .contains("mock/scripted-1 is not in the pricing table")));
}

/// The session, its origin, its messages and its compactions.
#[test]
fn the_thread_reads_as_a_session() {
    let t = trace_of(&home());
    assert_eq!(t.session.id, THREAD);
    assert!(t.session.title.starts_with("We had a 5xx spike"));
    assert_eq!(t.session.directory, "/home/dev/src/logscan");
    assert_eq!(t.session.version.as_deref(), Some("0.171.0"));
    assert_eq!(t.session.parent_id, None);
    assert_eq!(
        t.session.model.as_ref().map(|m| m.model_id.as_str()),
        Some("scripted-1")
    );
    assert_eq!(t.origin.agent, "codex");
    assert_eq!(t.origin.format, "rollout");
    assert_eq!(t.origin.rules, "replacement-history");
    assert_eq!(t.origin.rules_version, Some((0, 171, 0)));
    assert_eq!(t.wire, WIRE);
    assert_eq!(
        t.source,
        SourceKind::SessionFile(rollout_path().display().to_string())
    );
    assert_eq!(t.diagnostics.problems().count(), 0, "{:?}", t.diagnostics);

    // 6 human prompts; Codex's skills developer message and environment context injected.
    let kinds: Vec<UserKind> = t.messages.iter().filter_map(|m| m.user_kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == UserKind::Human).count(), 6);
    assert_eq!(
        kinds.iter().filter(|k| **k == UserKind::Injected).count(),
        2
    );
    assert!(t.messages[0].text().starts_with("<skills_instructions>"));
    assert!(t.messages[1].text().starts_with("<environment_context>"));
    assert_eq!(t.messages.len(), 31);

    // Two automatic compactions: the summary message holds what the next request started from.
    assert_eq!(t.compactions.len(), 2);
    let kept_users = [2usize, 4];
    for (c, kept) in t.compactions.iter().zip(kept_users) {
        assert_eq!(c.style, CompactionStyle::BeforeTail);
        assert_eq!(c.user_message_id, None);
        assert!(c.auto && !c.overflow);
        assert!(c.summary_text.starts_with(SUMMARY_PREFIX));
        let ri = c.summary_request.expect("a summary request");
        assert!(t.requests[ri].synthetic_call);
        let m = t
            .message(c.summary_message_id.as_deref().expect("summary message"))
            .expect("summary message");
        assert!(m.summary && m.is_assistant());
        assert_eq!(m.id, t.requests[ri].message_id);
        // The kept user messages verbatim, the fresh context, then the summary, as sent.
        let texts: Vec<String> = m
            .parts
            .iter()
            .filter_map(|p| match &p.kind {
                PartKind::Text { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(texts.len(), kept + 3);
        assert_eq!(texts.last(), Some(&c.summary_text));
        let humans: Vec<String> = t.human_turns().take(kept).map(|h| h.text()).collect();
        let kept_texts: Vec<&String> = texts.iter().filter(|x| humans.contains(x)).collect();
        assert_eq!(kept_texts.len(), kept);
    }
    assert_eq!(
        t.compactions
            .iter()
            .filter_map(|c| c.summary_request)
            .collect::<Vec<_>>(),
        vec![5, 14]
    );
}

/// Tool calls as neutral tool parts: their core names, exit codes, inputs and paired outputs.
#[test]
fn tool_calls_are_tool_parts_with_their_core_names() {
    let t = trace_of(&home());
    let tools: Vec<_> = t
        .messages
        .iter()
        .flat_map(|m| m.tool_parts().map(|(_, tp)| tp))
        .collect();
    assert_eq!(tools.len(), 20);
    let by = |name: &str| tools.iter().filter(|t| t.tool == name).count();
    assert_eq!(
        (by("exec_command"), by("update_plan"), by("apply_patch")),
        (17, 2, 1)
    );
    for tp in &tools {
        assert_eq!(tp.status, ToolStatus::Completed, "{}", tp.call_id);
        assert!(tp.output.is_some() && !tp.failed());
        match tp.tool.as_str() {
            "exec_command" => {
                assert_eq!(tp.behaves_as(), "bash");
                assert_eq!(tp.exit_code(), Some(0));
                assert!(!tierscope_engine::episode::reading::tool_command(tp).is_empty());
            }
            "update_plan" => assert_eq!(tp.behaves_as(), "todowrite"),
            "apply_patch" => {
                assert_eq!(tp.behaves_as(), "apply_patch");
                assert!(tp
                    .input
                    .as_str()
                    .is_some_and(|p| p.starts_with("*** Begin Patch")));
                assert_eq!(
                    tierscope_engine::episode::reading::tool_files(tp),
                    vec!["FINDINGS.md".to_owned()]
                );
            }
            other => panic!("unexpected tool {other}"),
        }
    }
    // The plan's steps are todos: completing them is a milestone.
    let todos = segment::todo_changes(&t);
    assert!(!todos.is_empty());
    assert!(todos.iter().all(|c| c.to == "completed"));
}

/// One replay of the recording under a policy: per request (ours, the model's), the requests
/// each system chunk was estimated from left out (they fit by construction).
fn replay_pairs(l: &LoadedSession, policy: &str) -> Vec<(usize, bool, u64, u64)> {
    let p = policy::load(policy, &[]).expect("policy");
    let r = replay::replay_session(l, &p, None);
    let log = mock_log();
    assert_eq!(r.frames.len(), log.len());
    let calibration: Vec<usize> = r
        .trace
        .system_segments
        .iter()
        .filter_map(|s| s.from_request)
        .collect();
    r.frames
        .iter()
        .zip(&log)
        .filter(|(f, _)| !calibration.contains(&f.request))
        .map(|(f, m)| {
            assert_eq!(f.synthetic_call, m["kind"] == "compaction");
            (f.request, f.synthetic_call, f.tokens, u(m, "input_tokens"))
        })
        .collect()
}

fn err_pct(ours: u64, theirs: u64) -> f64 {
    (ours as f64 - theirs as f64).abs() / theirs as f64 * 100.0
}

fn median_max(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    assert!(n > 0);
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    (median, s[n - 1])
}

/// The replay following the recording (`opencode`, no budget: Codex's compactions as recorded)
/// sizes each request within 2 % (median) and 10 % (max) of what the model received; `full`
/// (never compacting) sizes the requests before the first compaction the same way. Loaded from
/// the home and from the rollout alone, the figures are the same.
#[test]
fn the_replay_sizes_each_request_as_the_model_received_it() {
    let from_home = load(&home());
    let from_file = load(&rollout_path());
    let pairs = replay_pairs(&from_home, "codex");
    assert_eq!(pairs, replay_pairs(&from_file, "codex"));
    println!("| request | kind | replay | model | error % |");
    println!("|---|---|---|---|---|");
    for (i, call, ours, theirs) in &pairs {
        println!(
            "| {i} | {} | {ours} | {theirs} | {:.2} |",
            if *call { "compaction" } else { "turn" },
            err_pct(*ours, *theirs)
        );
    }
    let turns: Vec<f64> = pairs
        .iter()
        .filter(|p| !p.1)
        .map(|p| err_pct(p.2, p.3))
        .collect();
    let calls: Vec<f64> = pairs
        .iter()
        .filter(|p| p.1)
        .map(|p| err_pct(p.2, p.3))
        .collect();
    let (tm, tx) = median_max(&turns);
    let (cm, cx) = median_max(&calls);
    println!(
        "turns: median {tm:.2} % max {tx:.2} % ({}); compaction calls: median {cm:.2} % max {cx:.2} % ({})",
        turns.len(),
        calls.len()
    );
    assert_eq!((turns.len(), calls.len()), (20, 1));
    assert!(tm <= 2.0 && tx <= 10.0, "turns: {tm:.2} / {tx:.2}");
    assert!(
        cm <= 2.0 && cx <= 10.0,
        "compaction calls: {cm:.2} / {cx:.2}"
    );

    // `full` never compacts: until the first compaction it is what was sent.
    let full: Vec<f64> = replay_pairs(&from_home, "full")
        .iter()
        .filter(|p| p.0 < 5)
        .map(|p| err_pct(p.2, p.3))
        .collect();
    let (fm, fx) = median_max(&full);
    println!("full before the first compaction: median {fm:.2} % max {fx:.2} %");
    assert!(fm <= 2.0 && fx <= 10.0, "full: {fm:.2} / {fx:.2}");
}

/// Episodes: one per human turn (the injected context before the first belongs to the first,
/// which is titled by its prompt), investigation and edit kinds from Codex's commands and
/// patch, a compaction as a milestone.
#[test]
fn episodes_read_codex_tools() {
    let l = load(&home());
    assert_eq!(l.episodes.len(), 6);
    assert!(l
        .episodes
        .iter()
        .all(|e| e.kinds.contains(&EpisodeKind::Turn)));
    assert!(
        l.episodes[0].title.starts_with("We had a 5xx spike"),
        "{}",
        l.episodes[0].title
    );
    assert!(l.episodes[0..5]
        .iter()
        .all(|e| e.kinds.contains(&EpisodeKind::Investigation)));
    let last = l.episodes.last().expect("episodes");
    assert!(last.kinds.contains(&EpisodeKind::Edit));
    assert!(
        last.keys.iter().any(|k| k == "FINDINGS.md"),
        "{:?}",
        last.keys
    );
    // The compaction calls and the plan's completion are milestones.
    assert!(l.milestones.contains(&5) && l.milestones.contains(&14));
}

/// A JSON line of a rollout.
fn line(ts: &str, kind: &str, payload: Value) -> String {
    serde_json::json!({"timestamp": ts, "type": kind, "payload": payload}).to_string()
}

fn record(ts: &str, id: &str, input: u64, cached: u64, output: u64) -> String {
    line(
        ts,
        "token_usage_record",
        serde_json::json!({"response_id": id, "usage": {
            "input_tokens": input, "cached_input_tokens": cached, "output_tokens": output,
            "reasoning_output_tokens": 0, "total_tokens": input + output}}),
    )
}

fn meta(id: &str, source: Value) -> String {
    line(
        "2026-12-03T10:00:00.000Z",
        "session_meta",
        serde_json::json!({"id": id, "timestamp": "2026-12-03T10:00:00.000Z", "cwd": "/p",
            "cli_version": "0.171.0", "source": source, "model_provider": "openai"}),
    )
}

fn user(ts: &str, text: &str) -> String {
    line(
        ts,
        "response_item",
        serde_json::json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}),
    )
}

fn call(ts: &str, id: &str, cmd: &str) -> String {
    line(
        ts,
        "response_item",
        serde_json::json!({"type": "function_call", "name": "exec_command", "call_id": id,
            "arguments": serde_json::json!({"cmd": cmd}).to_string()}),
    )
}

fn output(ts: &str, id: &str, out: &str) -> String {
    line(
        ts,
        "response_item",
        serde_json::json!({"type": "function_call_output", "call_id": id, "output": out}),
    )
}

fn event(ts: &str, payload: Value) -> String {
    line(ts, "event_msg", payload)
}

/// A thread with a failing command, a patch Codex refused, an interrupted answer and a failed
/// request.
fn failing_thread(id: &str) -> String {
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** End Patch";
    [
        meta(id, Value::String("cli".into())),
        event("2026-12-03T10:00:00.100Z", serde_json::json!({"type": "task_started", "turn_id": "t1"})),
        line("2026-12-03T10:00:00.110Z", "turn_context", serde_json::json!({"turn_id": "t1", "cwd": "/p", "model": "gpt-5.1-codex"})),
        user("2026-12-03T10:00:00.200Z", "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>"),
        user("2026-12-03T10:00:00.300Z", "Run the tests and fix the parser."),
        call("2026-12-03T10:00:01.000Z", "c1", "cargo test -q"),
        record("2026-12-03T10:00:01.010Z", "r1", 9000, 0, 20),
        output(
            "2026-12-03T10:00:02.000Z",
            "c1",
            "Chunk ID: a1\nWall time: 1.2 seconds\nProcess exited with code 101\nOriginal token count: 40\nOutput:\nrunning 3 tests\ntest parse_empty ... FAILED\nthread 'parse_empty' panicked at src/lib.rs:9:5:\nassertion failed: parse(\"\").is_ok()\ntest result: FAILED. 2 passed; 1 failed\nerror: test failed, to rerun pass `--lib`\n",
        ),
        line(
            "2026-12-03T10:00:02.500Z",
            "response_item",
            serde_json::json!({"type": "custom_tool_call", "name": "apply_patch", "call_id": "p1", "input": patch}),
        ),
        record("2026-12-03T10:00:02.510Z", "r2", 9500, 8960, 30),
        line(
            "2026-12-03T10:00:02.600Z",
            "response_item",
            serde_json::json!({"type": "custom_tool_call_output", "call_id": "p1",
                "output": "apply_patch verification failed: Failed to find expected lines in src/lib.rs:\n-a"}),
        ),
        line(
            "2026-12-03T10:00:03.000Z",
            "response_item",
            serde_json::json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "The patch did not apply; reading the file first."}]}),
        ),
        event("2026-12-03T10:00:03.100Z", serde_json::json!({"type": "turn_aborted", "turn_id": "t1", "reason": "interrupted"})),
        event("2026-12-03T10:00:04.000Z", serde_json::json!({"type": "task_started", "turn_id": "t2"})),
        user("2026-12-03T10:00:04.100Z", "Try again."),
        event("2026-12-03T10:00:05.000Z", serde_json::json!({"type": "error", "message": "Your input exceeds the context window of this model."})),
        event("2026-12-03T10:00:05.100Z", serde_json::json!({"type": "task_complete", "turn_id": "t2"})),
    ]
    .join("\n")
        + "\n"
}

fn write_home(files: &[(&str, String)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempdir();
    let day = dir.path().join(".codex/sessions/2026/12/03");
    std::fs::create_dir_all(&day).expect("mkdir");
    for (id, text) in files {
        std::fs::write(
            day.join(format!("rollout-2026-12-03T10-00-00-{id}.jsonl")),
            text,
        )
        .expect("write");
    }
    let home = dir.path().join(".codex");
    (dir, home)
}

/// A failing command is a failure quoting its killing line; a refused patch is an edit of its
/// file that failed; an interrupted answer and a failed request are requests without usage.
#[test]
fn failures_are_classified_and_failed_requests_kept() {
    let id = "33333333-3333-7333-8333-333333333333";
    let (_dir, home) = write_home(&[(id, failing_thread(id))]);
    let t = trace_of(&home);
    assert_eq!(t.session.id, id);
    let statuses: Vec<RequestStatus> = t.requests.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![
            RequestStatus::Ok,
            RequestStatus::Ok,
            RequestStatus::Aborted,
            RequestStatus::Error
        ]
    );
    assert!(t.requests[2..]
        .iter()
        .all(|r| r.usage.is_zero() && r.prompt == 0));
    let err = t.messages[t.requests[3].message_index]
        .error
        .as_ref()
        .expect("error");
    assert!(err
        .message
        .as_deref()
        .is_some_and(|m| m.contains("context window")));
    // The interrupted answer keeps what the model had said.
    assert!(t.messages[t.requests[2].message_index]
        .text()
        .contains("did not apply"));

    let tools: Vec<_> = t
        .messages
        .iter()
        .flat_map(|m| m.tool_parts().map(|(_, tp)| tp.clone()))
        .collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(
        (tools[0].status, tools[0].exit_code(), tools[0].failed()),
        (ToolStatus::Completed, Some(101), true)
    );
    assert_eq!(tools[1].status, ToolStatus::Error);
    assert!(tools[1].failed());

    // Classified: the command's killing line and the patch's file.
    let rules = Rules::embedded().expect("rules");
    let req_of = classify::request_of_message(&t);
    let todos = segment::todo_changes(&t);
    let segs = segment::segment(&t, Segmentation::UserTurn, None, &BTreeSet::new(), None);
    // The injected environment before the first prompt belongs to the first turn.
    assert_eq!(segs.len(), 2);
    assert_eq!(t.messages[0].user_kind, Some(UserKind::Injected));
    let cl = classify::classify_with_todos(&t, &segs[0], &rules, &req_of, &todos);
    assert!(cl.kinds.contains(&EpisodeKind::Failure), "{:?}", cl.kinds);
    assert!(cl.kinds.contains(&EpisodeKind::Edit));
    let f: Vec<_> = cl.facts.failures.iter().map(|x| &x.failure).collect();
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[0].command, "cargo test -q");
    assert_eq!(f[0].exit, Some(101));
    // The killing line is the program's, never Codex's header (chunk, wall time, exit code).
    assert_eq!(f[0].line, "test parse_empty ... FAILED");
    assert_eq!(
        f[0].line,
        tierscope_engine::episode::evidence::error_line(&tools[0], &rules)
    );
    assert_eq!(f[1].tool, "apply_patch");
    assert!(
        f[1].line.contains("apply_patch verification failed"),
        "{}",
        f[1].line
    );
    assert!(cl.facts.files.iter().any(|x| x == "src/lib.rs"));
    assert!(cl.facts.commands.iter().any(|x| x == "cargo test -q"));

    // The listing counts the same requests and messages as the load.
    let src = tierscope_engine::trace::open(Some(&home)).expect("opens");
    let quick = src.list_sessions_with(&ListingCache::Off).expect("lists");
    let full = src.list_sessions_by_full_load().expect("lists");
    assert_eq!(quick, full);
    assert_eq!(
        (quick[0].requests, quick[0].messages),
        (4, t.messages.len())
    );
}

/// A rollout cut in the middle of its last line, with a garbage line inside: the rest loads,
/// and the damage is said.
#[test]
fn a_damaged_rollout_loads_the_rest_with_diagnostics() {
    let text = std::fs::read_to_string(rollout_path()).expect("rollout");
    let mut lines: Vec<&str> = text.lines().collect();
    let last = lines.pop().expect("lines");
    let cut = &last[..last.len() / 2];
    lines.insert(40, "{\"type\":\"event_msg\",\"payload\": garbage");
    let damaged = format!("{}\n{cut}", lines.join("\n"));
    let dir = tempdir();
    let path = dir.path().join(
        rollout_path()
            .file_name()
            .expect("file name")
            .to_string_lossy()
            .into_owned(),
    );
    std::fs::write(&path, damaged).expect("write");
    let t = trace_of(&path);
    assert_eq!(t.requests.len(), 23);
    assert_eq!(t.compactions.len(), 2);
    assert_eq!(t.diagnostics.count(DiagnosticKind::PartialWrite), 1);
    assert_eq!(t.diagnostics.count(DiagnosticKind::CorruptJson), 1);
    // Garbage alone and an empty file.
    let junk = dir
        .path()
        .join("rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa77.jsonl");
    std::fs::write(&junk, "{\"timestamp\":\"x\",\"type\":\"session_meta\",\"payload\":{\"id\":\"x\"}}\nnot json\n\u{0}\u{1}").expect("write");
    let t = trace_of(&junk);
    assert!(t.requests.is_empty());
    assert_eq!(t.diagnostics.count(DiagnosticKind::CorruptJson), 2);
}

/// A sub-agent thread is its parent's child: listed under it, loaded with it.
#[test]
fn a_sub_agent_thread_is_a_child_session() {
    let parent = "11111111-1111-7111-8111-111111111111";
    let child = "22222222-2222-7222-8222-222222222222";
    let spawn = [
        meta(parent, Value::String("cli".into())),
        user("2026-12-03T10:00:00.300Z", "Split the work."),
        line(
            "2026-12-03T10:00:01.000Z",
            "response_item",
            serde_json::json!({"type": "function_call", "name": "spawn_agent", "call_id": "s1",
                "arguments": serde_json::json!({"message": "Count the lines"}).to_string()}),
        ),
        record("2026-12-03T10:00:01.010Z", "r1", 5000, 0, 10),
        output(
            "2026-12-03T10:00:01.500Z",
            "s1",
            &serde_json::json!({"agent_id": child}).to_string(),
        ),
        record("2026-12-03T10:00:09.000Z", "r2", 5100, 4992, 10),
    ]
    .join("\n")
        + "\n";
    let sub = [
        meta(
            child,
            serde_json::json!({"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}),
        ),
        user("2026-12-03T10:00:01.200Z", "Count the lines"),
        record("2026-12-03T10:00:02.000Z", "c1", 3000, 0, 5),
    ]
    .join("\n")
        + "\n";
    let (_dir, home) = write_home(&[(parent, spawn), (child, sub)]);
    let src = tierscope_engine::trace::open(Some(&home)).expect("opens");
    let t = src.load_session(None).expect("the main thread by default");
    assert_eq!(t.session.id, parent);
    assert_eq!(t.children.len(), 1);
    assert_eq!(t.children[0].session_id, child);
    let (_, tp) = t.messages[t.requests[0].message_index]
        .tool_parts()
        .next()
        .expect("spawn call");
    assert_eq!(tp.child_session_id(), Some(child));
    assert_eq!(src.child_ids(&t), vec![child.to_owned()]);
    let kids = src.load_children(&t);
    assert_eq!(kids.len(), 1);
    let kid = kids[0].as_ref().expect("child loads");
    assert_eq!(kid.session.parent_id.as_deref(), Some(parent));
    assert!(src.child_ids(kid).is_empty());
    let listed = src.list_sessions_with(&ListingCache::Off).expect("lists");
    assert_eq!(listed, src.list_sessions_by_full_load().expect("lists"));
    let p = listed.iter().find(|s| s.id == parent).expect("parent");
    assert_eq!(p.children, vec![child.to_owned()]);
}

/// `tierscope sessions --json` on the recording: one Codex thread, its agent named, the quick
/// listing the same as a full load; `episodes` and `replay` run on the home and on the rollout.
#[test]
fn the_cli_lists_and_replays_a_codex_thread() {
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .env("TIERSCOPE_CACHE_DIR", tempdir().path())
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let h = home();
    let h = h.to_str().expect("utf-8");
    let v: Value = serde_json::from_str(&run(&["sessions", h, "--json"])).expect("json");
    let s = &v.as_array().expect("array")[0];
    assert_eq!(s["id"], THREAD);
    assert_eq!(s["agent"], "codex");
    assert_eq!(
        (s["requests"].as_u64(), s["messages"].as_u64()),
        (Some(23), Some(31))
    );
    let src = tierscope_engine::trace::open(Some(Path::new(h))).expect("opens");
    assert_eq!(
        src.list_sessions_with(&ListingCache::Off).expect("lists"),
        src.list_sessions_by_full_load().expect("lists")
    );
    let f = rollout_path();
    let f = f.to_str().expect("utf-8");
    for p in [h, f] {
        let e = run(&["episodes", p]);
        assert!(e.contains("6 episodes, 23 requests"), "{e}");
        let r = run(&["replay", p, "--policy", "codex"]);
        assert!(r.contains("2 compactions"), "{r}");
    }
}

/// A rollout Codex is still writing: followed through the registry, an answer whose usage is not
/// written yet is a `cut` request, and once the rest is appended the thread is whole.
#[test]
fn a_rollout_being_written_is_followed_and_read_as_far_as_it_goes() {
    let text = std::fs::read_to_string(rollout_path()).expect("rollout");
    let lines: Vec<&str> = text.lines().collect();
    let (_dir, home) = write_home(&[]);
    let day = home.join("sessions/2026/12/02");
    std::fs::create_dir_all(&day).expect("mkdir");
    let file = day.join(rollout_path().file_name().expect("name"));
    // Up to the call of the second response (line 22), before its usage record (line 23).
    std::fs::write(&file, lines[..22].join("\n") + "\n").expect("write");
    let target = tierscope_engine::watch::WatchTarget::for_path(&home).expect("watchable");
    assert_eq!((target.agent(), target.kind()), ("codex", "codex home"));
    assert!(target.is_relevant(&file));
    let before = target.fingerprint();
    let t = trace_of(&home);
    let statuses: Vec<RequestStatus> = t.requests.iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![RequestStatus::Ok, RequestStatus::Cut]);
    assert!(t.messages[t.requests[1].message_index]
        .tool_parts()
        .next()
        .is_some_and(|(_, tp)| tp.status == ToolStatus::Running));
    let src = tierscope_engine::trace::open(Some(&home)).expect("opens");
    assert_eq!(
        src.list_sessions_with(&ListingCache::Off).expect("lists"),
        src.list_sessions_by_full_load().expect("lists")
    );
    std::fs::write(&file, text).expect("append the rest");
    assert_ne!(target.fingerprint(), before);
    let t = trace_of(&home);
    assert_eq!(t.requests.len(), 23);
    assert!(t.requests.iter().all(|r| r.status == RequestStatus::Ok));
}

/// `codex` simulated at the recording's `model_auto_compact_token_limit` (36,000) compacts
/// before the same requests as Codex did: once mid-turn, after a large tool output its
/// estimate counted before the model did, and once after a request that crossed.
#[test]
fn the_simulated_compaction_fires_where_codex_did() {
    let l = load(&home());
    let p = tierscope_engine::policy::load("codex", &[]).expect("policy");
    let r = tierscope_engine::replay::replay_session(&l, &p, Some(36_000));
    let run = r.policy.compaction.clone().expect("compaction run");
    assert_eq!(run.trigger, "simulate");
    let recorded: Vec<usize> = l
        .trace
        .compactions
        .iter()
        .filter_map(|c| c.summary_request.map(|x| x + 1))
        .collect();
    assert_eq!(recorded.len(), 2);
    assert_eq!(run.compactions, recorded);
}

//! Claude Code sessions loaded as traces and replayed, against what the model received: the
//! recordings of Claude Code 2.1.197 (`tests/recordings/claude-code-2.1.197/`) and the scripted
//! model's log of every request (`log/*.mock.jsonl`, `prompt_tokens` = uncached input + cache
//! read + cache write, true o200k counts).
//!
//! Under the `claude-code` flat policy following the recording (no budget), every request of a session and of
//! its sub-agents is sized within 2 % (median) and 10 % (max) of what the model received, the
//! compaction calls the transcript does not record included. The request each system chunk is
//! estimated from fits by construction and is left out of the figures.
//!
//! `cargo test --test it claude_code_trace -- --nocapture` prints the figures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tierscope_engine::policy;
use tierscope_engine::replay;
use tierscope_engine::session::{self, LoadOptions, LoadedSession};
use tierscope_engine::trace::{DiagnosticKind, RequestStatus, SessionSummary};

const REC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/claude-code-2.1.197"
);

fn rec(p: &str) -> PathBuf {
    Path::new(REC).join(p)
}

fn data_dir() -> PathBuf {
    rec("dot-claude")
}

/// (scenario, session id)
const SESSIONS: [(&str, &str); 3] = [
    ("compaction_logscan", "927b1170-f977-416a-aabb-46039b7eb22a"),
    ("subagents_webhookd", "f1757de4-c270-45a4-a408-d101959666e3"),
    ("errors_greeter", "d8678dc4-f11f-4ee6-bd2a-05a966d9ea36"),
];

/// The model's log of a scenario, `HEAD /` probes left out.
fn mock_log(name: &str) -> Vec<Value> {
    let p = rec(&format!("log/{name}.mock.jsonl"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("log line"))
        .filter(|v| v["kind"] != "unhandled")
        .collect()
}

fn is_http_error(v: &Value) -> bool {
    v["special"]
        .as_array()
        .is_some_and(|s| s.iter().any(|x| x == "http_error"))
}

fn load(id: &str) -> LoadedSession {
    session::load(&LoadOptions {
        path: Some(data_dir()),
        session: Some(id.to_owned()),
        ..LoadOptions::default()
    })
    .unwrap_or_else(|e| panic!("{id}: {e}"))
}

/// One request beside the model's: (compaction call, ours, theirs).
type Pair = (bool, u64, u64);

/// (uncached input, cache read, cache write, output) of a log line.
fn logged(v: &Value) -> [u64; 4] {
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    [
        n("input_tokens"),
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
        n("output_tokens"),
    ]
}

/// Every request of `s` and its sub-agents replayed under the flat policy, paired with the
/// model's log: the session's requests (responses, the failed one, the compaction calls) with
/// the log's main-thread requests in order; a sub-agent's (sub-agents ran side by side) with
/// the sub-agent request of the same recorded usage.
fn pairs(name: &str, s: &LoadedSession) -> Vec<Pair> {
    let log = mock_log(name);
    let mut main = log.iter().filter(|v| v["kind"] != "sub");
    let mut subs: HashMap<[u64; 4], Vec<&Value>> = HashMap::new();
    for v in log.iter().filter(|v| v["kind"] == "sub") {
        subs.entry(logged(v)).or_default().push(v);
    }
    let p = policy::load("claude-code", &[]).expect("policy");
    let mut out = Vec::new();
    let mut seen = 0usize;
    for l in std::iter::once(s).chain(s.children.iter()) {
        let r = replay::replay_session(l, &p, None);
        let calibration: Vec<usize> = r
            .trace
            .system_segments
            .iter()
            .filter_map(|seg| seg.from_request)
            .collect();
        for f in &r.frames {
            let req = &l.trace.requests[f.request];
            let theirs = if l.trace.session.parent_id.is_none() {
                main.next()
            } else {
                let u = req.usage;
                subs.get_mut(&[u.input, u.cache_read, u.cache_write, u.output])
                    .and_then(|v| (!v.is_empty()).then(|| v.remove(0)))
            };
            if let Some(t) = theirs {
                assert_eq!(
                    req.synthetic_call,
                    t["kind"] == "compaction",
                    "{name}: request {} is paired with the model's {}",
                    f.request,
                    t["kind"]
                );
                assert_eq!(req.status == RequestStatus::Error, is_http_error(t));
            }
            let theirs = theirs.unwrap_or_else(|| {
                panic!(
                    "{name}: request {} ({}) of {} is none the model received",
                    f.request, req.message_id, l.trace.session.id
                )
            });
            seen += 1;
            if calibration.contains(&f.request) {
                continue;
            }
            let prompt = theirs["prompt_tokens"].as_u64().expect("prompt_tokens");
            out.push((req.synthetic_call, f.tokens, prompt));
        }
    }
    assert_eq!(
        seen,
        log.len(),
        "{name}: every request the model received is one of the trace's"
    );
    out
}

fn err_pct(ours: u64, theirs: u64) -> f64 {
    (ours as f64 - theirs as f64).abs() / theirs as f64 * 100.0
}

fn median_max(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    assert!(n > 0, "no figures");
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    (median, s[n - 1])
}

#[test]
fn every_request_is_sized_as_the_model_received_it() {
    for (name, id) in SESSIONS {
        let s = load(id);
        assert_eq!(s.trace.origin.agent, "claude-code");
        let pairs = pairs(name, &s);
        let turns: Vec<f64> = pairs
            .iter()
            .filter(|p| !p.0)
            .map(|p| err_pct(p.1, p.2))
            .collect();
        let (median, max) = median_max(&turns);
        println!(
            "{name}: {} requests, error median {median:.2} % max {max:.2} %",
            turns.len()
        );
        assert!(median <= 2.0, "{name}: median error {median:.2} %");
        assert!(max <= 10.0, "{name}: max error {max:.2} %");
        for (_, ours, theirs) in pairs.iter().filter(|p| p.0) {
            let e = err_pct(*ours, *theirs);
            println!("{name}: compaction call {ours} vs {theirs} ({e:.2} %)");
            assert!(e <= 10.0, "{name}: compaction call {ours} vs {theirs}");
        }
    }
}

#[test]
fn compactions_replace_the_history_with_the_summary_and_the_kept_records() {
    let s = load(SESSIONS[0].1);
    let t = &s.trace;
    assert_eq!(t.compactions.len(), 3);
    let auto: Vec<bool> = t.compactions.iter().map(|c| c.auto).collect();
    assert_eq!(auto, [true, false, true], "auto, /compact, auto");
    for c in &t.compactions {
        let r = c.summary_request.expect("each summary call is a request");
        assert!(t.requests[r].synthetic_call);
        // The call is not in the transcript: no usage is invented for it.
        assert!(t.requests[r].usage.is_zero());
        assert!(!c.summary_text.is_empty());
        // The kept records come before the boundary, in the history the call summarised.
        let tail = c.tail_start_id.as_deref().expect("a kept tail");
        let ti = t.message_index(tail).expect("tail message");
        assert!(ti < t.requests[r].message_index);
    }
    // Usage is the responses', once each: the trace's totals are ccusage's.
    let u = t.total_usage();
    assert_eq!(
        (u.input, u.cache_read, u.cache_write, u.output),
        (5308, 525_328, 96_592, 2326)
    );
    assert!(
        (t.total_cost() - 0.951054).abs() < 1e-9,
        "{}",
        t.total_cost()
    );
}

#[test]
fn sub_agents_are_children_opened_from_the_call_that_spawned_them() {
    let s = load(SESSIONS[1].1);
    assert_eq!(s.trace.children.len(), 4);
    assert_eq!(s.children.len(), 4);
    let mut total = s.trace.total_usage();
    for c in &s.children {
        assert!(c.trace.session.id.starts_with("agent-"));
        assert_eq!(c.trace.session.parent_id.as_deref(), Some(SESSIONS[1].1));
        let link = s
            .trace
            .children
            .iter()
            .find(|l| l.session_id == c.trace.session.id)
            .expect("linked");
        let m = s.trace.message(&link.message_id).expect("spawning message");
        assert!(m.tool_parts().any(|(_, t)| t.call_id == link.call_id
            && t.behaves_as() == "task"
            && t.child_session_id() == Some(c.trace.session.id.as_str())));
        total.add(&c.trace.total_usage());
    }
    // Sub-agents included, the session's usage is ccusage's.
    assert_eq!(
        (
            total.input,
            total.cache_read,
            total.cache_write,
            total.output
        ),
        (2747, 321_627, 52_130, 1914)
    );
}

#[test]
fn episodes_know_claude_codes_tools() {
    let s = load(SESSIONS[2].1);
    // A failing Bash run is a failure; an Edit an edit.
    let kinds: Vec<String> = s
        .episodes
        .iter()
        .flat_map(|e| e.kinds.iter().map(|k| k.as_str().to_owned()))
        .collect();
    assert!(kinds.iter().any(|k| k == "failure"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "edit"), "{kinds:?}");
    // The API error is a failed request; the interrupt notice no turn of its own.
    assert!(s
        .trace
        .requests
        .iter()
        .any(|r| r.status == RequestStatus::Error));
    let humans = s.trace.human_turns().count();
    assert_eq!(s.episodes.len(), humans, "one episode per prompt typed");
}

#[test]
fn sessions_lists_every_agent_with_its_sub_agents() {
    let source = tierscope_engine::trace::open(Some(&data_dir())).expect("open");
    let list: Vec<SessionSummary> = source.list_sessions().expect("list");
    assert_eq!(list.len(), 7);
    assert!(list.iter().all(|s| s.agent == "claude-code"));
    let json = serde_json::to_value(&list).expect("json");
    assert_eq!(json[0]["agent"], "claude-code");
    let webhookd = list
        .iter()
        .find(|s| s.id == SESSIONS[1].1)
        .expect("webhookd");
    assert_eq!(webhookd.children.len(), 4);
    let logscan = list
        .iter()
        .find(|s| s.id == SESSIONS[0].1)
        .expect("logscan");
    assert!((logscan.cost - 0.951054).abs() < 1e-9);
    // Newest first.
    assert!(list.windows(2).all(|w| w[0].updated >= w[1].updated));
}

#[test]
fn a_damaged_session_file_loads_what_is_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = data_dir()
        .join("projects/-home-dev-src-greeter/d8678dc4-f11f-4ee6-bd2a-05a966d9ea36.jsonl");
    let text = std::fs::read_to_string(&src).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    let last = lines.pop().expect("a line");
    let garbage = "{\"type\":\"assistant\",\"message\":\u{1b}[31m not json";
    lines.insert(5, garbage);
    let mut damaged = lines.join("\n");
    damaged.push('\n');
    damaged.push_str(&last[..last.len() / 2]);
    let file = dir
        .path()
        .join("d8678dc4-f11f-4ee6-bd2a-05a966d9ea36.jsonl");
    std::fs::write(&file, damaged).expect("write");
    let s = session::load(&LoadOptions {
        path: Some(file),
        ..LoadOptions::default()
    })
    .expect("the rest loads");
    assert!(s.trace.requests.len() >= 5);
    let d = &s.trace.diagnostics;
    assert_eq!(d.count(DiagnosticKind::CorruptJson), 1, "{:?}", d.items());
    assert_eq!(d.count(DiagnosticKind::PartialWrite), 1, "{:?}", d.items());
    // The escape sequence of the garbage line is not in what is shown of it.
    assert!(d.items().iter().all(|i| !i.example.contains('\u{1b}')));
}

#[test]
fn counts_are_calibrated_to_a_provider_that_tokenizes_otherwise() {
    let mut s = load(SESSIONS[0].1);
    // The recordings' model counted with o200k: checked, not applied.
    let c = s.calibration.clone().expect("a Claude model is checked");
    assert!(!c.applied && (c.factor - 1.0).abs() < 0.02, "{c:?}");
    // The same session as if Claude's tokenizer had counted 25 % more of the conversation:
    // the recorded prompts grow by that much beyond the system chunk.
    let p = policy::load("claude-code", &[]).expect("policy");
    let before = replay::replay_session(&s, &p, None);
    let system = before.trace.system_segments[0].tokens;
    for r in &mut s.trace.requests {
        if r.prompt > 0 {
            r.prompt = system + ((r.prompt - system) as f64 * 1.25).round() as u64;
        }
    }
    let c = tierscope_engine::session::calibration::calibrate(&mut s).expect("fitted");
    assert!(c.applied, "{c:?}");
    assert!((c.factor - 1.25).abs() < 0.02, "{c:?}");
    s.calibration = Some(c);
    let after = replay::replay_session(&s, &p, None);
    assert!(replay_text_mentions_calibration(&after));
    let errors: Vec<f64> = after
        .frames
        .iter()
        .filter(|f| !f.synthetic_call && f.recorded.prompt > 0 && f.request > 0)
        .map(|f| err_pct(f.tokens, f.recorded.prompt))
        .collect();
    let (median, max) = median_max(&errors);
    assert!(median <= 2.0 && max <= 10.0, "{median:.2} / {max:.2}");
}

fn replay_text_mentions_calibration(r: &replay::Replay) -> bool {
    r.trace.calibration.as_ref().is_some_and(|c| c.applied)
}

/// `claude-code` simulated at the recording's threshold (a 100,000 window at 55 %: 44,000)
/// compacts before the same requests as the CLI (the /compact by hand falls where pressure
/// would have compacted too), keeping the last step as the CLI kept its preserved segment.
#[test]
fn the_simulated_compaction_fires_where_claude_code_did() {
    let s = load(SESSIONS[0].1);
    let p = policy::load("claude-code", &[]).expect("policy");
    let r = replay::replay_session(&s, &p, Some(44_000));
    let run = r.policy.compaction.clone().expect("compaction run");
    assert_eq!(run.trigger, "simulate");
    let recorded: Vec<usize> = s
        .trace
        .compactions
        .iter()
        .filter_map(|c| c.summary_request.map(|x| x + 1))
        .collect();
    assert_eq!(run.compactions, recorded);
    // The first kept the last step: the request after it is within 1 % of what was sent.
    let f = &r.frames[recorded[0]];
    assert!(
        err_pct(f.tokens, f.recorded.prompt) < 1.0,
        "{} vs {}",
        f.tokens,
        f.recorded.prompt
    );
}

/// Cache entries Claude wrote for an hour (`cache_creation.ephemeral_1h_input_tokens`) are
/// still warm after a pause that expires the 5-minute ones.
#[test]
fn a_one_hour_cache_write_outlives_a_pause_the_five_minute_one_does_not() {
    let mut s = load(SESSIONS[2].1);
    let p = policy::load("claude-code", &[]).expect("policy");
    // A ten-minute pause before request 3.
    let pause = 10 * 60 * 1000;
    for r in s.trace.requests.iter_mut().skip(3) {
        r.time_created += pause;
    }
    let expiry_at_3 = |s: &LoadedSession| {
        let r = replay::replay_session(s, &p, None);
        r.frames[3]
            .boundaries
            .contains(&replay::BoundaryKind::CacheExpiry)
    };
    assert!(expiry_at_3(&s), "5 minutes: expired");
    s.trace.requests[2].cache_ttl_s = Some(3_600);
    assert!(!expiry_at_3(&s), "1 hour: warm");
}

/// A session resumed into a new file that opens with copies of the earlier session's records
/// (they keep its `sessionId`): each response is counted once, in the session it was billed
/// in; the copies are history in the new file.
#[test]
fn a_resumed_copy_counts_each_response_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("projects/-home-dev-src-greeter");
    std::fs::create_dir_all(&project).expect("mkdir");
    let old = SESSIONS[2].1;
    let src = data_dir().join(format!("projects/-home-dev-src-greeter/{old}.jsonl"));
    std::fs::copy(&src, project.join(format!("{old}.jsonl"))).expect("copy");
    // The new file: the old records, then the same records again as if answered anew (fresh
    // ids, the new session's id).
    let text = std::fs::read_to_string(&src).expect("read");
    let new = "00000000-0000-4000-8000-000000000001";
    let mut out = text.clone();
    // The new turn continues the copied history: its first record links to the last copy.
    let last_old = text
        .lines()
        .rev()
        .find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            v.get("uuid")?.as_str().map(str::to_owned)
        })
        .expect("a uuid");
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).expect("json");
        if v.get("sessionId").is_some() {
            v["sessionId"] = Value::String(new.into());
        }
        if let Some(u) = v.get("uuid").and_then(Value::as_str) {
            v["uuid"] = Value::String(format!("new-{u}"));
        }
        match v.get("parentUuid").and_then(Value::as_str) {
            Some(p) => v["parentUuid"] = Value::String(format!("new-{p}")),
            None if v.get("parentUuid").is_some() => {
                v["parentUuid"] = Value::String(last_old.clone())
            }
            None => {}
        }
        if let Some(id) = v.pointer("/message/id").and_then(Value::as_str) {
            v["message"]["id"] = Value::String(format!("new-{id}"));
        }
        if let Some(r) = v.get("requestId").and_then(Value::as_str) {
            v["requestId"] = Value::String(format!("new-{r}"));
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    std::fs::write(project.join(format!("{new}.jsonl")), out).expect("write");
    let source = tierscope_engine::trace::open(Some(&project)).expect("open");
    let list = source.list_sessions().expect("list");
    let by_id = |id: &str| list.iter().find(|s| s.id == id).expect("listed").clone();
    let (o, n) = (by_id(old), by_id(new));
    assert_eq!(
        o.tokens, n.tokens,
        "the new file's own responses equal the old one's"
    );
    assert_eq!(o.requests, n.requests);
    let t = source.load_session(Some(new)).expect("loads");
    assert_eq!(t.total_usage(), o.tokens);
    assert_eq!(
        t.diagnostics.count(DiagnosticKind::RuleResumedCopy),
        o.requests
    );
    // The copies are still the new session's history: twice the old session's messages.
    let old_t = source.load_session(Some(old)).expect("loads");
    assert!(t.messages.len() >= 2 * old_t.messages.len() - 1);
}

/// Claude's cache keeps whole entries at its breakpoints: a new summary that begins as the
/// previous one did is written again from its start, so the head two summaries share (which an
/// OpenAI-style prefix cache serves, see `eras_ground_truth`) is not counted here; the model's
/// log read only the system prompt and tools (16,209) after every compaction.
#[test]
fn a_summary_head_is_not_read_from_claudes_cache() {
    let s = load("927b1170-f977-416a-aabb-46039b7eb22a");
    let sums: Vec<&str> = s
        .trace
        .compactions
        .iter()
        .map(|c| c.summary_text.as_str())
        .collect();
    assert!(sums.len() >= 2, "{} compactions", sums.len());
    assert!(
        sums.windows(2)
            .any(|w| !tierscope_engine::text::common_head(w[0], w[1]).is_empty()),
        "the recording's summaries begin alike"
    );
    assert!(s.compaction.summary_heads.is_empty());
}

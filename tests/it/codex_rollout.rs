//! Codex CLI rollouts read against the recording's own ground truth
//! (`tests/recordings/codex-0.171.0/`): the mock model's log of every request it answered, the
//! manifest's compactions and tool calls, the whole-request extract, and ccusage's report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tierscope_engine::formats::codex::listing::{self, Depth};
use tierscope_engine::formats::codex::rollout::{self, Record};
use tierscope_engine::formats::codex::thread::{
    is_compaction_request, CallKind, Thread, TurnStatus, UsageSource,
};
use tierscope_engine::trace::{DiagnosticKind, Diagnostics};

const REC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/codex-0.171.0"
);
const THREAD: &str = "01a23555-a9c3-78b2-acc5-cacf3e71aa76";

fn rec(rel: &str) -> PathBuf {
    Path::new(REC).join(rel)
}

fn rollout_path() -> PathBuf {
    rec("dot-codex/sessions/2026/12/02/rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa76.jsonl")
}

fn jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

fn manifest() -> Value {
    let p = rec("manifest.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).expect("manifest is JSON")
}

fn thread() -> Thread {
    let mut r = rollout::read_path(&rollout_path()).expect("rollout reads");
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    Thread::from_rollout(&mut r)
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Every response of the rollout is a request the mock answered, in order, with the usage it
/// reported (Codex stores the provider's figures: `cached_input_tokens` = the mock's
/// `cached_tokens`), and the compaction requests are the mock's `kind: compaction`.
#[test]
fn every_response_is_a_request_the_model_answered() {
    let t = thread();
    let log = jsonl(&rec("log/compaction_logscan.mock.jsonl"));
    assert_eq!(log.len(), 23);
    assert_eq!(t.responses.len(), log.len());
    for (r, m) in t.responses.iter().zip(&log) {
        let seq = u(m, "seq");
        assert_eq!(
            r.response_id.as_deref(),
            m["response_id"].as_str(),
            "seq {seq}"
        );
        assert_eq!(r.source, UsageSource::Record);
        assert_eq!(r.recorded.input_tokens, u(m, "input_tokens"), "seq {seq}");
        assert_eq!(
            r.recorded.cached_input_tokens,
            u(m, "cached_tokens"),
            "seq {seq}"
        );
        assert_eq!(r.recorded.output_tokens, u(m, "output_tokens"), "seq {seq}");
        assert_eq!(
            r.recorded.reasoning_output_tokens,
            u(m, "reasoning_tokens"),
            "seq {seq}"
        );
        // Disjoint: the uncached input and the output without reasoning.
        assert_eq!(r.usage.input + r.usage.cache_read, u(m, "input_tokens"));
        assert_eq!(r.usage.output + r.usage.reasoning, u(m, "output_tokens"));
        assert_eq!(r.usage.cache_write, 0);
        assert_eq!(r.is_compaction, m["kind"] == "compaction", "seq {seq}");
    }
    let m = &manifest()["scenarios"][0]["mock_usage"];
    let total = t.total_usage();
    assert_eq!(total.input + total.cache_read, u(m, "input_tokens_sum"));
    assert_eq!(total.cache_read, u(m, "cached_tokens_sum"));
    assert_eq!(total.output + total.reasoning, u(m, "output_tokens_sum"));
    // Responses per turn: the mock's turn requests plus the compaction calls of turns 2 and 4.
    let per_turn: Vec<usize> = t.turns.iter().map(|t| t.responses.len()).collect();
    assert_eq!(per_turn, vec![3, 4, 5, 5, 3, 3]);
}

/// The `token_count` events carry the same responses once their repeats and the compaction
/// estimates are left out; summing every `last_token_usage` would overcount.
#[test]
fn token_counts_give_the_same_responses_as_the_records() {
    let with_records = thread();
    let text = std::fs::read_to_string(rollout_path()).expect("rollout");
    let without: String = text
        .lines()
        .filter(|l| {
            !l.contains("\"type\": \"token_usage_record\"")
                && !l.contains("\"type\":\"token_usage_record\"")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(without.len() < text.len(), "records were removed");
    let mut r = rollout::read_bytes(without.as_bytes());
    let counts = r
        .lines
        .iter()
        .filter(|l| matches!(&l.record, Record::Event(rollout::Event::TokenCount { .. })))
        .count();
    assert_eq!(counts, 27);
    let fallback = Thread::from_rollout(&mut r);
    assert!(fallback
        .responses
        .iter()
        .all(|r| r.source == UsageSource::TokenCount));
    let a: Vec<_> = with_records.responses.iter().map(|r| r.recorded).collect();
    let b: Vec<_> = fallback.responses.iter().map(|r| r.recorded).collect();
    assert_eq!(a, b);
    // The naive sum counts the repeated events twice.
    let naive: u64 = r
        .lines
        .iter()
        .filter_map(|l| match &l.record {
            Record::Event(rollout::Event::TokenCount {
                last: Some(last), ..
            }) => Some(last.input_tokens),
            _ => None,
        })
        .sum();
    assert!(naive > 517_200, "{naive}");
}

/// Both compactions where the manifest puts them: the `compacted` line, its summary and
/// replacement history, the summary request, and the `turn_context` Codex writes after it.
#[test]
fn both_compactions_are_where_the_manifest_says() {
    let t = thread();
    let expected = manifest()["scenarios"][0]["rollout"]["compactions"].clone();
    let expected = expected.as_array().expect("compactions");
    assert_eq!(t.compactions.len(), 2);
    assert_eq!(expected.len(), 2);
    for (c, e) in t.compactions.iter().zip(expected) {
        // Ordinals are 0-based, line numbers 1-based.
        assert_eq!(c.line as u64, u(e, "ordinal") + 1);
        assert_eq!(c.turn_id.as_deref(), e["turn_id"].as_str());
        assert_eq!(
            c.compacted.replacement_history.len() as u64,
            u(e, "replacement_history_items")
        );
        assert_eq!(
            c.compacted.message.chars().count() as u64,
            u(e, "summary_chars")
        );
        assert!(c
            .compacted
            .message
            .starts_with("Another language model started to solve this problem"));
        let req = &t.responses[c.request.expect("summary request found")];
        let m = &e["mock_compaction_request"];
        assert_eq!(req.index as u64 + 1, u(m, "seq"));
        assert_eq!(req.recorded.input_tokens, u(m, "input_tokens"));
        assert!(req.is_compaction);
        let after = c
            .turn_context_after
            .expect("turn_context after the compaction");
        assert!(after > c.line);
        assert!(
            t.responses.iter().any(|r| r.line > after),
            "the turn goes on"
        );
    }
    assert_eq!(t.compactions[0].compacted.window_number, Some(1));
    assert_eq!(t.compactions[1].compacted.window_number, Some(2));
    // The summary is the last replacement item, as a user message; no assistant message is kept.
    for c in &t.compactions {
        let roles: Vec<_> = c
            .compacted
            .replacement_history
            .iter()
            .filter_map(|i| match i {
                rollout::ResponseItem::Message { role, .. } => Some(role.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(roles.len(), c.compacted.replacement_history.len());
        assert!(!roles.contains(&"assistant"));
    }
}

/// On the wire, a compaction is a request with no tools whose last message asks for a checkpoint
/// summary: exactly the two compaction requests of the extract, and the rollout's two.
#[test]
fn the_compaction_requests_are_recognised_on_the_wire() {
    let t = thread();
    let extract = jsonl(&rec("requests/compaction_logscan.requests.extract.jsonl"));
    assert_eq!(extract.len(), 23);
    let mut recognised = Vec::new();
    for r in &extract {
        let n_tools = u(r, "n_tools") as usize;
        let last = r["last_item"]["text"].as_str().unwrap_or_default();
        let is = is_compaction_request(n_tools, last);
        assert_eq!(is, r["kind"] == "compaction", "seq {}", r["seq"]);
        assert_eq!(is, r["request_kind"] == "compaction", "seq {}", r["seq"]);
        if is {
            assert_eq!(r["parallel_tool_calls"], false);
            recognised.push(r["response_id"].as_str().expect("id").to_owned());
        }
    }
    let in_rollout: Vec<String> = t
        .responses
        .iter()
        .filter(|r| r.is_compaction)
        .filter_map(|r| r.response_id.clone())
        .collect();
    assert_eq!(recognised, in_rollout);
}

/// 20 tool calls, each paired with its output: every `exec_command` with its exit code, the
/// `apply_patch` with the file it added; six turns, all completed.
#[test]
fn tool_calls_are_paired_with_their_outputs() {
    let t = thread();
    let expected = &manifest()["scenarios"][0]["rollout"]["tool_calls"];
    let mut by_name: BTreeMap<&str, u64> = BTreeMap::new();
    for c in &t.tool_calls {
        *by_name.entry(c.name.as_str()).or_default() += 1;
        assert!(c.output.is_some(), "{} has its output", c.call_id);
        assert!(c.output_line.is_some_and(|l| l > c.line));
        assert!(!c.failed, "{} {}", c.name, c.input);
    }
    for (name, n) in expected.as_object().expect("tool_calls") {
        assert_eq!(by_name.get(name.as_str()).copied(), n.as_u64(), "{name}");
    }
    assert_eq!(t.tool_calls.len(), 20);
    for c in t.tool_calls.iter().filter(|c| c.name == "exec_command") {
        assert_eq!(c.exit_code, Some(0), "{}", c.input);
        assert_eq!(c.kind, CallKind::Function);
    }
    let patch = t
        .tool_calls
        .iter()
        .find(|c| c.name == "apply_patch")
        .expect("apply_patch");
    assert_eq!(patch.kind, CallKind::Custom);
    assert_eq!(patch.exit_code, Some(0));
    assert_eq!(
        patch
            .patch_files
            .iter()
            .map(|f| (f.op, f.path.as_str()))
            .collect::<Vec<_>>(),
        vec![("add", "FINDINGS.md")]
    );
    assert_eq!(t.turns.len(), 6);
    assert!(t.turns.iter().all(|t| t.status == TurnStatus::Completed));
    assert_eq!(t.id(), Some(THREAD));
    assert_eq!(
        t.meta.as_ref().and_then(|m| m.cli_version.as_deref()),
        Some("0.171.0")
    );
    assert_eq!(t.parent_thread_id(), None);
    assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// A damaged copy: garbage, a line that is not UTF-8, an over-long line and a cut final line
/// are each reported and skipped; everything else loads.
#[test]
fn damaged_lines_are_reported_and_the_rest_loads() {
    let text = std::fs::read(rollout_path()).expect("rollout");
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 178);
    let mut damaged: Vec<u8> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i == 40 {
            damaged.extend_from_slice(b"this is not json\n");
            damaged.extend_from_slice(b"{\"type\":\"event_msg\",\"payload\":\"\xff\xfe\"}\n");
            damaged.extend_from_slice(
                b"{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"content\":\"",
            );
            damaged.extend(std::iter::repeat_n(b'x', 3 << 20));
            damaged.extend_from_slice(b"\"}}\n");
        }
        if i == lines.len() - 1 {
            // Codex was still writing its last line.
            damaged.extend_from_slice(&l[..l.len() / 2]);
        } else {
            damaged.extend_from_slice(l);
            damaged.push(b'\n');
        }
    }
    let dir = tempdir();
    let path = dir
        .path()
        .join(format!("rollout-2026-12-02T05-58-56-{THREAD}.jsonl"));
    std::fs::write(&path, &damaged).expect("write");
    let mut r = rollout::read_path_limited(&path, 1 << 20).expect("reads");
    let d: &Diagnostics = &r.diagnostics;
    assert_eq!(d.count(DiagnosticKind::CorruptJson), 1, "{d:?}");
    assert_eq!(d.count(DiagnosticKind::NonUtf8), 1, "{d:?}");
    assert_eq!(d.count(DiagnosticKind::OversizedLine), 1, "{d:?}");
    assert_eq!(d.count(DiagnosticKind::PartialWrite), 1, "{d:?}");
    assert_eq!(d.total(), 4, "{d:?}");
    assert_eq!(r.lines.len(), 177);
    let t = Thread::from_rollout(&mut r);
    assert_eq!(t.responses.len(), 23);
    assert_eq!(t.compactions.len(), 2);
    // The cut line was the last turn's `task_complete`.
    assert_eq!(t.turns.last().map(|t| &t.status), Some(&TurnStatus::Open));
}

/// Name, size and modification time of every file under `dir`.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let e = e.expect("entry");
            let meta = e.metadata().expect("metadata");
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), (meta.len(), meta.modified().expect("mtime")));
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// The listing reads the thread index (a WAL database Codex left without `-wal`/`-shm`) and the
/// rollout without creating or changing a file under `$CODEX_HOME`, and a home without its
/// index lists the same thread from the rollout alone.
#[test]
fn the_listing_reads_the_index_without_creating_side_files() {
    let dir = tempdir();
    let home = dir.path().join(".codex");
    copy_tree(&rec("dot-codex"), &home);
    let before = snapshot(&home);
    assert!(before.keys().any(|p| p.ends_with("state_5.sqlite")));
    let mut diags = Diagnostics::new();
    let scanned = listing::list(&home, Depth::Scan, &mut diags);
    let indexed = listing::list(&home, Depth::Index, &mut diags);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        snapshot(&home),
        before,
        "nothing created or changed under CODEX_HOME"
    );
    // The recording in the repository too.
    let repo_before = snapshot(&rec("dot-codex"));
    listing::list(&rec("dot-codex"), Depth::Scan, &mut diags);
    assert_eq!(snapshot(&rec("dot-codex")), repo_before);

    assert_eq!(scanned.len(), 1);
    let t = &scanned[0];
    assert_eq!(t.id, THREAD);
    assert!(t.indexed);
    assert!(t
        .title
        .starts_with("We had a 5xx spike on the public API on Nov 28"));
    assert_eq!(t.cwd, "/home/dev/src/logscan");
    assert_eq!(t.total_tokens, 519_917);
    assert_eq!(t.requests, Some(23));
    let usage = t.usage.expect("scanned");
    assert_eq!(
        (usage.input, usage.cache_read, usage.output, usage.reasoning),
        (176_464, 340_736, 2_693, 24)
    );
    assert_eq!(t.cli_version.as_deref(), Some("0.171.0"));
    assert_eq!(t.model.as_deref(), Some("scripted-1"));
    assert!(t.created > 0 && t.updated >= t.created);
    assert!(t.rollout.as_ref().is_some_and(|p| p.starts_with(&home)));
    // The index alone: no scan, the index's figures.
    assert_eq!(indexed.len(), 1);
    assert_eq!((indexed[0].requests, indexed[0].usage), (None, None));
    assert_eq!(indexed[0].total_tokens, 519_917);

    // Without the index: the same thread from the rollout's lines.
    std::fs::remove_file(home.join("state_5.sqlite")).expect("rm");
    let alone = listing::list(&home, Depth::Index, &mut diags);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(alone.len(), 1);
    let a = &alone[0];
    assert!(!a.indexed);
    assert_eq!(
        (a.id.as_str(), a.cwd.as_str()),
        (t.id.as_str(), t.cwd.as_str())
    );
    assert_eq!(a.title, t.title);
    assert_eq!(
        (a.requests, a.usage, a.total_tokens),
        (t.requests, t.usage, t.total_tokens)
    );
    assert_eq!(a.created / 1000, t.created / 1000);
}

/// ccusage 20.0.24 on this recording, per thread. Produced with
/// `npm install --prefix /tmp/ccu-codex ccusage@20.0.24` and
/// `CODEX_HOME=<a copy of dot-codex> npx --prefix /tmp/ccu-codex ccusage codex session --json --offline`:
/// inputTokens 176464 (uncached), cacheReadTokens 340736, outputTokens 2717, reasoningOutputTokens
/// 24, totalTokens 519917, cacheCreationTokens 0. ccusage's `outputTokens` includes the reasoning
/// (Codex's own figure); tierscope's `output` does not, so `output + reasoning` is compared.
#[test]
fn usage_equals_ccusage_per_thread() {
    const CCUSAGE: (u64, u64, u64, u64, u64) = (176_464, 340_736, 2_717, 24, 519_917);
    let t = thread();
    let u = t.total_usage();
    let total: u64 = t.responses.iter().map(|r| r.recorded.total_tokens).sum();
    assert_eq!(
        (
            u.input,
            u.cache_read,
            u.output + u.reasoning,
            u.reasoning,
            total
        ),
        CCUSAGE
    );
    assert_eq!(u.cache_write, 0);
}

/// A sub-agent thread (`source` thread spawn) is listed under its parent.
#[test]
fn a_sub_agent_thread_is_linked_to_its_parent() {
    let dir = tempdir();
    let day = dir.path().join("sessions/2026/12/03");
    std::fs::create_dir_all(&day).expect("mkdir");
    let parent = "11111111-1111-7111-8111-111111111111";
    let child = "22222222-2222-7222-8222-222222222222";
    let meta = |id: &str, source: &str| {
        format!(
            "{{\"timestamp\":\"2026-12-03T10:00:00.000Z\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"timestamp\":\"2026-12-03T10:00:00.000Z\",\"cwd\":\"/p\",\"cli_version\":\"0.171.0\",\"source\":{source}}}}}\n\
             {{\"timestamp\":\"2026-12-03T10:00:01.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"task of {id}\"}}]}}}}\n"
        )
    };
    std::fs::write(
        day.join(format!("rollout-2026-12-03T10-00-00-{parent}.jsonl")),
        meta(parent, "\"cli\""),
    )
    .expect("write");
    std::fs::write(
        day.join(format!("rollout-2026-12-03T10-00-05-{child}.jsonl")),
        meta(
            child,
            &format!("{{\"subagent\":{{\"thread_spawn\":{{\"parent_thread_id\":\"{parent}\",\"depth\":1}}}}}}"),
        ),
    )
    .expect("write");
    let mut diags = Diagnostics::new();
    let threads = listing::list(dir.path(), Depth::Scan, &mut diags);
    assert!(diags.is_empty(), "{diags:?}");
    let lines = listing::session_summaries(&threads);
    let p = lines.iter().find(|l| l.id == parent).expect("parent");
    let c = lines.iter().find(|l| l.id == child).expect("child");
    assert_eq!(p.children, vec![child.to_owned()]);
    assert_eq!(c.parent_id.as_deref(), Some(parent));
    assert_eq!(c.title, format!("task of {child}"));
}

/// The recording's `$CODEX_HOME`, its `sessions/` dir and its rollout are recognised by their
/// content, and a load of the home reads the thread index with it (the output guard's parts).
#[test]
fn the_recording_is_recognised_as_codex_input() {
    use tierscope_engine::formats::codex::input::{self, Input};
    use tierscope_engine::trace::adapter::{Confidence, ReadPart};
    let home = rec("dot-codex");
    let classify = |p: &Path| {
        let meta = std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        input::classify(p, &meta)
    };
    assert_eq!(
        classify(&home),
        Some((Input::Home(home.clone()), Confidence::Content))
    );
    assert_eq!(
        classify(&home.join("sessions")).map(|(i, c)| (i.kind(), c)),
        Some(("sessions dir", Confidence::Content))
    );
    assert_eq!(
        classify(&rollout_path()),
        Some((Input::Rollout(rollout_path()), Confidence::Content))
    );
    // Not Codex's: an OpenCode export and a data dir.
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces");
    assert_eq!(classify(&samples.join("M1.json")), None);
    assert_eq!(classify(&samples), None);
    let parts = input::read_parts(&Input::Home(home.clone()));
    assert!(parts.contains(&ReadPart::Database {
        path: home.join("state_5.sqlite"),
        what: "Codex thread index"
    }));
}

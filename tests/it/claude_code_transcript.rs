//! Claude Code's session files read against what the model received: the recordings of Claude
//! Code 2.1.197 (`tests/recordings/claude-code-2.1.197/`) hold the CLI's own files and the
//! scripted model's log of every request (`log/*.mock.jsonl`: `kind` turn / sub / compaction,
//! `input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`, `output_tokens`;
//! `prompt_tokens` is their sum). Every request tierscope reads from a transcript is one the
//! model answered, with the same usage, in the same order; the compaction calls and the requests
//! answered with an HTTP error (an API-error record in the transcript) are the log's only
//! requests a transcript holds no response for. Compaction points and sub-agent links are the
//! manifest's, the totals ccusage's, and damaged copies load what is intact.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tierscope_engine::formats::claude_code::compaction::Trigger;
use tierscope_engine::formats::claude_code::listing::summarize;
use tierscope_engine::formats::claude_code::record::Record;
use tierscope_engine::formats::claude_code::session::{Session, Thread};
use tierscope_engine::formats::claude_code::transcript::ReadOptions;
use tierscope_engine::formats::claude_code::usage::ClaudeUsage;
use tierscope_engine::trace::DiagnosticKind;

const REC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/claude-code-2.1.197"
);

fn rec(p: &str) -> PathBuf {
    Path::new(REC).join(p)
}

fn json(p: &str) -> Value {
    let text = std::fs::read_to_string(rec(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn scenario(name: &str) -> Value {
    json("manifest.json")["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .find(|s| s["scenario"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("scenario {name} in the manifest"))
}

fn session_file(name: &str) -> PathBuf {
    rec(scenario(name)["session_file"]
        .as_str()
        .expect("session_file"))
}

/// The model's log of a scenario: its requests, `HEAD /` probes left out.
fn mock_log(name: &str) -> Vec<Value> {
    let p = rec(&format!("log/{name}.mock.jsonl"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("log line"))
        .filter(|v| v["kind"] != "unhandled")
        .collect()
}

/// (uncached input, cache read, cache write, output, prompt) of a log line; a request answered
/// with an HTTP error has no output.
fn logged(v: &Value) -> (u64, u64, u64, u64, u64) {
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    let output = if is_http_error(v) {
        0
    } else {
        n("output_tokens")
    };
    (
        n("input_tokens"),
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
        output,
        n("prompt_tokens"),
    )
}

/// A request the mock answered with an HTTP error.
fn is_http_error(v: &Value) -> bool {
    v["special"]
        .as_array()
        .is_some_and(|s| s.iter().any(|x| x == "http_error"))
}

const SCENARIOS: [&str; 3] = ["compaction_logscan", "subagents_webhookd", "errors_greeter"];

fn read(u: &ClaudeUsage) -> (u64, u64, u64, u64, u64) {
    (u.input, u.cache_read, u.cache_write(), u.output, u.prompt())
}

fn thread_usages(t: &Thread) -> Vec<(u64, u64, u64, u64, u64)> {
    t.requests
        .responses
        .iter()
        .map(|r| read(&r.usage))
        .collect()
}

fn open(name: &str) -> Session {
    let p = session_file(name);
    Session::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The sub-agent script (`idx` of the log's `sub` lines) a sub-agent ran: its `match` text
/// opens the sub-agent's first prompt.
fn sub_idx(name: &str, t: &Thread) -> usize {
    let first = t
        .transcript
        .entries
        .iter()
        .find_map(|e| match &e.record {
            Record::User(u) => Some(u.message.content.text()),
            _ => None,
        })
        .expect("a first prompt");
    let script = json(&format!("log/{name}.scenario.json"));
    let subs = script["subagents"].as_array().expect("subagents");
    let matches: Vec<usize> = (0..subs.len())
        .filter(|&i| first.contains(subs[i]["match"].as_str().expect("match")))
        .collect();
    assert_eq!(matches.len(), 1, "one script matches {first:?}");
    matches[0]
}

#[test]
fn every_request_is_one_the_model_answered_with_its_usage() {
    for name in SCENARIOS {
        let s = open(name);
        let log = mock_log(name);
        let mock = &scenario(name)["mock_usage"];
        assert_eq!(
            log.len() as u64,
            mock["requests"].as_u64().expect("requests"),
            "{name}: requests in the log"
        );
        let turns: Vec<_> = log
            .iter()
            .filter(|v| v["kind"] == "turn" && !is_http_error(v))
            .map(logged)
            .collect();
        assert_eq!(thread_usages(&s.main), turns, "{name}: main requests");
        // A request answered with an HTTP error is the transcript's API error of that request.
        let failed: Vec<String> = log
            .iter()
            .filter(|v| is_http_error(v))
            .map(|v| format!("req_mock_{}", v["req"]))
            .collect();
        let errors: Vec<String> = s
            .main
            .requests
            .api_errors
            .iter()
            .map(|e| e.request_id.clone().expect("the failed request's id"))
            .collect();
        assert_eq!(errors, failed, "{name}: API errors");
        for sub in &s.subagents {
            let idx = sub_idx(name, &sub.thread);
            let want: Vec<_> = log
                .iter()
                .filter(|v| v["kind"] == "sub" && v["idx"] == idx)
                .map(logged)
                .collect();
            assert_eq!(
                thread_usages(&sub.thread),
                want,
                "{name}: sub-agent {}",
                sub.file.agent_id
            );
        }
        // The log's only requests no response in a transcript holds are the compaction calls
        // and the failed requests.
        let compaction_calls = log.iter().filter(|v| v["kind"] == "compaction").count();
        assert_eq!(
            s.total_requests() + compaction_calls + failed.len(),
            log.len(),
            "{name}"
        );
        let total = s.total_usage();
        let compaction: Vec<_> = log
            .iter()
            .filter(|v| v["kind"] == "compaction" || is_http_error(v))
            .map(logged)
            .collect();
        let sum = |f: fn(&(u64, u64, u64, u64, u64)) -> u64| compaction.iter().map(f).sum::<u64>();
        assert_eq!(
            (
                total.input + sum(|c| c.0),
                total.cache_read + sum(|c| c.1),
                total.cache_write() + sum(|c| c.2),
                total.output + sum(|c| c.3),
            ),
            (
                mock["input_tokens_sum"].as_u64().expect("sum"),
                mock["cache_read_sum"].as_u64().expect("sum"),
                mock["cache_creation_sum"].as_u64().expect("sum"),
                mock["output_tokens_sum"].as_u64().expect("sum"),
            ),
            "{name}: totals with the compaction calls and the failed requests"
        );
        // Every write of these recordings has the 5-minute lifetime, as the CLI asked.
        assert_eq!(total.cache_write_1h, 0);
        // Nothing damaged, no branch dead, no rewritten record, no call without its result.
        for t in std::iter::once(&s.main).chain(s.subagents.iter().map(|x| &x.thread)) {
            let d = t.diagnostics();
            assert!(d.is_empty(), "{name}: {d:?}");
            assert!(t.transcript.on_branch.iter().all(|b| *b));
        }
        assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    }
}

#[test]
fn the_unique_responses_of_each_file_are_the_manifests() {
    let check = |t: &Thread, stats: &Value, what: &str| {
        let u = t.requests.total();
        let want = &stats["usage_sum_over_unique_message_ids"];
        let n = |k: &str| want[k].as_u64().expect("count");
        assert_eq!(
            (u.input, u.cache_write(), u.cache_read, u.output),
            (
                n("input_tokens"),
                n("cache_creation_input_tokens"),
                n("cache_read_input_tokens"),
                n("output_tokens")
            ),
            "{what}"
        );
        // The manifest counts unique message ids but API errors, the synthetic ones among them.
        assert_eq!(
            t.requests.responses.len() + t.requests.synthetic,
            stats["assistant_api_messages"].as_u64().expect("count") as usize,
            "{what}"
        );
        assert_eq!(
            t.requests.api_errors.len() as u64,
            stats["api_error_messages"].as_u64().expect("count"),
            "{what}"
        );
        let errors = t
            .requests
            .tool_calls
            .iter()
            .filter(|c| c.result.as_ref().is_some_and(|r| r.is_error))
            .count() as u64;
        assert_eq!(
            errors,
            stats["tool_results"]["error"].as_u64().unwrap_or(0),
            "{what}"
        );
        let records = t
            .transcript
            .entries
            .iter()
            .filter(|e| matches!(e.record, Record::Assistant(_)))
            .count();
        assert_eq!(
            records as u64,
            stats["record_types"]["assistant"].as_u64().expect("count"),
            "{what}"
        );
    };
    for name in SCENARIOS {
        let m = scenario(name);
        let s = open(name);
        check(&s.main, &m["session"], name);
        for sub in m["subagents"].as_array().expect("subagents") {
            let file = rec(sub["file"].as_str().expect("file"));
            let found = s
                .subagents
                .iter()
                .find(|x| x.file.path == file)
                .unwrap_or_else(|| panic!("{} read", file.display()));
            check(&found.thread, &sub["stats"], &file.display().to_string());
        }
    }
    // More records than requests: a response is several records.
    let s = open("compaction_logscan");
    assert_eq!(s.main.requests.responses.len(), 22);
    assert_eq!(s.main.requests.synthetic, 1);
    assert!(s.main.requests.api_errors.is_empty());
    assert!(s.main.requests.interrupts.is_empty());
}

#[test]
fn compactions_are_where_the_manifest_says() {
    let m = scenario("compaction_logscan");
    let s = open("compaction_logscan");
    let t = &s.main.transcript;
    let want = m["session"]["compactions"].as_array().expect("compactions");
    assert_eq!(s.main.compactions.len(), want.len());
    let turns: Vec<&Value> = m["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .flat_map(|t| t["compactions"].as_array().expect("compactions"))
        .collect();
    for ((c, w), turn) in s.main.compactions.iter().zip(want).zip(turns) {
        // The manifest's `line` is 0-based.
        assert_eq!(
            t.entries[c.entry].line as u64,
            w["line"].as_u64().expect("line") + 1
        );
        assert_eq!(c.uuid.as_deref(), w["uuid"].as_str());
        let trigger = match w["trigger"].as_str() {
            Some("auto") => Trigger::Auto,
            Some("manual") => Trigger::Manual,
            other => panic!("trigger {other:?}"),
        };
        assert_eq!(c.trigger, trigger);
        assert_eq!(c.pre_tokens, w["preTokens"].as_u64());
        assert_eq!(c.post_tokens, w["postTokens"].as_u64());
        let seg = c.preserved.as_ref().expect("preserved segment");
        let ps = &turn["preserved_segment"];
        assert_eq!(seg.head_uuid.as_deref(), ps["head_uuid"].as_str());
        assert_eq!(seg.anchor_uuid.as_deref(), ps["anchor_uuid"].as_str());
        assert_eq!(seg.tail_uuid.as_deref(), ps["tail_uuid"].as_str());
        let uuids: Vec<&str> = turn["preserved_messages"]["uuids"]
            .as_array()
            .expect("uuids")
            .iter()
            .map(|u| u.as_str().expect("uuid"))
            .collect();
        assert_eq!(c.preserved_uuids, uuids);
        // The summary follows its boundary and opens the new context.
        let summary = c.summary.expect("a summary");
        assert!(summary > c.entry);
        let text = c.summary_text(t).expect("summary text");
        assert!(
            text.starts_with("This session is being continued from a previous conversation"),
            "{text:.80}"
        );
    }
}

#[test]
fn tool_calls_pair_with_their_results_and_a_large_output_points_at_its_file() {
    let m = scenario("compaction_logscan");
    let s = open("compaction_logscan");
    let calls = &s.main.requests.tool_calls;
    let stats = &m["session"];
    let mut by_name = std::collections::BTreeMap::<&str, u64>::new();
    for c in calls {
        *by_name.entry(c.name.as_str()).or_default() += 1;
    }
    let want: std::collections::BTreeMap<&str, u64> = stats["tool_uses"]
        .as_object()
        .expect("tool_uses")
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_u64().expect("count")))
        .collect();
    assert_eq!(by_name, want);
    let results: Vec<_> = calls
        .iter()
        .map(|c| c.result.as_ref().expect("every call has its result"))
        .collect();
    let errors = results.iter().filter(|r| r.is_error).count() as u64;
    assert_eq!(
        errors,
        stats["tool_results"]["error"].as_u64().expect("count")
    );
    // The refused Read of the 405 KB log.
    let refused = calls
        .iter()
        .find(|c| c.result.as_ref().is_some_and(|r| r.is_error))
        .expect("an error");
    assert_eq!(refused.name, "Read");
    // A result comes after its call.
    for c in calls {
        assert!(
            c.result.as_ref().expect("result").entry > c.entry,
            "{}",
            c.id
        );
    }
    // The persisted Bash output: the model saw a preview, the file holds all of it.
    let persisted: Vec<_> = results
        .iter()
        .filter_map(|r| r.persisted.as_ref())
        .collect();
    assert_eq!(persisted.len(), 1);
    let p = persisted[0];
    let want = rec(m["persisted_tool_results"][0].as_str().expect("path"));
    assert_eq!(p.path, want);
    let size = std::fs::metadata(&p.path)
        .expect("the persisted output")
        .len();
    assert_eq!(p.size, Some(size));
    assert_eq!(size, 59279);
}

#[test]
fn sub_agents_are_linked_to_the_calls_that_spawned_them_and_keep_their_usage() {
    let m = scenario("subagents_webhookd");
    let s = open("subagents_webhookd");
    let want = m["subagents"].as_array().expect("subagents");
    assert_eq!(s.subagents.len(), want.len());
    for w in want {
        let file = rec(w["file"].as_str().expect("file"));
        let sub = s
            .subagents
            .iter()
            .find(|x| x.file.path == file)
            .expect("read");
        let meta = sub.meta.as_ref().expect("meta");
        assert_eq!(meta.agent_type.as_deref(), w["meta"]["agentType"].as_str());
        assert_eq!(
            meta.description.as_deref(),
            w["meta"]["description"].as_str()
        );
        let spawn = sub.spawned_by.as_ref().expect("spawned by a call");
        assert_eq!(spawn.agent, None, "spawned by the session itself");
        let call = &s.main.requests.tool_calls[spawn.call];
        assert_eq!(call.name, "Agent");
        assert_eq!(Some(call.id.as_str()), w["meta"]["toolUseId"].as_str());
        assert_eq!(
            call.input["description"].as_str(),
            w["meta"]["description"].as_str()
        );
        let result = call.result.as_ref().expect("the Agent call's result");
        let structured = result.structured.as_ref().expect("toolUseResult");
        assert_eq!(
            structured["agentId"].as_str(),
            Some(sub.file.agent_id.as_str())
        );
        // Every record of a sub-agent transcript is a sidechain of that agent.
        for e in &sub.thread.transcript.entries {
            let c = e.record.common().expect("a conversation record");
            assert!(c.is_sidechain);
            assert_eq!(c.agent_id.as_deref(), Some(sub.file.agent_id.as_str()));
        }
    }
    // The session's own usage leaves the sub-agents' out; the total has them.
    let own = s.own_usage();
    let main = &m["session"]["usage_sum_over_unique_message_ids"];
    assert_eq!(
        own.cache_read,
        main["cache_read_input_tokens"].as_u64().expect("n")
    );
    assert!(s.total_usage().cache_read > own.cache_read);
}

/// `ccusage@20.0.24` (npm) on a copy of the recordings' `dot-claude/`:
/// `npm install --prefix /tmp/ccu ccusage@20.0.24`, then
/// `CLAUDE_CONFIG_DIR=<copy of dot-claude> npx --prefix /tmp/ccu ccusage claude session --json --offline`.
/// Per session (sub-agents included): input, cache read, cache write (`cacheCreationTokens`),
/// output. ccusage sums the transcript's unique responses, so the compaction calls, which the
/// transcript does not hold, are in neither figure; tierscope knows them from the compaction
/// boundaries (the model's log has them: 3 calls of compaction_logscan, 22,371 uncached input,
/// 107,041 cache read, 249 cache write, 1,522 output).
/// errors_greeter: ccusage, like tierscope, leaves out the failed request (the mock counted its
/// prompt, 17,943 cache read and 42 cache write, but an error is not a response).
const CCUSAGE: &[(&str, [u64; 4])] = &[
    ("compaction_logscan", [5308, 525_328, 96_592, 2326]),
    ("subagents_webhookd", [2747, 321_627, 52_130, 1914]),
    ("errors_greeter", [1458, 84_759, 21_267, 207]),
];

#[test]
fn usage_equals_what_ccusage_reports() {
    for (name, [input, read, write, output]) in CCUSAGE {
        let s = open(name);
        let u = s.total_usage();
        assert_eq!(
            (u.input, u.cache_read, u.cache_write(), u.output),
            (*input, *read, *write, *output),
            "{name}"
        );
        // The listing says the same of the session's own file.
        let l = summarize(&session_file(name)).expect("listing");
        assert_eq!(l.usage, s.own_usage(), "{name}");
    }
}

#[test]
fn errors_and_interrupts_are_what_the_cli_recorded() {
    let s = open("errors_greeter");
    let r = &s.main.requests;
    let t = &s.main.transcript;
    assert_eq!(r.api_errors.len(), 1);
    let e = &r.api_errors[0];
    assert_eq!(e.status, Some(400));
    assert_eq!(e.error.as_deref(), Some("unknown"));
    assert!(e.text.starts_with("API Error: 400"), "{}", e.text);
    // "No response requested." after the API error and after the interrupt.
    assert_eq!(r.synthetic, 2);
    assert_eq!(r.interrupts.len(), 1);
    assert!(r.interrupts[0].during_tool_use);
    // The interrupted call: its result is an error the CLI wrote, then the interrupt.
    let cut = r
        .tool_calls
        .iter()
        .rfind(|c| c.name == "Bash")
        .expect("the loop");
    let result = cut.result.as_ref().expect("a result");
    assert!(result.is_error);
    assert_eq!(
        result.structured,
        Some(Value::String("User rejected tool use".into()))
    );
    assert!(r.interrupts[0].entry > result.entry);
    // The refused Edit.
    let edit = r
        .tool_calls
        .iter()
        .find(|c| c.name == "Edit")
        .expect("edit");
    let refused = edit.result.as_ref().expect("result");
    assert!(refused.is_error);
    assert!(
        tierscope_engine::formats::claude_code::requests::result_text(&refused.content)
            .contains("No changes to make")
    );
    // The requests after the error and the interrupt are read, in order.
    let lines: Vec<usize> = r
        .responses
        .iter()
        .map(|x| t.entries[x.entries[0]].line)
        .collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
    assert!(t.entries[r.interrupts[0].entry].line < *lines.last().expect("a response"));
}

#[test]
fn the_listing_agrees_with_a_full_read() {
    for name in SCENARIOS {
        let m = scenario(name);
        let p = session_file(name);
        let s = open(name);
        let l = summarize(&p).expect("listing");
        assert_eq!(l.summary.id, m["session_id"].as_str().expect("id"));
        assert_eq!(l.summary.directory, m["project_dir"].as_str().expect("dir"));
        assert_eq!(l.summary.requests, s.main.requests.responses.len());
        assert_eq!(l.summary.tokens, s.own_usage().to_usage());
        // Priced by the bundled table; ccusage's own figure is checked beside the trace's.
        assert!(l.summary.cost > 0.0, "{name}");
        assert_eq!(l.unreadable_lines, 0);
        let first = m["turns"][0]["user"].as_str().expect("prompt");
        assert_eq!(l.summary.title, first);
        assert!(l.summary.created > 0 && l.summary.updated >= l.summary.created);
        let mut children: Vec<String> = s
            .subagents
            .iter()
            .map(|x| format!("agent-{}", x.file.agent_id))
            .collect();
        children.sort();
        assert_eq!(l.summary.children, children);
        let messages = s
            .main
            .transcript
            .entries
            .iter()
            .filter(|e| matches!(e.record, Record::User(_) | Record::Assistant(_)))
            .count();
        assert_eq!(l.summary.messages, messages);
    }
}

/// A copy of the compaction session with a garbage line, a non-object line and a huge line put
/// in the middle, and its last record cut: each is reported and skipped, the rest loads.
#[test]
fn a_damaged_copy_loads_what_is_intact() {
    let src = std::fs::read_to_string(session_file("compaction_logscan")).expect("session");
    let lines: Vec<&str> = src.lines().collect();
    assert_eq!(lines.len(), 119);
    let huge = format!(
        r#"{{"type":"user","message":{{"content":"{}"}}}}"#,
        "y".repeat(300_000)
    );
    let mut damaged: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i == 40 {
            damaged.push("this is not json {\"type\":".to_owned());
            damaged.push("42".to_owned());
            damaged.push(huge.clone());
        }
        if i == 117 {
            // The last response's only record, cut mid-write; the record after it lost.
            damaged.push(l[..l.len() / 2].to_owned());
            break;
        }
        damaged.push((*l).to_owned());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir
        .path()
        .join("927b1170-f977-416a-aabb-46039b7eb22a.jsonl");
    std::fs::write(&p, damaged.join("\n")).expect("write");
    let s = Session::read_with(&p, ReadOptions { max_line: 200_000 }).expect("loads");
    let d = s.main.diagnostics();
    assert_eq!(d.count(DiagnosticKind::CorruptJson), 2, "{d:?}");
    assert_eq!(d.count(DiagnosticKind::OversizedLine), 1, "{d:?}");
    assert_eq!(d.count(DiagnosticKind::PartialWrite), 1, "{d:?}");
    assert_eq!(s.main.requests.responses.len(), 21);
    assert_eq!(s.main.compactions.len(), 3);
    assert_eq!(s.main.transcript.entries.len(), 117);
    let l = tierscope_engine::formats::claude_code::listing::summarize_with(&p, 200_000)
        .expect("listing");
    assert_eq!(l.summary.requests, 21);
    assert_eq!(l.unreadable_lines, 4);
    assert_eq!(l.summary.tokens, s.own_usage().to_usage());
}

/// A sub-agent whose meta file is lost is still linked, through the `agentId` of the Agent
/// call's result; one whose spawning call is gone too is reported, and still read.
#[test]
fn a_sub_agent_without_its_meta_file_is_linked_by_its_agent_id() {
    let src = session_file("subagents_webhookd");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(src.file_name().expect("name"));
    std::fs::copy(&src, &file).expect("copy");
    let stem = src.file_stem().expect("stem");
    let subs_src = src.with_file_name(stem).join("subagents");
    let subs = dir.path().join(stem).join("subagents");
    std::fs::create_dir_all(&subs).expect("mkdir");
    for e in std::fs::read_dir(&subs_src).expect("subagents") {
        let e = e.expect("entry");
        std::fs::copy(e.path(), subs.join(e.file_name())).expect("copy");
    }
    let lost = "a62ba682c5a2a5db0";
    std::fs::remove_file(subs.join(format!("agent-{lost}.meta.json"))).expect("rm");
    // An agent nobody spawned.
    std::fs::copy(
        subs.join(format!("agent-{lost}.jsonl")),
        subs.join("agent-zzstray.jsonl"),
    )
    .expect("copy");
    let s = Session::read(&file).expect("read");
    assert_eq!(s.subagents.len(), 5);
    let sub = s
        .subagents
        .iter()
        .find(|x| x.file.agent_id == lost)
        .expect("read without its meta");
    assert!(sub.meta.is_none());
    let spawn = sub.spawned_by.as_ref().expect("linked by agentId");
    let call = &s.main.requests.tool_calls[spawn.call];
    assert_eq!(call.input["description"], "Map signature comparisons");
    let stray = s
        .subagents
        .iter()
        .find(|x| x.file.agent_id == "zzstray")
        .expect("read");
    assert!(stray.spawned_by.is_none());
    assert_eq!(stray.thread.requests.responses.len(), 3);
    // Two missing meta files (the lost one and the stray's), one sub-agent nobody spawned.
    assert_eq!(s.diagnostics.count(DiagnosticKind::UnreadableFile), 2);
    assert_eq!(s.diagnostics.count(DiagnosticKind::OrphanMessage), 1);
}

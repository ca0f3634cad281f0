//! Issue 32, item 8: the flat baseline's summaries written by a model. Against the mock
//! OpenAI-compatible server on 127.0.0.1 (its "summariser" keeps what the user asked and drops
//! what the tools said), on the sample M1 at a budget where OpenCode's simulated compaction
//! fires again and again: one call per compaction, asked with OpenCode 1.18.33's own compaction
//! prompt (checked against the recorded summary calls of `tests/recordings/opencode-1.18.33`);
//! a second run makes no call; the summary `replay` and `render` show is the model's; a summary
//! that drops the reason loses the probe that asks for it; cost and lineage are in the output.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::historian_common::mock::{mock_summary, summary_request, Fault, MockServer};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const SECRET: &str = "sk-test-9d2e7f41c0a8b6e3";
/// M1 compacts at 13 requests of its 24 at this budget (OpenCode 1.18.33's rules).
const BUDGET: &str = "8000";

/// A mock endpoint and a scratch dir (caches) for one test.
struct Lab {
    mock: MockServer,
    scratch: tempfile::TempDir,
}

/// How a command is run: with the mock writing the summaries, or without.
#[derive(Clone, Copy, PartialEq)]
enum Summaries {
    StandIn,
    Model,
}

impl Lab {
    fn new() -> Lab {
        Lab {
            mock: MockServer::start(),
            scratch: tempfile::tempdir().unwrap(),
        }
    }
    /// `tierscope CMD INPUT --budget B -p P… EXTRA…`, the summaries as `how` says.
    fn tierscope(&self, how: Summaries, cmd: &str, input: &str, argv: &[&str]) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_tierscope"));
        c.args([cmd, input]).args(argv);
        if how == Summaries::Model {
            c.args(["--summary-endpoint", &self.mock.url()])
                .args(["--summary-model", "mock-historian", "--summary-cache-dir"])
                .arg(self.scratch.path().join("summaries"));
        }
        c.env("TIERSCOPE_CACHE_DIR", self.scratch.path().join("cache"))
            .env("OPENAI_API_KEY", SECRET)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
    /// The same on M1 at [`BUDGET`].
    fn m1(&self, how: Summaries, cmd: &str, argv: &[&str]) -> Output {
        let m1 = format!("{ROOT}/sample-traces/M1.json");
        let mut all = vec!["--budget", BUDGET];
        all.extend(argv);
        self.tierscope(how, cmd, &m1, &all)
    }
    /// The summary requests the mock received (the historian's tier requests aside).
    fn summary_requests(&self) -> Vec<Value> {
        self.mock
            .received()
            .into_iter()
            .filter(|r| summary_request(&r.body).is_some())
            .map(|r| r.body)
            .collect()
    }
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&ok(o)).expect("JSON output")
}

/// The two summary calls OpenCode 1.18.33 sent while recording E2 (a first summary, then one
/// quoting the earlier summary), as its model received them.
fn recorded_calls() -> Vec<Value> {
    let path = Path::new(ROOT).join("tests/recordings/opencode-1.18.33/requests/E2.requests.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "summary")
        .collect()
}

fn content(v: &Value, i: usize) -> &str {
    v["messages"][i]["content"].as_str().unwrap_or("")
}

/// What follows the last `marker` of `text`.
fn after<'a>(text: &'a str, marker: &str) -> &'a str {
    text.rsplit_once(marker).map_or("", |(_, t)| t)
}

fn row<'a>(doc: &'a Value, policy: &str) -> &'a Value {
    doc["runs"][0]["experiment"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == policy)
        .unwrap_or_else(|| panic!("no row {policy}"))
}

#[test]
fn each_compaction_is_written_once_with_the_agents_prompt_then_read_from_the_cache() {
    let lab = Lab::new();
    let argv = ["-p", "opencode", "--strategy", "source", "--format", "json"];
    let doc = json(&lab.m1(Summaries::Model, "experiment", &argv));
    let flat = row(&doc, "opencode");
    let compactions = flat["compaction"]["compactions"].as_array().unwrap().len();
    assert!(compactions >= 3, "M1 compacts at {BUDGET}: {flat}");
    let sent = lab.summary_requests();
    assert_eq!(sent.len(), compactions, "one call per compaction");

    // OpenCode 1.18.33's prompt, as its recorded summary calls carry it: its system prompt, the
    // history in <conversation>, then the instruction (a first summary's, or the one that
    // combines it with the <prior-summary>).
    let recorded = recorded_calls();
    let (first, update) = (&recorded[0], &recorded[1]);
    assert!(!content(first, 1).contains("<prior-summary>"));
    assert!(content(update, 1).contains("<prior-summary>"));
    for (k, s) in sent.iter().enumerate() {
        assert_eq!(s["model"], "mock-historian");
        assert_eq!(
            content(s, 0),
            content(first, 0),
            "call {k}: the system prompt"
        );
        let user = content(s, 1);
        assert!(user.starts_with("Here is the conversation so far:\n\n<conversation>\n"));
        let (marker, like) = if k == 0 {
            ("</conversation>", first)
        } else {
            ("</prior-summary>", update)
        };
        assert_eq!(
            after(user, marker),
            after(content(like, 1), marker),
            "call {k}: the instruction"
        );
    }

    // Every summary shown is the model's, named by its call; the report has each with its
    // lineage and the bill.
    let report = &doc["flat_summaries"];
    let texts: Vec<&str> = flat["compaction"]["summary_text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), compactions);
    let summaries = report["summaries"].as_array().unwrap();
    assert_eq!(summaries.len(), compactions);
    for t in &texts {
        let call = t.strip_prefix("written:").expect("written by the model");
        let s = summaries
            .iter()
            .find(|s| s["lineage"]["call"] == call)
            .expect("reported");
        assert_eq!(s["from_cache"], false);
        let lineage = &s["lineage"];
        assert_eq!(lineage["model"], "mock-historian");
        assert_eq!(lineage["response_model"], "mock-historian");
        assert_eq!(lineage["prompt_hash"], report["prompt_hash"]);
        assert!(lineage["created"]
            .as_str()
            .is_some_and(|d| d.ends_with('Z')));
        assert!(lineage["input_tokens"].as_u64().unwrap() > 0);
    }
    for s in &sent {
        let answer = mock_summary(content(s, 1));
        assert!(summaries.iter().any(|r| r["text"] == answer.as_str()));
    }
    assert_eq!(report["model"], "mock-historian");
    assert!(report["endpoint"]
        .as_str()
        .unwrap()
        .ends_with("/v1/chat/completions"));
    assert!(report["prompt"]
        .as_str()
        .unwrap()
        .contains("OpenCode 1.18.25–1.18.33's compaction prompt"));
    assert_eq!(report["prompt_hash"].as_str().unwrap().len(), 16);
    let bill = &report["bill"];
    assert_eq!(bill["written_now"], compactions);
    assert_eq!(bill["this_run"]["calls"], compactions);
    assert!(bill["this_run"]["input_tokens"].as_u64().unwrap() > 0);
    // The mock's model is not in the pricing table: tokens, no dollars, and the output says so.
    assert!(report["this_run_dollars"].is_null());

    // Generated once: a second run sends nothing and shows the same.
    let again = json(&lab.m1(Summaries::Model, "experiment", &argv));
    assert_eq!(lab.summary_requests().len(), compactions, "no new call");
    assert_eq!(row(&again, "opencode"), flat);
    let bill = &again["flat_summaries"]["bill"];
    assert_eq!(bill["from_cache"], compactions);
    assert_eq!(bill["this_run"]["calls"], 0);
    assert_eq!(bill["all_summaries"], report["bill"]["all_summaries"]);

    // Priced: the table's figures at the given prices, in the text output too.
    let priced = [
        "-p",
        "opencode",
        "--strategy",
        "source",
        "--summary-price",
        "1,4",
    ];
    let text = ok(&lab.m1(Summaries::Model, "experiment", &priced));
    assert!(
        text.contains("flat summaries written by mock-historian at http://127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("priced as --summary-price: $1/$4 per M tokens in/out"));
    assert!(text.contains(&format!(
        "{compactions} summaries: 0 written now, {compactions} from the cache"
    )));
    assert!(text.contains("summary text: written (written: by a model"));
}

/// Per request, whether probe `id` is answered (from the frames' changes).
fn answered(replay: &Value, id: &str) -> Vec<Option<bool>> {
    let mut now = None;
    replay["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            for c in f["probe_changes"].as_array().unwrap() {
                if c["id"] == id {
                    now = c["ok"].as_bool();
                }
            }
            now
        })
        .collect()
}

#[test]
fn a_written_summary_that_drops_the_reason_loses_the_probe_the_stand_in_kept() {
    let lab = Lab::new();
    let argv = ["-p", "opencode", "--format", "json"];
    let stand_in = json(&lab.m1(Summaries::StandIn, "replay", &argv));
    let written = json(&lab.m1(Summaries::Model, "replay", &argv));
    let survival = |r: &Value| r["summary"]["probe_survival"].as_f64().unwrap();
    assert!(
        survival(&written) < survival(&stand_in),
        "{} vs {}",
        survival(&written),
        survival(&stand_in)
    );
    assert!(survival(&written) < 1.0);
    // The reason the first approach failed (cargo's "failed to select a version for
    // `tomlette`", a tool's output) is in the compact tiers that stand in for a summary, and
    // not in what the model wrote: the last request holds it only under the stand-in.
    let (a, b) = (
        answered(&stand_in, "p-conflict"),
        answered(&written, "p-conflict"),
    );
    let last = a.len() - 1;
    assert_eq!((a[last], b[last]), (Some(true), Some(false)));
    let needle = "failed to select a version for `tomlette`";
    for s in lab.summary_requests() {
        assert!(!mock_summary(content(&s, 1)).contains(needle));
    }
    let texts = written["policy"]["compaction"]["summary_text"]
        .as_array()
        .unwrap();
    assert!(texts
        .iter()
        .all(|t| t.as_str().unwrap().starts_with("written:")));
    // The summary calls are billed in their frames as before, at the written summary's size.
    let billed: Vec<&Value> = written["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.get("compaction_call").filter(|c| !c.is_null()))
        .collect();
    assert_eq!(billed.len(), texts.len());
    assert!(billed
        .iter()
        .all(|c| c["summary_text"].as_str().unwrap().starts_with("written:")));
}

#[test]
fn render_shows_the_models_summary_with_its_lineage() {
    let lab = Lab::new();
    let replay = json(&lab.m1(
        Summaries::Model,
        "replay",
        &["-p", "opencode", "--format", "json"],
    ));
    let at = replay["policy"]["compaction"]["compactions"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    let calls = lab.summary_requests().len();
    let o = lab.m1(
        Summaries::Model,
        "render",
        &["-p", "opencode", "--at", &at, "--json"],
    );
    assert_eq!(
        lab.summary_requests().len(),
        calls,
        "render reads the cache"
    );
    let ctx = json(&o);
    let summary = ctx["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "summary")
        .expect("a summary is shown");
    let text = summary["text"].as_str().unwrap();
    // The last summary written is the one shown, under a header naming its writer.
    let last = lab.summary_requests().pop().unwrap();
    let answer = mock_summary(content(&last, 1));
    assert!(text.contains(&answer), "{text}");
    assert!(text.contains("written by mock-historian"), "{text}");
    assert!(!text.contains("compact tiers of"), "{text}");
    let note = ctx["note"].as_str().unwrap();
    assert!(
        note.contains("the summary was written by model mock-historian at http://127.0.0.1:"),
        "{note}"
    );
    assert!(note.contains("OpenCode 1.18.25–1.18.33's compaction prompt"));
    // The cost goes to stderr, the context alone to stdout.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("from the cache"), "{err}");
}

#[test]
fn a_policy_that_does_not_compact_makes_no_call_and_shows_what_it_showed() {
    let lab = Lab::new();
    let argv = [
        "-p",
        "retention",
        "-p",
        "full",
        "--strategy",
        "source",
        "--format",
        "json",
    ];
    let plain = json(&lab.m1(Summaries::StandIn, "experiment", &argv));
    let with = json(&lab.m1(Summaries::Model, "experiment", &argv));
    assert!(lab.mock.received().is_empty());
    assert_eq!(plain["runs"], with["runs"]);
    assert!(plain.get("flat_summaries").is_none());
    assert_eq!(with["flat_summaries"]["bill"]["summaries"], 0);
}

#[test]
fn an_agent_without_a_bundled_prompt_takes_one_from_a_file() {
    let lab = Lab::new();
    let session = format!(
        "{ROOT}/tests/recordings/claude-code-2.1.197/dot-claude/projects/-home-dev-src-logscan/927b1170-f977-416a-aabb-46039b7eb22a.jsonl"
    );
    let argv = [
        "--budget",
        "20000",
        "-p",
        "claude-code",
        "--strategy",
        "source",
        "--format",
        "json",
    ];
    let o = lab.tierscope(Summaries::Model, "experiment", &session, &argv);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no compaction prompt of claude-code") && err.contains("--summary-prompt"),
        "{err}"
    );
    assert!(lab.mock.received().is_empty());

    let file = lab.scratch.path().join("prompt.txt");
    std::fs::write(&file, "Summarise this for the next agent:\n\n{{history}}\n").unwrap();
    let f = file.to_string_lossy().into_owned();
    let mut with_file = argv.to_vec();
    with_file.extend(["--summary-prompt", &f]);
    let doc = json(&lab.tierscope(Summaries::Model, "experiment", &session, &with_file));
    let sent = lab.summary_requests();
    assert!(!sent.is_empty());
    for s in &sent {
        // No system prompt of its own: the file's text, the history where it says.
        assert_eq!(s["messages"].as_array().unwrap().len(), 1);
        assert!(content(s, 0).starts_with("Summarise this for the next agent:\n\n"));
    }
    let prompt = doc["flat_summaries"]["prompt"].as_str().unwrap();
    assert!(prompt.contains("prompt.txt (--summary-prompt)"), "{prompt}");
}

#[test]
fn the_key_is_sent_but_never_printed() {
    let lab = Lab::new();
    lab.mock.fault("*", Fault::EchoAuth);
    let o = lab.m1(
        Summaries::Model,
        "experiment",
        &["-p", "opencode", "--strategy", "source"],
    );
    assert!(!o.status.success());
    let received = lab.mock.received();
    assert_eq!(
        received[0].authorization.as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(!out.contains(SECRET) && !err.contains(SECRET));
    assert!(
        err.contains("HTTP 401") && err.contains("run again to resume"),
        "{err}"
    );
}

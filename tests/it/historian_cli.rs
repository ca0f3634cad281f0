//! `tierscope tiers generate` end to end, against a mock OpenAI-compatible server on 127.0.0.1
//! (no model anywhere): the sidecar and its lineage, `--tiers external` loading it, generate-once
//! (a second run sends nothing; an interrupted run resumes), retries with `Retry-After`, a refused
//! `response_format`, malformed answers, timeouts, cascade, the key never leaking, the audit and
//! the experiment side by side, and the places tierscope refuses to write.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::historian_common::mock::{Fault, MockServer};
use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::sidecar::parse_tiers;
use tierscope_engine::episode::{Strategy, Tier};
use tierscope_engine::session::{load, LoadOptions};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");
const KEY: &str = "sk-test-4f1c2a9e7d3b5c8a";

fn m1() -> String {
    format!("{SAMPLES}/M1.json")
}

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("TIERSCOPE_CACHE_DIR", self.cache())
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("OPENAI_API_KEY", KEY)
            .stdin(Stdio::null());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
    /// `tiers generate M1 --endpoint … --model mock-historian --out … --cache-dir …` + `extra`.
    fn generate(&self, mock: &MockServer, extra: &[&str]) -> Output {
        let (url, out, cache) = (mock.url(), self.out(), self.cache().join("historian"));
        let mut args = vec![
            "tiers",
            "generate",
            "--endpoint",
            &url,
            "--model",
            "mock-historian",
            "--retry-base-ms",
            "1",
        ];
        let (o, c) = (
            out.to_string_lossy().into_owned(),
            cache.to_string_lossy().into_owned(),
        );
        args.extend(["--out", &o, "--cache-dir", &c]);
        args.extend(extra);
        let m1 = m1();
        args.push(&m1);
        self.run(&args)
    }
    /// The one tiers sidecar in the out dir (a killed run may also leave a temp file there: the
    /// rename that would have replaced the sidecar never happened, so the sidecar is whole).
    fn sidecar(&self) -> PathBuf {
        let entries: Vec<PathBuf> = std::fs::read_dir(self.out())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".tiers.json"))
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        entries[0].clone()
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn ok(o: &Output) -> String {
    let (out, err) = text(o);
    assert!(o.status.success(), "stdout:\n{out}\nstderr:\n{err}");
    out
}

fn session_id() -> String {
    load(&LoadOptions {
        path: Some(m1().into()),
        ..LoadOptions::default()
    })
    .unwrap()
    .trace
    .session
    .id
}

fn episodes() -> usize {
    load(&LoadOptions {
        path: Some(m1().into()),
        ..LoadOptions::default()
    })
    .unwrap()
    .episodes
    .len()
}

#[test]
fn the_sidecar_carries_lineage_and_loads_as_external_tiers() {
    let env = Env::new();
    let mock = MockServer::start();
    let out = ok(&env.generate(&mock, &[]));
    let n = episodes();
    assert_eq!(mock.received().len(), n, "one call per episode");
    assert!(
        out.contains(&format!(
            "{n} episodes — {n} generated, 0 from the cache, 0 failed"
        )),
        "{out}"
    );
    assert!(
        out.contains("not priced: model mock-historian is not in the pricing table"),
        "{out}"
    );
    // Every request: the model, JSON mode, the versioned prompt, the key in the header only.
    for r in mock.received() {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.body["model"], "mock-historian");
        assert_eq!(r.body["response_format"]["type"], "json_object");
        assert!(r.body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("survival contract"));
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }

    let path = env.sidecar();
    let file = parse_tiers(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    assert_eq!(file.episodes.len(), n);
    let e0 = &file.episodes[0];
    assert_eq!(
        e0.tiers.keys().collect::<Vec<_>>(),
        ["anchor", "compact", "dense"]
    );
    let dense = &e0.tiers["dense"];
    assert_eq!(dense.generator.as_deref(), Some("tierscope-historian/1"));
    assert_eq!(dense.model.as_deref(), Some("mock-historian"));
    assert_eq!(dense.prompt_version.as_deref(), Some("historian-v1"));
    assert_eq!(dense.strategy.as_deref(), Some("source"));
    assert_eq!(dense.source_episode.as_deref(), Some("E0"));
    assert_eq!(dense.from_tier, Some(Tier::Full));
    let u = dense.usage.as_ref().unwrap();
    assert!(u.input_tokens.unwrap() > 0 && u.output_tokens.unwrap() > 0);
    assert_eq!(u.response_model.as_deref(), Some("mock-historian"));
    // One call wrote all three: they share its id and usage.
    assert_eq!(e0.tiers["anchor"].usage, dense.usage);

    // Loaded as today: the lower tiers are the model's, full is the messages as sent.
    let l = load(&LoadOptions {
        path: Some(m1().into()),
        tiers: TierSource::External,
        sidecars: Some(env.out()),
        ..LoadOptions::default()
    })
    .unwrap();
    assert!(
        !l.warnings.iter().any(|w| w.contains("no external tiers")),
        "{:?}",
        l.warnings
    );
    for e in &l.episodes {
        assert_eq!(
            e.representation(Tier::Full).unwrap().strategy,
            Strategy::Source,
            "{}",
            e.id
        );
        let a = e.representation(Tier::Anchor).unwrap();
        assert_eq!(a.strategy, Strategy::External);
        assert!(a
            .generator
            .contains("model=mock-historian prompt=historian-v1 strategy=source"));
        assert!(a.text().contains(&format!("[{}]", e.id)));
    }
    assert_eq!(l.tier_lineage.len(), 3 * n);
}

#[test]
fn a_second_identical_run_sends_nothing() {
    let env = Env::new();
    let mock = MockServer::start();
    ok(&env.generate(&mock, &[]));
    let first = std::fs::read_to_string(env.sidecar()).unwrap();
    let sent = mock.received().len();
    let out = ok(&env.generate(&mock, &[]));
    assert_eq!(mock.received().len(), sent, "generate once");
    let n = episodes();
    assert!(
        out.contains(&format!("0 generated, {n} from the cache")),
        "{out}"
    );
    assert!(
        out.contains("this run:  0 calls, 0 tokens in, 0 out"),
        "{out}"
    );
    assert!(out.contains(&format!("the tiers: {n} calls")), "{out}");
    assert_eq!(
        std::fs::read_to_string(env.sidecar()).unwrap(),
        first,
        "byte-identical sidecar"
    );
    // Another strategy is another question.
    ok(&env.generate(&mock, &["--strategy", "cascade", "--episode", "E0"]));
    assert_eq!(mock.received().len(), sent + 3);
}

#[test]
fn an_interrupted_run_resumes_where_it_stopped() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.fault("E2", Fault::Stall(Duration::from_secs(30)));
    let (url, out, cache) = (mock.url(), env.out(), env.cache().join("historian"));
    let mut child = env
        .command(&[
            "tiers",
            "generate",
            "--endpoint",
            &url,
            "--model",
            "mock-historian",
            "--concurrency",
            "1",
            "--out",
            out.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            &m1(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until E2's request is in flight, then kill the run (as Ctrl-C or a crash would).
    let start = Instant::now();
    while !mock.received().iter().any(|r| r.episode() == "E2") {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "E2 was never requested"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // What finished is on disk: E0 and E1 in the cache (each call writes its own entry), and a
    // valid sidecar of what the main thread had written by then (an entry may still have been on
    // its way when the kill came, so it holds a prefix of E0, E1).
    let path = env.out().join(format!("{}.tiers.json", session_id()));
    if path.exists() {
        let partial = parse_tiers(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
        let written: Vec<String> = partial
            .episodes
            .iter()
            .map(|e| e.tiers["dense"].source_episode.clone().unwrap())
            .collect();
        assert!(
            ["E0", "E1"].starts_with(&written.iter().map(String::as_str).collect::<Vec<_>>()),
            "{written:?}"
        );
    }
    let before = mock.received().len();
    ok(&env.generate(&mock, &["--concurrency", "1"]));
    let asked: Vec<String> = mock.received()[before..]
        .iter()
        .map(|r| r.episode())
        .collect();
    let n = episodes();
    assert_eq!(asked, (2..n).map(|k| format!("E{k}")).collect::<Vec<_>>());
}

#[test]
fn rate_limits_and_server_errors_are_retried_and_a_failure_reruns_alone() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.fault(
        "E0",
        Fault::Status(
            429,
            Some("0".into()),
            r#"{"error":{"message":"Rate limit reached for requests"}}"#.into(),
        ),
    )
    .fault("E0", Fault::Status(503, None, "upstream overloaded".into()));
    for _ in 0..3 {
        mock.fault(
            "E1",
            Fault::Status(500, None, r#"{"error":{"message":"boom"}}"#.into()),
        );
    }
    let o = env.generate(&mock, &["--max-retries", "2", "--concurrency", "1"]);
    let (out, err) = text(&o);
    assert!(!o.status.success());
    let n = episodes();
    assert!(
        out.contains(&format!("{} generated, 0 from the cache, 1 failed", n - 1)),
        "{out}"
    );
    // E0: 429, 503, then tiers; E1: three 500s.
    assert!(
        out.contains(&format!("requests: {} (4 retries)", n + 4)),
        "{out}"
    );
    assert!(
        err.contains("E0: HTTP 429: Rate limit reached for requests; retrying in"),
        "{err}"
    );
    assert!(
        err.contains("E0: HTTP 503: upstream overloaded; retrying in"),
        "{err}"
    );
    assert!(
        err.contains("E1 (full>dense+compact+anchor): gave up after 3 attempts: HTTP 500: boom"),
        "{err}"
    );
    assert!(
        err.contains("run the same command again to retry only them"),
        "{err}"
    );
    let path = env.sidecar();
    let partial = parse_tiers(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    assert_eq!(partial.episodes.len(), n - 1);
    let before = mock.received().len();
    let out = ok(&env.generate(&mock, &[]));
    let asked: Vec<String> = mock.received()[before..]
        .iter()
        .map(|r| r.episode())
        .collect();
    assert_eq!(asked, ["E1"], "only the failed episode");
    assert!(
        out.contains(&format!("1 generated, {} from the cache, 0 failed", n - 1)),
        "{out}"
    );
}

#[test]
fn calls_without_usage_are_counted_and_said() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.fault("E0", Fault::NoUsage);
    let out = ok(&env.generate(
        &mock,
        &["--episode", "E0", "--episode", "E1", "--price", "1,4"],
    ));
    assert!(out.contains("this run:  2 calls"), "{out}");
    assert!(out.contains("1 call reported no usage"), "{out}");
    assert!(
        out.contains("priced as --price: $1/$4 per M tokens in/out"),
        "{out}"
    );
    let path = env.sidecar();
    let f = parse_tiers(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let u = f.episodes[0].tiers["dense"].usage.as_ref().unwrap();
    assert_eq!((u.input_tokens, u.output_tokens), (None, None));
}

#[test]
fn a_refused_response_format_is_dropped_and_answers_still_parse() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.reject_response_format();
    let out = ok(&env.generate(&mock, &["--concurrency", "1"]));
    assert!(out.contains("the endpoint refused JSON mode"), "{out}");
    let r = mock.received();
    assert!(r[0].body.get("response_format").is_some());
    assert!(r[1..]
        .iter()
        .all(|x| x.body.get("response_format").is_none()));
    assert_eq!(r.len(), episodes() + 1);
}

#[test]
fn malformed_and_unusable_answers_are_clear_per_episode_errors() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.fault(
        "E0",
        Fault::Content("Sure! Here are the tiers you asked for: {\"tiers\":".into()),
    )
    .fault(
        "E1",
        Fault::Content(r#"{"tiers": {"dense": "d", "compact": "c"}}"#.into()),
    )
    .fault(
        "E2",
        Fault::Status(200, None, "<html>gateway</html>".into()),
    );
    let o = env.generate(&mock, &[]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("error: E0 (full>dense+compact+anchor): the answer is not JSON"),
        "{err}"
    );
    assert!(
        err.contains("it starts: \"Sure! Here are the tiers"),
        "{err}"
    );
    assert!(
        err.contains("error: E1 (full>dense+compact+anchor): the answer is not of the form"),
        "{err}"
    );
    assert!(err.contains("missing anchor"), "{err}");
    assert!(
        err.contains(
            "error: E2 (full>dense+compact+anchor): the response is not a chat completion"
        ),
        "{err}"
    );
    assert!(err.contains("3 of"), "{err}");
}

#[test]
fn a_stalled_request_times_out_and_is_retried() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.fault("E0", Fault::Stall(Duration::from_secs(5)));
    let o = env.generate(&mock, &["--timeout", "1", "--episode", "E0"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("E0: no answer within 1s; retrying in"),
        "{err}"
    );
    assert!(out.contains("requests: 2 (1 retry)"), "{out}");
}

#[test]
fn cascade_writes_each_tier_from_the_one_above() {
    let env = Env::new();
    let mock = MockServer::start();
    ok(&env.generate(&mock, &["--strategy", "cascade", "--episode", "E1"]));
    let r = mock.received();
    assert_eq!(r.len(), 3);
    assert!(r[1].user().contains("<source tier=\"dense\">"));
    assert!(r[2].user().contains("<source tier=\"compact\">"));
    let path = env.sidecar();
    let f = parse_tiers(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let t = &f.episodes[0].tiers;
    assert_eq!(t["dense"].from_tier, Some(Tier::Full));
    assert_eq!(t["compact"].from_tier, Some(Tier::Dense));
    assert_eq!(t["anchor"].from_tier, Some(Tier::Compact));
    assert_ne!(
        t["dense"].usage.as_ref().unwrap().call,
        t["compact"].usage.as_ref().unwrap().call
    );
    // The compact tier the model wrote is what the anchor call read.
    assert!(r[2].user().contains(&t["compact"].text));
}

/// Every file under `dir`, read.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files(&p));
            } else {
                out.push((
                    p.clone(),
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned(),
                ));
            }
        }
    }
    out
}

#[test]
fn the_key_is_never_printed_or_stored() {
    let env = Env::new();
    let mock = MockServer::start();
    let good = env.generate(&mock, &["--json"]);
    ok(&good);
    // A server that echoes the Authorization header in its error.
    mock.fault("*", Fault::EchoAuth);
    let bad = env.generate(&mock, &["--refresh", "--concurrency", "1"]);
    let (out, err) = text(&bad);
    assert!(!bad.status.success());
    assert!(err.contains("the run stopped: the endpoint answered HTTP 401: Incorrect API key provided: Bearer [redacted]"), "{err}");
    assert!(out.contains("left undone when the run stopped"), "{out}");
    let (gout, gerr) = text(&good);
    for (what, s) in [
        ("stdout", &gout),
        ("stderr", &gerr),
        ("stdout", &out),
        ("stderr", &err),
    ] {
        assert!(!s.contains(KEY), "the key is in {what}: {s}");
    }
    let stored = files(env.dir.path());
    assert!(
        stored.len() > episodes(),
        "sidecar and cache files are there: {stored:?}"
    );
    for (p, s) in stored {
        assert!(
            !s.contains(KEY) && !s.contains("Bearer"),
            "the key is in {}",
            p.display()
        );
    }
    // It was sent, where it belongs.
    assert!(mock
        .received()
        .iter()
        .all(|r| r.authorization.as_deref() == Some(&*format!("Bearer {KEY}"))));
    // A variable named with --api-key-env must be set.
    let o = env.generate(&mock, &["--api-key-env", "TIERSCOPE_TEST_NO_SUCH_KEY"]);
    assert!(text(&o)
        .1
        .contains("--api-key-env TIERSCOPE_TEST_NO_SUCH_KEY: the variable is not set"));
}

#[test]
fn audit_and_experiment_put_model_tiers_beside_source_and_cascade() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.invent_a_version();
    ok(&env.generate(&mock, &[]));
    let out_dir = env.out();
    let o = env.run(&[
        "audit",
        &m1(),
        "--tiers-dir",
        out_dir.to_str().unwrap(),
        "--strategy",
        "source",
        "--strategy",
        "cascade",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    let names: Vec<&str> = v["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["source", "cascade", "model:mock-historian/source"]);
    let model = &v["strategies"][2];
    let n = episodes() as u64;
    assert_eq!(model["generation"]["calls"], n);
    assert_eq!(model["generation"]["basis"], "usage");
    assert_eq!(model["generation"]["dollars"], serde_json::Value::Null);
    assert_eq!(
        model["generation"]["pricing"],
        "not priced: model mock-historian is not in the pricing table"
    );
    let sent: u64 = mock.received().len() as u64;
    assert_eq!(sent, n);
    assert_eq!(v["strategies"][0]["generation"]["calls"], 0);
    assert_eq!(v["strategies"][0]["generation"]["dollars"], 0.0);
    // The invented version is flagged as an unsupported addition of the model's compact tiers.
    let compact = model["totals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tier"] == "compact")
        .unwrap();
    assert!(compact["unsupported"].as_u64().unwrap() >= n, "{compact}");
    let flagged = model["episodes"][0]["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tier"] == "compact")
        .unwrap();
    assert!(
        flagged["unsupported"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u == "9.9.9"),
        "{flagged}"
    );
    // The table names the strategies and prices the deterministic ones at $0.
    let table = ok(&env.run(&["audit", &m1(), "--tiers-dir", out_dir.to_str().unwrap()]));
    assert!(table.contains("model:mock-historian/source"), "{table}");
    assert!(table.contains("$0 (no model)"), "{table}");

    let o = env.run(&[
        "experiment",
        &m1(),
        "-p",
        "retention",
        "-p",
        "age",
        "--strategy",
        "source",
        "--tiers-dir",
        out_dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["strategy"], "model:mock-historian/source");
    assert_eq!(runs[1]["experiment"]["rows"].as_array().unwrap().len(), 2);
    let table = ok(&env.run(&[
        "experiment",
        &m1(),
        "-p",
        "retention",
        "--strategy",
        "source",
        "--tiers-dir",
        out_dir.to_str().unwrap(),
    ]));
    assert!(
        table.contains("total_$") && table.contains("model:mock-historian/source"),
        "{table}"
    );
}

#[test]
fn it_never_writes_into_opencode_data_nor_over_someone_elses_tiers() {
    let env = Env::new();
    let mock = MockServer::start();
    let db = format!("{SAMPLES}/opencode.db");
    let url = mock.url();
    let inside = format!("{SAMPLES}/tiers-out");
    let o = env.run(&[
        "tiers",
        "generate",
        &db,
        "--endpoint",
        &url,
        "--model",
        "m",
        "--out",
        &inside,
    ]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("it is inside the directory of the input database"),
        "{err}"
    );
    assert!(!Path::new(&inside).exists());
    assert!(mock.received().is_empty());

    // A hand-written tiers sidecar is not replaced without --force.
    let session = session_id();
    std::fs::create_dir_all(env.out()).unwrap();
    let theirs = env.out().join(format!("{session}.tiers.json"));
    std::fs::write(&theirs, serde_json::json!({"episodes": [{"first_message_id": "a", "last_message_id": "b", "tiers": {"anchor": {"text": "mine", "generator": "hand"}}}]}).to_string()).unwrap();
    let o = env.generate(&mock, &[]);
    assert!(
        text(&o)
            .1
            .contains("was not written by tierscope's historian (it holds tiers by hand)"),
        "{}",
        text(&o).1
    );
    assert!(std::fs::read_to_string(&theirs).unwrap().contains("mine"));
    ok(&env.generate(&mock, &["--force"]));
    assert!(!std::fs::read_to_string(&theirs).unwrap().contains("mine"));
}

#[test]
fn a_dry_run_sends_nothing_and_says_what_a_run_would() {
    let env = Env::new();
    let mock = MockServer::start();
    let out = ok(&env.generate(&mock, &["--dry-run"]));
    assert!(mock.received().is_empty());
    let n = episodes();
    assert!(out.contains(&format!("{n} calls would be sent")), "{out}");
    ok(&env.generate(&mock, &["--episode", "E0"]));
    let out = ok(&env.generate(&mock, &["--dry-run"]));
    assert!(
        out.contains(&format!("{} calls would be sent", n - 1)),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("E0 ") && l.contains("1/1")),
        "{out}"
    );
}

#[test]
fn runs_of_a_few_episodes_add_up_and_another_segmentation_starts_afresh() {
    let env = Env::new();
    let mock = MockServer::start();
    ok(&env.generate(&mock, &["--episode", "E0"]));
    let out = ok(&env.generate(&mock, &["--episode", "E1"]));
    assert!(out.contains("(2 episodes)"), "{out}");
    let path = env.sidecar();
    let f = parse_tiers(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    let sources: Vec<_> = f
        .episodes
        .iter()
        .map(|e| e.tiers["anchor"].source_episode.clone().unwrap())
        .collect();
    assert_eq!(sources, ["E0", "E1"], "kept in message order");
    // Episodes of one request each: the user-turn entries no longer name an episode.
    let out = ok(&env.generate(&mock, &["--max-requests", "1", "--episode", "E0"]));
    assert!(out.contains("(1 episode)"), "{out}");
    assert!(
        out.contains("--max-requests 1 --tiers-dir"),
        "the compare command keeps the segmentation: {out}"
    );
}

#[test]
fn concurrency_bounds_the_requests_in_flight() {
    let env = Env::new();
    let mock = MockServer::start();
    mock.slow(Duration::from_millis(600));
    ok(&env.generate(&mock, &["--concurrency", "1"]));
    assert_eq!(mock.max_in_flight(), 1);
    let mock = MockServer::start();
    mock.slow(Duration::from_millis(600));
    ok(&env.generate(&mock, &["--concurrency", "4", "--refresh"]));
    let n = mock.max_in_flight();
    // Four workers start together; each answer takes 0.6 s.
    assert!((2..=4).contains(&n), "{n} in flight");
}

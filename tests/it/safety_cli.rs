//! The smaller data-safety cases of the CLI, each on input the test makes: a follow timeout
//! that says why it stopped, usage figures and costs too large to add up, a database whose
//! `session` table lost its `title` column, and policy errors that quote at most an excerpt of
//! what they were given.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");
const M1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("TIERSCOPE_CACHE_DIR", dir.join("cache"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null())
        .output()
        .expect("run tierscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_tiny_follow_timeout_writes_the_frames_then_says_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("m1.json");
    std::fs::copy(M1, &export).unwrap();
    let out = run(
        dir.path(),
        &[
            "replay",
            "--policy",
            "full",
            "--follow",
            "--format",
            "jsonl",
            "--follow-timeout",
            "0.01",
            export.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    // Every request's frame, then the summary: the clock starts after the first frames.
    assert_eq!(lines.len(), 25, "{stdout}");
    assert!(lines[24].starts_with("{\"summary\""), "{}", lines[24]);
    assert!(
        stderr.contains("following stopped: no change for 0.01s (--follow-timeout)"),
        "{stderr}"
    );
}

#[test]
fn a_follow_timeout_with_nothing_loadable_is_an_error_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("broken.json");
    std::fs::write(&export, "{").unwrap();
    let out = run(
        dir.path(),
        &[
            "replay",
            "--policy",
            "full",
            "--follow",
            "--format",
            "jsonl",
            "--follow-timeout",
            "0.2",
            export.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("nothing loaded: ")
            && stderr.contains("gave up after --follow-timeout 0.2s without a change"),
        "{stderr}"
    );
}

/// M1 with every assistant message and step recording `cost` (and `tokens.input`/`output` set
/// to u64::MAX).
fn m1_with_absurd_usage(dir: &Path) -> std::path::PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(M1).unwrap()).unwrap();
    let mut steps = 0;
    for m in v["messages"].as_array_mut().unwrap() {
        if m["info"]["role"] == "assistant" {
            m["info"]["cost"] = serde_json::json!(1.7e308);
            m["info"]["tokens"]["input"] = serde_json::json!(u64::MAX);
            m["info"]["tokens"]["output"] = serde_json::json!(u64::MAX);
        }
        for p in m["parts"].as_array_mut().unwrap() {
            if p["type"] == "step-finish" {
                p["cost"] = serde_json::json!(1.7e308);
                p["tokens"]["input"] = serde_json::json!(u64::MAX);
                p["tokens"]["output"] = serde_json::json!(u64::MAX);
                steps += 1;
            }
        }
    }
    assert!(steps > 1, "the fixture needs several steps to overflow");
    let path = dir.join("absurd.json");
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

#[test]
fn costs_that_overflow_are_said_not_printed_as_inf_or_a_silent_null() {
    let dir = tempfile::tempdir().unwrap();
    let export = m1_with_absurd_usage(dir.path());
    let p = export.to_str().unwrap();
    let want =
        "the recorded costs do not add up to a finite amount (a message records an absurd cost)";

    let out = run(dir.path(), &["inspect", p]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let usage = stdout.lines().find(|l| l.starts_with("usage")).unwrap();
    assert!(usage.contains(&format!("cost: {want}")), "{usage}");
    assert!(!usage.contains("inf") && !usage.contains("-1"), "{usage}");
    // Token counts this large are read as the nearest count and reported, not wrapped.
    assert!(stdout.contains("bad_token_count"), "{stdout}");

    let out = run(dir.path(), &["inspect", "--json", p]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["usage"]["cost"].is_null(), "{}", v["usage"]);
    assert_eq!(v["usage"]["cost_error"], want);
    assert!(v["usage"]["input"].as_u64().is_some(), "{}", v["usage"]);

    for (json, shown) in [(false, "overflow"), (true, "null")] {
        let mut args = vec!["sessions", p];
        if json {
            args.push("--json");
        }
        let out = run(dir.path(), &args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{stderr}");
        assert!(!stdout.contains("inf"), "{stdout}");
        assert!(
            stderr.contains(&format!("{want} (cost shown as {shown})")),
            "{stderr}"
        );
    }
}

#[test]
fn a_renamed_title_column_is_a_diagnostic_not_silently_empty_titles() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    // A copy, with the WAL that holds part of its rows; the sample itself is never opened.
    for suffix in ["", "-wal"] {
        std::fs::copy(
            format!(
                "{}/sample-traces/opencode.db{suffix}",
                env!("CARGO_MANIFEST_DIR")
            ),
            dir.path().join(format!("opencode.db{suffix}")),
        )
        .unwrap();
    }
    let p = db.to_str().unwrap();
    let want = "table session has no column title";
    // The sessions are there, with their titles, before the rename (caches elsewhere).
    let other = tempfile::tempdir().unwrap();
    let before = run(other.path(), &["inspect", "--json", p]);
    let v: serde_json::Value = serde_json::from_slice(&before.stdout).unwrap();
    assert_ne!(v["session"]["title"], "", "{}", v["session"]);
    assert!(!v["diagnostics"].to_string().contains(want));
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("ALTER TABLE session RENAME COLUMN title TO headline;")
            .unwrap();
    }

    let out = run(dir.path(), &["sessions", p]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("missing_field") && stderr.contains(want),
        "{stderr}"
    );
    assert!(
        stderr.contains("every session's title is empty"),
        "{stderr}"
    );

    let out = run(dir.path(), &["inspect", "--json", p]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session"]["title"], "", "{}", v["session"]);
    let diags = v["diagnostics"].to_string();
    assert!(diags.contains(want), "{diags}");
}

#[test]
fn policy_errors_quote_an_excerpt_not_the_megabyte_they_were_given() {
    let dir = tempfile::tempdir().unwrap();
    let mb = "x".repeat(1 << 20);
    let files = [
        // A megabyte-long name, with a terminal escape, on a policy with an unknown knob.
        format!("kind = \"full\"\nname = \"\\u001b]0;pwned\\u0007{mb}\"\n[knobs]\nnope = 1\n"),
        // A megabyte-long unknown kind.
        format!("kind = \"{mb}\"\nrespect_floors = true\n"),
        // A megabyte-long line that is not TOML: the parser quotes the line.
        format!("kind = {mb}\n"),
        // A megabyte-long knob value.
        format!("kind = \"full\"\n[knobs]\nttl_s = \"{mb}\"\n"),
    ];
    let mut cases: Vec<Vec<String>> = Vec::new();
    for (i, body) in files.iter().enumerate() {
        let p = dir.path().join(format!("p{i}.toml"));
        std::fs::write(&p, body).unwrap();
        cases.push(vec!["--policy".into(), p.to_string_lossy().into_owned()]);
    }
    // On the command line (an argument is at most 128 KiB there).
    let long = "y".repeat(100_000);
    cases.push(vec!["--policy".into(), long.clone()]);
    cases.push(vec![
        "--policy".into(),
        "full".into(),
        "--set".into(),
        format!("ttl_s={long}"),
    ]);
    cases.push(vec![
        "--policy".into(),
        "full".into(),
        "--set".into(),
        format!("{long}=1"),
    ]);
    cases.push(vec![
        "--policy".into(),
        "full".into(),
        "--set".into(),
        long.clone(),
    ]);
    for args in &cases {
        let mut all = vec!["replay", M1];
        all.extend(args.iter().map(String::as_str));
        let out = run(dir.path(), &all);
        let stderr = text(&out.stderr);
        let what = args.join(" ").chars().take(60).collect::<String>();
        assert!(!out.status.success(), "{what}");
        assert!(
            stderr.len() < 3_000,
            "{what}: {} bytes of error:\n{}",
            stderr.len(),
            stderr.chars().take(500).collect::<String>()
        );
        assert!(stderr.contains('…'), "{what}: not cut:\n{stderr}");
        assert!(
            !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
            "{what}: {stderr}"
        );
    }
}

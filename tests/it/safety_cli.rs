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

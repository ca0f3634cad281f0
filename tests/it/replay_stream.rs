//! `replay --format json|jsonl` write frames as the pass produces them: what they write reads as
//! the replay held in memory (the document `{trace, policy, frames, summary}`; the frames then
//! `{summary}`), also for policies whose `policy` part is known only after their pass, and a
//! reader that goes away stops the replay quietly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use tierscope_engine::session::{self, LoadOptions};
use tierscope_engine::{policy, replay};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");
const M1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");

fn cli(cache: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("TIERSCOPE_CACHE_DIR", cache)
        .output()
        .expect("run tierscope");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn streamed_outputs_read_as_the_replay_in_memory() {
    let cache = tempfile::tempdir().expect("tempdir");
    let s = session::load(&LoadOptions {
        path: Some(M1.into()),
        token_cache_dir: Some(cache.path().to_owned()),
        ..LoadOptions::default()
    })
    .expect("load M1");
    assert!(!s.probes.is_empty(), "M1 has a probes sidecar");
    // retention reports nothing after its pass; decay and opencode do (folds, compactions).
    for (name, budget) in [
        ("retention", "9000"),
        ("decay", "9000"),
        ("opencode", "9000"),
    ] {
        let p = policy::load(name, &[]).expect("built-in");
        let r = replay::replay_session(&s, &p, Some(9000));
        // Both sides through text: the document byte for byte as serde_json writes it (the
        // recording has no character the CLI's formatter escapes beyond JSON's own).
        let want = serde_json::to_string_pretty(&r).expect("to json") + "\n";
        let args = ["replay", M1, "--policy", name, "--budget", budget];
        let doc = cli(cache.path(), &[&args[..], &["--format", "json"]].concat());
        serde_json::from_str::<Value>(&doc).expect("a valid JSON document");
        assert!(
            doc == want,
            "{name}: json differs from the document in memory"
        );
        let lines = cli(cache.path(), &[&args[..], &["--format", "jsonl"]].concat());
        for l in lines.lines() {
            serde_json::from_str::<Value>(l).expect("one object per line");
        }
        let mut want: Vec<String> = r
            .frames
            .iter()
            .map(|f| serde_json::to_string(f).expect("frame"))
            .collect();
        want.push(json!({ "summary": r.summary }).to_string());
        assert!(
            lines.lines().eq(want.iter().map(String::as_str)),
            "{name}: jsonl differs from the frames in memory"
        );
    }
}

#[test]
fn a_reader_that_goes_away_stops_the_replay_quietly() {
    let cache = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(BIN)
        .args(["replay", M1, "--format", "jsonl"])
        .env("TIERSCOPE_CACHE_DIR", cache.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("one line");
    let out = child.wait_with_output().expect("wait");
    assert!(first.starts_with("{\"request\":0,"), "{first}");
    assert!(out.status.success(), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panic"),
        "{out:?}"
    );
}

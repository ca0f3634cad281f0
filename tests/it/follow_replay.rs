//! `tierscope replay --follow --format jsonl` on a copy of a real recording that grows while it
//! is followed ends in the same frames as `replay --format json` on the finished database.

use crate::follow_common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use follow_common::*;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");

fn replay_json(db: &str, session: &str) -> Value {
    let out = Command::new(BIN)
        .args(["replay", "--format", "json", "--session", session, db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn following_ends_in_the_frames_of_a_plain_replay() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let keep = 8;
    let rest = truncate(&w, E2, keep);
    let early_requests = fresh_load(&db, E2).requests.len();

    let mut child = Command::new(BIN)
        .args([
            "replay",
            "--follow",
            "--format",
            "jsonl",
            "--follow-timeout",
            "4",
        ])
        .args(["--session", E2])
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    // The frames of the requests already there come first, in order, before anything is added.
    let mut seen: Vec<Value> = Vec::new();
    for i in 0..early_requests {
        let line = lines.next().expect("an early frame").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["request"], i, "{line}");
        seen.push(v);
    }
    let writer_thread = std::thread::spawn(move || {
        append_like_opencode(&w, &rest, Duration::from_millis(15));
        w
    });
    for line in lines {
        seen.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    let _w = writer_thread.join().unwrap();
    // Only partial-write retries may be said on the way, and why following stopped.
    for l in stderr.lines() {
        assert!(
            l.starts_with("tierscope: partial_write")
                || l.starts_with("tierscope: following stopped: no change for 4s"),
            "stderr: {l}"
        );
    }

    // The run ends with the summary line; before it, the last line for each request wins.
    let summary = seen.pop().expect("a summary line");
    let mut last: BTreeMap<u64, Value> = BTreeMap::new();
    for v in &seen {
        last.insert(v["request"].as_u64().unwrap(), v.clone());
    }
    let plain = replay_json(RECORDING, E2);
    let frames = plain["frames"].as_array().unwrap();
    assert_eq!(last.len(), frames.len());
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(&last[&(i as u64)], f, "frame {i} differs");
    }
    assert_eq!(summary["summary"], plain["summary"]);
    // A request that was still streaming when first written was written again.
    assert!(seen.len() > frames.len(), "no frame was re-emitted");
}

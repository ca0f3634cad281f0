//! The research commands as a user runs them: `--format jsonl` is one JSON object per line, and a
//! closed pipe (`tierscope survey | head -1`) ends the output quietly, never with a panic.

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

fn cache() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn jsonl_is_one_object_per_line() {
    let c = cache();
    let c1 = format!("{SAMPLES}/C1.json");
    let b1 = format!("{SAMPLES}/B1.json");
    let cases: [(&[&str], usize); 5] = [
        // Two policies on each of the three generated tier strategies.
        (&["experiment", &c1, "-p", "full", "-p", "retention"], 6),
        (
            &["experiment", &c1, "-p", "full", "--strategy", "record"],
            1,
        ),
        (&["sweep", &c1, "--vary", "demote_at=0.8:0.9:0.05"], 3),
        (&["audit", &b1, "--strategy", "source"], 3),
        (&["survey", SAMPLES, "-p", "full"], 3),
    ];
    for (args, lines) in cases {
        let out = Command::new(BIN)
            .args(args)
            .args(["--format", "jsonl"])
            .env("TIERSCOPE_CACHE_DIR", c.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(stdout.lines().count(), lines, "{args:?}: {stdout}");
        for l in stdout.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v.is_object(), "{args:?}: {l}");
        }
    }
}

#[test]
fn a_closed_pipe_is_not_a_panic() {
    let c = cache();
    let mut child = Command::new(BIN)
        .args(["survey", SAMPLES])
        .env("TIERSCOPE_CACHE_DIR", c.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before anything is written: every write meets a closed pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{stderr}");
}

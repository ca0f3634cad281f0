//! `tierscope diff` as a user runs it, on the migration recording: the JSON keys the issue names,
//! the table's per-request rows and summary, `--context --at N` printing the unified diff of the
//! rendered contexts, and the errors for bad arguments.

use std::process::Command;

const M1: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/M1.json");

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tierscope"))
        .arg("diff")
        .arg(M1)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running tierscope: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn json_has_the_summary_and_frame_keys() {
    let (ok, out, err) = run(&[
        "-p",
        "retention",
        "-p",
        "age",
        "--budget",
        "9000",
        "--format",
        "json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    for k in ["a", "b", "delta"] {
        assert!(v["summary"][k].is_object(), "summary.{k}");
    }
    assert_eq!(v["summary"]["a"]["floor_violations"], 0);
    assert!(v["summary"]["delta"]["floor_violations"]
        .as_i64()
        .is_some_and(|n| n > 0));
    let frames = v["frames"].as_array().unwrap_or_else(|| panic!("frames"));
    assert_eq!(frames.len(), 24);
    for f in frames {
        assert!(f["request"].is_u64());
        assert!(f["tier_diffs"].is_array());
        for k in ["tokens", "divergence", "cost", "thrash"] {
            assert!(f["delta"][k].is_number(), "delta.{k} in {f}");
        }
    }
    let f18 = &frames[18];
    let e0 = f18["tier_diffs"]
        .as_array()
        .and_then(|d| d.iter().find(|x| x["episode"] == "E0"))
        .unwrap_or_else(|| panic!("E0 differs at 18: {f18}"));
    assert_eq!(e0["a"], "compact");
    assert_eq!(e0["b"], "anchor");
    assert_eq!(e0["b_below_floor"], true);
}

#[test]
fn table_and_context_diff_read_as_a_user_needs() {
    let (ok, out, err) = run(&["-p", "retention", "-p", "age", "--budget", "9000"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("A: retention (progressive, respects floors)"),
        "{out}"
    );
    assert!(
        out.contains("B: age (progressive, may go below floors)"),
        "{out}"
    );
    assert!(out.contains("requests differing: 13 of 24"), "{out}");
    let row18 = out
        .lines()
        .find(|l| l.starts_with("  18 "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row18.contains("E0 compact|anchor!"), "{row18}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("floor violations") && l.trim_end().ends_with("+6")),
        "{out}"
    );

    let (ok, out, err) = run(&[
        "-p",
        "retention",
        "-p",
        "age",
        "--budget",
        "9000",
        "--context",
        "--at",
        "18",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("--- A: retention"), "{out}");
    assert!(out.contains("+++ B: age"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("-── E0 compact")),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("+── E0 anchor")), "{out}");
    // The rejected approach's error survives in A's compact tier, not in B's anchor line.
    assert!(
        out.lines()
            .any(|l| l.starts_with('-') && l.contains("bash exit 101")),
        "{out}"
    );

    let (ok, out, err) = run(&[
        "-p",
        "retention",
        "--budget",
        "9000",
        "--context",
        "--at",
        "18",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("the rendered contexts at request 18 are identical"),
        "{out}"
    );
}

#[test]
fn bad_arguments_are_explained() {
    let (ok, _, err) = run(&["-p", "retention", "-p", "age", "-p", "full"]);
    assert!(!ok);
    assert!(
        err.contains("give --policy once") && err.contains("not 3 times"),
        "{err}"
    );
    let (ok, _, err) = run(&["-p", "retention", "-p", "age", "--at", "99"]);
    assert!(!ok);
    assert!(
        err.contains("request 99 is out of range") && err.contains("24 requests"),
        "{err}"
    );
    let (ok, _, err) = run(&["-p", "retention", "-p", "age", "--context"]);
    assert!(!ok);
    assert!(err.contains("--at"), "{err}");
    let (ok, _, err) = run(&["-p", "retention", "--set-b", "target=0.5"]);
    assert!(!ok);
    assert!(
        err.contains("policy B") && err.contains("promote_at < target < demote_at"),
        "{err}"
    );
}

#[test]
fn the_context_diff_never_prints_a_raw_escape() {
    // B1's first tool output ends with a raw ESC ]0;owned BEL ESC [2J (a scanner's user agent).
    let b1 = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/B1.json");
    let out = Command::new(env!("CARGO_BIN_EXE_tierscope"))
        .args([
            "diff",
            b1,
            "-p",
            "full",
            "-p",
            "age",
            "--budget",
            "9000",
            "--context",
            "--at",
            "22",
        ])
        .output()
        .unwrap_or_else(|e| panic!("running tierscope: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "raw control bytes in:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with('-') && l.contains("\\x1b]0;owned\\x07\\x1b[2J")),
        "the escaped output should be on A's side of the diff:\n{text}"
    );
}

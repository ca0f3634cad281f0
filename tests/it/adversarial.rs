//! Text from a trace is untrusted. A crafted export puts terminal control sequences (ESC, BEL,
//! CSI, OSC), C1 controls (U+0080–U+009F), bidi embeddings, overrides and isolates
//! (U+202A–U+202E, U+2066–U+2069), marks, separators and NUL into every field that reaches an
//! output: session, message and part ids, title, directory, model, provider and agent ids, tool
//! names, tool titles and outputs, user text (episode titles and pins), the pricing note, and
//! the error texts serde and TOML echo from a damaged sidecar or policy file. Every command, in
//! every format it has, must keep all of them off the terminal: text output shows them as
//! visible escapes, JSON output escapes them as `\uXXXX` (and still decodes to the original),
//! stderr likewise.

use crate::loader_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use loader_support::*;
use serde_json::{json, Value};
use tierscope_engine::text::is_unsafe_char;

/// Every kind of character the sanitizer must stop, in one string.
const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{1b}[31m\u{9b}1;1H\u{90}x\u{9d}\u{85}\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\u{200f}\u{2028}\u{0}\u{8}\r\u{7f}";

fn evil(what: &str) -> String {
    format!("{what}{EVIL}")
}

/// A session whose every text field carries [`EVIL`]; its sub-agent too.
fn crafted_export(dir: &Path) -> PathBuf {
    let sid = evil("ses_");
    let msg = |i: usize| evil(&format!("msg_{i:02}_"));
    let prt = |i: usize, k: usize| evil(&format!("prt_{i:02}_{k}_"));
    let mut messages = Vec::new();
    for turn in 0..4 {
        let (u, a) = (2 * turn, 2 * turn + 1);
        let t = 1_000 + turn as i64 * 100;
        messages.push(json!({
            "info": {"id": msg(u), "sessionID": sid, "role": "user", "time": {"created": t},
                     "agent": evil("agent"), "model": {"providerID": evil("prov"), "modelID": evil("model")}},
            "parts": [{"id": prt(u, 0), "type": "text",
                       "text": format!("{} always keep {}\nfix the bug", evil("Title"), evil("pin"))}]
        }));
        messages.push(json!({
            "info": {"id": msg(a), "sessionID": sid, "role": "assistant", "parentID": msg(u),
                     "time": {"created": t + 1, "completed": t + 50}, "finish": "stop",
                     "agent": evil("agent"), "mode": evil("mode"),
                     "providerID": evil("prov"), "modelID": evil("model"), "cost": 0.01,
                     "tokens": {"input": 2000 + turn * 500, "output": 40, "reasoning": 0, "cache": {"read": 100, "write": 10}}},
            "parts": [
                {"id": prt(a, 0), "type": "step-start"},
                {"id": prt(a, 1), "type": "reasoning", "text": evil("thinking")},
                {"id": prt(a, 2), "type": "tool", "callID": evil("call"), "tool": evil("bash"),
                 "state": {"status": "completed", "input": {"command": evil("ls")},
                           "output": format!("{}\n{}", evil("out"), "line ".repeat(200)),
                           "title": evil("tooltitle"), "time": {"start": t + 2, "end": t + 3}}},
                {"id": prt(a, 3), "type": "tool", "callID": evil("call2"), "tool": evil("edit"),
                 "state": {"status": "error", "input": {"filePath": evil("/path")},
                           "error": evil("error"), "time": {"start": t + 4, "end": t + 5}}},
                {"id": prt(a, 4), "type": "text", "text": evil("answer")},
                {"id": prt(a, 5), "type": evil("futurepart"), "x": 1},
                {"id": prt(a, 6), "type": "step-finish", "reason": "stop", "cost": 0.01,
                 "tokens": {"input": 2000 + turn * 500, "output": 40, "reasoning": 0, "cache": {"read": 100, "write": 10}}}
            ]
        }));
    }
    let export = json!({
        "info": {"id": sid, "title": evil("title"), "directory": evil("/home/dir"),
                 "version": evil("1.0"), "slug": evil("slug"), "projectID": evil("prj"),
                 "time": {"created": 1, "updated": 2}},
        "messages": messages
    });
    let p = dir.join("evil.json");
    std::fs::write(&p, serde_json::to_vec_pretty(&export).expect("json")).expect("write");
    p
}

/// Fails with the offending character and its context when `s` holds one raw.
fn assert_inert(what: &str, s: &str) {
    if let Some((i, c)) = s.char_indices().find(|(_, c)| is_unsafe_char(*c)) {
        let from = s[..i].char_indices().rev().nth(40).map_or(0, |(j, _)| j);
        panic!(
            "{what}: raw U+{:04X} reached the output near {:?}",
            c as u32,
            &s[from..(i + 8).min(s.len())]
        );
    }
}

struct Run {
    code: Option<i32>,
    out: String,
    err: String,
}

fn run(dir: &Path, args: &[&str]) -> Run {
    let o = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("TIERSCOPE_CACHE_DIR", dir.join("cache"))
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    let r = Run {
        code: o.status.code(),
        out: String::from_utf8(o.stdout).expect("stdout is UTF-8"),
        err: String::from_utf8(o.stderr).expect("stderr is UTF-8"),
    };
    let what = args.join(" ");
    assert_inert(&format!("{what} (stdout)"), &r.out);
    assert_inert(&format!("{what} (stderr)"), &r.err);
    r
}

/// Runs `args` and checks it succeeded; JSON forms must decode, and hold `EVIL` intact.
fn ok(dir: &Path, args: &[&str]) -> Run {
    let r = run(dir, args);
    assert_eq!(r.code, Some(0), "{args:?}: {}", r.err);
    let json = args.contains(&"--json") || args.windows(2).any(|w| w == ["--format", "json"]);
    let jsonl = args.windows(2).any(|w| w == ["--format", "jsonl"]);
    if json {
        let v: Value = serde_json::from_str(&r.out).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        // A sweep's document is knobs and metrics only.
        assert!(
            args[0] == "sweep"
                || v.to_string()
                    .contains(&serde_json::to_string(EVIL).expect("json")[1..20]),
            "{args:?}: the crafted text is not in the document"
        );
    }
    if jsonl {
        for l in r.out.lines() {
            serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{args:?}: {e}: {l}"));
        }
    }
    r
}

#[test]
fn no_control_or_bidi_character_reaches_the_terminal_from_any_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let export = crafted_export(d);
    let p = export.to_str().expect("utf-8");
    for json_flag in [false, true] {
        let j = |mut v: Vec<&'static str>| {
            if json_flag {
                v.push("--json");
            }
            v
        };
        for args in [
            j(vec!["sessions"]),
            j(vec!["inspect"]),
            j(vec!["episodes"]),
            j(vec!["render", "--at", "2", "--budget", "3000"]),
            j(vec![
                "render",
                "--at",
                "3",
                "--diff-prev",
                "--budget",
                "3000",
            ]),
        ] {
            let mut a = vec![args[0], p];
            a.extend(&args[1..]);
            ok(d, &a);
        }
    }
    let text = ok(d, &["inspect", p]).out;
    assert!(text.contains("\\x1b]0;pwned\\x07"), "{text}");
    assert!(text.contains("<U+202E>"), "{text}");
    ok(d, &["episodes", p, "--explain", "E1"]);
    ok(d, &["episodes", p, "--show", "E1"]);
    run(d, &["episodes", p, "--show", "E1", "--tier", "compact"]);
    let records = d.join("records.jsonl");
    ok(
        d,
        &["episodes", p, "--records", records.to_str().expect("utf-8")],
    );
    assert_inert(
        "episodes --records",
        &std::fs::read_to_string(&records).expect("records"),
    );
    for format in ["table", "json", "csv", "jsonl"] {
        let r = ok(d, &["replay", p, "--format", format, "--budget", "3000"]);
        if format == "table" {
            // The pricing note names the crafted model.
            assert!(r.out.contains("pricing: model "), "{}", r.out);
        }
        ok(
            d,
            &["experiment", p, "--format", format, "--budget", "3000"],
        );
        ok(d, &["audit", p, "--format", format]);
        ok(d, &["audit", p, "--format", format, "--details"]);
        ok(
            d,
            &[
                "sweep",
                p,
                "--format",
                format,
                "--budget",
                "3000",
                "--vary",
                "demote_at=0.8:0.9:0.1",
            ],
        );
        ok(d, &["survey", p, "--format", format]);
    }
    let replay_records = d.join("replay-records.jsonl");
    ok(
        d,
        &[
            "replay",
            p,
            "--records",
            replay_records.to_str().expect("utf-8"),
        ],
    );
    assert_inert(
        "replay --records",
        &std::fs::read_to_string(&replay_records).expect("records"),
    );
    for format in ["table", "json"] {
        ok(
            d,
            &[
                "diff",
                p,
                "-p",
                "retention",
                "-p",
                "age",
                "--budget",
                "3000",
                "--format",
                format,
            ],
        );
        ok(
            d,
            &[
                "diff",
                p,
                "-p",
                "retention",
                "-p",
                "full",
                "--budget",
                "3000",
                "--at",
                "2",
                "--format",
                format,
            ],
        );
        ok(
            d,
            &[
                "diff",
                p,
                "-p",
                "retention",
                "-p",
                "full",
                "--budget",
                "3000",
                "--at",
                "3",
                "--context",
                "--format",
                format,
            ],
        );
    }
    let svg = d.join("plot.svg");
    ok(
        d,
        &[
            "plot",
            p,
            "--out",
            svg.to_str().expect("utf-8"),
            "--budget",
            "3000",
        ],
    );
}

#[test]
fn error_texts_that_quote_a_damaged_file_are_escaped_on_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let export = crafted_export(d);
    let p = export.to_str().expect("utf-8");
    // A probes sidecar whose type error quotes the value (serde: `invalid type: string "…"`).
    let probes = d.join("evil.probes.json");
    std::fs::write(&probes, json!({"probes": evil("not a list")}).to_string()).expect("write");
    for args in [
        vec!["replay", p],
        vec!["experiment", p],
        vec!["episodes", p],
    ] {
        let r = run(d, &args);
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.err);
        // The value is quoted (shown, inert), not dropped.
        assert!(
            r.err.contains("not a list") && r.err.contains("pwned"),
            "{args:?}: {}",
            r.err
        );
    }
    std::fs::remove_file(&probes).expect("rm");
    // A policy file whose TOML error shows the offending line, raw bytes and all.
    let policy = d.join("evil.toml");
    std::fs::write(
        &policy,
        format!("name = \"x\"\nkind = \"retention\"\n{EVIL} = 1\n"),
    )
    .expect("write");
    let pol = policy.to_str().expect("utf-8");
    for args in [
        vec!["replay", p, "--policy", pol],
        vec!["policies", "--file", pol],
    ] {
        let r = run(d, &args);
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.err);
        assert!(r.err.contains("evil.toml"), "{}", r.err);
    }
    // A policy value that is echoed in a knob error.
    std::fs::write(
        &policy,
        format!("name = \"{}\"\nkind = \"{}\"\n", evil("n"), evil("k")),
    )
    .expect("write");
    let r = run(d, &["policies", "--file", pol]);
    assert_eq!(r.code, Some(1), "{}", r.err);
    // A session id asked for and not found is echoed too (an argument cannot hold a NUL).
    let r = run(
        d,
        &[
            "inspect",
            p,
            "--session",
            &evil("ses_nope").replace('\0', ""),
        ],
    );
    assert_eq!(r.code, Some(1), "{}", r.err);
    assert!(r.err.contains("\\x1b]0;pwned"), "{}", r.err);
}

#[test]
fn a_crafted_database_is_as_inert_as_a_crafted_export() {
    let db = TestDb::new();
    db.session(&evil("ses_db"), None, &evil("db title"), 1, 2);
    db.user(&evil("msg_u"), &evil("ses_db"), 10, &evil("hello"));
    db.assistant(
        &evil("msg_a"),
        &evil("ses_db"),
        &evil("msg_u"),
        11,
        &evil("world"),
        500,
    );
    db.conn
        .execute("UPDATE session SET directory = ?1", [evil("/dir")])
        .expect("update");
    let d = db.dir.path().to_owned();
    let p = db.path.to_str().expect("utf-8").to_owned();
    for args in [
        vec!["sessions", &p],
        vec!["sessions", &p, "--json"],
        vec!["inspect", &p],
        vec!["inspect", &p, "--json"],
        vec!["episodes", &p],
        vec!["replay", &p],
        vec!["replay", &p, "--format", "csv"],
        vec!["survey", &p],
    ] {
        ok(&d, &args);
    }
}

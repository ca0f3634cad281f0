//! Issue 14, as an attacker and as an unlucky user would try it: crafted exports and databases,
//! damaged files, odd inputs and pipes. Each case is run where it matters through the real
//! binary: the damaged spot is reported with its reason, everything else loads, no panic, no
//! write next to the user's data.

use crate::loader_support;

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loader_support::*;
use serde_json::{json, Value};
use tierscope_engine::formats::opencode::export::parse_export;
use tierscope_engine::trace::{DiagnosticKind, Trace};

/// An export of `n` turns (user, then an assistant with a tool call and a text); `damage(i)`
/// returns raw JSON text to splice in place of turn `i`'s tool output string, if any.
fn export_text(n: usize, damage: impl Fn(usize) -> Option<String>) -> String {
    let mut msgs = Vec::new();
    for i in 0..n {
        let t = 1_000 + i as i64 * 10;
        msgs.push(
            json!({"info": {"id": format!("msg_u{i:02}"), "role": "user", "time": {"created": t}},
                   "parts": [{"id": format!("prt_u{i:02}"), "type": "text", "text": format!("turn {i}")}]})
            .to_string(),
        );
        let tool_output = damage(i).unwrap_or_else(|| json!(format!("output {i}")).to_string());
        msgs.push(format!(
            r#"{{"info": {{"id": "msg_a{i:02}", "role": "assistant", "parentID": "msg_u{i:02}", "time": {{"created": {t1}, "completed": {t2}}}, "finish": "stop", "modelID": "m", "providerID": "p", "tokens": {{"input": 100, "output": 5, "reasoning": 0, "cache": {{"read": 0, "write": 0}}}}}},
  "parts": [{{"id": "prt_a{i:02}_0", "type": "step-start"}},
            {{"id": "prt_a{i:02}_1", "type": "tool", "callID": "c{i}", "tool": "bash", "state": {{"status": "completed", "input": {{"command": "ls"}}, "output": {tool_output}, "title": "ls", "time": {{"start": {t1}, "end": {t1}}}}}}},
            {{"id": "prt_a{i:02}_2", "type": "text", "text": "done {i}"}},
            {{"id": "prt_a{i:02}_3", "type": "step-finish", "reason": "stop", "cost": 0, "tokens": {{"input": 100, "output": 5, "reasoning": 0, "cache": {{"read": 0, "write": 0}}}}}}]}}"#,
            t1 = t + 1,
            t2 = t + 2
        ));
    }
    format!(
        "{{\"info\": {{\"id\": \"ses_h\", \"title\": \"hardening\", \"directory\": \"/w\", \"time\": {{\"created\": 1, \"updated\": 2}}}},\n \"messages\": [\n{}\n]}}\n",
        msgs.join(",\n")
    )
}

fn parse(text: &str) -> Trace {
    parse_export(text.as_bytes(), Path::new("crafted.json")).unwrap_or_else(|e| panic!("{e}"))
}

fn example(t: &Trace, kind: DiagnosticKind) -> String {
    t.diagnostics
        .items()
        .iter()
        .find(|d| d.kind == kind)
        .map(|d| d.example.clone())
        .unwrap_or_else(|| panic!("no {kind:?} diagnostic: {:?}", t.diagnostics))
}

/// 13 turns = 26 messages, as in the issue.
const TURNS: usize = 13;

#[test]
fn a_raw_nul_in_one_string_costs_nothing_else() {
    let text = export_text(TURNS, |i| {
        (i == 4).then(|| "\"before\u{0}after\"".to_owned())
    });
    let t = parse(&text);
    assert_eq!(t.messages.len(), 2 * TURNS, "{:?}", t.diagnostics);
    assert_eq!(t.requests.len(), TURNS);
    let why = example(&t, DiagnosticKind::RepairedJson);
    assert!(why.contains("msg_u04") || why.contains("msg_a04"), "{why}");
    assert!(why.contains("U+0000"), "{why}");
    let out = t.messages[9].tool_parts().next().expect("tool").1;
    assert_eq!(out.output.as_deref(), Some("before\u{0}after"));
}

#[test]
fn a_lone_surrogate_escape_costs_nothing_else() {
    let text = export_text(TURNS, |i| {
        (i == 7).then(|| r#""bad \ud800 here""#.to_owned())
    });
    let t = parse(&text);
    assert_eq!(t.messages.len(), 2 * TURNS, "{:?}", t.diagnostics);
    assert!(example(&t, DiagnosticKind::RepairedJson).contains("surrogate"));
    let out = t.messages[15].tool_parts().next().expect("tool").1;
    assert_eq!(out.output.as_deref(), Some("bad \u{fffd} here"));
}

#[test]
fn one_deeply_nested_tool_input_keeps_every_message() {
    let deep = format!("{}\"x\"{}", "[".repeat(20_000), "]".repeat(20_000));
    let text = export_text(TURNS, |_| None).replacen(
        r#""input": {"command": "ls"}, "output": "output 0""#,
        &format!(r#""input": {deep}, "output": "output 0""#),
        1,
    );
    let t = parse(&text);
    assert_eq!(t.messages.len(), 2 * TURNS, "{:?}", t.diagnostics);
    assert!(example(&t, DiagnosticKind::RepairedJson).contains("nested deeper"));
    // The call and its output are kept; only the too-deep input is a placeholder.
    let tool = t.messages[1].tool_parts().next().expect("tool").1;
    assert_eq!(tool.output.as_deref(), Some("output 0"));
}

#[test]
fn nan_or_an_out_of_range_number_in_one_field_does_not_reject_the_file() {
    for bad in ["NaN", "1e999999", "-Infinity"] {
        let text = export_text(TURNS, |_| None)
            .replacen(r#""created": 1,"#, &format!(r#""created": {bad},"#), 1)
            .replacen(r#""cost": 0,"#, &format!(r#""cost": {bad},"#), 1);
        let t = parse(&text);
        assert_eq!(t.session.id, "ses_h", "{bad}");
        assert_eq!(t.messages.len(), 2 * TURNS, "{bad}: {:?}", t.diagnostics);
        assert!(example(&t, DiagnosticKind::RepairedJson).contains("not finite"));
    }
}

#[test]
fn a_part_that_is_not_json_at_all_costs_only_that_part() {
    // Brackets balanced, so the walk finds where the part ends; what is inside is no JSON.
    let text = export_text(TURNS, |i| (i == 2).then(|| r#""x" "y" : 1 2"#.to_owned()));
    let t = parse(&text);
    assert_eq!(t.messages.len(), 2 * TURNS, "{:?}", t.diagnostics);
    assert!(example(&t, DiagnosticKind::CorruptJson).contains("part #1"));
    // Its message keeps its other parts.
    let m = t
        .messages
        .iter()
        .find(|m| m.id == "msg_a02")
        .expect("msg_a02");
    assert_eq!(m.parts.len(), 3);
}

#[test]
fn a_cut_export_still_reports_the_cut_and_keeps_what_is_complete() {
    let text = export_text(TURNS, |_| None);
    let cut = &text[..text.find("msg_a05").expect("msg_a05") + 40];
    let t = parse(cut);
    // u00..u05 and a00..a04 are complete; msg_a05 is cut.
    assert_eq!(t.messages.len(), 11);
    assert!(example(&t, DiagnosticKind::TruncatedExport).contains("11 complete messages"));
}

/// `tierscope ARGS…` → (status code, stdout, stderr), killed after 60 s.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .env(
            "TIERSCOPE_CACHE_DIR",
            std::env::temp_dir().join("tierscope-hardening-cache"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let ereader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tierscope {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code(),
        reader.join().unwrap_or_default(),
        ereader.join().unwrap_or_default(),
    )
}

fn write_export(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("crafted.json");
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn token_counts_that_are_not_counts_are_reported_each_and_sums_saturate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = export_text(4, |_| None)
        // The first request's message tokens and its step-finish tokens (which the request
        // uses) alike.
        .replacen(r#""input": 100,"#, r#""input": "120","#, 2)
        .replacen(r#""output": 5,"#, r#""output": -5,"#, 2)
        .replacen(r#""reasoning": 0,"#, r#""reasoning": null,"#, 2)
        .replacen(r#""read": 0,"#, r#""read": 1e30,"#, 2);
    let p = write_export(dir.path(), &text);
    let (code, out, err) = run(&["inspect", p.to_str().expect("utf-8"), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let bad = v["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| d["kind"] == "bad_token_count")
        .unwrap_or_else(|| panic!("no bad_token_count: {v}"));
    // input "120", output -5, reasoning null, cache read 1e30, each in the message and its step.
    assert_eq!(bad["count"], 8, "{bad}");
    assert!(bad["example"].as_str().expect("text").contains("\"120\""));
    let cache_read = v["usage"]["cache_read"].as_u64().expect("cache_read");
    assert_eq!(
        cache_read,
        tierscope_engine::formats::opencode::parse::MAX_TOKEN_COUNT
    );
    // The string "120" is read as 120, not 0; nothing wrapped.
    assert_eq!(v["usage"]["input"], 120 + 3 * 100);
}

#[test]
fn non_regular_files_are_refused_before_they_are_opened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("session.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success());
    for (path, what) in [
        (fifo.to_str().expect("utf-8"), "FIFO"),
        ("/dev/urandom", "character device"),
    ] {
        for cmd in ["inspect", "sessions", "replay"] {
            let (code, out, err) = run(&[cmd, path]);
            assert_eq!(code, Some(1), "{cmd} {path}: {err}");
            assert!(out.is_empty());
            assert!(
                err.contains(what) && err.contains("not a regular file"),
                "{cmd} {path}: {err}"
            );
        }
    }
}

#[test]
fn a_file_over_the_size_cap_is_refused_with_its_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("huge.json");
    // Sparse: no disk is used, but the size is what a reader would have to swallow.
    std::fs::File::create(&p)
        .and_then(|f| f.set_len(5 << 30))
        .expect("sparse file");
    let (code, _, err) = run(&["inspect", p.to_str().expect("utf-8")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("5.0 GiB") && err.contains("more than the 4.0 GiB"),
        "{err}"
    );
}

#[test]
fn replay_json_into_a_closed_pipe_exits_0_quietly() {
    let m1 = format!("{SAMPLES}/M1.json");
    for format in ["json", "jsonl", "csv", "table"] {
        let mut child = Command::new(BIN)
            .args(["replay", &m1, "--format", format])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut out = child.stdout.take().expect("stdout");
        let mut first = [0u8; 64];
        out.read_exact(&mut first).expect("some output");
        // `| head`: the reader goes away.
        drop(out);
        let done = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&done.stderr);
        assert!(done.status.success(), "{format}: {:?} {err}", done.status);
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "{err}"
        );
    }
}

#[test]
fn replay_budget_0_is_refused_like_every_other_command() {
    let m1 = format!("{SAMPLES}/M1.json");
    for cmd in ["replay", "render", "experiment", "diff", "sweep"] {
        let mut args = vec![cmd, m1.as_str(), "--budget", "0"];
        match cmd {
            "render" => args.extend(["--at", "1"]),
            "diff" => args.extend(["--policy", "age"]),
            "sweep" => args.extend(["--vary", "demote_at=0.8:0.9:0.1"]),
            _ => {}
        }
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(out.is_empty());
        assert!(
            err.contains("a budget must be at least 1 token"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn a_huge_follow_timeout_does_not_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("M1.json");
    std::fs::copy(format!("{SAMPLES}/M1.json"), &p).expect("copy");
    let mut child = Command::new(BIN)
        .args(["replay", p.to_str().expect("utf-8")])
        .args(["--follow", "--format", "jsonl", "--follow-timeout", "1e300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a frame").expect("read");
    assert!(first.starts_with("{\"request\":0"), "{first}");
    // Still following (1e300 s is "no timeout"); removing the source ends it.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().expect("wait").is_none(), "exited early");
    std::fs::remove_file(&p).expect("remove");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let done = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("source gone"), "{err}");
    assert!(
        rest.last().is_some_and(|l| l.starts_with("{\"summary\"")),
        "{rest:?}"
    );
}

/// Apply follow lines: the last frame line per request wins, a retraction removes it.
fn apply(lines: &[String]) -> std::collections::BTreeMap<u64, Value> {
    let mut state = std::collections::BTreeMap::new();
    for l in lines {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        let Some(r) = v["request"].as_u64() else {
            continue;
        };
        if v["retracted"] == true {
            state.remove(&r);
        } else {
            state.insert(r, v);
        }
    }
    state
}

#[test]
fn follow_retracts_requests_deleted_from_the_database_and_ends_at_a_fresh_replay() {
    let db = TestDb::new();
    db.session("ses_f", None, "follow", 1, 2);
    for i in 0..4 {
        let t = 100 + i * 10;
        db.user(&format!("msg_u{i}"), "ses_f", t, &format!("turn {i}"));
        db.assistant(
            &format!("msg_a{i}"),
            "ses_f",
            &format!("msg_u{i}"),
            t + 1,
            "ok",
            1000 + i as u64,
        );
    }
    let path = db.path.to_str().expect("utf-8").to_owned();
    let mut child = Command::new(BIN)
        .args(["replay", &path, "--session", "ses_f"])
        .args(["--follow", "--format", "jsonl", "--follow-timeout", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut lines = Vec::new();
    while apply(&lines).len() < 4 {
        let mut l = String::new();
        assert!(
            reader.read_line(&mut l).expect("read") > 0,
            "ended early: {lines:?}"
        );
        lines.push(l.trim_end().to_owned());
    }
    // The user rewinds: the last two turns are deleted, as OpenCode's revert does.
    for i in [2, 3] {
        for m in [format!("msg_u{i}"), format!("msg_a{i}")] {
            db.conn
                .execute("DELETE FROM part WHERE message_id = ?1", [&m])
                .expect("delete parts");
            db.conn
                .execute("DELETE FROM message WHERE id = ?1", [&m])
                .expect("delete message");
        }
    }
    for l in reader.lines() {
        lines.push(l.expect("read"));
    }
    let done = child.wait_with_output().expect("wait");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let retracted: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("\"retracted\":true"))
        .collect();
    assert_eq!(retracted.len(), 2, "{lines:#?}");
    // The stream's last state is what a fresh replay of the database says now.
    let (code, fresh, err) = run(&["replay", &path, "--session", "ses_f", "--format", "jsonl"]);
    assert_eq!(code, Some(0), "{err}");
    let fresh: Vec<String> = fresh.lines().map(str::to_owned).collect();
    assert_eq!(apply(&lines), apply(&fresh));
    assert_eq!(lines.last(), fresh.last(), "the summary line");
}

#[test]
fn survey_keeps_sessions_whose_parent_is_missing_or_cyclic() {
    let db = TestDb::new();
    for (id, parent) in [
        ("ses_main", None),
        ("ses_orphan", Some("ses_gone")),
        ("ses_a", Some("ses_b")),
        ("ses_b", Some("ses_a")),
        ("ses_child", Some("ses_main")),
    ] {
        db.session(id, parent, id, 1, 2);
        db.user(&format!("{id}_u"), id, 10, "go");
        db.assistant(&format!("{id}_a"), id, &format!("{id}_u"), 11, "ok", 500);
    }
    let path = db.path.to_str().expect("utf-8").to_owned();
    let (code, out, err) = run(&["survey", &path, "--policy", "full", "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let mut ids: Vec<&str> = v["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["session"].as_str().expect("id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["ses_a", "ses_b", "ses_main", "ses_orphan"], "{err}");
    assert!(
        err.contains("ses_orphan: its parent ses_gone is not in the source"),
        "{err}"
    );
    assert!(err.contains("ses_a: its parent chain loops"), "{err}");
}

/// Files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_wal_database_without_its_side_files_is_read_without_creating_any() {
    let db = TestDb::new();
    db.session("ses_w", None, "wal", 1, 2);
    db.user("msg_u", "ses_w", 10, "go");
    db.assistant("msg_a", "ses_w", "msg_u", 11, "ok", 700);
    let TestDb { dir, path, conn } = db;
    // A clean close checkpoints and removes -wal and -shm; the file stays in WAL mode.
    conn.close().expect("close");
    assert_eq!(listing(dir.path()), ["opencode.db"]);
    assert_eq!(bytes(&path)[18..20], [2, 2], "WAL mode");
    let before = bytes(&path);
    let p = path.to_str().expect("utf-8");
    let data_dir = dir.path().to_str().expect("utf-8");
    for args in [
        vec!["sessions", p],
        vec!["inspect", p, "--json"],
        vec!["replay", p, "--format", "json"],
        vec!["sessions", data_dir],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(out.contains("ses_w"), "{args:?}");
        assert_eq!(
            listing(dir.path()),
            ["opencode.db"],
            "{args:?} wrote beside the db"
        );
    }
    assert_eq!(bytes(&path), before);
}

#[test]
fn permission_denied_is_named_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("opencode.db");
    std::fs::copy(format!("{SAMPLES}/opencode.db"), &p).expect("copy");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let path = p.to_str().expect("utf-8");
    // root reads any file: run as nobody where we are root.
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut cmd = if is_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    let Ok(out) = cmd.args(["sessions", path]).output() else {
        eprintln!("setpriv unavailable: skipped");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if is_root && err.contains("setpriv") {
        eprintln!("cannot drop privileges here ({err}): skipped");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(!err.contains("not a SQLite database"), "{err}");
}

/// A database of one session with `n` turns whose part rows are big enough to fill many pages.
fn big_db(n: usize) -> TestDb {
    let db = TestDb::new();
    db.session("ses_big", None, "big", 1, 2);
    for i in 0..n {
        let t = 100 + i as i64 * 10;
        db.user(&format!("msg_u{i:03}"), "ses_big", t, &"x".repeat(3000));
        db.assistant(
            &format!("msg_a{i:03}"),
            "ses_big",
            &format!("msg_u{i:03}"),
            t + 1,
            &"y".repeat(3000),
            1000,
        );
    }
    db
}

#[test]
fn one_corrupt_page_in_part_costs_only_the_parts_on_it() {
    // A garbage page header: not a b-tree page any more.
    let (dir, path) = big_db(40).with_damaged_leaf("part", 10);
    let (code, out, err) = run(&["inspect", path.to_str().expect("utf-8"), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["counts"]["messages"], 80, "every message row still loads");
    let parts = v["counts"]["parts"].as_u64().expect("parts");
    // 40 turns of 1 + 3 parts: only those on the damaged page are lost.
    assert!((150..160).contains(&parts), "most parts load: {parts}");
    let damage = v["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| d["kind"] == "database_damage")
        .unwrap_or_else(|| panic!("no database_damage: {v}"));
    let text = damage["example"].as_str().expect("text");
    assert!(
        text.contains("table part") && text.contains("malformed"),
        "{text}"
    );
    // The listing lists.
    let (code, out, err) = run(&["sessions", path.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ses_big"));
    drop(dir);
}

/// The same with a session large enough that its part rows are parsed on worker threads in
/// several batches (`row_pipeline`): the rows read before the damaged page and those reached
/// again message by message load, and the result does not depend on the scheduling.
#[test]
fn a_corrupt_page_in_a_session_parsed_on_worker_threads_costs_only_its_parts() {
    let db = big_db(400);
    let p = db.path.to_str().expect("utf-8").to_owned();
    let (code, whole, err) = run(&["inspect", &p, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&whole).expect("json");
    assert_eq!(
        v["counts"]["parts"], 1600,
        "undamaged: every part (4.8 MB of rows)"
    );
    let (dir, _) = db.with_damaged_leaf("part", 500);
    let (code, out, err) = run(&["inspect", &p, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        v["counts"]["messages"], 800,
        "every message row still loads"
    );
    let parts = v["counts"]["parts"].as_u64().expect("parts");
    assert!(
        (1590..1600).contains(&parts),
        "only the damaged page's parts are lost: {parts}"
    );
    assert!(out.contains("database_damage"), "the damage is reported");
    for _ in 0..3 {
        let (_, again, _) = run(&["inspect", &p, "--json"]);
        assert_eq!(again, out, "the same load every time");
    }
    drop(dir);
}

#[test]
fn a_dropped_part_table_loads_the_messages_and_says_why_they_are_empty() {
    let db = big_db(3);
    db.conn.execute_batch("DROP TABLE part").expect("drop");
    let p = db.path.to_str().expect("utf-8").to_owned();
    let (code, out, err) = run(&["inspect", &p, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["counts"]["messages"], 6);
    assert_eq!(v["counts"]["requests"], 3);
    let text = v["diagnostics"].to_string();
    assert!(text.contains("has no part table"), "{text}");
    assert!(!text.contains("no assistant message"), "{text}");
}

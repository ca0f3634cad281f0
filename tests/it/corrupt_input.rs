//! Broken input: each case gives a clear diagnostic (or one clear error for a file that cannot be
//! read at all), loads what it can and never panics.

use crate::loader_support;

use std::path::Path;
use std::process::Command;

use loader_support::*;
use serde_json::json;
use tierscope_engine::formats::opencode::export::{load_export, parse_export};
use tierscope_engine::session::EpisodeOptions;
use tierscope_engine::trace::load::open;
use tierscope_engine::trace::{DiagnosticKind, LoadError, ToolStatus, Trace};
use tierscope_engine::{policy, replay, session};

fn e1_export() -> std::path::PathBuf {
    Path::new(RECORDINGS).join("opencode-1.18.33/exports/E1.json")
}

/// Run `tierscope inspect <path> --json`; returns (exit ok, stdout, stderr).
fn inspect(path: &Path) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(["inspect", path.to_str().expect("utf-8"), "--json"])
        .output()
        .expect("run");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn load_one(db: &TestDb) -> Trace {
    let t = open(Some(&db.path))
        .expect("open")
        .load_session(None)
        .expect("load");
    survives_stages(&t);
    t
}

/// What loaded must also get through the later stages: episodes (with tiers and tokens) and a
/// replay under a pressure policy and under the never-forget baseline, one frame per request.
fn survives_stages(t: &Trace) {
    let l = session::from_trace(t.clone(), &EpisodeOptions::default());
    assert_eq!(l.trace.requests.len(), t.requests.len());
    if !t.messages.is_empty() {
        assert!(!l.episodes.is_empty(), "{}: no episodes", t.session.id);
    }
    for name in ["retention", "full"] {
        let p = policy::load(name, &[]).expect("built-in policy");
        let r = replay::replay_session(&l, &p, None);
        assert_eq!(
            r.frames.len(),
            t.requests.len(),
            "{name} on {}",
            t.session.id
        );
        // A small budget forces demotions on whatever did load.
        let r = replay::replay_session(&l, &p, Some(500));
        assert_eq!(
            r.frames.len(),
            t.requests.len(),
            "{name} at 500 on {}",
            t.session.id
        );
    }
}

#[test]
fn a_truncated_database_is_one_clear_error() {
    let src = Path::new(RECORDINGS).join("opencode-1.18.33/data/opencode.db");
    let tmp = tempfile::tempdir().expect("tempdir");
    for (name, len) in [("cut.db", 8192usize), ("tiny.db", 40), ("empty.db", 0)] {
        let p = tmp.path().join(name);
        std::fs::write(&p, &bytes(&src)[..len]).expect("write");
        let err = open(Some(&p)).expect_err("a cut database cannot be opened");
        assert!(matches!(err, LoadError::Database { .. }), "{name}: {err}");
        let (ok, stdout, stderr) = inspect(&p);
        assert!(!ok);
        assert!(stdout.is_empty());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("tierscope: cannot open database"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"));
    }
    // Not a database and not an export.
    let p = tmp.path().join("notes.txt");
    std::fs::write(&p, "just some notes").expect("write");
    let (ok, _, stderr) = inspect(&p);
    assert!(!ok && stderr.lines().count() == 1, "{stderr}");
    let (ok, _, stderr) = inspect(&tmp.path().join("missing.db"));
    assert!(!ok && stderr.lines().count() == 1, "{stderr}");
}

#[test]
fn a_garbage_data_row_is_skipped_and_the_rest_loads() {
    let db = TestDb::new();
    db.session("ses_1", None, "garbage", 1, 2);
    db.user("msg_1", "ses_1", 10, "fine");
    db.message(
        "msg_2",
        "ses_1",
        20,
        "{\"role\":\"assistant\", \"time\": {\"cre",
    );
    db.assistant("msg_3", "ses_1", "msg_1", 30, "also fine", 4);
    db.part("prt_x", "msg_3", "ses_1", "\u{1}\u{2} not json");
    let t = load_one(&db);
    assert_eq!(t.messages.len(), 2);
    assert_eq!(t.requests.len(), 1);
    assert_eq!(t.diagnostics.count(DiagnosticKind::CorruptJson), 2);
    let (ok, stdout, _) = inspect(&db.path);
    assert!(ok);
    assert!(stdout.contains("\"corrupt_json\""));
}

#[test]
fn an_export_cut_in_the_middle_keeps_its_complete_messages() {
    let full = bytes(&e1_export());
    let whole = load_export(&e1_export()).expect("whole");
    let cut = &full[..full.len() / 2];
    let t = parse_export(cut, Path::new("cut.json")).expect("a cut export still loads");
    survives_stages(&t);
    assert!(!t.messages.is_empty());
    assert!(t.messages.len() < whole.messages.len());
    assert_eq!(t.diagnostics.count(DiagnosticKind::TruncatedExport), 1);
    // What loaded is exactly the start of the whole session.
    for (a, b) in t.messages.iter().zip(&whole.messages) {
        assert_eq!(a, b);
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("cut.json");
    std::fs::write(&p, cut).expect("write");
    let (ok, stdout, _) = inspect(&p);
    assert!(ok);
    assert!(stdout.contains("truncated_export"));
}

#[test]
fn a_tool_part_with_neither_output_nor_error() {
    let db = TestDb::new();
    db.session("ses_1", None, "tool", 1, 2);
    db.user("msg_1", "ses_1", 10, "go");
    db.assistant("msg_2", "ses_1", "msg_1", 20, "running", 4);
    for (id, status) in [("prt_t1", "completed"), ("prt_t2", "error")] {
        db.part(
            id,
            "msg_2",
            "ses_1",
            &json!({"type": "tool", "callID": id, "tool": "bash",
                    "state": {"status": status, "input": {"command": "ls"}, "time": {"start": 21, "end": 22}}})
            .to_string(),
        );
    }
    db.part(
        "prt_t3",
        "msg_2",
        "ses_1",
        r#"{"type":"tool","callID":"c3","tool":"bash"}"#,
    );
    let t = load_one(&db);
    let tools: Vec<_> = t.messages[1]
        .tool_parts()
        .map(|(_, tp)| tp.clone())
        .collect();
    assert_eq!(tools.len(), 3);
    assert!(tools
        .iter()
        .all(|tp| tp.output.is_none() && tp.error.is_none()));
    assert_eq!(tools[2].status, ToolStatus::Unknown);
    assert_eq!(t.diagnostics.count(DiagnosticKind::MissingField), 2);
    assert_eq!(t.diagnostics.count(DiagnosticKind::UnknownToolStatus), 1);
}

#[test]
fn a_ten_megabyte_tool_output_loads_whole() {
    let db = TestDb::new();
    db.session("ses_1", None, "big", 1, 2);
    db.user("msg_1", "ses_1", 10, "cat the log");
    db.assistant("msg_2", "ses_1", "msg_1", 20, "reading", 4);
    let big = "line of a big log file\n".repeat(10 * 1024 * 1024 / 23 + 1);
    db.part(
        "prt_big",
        "msg_2",
        "ses_1",
        &json!({"type": "tool", "callID": "c", "tool": "bash", "state": {"status": "completed",
                "input": {"command": "cat big.log"}, "output": big, "title": "cat", "metadata": {"exit": 0},
                "time": {"start": 21, "end": 22}}})
        .to_string(),
    );
    let t = load_one(&db);
    let (_, tp) = t.messages[1].tool_parts().next().expect("tool");
    assert_eq!(tp.output.as_deref().map(str::len), Some(big.len()));
    assert!(big.len() >= 10 * 1024 * 1024);
    assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
}

#[test]
fn non_utf8_bytes_are_replaced_and_reported() {
    // In an export file.
    let mut raw = bytes(&e1_export());
    let at = raw
        .windows(4)
        .position(|w| w == b"snap")
        .expect("a word to break");
    raw[at] = 0xff;
    let t = parse_export(&raw, Path::new("bad.json")).expect("loads");
    survives_stages(&t);
    assert_eq!(t.diagnostics.count(DiagnosticKind::NonUtf8), 1);
    assert!(!t.messages.is_empty());
    // In a database data column (stored as a blob).
    let db = TestDb::new();
    db.session("ses_1", None, "bytes", 1, 2);
    db.user("msg_1", "ses_1", 10, "ok");
    let mut data = br#"{"type":"text","text":"caf"#.to_vec();
    data.extend([0xe9, 0xff]);
    data.extend(br#""}"#);
    db.conn
        .execute(
            "INSERT INTO part VALUES ('prt_2', 'msg_1', 'ses_1', 0, 0, ?1)",
            [rusqlite::types::Value::Blob(data)],
        )
        .expect("insert");
    let t = load_one(&db);
    assert_eq!(t.messages[0].parts.len(), 2);
    assert!(t.messages[0].text().contains("caf\u{fffd}"));
    assert_eq!(t.diagnostics.count(DiagnosticKind::NonUtf8), 1);
}

#[test]
fn a_session_with_zero_requests() {
    let db = TestDb::new();
    db.session("ses_1", None, "only a question", 1, 2);
    db.user("msg_1", "ses_1", 10, "anyone there?");
    let t = load_one(&db);
    assert!(t.requests.is_empty());
    assert_eq!(t.diagnostics.count(DiagnosticKind::NoRequests), 1);
    let (ok, stdout, _) = inspect(&db.path);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(v["counts"]["requests"], 0);
    assert_eq!(v["usage"]["cost"], 0.0);
    // A session without any message at all.
    db.session("ses_2", None, "empty", 1, 3);
    let t = open(Some(&db.path))
        .expect("open")
        .load_session(Some("ses_2"))
        .expect("load");
    survives_stages(&t);
    assert!(t.messages.is_empty());
}

#[test]
fn a_cyclic_parent_id_is_reported_not_followed() {
    let db = TestDb::new();
    db.session("ses_a", Some("ses_b"), "a", 1, 10);
    db.session("ses_b", Some("ses_a"), "b", 1, 20);
    db.session("ses_self", Some("ses_self"), "self", 1, 5);
    for s in ["ses_a", "ses_b", "ses_self"] {
        db.user(&format!("msg_{s}"), s, 10, "hi");
    }
    let source = open(Some(&db.path)).expect("open");
    // No main session: the newest of all is the default.
    let t = source.load_session(None).expect("load");
    survives_stages(&t);
    assert_eq!(t.session.id, "ses_b");
    assert_eq!(t.diagnostics.count(DiagnosticKind::CyclicParent), 1);
    // Its only child (ses_a) is its own parent: never loaded as a child.
    assert!(source.load_children(&t).is_empty());
    let me = source.load_session(Some("ses_self")).expect("self");
    survives_stages(&me);
    assert_eq!(me.diagnostics.count(DiagnosticKind::CyclicParent), 1);
    assert!(source.load_children(&me).is_empty());
    let list = source.list_sessions().expect("list");
    assert_eq!(list.len(), 3);
    let table = tierscope::cli::sessions::table(&list).render();
    assert_eq!(table.lines().count(), 4, "{table}");
    assert!(table.contains("cyclic parent"));
    let out = Command::new(BIN)
        .args(["sessions", db.path.to_str().expect("utf-8")])
        .output()
        .expect("run");
    assert!(out.status.success());
}

#[test]
fn a_part_of_an_unknown_type_is_kept_and_reported() {
    let db = TestDb::new();
    db.session("ses_1", None, "future", 1, 2);
    db.user("msg_1", "ses_1", 10, "go");
    db.assistant("msg_2", "ses_1", "msg_1", 20, "done", 4);
    db.part(
        "prt_h",
        "msg_2",
        "ses_1",
        r#"{"type":"hologram","beam":{"colour":"green"},"text":"from a newer OpenCode"}"#,
    );
    let t = load_one(&db);
    assert_eq!(t.requests.len(), 1);
    assert!(t.messages[1]
        .parts
        .iter()
        .any(|p| p.kind.type_name() == "hologram"));
    assert_eq!(t.diagnostics.count(DiagnosticKind::UnknownPartType), 1);
    let (ok, stdout, _) = inspect(&db.path);
    assert!(ok && stdout.contains("unknown_part_type"), "{stdout}");
}

#[test]
fn a_part_whose_message_is_missing() {
    let db = TestDb::new();
    db.session("ses_1", None, "orphans", 1, 2);
    db.user("msg_1", "ses_1", 10, "hello");
    db.part(
        "prt_o",
        "msg_gone",
        "ses_1",
        r#"{"type":"text","text":"lost"}"#,
    );
    let t = load_one(&db);
    assert_eq!(t.messages.len(), 1);
    assert_eq!(t.messages[0].parts.len(), 1);
    assert_eq!(t.diagnostics.count(DiagnosticKind::OrphanPart), 1);
}

#[test]
fn a_dangling_pending_tool() {
    let db = TestDb::new();
    db.session("ses_1", None, "crash", 1, 2);
    db.user("msg_1", "ses_1", 10, "go");
    // OpenCode died mid-call: no time.completed, no finish, a pending and a running tool.
    db.message(
        "msg_2",
        "ses_1",
        20,
        r#"{"role":"assistant","parentID":"msg_1","time":{"created":20},"modelID":"m","providerID":"p"}"#,
    );
    db.part("prt_1", "msg_2", "ses_1", r#"{"type":"step-start"}"#);
    db.part(
        "prt_2",
        "msg_2",
        "ses_1",
        r#"{"type":"tool","callID":"c1","tool":"bash","state":{"status":"pending","input":{},"raw":""}}"#,
    );
    db.part(
        "prt_3",
        "msg_2",
        "ses_1",
        r#"{"type":"tool","callID":"c2","tool":"read","state":{"status":"running","input":{"filePath":"a"},"time":{"start":21}}}"#,
    );
    let t = load_one(&db);
    assert_eq!(t.requests.len(), 1);
    assert_eq!(t.requests[0].time_completed, None);
    assert_eq!(t.diagnostics.count(DiagnosticKind::DanglingTool), 2);
    let (ok, stdout, _) = inspect(&db.path);
    assert!(ok && stdout.contains("dangling_tool"));
}

#[test]
fn escape_sequences_in_trace_text_are_made_visible() {
    let db = TestDb::new();
    db.session(
        "ses_1",
        None,
        "evil \u{1b}]0;pwned\u{7} title \u{1b}[2J",
        1,
        2,
    );
    db.user("msg_1", "ses_1", 10, "hi");
    db.assistant("msg_2", "ses_1", "msg_1", 20, "hello", 4);
    for cmd in ["sessions", "inspect"] {
        let out = Command::new(BIN)
            .args([cmd, db.path.to_str().expect("utf-8")])
            .output()
            .expect("run");
        assert!(out.status.success());
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{cmd}: {s}");
        assert!(s.contains("\\x1b"), "{cmd}: {s}");
    }
    // Every other command that prints the title: whatever it prints, nothing raw.
    for args in [
        &["episodes"][..],
        &["audit"],
        &["experiment", "-p", "full"],
        &["survey"],
    ] {
        let out = Command::new(BIN)
            .args(args)
            .arg(&db.path)
            .env("TIERSCOPE_CACHE_DIR", db.path.with_extension("cache"))
            .output()
            .expect("run");
        assert!(out.status.success(), "{args:?}");
        for s in [&out.stdout, &out.stderr] {
            let s = String::from_utf8_lossy(s);
            assert!(
                !s.contains('\u{1b}') && !s.contains('\u{7}'),
                "{args:?}: {s}"
            );
        }
    }
}

#[test]
fn messages_without_a_session_row_are_reported() {
    let db = TestDb::new();
    db.session("ses_1", None, "kept", 1, 2);
    db.user("msg_1", "ses_1", 10, "hi");
    db.user("msg_2", "ses_gone", 10, "orphaned");
    db.user("msg_3", "ses_gone", 11, "orphaned too");
    let source = open(Some(&db.path)).expect("open");
    assert_eq!(source.list_sessions().expect("list").len(), 1);
    assert_eq!(source.diagnostics().count(DiagnosticKind::OrphanMessage), 2);
    let out = Command::new(BIN)
        .args(["sessions", db.path.to_str().expect("utf-8")])
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("orphan_message"));
}

/// Cut anywhere, an export or a database never panics: it loads (with a diagnostic) or is one error.
#[test]
fn cuts_at_many_offsets_never_panic() {
    let raw = bytes(&e1_export());
    for (i, len) in (0..raw.len()).step_by(997).enumerate() {
        match parse_export(&raw[..len], Path::new("cut.json")) {
            Ok(t) => {
                assert!(
                    t.diagnostics.count(DiagnosticKind::TruncatedExport) == 1 || len == raw.len()
                );
                // The later stages on a sample of the cuts (each replay costs a little).
                if i % 16 == 0 {
                    survives_stages(&t);
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    let db = bytes(&Path::new(RECORDINGS).join("opencode-1.18.33/data/opencode.db"));
    let tmp = tempfile::tempdir().expect("tempdir");
    for len in (0..db.len()).step_by(65536) {
        let p = tmp.path().join(format!("cut{len}.db"));
        std::fs::write(&p, &db[..len]).expect("write");
        if let Ok(source) = open(Some(&p)) {
            if let Ok(list) = source.list_sessions() {
                for s in list {
                    let _ = source.load_session(Some(&s.id));
                }
            }
        }
    }
}

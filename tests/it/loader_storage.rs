//! The legacy JSON trees, built by hand in a tempdir, and their merge with the database.

use crate::loader_support;

use std::path::Path;

use loader_support::*;
use serde_json::{json, Value};
use tierscope_engine::trace::load::open;
use tierscope_engine::trace::{DiagnosticKind, SourceKind};

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_string_pretty(v).expect("json")).expect("write");
}

/// A global (v0.6 – v1.1) tree under `<root>/storage`: one session, a user and an assistant
/// message; ids left out of some files (they come from the file names).
fn global_tree(data: &Path, user_text: &str) {
    let st = data.join("storage");
    write(
        &st.join("session/prj_1/ses_s.json"),
        &json!({"id": "ses_s", "projectID": "prj_1", "directory": "/w", "title": "from storage",
                "version": "1.1.60", "time": {"created": 1, "updated": 50}}),
    );
    write(
        &st.join("message/ses_s/msg_1.json"),
        &json!({"role": "user", "sessionID": "ses_s", "time": {"created": 10}}),
    );
    write(
        &st.join("part/msg_1/prt_1.json"),
        &json!({"type": "text", "text": user_text, "messageID": "msg_1", "sessionID": "ses_s"}),
    );
    write(
        &st.join("message/ses_s/msg_2.json"),
        &json!({"id": "msg_2", "role": "assistant", "parentID": "msg_1", "time": {"created": 20, "completed": 21},
                "modelID": "m", "providerID": "p", "mode": "build", "finish": "stop", "cost": 0.25,
                "tokens": {"input": 100, "output": 9, "reasoning": 0, "cache": {"read": 50, "write": 3}}}),
    );
    write(
        &st.join("part/msg_2/prt_2.json"),
        &json!({"id": "prt_2", "type": "text", "text": "answer"}),
    );
}

#[test]
fn a_global_json_tree_loads_with_ids_from_paths() {
    let data = tempfile::tempdir().expect("tempdir");
    global_tree(data.path(), "question");
    for path in [data.path().to_owned(), data.path().join("storage")] {
        let source = open(Some(&path)).expect("open");
        let t = source.load_session(None).expect("load");
        assert_eq!(t.session.id, "ses_s");
        assert_eq!(t.messages.len(), 2);
        assert_eq!(t.messages[0].id, "msg_1");
        assert_eq!(t.messages[0].parts[0].id, "prt_1");
        assert_eq!(t.messages[0].text(), "question");
        assert_eq!(t.requests.len(), 1);
        // No step-finish: usage falls back to message.tokens.
        assert_eq!(t.requests[0].usage.input, 100);
        assert_eq!(t.requests[0].usage.cache_write, 3);
        assert_eq!(t.requests[0].agent.as_deref(), Some("build"));
        assert!(matches!(t.source, SourceKind::FileTree(_)));
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
    }
}

#[test]
fn the_older_per_project_tree_loads() {
    let data = tempfile::tempdir().expect("tempdir");
    let st = data.path().join("project/-home-u-app/storage/session");
    write(
        &st.join("info/ses_old.json"),
        &json!({"id": "ses_old", "title": "era A", "version": "0.5.29", "time": {"created": 1, "updated": 2}}),
    );
    write(
        &st.join("message/ses_old/msg_a.json"),
        &json!({"id": "msg_a", "role": "user", "time": {"created": 5}}),
    );
    write(
        &st.join("part/ses_old/msg_a/prt_a.json"),
        &json!({"id": "prt_a", "type": "text", "text": "old times"}),
    );
    // A ≤ v0.1 message with its parts inline.
    write(
        &st.join("message/ses_old/msg_b.json"),
        &json!({"id": "msg_b", "role": "assistant", "time": {"created": 6},
                "parts": [{"id": "prt_b", "type": "text", "text": "inline"}]}),
    );
    let source = open(Some(data.path())).expect("open");
    let t = source.load_session(Some("ses_old")).expect("load");
    assert_eq!(t.messages.len(), 2);
    assert_eq!(t.messages[0].text(), "old times");
    assert_eq!(t.messages[1].text(), "inline");
    // No parentID (< v0.15.14): the request answers the last user message before it.
    assert_eq!(t.requests[0].user_message_id.as_deref(), Some("msg_a"));
}

#[test]
fn database_wins_over_storage_and_storage_only_rows_are_merged() {
    let data = tempfile::tempdir().expect("tempdir");
    global_tree(data.path(), "text from storage");
    // A storage-only message in the same session.
    write(
        &data.path().join("storage/message/ses_s/msg_3.json"),
        &json!({"id": "msg_3", "role": "user", "time": {"created": 30}}),
    );
    write(
        &data.path().join("storage/part/msg_3/prt_3.json"),
        &json!({"id": "prt_3", "type": "text", "text": "only in storage"}),
    );
    // The database has the same session and msg_1 with other text.
    let db = TestDb::new();
    db.session("ses_s", None, "from db", 1, 60);
    db.user("msg_1", "ses_s", 10, "text from db");
    std::fs::copy(&db.path, data.path().join("opencode.db")).expect("copy db");
    std::fs::copy(
        db.dir.path().join("opencode.db-wal"),
        data.path().join("opencode.db-wal"),
    )
    .expect("copy wal");
    let source = open(Some(data.path())).expect("open");
    let t = source.load_session(Some("ses_s")).expect("load");
    assert_eq!(t.session.title, "from db");
    let texts: Vec<String> = t.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts[0], "text from db");
    assert!(texts.contains(&"only in storage".to_owned()));
    // msg_1 is the database's, parts included (its storage part prt_1 is not added);
    // msg_2 and msg_3 come from storage only.
    assert_eq!(t.messages[0].parts.len(), 1);
    assert_eq!(t.messages.len(), 3);
    assert!(t.diagnostics.count(DiagnosticKind::MergedFromStorage) >= 2);
    assert!(matches!(t.source, SourceKind::DatabaseAndFileTree(_)));
    assert_eq!(source.list_sessions().expect("list").len(), 1);
}

#[test]
fn same_part_id_in_db_and_storage_keeps_the_database_text() {
    let data = tempfile::tempdir().expect("tempdir");
    global_tree(data.path(), "storage says");
    let db = TestDb::new();
    db.session("ses_s", None, "from db", 1, 60);
    db.message(
        "msg_1",
        "ses_s",
        10,
        r#"{"role":"user","time":{"created":10}}"#,
    );
    db.part(
        "prt_1",
        "msg_1",
        "ses_s",
        r#"{"type":"text","text":"db says"}"#,
    );
    drop(db.conn);
    std::fs::copy(&db.path, data.path().join("opencode.db")).expect("copy db");
    let t = open(Some(data.path()))
        .expect("open")
        .load_session(Some("ses_s"))
        .expect("load");
    assert_eq!(t.messages[0].parts.len(), 1);
    assert_eq!(t.messages[0].text(), "db says");
}

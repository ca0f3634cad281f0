//! The database loader on databases built from OpenCode's DDL: ordering, WAL, defaults, children,
//! unknown parts, 2.x rows.

use crate::loader_support;

use loader_support::*;
use serde_json::{json, Value};
use tierscope_engine::trace::load::open;
use tierscope_engine::trace::{DiagnosticKind, PartKind, SourceKind, UserKind};

#[test]
fn messages_are_ordered_by_time_not_id() {
    let db = TestDb::new();
    db.session("ses_1", None, "order", 1, 2);
    // Id order: msg_a < msg_m < msg_z. Time order: msg_z (user), msg_m, msg_a.
    db.user("msg_z", "ses_1", 100, "hello");
    db.assistant("msg_m", "ses_1", "msg_z", 200, "first", 10);
    db.assistant("msg_a", "ses_1", "msg_z", 300, "second", 20);
    let t = open(Some(&db.path))
        .expect("open")
        .load_session(Some("ses_1"))
        .expect("load");
    let ids: Vec<&str> = t.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["msg_z", "msg_m", "msg_a"]);
    assert_eq!(t.requests[0].message_id, "msg_m");
    assert_eq!(t.requests[0].usage.input, 10);
    assert_eq!(t.requests[1].message_id, "msg_a");
    assert_eq!(t.requests[1].user_message_id.as_deref(), Some("msg_z"));
    // Parts by id within a message.
    let kinds: Vec<&str> = t.messages[1].parts.iter().map(|p| p.type_name()).collect();
    assert_eq!(kinds, ["step-start", "text", "step-finish"]);
    assert_eq!(t.messages[0].user_kind, Some(UserKind::Human));
}

#[test]
fn rows_still_in_the_wal_are_seen_and_files_stay_unchanged() {
    let db = TestDb::new();
    db.session("ses_1", None, "wal", 1, 2);
    db.user("msg_1", "ses_1", 10, "in the wal");
    // The writer is still open with checkpoints off: the rows are only in the -wal.
    let wal = db.dir.path().join("opencode.db-wal");
    assert!(bytes(&wal).len() > 1000);
    let before = (bytes(&db.path), bytes(&wal));
    let source = open(Some(&db.path)).expect("open");
    let t = source.load_session(None).expect("load");
    assert_eq!(t.messages.len(), 1);
    assert_eq!(t.messages[0].text(), "in the wal");
    drop(source);
    assert!((bytes(&db.path), bytes(&wal)) == before);
}

#[test]
fn the_default_session_is_the_newest_main_session() {
    let db = TestDb::new();
    db.session("ses_old", None, "old main", 1, 100);
    db.session("ses_main", None, "new main", 2, 200);
    db.session(
        "ses_child",
        Some("ses_main"),
        "child (@general subagent)",
        3,
        300,
    );
    for s in ["ses_old", "ses_main", "ses_child"] {
        db.user(&format!("msg_{s}"), s, 10, "hi");
    }
    let source = open(Some(&db.path)).expect("open");
    assert_eq!(
        source.load_session(None).expect("load").session.id,
        "ses_main"
    );
    // A unique prefix picks a session; an unknown id is an error.
    assert_eq!(
        source
            .load_session(Some("ses_o"))
            .expect("prefix")
            .session
            .id,
        "ses_old"
    );
    assert!(source.load_session(Some("ses_nope")).is_err());
    let list = source.list_sessions().expect("list");
    assert_eq!(list.len(), 3);
    let main = list.iter().find(|s| s.id == "ses_main").expect("main");
    assert_eq!(main.children, ["ses_child"]);
}

#[test]
fn task_children_load_with_their_parent() {
    let db = TestDb::new();
    db.session("ses_p", None, "parent", 1, 100);
    db.session(
        "ses_c",
        Some("ses_p"),
        "look around (@explore subagent)",
        2,
        50,
    );
    db.user("msg_u", "ses_p", 10, "explore");
    db.assistant("msg_a", "ses_p", "msg_u", 20, "spawning", 5);
    db.part(
        "prt_msg_a_1x",
        "msg_a",
        "ses_p",
        &json!({"type": "tool", "callID": "call_1", "tool": "task", "state": {
            "status": "completed", "input": {"description": "look around", "prompt": "p"},
            "output": "done", "title": "look around", "metadata": {"sessionId": "ses_c"},
            "time": {"start": 21, "end": 22}}})
        .to_string(),
    );
    db.user("msg_cu", "ses_c", 21, "look around");
    db.assistant("msg_ca", "ses_c", "msg_cu", 22, "found it", 7);
    let source = open(Some(&db.path)).expect("open");
    let t = source.load_session(None).expect("parent");
    assert_eq!(t.session.id, "ses_p");
    assert_eq!(t.children.len(), 1);
    assert_eq!(t.children[0].session_id, "ses_c");
    assert_eq!(t.children[0].description.as_deref(), Some("look around"));
    let kids = source.load_children(&t);
    assert_eq!(kids.len(), 1);
    let kid = kids[0].as_ref().expect("child");
    assert_eq!(kid.session.parent_id.as_deref(), Some("ses_p"));
    assert_eq!(kid.requests.len(), 1);
    assert!(source.load_children(kid).is_empty());
}

#[test]
fn an_unknown_part_type_round_trips_its_raw_json() {
    let db = TestDb::new();
    db.session("ses_1", None, "unknown", 1, 2);
    db.user("msg_1", "ses_1", 10, "hi");
    let raw = json!({"type": "hologram", "beam": 7, "nested": {"a": [1, 2.5, null, "x"]}});
    db.part("prt_9", "msg_1", "ses_1", &raw.to_string());
    let t = open(Some(&db.path))
        .expect("open")
        .load_session(None)
        .expect("load");
    let part = t.messages[0]
        .parts
        .iter()
        .find(|p| p.id == "prt_9")
        .expect("kept");
    let PartKind::Unknown {
        type_name,
        raw: got,
    } = &part.kind
    else {
        panic!("expected Unknown, got {:?}", part.kind)
    };
    assert_eq!(type_name, "hologram");
    // The stored JSON, plus the ids the database keeps in columns.
    let mut expect = raw.clone();
    let o = expect.as_object_mut().expect("object");
    o.insert("id".into(), "prt_9".into());
    o.insert("sessionID".into(), "ses_1".into());
    o.insert("messageID".into(), "msg_1".into());
    assert_eq!(got, &expect);
    assert_eq!(t.diagnostics.count(DiagnosticKind::UnknownPartType), 1);
    // And it survives serialization of the whole trace.
    let v: Value = serde_json::to_value(&t).expect("serialize");
    assert!(v.to_string().contains("\"beam\":7"));
}

#[test]
fn columns_are_probed_not_assumed() {
    // An early 1.2-style schema: no usage, agent/model, path or workspace columns; no part.session_id.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("opencode.db");
    let conn = rusqlite::Connection::open(&path).expect("db");
    conn.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, project_id text, parent_id text, slug text, directory text,
           title text, version text, time_created integer, time_updated integer);
         CREATE TABLE message (id text PRIMARY KEY, session_id text, time_created integer, time_updated integer, data text);
         CREATE TABLE part (id text PRIMARY KEY, message_id text, time_created integer, time_updated integer, data text);
         INSERT INTO session VALUES ('ses_1','p',NULL,'s','/d','old schema','1.2.0',1,2);
         INSERT INTO message VALUES ('msg_1','ses_1',5,5,'{\"role\":\"user\"}');
         INSERT INTO part VALUES ('prt_1','msg_1',5,5,'{\"type\":\"text\",\"text\":\"hi\"}');",
    )
    .expect("schema");
    drop(conn);
    let t = open(Some(&path))
        .expect("open")
        .load_session(None)
        .expect("load");
    assert_eq!(t.session.title, "old schema");
    // time.created missing from the JSON comes from the column.
    assert_eq!(t.messages[0].time_created, 5);
    assert_eq!(t.messages[0].text(), "hi");
}

#[test]
fn session_v2_rows_are_read_and_merged_by_id() {
    let db = TestDb::new();
    db.session("ses_1", None, "v1 session", 1, 2);
    db.user("msg_1", "ses_1", 10, "v1 row");
    db.conn.execute_batch(V2_DDL).expect("v2 tables");
    db.conn
        .execute_batch(
            "INSERT INTO session_v2 VALUES ('ses_1','p',NULL,'s','/d','dup of v1','2.0.0',NULL,1,2);
             INSERT INTO session_v2 VALUES ('ses_2','p',NULL,'s','/d','a 2.x session','2.0.1',
               '{\"id\":\"m\",\"providerID\":\"p\"}',5,900);",
        )
        .expect("v2 tables");
    let rows = [
        (
            "sm_1",
            "ses_2",
            "user",
            1,
            json!({"text": "fix it", "time": {"created": 100}}),
        ),
        (
            "sm_2",
            "ses_2",
            "agent-switched",
            2,
            json!({"agent": "build"}),
        ),
        (
            "sm_3",
            "ses_2",
            "assistant",
            3,
            json!({"agent": "build", "model": {"id": "m", "providerID": "p"}, "finish": "tool-calls",
                   "tokens": {"input": 40, "output": 5, "reasoning": 0, "cache": {"read": 8, "write": 0}},
                   "time": {"created": 110, "completed": 120},
                   "content": [{"type": "text", "text": "running tests"},
                               {"type": "tool", "id": "call_1", "name": "shell",
                                "state": {"status": "completed", "input": {"command": "make test"},
                                          "content": [{"type": "text", "text": "ok"}]},
                                "time": {"created": 111, "ran": 112, "completed": 113}}]}),
        ),
        (
            "sm_4",
            "ses_2",
            "compaction",
            4,
            json!({"status": "completed", "reason": "auto", "summary": "## Objective\nfix", "time": {"created": 130}}),
        ),
        (
            "sm_5",
            "ses_1",
            "user",
            1,
            json!({"text": "v2 copy of a v1 session", "time": {"created": 11}}),
        ),
    ];
    for (id, ses, ty, seq, data) in rows {
        db.conn
            .execute(
                "INSERT INTO session_message VALUES (?1, ?2, ?3, ?4, 0, 0, ?5)",
                rusqlite::params![id, ses, ty, seq, data.to_string()],
            )
            .expect("row");
    }
    let source = open(Some(&db.path)).expect("open");
    let list = source.list_sessions().expect("list");
    assert_eq!(list.len(), 2);
    // The v1 row wins for a session in both tables.
    assert_eq!(
        list.iter().find(|s| s.id == "ses_1").expect("ses_1").title,
        "v1 session"
    );
    let t = source.load_session(None).expect("newest main is ses_2");
    assert_eq!(t.session.id, "ses_2");
    assert_eq!(t.requests.len(), 2);
    assert_eq!(t.requests[0].usage.cache_read, 8);
    let (_, tool) = t.messages[1].tool_parts().next().expect("tool");
    assert_eq!(tool.tool, "shell");
    assert_eq!(tool.output.as_deref(), Some("ok"));
    assert_eq!(t.compactions.len(), 1);
    assert_eq!(t.compactions[0].summary_request, Some(1));
    assert!(matches!(t.source, SourceKind::Database(_)));
}

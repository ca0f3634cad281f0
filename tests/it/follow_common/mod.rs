//! Shared by the `follow_*` tests: a writable copy of a real recording's database and a writer
//! that replays rows into it the way OpenCode writes them (message row, then its parts one by
//! one, then updates of the parts and of the message row), each write its own transaction.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::Connection;
use serde_json::Value as Json;

use tierscope_engine::trace::{load, SourceKind, Trace};

pub const RECORDING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33/data/opencode.db"
);
/// E2: seven turns, two compactions.
pub const E2: &str = "ses_dd5b108b3ffe2Z7irYdh3R4z2R";
/// E1: three turns, no compaction.
pub const E1: &str = "ses_dd5b1793effevuSoF7ehpqDCRB";

/// Copy the recording's db, `-wal` and `-shm` into `dir` (the checked-in files are never opened
/// for writing).
pub fn copy_recording(dir: &Path) -> PathBuf {
    copy_db(RECORDING, dir)
}

/// The crate's own sample recording (M1 with an explore sub-agent, B1, C1).
pub const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces/opencode.db");

/// Copy a database with its `-wal` and `-shm` into `dir`, writable.
pub fn copy_db(src: &str, dir: &Path) -> PathBuf {
    let db = dir.join("opencode.db");
    for suffix in ["", "-wal", "-shm"] {
        let from = format!("{src}{suffix}");
        let to = format!("{}{suffix}", db.display());
        std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {from}: {e}"));
        // The source may be read-only; the copies must be writable.
        let mut perm = std::fs::metadata(&to).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(&to, perm).unwrap();
    }
    db
}

/// One table row: column names and values, as read.
#[derive(Debug, Clone)]
pub struct Row {
    pub cols: Vec<String>,
    pub vals: Vec<Value>,
}

impl Row {
    pub fn get(&self, col: &str) -> &Value {
        let i = self.cols.iter().position(|c| c == col).unwrap();
        &self.vals[i]
    }
    pub fn text(&self, col: &str) -> String {
        match self.get(col) {
            Value::Text(t) => t.clone(),
            other => panic!("{col} is not text: {other:?}"),
        }
    }
    pub fn data(&self) -> Json {
        serde_json::from_str(&self.text("data")).unwrap()
    }
    pub fn with_data(&self, data: &Json) -> Row {
        let mut r = self.clone();
        let i = r.cols.iter().position(|c| c == "data").unwrap();
        r.vals[i] = Value::Text(data.to_string());
        r
    }
}

fn rows(conn: &Connection, sql: &str, arg: &str) -> Vec<Row> {
    let mut stmt = conn.prepare(sql).unwrap();
    let cols: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
    let n = cols.len();
    stmt.query_map([arg], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .map(|vals| Row {
            cols: cols.clone(),
            vals: vals.unwrap(),
        })
        .collect()
}

/// The session row of `id`.
pub fn session_row(conn: &Connection, id: &str) -> Row {
    rows(conn, "SELECT * FROM session WHERE id = ?1", id)
        .pop()
        .unwrap_or_else(|| panic!("no session {id}"))
}

/// A session's messages in OpenCode's order, each with its parts.
pub fn session_rows(conn: &Connection, session: &str) -> Vec<(Row, Vec<Row>)> {
    rows(
        conn,
        "SELECT * FROM message WHERE session_id = ?1 ORDER BY time_created, id",
        session,
    )
    .into_iter()
    .map(|m| {
        let parts = rows(
            conn,
            "SELECT * FROM part WHERE message_id = ?1 ORDER BY id",
            &m.text("id"),
        );
        (m, parts)
    })
    .collect()
}

/// Delete every message of `session` after the first `keep` (and their parts); return them.
pub fn truncate(conn: &Connection, session: &str, keep: usize) -> Vec<(Row, Vec<Row>)> {
    let all = session_rows(conn, session);
    let rest = all[keep..].to_vec();
    for (m, _) in &rest {
        let id = m.text("id");
        conn.execute("DELETE FROM part WHERE message_id = ?1", [&id])
            .unwrap();
        conn.execute("DELETE FROM message WHERE id = ?1", [&id])
            .unwrap();
    }
    rest
}

pub fn insert(conn: &Connection, table: &str, row: &Row) {
    let cols = row.cols.join(", ");
    let marks = (1..=row.cols.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    conn.execute(
        &format!("INSERT INTO {table} ({cols}) VALUES ({marks})"),
        rusqlite::params_from_iter(row.vals.iter()),
    )
    .unwrap();
}

pub fn update_data(conn: &Connection, table: &str, row: &Row) {
    conn.execute(
        &format!("UPDATE {table} SET data = ?1 WHERE id = ?2"),
        rusqlite::params![row.text("data"), row.text("id")],
    )
    .unwrap();
}

/// The message as OpenCode first writes it: an assistant message without `finish`, completion
/// time, usage or cost.
fn in_progress_message(m: &Row) -> Row {
    let mut d = m.data();
    if d["role"] == "assistant" {
        if let Some(o) = d.as_object_mut() {
            o.remove("finish");
            o.insert("cost".into(), Json::from(0));
            o.insert(
                "tokens".into(),
                serde_json::json!({"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}),
            );
        }
        if let Some(t) = d["time"].as_object_mut() {
            t.remove("completed");
        }
    }
    m.with_data(&d)
}

/// A tool part as OpenCode first writes it: running, no output yet.
fn in_progress_part(p: &Row) -> Option<Row> {
    let d = p.data();
    if d["type"] != "tool" {
        return None;
    }
    let mut d = d.clone();
    let state = &d["state"];
    let running = serde_json::json!({
        "status": "running",
        "input": state["input"].clone(),
        "time": {"start": state["time"]["start"].clone()},
    });
    d["state"] = running;
    Some(p.with_data(&d))
}

/// Write `rest` into the database the way OpenCode does, pausing `pause` between transactions.
pub fn append_like_opencode(conn: &Connection, rest: &[(Row, Vec<Row>)], pause: Duration) {
    for (m, parts) in rest {
        append_message(conn, m, parts, pause);
    }
}

/// One message the way OpenCode writes it: the row (in progress), its parts one by one (tool
/// parts first running, then completed), then the final message row.
pub fn append_message(conn: &Connection, m: &Row, parts: &[Row], pause: Duration) {
    insert(conn, "message", &in_progress_message(m));
    std::thread::sleep(pause);
    for p in parts {
        match in_progress_part(p) {
            Some(running) => {
                insert(conn, "part", &running);
                std::thread::sleep(pause);
                update_data(conn, "part", p);
            }
            None => insert(conn, "part", p),
        }
        std::thread::sleep(pause);
    }
    update_data(conn, "message", m);
    std::thread::sleep(pause);
}

/// A fresh load of `session` from `db` (read-only).
pub fn fresh_load(db: &Path, session: &str) -> Trace {
    load::open(Some(db))
        .unwrap()
        .load_session(Some(session))
        .unwrap()
}

/// The trace with where it came from blanked, to compare loads of two copies.
pub fn neutral(mut t: Trace) -> Trace {
    t.source = SourceKind::Database(String::new());
    t.origin.format = "";
    t
}

/// Open a read-write connection to a copy, as OpenCode would.
pub fn writer(db: &Path) -> Connection {
    let c = Connection::open(db).unwrap();
    c.busy_timeout(Duration::from_secs(5)).unwrap();
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    c.pragma_update(None, "foreign_keys", "on").unwrap();
    c
}

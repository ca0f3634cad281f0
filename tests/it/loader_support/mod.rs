//! Shared helpers for the loader tests: the recordings, and test databases built from OpenCode's
//! own DDL (as OpenCode 1.18.33 created it).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};
use serde_json::Value;
use tierscope_engine::trace::Trace;

/// The recordings of OpenCode releases checked in for the tests (`tests/recordings/README.md`).
pub const RECORDINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/recordings");
pub const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");
pub const BIN: &str = env!("CARGO_BIN_EXE_tierscope");

/// One recording: a database (with its -wal) and the exports of sessions it holds.
#[derive(Debug, Clone)]
pub struct Recording {
    pub db: PathBuf,
    pub exports: Vec<PathBuf>,
}

/// Whether a file name in a recordings dir names an export: a `.json` that is neither the
/// recorder's manifest nor a sidecar (annotations, tiers, probes).
pub fn is_export_name(n: &str) -> bool {
    n.ends_with(".json")
        && n != "manifest.json"
        && ![".annotations.json", ".tiers.json", ".probes.json"]
            .iter()
            .any(|s| n.ends_with(s))
}

/// Export files in `dir`: JSON objects with `info` and `messages` (not the recorder's manifest).
/// A directory that cannot be read fails the test.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let is_export = |p: &Path| {
        std::fs::read(p)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v.get("info").is_some() && v.get("messages").is_some())
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .filter(|p| is_export(p))
        .collect();
    v.sort();
    v
}

/// The recordings that keep both OpenCode's database (with its `-wal`) and an export of each of
/// its sessions: 1.18.33's E1 and E2 (`tests/recordings/opencode-1.18.33/`: `data/opencode.db` +
/// `exports/*.json`) and the samples (`sample-traces/`: `opencode.db` + `*.json`). A missing file
/// fails the test.
pub fn recordings() -> Vec<Recording> {
    let v118 = Path::new(RECORDINGS).join("opencode-1.18.33");
    let out = vec![
        Recording {
            db: v118.join("data").join("opencode.db"),
            exports: json_files(&v118.join("exports")),
        },
        Recording {
            db: Path::new(SAMPLES).join("opencode.db"),
            exports: json_files(Path::new(SAMPLES)),
        },
    ];
    for r in &out {
        assert!(r.db.is_file(), "{} is missing", r.db.display());
        assert!(
            !r.exports.is_empty(),
            "no exports beside {}",
            r.db.display()
        );
    }
    out
}

/// The trace as plain JSON without where it came from and what the loader noticed: the part two
/// formats of the same session must agree on.
pub fn comparable(t: &Trace) -> Value {
    let mut v = serde_json::to_value(t).expect("a trace serializes");
    let o = v.as_object_mut().expect("a trace is an object");
    o.remove("source");
    o.remove("diagnostics");
    // The format is where it came from; the agent and its version stay compared.
    if let Some(origin) = o.get_mut("origin").and_then(Value::as_object_mut) {
        origin.remove("format");
    }
    v
}

/// A database with OpenCode 1.18's session tables (and a credential table nobody may read).
pub struct TestDb {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub conn: Connection,
}

pub const DDL: &str = r#"
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `sandboxes` text NOT NULL);
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL,
  `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
  `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL,
  `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text,
  `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE TABLE `account` (`id` text PRIMARY KEY, `email` text NOT NULL, `url` text NOT NULL,
  `access_token` text NOT NULL, `refresh_token` text NOT NULL, `token_expiry` integer,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL);
INSERT INTO account VALUES ('acc_1', 'a@b.c', 'https://x', 'SECRET-ACCESS', 'SECRET-REFRESH', NULL, 1, 1);
"#;

/// The tables of OpenCode 2.x's session loop (`session_v2`, `session_message`), empty.
pub const V2_DDL: &str = r#"
CREATE TABLE session_v2 (id text PRIMARY KEY, project_id text, parent_id text, slug text,
  directory text, title text, version text, model text, time_created integer, time_updated integer);
CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, type text NOT NULL,
  seq integer NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
"#;

impl TestDb {
    /// Close the database and damage the `nth` leaf page of `table` (a garbage b-tree page
    /// header: SQLite reports it malformed); the directory and the database's path.
    pub fn with_damaged_leaf(self, table: &str, nth: usize) -> (tempfile::TempDir, PathBuf) {
        let leaf: i64 = self
            .conn
            .query_row(
                "SELECT pageno FROM dbstat WHERE name = ?1 AND pagetype = 'leaf' \
                 ORDER BY pageno LIMIT 1 OFFSET ?2",
                params![table, nth as i64],
                |r| r.get(0),
            )
            .expect("dbstat");
        let page_size: i64 = self
            .conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .expect("page size");
        let TestDb { dir, path, conn } = self;
        // The last connection's close checkpoints the WAL into the file.
        conn.close().expect("close");
        let mut b = bytes(&path);
        let at = ((leaf - 1) * page_size) as usize;
        b[at..at + 16].copy_from_slice(&[0xff; 16]);
        std::fs::write(&path, &b).expect("write");
        (dir, path)
    }

    /// `<tempdir>/opencode.db` in WAL mode, with automatic checkpoints off so rows stay in the
    /// `-wal` while this connection is open (as with a running OpenCode).
    pub fn new() -> TestDb {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("opencode.db");
        let conn = Connection::open(&path).expect("create db");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("wal");
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .expect("no checkpoints");
        conn.execute_batch(DDL).expect("ddl");
        TestDb { dir, path, conn }
    }

    pub fn session(&self, id: &str, parent: Option<&str>, title: &str, created: i64, updated: i64) {
        self.conn
            .execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, \
                 time_created, time_updated, model) VALUES (?1, 'prj', ?2, 'slug', '/w', ?3, '1.18.33', ?4, ?5, \
                 '{\"id\":\"m\",\"providerID\":\"p\"}')",
                params![id, parent, title, created, updated],
            )
            .expect("insert session");
    }

    pub fn message(&self, id: &str, session: &str, time: i64, data: &str) {
        self.conn
            .execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
                params![id, session, time, data],
            )
            .expect("insert message");
    }

    pub fn part(&self, id: &str, message: &str, session: &str, data: &str) {
        self.conn
            .execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, 0, 0, ?4)",
                params![id, message, session, data],
            )
            .expect("insert part");
    }

    /// A user message with one text part.
    pub fn user(&self, id: &str, session: &str, time: i64, text: &str) {
        self.message(
            id,
            session,
            time,
            &format!(r#"{{"role":"user","time":{{"created":{time}}},"agent":"build"}}"#),
        );
        self.part(
            &format!("prt_{id}_0"),
            id,
            session,
            &serde_json::json!({"type": "text", "text": text}).to_string(),
        );
    }

    /// An assistant message answering `parent`, with step-start, text and step-finish parts.
    pub fn assistant(
        &self,
        id: &str,
        session: &str,
        parent: &str,
        time: i64,
        text: &str,
        input: u64,
    ) {
        self.message(
            id,
            session,
            time,
            &format!(
                r#"{{"role":"assistant","parentID":"{parent}","time":{{"created":{time},"completed":{}}},"finish":"stop","agent":"build","modelID":"m","providerID":"p","cost":0,"tokens":{{"input":{input},"output":2,"reasoning":0,"cache":{{"read":0,"write":0}}}}}}"#,
                time + 1
            ),
        );
        self.part(
            &format!("prt_{id}_0"),
            id,
            session,
            r#"{"type":"step-start"}"#,
        );
        self.part(
            &format!("prt_{id}_1"),
            id,
            session,
            &serde_json::json!({"type": "text", "text": text}).to_string(),
        );
        self.part(
            &format!("prt_{id}_2"),
            id,
            session,
            &format!(
                r#"{{"type":"step-finish","reason":"stop","cost":0,"tokens":{{"input":{input},"output":2,"reasoning":0,"cache":{{"read":0,"write":0}}}}}}"#
            ),
        );
    }
}

/// Contents of a file (empty when missing), for before/after comparisons.
pub fn bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_default()
}

/// Copy every file of `from` into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        if e.path().is_file() {
            let dest = to.join(e.file_name());
            std::fs::copy(e.path(), &dest).expect("copy");
            let mut perm = std::fs::metadata(&dest).expect("stat").permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&dest, perm).expect("chmod");
        }
    }
}

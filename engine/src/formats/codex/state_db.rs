//! Codex's thread index `state_5.sqlite` (`threads`, `thread_spawn_edges`): a listing without
//! reading the rollouts.
//!
//! Opened read-only by the rules of OpenCode's database ([`crate::formats::opencode::db`]):
//! in place where that creates no file beside it (`immutable=1` for a WAL database Codex left
//! without `-wal` and `-shm`, as it does when it checkpoints on exit; `mode=ro` with its `-wal`),
//! else from a temporary copy. Columns are probed, never assumed; only the thread index is read.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::trace::error::LoadError;
use crate::trace::sqlite::{looks_like_sqlite, open_copy, open_in_place};

/// The index file's name under `$CODEX_HOME`.
pub const FILE: &str = "state_5.sqlite";

/// One `threads` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadRow {
    pub id: String,
    pub rollout_path: Option<PathBuf>,
    /// Unix ms (`created_at_ms`, else `created_at` seconds).
    pub created: Option<i64>,
    pub updated: Option<i64>,
    pub source: Option<String>,
    pub cwd: Option<String>,
    pub title: Option<String>,
    /// Codex's thread `total_tokens` (input + output, cached input included).
    pub tokens_used: Option<u64>,
    pub archived: bool,
    pub model: Option<String>,
    pub cli_version: Option<String>,
    /// From `thread_spawn_edges`, else `attached_thread_parent_id`.
    pub parent_id: Option<String>,
}

/// An open thread index.
pub struct StateDb {
    conn: Connection,
    path: PathBuf,
    _copy: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for StateDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateDb")
            .field("path", &self.path)
            .field("copied", &self._copy.is_some())
            .finish()
    }
}

fn db_err(path: &Path, e: impl std::fmt::Display) -> LoadError {
    LoadError::Database {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

impl StateDb {
    /// Open `path` read-only (see the module docs).
    pub fn open(path: &Path) -> Result<StateDb, LoadError> {
        crate::trace::input::check_regular(path)?;
        if !looks_like_sqlite(path) {
            return Err(db_err(path, "not a SQLite database"));
        }
        let (conn, copy) = match open_in_place(path) {
            Some(c) => (c, None),
            None => {
                let (c, dir) = open_copy(path)?;
                (c, Some(dir))
            }
        };
        Ok(StateDb {
            conn,
            path: path.to_owned(),
            _copy: copy,
        })
    }

    /// True when the index was read through a temporary copy.
    pub fn is_copy(&self) -> bool {
        self._copy.is_some()
    }

    fn columns(&self, table: &str) -> Result<HashSet<String>, LoadError> {
        let mut stmt = self
            .conn
            .prepare(&format!("PRAGMA table_info(\"{table}\")"))
            .map_err(|e| db_err(&self.path, e))?;
        let cols = stmt
            .query_map([], |r| r.get::<_, String>(1))
            .and_then(|rows| rows.collect::<rusqlite::Result<HashSet<_>>>())
            .map_err(|e| db_err(&self.path, e))?;
        Ok(cols)
    }

    /// Every `threads` row; an index without that table has none.
    pub fn threads(&self) -> Result<Vec<ThreadRow>, LoadError> {
        let cols = self.columns("threads")?;
        if !cols.contains("id") {
            return Ok(Vec::new());
        }
        const WANTED: &[&str] = &[
            "id",
            "rollout_path",
            "created_at",
            "created_at_ms",
            "updated_at",
            "updated_at_ms",
            "source",
            "cwd",
            "title",
            "tokens_used",
            "archived",
            "model",
            "cli_version",
            "attached_thread_parent_id",
        ];
        let present: Vec<&str> = WANTED
            .iter()
            .copied()
            .filter(|c| cols.contains(*c))
            .collect();
        let list = present
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT {list} FROM threads"))
            .map_err(|e| db_err(&self.path, e))?;
        let mut rows = stmt.query([]).map_err(|e| db_err(&self.path, e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| db_err(&self.path, e))? {
            let text = |c: &str| -> Option<String> {
                let i = present.iter().position(|p| *p == c)?;
                row.get::<_, Option<String>>(i).ok().flatten()
            };
            let int = |c: &str| -> Option<i64> {
                let i = present.iter().position(|p| *p == c)?;
                row.get::<_, Option<i64>>(i).ok().flatten()
            };
            let Some(id) = text("id").filter(|s| !s.is_empty()) else {
                continue;
            };
            let ms = |ms_col: &str, s_col: &str| {
                int(ms_col).or_else(|| int(s_col).map(|s| s.saturating_mul(1000)))
            };
            out.push(ThreadRow {
                id,
                rollout_path: text("rollout_path")
                    .filter(|s| !s.is_empty())
                    .map(PathBuf::from),
                created: ms("created_at_ms", "created_at"),
                updated: ms("updated_at_ms", "updated_at"),
                source: text("source"),
                cwd: text("cwd"),
                title: text("title").filter(|s| !s.is_empty()),
                tokens_used: int("tokens_used").and_then(|n| u64::try_from(n).ok()),
                archived: int("archived").is_some_and(|a| a != 0),
                model: text("model"),
                cli_version: text("cli_version").filter(|s| !s.is_empty()),
                parent_id: text("attached_thread_parent_id").filter(|s| !s.is_empty()),
            });
        }
        drop(rows);
        drop(stmt);
        for (parent, child) in self.spawn_edges()? {
            if let Some(r) = out.iter_mut().find(|r| r.id == child) {
                r.parent_id = Some(parent);
            }
        }
        Ok(out)
    }

    /// `(parent, child)` of `thread_spawn_edges`, when the index has it.
    fn spawn_edges(&self) -> Result<Vec<(String, String)>, LoadError> {
        let cols = self.columns("thread_spawn_edges")?;
        if !(cols.contains("parent_thread_id") && cols.contains("child_thread_id")) {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare("SELECT parent_thread_id, child_thread_id FROM thread_spawn_edges")
            .map_err(|e| db_err(&self.path, e))?;
        let edges = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| db_err(&self.path, e))?;
        Ok(edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index as Codex leaves it while running: WAL mode with its `-wal` beside it.
    #[test]
    fn spawn_edges_name_a_child_thread_s_parent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        let writer = Connection::open(&path).expect("create");
        writer
            .execute_batch(
                "PRAGMA journal_mode=WAL;
                 CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL,
                   created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, source TEXT NOT NULL,
                   cwd TEXT NOT NULL, title TEXT NOT NULL, tokens_used INTEGER NOT NULL DEFAULT 0,
                   archived INTEGER NOT NULL DEFAULT 0, updated_at_ms INTEGER);
                 CREATE TABLE thread_spawn_edges (parent_thread_id TEXT NOT NULL,
                   child_thread_id TEXT NOT NULL PRIMARY KEY, status TEXT NOT NULL);
                 INSERT INTO threads VALUES ('p', '/h/sessions/p.jsonl', 100, 200, 'cli', '/w',
                   'parent', 500, 0, 200123);
                 INSERT INTO threads VALUES ('c', '/h/sessions/c.jsonl', 150, 160,
                   '{\"subagent\":{\"thread_spawn\":{\"parent_thread_id\":\"p\"}}}', '/w', 'child',
                   -1, 1, NULL);
                 INSERT INTO thread_spawn_edges VALUES ('p', 'c', 'completed');",
            )
            .expect("rows");
        assert!(crate::watch::side_file(&path, "-wal").exists());
        let db = StateDb::open(&path).expect("open");
        let mut rows = db.threads().expect("threads");
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(rows.len(), 2);
        let (c, p) = (&rows[0], &rows[1]);
        assert_eq!(c.parent_id.as_deref(), Some("p"));
        assert_eq!(p.parent_id, None);
        assert_eq!((p.created, p.updated), (Some(100_000), Some(200_123)));
        assert_eq!(p.tokens_used, Some(500));
        // A negative count is no count.
        assert_eq!(c.tokens_used, None);
        assert!(c.archived && !p.archived);
        drop(writer);
    }

    #[test]
    fn a_file_that_is_not_an_index_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        std::fs::write(&path, "not sqlite").expect("write");
        assert!(matches!(
            StateDb::open(&path),
            Err(LoadError::Database { .. })
        ));
        // A database without a `threads` table lists nothing.
        let other = dir.path().join("other.sqlite");
        Connection::open(&other)
            .and_then(|c| c.execute_batch("CREATE TABLE t (x)"))
            .expect("create");
        assert_eq!(
            StateDb::open(&other)
                .expect("open")
                .threads()
                .expect("rows"),
            vec![]
        );
    }
}

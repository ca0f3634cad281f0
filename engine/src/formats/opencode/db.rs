//! OpenCode's SQLite database (`opencode.db`, `opencode-<channel>.db`; OpenCode ≥ 1.2.0).
//!
//! Opened **read-only** through a `file:…?mode=ro` URI so the rows still in the `-wal` file are
//! seen and nothing is ever written (a read-write open would checkpoint the WAL and delete it).
//! When SQLite cannot open the WAL database read-only in place (a directory without write bits,
//! where it cannot create the `-shm`), the db, `-wal` and `-shm` are copied into a temporary
//! directory and the copy is opened instead. A WAL database with neither `-wal` nor `-shm` (no
//! writer has it open: OpenCode's clean exit removes both) is opened `immutable=1`, in place even
//! in a read-only directory, so SQLite creates neither next to the user's `opencode.db`. A table
//! that is missing or a page that is corrupt costs what is on it: the rest is read and the damage
//! reported (`database_damage`). Tables and columns are probed, never assumed; only `session`,
//! `message`, `part` (and the 2.x `session_v2`, `session_message`) are read, never the
//! credential tables.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use serde_json::{Map, Value};

use super::json;
use crate::formats::opencode::listing::Rows;
use crate::formats::opencode::parse::{parse_model_ref, parse_part};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;
use crate::trace::model::{Message, Part, SessionInfo};

use super::row_pipeline::{self, Cell};
use super::v2;
use crate::trace::sqlite::{in_place_mode, open_copy, open_ro, read_header, SQLITE_MAGIC};

/// An open OpenCode database.
pub struct Database {
    conn: Connection,
    path: PathBuf,
    /// Keeps the temporary copy alive when the database had to be copied to be opened.
    _copy: Option<tempfile::TempDir>,
    tables: Tables,
}

/// The columns each table we read actually has (`PRAGMA table_info`).
#[derive(Debug, Default)]
struct Tables {
    session: Option<HashSet<String>>,
    message: Option<HashSet<String>>,
    part: Option<HashSet<String>>,
    session_v2: Option<HashSet<String>>,
    session_message: Option<HashSet<String>>,
}

fn db_err(path: &Path, e: impl std::fmt::Display) -> LoadError {
    LoadError::Database {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.path)
            .field("copied", &self._copy.is_some())
            .finish()
    }
}

impl Database {
    /// Open `path` read-only (see the module docs). A file that is not a SQLite database, or
    /// whose schema cannot be read, is one clear [`LoadError::Database`].
    pub fn open(path: &Path) -> Result<Self, LoadError> {
        let meta = crate::trace::input::check_regular(path)?;
        // Read the header ourselves: a file we may not read is that, not "not a database".
        let head = read_header(path).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        if meta.len() < 100 || !head.starts_with(SQLITE_MAGIC) {
            return Err(db_err(
                path,
                format!(
                    "not a SQLite database ({} bytes, no SQLite header); truncated or another file",
                    meta.len()
                ),
            ));
        }
        let mode = in_place_mode(path, &head);
        let opened = mode.map(|m| open_ro(path, m).and_then(|c| probe(&c).map(|t| (c, t))));
        let in_place = match opened {
            Some(Ok(ok)) => Some(ok),
            Some(Err(e)) if is_corruption(&e) => return Err(db_err(path, e)),
            Some(Err(_)) | None => None,
        };
        if let Some((conn, tables)) = in_place {
            return Ok(Self {
                conn,
                path: path.to_owned(),
                _copy: None,
                tables,
            });
        }
        let (conn, dir) = open_copy(path)?;
        let tables = probe(&conn).map_err(|e| db_err(path, e))?;
        Ok(Self {
            conn,
            path: path.to_owned(),
            _copy: Some(dir),
            tables,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when the database was opened through a temporary copy.
    pub fn is_copy(&self) -> bool {
        self._copy.is_some()
    }

    /// True when the database has OpenCode's session tables.
    pub fn has_sessions(&self) -> bool {
        self.tables.session.is_some() || self.tables.session_v2.is_some()
    }

    /// Every session (v1 `session`, then `session_v2` rows whose id v1 does not have).
    pub fn sessions(&self, diags: &mut Diagnostics) -> Result<Vec<SessionInfo>, LoadError> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (table, cols) in [
            ("session", &self.tables.session),
            ("session_v2", &self.tables.session_v2),
        ] {
            let Some(cols) = cols else { continue };
            for info in self.read_sessions(table, cols, diags)? {
                if seen.insert(info.id.clone()) {
                    out.push(info);
                }
            }
        }
        Ok(out)
    }

    /// Says which columns every release's `session` table has are missing (renamed): its
    /// sessions are read with that field empty. From the schema read at open, so it costs nothing.
    pub fn report_session_columns(&self, diags: &mut Diagnostics) {
        let Some(cols) = &self.tables.session else {
            return;
        };
        for col in ["title", "directory", "time_created"] {
            if !cols.contains(col) {
                diags.push(
                    DiagnosticKind::MissingField,
                    format!(
                        "table session has no column {col} in {}; every session's {col} is empty",
                        self.path.display()
                    ),
                );
            }
        }
    }

    fn read_sessions(
        &self,
        table: &str,
        cols: &HashSet<String>,
        diags: &mut Diagnostics,
    ) -> Result<Vec<SessionInfo>, LoadError> {
        // (column, key in Session.Info); `model` is JSON text.
        const MAP: &[(&str, &str)] = &[
            ("id", "id"),
            ("title", "title"),
            ("slug", "slug"),
            ("directory", "directory"),
            ("project_id", "projectID"),
            ("parent_id", "parentID"),
            ("version", "version"),
            ("agent", "agent"),
            ("model", "model"),
            ("time_created", "created"),
            ("time_updated", "updated"),
        ];
        let present: Vec<(&str, &str)> = MAP
            .iter()
            .copied()
            .filter(|(c, _)| cols.contains(*c))
            .collect();
        if !present.iter().any(|(c, _)| *c == "id") {
            return Ok(Vec::new());
        }
        let list = present
            .iter()
            .map(|(c, _)| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("SELECT {list} FROM \"{table}\"");
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            // Read into the session's fields directly, by the rules [`crate::formats::opencode::parse::parse_session`] applies to
            // the object these columns make (a key of another type than it takes is absent).
            let mut info = SessionInfo::default();
            let (mut id, mut created, mut updated) = (None, None, None);
            for (i, (col, _)) in present.iter().enumerate() {
                let cell = SessionCell::of(row, i, diags);
                match *col {
                    "id" => id = cell.text(),
                    "title" => info.title = cell.text().unwrap_or_default(),
                    "slug" => info.slug = cell.text(),
                    "directory" => info.directory = cell.text().unwrap_or_default(),
                    "project_id" => info.project_id = cell.text(),
                    "parent_id" => info.parent_id = cell.text(),
                    "version" => info.version = cell.text(),
                    "agent" => info.agent = cell.text(),
                    "model" => {
                        let parsed = cell
                            .text()
                            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
                            .unwrap_or(Value::Null);
                        info.model = parse_model_ref(Some(&parsed));
                    }
                    "time_created" => created = cell.int(),
                    "time_updated" => updated = cell.int(),
                    _ => {}
                }
            }
            match id {
                Some(id) => {
                    info.id = id;
                    info.time_created = created.unwrap_or(0);
                    info.time_updated = updated.or(created).unwrap_or(0);
                    out.push(info);
                }
                None => diags.push(
                    DiagnosticKind::MissingField,
                    format!("{table} row without id in {}", self.path.display()),
                ),
            }
        }
        Ok(out)
    }

    /// Messages of one session with their parts (unordered; [`crate::formats::opencode::derive`] orders).
    /// A row whose `data` is not JSON is skipped with a `corrupt_json` diagnostic; a part whose
    /// message is missing becomes an `orphan_part` diagnostic.
    pub fn messages(
        &self,
        session_id: &str,
        diags: &mut Diagnostics,
    ) -> Result<Vec<Message>, LoadError> {
        let mut messages = self.v1_messages(session_id, diags)?;
        if let Some(cols) = &self.tables.session_message {
            if cols.contains("data") && cols.contains("session_id") && cols.contains("id") {
                let rows = self.v2_rows(session_id, cols, diags)?;
                let have: HashSet<String> = messages.iter().map(|m| m.id.clone()).collect();
                for m in v2::messages_from_rows(session_id, rows, diags) {
                    if !have.contains(&m.id) {
                        messages.push(m);
                    }
                }
            }
        }
        Ok(messages)
    }

    fn v1_messages(
        &self,
        session_id: &str,
        diags: &mut Diagnostics,
    ) -> Result<Vec<Message>, LoadError> {
        let Some(mcols) = &self.tables.message else {
            return Ok(Vec::new());
        };
        let need_parts = &["id", "message_id", "data"][..];
        if let Some(missing) = ["id", "session_id", "data"]
            .iter()
            .find(|c| !mcols.contains(**c))
        {
            diags.push(
                DiagnosticKind::MissingField,
                format!("table message has no column {missing}; not read"),
            );
            return Ok(Vec::new());
        }
        let has_time = mcols.contains("time_created");
        let sql = format!(
            "SELECT id, data, {} FROM message WHERE session_id = ?1 ORDER BY {}",
            if has_time { "time_created" } else { "NULL" },
            if has_time { "time_created, id" } else { "id" }
        );
        let mut messages: Vec<Message> = Vec::new();
        self.each_row_parsed(
            Scan {
                sql: &sql,
                param: session_id,
                table: "message",
            },
            diags,
            |row| MessageRow {
                id: text_column(row, 0).unwrap_or_default(),
                data: bytes_column(row, 1).map(<[u8]>::to_vec),
                time: row.get::<_, Option<i64>>(2).ok().flatten(),
            },
            |r| r.id.len() + r.data.as_ref().map_or(0, Vec::len),
            |r| {
                let mut d = Diagnostics::new();
                let m = message_from_row(&r.id, session_id, r.data.as_deref(), r.time, &mut d);
                (m, d)
            },
            |(m, d), diags| {
                diags.extend(&d);
                messages.extend(m);
            },
        )?;
        let pcols = match &self.tables.part {
            Some(p) => p,
            None => {
                if !messages.is_empty() {
                    diags.push(
                        DiagnosticKind::DatabaseDamage,
                        format!(
                            "{} has no part table: the {} messages of session {session_id} are \
                             loaded without their parts (text, tool calls, usage of each step)",
                            self.path.display(),
                            messages.len()
                        ),
                    );
                }
                return Ok(messages);
            }
        };
        if let Some(missing) = need_parts.iter().find(|c| !pcols.contains(**c)) {
            diags.push(
                DiagnosticKind::MissingField,
                format!("table part has no column {missing}; not read"),
            );
            return Ok(messages);
        }
        let index: std::collections::HashMap<String, usize> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.clone(), i))
            .collect();
        // Parts by session when the column exists (indexed), else through the message table.
        // Read in storage order (see `read_parts`): an `ORDER BY` makes SQLite sort every row
        // *with its data*, spilling a large session to a temporary file.
        let sql = if pcols.contains("session_id") {
            "SELECT id, message_id, data FROM part WHERE session_id = ?1"
        } else {
            "SELECT id, message_id, data FROM part WHERE message_id IN \
             (SELECT id FROM message WHERE session_id = ?1)"
        };
        let complete = self.read_parts(sql, session_id, &index, &mut messages, diags)?;
        let mut seen: HashSet<String> = HashSet::new();
        if !complete {
            let mut add_part =
                |row: PartRow, diags: &mut Diagnostics, messages: &mut Vec<Message>| {
                    let id = text_of(row.id.as_ref()).unwrap_or_default();
                    let message_id = text_of(row.message_id.as_ref()).unwrap_or_default();
                    if !seen.insert(id.clone()) {
                        return;
                    }
                    let Some(&mi) = index.get(&message_id) else {
                        diags.push(
                            DiagnosticKind::OrphanPart,
                            format!("part {id}: its message {message_id} is missing; skipped"),
                        );
                        return;
                    };
                    if let Some(p) =
                        part_from_row(&id, &message_id, session_id, row.data.as_deref(), diags)
                    {
                        messages[mi].parts.push(p);
                    }
                };
            // The scan stopped at a damaged page: ask again message by message (another path
            // through the b-tree), so only the parts on that page are lost.
            let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
            let mut unreadable = 0usize;
            for mid in ids {
                // A message's few parts fit in one batch: read and parsed on this thread.
                let ok = self.each_row_parsed(
                    Scan {
                        sql: "SELECT id, message_id, data FROM part WHERE message_id = ?1 ORDER BY id",
                        param: &mid,
                        table: "part",
                    },
                    &mut Diagnostics::new(),
                    PartRow::of,
                    PartRow::bytes,
                    |r| r,
                    |r, diags| add_part(r, diags, &mut messages),
                )?;
                if !ok {
                    unreadable += 1;
                }
            }
            if unreadable > 0 {
                diags.push(
                    DiagnosticKind::DatabaseDamage,
                    format!(
                        "parts of {unreadable} messages of session {session_id} could not all be \
                         read; the rest loaded"
                    ),
                );
            }
        }
        Ok(messages)
    }

    /// Read the part rows of `sql` (one `?1` parameter) into `messages` (by `index`), in
    /// storage order; what reading them reports is pushed in `(message_id, id)` order, as SQLite
    /// would order the rows, so diagnostics come out as an `ORDER BY` gave them (the parts
    /// themselves are put in id order by [`crate::formats::opencode::derive`]). `false` when a damaged page
    /// ended the scan: the parts read are dropped again (the caller reads message by message), as
    /// an `ORDER BY`'s sort failed before its first row.
    fn read_parts(
        &self,
        sql: &str,
        session_id: &str,
        index: &std::collections::HashMap<String, usize>,
        messages: &mut [Message],
        diags: &mut Diagnostics,
    ) -> Result<bool, LoadError> {
        // Rows are stepped here and parsed on worker threads (see `row_pipeline`), in row order.
        let mut said: Vec<((SortKey, SortKey), Diagnostics)> = Vec::new();
        let read = self.pull(sql, [session_id], |rows| {
            row_pipeline::for_each_row(
                || rows.next().map(|r| r.map(PartRow::of)),
                PartRow::bytes,
                |r| {
                    let id = text_of(r.id.as_ref()).unwrap_or_default();
                    let message_id = text_of(r.message_id.as_ref()).unwrap_or_default();
                    let mut d = Diagnostics::new();
                    let read = match index.get(&message_id) {
                        None => {
                            d.push(
                                DiagnosticKind::OrphanPart,
                                format!("part {id}: its message {message_id} is missing; skipped"),
                            );
                            None
                        }
                        Some(&mi) => {
                            part_from_row(&id, &message_id, session_id, r.data.as_deref(), &mut d)
                                .map(|p| (mi, p))
                        }
                    };
                    // Only rows with something to report keep their sort key.
                    let said = (!d.is_empty()).then(|| {
                        let key = (
                            sort_key(Ok(r.message_id.as_ref())),
                            sort_key(Ok(r.id.as_ref())),
                        );
                        (key, d)
                    });
                    (read, said)
                },
                |(read, s)| {
                    if let Some((mi, p)) = read {
                        messages[mi].parts.push(p);
                    }
                    said.extend(s);
                },
            )
        })?;
        if let Err(e) = read {
            // As an `ORDER BY`'s sort would have failed before its first row.
            diags.push(DiagnosticKind::DatabaseDamage, self.damage("part", 0, &e));
            messages.iter_mut().for_each(|m| m.parts.clear());
            return Ok(false);
        }
        said.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, d) in &said {
            diags.extend(d);
        }
        Ok(true)
    }

    /// Every session's messages without their parts, for the listing ([`crate::formats::opencode::listing`]):
    /// one pass over `message` whose `data` is read for the few fields a listing line needs
    /// ([`super::json::listed_from_text`]). A row that read cannot take exactly (not UTF-8, JSON the
    /// lenient parser would repair, a field of an odd type) sends its session to a full load, as
    /// does a row of the v2 `session_message` table. `None` when the pass cannot be made at all
    /// (no usable message table, a damaged page): then every line is loaded in full.
    pub fn listing_rows(&self) -> Result<Option<Rows>, LoadError> {
        Ok(crate::formats::opencode::listing_scan::read_all(self)?.map(|r| r.rows))
    }

    /// The sessions of the v2 `session_message` table (the listing loads them in full); `None`
    /// when the listing's pass cannot be made.
    pub fn listing_v2_sessions(&self) -> Result<Option<Vec<String>>, LoadError> {
        let mut v2 = Vec::new();
        if let Some(cols) = &self.tables.session_message {
            if !cols.contains("session_id") {
                return Ok(None);
            }
            let complete =
                self.scan("SELECT DISTINCT session_id FROM session_message", [], |r| {
                    v2.extend(text_column(r, 0))
                })?;
            if !complete {
                return Ok(None);
            }
        }
        Ok(Some(v2))
    }

    /// One pass over the `message` rows (of session `only`, if given) as the listing reads them:
    /// `read` pulls them from [`ListingRows`]. `None` when the pass cannot be made (a column
    /// missing) or a damaged page ended it early; what `read` made of the rows before is then
    /// dropped.
    pub fn listing_pass<O>(
        &self,
        only: Option<&str>,
        read: impl FnOnce(&mut ListingRows<'_, '_>) -> rusqlite::Result<O>,
    ) -> Result<Option<O>, LoadError> {
        let Some(mcols) = &self.tables.message else {
            return read(&mut ListingRows { rows: None })
                .map(Some)
                .map_err(|e| self.err(e));
        };
        if ["id", "session_id", "data"]
            .iter()
            .any(|c| !mcols.contains(*c))
        {
            return Ok(None);
        }
        let time = if mcols.contains("time_created") {
            "time_created"
        } else {
            "NULL"
        };
        // Rows without a text session id are not read: no session a listing asks for has them.
        let only_one = if only.is_some() {
            " AND session_id = ?1"
        } else {
            ""
        };
        let sql = format!(
            "SELECT session_id, id, {time}, data FROM message \
             WHERE typeof(session_id) = 'text'{only_one}"
        );
        // Map the file for this one pass (no copy of each page through `pread`); loads keep the
        // default, so a loaded session's resident memory does not grow by the file's pages.
        let _ = self.conn.pragma_update(None, "mmap_size", 1i64 << 30);
        let params: Vec<&str> = only.into_iter().collect();
        let pass = self.pull(&sql, rusqlite::params_from_iter(params), |rows| {
            read(&mut ListingRows { rows: Some(rows) })
        });
        let _ = self.conn.pragma_update(None, "mmap_size", 0);
        Ok(pass?.ok())
    }

    /// Run `sql` and call `each` per row; `false` when a damaged page ended the scan early.
    fn scan(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        mut each: impl FnMut(&Row<'_>),
    ) -> Result<bool, LoadError> {
        let scanned = self.pull(sql, params, |rows| {
            while let Some(r) = rows.next()? {
                each(r);
            }
            Ok(())
        })?;
        Ok(scanned.is_ok())
    }

    /// Run `sql` and give its rows to `read`, which pulls them one by one (`Rows::next`).
    /// `Ok(Err(e))` when damage (a corrupt page, an I/O error mid-scan) stopped the statement,
    /// after `read` took every row before it; any other error is one of the query.
    fn pull<O>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        read: impl FnOnce(&mut rusqlite::Rows<'_>) -> rusqlite::Result<O>,
    ) -> Result<rusqlite::Result<O>, LoadError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        match stmt.query(params).and_then(|mut rows| read(&mut rows)) {
            Ok(o) => Ok(Ok(o)),
            Err(e) if is_damage(&e) => Ok(Err(e)),
            Err(e) => Err(self.err(e)),
        }
    }

    /// Run the scan's query and hand each row to `sink` in row order: `own` takes what the row's
    /// `parse` needs off the statement, `parse` runs on a worker thread ([`row_pipeline`]; on
    /// this one when the rows fit in one batch). A row that cannot be read (a corrupt page, an
    /// I/O error mid-scan) ends the scan with a `database_damage` diagnostic naming the scan's
    /// table and the cause; returns whether the scan was complete. Only a statement that cannot
    /// even start is an error.
    fn each_row_parsed<T: Send, R: Send>(
        &self,
        Scan { sql, param, table }: Scan<'_>,
        diags: &mut Diagnostics,
        own: impl Fn(&Row<'_>) -> T,
        weight: impl Fn(&T) -> usize,
        parse: impl Fn(T) -> R + Sync,
        mut sink: impl FnMut(R, &mut Diagnostics),
    ) -> Result<bool, LoadError> {
        let mut n = 0usize;
        let read = self.pull(sql, [param], |rows| {
            row_pipeline::for_each_row(
                || rows.next().map(|r| r.map(&own)),
                weight,
                parse,
                |r| {
                    sink(r, diags);
                    n += 1;
                },
            )
        })?;
        match read {
            Ok(()) => Ok(true),
            Err(e) => {
                diags.push(DiagnosticKind::DatabaseDamage, self.damage(table, n, &e));
                Ok(false)
            }
        }
    }

    fn damage(&self, table: &str, read: usize, e: &rusqlite::Error) -> String {
        format!(
            "table {table} of {}: {e} after {read} rows; the rows before loaded, the rest were \
             read another way where possible",
            self.path.display()
        )
    }

    fn v2_rows(
        &self,
        session_id: &str,
        cols: &HashSet<String>,
        diags: &mut Diagnostics,
    ) -> Result<Vec<v2::Row>, LoadError> {
        let pick = |c: &str| {
            if cols.contains(c) {
                c.to_owned()
            } else {
                "NULL".into()
            }
        };
        let sql =
            format!(
            "SELECT id, {}, {}, {}, data FROM session_message WHERE session_id = ?1 ORDER BY {}",
            pick("type"),
            pick("seq"),
            pick("time_created"),
            if cols.contains("seq") { "seq, id" } else { "id" }
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query([session_id]).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let id = text_column(row, 0).unwrap_or_default();
            let Some(data) = data_object(
                bytes_column(row, 4),
                &format!("session_message {id}"),
                diags,
            ) else {
                continue;
            };
            out.push(v2::Row {
                id,
                kind: text_column(row, 1).unwrap_or_default(),
                time_created: row.get::<_, Option<i64>>(3).ok().flatten(),
                data,
            });
        }
        Ok(out)
    }

    /// Messages whose session row is missing (a session deleted while its messages stayed):
    /// no session lists them, so they are reported as `orphan_message` here.
    pub fn orphan_messages(&self, diags: &mut Diagnostics) -> Result<(), LoadError> {
        self.report_orphans(&self.orphan_counts()?, diags);
        Ok(())
    }

    /// The sessions [`Database::orphan_messages`] reports, with their message counts.
    pub fn orphan_counts(&self) -> Result<Vec<(String, i64)>, LoadError> {
        let (Some(m), Some(s)) = (&self.tables.message, &self.tables.session) else {
            return Ok(Vec::new());
        };
        if !m.contains("session_id") || !s.contains("id") {
            return Ok(Vec::new());
        }
        let v2 = if self.tables.session_v2.is_some() {
            " AND session_id NOT IN (SELECT id FROM session_v2)"
        } else {
            ""
        };
        // Counted per session first (the covering index, no lookup per row), then each session
        // looked up once.
        let sql = format!(
            "SELECT session_id, n FROM (SELECT session_id, count(*) AS n FROM message \
             GROUP BY session_id) WHERE session_id NOT IN (SELECT id FROM session){v2}"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            out.push((
                text_column(row, 0).unwrap_or_default(),
                row.get(1).unwrap_or(0),
            ));
        }
        Ok(out)
    }

    /// One `orphan_message` diagnostic per session of `counts` (see [`Database::orphan_counts`]).
    pub fn report_orphans(&self, counts: &[(String, i64)], diags: &mut Diagnostics) {
        for (sid, n) in counts {
            diags.push_n(
                DiagnosticKind::OrphanMessage,
                (*n).max(0) as usize,
                format!(
                    "{n} messages of session {sid}, which has no session row in {}; not listed",
                    self.path.display()
                ),
            );
        }
    }

    /// `SELECT count(*) FROM message WHERE session_id = ?` and the same for parts: what a direct
    /// SQL count says (tests compare it with the loaded trace).
    pub fn raw_counts(&self, session_id: &str) -> Result<(usize, usize), LoadError> {
        let count = |sql: &str| -> Result<usize, LoadError> {
            self.conn
                .query_row(sql, [session_id], |r| r.get::<_, i64>(0))
                .map(|n| n.max(0) as usize)
                .map_err(|e| self.err(e))
        };
        Ok((
            count("SELECT count(*) FROM message WHERE session_id = ?1")?,
            count("SELECT count(*) FROM part WHERE session_id = ?1")?,
        ))
    }

    fn err(&self, e: rusqlite::Error) -> LoadError {
        db_err(&self.path, e)
    }
}

/// Damage to the file rather than a mistake in the query: what a scan reports and goes past.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            rusqlite::ErrorCode::DatabaseCorrupt
                | rusqlite::ErrorCode::NotADatabase
                | rusqlite::ErrorCode::SystemIoFailure
                | rusqlite::ErrorCode::CannotOpen
        )
    )
}

fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// One query of [`Database::each_row_parsed`]: its SQL with one `?1` parameter, and the table a
/// damage report names.
struct Scan<'a> {
    sql: &'a str,
    param: &'a str,
    table: &'a str,
}

/// Which of our tables exist and their columns. Reading the schema is also the first real read
/// of the file, so a broken database fails here.
fn probe(conn: &Connection) -> rusqlite::Result<Tables> {
    let mut names = HashSet::new();
    {
        let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            names.insert(r.get::<_, String>(0)?);
        }
    }
    let cols = |t: &str| -> rusqlite::Result<Option<HashSet<String>>> {
        if !names.contains(t) {
            return Ok(None);
        }
        let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{t}\")"))?;
        let set = stmt
            .query_map([], |r| r.get::<_, String>(1))?
            .collect::<rusqlite::Result<HashSet<_>>>()?;
        Ok(Some(set))
    };
    let tables = Tables {
        session: cols("session")?,
        message: cols("message")?,
        part: cols("part")?,
        session_v2: cols("session_v2")?,
        session_message: cols("session_message")?,
    };
    // Touch the message table's first page so a database cut after its schema fails now (one
    // page: `count(*)` would read the whole of an index on every open).
    if tables.message.is_some() {
        conn.query_row(
            "SELECT count(*) FROM (SELECT 1 FROM message LIMIT 1)",
            [],
            |_| Ok(()),
        )?;
    }
    Ok(tables)
}

fn text_column(row: &Row<'_>, i: usize) -> Option<String> {
    text_of(row.get_ref(i).ok()?)
}

/// A column's value as text ([`text_column`]).
fn text_of(v: ValueRef<'_>) -> Option<String> {
    text_cow(v).map(Cow::into_owned)
}

/// [`text_of`], borrowed from the row where the text is UTF-8.
fn text_cow(v: ValueRef<'_>) -> Option<Cow<'_, str>> {
    match v {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t)),
        ValueRef::Integer(n) => Some(Cow::Owned(n.to_string())),
        ValueRef::Real(x) => Some(Cow::Owned(x.to_string())),
        ValueRef::Null => None,
    }
}

/// A session column as [`crate::formats::opencode::parse::parse_session`] would see it in a JSON object.
enum SessionCell {
    Text(String),
    Int(i64),
    Real(f64),
    Null,
}

impl SessionCell {
    fn of(row: &Row<'_>, i: usize, diags: &mut Diagnostics) -> SessionCell {
        match row.get_ref(i) {
            Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => {
                SessionCell::Text(utf8(t, "column", diags).into_owned())
            }
            Ok(ValueRef::Integer(n)) => SessionCell::Int(n),
            Ok(ValueRef::Real(x)) if x.is_finite() => SessionCell::Real(x),
            Ok(ValueRef::Real(_)) | Ok(ValueRef::Null) | Err(_) => SessionCell::Null,
        }
    }

    /// A string value.
    fn text(self) -> Option<String> {
        match self {
            SessionCell::Text(s) => Some(s),
            _ => None,
        }
    }

    /// A number, a real one cut to an integer.
    fn int(self) -> Option<i64> {
        match self {
            SessionCell::Int(n) => Some(n),
            SessionCell::Real(x) => Some(x as i64),
            _ => None,
        }
    }
}

fn utf8<'b>(bytes: &'b [u8], what: &str, diags: &mut Diagnostics) -> Cow<'b, str> {
    crate::trace::input::lossy_utf8(bytes, &what, diags)
}

/// A text or blob column's bytes (`None` for NULL, numbers and unreadable cells).
fn bytes_column<'r>(row: &'r Row<'_>, i: usize) -> Option<&'r [u8]> {
    match row.get_ref(i).ok()? {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(t),
        _ => None,
    }
}

/// The `message` rows of a [`Database::listing_pass`], pulled one at a time (the statement is
/// stepped on the thread that pulls; what is read elsewhere is copied out of the row).
pub struct ListingRows<'a, 's> {
    /// `None`: the database has no message table.
    rows: Option<&'a mut rusqlite::Rows<'s>>,
}

impl ListingRows<'_, '_> {
    /// The next row (`None`: no more). An error is the statement's: a damaged page ends the pass.
    #[allow(clippy::should_implement_trait)] // a lending iterator: the row borrows the statement
    pub fn next(&mut self) -> rusqlite::Result<Option<ListingRow<'_>>> {
        match self.rows.as_deref_mut() {
            Some(rows) => Ok(rows.next()?.map(ListingRow::of)),
            None => Ok(None),
        }
    }
}

/// One `message` row as the listing reads it, borrowed from the statement: the ids as text, the
/// time when an integer, `data` when text.
#[derive(Debug, Clone, PartialEq)]
pub struct ListingRow<'r> {
    pub session_id: Cow<'r, str>,
    pub id: Cow<'r, str>,
    pub time: Option<i64>,
    pub data: Option<&'r [u8]>,
}

impl<'r> ListingRow<'r> {
    /// `SELECT session_id, id, time_created, data` off the statement (whose session ids are
    /// text: the pass selects no other).
    fn of(row: &'r Row<'_>) -> ListingRow<'r> {
        ListingRow {
            session_id: row.get_ref(0).ok().and_then(text_cow).unwrap_or_default(),
            id: row.get_ref(1).ok().and_then(text_cow).unwrap_or_default(),
            time: row.get::<_, Option<i64>>(2).ok().flatten(),
            data: match row.get_ref(3) {
                Ok(ValueRef::Text(data)) => Some(data),
                _ => None,
            },
        }
    }
}

/// A message row as it crosses to a parsing worker.
struct MessageRow {
    id: String,
    data: Option<Vec<u8>>,
    time: Option<i64>,
}

/// A part row as it crosses to a parsing worker.
struct PartRow {
    id: Cell,
    message_id: Cell,
    data: Option<Vec<u8>>,
}

impl PartRow {
    /// `SELECT id, message_id, data` off the statement.
    fn of(row: &Row<'_>) -> PartRow {
        PartRow {
            id: Cell::of(row.get_ref(0)),
            message_id: Cell::of(row.get_ref(1)),
            data: bytes_column(row, 2).map(<[u8]>::to_vec),
        }
    }

    /// Its size, for the batches of [`row_pipeline`].
    fn bytes(&self) -> usize {
        self.id.len() + self.message_id.len() + self.data.as_ref().map_or(0, Vec::len)
    }
}

/// A column value as SQLite's `ORDER BY` orders it (BINARY collation): NULL, then numbers by
/// value, then text, then blobs, each by bytes.
enum SortKey {
    Null,
    Number(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl SortKey {
    fn rank(&self) -> u8 {
        match self {
            SortKey::Null => 0,
            SortKey::Number(_) => 1,
            SortKey::Text(_) => 2,
            SortKey::Blob(_) => 3,
        }
    }
}

impl Ord for SortKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self, other) {
            (SortKey::Number(a), SortKey::Number(b)) => a.total_cmp(b),
            (SortKey::Text(a), SortKey::Text(b)) | (SortKey::Blob(a), SortKey::Blob(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for SortKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for SortKey {}

fn sort_key(v: rusqlite::Result<ValueRef<'_>>) -> SortKey {
    match v {
        Ok(ValueRef::Integer(n)) => SortKey::Number(n as f64),
        Ok(ValueRef::Real(x)) => SortKey::Number(x),
        Ok(ValueRef::Text(t)) => SortKey::Text(t.to_vec()),
        Ok(ValueRef::Blob(b)) => SortKey::Blob(b.to_vec()),
        Ok(ValueRef::Null) | Err(_) => SortKey::Null,
    }
}

/// A `data` column as a JSON object (repaired when damaged, see [`crate::trace::lenient`]);
/// `None` with a `corrupt_json` diagnostic when it cannot be read.
pub fn data_object(
    data: Option<&[u8]>,
    what: &str,
    diags: &mut Diagnostics,
) -> Option<Map<String, Value>> {
    let Some(bytes) = data else {
        diags.push(
            DiagnosticKind::CorruptJson,
            format!("{what}: no data; skipped"),
        );
        return None;
    };
    let text = utf8(bytes, what, diags);
    match crate::trace::lenient::parse(&text) {
        Ok((Value::Object(o), repairs)) => {
            if !repairs.is_empty() {
                diags.push(
                    DiagnosticKind::RepairedJson,
                    format!("{what}: {}", crate::trace::lenient::describe(&repairs)),
                );
            }
            Some(o)
        }
        Ok((other, _)) => {
            diags.push(
                DiagnosticKind::CorruptJson,
                format!(
                    "{what}: data is not an object ({}); skipped",
                    crate::text::clip_chars(&other.to_string(), 60)
                ),
            );
            None
        }
        Err(e) => {
            diags.push(
                DiagnosticKind::CorruptJson,
                format!("{what}: data is not JSON ({e}); skipped"),
            );
            None
        }
    }
}

/// One `message` row (`id`, its session, the `data` column, the `time_created` column) as a
/// message without parts: the columns win over the JSON's ids, the time column fills in a
/// missing `time.created`. `None` (with a diagnostic) when it cannot be read.
pub fn message_from_row(
    id: &str,
    session_id: &str,
    data: Option<&[u8]>,
    time_created: Option<i64>,
    diags: &mut Diagnostics,
) -> Option<Message> {
    let row = json::MessageRow {
        id,
        session_id,
        time_created,
    };
    if let Some(text) = data.and_then(|d| std::str::from_utf8(d).ok()) {
        if let Ok(m) = json::message_from_text(text, &row, diags) {
            return m;
        }
    }
    // Text serde_json rejects (or not UTF-8): repaired and reported, then read the same way.
    let obj = data_object(data, &format!("message {id}"), diags)?;
    json::message_from_value(&Value::Object(obj), Some(&row), diags)
}

/// One `part` row (`id`, `message_id`, its session, the `data` column) as a part.
pub fn part_from_row(
    id: &str,
    message_id: &str,
    session_id: &str,
    data: Option<&[u8]>,
    diags: &mut Diagnostics,
) -> Option<Part> {
    let row = json::PartRow {
        id,
        message_id,
        session_id,
    };
    if let Some(text) = data.and_then(|d| std::str::from_utf8(d).ok()) {
        if let Ok(p) = json::part_from_text(text, &row, diags) {
            return p;
        }
    }
    // Text serde_json rejects (or not UTF-8): repaired and reported, then read the same way.
    let obj = data_object(data, &format!("part {id}"), diags)?;
    json::part_from_value(&Value::Object(obj), Some(&row), diags)
}

/// Parts of a message rebuilt from rows (used by the v2 reader to share part parsing).
pub(crate) fn part_from_object(
    mut obj: Map<String, Value>,
    id: &str,
    message_id: &str,
    diags: &mut Diagnostics,
) -> Option<Part> {
    // The ids the database keeps in columns: an unknown part type's raw JSON keeps them.
    obj.insert("id".into(), Value::String(id.to_owned()));
    obj.insert("messageID".into(), Value::String(message_id.to_owned()));
    parse_part(&Value::Object(obj), diags)
}

//! Magic Context's `context.db` (read-only): the `compartments` of a session become episodes
//! whose tiers p1..p4 are rendered exactly as Magic Context injects them (`render`), with what
//! its decay renderer reads besides (legacy flag, importance including v98 re-scores, the m[0]
//! mutation log). Any schema from v17 (v0.21.0, no tiers) to v98 is read by probing columns:
//!
//! - no `legacy` column (a pre-v22 database): every row is legacy, as Magic Context's v22
//!   migration marks it on first open; p1..p4 are NULL and importance is 50;
//! - `importance` is used as stored (an integer; a REAL is kept, a non-number becomes NaN, which
//!   archives the row; NULL is 50), never rescaled;
//! - v98 re-scores: the latest score selection of each compartment applies when its revision
//!   has a new importance and was made against the row as it is now (its source identity);
//! - `rebase_status` (v88) is read for diagnostics only: the renderer never reads it.
//!
//! Rows whose title, content and p1..p4 are all empty are dropped before anything else, as
//! current Magic Context does (0.38 rendered them as bare headings).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::Connection;

pub mod estimate;
pub mod render;
pub mod rescore;

#[derive(Debug, thiserror::Error)]
pub enum MagicContextError {
    #[error("cannot open Magic Context database {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error("cannot read compartments from {path}: {reason}")]
    Query { path: PathBuf, reason: String },
}

/// One `compartments` row.
#[derive(Debug, Clone, PartialEq)]
pub struct Compartment {
    /// Row id (rows of very old schemas may lack one).
    pub id: Option<i64>,
    pub sequence: i64,
    /// Raw ordinals (1-based message positions in the session, as the historian numbers them).
    pub start_message: i64,
    pub end_message: i64,
    /// Message ids (empty in rows written before they existed).
    pub start_message_id: String,
    pub end_message_id: String,
    pub title: String,
    /// p1..p4 as stored: `None` = NULL (falls back to a denser tier), `Some("")` = empty (the
    /// heading alone, e.g. a self-closed `<p4/>`).
    pub p: [Option<String>; 4],
    pub content: String,
    /// The importance the renderer uses: the stored one, or a v98 re-score in force.
    pub importance: f64,
    /// The historian's stored importance.
    pub base_importance: f64,
    pub episode_type: Option<String>,
    /// The raw `legacy` column: 1 = legacy (every row of a pre-v22 database).
    pub legacy: i64,
    pub created_at: Option<i64>,
    /// v92 block indices (only for the re-score identity).
    pub start_block_index: Option<i64>,
    pub end_block_index: Option<i64>,
    /// v88 `rebase_status` (`ok`, `unresolved`, …), when the column exists.
    pub rebase_status: Option<String>,
}

impl Compartment {
    /// p1 is non-empty: the row has tiers.
    pub fn is_tiered(&self) -> bool {
        self.p[0].as_deref().is_some_and(|s| !s.is_empty())
    }
    /// Kept out of the curve index and the pressure, at a fixed initial tier (`legacy = 1`).
    pub fn is_curve_legacy(&self) -> bool {
        self.legacy == 1
    }
    /// The tier a legacy row enters at (3 with a `U:` line, else 4).
    pub fn legacy_tier(&self) -> Option<u8> {
        self.is_curve_legacy()
            .then(|| render::legacy_tier(&self.content))
    }
    fn is_empty(&self) -> bool {
        self.title.is_empty()
            && self.content.is_empty()
            && self.p.iter().all(|p| p.as_deref().unwrap_or("").is_empty())
    }
    /// The row as the renderer reads it, with the heading's dates if known.
    pub fn row_text<'a>(&'a self, dates: Option<(&'a str, &'a str)>) -> render::RowText<'a> {
        render::RowText {
            start_message: self.start_message,
            end_message: self.end_message,
            dates,
            title: &self.title,
            content: &self.content,
            p: [
                self.p[0].as_deref(),
                self.p[1].as_deref(),
                self.p[2].as_deref(),
                self.p[3].as_deref(),
            ],
            legacy: self.legacy,
        }
    }
}

/// Everything read for one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionRows {
    /// The compartments in sequence order (all-empty rows dropped).
    pub rows: Vec<Compartment>,
    pub meta: SessionMeta,
}

/// What was read for one session besides its rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionMeta {
    /// Highest `schema_migrations.version` below 10,000 (the fork lane), when recorded.
    pub schema_version: Option<i64>,
    /// `queued_at` (ms) of the session's `m0_mutation_log` rows (v22+), in id order: each one
    /// forces a fold (compartments deleted, merged, re-bounded or upgraded).
    pub mutations: Vec<i64>,
    /// Rows whose importance is a v98 re-score.
    pub rescored: usize,
    /// Rows dropped because every text field is empty.
    pub dropped_empty: usize,
    /// What a reader should know (legacy schema, unresolved rebases, re-scores).
    pub notes: Vec<String>,
}

/// Magic Context's default database: `$XDG_DATA_HOME/cortexkit/magic-context/context.db`.
pub fn default_db_path() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy().ok().map(|s| {
        s.data_dir()
            .join("cortexkit")
            .join("magic-context")
            .join("context.db")
    })
}

/// The compartments of `session_id`, in sequence order, without rows whose text fields are all
/// empty.
pub fn read_compartments(
    db: &Path,
    session_id: &str,
) -> Result<Vec<Compartment>, MagicContextError> {
    read_session(db, session_id).map(|s| s.rows)
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<BTreeSet<String>> {
    let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let rows = st.query_map([table], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// `Number(value)` as Magic Context reads the importance column.
fn number(v: Value) -> f64 {
    match v {
        Value::Null => 50.0,
        Value::Integer(i) => i as f64,
        Value::Real(f) => f,
        Value::Text(t) => {
            let t = render::js_trim(&t);
            if t.is_empty() {
                0.0
            } else {
                t.parse().unwrap_or(f64::NAN)
            }
        }
        Value::Blob(_) => f64::NAN,
    }
}

/// Everything the decay renderer reads for `session_id`.
pub fn read_session(db: &Path, session_id: &str) -> Result<SessionRows, MagicContextError> {
    // By the loader's rules: in place where that creates nothing beside Magic Context's file
    // (`immutable=1` after a clean exit, `mode=ro` with its `-wal` and `-shm`), else from a
    // temporary copy (a `-wal` without its `-shm`, a read-only dir), kept while reading.
    // Declared first, so dropped after the connection.
    let mut _copy = None;
    let conn = match crate::trace::sqlite::open_in_place(db) {
        Some(c) => c,
        None => {
            let (c, dir) =
                crate::trace::sqlite::open_copy(db).map_err(|e| MagicContextError::Open {
                    path: db.to_owned(),
                    reason: e.to_string(),
                })?;
            _copy = Some(dir);
            c
        }
    };
    let q = |e: rusqlite::Error| MagicContextError::Query {
        path: db.to_owned(),
        reason: e.to_string(),
    };
    let cols = columns(&conn, "compartments").map_err(q)?;
    if cols.is_empty() {
        return Err(MagicContextError::Query {
            path: db.to_owned(),
            reason: "no compartments table".to_owned(),
        });
    }
    let mut out = SessionRows {
        rows: Vec::new(),
        meta: SessionMeta {
            schema_version: conn
                .query_row(
                    "SELECT MAX(version) FROM schema_migrations WHERE version < 10000",
                    [],
                    |r| r.get::<_, Option<i64>>(0),
                )
                .ok()
                .flatten(),
            ..SessionMeta::default()
        },
    };
    let has_legacy = cols.contains("legacy");
    if !has_legacy {
        out.meta.notes.push(
            "magic-context: the database predates v22 (no legacy column): every row is legacy, as Magic Context's v22 migration marks it"
                .to_owned(),
        );
    }
    let col = |name: &str, fallback: &str| {
        if cols.contains(name) {
            name.to_owned()
        } else {
            format!("{fallback} AS {name}")
        }
    };
    let sql = format!(
        "SELECT {}, sequence, start_message, end_message, {}, {}, title, content, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {} \
         FROM compartments WHERE session_id = ?1 ORDER BY sequence",
        col("id", "NULL"),
        col("start_message_id", "''"),
        col("end_message_id", "''"),
        col("p1", "NULL"),
        col("p2", "NULL"),
        col("p3", "NULL"),
        col("p4", "NULL"),
        col("importance", "50"),
        col("episode_type", "NULL"),
        col("legacy", "1"),
        col("created_at", "NULL"),
        col("start_block_index", "NULL"),
        col("end_block_index", "NULL"),
        col("rebase_status", "NULL"),
    );
    let text = |v: Value| match v {
        Value::Text(s) => Some(s),
        _ => None,
    };
    let mut st = conn.prepare(&sql).map_err(q)?;
    let rows = st
        .query_map([session_id], |r| {
            let importance = number(r.get::<_, Value>(12)?);
            Ok(Compartment {
                id: r.get(0)?,
                sequence: r.get(1)?,
                start_message: r.get(2)?,
                end_message: r.get(3)?,
                start_message_id: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                end_message_id: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                title: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                content: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
                // Non-string tier values read as NULL (Magic Context's rowToM0Compartment).
                p: [
                    text(r.get(8)?),
                    text(r.get(9)?),
                    text(r.get(10)?),
                    text(r.get(11)?),
                ],
                importance,
                base_importance: importance,
                episode_type: r.get::<_, Option<String>>(13)?,
                legacy: r.get::<_, Option<i64>>(14)?.unwrap_or(0),
                created_at: r.get::<_, Option<i64>>(15).unwrap_or(None),
                start_block_index: r.get::<_, Option<i64>>(16).unwrap_or(None),
                end_block_index: r.get::<_, Option<i64>>(17).unwrap_or(None),
                rebase_status: r.get::<_, Option<String>>(18).unwrap_or(None),
            })
        })
        .map_err(q)?;
    for r in rows {
        let c = r.map_err(q)?;
        if c.is_empty() {
            out.meta.dropped_empty += 1;
        } else {
            out.rows.push(c);
        }
    }
    let unresolved = out
        .rows
        .iter()
        .filter(|c| c.rebase_status.as_deref().is_some_and(|s| s != "ok"))
        .count();
    if unresolved > 0 {
        out.meta.notes.push(format!(
            "magic-context: {unresolved} compartment(s) with rebase_status other than ok (still rendered; only ctx_expand refuses their ranges)"
        ));
    }
    out.meta.rescored = rescore::apply(&conn, session_id, &mut out.rows).map_err(q)?;
    if out.meta.rescored > 0 {
        out.meta.notes.push(format!(
            "magic-context: {} compartment(s) use a v98 re-scored importance",
            out.meta.rescored
        ));
    }
    if !columns(&conn, "m0_mutation_log").map_err(q)?.is_empty() {
        let mut st = conn
            .prepare("SELECT queued_at FROM m0_mutation_log WHERE session_id = ?1 ORDER BY id")
            .map_err(q)?;
        let times = st
            .query_map([session_id], |r| r.get::<_, i64>(0))
            .map_err(q)?;
        for t in times {
            out.meta.mutations.push(t.map_err(q)?);
        }
    }
    Ok(out)
}

/// Resolve a compartment's range to message indices of the trace: by id when the row has ids,
/// else by 1-based ordinal. `None` when the range does not fit the trace.
pub fn resolve_range(c: &Compartment, trace: &crate::trace::Trace) -> Option<(usize, usize)> {
    let n = trace.messages.len();
    let by_id = |id: &str| {
        if id.is_empty() {
            None
        } else {
            trace.message_index(id)
        }
    };
    let by_ord = |o: i64| {
        usize::try_from(o)
            .ok()
            .and_then(|o| o.checked_sub(1))
            .filter(|&i| i < n)
    };
    let a = by_id(&c.start_message_id).or_else(|| by_ord(c.start_message))?;
    let b = by_id(&c.end_message_id).or_else(|| by_ord(c.end_message))?;
    (a <= b).then_some((a, b))
}

/// The heading dates of a compartment (`YYYY-MM-DD` of its first and last message, UTC), when
/// both message ids resolve in the trace. Magic Context formats them in its machine's time
/// zone, which a recording does not keep.
pub fn heading_dates(
    c: &Compartment,
    trace: &crate::trace::Trace,
    offset_minutes: i32,
) -> Option<(String, String)> {
    let date = |id: &str| {
        if id.is_empty() {
            return None;
        }
        let m = trace.message(id)?;
        date_of(m.time_created, offset_minutes)
    };
    Some((date(&c.start_message_id)?, date(&c.end_message_id)?))
}

/// `YYYY-MM-DD` of a time in ms since the epoch, at a UTC offset in minutes.
pub fn date_of(ms: i64, offset_minutes: i32) -> Option<String> {
    let offset = chrono::FixedOffset::east_opt(offset_minutes.checked_mul(60)?)?;
    let t = chrono::DateTime::from_timestamp_millis(ms)?.with_timezone(&offset);
    Some(t.format("%Y-%m-%d").to_string())
}

/// The dates in compartment headings. Magic Context writes them when `temporal_awareness` is on
/// (its default), in its machine's local time zone, which a recording does not keep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HeadingDates {
    /// In UTC (the default).
    #[default]
    Utc,
    /// At a fixed offset from UTC, in minutes.
    Offset(i32),
    /// No dates (`temporal_awareness` off).
    Off,
}

impl HeadingDates {
    /// The offset in minutes, or `None` without dates.
    pub fn offset_minutes(&self) -> Option<i32> {
        match self {
            HeadingDates::Utc => Some(0),
            HeadingDates::Offset(m) => Some(*m),
            HeadingDates::Off => None,
        }
    }
}

impl std::str::FromStr for HeadingDates {
    type Err = String;
    /// `utc`, `off` / `none`, or an offset `+HH:MM` / `-HH:MM`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("expected utc, off or an offset like +02:00, got {s:?}");
        match s.to_ascii_lowercase().as_str() {
            "utc" | "z" => return Ok(HeadingDates::Utc),
            "off" | "none" => return Ok(HeadingDates::Off),
            _ => {}
        }
        let (sign, rest) = match s.as_bytes().first() {
            Some(b'+') => (1, &s[1..]),
            Some(b'-') => (-1, &s[1..]),
            _ => return Err(bad()),
        };
        let (h, m) = rest.split_once(':').ok_or_else(bad)?;
        let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if !(0..=14).contains(&h) || !(0..60).contains(&m) {
            return Err(bad());
        }
        Ok(HeadingDates::Offset(sign * (h * 60 + m)))
    }
}

/// What the replay's `decay` policy needs of the compartments behind a session's episodes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MagicContextSession {
    /// The database read.
    pub db: PathBuf,
    pub schema_version: Option<i64>,
    /// Per episode (by index): the compartment it is, if any.
    pub episodes: Vec<Option<CompartmentRef>>,
    /// `queued_at` of the session's m[0] mutations (each forces a fold).
    pub mutations: Vec<i64>,
}

/// The parts of a compartment row the fold reads.
#[derive(Debug, Clone, PartialEq)]
pub struct CompartmentRef {
    pub sequence: i64,
    /// `Some(3 | 4)` for a legacy row: its fixed initial tier, outside the curve.
    pub legacy_tier: Option<u8>,
    /// The importance the renderer uses (exact; v98 re-score applied).
    pub importance: f64,
}

//! Magic Context's `compartments` table (reference §1.9): its four tiers p1..p4 become external
//! representations full..anchor, its ranges become episode boundaries, its `importance` is kept
//! for the decay policy. The database is opened read-only.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

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
    pub sequence: i64,
    /// Raw ordinals (1-based message positions in the session, as the historian numbers them).
    pub start_message: i64,
    pub end_message: i64,
    /// Message ids (empty in rows written before they existed).
    pub start_message_id: String,
    pub end_message_id: String,
    pub title: String,
    /// p1..p4; `None` or empty when absent (p4 may be a self-closed `<p4/>` = empty).
    pub p: [Option<String>; 4],
    pub content: String,
    pub importance: i64,
    pub episode_type: Option<String>,
    pub legacy: bool,
}

impl Compartment {
    /// A row is tiered iff p1 is non-empty (reference §1.9).
    pub fn is_tiered(&self) -> bool {
        self.p[0].as_deref().is_some_and(|s| !s.is_empty())
    }
    fn is_empty(&self) -> bool {
        self.title.is_empty()
            && self.content.is_empty()
            && self.p.iter().all(|p| p.as_deref().unwrap_or("").is_empty())
    }
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
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| MagicContextError::Open {
        path: db.to_owned(),
        reason: e.to_string(),
    })?;
    let q = |e: rusqlite::Error| MagicContextError::Query {
        path: db.to_owned(),
        reason: e.to_string(),
    };
    // Older schemas lack the id and tier columns; select what exists.
    let mut cols = std::collections::BTreeSet::new();
    {
        let mut st = conn
            .prepare("SELECT name FROM pragma_table_info('compartments')")
            .map_err(q)?;
        let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(q)?;
        for r in rows {
            cols.insert(r.map_err(q)?);
        }
    }
    if cols.is_empty() {
        return Err(MagicContextError::Query {
            path: db.to_owned(),
            reason: "no compartments table".to_owned(),
        });
    }
    let col = |name: &str, fallback: &str| {
        if cols.contains(name) {
            name.to_owned()
        } else {
            format!("{fallback} AS {name}")
        }
    };
    let sql = format!(
        "SELECT sequence, start_message, end_message, {}, {}, title, content, {}, {}, {}, {}, {}, {}, {} \
         FROM compartments WHERE session_id = ?1 ORDER BY sequence",
        col("start_message_id", "''"),
        col("end_message_id", "''"),
        col("p1", "NULL"),
        col("p2", "NULL"),
        col("p3", "NULL"),
        col("p4", "NULL"),
        col("importance", "50"),
        col("episode_type", "NULL"),
        col("legacy", "0"),
    );
    let mut st = conn.prepare(&sql).map_err(q)?;
    let rows = st
        .query_map([session_id], |r| {
            Ok(Compartment {
                sequence: r.get(0)?,
                start_message: r.get(1)?,
                end_message: r.get(2)?,
                start_message_id: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                end_message_id: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                title: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                content: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                p: [r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?],
                importance: r.get::<_, Option<i64>>(11)?.unwrap_or(50),
                episode_type: r.get(12)?,
                legacy: r.get::<_, Option<i64>>(13)?.unwrap_or(0) != 0,
            })
        })
        .map_err(q)?;
    let mut out = Vec::new();
    for r in rows {
        let c = r.map_err(q)?;
        if !c.is_empty() {
            out.push(c);
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

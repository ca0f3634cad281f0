//! v98 compartment re-scoring (Magic Context's score projection, read from source): a re-scored
//! importance lives beside the row, never in `compartments.importance`. For each compartment
//! the latest score selection applies when its revision carries a new importance and was made
//! against the row as it is now: the revision's `source_identity` must equal the row's. An undo
//! selection (no revision) or a changed row means the stored importance.
//!
//! The identity is the SHA-256 (hex) of `mc-rescore-source-v1\0` followed by typed values —
//! `N;` (null), `I<decimal>;` (integer), `S<UTF-8 byte length>:<bytes>;` (string) — for: id,
//! session id, created_at, title, episode_type, legacy, content (null unless legacy), p1..p4
//! (null when legacy), sequence, start and end message, start and end message id, start and
//! end block index, importance (the stored one).
//!
//! A replay cannot tell when each selection was published, so every fold uses the latest
//! selection (which is what Magic Context's next HARD fold renders).

use rusqlite::Connection;
use sha2::{Digest, Sha256};

use super::Compartment;

enum Field<'a> {
    Null,
    Int(i64),
    Str(&'a str),
}

fn push(buf: &mut Vec<u8>, f: Field<'_>) {
    match f {
        Field::Null => buf.extend_from_slice(b"N;"),
        Field::Int(i) => buf.extend_from_slice(format!("I{i};").as_bytes()),
        Field::Str(s) => {
            buf.extend_from_slice(format!("S{}:", s.len()).as_bytes());
            buf.extend_from_slice(s.as_bytes());
            buf.push(b';');
        }
    }
}

/// The row's source identity; `None` when it cannot have one (no id, or an importance that is
/// not an integer).
pub fn source_identity(c: &Compartment, session_id: &str) -> Option<String> {
    let id = c.id?;
    let imp = c.base_importance;
    if !(imp.is_finite() && imp.fract() == 0.0 && imp.abs() < 9_007_199_254_740_992.0) {
        return None;
    }
    let opt_int = |v: Option<i64>| v.map_or(Field::Null, Field::Int);
    let legacy = c.legacy != 0;
    let tier = |i: usize| match (&c.p[i], legacy) {
        (Some(s), false) => Field::Str(s),
        _ => Field::Null,
    };
    let mut buf = b"mc-rescore-source-v1\0".to_vec();
    push(&mut buf, Field::Int(id));
    push(&mut buf, Field::Str(session_id));
    push(&mut buf, opt_int(c.created_at));
    push(&mut buf, Field::Str(&c.title));
    push(
        &mut buf,
        c.episode_type.as_deref().map_or(Field::Null, Field::Str),
    );
    push(&mut buf, Field::Int(c.legacy));
    push(
        &mut buf,
        if legacy {
            Field::Str(&c.content)
        } else {
            Field::Null
        },
    );
    for i in 0..4 {
        push(&mut buf, tier(i));
    }
    push(&mut buf, Field::Int(c.sequence));
    push(&mut buf, Field::Int(c.start_message));
    push(&mut buf, Field::Int(c.end_message));
    push(&mut buf, Field::Str(&c.start_message_id));
    push(&mut buf, Field::Str(&c.end_message_id));
    push(&mut buf, opt_int(c.start_block_index));
    push(&mut buf, opt_int(c.end_block_index));
    push(&mut buf, Field::Int(imp as i64));
    Some(format!("{:x}", Sha256::digest(&buf)))
}

fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// Apply the latest score selections of `session_id` to `rows`; returns how many rows use a
/// re-scored importance. A database without the v98 tables changes nothing.
pub fn apply(
    conn: &Connection,
    session_id: &str,
    rows: &mut [Compartment],
) -> rusqlite::Result<usize> {
    if !has_table(conn, "compartment_score_selections")?
        || !has_table(conn, "compartment_score_revisions")?
    {
        return Ok(0);
    }
    let mut st = conn.prepare(
        "SELECT s.compartment_id, r.new_importance, r.source_identity \
         FROM compartment_score_selections s \
         LEFT JOIN compartment_score_revisions r \
           ON r.id = s.revision_id AND r.session_id = s.session_id AND r.compartment_id = s.compartment_id \
         WHERE s.session_id = ?1 AND s.sequence = ( \
           SELECT MAX(s2.sequence) FROM compartment_score_selections s2 \
           WHERE s2.session_id = s.session_id AND s2.compartment_id = s.compartment_id)",
    )?;
    let latest = st.query_map([session_id], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<i64>>(1)?,
            r.get::<_, Option<String>>(2)?,
        ))
    })?;
    let mut applied = 0;
    for sel in latest {
        let (cid, new, identity) = sel?;
        let (Some(new), Some(identity)) = (new, identity) else {
            continue;
        };
        if let Some(c) = rows.iter_mut().find(|c| c.id == Some(cid)) {
            if source_identity(c, session_id).as_deref() == Some(identity.as_str()) {
                c.importance = new as f64;
                applied += 1;
            }
        }
    }
    Ok(applied)
}

//! From the `message` rows of one database to the listing's [`Rows`].
//!
//! [`read_all`] reads every row: SQLite steps on the calling thread, worker threads hash and
//! parse the rows ([`json::listed_from_text`]; the row pipeline of the loads) and the calling thread
//! puts the listing together in row order, so the result is the one a row-by-row read gives.
//! [`hash_all`] reads every row without parsing any (the listing cache's per-session check),
//! [`read_sessions`] the rows of a few sessions.
//!
//! Each session's rows are hashed (xxh3-128 of each row's id, `time_created` and `data`, summed:
//! the same whatever order SQLite returns them in), which is how the listing cache
//! ([`super::listing_cache`]) knows which sessions it can reuse when the database changed.

use std::collections::HashSet;

use rustc_hash::FxHashMap as HashMap;

use super::db::{Database, ListingRow, ListingRows};
use super::json::{self, NotTaken};
use super::listing::{self, Digest, ListedMessage, Rows};
use super::row_pipeline;
use crate::trace::error::LoadError;

/// What the listing keeps of one session of one database: a digest of its messages, or that it
/// must be loaded in full (a row the quick read cannot take).
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Digest(Digest),
    FullLoad,
}

/// One session's rows as the cache keys them: their content hash and what they gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyed {
    pub hash: u128,
    pub entry: Entry,
}

/// Rows read for the listing, and each session's [`Keyed`] in the order of its first row
/// (sessions of the v2 loop are not keyed: they are always full loads).
#[derive(Debug, Default)]
pub struct Read {
    pub rows: Rows,
    pub keyed: Vec<(String, Keyed)>,
    pub v2_sessions: Vec<String>,
}

/// The sessions of a pass in the order of their first row, each named by its index; the rows
/// of a v2 session have none (they are not read). Used where SQLite steps, so a row crosses to
/// a worker with its session's index rather than its id.
struct Sessions<'v> {
    v2: &'v HashSet<String>,
    ids: Vec<String>,
    at: HashMap<String, usize>,
    /// The last row's session: a session's rows mostly follow each other.
    last: Option<usize>,
}

impl<'v> Sessions<'v> {
    fn new(v2: &'v HashSet<String>) -> Sessions<'v> {
        Sessions {
            v2,
            ids: Vec::new(),
            at: HashMap::default(),
            last: None,
        }
    }

    /// The index of session `sid` (a new one when this is its first row); `None` for a v2
    /// session.
    fn index(&mut self, sid: &str) -> Option<usize> {
        if let Some(i) = self.last.filter(|&i| self.ids[i] == sid) {
            return Some(i);
        }
        let i = match self.at.get(sid) {
            Some(&i) => i,
            None if self.v2.contains(sid) => return None,
            None => {
                self.at.insert(sid.to_owned(), self.ids.len());
                self.ids.push(sid.to_owned());
                self.ids.len() - 1
            }
        };
        self.last = Some(i);
        Some(i)
    }
}

/// Puts a listing together row by row, in row order (a session's first row places it, and its
/// first row the quick read cannot take makes it a full load).
struct Builder<'v> {
    sessions: Sessions<'v>,
    /// By session index.
    accs: Vec<Acc>,
}

/// One session's rows so far.
#[derive(Default)]
struct Acc {
    hash: u128,
    messages: Vec<ListedMessage>,
    full_load: bool,
}

impl Acc {
    /// The session's next row (after a row the quick read cannot take, only its hash counts).
    fn add(&mut self, row: Parsed) {
        self.hash = self.hash.wrapping_add(row.hash);
        if self.full_load {
            return;
        }
        match row.read {
            Ok(Some(m)) => self.messages.push(m),
            Ok(None) => {}
            Err(NotTaken) => {
                self.messages = Vec::new();
                self.full_load = true;
            }
        }
    }
}

/// One row as it crosses to a worker: its session's index and its columns, copied into one
/// buffer (one allocation a row: the id, then the data).
struct Owned {
    session: usize,
    time: Option<i64>,
    id_len: usize,
    has_data: bool,
    bytes: Vec<u8>,
}

impl Owned {
    fn of(session: usize, row: &ListingRow<'_>) -> Owned {
        let data = row.data.unwrap_or_default();
        let mut bytes = Vec::with_capacity(row.id.len() + data.len());
        bytes.extend_from_slice(row.id.as_bytes());
        bytes.extend_from_slice(data);
        Owned {
            session,
            time: row.time,
            id_len: row.id.len(),
            has_data: row.data.is_some(),
            bytes,
        }
    }

    /// The id (text: it was a `str`) and the data.
    fn columns(&self) -> (&str, Option<&[u8]>) {
        let (id, data) = self.bytes.split_at(self.id_len);
        let id = std::str::from_utf8(id).unwrap_or_default();
        (id, self.has_data.then_some(data))
    }

    /// Its size, for the row pipeline's batches.
    fn bytes(&self) -> usize {
        self.bytes.len()
    }

    fn parse(self) -> Parsed {
        let (id, data) = self.columns();
        Parsed {
            session: self.session,
            hash: hash(id, self.time, data),
            read: read(id, self.time, data),
        }
    }
}

/// What a worker made of one row.
struct Parsed {
    session: usize,
    hash: u128,
    read: Result<Option<ListedMessage>, NotTaken>,
}

impl<'v> Builder<'v> {
    fn new(v2: &'v HashSet<String>) -> Builder<'v> {
        Builder {
            sessions: Sessions::new(v2),
            accs: Vec::new(),
        }
    }

    /// Every row of `rows`: SQLite steps on this thread, each row is hashed and read on worker
    /// threads ([`row_pipeline`]; here when the rows fit in one batch) and added here in row
    /// order, so the result is the one a row-by-row read gives.
    fn add_all(&mut self, rows: &mut ListingRows<'_, '_>) -> rusqlite::Result<()> {
        let (sessions, accs) = (&mut self.sessions, &mut self.accs);
        row_pipeline::for_each_row(
            || {
                while let Some(r) = rows.next()? {
                    let Some(session) = sessions.index(&r.session_id) else {
                        continue;
                    };
                    return Ok(Some(Owned::of(session, &r)));
                }
                Ok(None)
            },
            Owned::bytes,
            Owned::parse,
            |p| {
                // A session's first row comes after the first rows of those before it.
                if accs.len() <= p.session {
                    accs.resize_with(p.session + 1, Acc::default);
                }
                accs[p.session].add(p);
            },
        )
    }

    fn finish(self) -> Read {
        let mut rows = Rows::default();
        let v2 = self.sessions.v2;
        rows.full_load.extend(v2.iter().cloned());
        let mut keyed = Vec::with_capacity(self.sessions.ids.len());
        let mut accs = self.accs.into_iter();
        for sid in self.sessions.ids {
            // A session is indexed at its first row, which is added before the pass ends.
            let acc = accs.next().unwrap_or_default();
            let entry = if acc.full_load {
                rows.full_load.insert(sid.clone());
                Entry::FullLoad
            } else {
                // A session whose rows all had no known role has no messages: an empty digest.
                let d = listing::digest(&acc.messages);
                if !acc.messages.is_empty() {
                    rows.messages.insert(sid.clone(), acc.messages);
                }
                Entry::Digest(d)
            };
            keyed.push((
                sid,
                Keyed {
                    hash: acc.hash,
                    entry,
                },
            ));
        }
        let mut v2_sessions: Vec<String> = v2.iter().cloned().collect();
        v2_sessions.sort();
        Read {
            rows,
            keyed,
            v2_sessions,
        }
    }
}

/// Every column the read depends on, length-prefixed so that no two rows hash alike by moving a
/// byte from one column to the next.
fn hash(id: &str, time: Option<i64>, data: Option<&[u8]>) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(id.len() as u64).to_le_bytes());
    h.update(id.as_bytes());
    match time {
        Some(t) => {
            h.update(&[1]);
            h.update(&t.to_le_bytes());
        }
        None => h.update(&[0]),
    }
    match data {
        Some(d) => {
            h.update(&[1]);
            h.update(&(d.len() as u64).to_le_bytes());
            h.update(d);
        }
        None => h.update(&[0]),
    }
    h.digest128()
}

/// The quick read of one row (see [`json::listed_from_text`]); data that is not UTF-8 text is not taken.
fn read(
    id: &str,
    time: Option<i64>,
    data: Option<&[u8]>,
) -> Result<Option<ListedMessage>, NotTaken> {
    let data = std::str::from_utf8(data.ok_or(NotTaken)?).map_err(|_| NotTaken)?;
    json::listed_from_text(data, id, time)
}

/// The v2 sessions of `db` as a set; `None` when the listing's pass cannot be made.
fn v2_sessions(db: &Database) -> Result<Option<HashSet<String>>, LoadError> {
    Ok(db.listing_v2_sessions()?.map(|v| v.into_iter().collect()))
}

/// Every row of `db` read for the listing (see the module docs); `None` when the pass cannot be
/// made (see [`Database::listing_pass`]).
pub fn read_all(db: &Database) -> Result<Option<Read>, LoadError> {
    let Some(v2) = v2_sessions(db)? else {
        return Ok(None);
    };
    let mut b = Builder::new(&v2);
    Ok(db
        .listing_pass(None, |rows| b.add_all(rows))?
        .map(|()| b.finish()))
}

/// What [`hash_all`] finds: each session's hash in the order of its first row (the v2 sessions
/// not among them), and the v2 sessions.
pub struct Hashes {
    pub sessions: Vec<(String, u128)>,
    pub v2_sessions: Vec<String>,
}

/// Each session's hash (see the module docs) without parsing any row: each is hashed where
/// SQLite has it, on this thread (copying it to another would cost what hashing it does).
/// `None` when the pass cannot be made.
pub fn hash_all(db: &Database) -> Result<Option<Hashes>, LoadError> {
    let Some(v2) = db.listing_v2_sessions()? else {
        return Ok(None);
    };
    let v2_set: HashSet<String> = v2.iter().cloned().collect();
    let mut sessions = Sessions::new(&v2_set);
    let mut hashes: Vec<u128> = Vec::new();
    let hashed = db.listing_pass(None, |rows| {
        while let Some(r) = rows.next()? {
            if let Some(i) = sessions.index(&r.session_id) {
                if hashes.len() <= i {
                    hashes.resize(i + 1, 0);
                }
                hashes[i] = hashes[i].wrapping_add(hash(&r.id, r.time, r.data));
            }
        }
        Ok(())
    })?;
    if hashed.is_none() {
        return Ok(None);
    }
    Ok(Some(Hashes {
        sessions: sessions.ids.into_iter().zip(hashes).collect(),
        v2_sessions: v2,
    }))
}

/// The rows of the sessions `ids` only (each by its own indexed query); `None` when a pass
/// cannot be made.
pub fn read_sessions(
    db: &Database,
    ids: &[&str],
    v2: &[String],
) -> Result<Option<Read>, LoadError> {
    let v2: HashSet<String> = v2.iter().cloned().collect();
    let mut b = Builder::new(&v2);
    for id in ids {
        if db.listing_pass(Some(id), |rows| b.add_all(rows))?.is_none() {
            return Ok(None);
        }
    }
    Ok(Some(b.finish()))
}

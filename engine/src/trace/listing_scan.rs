//! From the `message` rows of one database to the listing's [`Rows`].
//!
//! [`read_all`] reads every row: SQLite steps on the calling thread and hands the raw rows, in
//! batches, to a second thread that parses them ([`message_row::read`]) in row order, so the
//! result is the one a row-by-row read gives. [`hash_all`] reads every row without parsing any
//! (the listing cache's per-session check), [`read_sessions`] the rows of a few sessions.
//!
//! Each session's rows are hashed (xxh3-128 of each row's id, `time_created` and `data`, summed:
//! the same whatever order SQLite returns them in), which is how the listing cache
//! ([`super::listing_cache`]) knows which sessions it can reuse when the database changed.

use std::collections::HashSet;
use std::sync::mpsc;

use rustc_hash::FxHashMap as HashMap;

use super::error::LoadError;
use super::listing::{self, Digest, Rows};
use super::opencode::db::Database;
use super::opencode::message_row::{self, ListedMessage};
use super::opencode::part_row::NotTaken;

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

/// Puts a listing together row by row.
struct Builder {
    /// The v2 sessions (never keyed; their rows are not read).
    v2: HashSet<String>,
    /// Every other session with rows, in the order of its first row.
    sessions: Vec<(String, Acc)>,
    at: HashMap<String, usize>,
}

/// One session's rows so far.
#[derive(Default)]
struct Acc {
    hash: u128,
    messages: Vec<ListedMessage>,
    full_load: bool,
}

impl Builder {
    fn new(v2_sessions: &[String]) -> Builder {
        Builder {
            v2: v2_sessions.iter().cloned().collect(),
            sessions: Vec::new(),
            at: HashMap::default(),
        }
    }

    /// The session `sid`'s state, with the row's hash added; `None` for a v2 session.
    fn acc(&mut self, sid: &str, h: u128) -> Option<&mut Acc> {
        let i = match self.at.get(sid) {
            Some(&i) => i,
            None => {
                if self.v2.contains(sid) {
                    return None;
                }
                self.at.insert(sid.to_owned(), self.sessions.len());
                self.sessions.push((sid.to_owned(), Acc::default()));
                self.sessions.len() - 1
            }
        };
        let acc = &mut self.sessions[i].1;
        acc.hash = acc.hash.wrapping_add(h);
        Some(acc)
    }

    fn add(&mut self, row: RowRef<'_>) {
        let Some(acc) = self.acc(row.session_id, row.hash()) else {
            return;
        };
        if acc.full_load {
            return;
        }
        match read(&row) {
            Ok(Some(m)) => acc.messages.push(m),
            Ok(None) => {}
            Err(NotTaken) => {
                acc.messages = Vec::new();
                acc.full_load = true;
            }
        }
    }

    fn finish(self) -> Read {
        let mut rows = Rows::default();
        rows.full_load.extend(self.v2.iter().cloned());
        let mut keyed = Vec::with_capacity(self.sessions.len());
        for (sid, acc) in self.sessions {
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
        let mut v2_sessions: Vec<String> = self.v2.into_iter().collect();
        v2_sessions.sort();
        Read {
            rows,
            keyed,
            v2_sessions,
        }
    }
}

/// One row as SQLite gave it.
#[derive(Clone, Copy)]
struct RowRef<'a> {
    session_id: &'a str,
    id: &'a str,
    time: Option<i64>,
    data: Option<&'a [u8]>,
}

impl RowRef<'_> {
    /// Every column the read depends on, length-prefixed so that no two rows hash alike by
    /// moving a byte from one column to the next.
    fn hash(&self) -> u128 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&(self.id.len() as u64).to_le_bytes());
        h.update(self.id.as_bytes());
        match self.time {
            Some(t) => {
                h.update(&[1]);
                h.update(&t.to_le_bytes());
            }
            None => h.update(&[0]),
        }
        match self.data {
            Some(d) => {
                h.update(&[1]);
                h.update(&(d.len() as u64).to_le_bytes());
                h.update(d);
            }
            None => h.update(&[0]),
        }
        h.digest128()
    }
}

/// The quick read of one row (see [`message_row::read`]); data that is not UTF-8 text is not taken.
fn read(r: &RowRef<'_>) -> Result<Option<ListedMessage>, NotTaken> {
    let data = r.data.ok_or(NotTaken)?;
    let data = std::str::from_utf8(data).map_err(|_| NotTaken)?;
    message_row::read(data, r.id, r.time)
}

/// Raw rows copied out of SQLite for the parsing thread: columns are ranges of one buffer.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    rows: Vec<Slot>,
}

/// Where one row's columns are in [`Batch::bytes`]: session id, id and data follow each other.
struct Slot {
    start: usize,
    id_at: usize,
    data_at: usize,
    time: Option<i64>,
    has_data: bool,
    end: usize,
}

const BATCH_ROWS: usize = 512;

impl Batch {
    fn push(&mut self, sid: &str, id: &str, time: Option<i64>, data: Option<&[u8]>) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(sid.as_bytes());
        let id_at = self.bytes.len();
        self.bytes.extend_from_slice(id.as_bytes());
        let data_at = self.bytes.len();
        if let Some(d) = data {
            self.bytes.extend_from_slice(d);
        }
        self.rows.push(Slot {
            start,
            id_at,
            data_at,
            time,
            has_data: data.is_some(),
            end: self.bytes.len(),
        });
    }

    fn each(&self, mut f: impl FnMut(RowRef<'_>)) {
        let text = |a: usize, b: usize| std::str::from_utf8(&self.bytes[a..b]).unwrap_or_default();
        for r in &self.rows {
            f(RowRef {
                session_id: text(r.start, r.id_at),
                id: text(r.id_at, r.data_at),
                time: r.time,
                data: r.has_data.then(|| &self.bytes[r.data_at..r.end]),
            });
        }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.rows.clear();
    }
}

/// Every row of `db` read for the listing (see the module docs); `None` when the pass cannot be
/// made (see [`Database::listing_each`]).
pub fn read_all(db: &Database) -> Result<Option<Read>, LoadError> {
    let Some(v2) = db.listing_v2_sessions()? else {
        return Ok(None);
    };
    std::thread::scope(|scope| {
        let (to_parser, batches) = mpsc::sync_channel::<Batch>(4);
        let (give_back, spare) = mpsc::channel::<Batch>();
        let parser = scope.spawn(move || {
            let mut b = Builder::new(&v2);
            for batch in batches {
                batch.each(|r| b.add(r));
                let mut batch = batch;
                batch.clear();
                let _ = give_back.send(batch);
            }
            b
        });
        let mut batch = Batch::default();
        let complete = db.listing_each(None, |sid, id, time, data| {
            batch.push(sid, id, time, data);
            if batch.rows.len() >= BATCH_ROWS {
                let next = spare.try_recv().unwrap_or_default();
                // The parser ends only when this sender is dropped.
                let _ = to_parser.send(std::mem::replace(&mut batch, next));
            }
        });
        let _ = to_parser.send(batch);
        drop(to_parser);
        let builder = parser
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        Ok(complete?.then(|| builder.finish()))
    })
}

/// What [`hash_all`] finds: each session's hash in the order of its first row (the v2 sessions
/// not among them), and the v2 sessions.
pub struct Hashes {
    pub sessions: Vec<(String, u128)>,
    pub v2_sessions: Vec<String>,
}

/// Each session's hash (see the module docs) without parsing any row. `None` when the pass
/// cannot be made.
pub fn hash_all(db: &Database) -> Result<Option<Hashes>, LoadError> {
    let Some(v2) = db.listing_v2_sessions()? else {
        return Ok(None);
    };
    let mut b = Builder::new(&v2);
    let complete = db.listing_each(None, |sid, id, time, data| {
        let row = RowRef {
            session_id: sid,
            id,
            time,
            data,
        };
        b.acc(sid, row.hash());
    })?;
    if !complete {
        return Ok(None);
    }
    Ok(Some(Hashes {
        sessions: b
            .sessions
            .into_iter()
            .map(|(sid, a)| (sid, a.hash))
            .collect(),
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
    let mut b = Builder::new(v2);
    for id in ids {
        if !db.listing_each(Some(id), |sid, mid, time, data| {
            b.add(RowRef {
                session_id: sid,
                id: mid,
                time,
                data,
            })
        })? {
            return Ok(None);
        }
    }
    Ok(Some(b.finish()))
}

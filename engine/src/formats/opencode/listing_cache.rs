//! The listing cache: each database's listing digests (one [`Entry`] per session) kept under the
//! tierscope cache dir, so a second listing of a database that did not change reads no message
//! row, and a listing of a database being recorded parses only the sessions that changed.
//!
//! - **Where**: `<cache dir>/listing/<xxh3 of the canonical db path>.bin`; the cache dir is
//!   [`crate::tokens::default_cache_dir`] (`$TIERSCOPE_CACHE_DIR`, else the platform cache dir +
//!   `tierscope`). Never beside the database: a cache dir inside the database's directory or an
//!   agent's data dir is not written to (the token cache's rule too). At most [`MAX_FILES`] databases are kept (the least recently written go first),
//!   and a file above [`MAX_FILE_BYTES`] is not written.
//! - **Whole-database marker** ([`Marker`]): device, inode, size and mtime (ns) of the database
//!   file and of its `-wal` (absent is part of the key), the database's change time, the
//!   database header (its file change counter, bytes 24..28), the WAL header (its salts change at
//!   every WAL reset) and the WAL's last frame header (the running checksum of every frame).
//!   OpenCode writes through SQLite in WAL mode: a commit appends to the WAL, a checkpoint writes
//!   the main file, a reset rewrites the WAL's header. The change time is there for any other
//!   writer: an edit in place that keeps the size and sets the mtime back (`touch -d`) still
//!   moves it, and nothing short of the system clock sets it back.
//!   When the marker matches, the listing is served from the file without any SQL over `message`,
//!   and opening the database reads neither its session rows nor its orphans (every command's
//!   open would otherwise read every session row, which grows with the database, not with what
//!   the command asks for).
//! - **Per-session reuse** when it does not match (a session being recorded): one pass reads the
//!   raw rows (no JSON parsed) and hashes each session's rows (xxh3-128 of id, `time_created`
//!   and `data`); a session whose hash is the cached one keeps its entry, every other is read.
//!   The hash is of the content itself, so any writer's change is seen, not only OpenCode's.
//! - **Safe**: the file has a magic, the format version and the tierscope version in its header
//!   and an xxh3 checksum at its end; a file that is truncated, damaged or of another version is
//!   ignored and rewritten. It is read as untrusted input ([`crate::cache_file`]): a symlink, a
//!   FIFO, a device or a file above [`MAX_FILE_BYTES`] at its path is a miss, never read. It is
//!   written atomically (temp file + rename, which replaces whatever was at the path; no
//!   `fsync`: a file a crash damaged is only a rebuild). The marker is taken before the rows are
//!   read, so a write that lands during the pass makes the next listing a miss, never a stale
//!   hit.
//!
//! Not cached: a database read through a temporary copy (see [`crate::formats::opencode::db`]: a
//! read-only directory whose database has a `-wal`; the copy is made before a marker could be
//! taken), and JSON trees (OpenCode before 1.2: no marker short of reading every message file
//! tells that one did not change).
//!
//! To bypass the cache, point `$TIERSCOPE_CACHE_DIR` at another directory (as for the token
//! cache); in the library, [`ListingCache::Off`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::db::Database;
use super::listing::{Digest, Rows};
use super::listing_scan::{hash_all, read_all, read_sessions, Entry, Keyed, Read};
use crate::trace::diagnostics::Diagnostics;
use crate::trace::error::LoadError;
use crate::trace::model::{ModelRef, SessionInfo, Usage};

/// Databases whose listing is kept.
pub const MAX_FILES: usize = 64;
/// Changed sessions read one by one (more, or more than a quarter: every row is read again).
const MAX_REREAD: usize = 32;
/// Largest cache file written (about 80,000 sessions).
pub const MAX_FILE_BYTES: usize = 8 * 1024 * 1024;

const MAGIC: &[u8; 8] = b"TSLSTv1\n";
/// The format and the build that wrote it: a file of another one is not read.
const VERSION: &str = concat!("listing-3 tierscope-engine ", env!("CARGO_PKG_VERSION"));

pub use crate::trace::adapter::ListingCache;

impl ListingCache {
    fn dir(&self) -> Option<PathBuf> {
        match self {
            ListingCache::Default => crate::tokens::default_cache_dir(),
            ListingCache::At(d) => Some(d.clone()),
            ListingCache::Off => None,
        }
        .map(|d| d.join("listing"))
    }
}

/// A database's change marker: see the module docs. Also the output cache's key of a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Marker {
    db: FileStamp,
    wal: Option<FileStamp>,
    /// xxh3 of the database header (100 bytes) and the WAL header (32 bytes).
    headers: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    /// The inode's change time: every write sets it, and unlike the mtime no `touch` can set it
    /// back (an in-place edit that keeps the size and forges the mtime still changes it). For
    /// the `-wal` only when tierscope does not run as root (0 then): SQLite run as root gives
    /// the `-wal` its database's owner at every open, which moves its change time at every read;
    /// its header and its last frame's running checksum still key its content.
    ctime_ns: i128,
}

impl FileStamp {
    fn of(path: &Path, with_ctime: bool) -> Option<FileStamp> {
        let m = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileStamp {
                dev: m.dev(),
                ino: m.ino(),
                size: m.size(),
                mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                ctime_ns: if with_ctime {
                    i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
                } else {
                    0
                },
            })
        }
        #[cfg(not(unix))]
        {
            let mtime = m.modified().ok()?;
            let d = mtime.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(FileStamp {
                dev: 0,
                ino: 0,
                size: m.len(),
                mtime_ns: d.as_nanos() as i128,
                ctime_ns: 0,
            })
        }
    }
}

impl Marker {
    /// The marker of the database at `path` now; `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<Marker> {
        let wal_path = side(path, "-wal");
        let db = FileStamp::of(path, true)?;
        let wal = FileStamp::of(&wal_path, !running_as_root());
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&head(path, 100)?);
        if let Some(w) = &wal {
            let header = head(&wal_path, 32).unwrap_or_default();
            h.update(&header);
            h.update(&last_frame_header(&wal_path, &header, w.size).unwrap_or_default());
        }
        Some(Marker {
            db,
            wal,
            headers: h.digest(),
        })
    }
}

/// The header of the WAL's last frame (24 bytes): its salts and the running checksum over every
/// frame before it, so an edit of any frame that SQLite would still read changes it.
fn last_frame_header(wal: &Path, header: &[u8], size: u64) -> Option<Vec<u8>> {
    let page = u32::from_be_bytes(header.get(8..12)?.try_into().ok()?);
    let frame = 24 + u64::from(page);
    let frames = size.checked_sub(32)? / frame;
    let last = frames.checked_sub(1)?;
    crate::cache_file::read_at(wal, 32 + last * frame, 24)
}

#[cfg(unix)]
fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(not(unix))]
fn running_as_root() -> bool {
    false
}

fn side(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn head(path: &Path, n: u64) -> Option<Vec<u8>> {
    crate::cache_file::head(path, n)
}

/// The cache file at `file`, read as untrusted input ([`crate::cache_file`]); `None` for a
/// missing, hostile, damaged or other-version one.
fn read_file(file: &Path) -> Option<Cached> {
    decode(&crate::cache_file::read(file, MAX_FILE_BYTES as u64).ok()?)
}

/// What the cache file of one database holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    pub marker: Marker,
    /// Sessions named by message rows but missing from the session tables, with their message
    /// counts ([`Database::orphan_counts`]): read at every open, so kept here too.
    pub orphans: Vec<(String, i64)>,
    /// The session tables' rows ([`Database::sessions`]), also read at every open; `None` when
    /// reading them raised diagnostics (read again, so that every open reports them).
    pub infos: Option<Vec<SessionInfo>>,
    /// Sessions of the v2 loop (always loaded in full).
    pub v2_sessions: Vec<String>,
    /// Every other session with rows, in the order of its first row.
    pub sessions: Vec<(String, Keyed)>,
}

/// The listing's rows of `db` through the cache `cache` (see the module docs): the same
/// [`Rows`] as [`Database::listing_rows`] gives, except that a session served from the cache has
/// a digest instead of its messages.
/// `opened` is what was read when `db` was opened (read again if it changed since).
pub fn rows(
    db: &Database,
    cache: &ListingCache,
    opened: &Opened,
) -> Result<Option<Rows>, LoadError> {
    let Some(file) = cache_file(db, cache) else {
        return db.listing_rows();
    };
    // Taken before any row is read (see the module docs).
    let marker = Marker::of(db.path());
    // The file as the open read it, when it read that file (same dir); else read now.
    let read_now;
    let old = match &opened.file {
        Some((f, c)) if *f == file => c.as_ref(),
        _ => {
            read_now = read_file(&file);
            read_now.as_ref()
        }
    };
    if let (Some(old), Some(m)) = (old, marker) {
        if old.marker == m {
            return Ok(Some(rows_from_cache(old)));
        }
    }
    let read = match old {
        Some(old) => reuse(db, old)?,
        None => read_all(db)?,
    };
    let Some(read) = read else {
        return Ok(None);
    };
    if let Some(marker) = marker {
        // What the open read carries over only when it read for this same file and the database
        // did not change since. An open through another cache dir may have been served from that
        // dir's file (then it has no rows of its own to give), so what this file holds would
        // depend on the other dir's state.
        let same =
            opened.marker == Some(marker) && opened.file.as_ref().is_some_and(|(f, _)| *f == file);
        let new = Cached {
            marker,
            orphans: if same {
                opened.orphans.clone()
            } else {
                db.orphan_counts()?
            },
            infos: if same { opened.clean.clone() } else { None },
            v2_sessions: read.v2_sessions,
            sessions: read.keyed,
        };
        if old != Some(&new) {
            // A cache that cannot be written costs the next listing its speed, nothing else.
            let _ = store(&file, &encode(&new));
        }
    }
    Ok(Some(read.rows))
}

/// The rows of `db` reusing what `old` has of each session whose rows hash as they did: one pass
/// that hashes every row and parses none, then an indexed read of each changed session (every row
/// again when most changed).
fn reuse(db: &Database, old: &Cached) -> Result<Option<Read>, LoadError> {
    let Some(found) = hash_all(db)? else {
        return Ok(None);
    };
    let (hashes, v2) = (found.sessions, found.v2_sessions);
    let known: HashMap<&str, &Keyed> = old.sessions.iter().map(|(s, k)| (s.as_str(), k)).collect();
    let changed: Vec<&str> = hashes
        .iter()
        .filter(|(sid, h)| known.get(sid.as_str()).is_none_or(|k| k.hash != *h))
        .map(|(sid, _)| sid.as_str())
        .collect();
    if changed.len() > MAX_REREAD.max(hashes.len() / 4) {
        return read_all(db);
    }
    let Some(mut fresh) = read_sessions(db, &changed, &v2)? else {
        return Ok(None);
    };
    let mut by_sid: HashMap<String, Keyed> = std::mem::take(&mut fresh.keyed).into_iter().collect();
    for (sid, _) in &hashes {
        // The hash of the rows actually read (a write between the passes changes it).
        if let Some(k) = by_sid.remove(sid) {
            fresh.keyed.push((sid.clone(), k));
            continue;
        }
        let Some(k) = known
            .get(sid.as_str())
            .filter(|_| !changed.contains(&sid.as_str()))
        else {
            continue;
        };
        match &k.entry {
            Entry::Digest(d) => {
                fresh.rows.digests.insert(sid.clone(), d.clone());
            }
            Entry::FullLoad => {
                fresh.rows.full_load.insert(sid.clone());
            }
        }
        fresh.keyed.push((sid.clone(), (*k).clone()));
    }
    Ok(Some(fresh))
}

/// What opening a database reads of it: its sessions (the session tables' rows) and its orphan
/// sessions ([`Database::orphan_counts`]), with the marker taken before they were read.
#[derive(Debug, Clone, Default)]
pub struct Opened {
    /// The session rows (a source takes them; see [`crate::trace::load`]).
    pub sessions: Vec<SessionInfo>,
    pub orphans: Vec<(String, i64)>,
    marker: Option<Marker>,
    /// The sessions again when they were read from the database and raised no diagnostic
    /// (what a listing writes into the cache file).
    clean: Option<Vec<SessionInfo>>,
    /// The cache file read at the open and what it held (a listing reuses it).
    file: Option<(PathBuf, Option<Cached>)>,
}

/// Open `db`'s sessions and orphans: from its cache file when the database did not change since
/// it was written, else from the database (its diagnostics into `diags`).
pub fn open(
    db: &Database,
    cache: &ListingCache,
    diags: &mut Diagnostics,
) -> Result<Opened, LoadError> {
    let file = cache_file(db, cache);
    let marker = file.as_ref().and_then(|_| Marker::of(db.path()));
    let mut cached = file.as_ref().and_then(|f| read_file(f));
    // Taken out of the file's contents: a listing compares those only when the database changed
    // since, and then it reads both again.
    let mut current = cached.as_mut().filter(|c| Some(c.marker) == marker);
    let orphans = match current.as_mut() {
        Some(c) => std::mem::take(&mut c.orphans),
        None => db.orphan_counts()?,
    };
    let (sessions, clean) = match current.and_then(|c| c.infos.take()) {
        // Served from the file: nothing to write back.
        Some(infos) => (infos, None),
        None => {
            let mut d = Diagnostics::new();
            let sessions = db.sessions(&mut d)?;
            let clean = (d.is_empty() && file.is_some()).then(|| sessions.clone());
            diags.extend(&d);
            (sessions, clean)
        }
    };
    Ok(Opened {
        sessions,
        orphans,
        marker,
        clean,
        file: file.map(|f| (f, cached)),
    })
}

fn rows_from_cache(c: &Cached) -> Rows {
    let mut rows = Rows::default();
    rows.full_load.extend(c.v2_sessions.iter().cloned());
    for (sid, k) in &c.sessions {
        match &k.entry {
            Entry::Digest(d) => {
                rows.digests.insert(sid.clone(), d.clone());
            }
            Entry::FullLoad => {
                rows.full_load.insert(sid.clone());
            }
        }
    }
    rows
}

/// The cache file of `db`, if it has one: not for a database read through a temporary copy (the
/// copy was made before any marker could be taken, so a write in between would go unseen).
fn cache_file(db: &Database, cache: &ListingCache) -> Option<PathBuf> {
    if db.is_copy() {
        return None;
    }
    cache.dir().and_then(|d| file_for(&d, db.path()))
}

/// The cache file of the database at `db` in the listing dir `dir`; `None` when that dir is
/// inside the database's own directory or an agent's data dir (never write beside a user's
/// data: [`crate::output_guard::cache_dir_refusal`], shared with the token cache).
pub fn file_for(dir: &Path, db: &Path) -> Option<PathBuf> {
    if crate::output_guard::cache_dir_refusal(dir, &[db]).is_some() {
        return None;
    }
    let db = std::fs::canonicalize(db).ok()?;
    let key = xxhash_rust::xxh3::xxh3_64(db.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{key:016x}.bin")))
}

/// Write atomically, then keep at most [`MAX_FILES`] cache files in the dir.
fn store(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if bytes.len() > MAX_FILE_BYTES {
        return Ok(());
    }
    crate::tokens::write_replaceable(file, bytes)?;
    let Some(dir) = file.parent() else {
        return Ok(());
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin") && p != file)
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    if files.len() >= MAX_FILES {
        files.sort();
        for (_, p) in files.iter().take(files.len() + 1 - MAX_FILES) {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

/// Layout (little-endian): magic, u16 length + [`VERSION`], the marker, u32 count + orphans
/// (string id, i64 count), u8 0 or 1 + u32 count + session infos (strings id, title,
/// optional slug, directory, optional project, parent, version and agent, optional model as two
/// strings, i64 created, i64 updated; an optional value is u8 0, or u8 1 + the value), u32 count + the v2
/// sessions, u32 count + sessions (string id, u128 hash, u8 kind, for a digest: u64 messages,
/// u64 requests, 5 × u64 tokens, f64 cost bits, u8 + string first cwd), u64 xxh3 checksum of
/// everything before it. Strings are u32 length + UTF-8.
pub fn encode(c: &Cached) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + c.sessions.len() * 96);
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&(VERSION.len() as u16).to_le_bytes());
    b.extend_from_slice(VERSION.as_bytes());
    put_stamp(&mut b, &c.marker.db);
    match &c.marker.wal {
        Some(w) => {
            b.push(1);
            put_stamp(&mut b, w);
        }
        None => b.push(0),
    }
    b.extend_from_slice(&c.marker.headers.to_le_bytes());
    b.extend_from_slice(&(c.orphans.len() as u32).to_le_bytes());
    for (sid, n) in &c.orphans {
        put_str(&mut b, sid);
        b.extend_from_slice(&n.to_le_bytes());
    }
    match &c.infos {
        Some(infos) => {
            b.push(1);
            b.extend_from_slice(&(infos.len() as u32).to_le_bytes());
            for i in infos {
                put_info(&mut b, i);
            }
        }
        None => b.push(0),
    }
    b.extend_from_slice(&(c.v2_sessions.len() as u32).to_le_bytes());
    for s in &c.v2_sessions {
        put_str(&mut b, s);
    }
    b.extend_from_slice(&(c.sessions.len() as u32).to_le_bytes());
    for (sid, k) in &c.sessions {
        put_str(&mut b, sid);
        b.extend_from_slice(&k.hash.to_le_bytes());
        match &k.entry {
            Entry::FullLoad => b.push(0),
            Entry::Digest(d) => {
                b.push(1);
                for n in [d.messages as u64, d.requests as u64] {
                    b.extend_from_slice(&n.to_le_bytes());
                }
                let t = &d.tokens;
                for n in [t.input, t.output, t.reasoning, t.cache_read, t.cache_write] {
                    b.extend_from_slice(&n.to_le_bytes());
                }
                b.extend_from_slice(&d.cost.to_bits().to_le_bytes());
                match &d.first_cwd {
                    Some(c) => {
                        b.push(1);
                        put_str(&mut b, c);
                    }
                    None => b.push(0),
                }
            }
        }
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

fn put_stamp(b: &mut Vec<u8>, s: &FileStamp) {
    for n in [s.dev, s.ino, s.size] {
        b.extend_from_slice(&n.to_le_bytes());
    }
    b.extend_from_slice(&s.mtime_ns.to_le_bytes());
    b.extend_from_slice(&s.ctime_ns.to_le_bytes());
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

fn put_opt_str(b: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            b.push(1);
            put_str(b, s);
        }
        None => b.push(0),
    }
}

fn put_info(b: &mut Vec<u8>, i: &SessionInfo) {
    put_str(b, &i.id);
    put_str(b, &i.title);
    put_opt_str(b, i.slug.as_deref());
    put_str(b, &i.directory);
    for o in [&i.project_id, &i.parent_id, &i.version, &i.agent] {
        put_opt_str(b, o.as_deref());
    }
    match &i.model {
        Some(m) => {
            b.push(1);
            put_str(b, &m.provider_id);
            put_str(b, &m.model_id);
        }
        None => b.push(0),
    }
    b.extend_from_slice(&i.time_created.to_le_bytes());
    b.extend_from_slice(&i.time_updated.to_le_bytes());
}

/// `None` for anything that is not a complete cache file of this format and version.
pub fn decode(bytes: &[u8]) -> Option<Cached> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if xxhash_rust::xxh3::xxh3_64(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut r = Reader(body.strip_prefix(MAGIC.as_slice())?);
    let n = r.u16()? as usize;
    if r.take(n)? != VERSION.as_bytes() {
        return None;
    }
    let db = r.stamp()?;
    let wal = match r.u8()? {
        0 => None,
        1 => Some(r.stamp()?),
        _ => return None,
    };
    let marker = Marker {
        db,
        wal,
        headers: r.u64()?,
    };
    let n = r.u32()? as usize;
    let mut orphans = Vec::with_capacity(n.min(r.0.len()));
    for _ in 0..n {
        let sid = r.string()?;
        orphans.push((sid, r.u64()? as i64));
    }
    let infos = match r.u8()? {
        0 => None,
        1 => {
            let n = r.u32()? as usize;
            let mut infos = Vec::with_capacity(n.min(r.0.len()));
            for _ in 0..n {
                infos.push(r.info()?);
            }
            Some(infos)
        }
        _ => return None,
    };
    let n = r.u32()? as usize;
    let mut v2_sessions = Vec::with_capacity(n.min(r.0.len()));
    for _ in 0..n {
        v2_sessions.push(r.string()?);
    }
    let n = r.u32()? as usize;
    let mut sessions = Vec::with_capacity(n.min(r.0.len()));
    for _ in 0..n {
        let sid = r.string()?;
        let hash = u128::from_le_bytes(r.take(16)?.try_into().ok()?);
        let entry = match r.u8()? {
            0 => Entry::FullLoad,
            1 => {
                let messages = usize::try_from(r.u64()?).ok()?;
                let requests = usize::try_from(r.u64()?).ok()?;
                let tokens = Usage {
                    input: r.u64()?,
                    output: r.u64()?,
                    reasoning: r.u64()?,
                    cache_read: r.u64()?,
                    cache_write: r.u64()?,
                };
                let cost = f64::from_bits(r.u64()?);
                let first_cwd = match r.u8()? {
                    0 => None,
                    1 => Some(r.string()?),
                    _ => return None,
                };
                Entry::Digest(Digest {
                    messages,
                    requests,
                    tokens,
                    cost,
                    first_cwd,
                })
            }
            _ => return None,
        };
        sessions.push((sid, Keyed { hash, entry }));
    }
    if !r.0.is_empty() {
        return None;
    }
    Some(Cached {
        marker,
        orphans,
        infos,
        v2_sessions,
        sessions,
    })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (a, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    fn opt_string(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.string()?)),
            _ => None,
        }
    }
    fn info(&mut self) -> Option<SessionInfo> {
        Some(SessionInfo {
            id: self.string()?,
            title: self.string()?,
            slug: self.opt_string()?,
            directory: self.string()?,
            project_id: self.opt_string()?,
            parent_id: self.opt_string()?,
            version: self.opt_string()?,
            agent: self.opt_string()?,
            model: match self.u8()? {
                0 => None,
                1 => Some(ModelRef {
                    provider_id: self.string()?,
                    model_id: self.string()?,
                }),
                _ => return None,
            },
            time_created: self.u64()? as i64,
            time_updated: self.u64()? as i64,
        })
    }
    fn stamp(&mut self) -> Option<FileStamp> {
        Some(FileStamp {
            dev: self.u64()?,
            ino: self.u64()?,
            size: self.u64()?,
            mtime_ns: i128::from_le_bytes(self.take(16)?.try_into().ok()?),
            ctime_ns: i128::from_le_bytes(self.take(16)?.try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Cached {
        let stamp = FileStamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: 4,
            ctime_ns: 5,
        };
        Cached {
            marker: Marker {
                db: stamp,
                wal: Some(stamp),
                headers: 9,
            },
            orphans: vec![("ses_gone".into(), 3)],
            infos: Some(vec![
                SessionInfo {
                    id: "ses_a".into(),
                    title: "Fix \u{1b}[31mthe build".into(),
                    slug: Some("fix".into()),
                    directory: "/w".into(),
                    project_id: None,
                    parent_id: Some("ses_p".into()),
                    version: Some("1.18.33".into()),
                    agent: None,
                    model: Some(ModelRef {
                        provider_id: "p".into(),
                        model_id: "m".into(),
                    }),
                    time_created: -1,
                    time_updated: 5,
                },
                SessionInfo::default(),
            ]),
            v2_sessions: vec!["ses_v2".into()],
            sessions: vec![
                (
                    "ses_a".into(),
                    Keyed {
                        hash: 7,
                        entry: Entry::Digest(Digest {
                            messages: 3,
                            requests: 2,
                            tokens: Usage {
                                input: 1,
                                output: 2,
                                reasoning: 3,
                                cache_read: 4,
                                cache_write: 5,
                            },
                            cost: 0.1 + 0.2,
                            first_cwd: Some("/w".into()),
                        }),
                    },
                ),
                (
                    "ses_b".into(),
                    Keyed {
                        hash: 8,
                        entry: Entry::FullLoad,
                    },
                ),
            ],
        }
    }

    #[test]
    fn a_cache_file_reads_back_as_written() {
        let c = sample();
        assert_eq!(decode(&encode(&c)), Some(c));
    }

    #[test]
    fn a_truncated_flipped_or_foreign_file_is_not_read() {
        let b = encode(&sample());
        for n in 0..b.len() {
            assert_eq!(decode(&b[..n]), None, "truncated at {n}");
        }
        for i in [0, 9, 20, b.len() / 2, b.len() - 1] {
            let mut d = b.clone();
            d[i] ^= 0x40;
            assert_eq!(decode(&d), None, "byte {i} flipped");
        }
        // Another version with a valid checksum.
        let mut other = b[..b.len() - 8].to_vec();
        let at = MAGIC.len() + 2 + VERSION.len() - 1;
        other[at] = b'x';
        let sum = xxhash_rust::xxh3::xxh3_64(&other);
        other.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(decode(&other), None);
    }
}

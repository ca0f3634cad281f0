//! Opening an agent's SQLite file read-only without creating anything beside it: in place where
//! SQLite allows that (`mode=ro` with its `-wal` and `-shm`; `immutable=1` after a clean exit,
//! when neither is there), else through a temporary copy (a `-wal` left without its `-shm`, a
//! read-only directory). OpenCode's database, Magic Context's, Codex's thread index and the
//! follower's version probe all open their files by these rules.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::error::LoadError;
use crate::watch::side_file;

pub(crate) const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// True when the file starts with the SQLite header (used to detect a db by content).
pub fn looks_like_sqlite(path: &Path) -> bool {
    read_header(path).is_ok_and(|h| h.starts_with(SQLITE_MAGIC))
}

/// The first 100 bytes (the SQLite header) or fewer when the file is shorter.
pub(crate) fn read_header(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(100);
    std::fs::File::open(path)?
        .take(100)
        .read_to_end(&mut head)?;
    Ok(head)
}

fn read_only_location(path: &Path) -> bool {
    let ro = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.permissions().readonly());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    ro(dir) || ro(&side_file(path, "-shm")) || ro(&side_file(path, "-wal"))
}

/// `file:` URI for a path: everything outside the unreserved set percent-encoded, so `?`, `#`
/// and `%` in directory names cannot change the meaning of the URI.
fn file_uri(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut out = String::from("file:");
    for &byte in abs.as_os_str().as_encoded_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out.push_str("?mode=ro");
    out
}

/// How `path` (whose first bytes are `head`) can be read where it is without creating a file
/// beside it; `None`: only through a copy.
pub(crate) fn in_place_mode(path: &Path, head: &[u8]) -> Option<OpenMode> {
    // Bytes 18 and 19 are 2 in WAL mode.
    let wal_mode = head.get(18..20) == Some(&[2, 2][..]);
    let (has_wal, has_shm) = (
        side_file(path, "-wal").exists(),
        side_file(path, "-shm").exists(),
    );
    if wal_mode && !has_wal && !has_shm {
        // Nothing is in a WAL and no writer holds the file; a plain read-only open would
        // create `-wal` and `-shm` beside it. An immutable open creates nothing, so this
        // holds in a read-only directory too (a backup, another user's data).
        Some(OpenMode::Immutable)
    } else if read_only_location(path) || (wal_mode && has_wal && !has_shm) {
        // Where the directory or the `-shm` has no write bits, SQLite could not keep its
        // shared index there (and a root process would write it anyway), and where a `-wal`
        // was left without its `-shm` (a writer that died) a read would create one: read a
        // copy instead.
        None
    } else {
        Some(OpenMode::ReadOnly)
    }
}

/// A read-only connection to `path` in place, by the same rules as OpenCode's database loader (no
/// file is created beside it), for readers without a copy of their own (the follower's
/// `PRAGMA data_version`, Magic Context's database); `None` where a load would read a copy.
/// An immutable connection never sees a later commit, so a caller reopens when files change.
pub fn open_in_place(path: &Path) -> Option<Connection> {
    let head = read_header(path).ok()?;
    let conn = open_ro(path, in_place_mode(path, &head)?).ok()?;
    conn.busy_timeout(std::time::Duration::from_millis(500))
        .ok()?;
    Some(conn)
}

/// A read-only connection to a copy of `path` (with its `-wal` and `-shm`) in a temporary
/// dir, which the caller keeps while it reads: for a database that cannot be read in place
/// without creating a file beside it (see [`in_place_mode`]).
pub fn open_copy(path: &Path) -> Result<(Connection, tempfile::TempDir), LoadError> {
    let dir = tempfile::Builder::new()
        .prefix("tierscope-db-")
        .tempdir()
        .map_err(|e| LoadError::Database {
            path: path.to_owned(),
            reason: format!("cannot create a temporary copy: {e}"),
        })?;
    let copy = dir.path().join("opencode.db");
    std::fs::copy(path, &copy).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    for suffix in ["-wal", "-shm"] {
        let side = side_file(path, suffix);
        if side.exists() {
            std::fs::copy(&side, side_file(&copy, suffix))
                .map_err(|source| LoadError::Io { path: side, source })?;
        }
    }
    let conn = open_ro(&copy, OpenMode::ReadOnly).map_err(|e| LoadError::Database {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok((conn, dir))
}

/// How a database file is opened (both read-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenMode {
    /// `mode=ro`: sees rows still in the `-wal`; uses (and may create) the `-shm`.
    ReadOnly,
    /// `mode=ro&immutable=1`: no locks, no side files; only for a file no one writes.
    Immutable,
}

pub(crate) fn open_ro(path: &Path, mode: OpenMode) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut uri = file_uri(path);
    if mode == OpenMode::Immutable {
        uri.push_str("&immutable=1");
    }
    let conn = Connection::open_with_flags(uri, flags)?;
    // A running OpenCode may hold a write lock for a moment.
    conn.busy_timeout(std::time::Duration::from_millis(2000))?;
    Ok(conn)
}

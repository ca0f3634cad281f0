//! A command's JSON output kept for an unchanged source (`episodes --json`): drafting the
//! episodes is most of a warm load, and the answer is a pure function of the source's files,
//! the files beside it (sidecars, rules, Magic Context), the flags and this binary. So the
//! output is kept in the cache dir, and the next run with the same flags prints it when none of
//! those files changed: by path, size, mtime, inode and change time (which no `touch` sets
//! back), and a database by the listing cache's marker (its header's change counter, its WAL's
//! salts and last frame checksum: a commit can land without a visible stat change).
//!
//! An entry is one file: a JSON header line (the files beside the source with their stats,
//! the warnings the load printed), the output's bytes, their length and their xxh3 (8 bytes LE
//! each). Anything unexpected is a miss; an entry is written through a temporary file and a
//! rename, so a reader never sees half of one, and one torn by a crash or damaged since fails
//! its length or its checksum, checked before a byte of it is printed.
//! `TIERSCOPE_NO_OUTPUT_CACHE=1` turns it off.

use std::fmt::Debug;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use std::hash::Hash;

use serde::{Deserialize, Serialize};
use tierscope_engine::formats::opencode::listing_cache::Marker;
use tierscope_engine::output_guard::{self, AtomicFile, OutputGuard};
use tierscope_engine::watch::{self, WatchTarget};
use xxhash_rust::xxh3::Xxh3;

use super::LoadArgs;

/// Changes whenever the entry's layout does.
const FORMAT: &str = "tierscope-output-cache-1";
/// An output larger than this is not kept (a 100k-request session's `episodes --json` is about
/// 250 MB).
const MAX_ENTRY: u64 = 512 << 20;
/// The footer: the output's length and its xxh3 (LE u64 each).
const FOOTER: u64 = 16;
/// The header line's cap (a few hundred paths).
const MAX_HEADER: u64 = 4 << 20;
/// The entries are trimmed to this, oldest first, after each write.
const MAX_TOTAL: u64 = 2 << 30;
/// Set (to anything but empty) to neither read nor write entries.
pub const OFF_ENV: &str = "TIERSCOPE_NO_OUTPUT_CACHE";

/// Where one command's output for one source, flags and binary is kept.
pub struct OutputCache {
    path: PathBuf,
    guard: OutputGuard,
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: String,
    /// When the output was made (UTC), for the note a hit prints.
    made_at: String,
    /// Each file beside the source the load read or looked for, with its stat hash.
    beside: Vec<(PathBuf, u64)>,
    warnings: Vec<String>,
}

/// A kept output whose files are all unchanged, its bytes still in the file (a 100k-request
/// session's output is a quarter of a gigabyte: streamed, not held).
pub struct Hit {
    pub warnings: Vec<String>,
    /// When the kept output was made (UTC).
    pub made_at: String,
    body: io::BufReader<io::Take<std::fs::File>>,
}

impl Hit {
    /// Copy the kept output to `out`.
    pub fn copy_to(mut self, out: &mut impl Write) -> io::Result<u64> {
        io::copy(&mut self.body, out)
    }
}

impl OutputCache {
    /// The entry for `command` run with `args` on `load`'s source, or `None` when nothing is
    /// kept: no explicit source path (the default source is a discovery, not a file), the cache
    /// turned off or without a dir, a cache dir inside the input's own dir (refused as the token
    /// cache's is), an `outputs` dir that is a symlink (it would put entries elsewhere), or a
    /// source that cannot be told unchanged.
    pub fn for_command(command: &str, args: &impl Debug, load: &LoadArgs) -> Option<OutputCache> {
        if std::env::var_os(OFF_ENV).is_some_and(|v| !v.is_empty()) {
            return None;
        }
        let source = std::path::absolute(load.path.as_deref()?).ok()?;
        let dir = tierscope_engine::tokens::default_cache_dir()?;
        let inputs: Vec<&Path> = [Some(source.as_path()), load.magic_context.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let outputs = dir.join("outputs");
        if output_guard::cache_dir_refusal(&dir, &inputs).is_some()
            || output_guard::cache_dir_refusal(&outputs, &inputs).is_some()
            || is_elsewhere(&outputs)
        {
            return None;
        }
        let target = WatchTarget::for_path(&source).ok()?;
        // Gone (or unreadable) now: the load will say why, nothing is kept.
        std::fs::metadata(&source).ok()?;
        let mut h = Xxh3::new();
        for part in [FORMAT, command, &format!("{args:?}")] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        // The flags' relative paths resolve against the working dir; the default dirs (sidecars,
        // Magic Context) against these variables.
        if let Ok(cwd) = std::env::current_dir() {
            h.update(cwd.as_os_str().as_encoded_bytes());
        }
        for var in ["HOME", "XDG_DATA_HOME"] {
            h.update(var.as_bytes());
            if let Some(v) = std::env::var_os(var) {
                h.update(v.as_encoded_bytes());
            }
            h.update(&[0]);
        }
        // This binary: a rebuild draws episodes anew.
        if let Ok(exe) = std::env::current_exe() {
            watch::stat_into(&mut h, &exe);
        }
        // The source's own path (its inode with the rest when it is a file) and its files.
        stamp_into(&mut h, &source);
        for p in target.files() {
            stamp_into(&mut h, &p);
        }
        for db in target.databases() {
            // The listing cache's marker: headers, the WAL's salts and last frame checksum.
            Marker::of(&db).hash(&mut h);
        }
        let guard = OutputGuard::for_load(&load.options());
        Some(OutputCache {
            path: outputs.join(format!("{command}-{:016x}.json", h.digest())),
            guard,
        })
    }

    /// The kept output, when there is one and every file beside the source is unchanged.
    pub fn lookup(&self) -> Option<Hit> {
        use std::io::{BufRead, Seek, SeekFrom};
        let (mut file, len) =
            tierscope_engine::cache_file::open_capped(&self.path, MAX_HEADER + MAX_ENTRY + FOOTER)
                .ok()?;
        // The footer: the output's length and xxh3, so a torn entry (a crash before its bytes
        // reached the disk) or a damaged one is a miss, never half a document.
        let f = file.get_mut();
        f.seek(SeekFrom::Start(len.checked_sub(FOOTER)?)).ok()?;
        let mut footer = [0u8; FOOTER as usize];
        f.read_exact(&mut footer).ok()?;
        f.seek(SeekFrom::Start(0)).ok()?;
        let (len_bytes, hash_bytes) = footer.split_at(8);
        let body_len = u64::from_le_bytes(len_bytes.try_into().ok()?);
        let body_hash = u64::from_le_bytes(hash_bytes.try_into().ok()?);
        let mut reader = io::BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        (&mut reader)
            .take(MAX_HEADER)
            .read_until(b'\n', &mut line)
            .ok()?;
        let start = line.len() as u64;
        if line.last() != Some(&b'\n') || start + body_len + FOOTER != len {
            return None;
        }
        line.pop();
        let header: Header = serde_json::from_slice(&line).ok()?;
        if header.format != FORMAT || header.beside.iter().any(|(p, hash)| stat_hash(p) != *hash) {
            return None;
        }
        // Checked whole before a byte is printed (a pass over the page cache: 24 MB in a few ms).
        let mut h = Xxh3::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut left = body_len;
        while left > 0 {
            let n = reader.read(&mut buf[..left.min(1 << 16) as usize]).ok()?;
            if n == 0 {
                return None;
            }
            h.update(&buf[..n]);
            left -= n as u64;
        }
        if h.digest() != body_hash {
            return None;
        }
        let mut file = reader.into_inner();
        file.get_mut().seek(SeekFrom::Start(start)).ok()?;
        file.set_limit(body_len);
        Some(Hit {
            warnings: header.warnings,
            made_at: header.made_at,
            body: io::BufReader::with_capacity(1 << 16, file),
        })
    }

    /// A new entry for an output about to be written: the files beside the source as they are
    /// now (stat before the output, so a change while it is written makes the entry stale, not
    /// wrong) and the warnings the load printed. `None` when the entry cannot be created.
    pub fn entry(&self, beside: Vec<PathBuf>, warnings: &[String]) -> Option<Entry> {
        let mut file = AtomicFile::create(&self.path, &self.guard).ok()?;
        let header = Header {
            format: FORMAT.to_owned(),
            made_at: chrono::Utc::now()
                .format("%Y-%m-%d %H:%M:%S UTC")
                .to_string(),
            beside: beside
                .into_iter()
                .map(|p| {
                    let h = stat_hash(&p);
                    (p, h)
                })
                .collect(),
            warnings: warnings.to_vec(),
        };
        serde_json::to_writer(&mut file, &header).ok()?;
        file.write_all(b"\n").ok()?;
        Some(Entry {
            file,
            dir: self.path.parent()?.to_owned(),
            written: 0,
            hash: Xxh3::new(),
            failed: false,
        })
    }
}

/// An entry being written beside the output ([`Tee`]); kept by [`Entry::keep`].
pub struct Entry {
    file: AtomicFile,
    dir: PathBuf,
    written: u64,
    hash: Xxh3,
    failed: bool,
}

impl Entry {
    /// Keep the entry (unless it grew past the cap or a write failed), then trim the cache.
    pub fn keep(mut self) {
        if self.failed
            || self.file.write_all(&self.written.to_le_bytes()).is_err()
            || self
                .file
                .write_all(&self.hash.digest().to_le_bytes())
                .is_err()
            || self.file.commit_unsynced().is_err()
        {
            return;
        }
        trim(&self.dir, MAX_TOTAL);
    }

    fn take(&mut self, buf: &[u8]) {
        if self.failed {
            return;
        }
        self.written += buf.len() as u64;
        self.hash.update(buf);
        if self.written > MAX_ENTRY || self.file.write_all(buf).is_err() {
            // Dropped without a commit, the temporary file goes.
            self.failed = true;
        }
    }
}

/// Writes to `out` and, on the side, to an entry: a failing entry never fails the output.
pub struct Tee<'a, W: Write> {
    pub out: W,
    pub entry: &'a mut Entry,
}

impl<W: Write> Write for Tee<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.entry.take(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `outputs` exists as something other than a directory of its own (a symlink to one elsewhere,
/// beside a recording for instance, or a file): entries are only ever written inside the cache dir.
fn is_elsewhere(outputs: &Path) -> bool {
    std::fs::symlink_metadata(outputs).is_ok_and(|m| !m.is_dir())
}

/// [`stamp_into`] of `p` alone.
fn stat_hash(p: &Path) -> u64 {
    let mut h = Xxh3::new();
    stamp_into(&mut h, p);
    h.digest()
}

/// (path, size, mtime, inode) of `p` (its path alone when it is missing), and its change time:
/// an edit in place that keeps the size and sets the mtime back (`touch -d`) still moves it.
/// Not for a database's `-wal` / `-shm`, whose change time a root reader's open moves; their
/// content is keyed by the database's [`Marker`].
fn stamp_into(h: &mut Xxh3, p: &Path) {
    watch::stat_into(h, p);
    let sqlite_side = p
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with("-wal") || n.ends_with("-shm"));
    #[cfg(unix)]
    if !sqlite_side {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(p) {
            h.update(&m.ctime().to_le_bytes());
            h.update(&m.ctime_nsec().to_le_bytes());
        }
    }
}

/// Remove the oldest entries of `dir` until the rest fit in `cap` bytes.
fn trim(dir: &Path, cap: u64) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = rd
        .filter_map(|e| {
            let e = e.ok()?;
            let m = e.metadata().ok()?;
            if !m.is_file() {
                return None;
            }
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, path) in entries {
        if total <= cap {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_removes_the_oldest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            let p = dir.path().join(name);
            std::fs::write(&p, vec![0u8; 10]).expect("write");
            let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(i as u64);
            std::fs::File::options()
                .write(true)
                .open(&p)
                .and_then(|f| f.set_modified(t))
                .expect("mtime");
        }
        trim(dir.path(), 20);
        let left: Vec<bool> = ["a", "b", "c"]
            .iter()
            .map(|n| dir.path().join(n).exists())
            .collect();
        assert_eq!(left, [false, true, true]);
    }

    #[test]
    fn a_missing_file_and_a_created_one_hash_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("x.probes.json");
        let missing = stat_hash(&p);
        std::fs::write(&p, "[]").expect("write");
        assert_ne!(missing, stat_hash(&p));
    }
}

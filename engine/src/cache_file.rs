//! Reading a cache file as untrusted input. A cache dir is ours, but whatever sits at a cache
//! file's path is not: a symlink to `/dev/zero` or to a 20 GiB sparse file would be read whole,
//! a FIFO would block the run forever. So a cache file is opened without following a symlink
//! and without blocking, checked on the opened handle to be a regular file no larger than the
//! cache's cap, and read no further than that cap. Anything else is a miss: the caller rebuilds
//! the entry and writes it back (a rename replaces whatever was at the path, not its target).

use std::io::Read;
use std::path::Path;

/// Why a cache file was not read (for tests and messages; every case is a miss).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("cannot open it: {0}")]
    Open(std::io::ErrorKind),
    #[error("not a regular file")]
    NotRegular,
    #[error("larger than the cache's cap of {0} bytes")]
    TooLarge(u64),
    #[error("cannot read it: {0}")]
    Read(std::io::ErrorKind),
}

/// The bytes of the cache file at `path`: a regular file (not through a symlink) of at most `cap`
/// bytes, opened without blocking.
pub fn read(path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    let (file, len) = open_checked(path, cap)?;
    let mut bytes = Vec::with_capacity(len as usize);
    // A file that grows while read stops at the cap too.
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refused::Read(e.kind()))?;
    if bytes.len() as u64 > cap {
        return Err(Refused::TooLarge(cap));
    }
    Ok(bytes)
}

/// The cache file at `path` opened for reading as it streams (see [`read`]): a regular file, not
/// through a symlink, of at most `cap` bytes when opened; no more than `cap` bytes are read from
/// the handle, even if it grows. Also its length.
pub fn open_capped(path: &Path, cap: u64) -> Result<(std::io::Take<std::fs::File>, u64), Refused> {
    let (file, len) = open_checked(path, cap)?;
    Ok((file.take(cap), len))
}

fn open_checked(path: &Path, cap: u64) -> Result<(std::fs::File, u64), Refused> {
    let file = open(path).map_err(|e| Refused::Open(e.kind()))?;
    let meta = file.metadata().map_err(|e| Refused::Open(e.kind()))?;
    if !meta.is_file() {
        return Err(Refused::NotRegular);
    }
    if meta.len() > cap {
        return Err(Refused::TooLarge(cap));
    }
    Ok((file, meta.len()))
}

/// The first `n` bytes of the regular file at `path` (following a symlink: this is a user's
/// file, e.g. a database header), without blocking on a FIFO or reading a device.
pub fn head(path: &Path, n: u64) -> Option<Vec<u8>> {
    let file = open_with(path, false).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut b = Vec::with_capacity(n as usize);
    file.take(n).read_to_end(&mut b).ok()?;
    Some(b)
}

/// `n` bytes at `offset` of the regular file at `path` (see [`head`]).
pub fn read_at(path: &Path, offset: u64, n: u64) -> Option<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_with(path, false).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    file.seek(SeekFrom::Start(offset)).ok()?;
    let mut b = Vec::with_capacity(n as usize);
    file.take(n).read_to_end(&mut b).ok()?;
    Some(b)
}

fn open(path: &Path) -> std::io::Result<std::fs::File> {
    open_with(path, true)
}

#[cfg(unix)]
fn open_with(path: &Path, no_follow: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let flags = libc::O_NONBLOCK | if no_follow { libc::O_NOFOLLOW } else { 0 };
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
}

#[cfg(not(unix))]
fn open_with(path: &Path, no_follow: bool) -> std::io::Result<std::fs::File> {
    if no_follow && std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(std::io::Error::other("a symbolic link"));
    }
    std::fs::File::open(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_within_the_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.bin");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(read(&p, 3).unwrap(), b"abc");
        assert_eq!(read(&p, 2), Err(Refused::TooLarge(2)));
        assert_eq!(head(&p, 2).unwrap(), b"ab");
    }

    #[test]
    fn symlinks_devices_fifos_and_sparse_giants_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("zero.bin");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(read(&link, 1 << 20), Err(Refused::Open(_))));
        assert_eq!(
            read(Path::new("/dev/zero"), 1 << 20),
            Err(Refused::NotRegular)
        );
        assert_eq!(head(Path::new("/dev/zero"), 100), None);
        let sparse = dir.path().join("sparse.bin");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(20 << 30)
            .unwrap();
        assert_eq!(read(&sparse, 1 << 20), Err(Refused::TooLarge(1 << 20)));
        let fifo = dir.path().join("fifo.bin");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        assert_eq!(read(&fifo, 1 << 20), Err(Refused::NotRegular));
        assert_eq!(head(&fifo, 100), None);
    }
}

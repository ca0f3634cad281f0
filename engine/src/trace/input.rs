//! Reading a file a user named: only regular files (a FIFO would block forever, `/dev/urandom`
//! would grow without end), and never more than a cap, with a message that says which.

use std::io::Read;
use std::path::Path;

use super::error::LoadError;

/// What a path is when it is not a regular file or directory, in words.
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Refuse anything but a regular file (following symlinks), before it is opened: opening a
/// FIFO for reading blocks until someone writes.
pub fn check_regular(path: &Path) -> Result<std::fs::Metadata, LoadError> {
    let meta = std::fs::metadata(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_file() {
        return Err(LoadError::NotAFile {
            path: path.to_owned(),
            kind: file_kind(&meta),
        });
    }
    Ok(meta)
}

/// The bytes of the regular file `path`, refused when larger than `cap` (checked before reading
/// and again while reading, for a file that grows).
pub fn read_bounded(path: &Path, cap: u64) -> Result<Vec<u8>, LoadError> {
    let meta = check_regular(path)?;
    let too_big = |size: u64| LoadError::TooLarge {
        path: path.to_owned(),
        size,
        cap,
    };
    if meta.len() > cap {
        return Err(too_big(meta.len()));
    }
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(cap + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text (for configuration and sidecar files).
pub fn read_text_bounded(path: &Path, cap: u64) -> Result<String, LoadError> {
    let bytes = read_bounded(path, cap)?;
    String::from_utf8(bytes).map_err(|e| LoadError::Io {
        path: path.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 (at byte {})", e.utf8_error().valid_up_to()),
        ),
    })
}

/// The largest configuration file read (a policy, classification rules).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The largest sidecar read (`*.tiers.json` holds the text of every tier).
pub const MAX_SIDECAR_BYTES: u64 = 1 << 30;

/// [`read_text_bounded`] for callers with `std::io::Error` in their error types: a file that is
/// not regular or too large is an `InvalidInput` error saying so.
pub fn read_to_string_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    read_text_bounded(path, cap).map_err(|e| match e {
        LoadError::Io { source, .. } => source,
        other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string()),
    })
}

/// `bytes` as text: borrowed when valid UTF-8, else with each invalid sequence replaced and a
/// `non_utf8` diagnostic naming `what` and where the first one is.
pub fn lossy_utf8<'b>(
    bytes: &'b [u8],
    what: &dyn std::fmt::Display,
    diags: &mut super::diagnostics::Diagnostics,
) -> std::borrow::Cow<'b, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(e) => {
            diags.push(
                super::diagnostics::DiagnosticKind::NonUtf8,
                format!(
                    "{what}: invalid UTF-8 at byte {}; replaced",
                    e.valid_up_to()
                ),
            );
            String::from_utf8_lossy(bytes)
        }
    }
}

/// Megabytes for messages.
pub fn human_size(n: u64) -> String {
    if n >= 1 << 30 {
        format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_before_they_are_opened() {
        let e = read_bounded(Path::new("/dev/urandom"), 10).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f.json");
        let ok = std::process::Command::new("mkfifo").arg(&fifo).status();
        if ok.is_ok_and(|s| s.success()) {
            let e = read_bounded(&fifo, 10).unwrap_err();
            assert!(e.to_string().contains("FIFO"), "{e}");
        }
    }

    #[test]
    fn a_file_over_the_cap_is_refused_with_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.json");
        std::fs::write(&p, vec![b' '; 2048]).unwrap();
        let e = read_bounded(&p, 1024).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
        assert_eq!(read_bounded(&p, 4096).unwrap().len(), 2048);
    }
}

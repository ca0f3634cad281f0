//! Ids that become file names. OpenCode names its JSON files after ids (`message/<session>/`,
//! `part/<message>/`, `project/<id>.json`) and tierscope finds sidecars by session id, but an id
//! is data from the file it came from: `../../outside` joined to a path would read (or write)
//! outside the data dir. An id is joined to a path only through a [`PlainName`], which holds only
//! a plain name: one path component, not `.` or `..`, no separator, NUL or control character.

use std::path::{Path, PathBuf};

/// The longest file name most file systems allow, in bytes.
const MAX_NAME_BYTES: usize = 255;

/// An id checked to be one plain file name (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainName<'a>(&'a str);

/// Why an id cannot name a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("id {shown} is not a plain file name ({why})")]
pub struct BadId {
    /// The id, escaped and clipped (it is untrusted text).
    pub shown: String,
    pub why: &'static str,
}

impl<'a> PlainName<'a> {
    /// `id` when it is a plain name.
    pub fn new(id: &'a str) -> Result<PlainName<'a>, BadId> {
        let bad = |why| BadId {
            shown: format!("{:?}", crate::text::clip_chars(id, 80)),
            why,
        };
        if id.is_empty() {
            return Err(bad("empty"));
        }
        if id == "." || id == ".." {
            return Err(bad("a directory reference"));
        }
        if id.len() > MAX_NAME_BYTES {
            return Err(bad("longer than 255 bytes"));
        }
        if id.contains(['/', '\\']) {
            return Err(bad("holds a path separator"));
        }
        if id.chars().any(char::is_control) {
            return Err(bad("holds a control character"));
        }
        Ok(PlainName(id))
    }

    pub fn as_str(&self) -> &'a str {
        self.0
    }

    /// `dir/<id>`.
    pub fn dir_in(&self, dir: &Path) -> PathBuf {
        dir.join(self.0)
    }

    /// `dir/<id><suffix>` (`suffix` is ours, e.g. `.json` or `.tiers.json`).
    pub fn file_in(&self, dir: &Path, suffix: &str) -> PathBuf {
        dir.join(format!("{}{suffix}", self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_ids_are_plain_names() {
        for id in [
            "ses_dd584fea1fferO2dnWzHsfVmcZ",
            "msg_01J9",
            "prt-x.y",
            "..hidden",
            "e30e693b584501b7c308256ce03b9a0b3c7d8fe3",
        ] {
            assert!(PlainName::new(id).is_ok(), "{id}");
        }
        let dir = Path::new("/data/storage/message");
        let id = PlainName::new("ses_1").unwrap();
        assert_eq!(id.dir_in(dir), dir.join("ses_1"));
        assert_eq!(id.file_in(dir, ".json"), dir.join("ses_1.json"));
    }

    #[test]
    fn anything_that_could_leave_the_directory_is_refused() {
        for id in [
            "",
            ".",
            "..",
            "../../../../tmp/x/outside/parts",
            "/etc",
            "a/b",
            "a\\..\\b",
            "a\0b",
            "a\nb",
            "\u{1b}[2J",
        ] {
            let e = PlainName::new(id).unwrap_err();
            assert!(
                !e.shown.contains('\n') && !e.shown.contains('\u{1b}'),
                "{e}"
            );
        }
        assert!(PlainName::new(&"x".repeat(256)).is_err());
    }
}

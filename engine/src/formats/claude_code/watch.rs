//! What a followed Claude Code source is made of: a session file and, beside it, its
//! `<session>/subagents/agent-*.jsonl` and `.meta.json` (a sub-agent appears as a new file while
//! the session runs); or, for a directory, every `*.jsonl` and `*.meta.json` under it.

use std::path::{Path, PathBuf};

use super::subagents::subagents_dir;
use crate::trace::adapter::WatchSpec;
use crate::watch::sorted_entries;

/// How deep a directory source is walked (data dir → projects → project → session → subagents).
const MAX_DEPTH: usize = 5;

/// See the module docs.
#[derive(Debug, Clone)]
pub struct ClaudeCodeWatch {
    path: PathBuf,
    is_dir: bool,
}

impl ClaudeCodeWatch {
    pub fn new(path: &Path, is_dir: bool) -> ClaudeCodeWatch {
        ClaudeCodeWatch {
            path: path.to_owned(),
            is_dir,
        }
    }
}

fn is_transcript_file(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".jsonl") || n.ends_with(".meta.json"))
}

fn walk(out: &mut Vec<PathBuf>, dir: &Path, depth: usize) {
    for p in sorted_entries(Some(dir)) {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() && depth < MAX_DEPTH => walk(out, &p, depth + 1),
            Ok(m) if m.is_file() && is_transcript_file(&p) => out.push(p),
            _ => {}
        }
    }
}

impl WatchSpec for ClaudeCodeWatch {
    /// The directory holding the file, recursively (the sub-agents dir may not exist yet).
    fn roots(&self) -> Vec<(PathBuf, bool)> {
        if self.is_dir {
            return vec![(self.path.clone(), true)];
        }
        let parent = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_owned);
        vec![(parent, true)]
    }

    fn is_relevant(&self, p: &Path) -> bool {
        if self.is_dir {
            return p.starts_with(&self.path) && is_transcript_file(p);
        }
        p == self.path
            || subagents_dir(&self.path)
                .is_some_and(|d| p.parent() == Some(d.as_path()) && is_transcript_file(p))
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if self.is_dir {
            walk(&mut out, &self.path, 0);
            return out;
        }
        out.push(self.path.clone());
        if let Some(d) = subagents_dir(&self.path) {
            out.extend(
                sorted_entries(Some(&d))
                    .into_iter()
                    .filter(|p| is_transcript_file(p)),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::Xxh3;

    #[test]
    fn a_new_sub_agent_file_changes_a_followed_session() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("s1.jsonl");
        std::fs::write(&file, "{}\n").expect("write");
        let w = ClaudeCodeWatch::new(&file, false);
        let print = || {
            let mut h = Xxh3::new();
            w.fingerprint_into(&mut h);
            h.digest()
        };
        let before = print();
        let subs = dir.path().join("s1").join("subagents");
        std::fs::create_dir_all(&subs).expect("mkdir");
        let agent = subs.join("agent-a1.jsonl");
        std::fs::write(&agent, "{}\n").expect("write");
        assert_ne!(print(), before);
        assert!(w.is_relevant(&agent));
        assert!(w.is_relevant(&file));
        assert!(!w.is_relevant(&dir.path().join("s1").join("tool-results").join("x.txt")));
        assert!(!w.is_relevant(&dir.path().join("other.jsonl")));
        assert_eq!(w.roots(), [(dir.path().to_owned(), true)]);
    }
}

//! What a followed Codex input is made of: one rollout file (Codex appends to it), or a home's
//! rollout trees with its thread index (the index's `-shm` changes on every read and is ignored).

use std::path::{Path, PathBuf};

use super::home::thread_id_of;
use super::input::Input;
use super::state_db::FILE as INDEX;
use crate::trace::adapter::WatchSpec;
use crate::watch::{side_file, sorted_entries};

/// See the module docs.
#[derive(Debug, Clone)]
pub struct CodexWatch {
    input: Input,
}

impl CodexWatch {
    pub fn new(input: Input) -> CodexWatch {
        CodexWatch { input }
    }

    /// The home whose index belongs to the source, if any.
    fn home(&self) -> Option<&Path> {
        match &self.input {
            Input::Home(h) | Input::Sessions { home: h, .. } => Some(h),
            Input::Rollout(_) => None,
        }
    }

    /// The trees holding rollouts.
    fn trees(&self) -> Vec<PathBuf> {
        match &self.input {
            Input::Home(h) => vec![h.join("sessions"), h.join("archived_sessions")],
            Input::Sessions { dir, .. } => vec![dir.clone()],
            Input::Rollout(_) => Vec::new(),
        }
    }
}

impl WatchSpec for CodexWatch {
    fn roots(&self) -> Vec<(PathBuf, bool)> {
        match &self.input {
            Input::Rollout(p) => {
                let parent = p
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), Path::to_owned);
                vec![(parent, false)]
            }
            _ => {
                let mut roots: Vec<(PathBuf, bool)> = self
                    .home()
                    .map(|h| (h.to_owned(), false))
                    .into_iter()
                    .collect();
                roots.extend(
                    self.trees()
                        .into_iter()
                        .filter(|t| t.is_dir())
                        .map(|t| (t, true)),
                );
                roots
            }
        }
    }

    fn is_relevant(&self, p: &Path) -> bool {
        match &self.input {
            Input::Rollout(f) => p == f,
            _ => {
                if let Some(h) = self.home() {
                    let index = h.join(INDEX);
                    if p == index || p == side_file(&index, "-wal") {
                        return true;
                    }
                }
                thread_id_of(p).is_some() && self.trees().iter().any(|t| p.starts_with(t))
            }
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        if let Input::Rollout(f) = &self.input {
            return vec![f.clone()];
        }
        let mut out = Vec::new();
        if let Some(home) = self.home() {
            let index = home.join(INDEX);
            out.push(side_file(&index, "-wal"));
            out.insert(0, index);
        }
        for tree in self.trees() {
            walk(&mut out, &tree, 4);
        }
        out
    }

    fn databases(&self) -> Vec<PathBuf> {
        self.home()
            .map(|h| h.join(INDEX))
            .filter(|p| p.is_file())
            .into_iter()
            .collect()
    }
}

/// Every rollout file under `dir`, in name order, a few levels down (symlinks not followed).
fn walk(out: &mut Vec<PathBuf>, dir: &Path, depth: usize) {
    for p in sorted_entries(Some(dir)) {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() && depth > 0 => walk(out, &p, depth - 1),
            Ok(m) if m.is_file() && thread_id_of(&p).is_some() => out.push(p),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::Xxh3;

    fn fp(w: &CodexWatch) -> u64 {
        let mut h = Xxh3::new();
        w.fingerprint_into(&mut h);
        h.digest()
    }

    #[test]
    fn an_appended_line_or_a_new_thread_changes_the_fingerprint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join(".codex");
        let day = home.join("sessions/2026/12/02");
        std::fs::create_dir_all(&day).expect("mkdir");
        let file =
            day.join("rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa76.jsonl");
        std::fs::write(&file, "{}\n").expect("write");
        let one = CodexWatch::new(Input::Rollout(file.clone()));
        let all = CodexWatch::new(Input::Home(home.clone()));
        assert_eq!(one.roots(), vec![(day.clone(), false)]);
        assert_eq!(
            all.roots(),
            vec![(home.clone(), false), (home.join("sessions"), true)]
        );
        assert!(one.is_relevant(&file) && all.is_relevant(&file));
        assert!(all.is_relevant(&home.join("state_5.sqlite-wal")));
        assert!(!all.is_relevant(&home.join("state_5.sqlite-shm")));
        assert!(!all.is_relevant(&home.join("config.toml")));
        let (a1, b1) = (fp(&one), fp(&all));
        std::fs::write(&file, "{}\n{\"type\":\"event_msg\"}\n").expect("append");
        let (a2, b2) = (fp(&one), fp(&all));
        assert!(a1 != a2 && b1 != b2);
        let other =
            day.join("rollout-2026-12-02T06-00-00-01a23555-a9c3-78b2-acc5-cacf3e71aa77.jsonl");
        std::fs::write(&other, "{}\n").expect("write");
        assert_eq!(fp(&one), a2);
        assert_ne!(fp(&all), b2);
    }
}

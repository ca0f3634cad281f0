//! Where Codex keeps its threads: `$CODEX_HOME` (default `~/.codex`), its rollout files under
//! `sessions/YYYY/MM/DD/` and `archived_sessions/`, and its thread index.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::trace::adapter::Env;

/// `$CODEX_HOME` when set, else `~/.codex` (whether or not it exists).
pub fn codex_home(env: &Env) -> Option<PathBuf> {
    match env.var("CODEX_HOME") {
        Some(h) => Some(PathBuf::from(h)),
        None => env.home.as_ref().map(|h| h.join(".codex")),
    }
}

/// The thread id a rollout file's name ends with (`rollout-<time>-<uuid>.jsonl`).
pub fn thread_id_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    // A UUID is 36 characters: 8-4-4-4-12.
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    let ok = id.len() == 36
        && id.char_indices().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    ok.then(|| id.to_owned())
}

/// A rollout file found under a Codex home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutFile {
    pub thread_id: String,
    pub path: PathBuf,
    /// Under `archived_sessions/`.
    pub archived: bool,
}

/// Every rollout file under `home` (`sessions/` and `archived_sessions/`, a few levels deep),
/// one per thread id: the active copy wins over an archived one, and of two active copies the
/// later path (a later day's directory).
pub fn rollout_files(home: &Path) -> Vec<RolloutFile> {
    let mut by_id: BTreeMap<String, RolloutFile> = BTreeMap::new();
    for (dir, archived) in [("archived_sessions", true), ("sessions", false)] {
        let mut found = Vec::new();
        walk(&home.join(dir), 4, &mut found);
        found.sort();
        for path in found {
            let Some(thread_id) = thread_id_of(&path) else {
                continue;
            };
            by_id.insert(
                thread_id.clone(),
                RolloutFile {
                    thread_id,
                    path,
                    archived,
                },
            );
        }
    }
    by_id.into_values().collect()
}

/// Regular `rollout-*.jsonl` files under `dir`, at most `depth` directories down; symlinked
/// directories are not followed (a loop must not hang a listing).
fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() && depth > 0 {
            walk(&p, depth - 1, out);
        } else if ft.is_file() && thread_id_of(&p).is_some() {
            out.push(p);
        }
    }
}

/// Where the rollout a `threads` row names is on this machine: the path itself when it is there,
/// else the same file under `home` (a copied or moved `$CODEX_HOME`: the part from `sessions/`
/// or `archived_sessions/` on).
pub fn resolve_rollout(home: &Path, recorded: &Path) -> Option<PathBuf> {
    if recorded.is_file() {
        return Some(recorded.to_owned());
    }
    let comps: Vec<_> = recorded.components().collect();
    let at = comps.iter().rposition(|c| {
        let s = c.as_os_str();
        s == "sessions" || s == "archived_sessions"
    })?;
    let mut p = home.to_owned();
    for c in &comps[at..] {
        p.push(c);
    }
    p.is_file().then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_the_file_name() {
        assert_eq!(
            thread_id_of(Path::new(
                "s/rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa76.jsonl"
            ))
            .as_deref(),
            Some("01a23555-a9c3-78b2-acc5-cacf3e71aa76")
        );
        assert_eq!(thread_id_of(Path::new("rollout-short.jsonl")), None);
        assert_eq!(thread_id_of(Path::new("notes.jsonl")), None);
    }

    #[test]
    fn the_active_copy_wins_over_the_archived_one() {
        let home = tempfile::tempdir().expect("tempdir");
        let id = "01a23555-a9c3-78b2-acc5-cacf3e71aa76";
        let name = format!("rollout-2026-12-02T05-58-56-{id}.jsonl");
        let day = home.path().join("sessions/2026/12/02");
        std::fs::create_dir_all(&day).expect("mkdir");
        std::fs::create_dir_all(home.path().join("archived_sessions")).expect("mkdir");
        std::fs::write(day.join(&name), "{}\n").expect("write");
        std::fs::write(home.path().join("archived_sessions").join(&name), "{}\n").expect("write");
        let files = rollout_files(home.path());
        assert_eq!(files.len(), 1);
        assert!(!files[0].archived);
        assert_eq!(files[0].path, day.join(&name));
        let env = Env::default().with_var("CODEX_HOME", "/x/codex");
        assert_eq!(codex_home(&env), Some(PathBuf::from("/x/codex")));
        let env = Env {
            home: Some("/home/u".into()),
            ..Env::default()
        };
        assert_eq!(codex_home(&env), Some(PathBuf::from("/home/u/.codex")));
        assert_eq!(
            resolve_rollout(
                home.path(),
                &Path::new("/elsewhere/.codex/sessions/2026/12/02").join(&name)
            ),
            Some(day.join(&name))
        );
    }
}

//! What a path is to Codex, where Codex keeps its data, and what reading an input touches: the
//! parts of [`crate::trace::adapter::Adapter`] that do not need a loaded session, called by
//! [`super::adapter::Codex`].

use std::io::Read;
use std::path::{Path, PathBuf};

use super::home::{codex_home, thread_id_of};
use super::state_db::FILE as INDEX;
use crate::trace::adapter::{Confidence, Detection, Env, ReadPart};
use crate::trace::error::LoadError;
use crate::trace::sqlite::looks_like_sqlite;

/// What a Codex input is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A `$CODEX_HOME`: `sessions/`, `archived_sessions/`, `state_5.sqlite`.
    Home(PathBuf),
    /// Its `sessions/` (or `archived_sessions/`) dir; `home` is the dir above it.
    Sessions { dir: PathBuf, home: PathBuf },
    /// One rollout file.
    Rollout(PathBuf),
}

impl Input {
    /// The adapter's word for it.
    pub fn kind(&self) -> &'static str {
        match self {
            Input::Home(_) => "codex home",
            Input::Sessions { .. } => "sessions dir",
            Input::Rollout(_) => "rollout",
        }
    }
}

/// `path` as a Codex input, with how sure that is; `meta` is its metadata.
pub fn classify(path: &Path, meta: &std::fs::Metadata) -> Option<(Input, Confidence)> {
    if meta.is_dir() {
        if is_home(path) {
            return Some((Input::Home(path.to_owned()), Confidence::Content));
        }
        let name = path.file_name().and_then(|n| n.to_str());
        let home = path
            .parent()
            .filter(|h| h.join(INDEX).is_file() || is_home(h));
        if matches!(name, Some("sessions" | "archived_sessions")) {
            if let Some(home) = home {
                return Some((
                    Input::Sessions {
                        dir: path.to_owned(),
                        home: home.to_owned(),
                    },
                    Confidence::Content,
                ));
            }
        }
        return None;
    }
    if !meta.is_file() {
        return None;
    }
    if starts_like_rollout(path) {
        return Some((Input::Rollout(path.to_owned()), Confidence::Content));
    }
    // Codex creates the file before its first line is written.
    (thread_id_of(path).is_some() && meta.len() == 0)
        .then(|| (Input::Rollout(path.to_owned()), Confidence::Name))
}

/// [`classify`] as the adapter seam's [`Detection`].
pub fn detect(path: &Path, meta: &std::fs::Metadata) -> Option<Detection> {
    classify(path, meta).map(|(input, confidence)| Detection {
        kind: input.kind(),
        confidence,
    })
}

/// A dir holding Codex's thread index or its session trees.
fn is_home(dir: &Path) -> bool {
    let index = dir.join(INDEX);
    (index.is_file() && looks_like_sqlite(&index))
        || looks_like_sessions(&dir.join("sessions"))
        || looks_like_sessions(&dir.join("archived_sessions"))
}

/// A dir of Codex's session tree: it holds a year's dir (`2026/`) or rollout files.
fn looks_like_sessions(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        let year = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.len() == 4 && n.bytes().all(|b| b.is_ascii_digit()));
        (year && p.is_dir()) || thread_id_of(&p).is_some()
    })
}

/// Whether the file's first line is a rollout's first record (`session_meta`), read from its
/// first 4 KiB (the record itself can be far longer: it carries the base instructions).
fn starts_like_rollout(path: &Path) -> bool {
    let mut head = Vec::with_capacity(4096);
    let read = std::fs::File::open(path).and_then(|f| f.take(4096).read_to_end(&mut head));
    if read.is_err() {
        return false;
    }
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = first.trim_ascii_start();
    first.starts_with(b"{")
        && first.windows(14).any(|w| w == b"\"session_meta\"")
        && first.windows(9).any(|w| w == b"\"payload\"")
}

/// Where Codex keeps its data in `env`, whether or not it exists: `$CODEX_HOME` and `~/.codex`
/// (data left there after the variable was set is still Codex's).
pub fn data_dirs(env: &Env) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = codex_home(env).into_iter().collect();
    if let Some(h) = &env.home {
        let default = h.join(".codex");
        if !dirs.contains(&default) {
            dirs.push(default);
        }
    }
    dirs
}

/// With no path given: the Codex home of this machine when it holds threads. A `$CODEX_HOME`
/// that does not exist is an error (it was asked for); a missing `~/.codex` is no data.
pub fn discover(env: &Env) -> Result<Option<PathBuf>, LoadError> {
    let Some(home) = codex_home(env) else {
        return Ok(None);
    };
    if env.var("CODEX_HOME").is_some() && !home.is_dir() {
        return Err(LoadError::Io {
            path: home,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "CODEX_HOME does not exist"),
        });
    }
    Ok(is_home(&home).then_some(home))
}

/// Everything reading `input` touches, for the output guard: the home or sessions dir as a
/// whole and the thread index with its side files, or the one rollout file.
pub fn read_parts(input: &Input) -> Vec<ReadPart> {
    let index = |home: &Path| {
        let p = home.join(INDEX);
        p.is_file().then_some(ReadPart::Database {
            path: p,
            what: "Codex thread index",
        })
    };
    match input {
        Input::Home(home) => {
            let mut parts = vec![ReadPart::Dir {
                path: home.clone(),
                what: "input Codex home",
            }];
            parts.extend(index(home));
            parts
        }
        // The home the input lies in is the CLI's: a file created there could be taken for
        // one of its own (a rollout, a database's side file).
        Input::Sessions { dir, home } => {
            let mut parts = vec![
                ReadPart::Dir {
                    path: dir.clone(),
                    what: "input Codex sessions dir",
                },
                ReadPart::Dir {
                    path: home.clone(),
                    what: "Codex home holding the input",
                },
            ];
            parts.extend(index(home));
            parts
        }
        Input::Rollout(p) => {
            let mut parts = vec![ReadPart::File {
                path: p.clone(),
                what: "input rollout",
            }];
            if let Some(home) = home_of_rollout(p) {
                parts.extend(index(&home));
                parts.push(ReadPart::Dir {
                    path: home,
                    what: "Codex home holding the input",
                });
            }
            parts
        }
    }
}

/// The Codex home a rollout lies in: the parent of the `sessions` (or `archived_sessions`) dir
/// above it.
fn home_of_rollout(rollout: &Path) -> Option<PathBuf> {
    rollout
        .ancestors()
        .skip(1)
        .find(|a| {
            a.file_name()
                .is_some_and(|n| n == "sessions" || n == "archived_sessions")
        })
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"timestamp":"2026-12-02T05:58:56.258Z","type":"session_meta","payload":{"id":"01a23555-a9c3-78b2-acc5-cacf3e71aa76","cwd":"/p"}}"#;

    fn make_home() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let day = dir.path().join(".codex/sessions/2026/12/02");
        std::fs::create_dir_all(&day).expect("mkdir");
        let file =
            day.join("rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa76.jsonl");
        std::fs::write(&file, format!("{META}\n")).expect("write");
        (dir, file)
    }

    fn kind(p: &Path) -> Option<(&'static str, Confidence)> {
        let meta = std::fs::metadata(p).expect("metadata");
        detect(p, &meta).map(|d| (d.kind, d.confidence))
    }

    #[test]
    fn a_home_its_sessions_dir_and_a_rollout_are_recognised() {
        let (dir, file) = make_home();
        let home = dir.path().join(".codex");
        assert_eq!(kind(&home), Some(("codex home", Confidence::Content)));
        assert_eq!(
            kind(&home.join("sessions")),
            Some(("sessions dir", Confidence::Content))
        );
        assert_eq!(kind(&file), Some(("rollout", Confidence::Content)));
        // Any file whose first line is a rollout's, whatever its name.
        let renamed = dir.path().join("thread.jsonl");
        std::fs::copy(&file, &renamed).expect("copy");
        assert_eq!(kind(&renamed), Some(("rollout", Confidence::Content)));
        // An empty rollout by its name only; other JSON files and dirs are not Codex's.
        let empty = file.with_file_name(
            "rollout-2026-12-02T06-00-00-01a23555-a9c3-78b2-acc5-cacf3e71aa77.jsonl",
        );
        std::fs::write(&empty, "").expect("write");
        assert_eq!(kind(&empty), Some(("rollout", Confidence::Name)));
        let other = dir.path().join("export.json");
        std::fs::write(&other, r#"{"info":{"id":"ses_1"},"messages":[]}"#).expect("write");
        assert_eq!(kind(&other), None);
        assert_eq!(kind(dir.path()), None);
        // Any dir named `sessions` is not Codex's.
        let unrelated = dir.path().join("app/sessions");
        std::fs::create_dir_all(unrelated.join("notes")).expect("mkdir");
        assert_eq!(kind(&unrelated), None);
        assert_eq!(kind(&dir.path().join("app")), None);
    }

    #[test]
    fn data_dirs_discovery_and_read_parts() {
        let (dir, file) = make_home();
        let home = dir.path().join(".codex");
        let env = Env {
            home: Some(dir.path().to_owned()),
            ..Env::default()
        };
        assert_eq!(data_dirs(&env), vec![home.clone()]);
        assert_eq!(discover(&env).expect("discover"), Some(home.clone()));
        let elsewhere = env
            .clone()
            .with_var("CODEX_HOME", "/nonexistent/codex-home");
        assert_eq!(
            data_dirs(&elsewhere),
            vec![PathBuf::from("/nonexistent/codex-home"), home.clone()]
        );
        assert!(
            discover(&elsewhere).is_err(),
            "a CODEX_HOME that is not there"
        );
        let nothing = Env {
            home: Some(dir.path().join("nobody")),
            ..Env::default()
        };
        assert_eq!(discover(&nothing).expect("discover"), None);
        assert_eq!(
            read_parts(&Input::Home(home.clone())),
            vec![ReadPart::Dir {
                path: home.clone(),
                what: "input Codex home"
            }]
        );
        // A rollout protects the home it lies in (here without a thread index).
        assert_eq!(
            read_parts(&Input::Rollout(file.clone())),
            vec![
                ReadPart::File {
                    path: file,
                    what: "input rollout"
                },
                ReadPart::Dir {
                    path: home.clone(),
                    what: "Codex home holding the input"
                }
            ]
        );
    }
}

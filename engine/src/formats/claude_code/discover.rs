//! What a path is to Claude Code, by what it holds: a session file (JSON lines whose records
//! carry Claude Code's kinds and a `sessionId`), a project dir (session files of one working
//! directory), a projects dir (project dirs), or a data dir (`~/.claude`, with `projects/`).
//! Reading is bounded: the first few MB of a file, the first entries of a directory.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use std::ops::ControlFlow;

use super::listing::fields;
use super::record::TYPED_KINDS;
use crate::trace::jsonl::{lines_until, Line};

/// What a detected path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    SessionFile,
    ProjectDir,
    ProjectsDir,
    DataDir,
}

impl InputKind {
    /// The word the adapter uses for it.
    pub fn word(self) -> &'static str {
        match self {
            InputKind::SessionFile => "session file",
            InputKind::ProjectDir => "project dir",
            InputKind::ProjectsDir => "projects dir",
            InputKind::DataDir => "data dir",
        }
    }
}

/// How much of a file detection reads.
const SNIFF_BYTES: u64 = 4 << 20;
/// How many entries of a directory detection looks at.
const SNIFF_ENTRIES: usize = 64;

/// Bookkeeping kinds Claude Code writes that carry a `sessionId` too.
const OTHER_KINDS: &[&str] = &[
    "queue-operation",
    "last-prompt",
    "mode",
    "custom-title",
    "file-history-snapshot",
    "progress",
];

/// True when the start of the file at `path` reads as a Claude Code session file: a complete
/// line that is a record of one of its kinds with a `sessionId` (or a `summary` with a
/// `leafUuid`), and no complete line before it that is not a JSON object. Reading stops at the
/// first line that decides.
pub fn is_session_file(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut claimed = false;
    let mut foreign = false;
    let r = BufReader::new(f.take(SNIFF_BYTES));
    let read = lines_until(r, SNIFF_BYTES as usize, |line| {
        let Line::Text {
            bytes,
            terminated: true,
            ..
        } = line
        else {
            return ControlFlow::Continue(());
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return ControlFlow::Continue(());
        }
        let Some(f) = std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| fields(t, &["type", "sessionId", "leafUuid"]))
        else {
            foreign = true;
            return ControlFlow::Break(());
        };
        let get = |k: &str| {
            f.iter()
                .find(|(key, _)| *key == k)
                .and_then(|(_, v)| serde_json::from_str::<String>(v).ok())
        };
        let kind = get("type").unwrap_or_default();
        let known = TYPED_KINDS.contains(&kind.as_str()) || OTHER_KINDS.contains(&kind.as_str());
        claimed = known
            && (get("sessionId").is_some() || (kind == "summary" && get("leafUuid").is_some()));
        if claimed {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    read.is_ok() && claimed && !foreign
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    v.sort();
    v
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

fn is_project_dir(dir: &Path) -> bool {
    jsonl_files(dir)
        .iter()
        .take(SNIFF_ENTRIES)
        .any(|p| is_session_file(p))
}

fn is_projects_dir(dir: &Path) -> bool {
    subdirs(dir)
        .iter()
        .take(SNIFF_ENTRIES)
        .any(|d| is_project_dir(d))
}

/// What `path` (a directory or a regular file) is to Claude Code, if anything.
pub fn detect(path: &Path, is_dir: bool) -> Option<InputKind> {
    if !is_dir {
        return is_session_file(path).then_some(InputKind::SessionFile);
    }
    let projects = path.join("projects");
    if projects.is_dir() && is_projects_dir(&projects) {
        Some(InputKind::DataDir)
    } else if is_projects_dir(path) {
        Some(InputKind::ProjectsDir)
    } else if is_project_dir(path) {
        Some(InputKind::ProjectDir)
    } else {
        None
    }
}

/// The session files of a detected input (not the sub-agent transcripts, which live one level
/// deeper, under `<session>/subagents/`).
pub fn session_files(path: &Path, kind: InputKind) -> Vec<PathBuf> {
    let of_projects = |projects: &Path| {
        subdirs(projects)
            .iter()
            .flat_map(|d| jsonl_files(d))
            .filter(|p| is_session_file(p))
            .collect::<Vec<_>>()
    };
    match kind {
        InputKind::SessionFile => vec![path.to_owned()],
        InputKind::ProjectDir => jsonl_files(path)
            .into_iter()
            .filter(|p| is_session_file(p))
            .collect(),
        InputKind::ProjectsDir => of_projects(path),
        InputKind::DataDir => of_projects(&path.join("projects")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORDING: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/recordings/claude-code-2.1.197/dot-claude"
    );

    #[test]
    fn each_level_of_the_tree_is_recognised_by_what_it_holds() {
        let data = Path::new(RECORDING);
        let projects = data.join("projects");
        let project = projects.join("-home-dev-src-webhookd");
        let file = project.join("f1757de4-c270-45a4-a408-d101959666e3.jsonl");
        assert_eq!(detect(data, true), Some(InputKind::DataDir));
        assert_eq!(detect(&projects, true), Some(InputKind::ProjectsDir));
        assert_eq!(detect(&project, true), Some(InputKind::ProjectDir));
        assert_eq!(detect(&file, false), Some(InputKind::SessionFile));
        assert_eq!(session_files(data, InputKind::DataDir).len(), 3);
        assert_eq!(session_files(&project, InputKind::ProjectDir), [file]);
    }

    #[test]
    fn other_files_are_not_claimed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases: &[(&str, &str)] = &[
            (
                "export.json",
                "{\n  \"info\": {\"id\": \"ses_1\"},\n  \"messages\": []\n}\n",
            ),
            ("other.jsonl", "{\"type\":\"user\",\"id\":1}\n"),
            (
                "mixed.jsonl",
                "not json\n{\"type\":\"user\",\"sessionId\":\"s\"}\n",
            ),
            ("empty.jsonl", ""),
        ];
        for (name, text) in cases {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            assert_eq!(detect(&p, false), None, "{name}");
        }
        assert_eq!(detect(dir.path(), true), None);
        let p = dir.path().join("s.jsonl");
        std::fs::write(
            &p,
            "{\"type\":\"mode\",\"mode\":\"normal\",\"sessionId\":\"s\"}\n",
        )
        .expect("write");
        assert_eq!(detect(&p, false), Some(InputKind::SessionFile));
        assert_eq!(detect(dir.path(), true), Some(InputKind::ProjectDir));
    }
}

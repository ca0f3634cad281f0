//! Claude Code behind the adapter seam, as far as it goes today: where the data is, what a path
//! is, what a load reads, what to follow, and the listing. **Not in
//! [`crate::formats::ADAPTERS`]**: [`SessionStore::load_session`] says a Claude Code session
//! cannot be loaded yet (the neutral [`crate::trace::model::Trace`] still carries OpenCode's
//! part kinds), and a half-read agent must not reach users.

use std::path::{Path, PathBuf};

use super::discover::{self, InputKind};
use super::listing::{summarize, unix_ms};
use super::session::Session;
use super::subagents::{agent_files, subagents_dir};
use super::watch::ClaudeCodeWatch;
use crate::trace::adapter::{
    Adapter, Confidence, Detected, Detection, Env, ListingCache, ReadPart, SessionStore, WatchSpec,
};
use crate::trace::diagnostics::Diagnostics;
use crate::trace::error::LoadError;
use crate::trace::load::SessionSummary;
use crate::trace::model::Trace;

/// Claude Code (Anthropic's CLI): JSON-lines session files under `~/.claude/projects/`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaudeCode;

/// The dirs of `$CLAUDE_CONFIG_DIR` (a comma-separated list), absolute ones only.
fn config_dirs(env: &Env) -> Vec<PathBuf> {
    env.var("CLAUDE_CONFIG_DIR")
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

impl Adapter for ClaudeCode {
    fn id(&self) -> &'static str {
        "claude-code"
    }

    fn name(&self) -> &'static str {
        "Claude Code"
    }

    /// Every dir of `$CLAUDE_CONFIG_DIR`, then `~/.claude`, `$XDG_CONFIG_HOME/claude` and
    /// `~/.config/claude` (data left under a default after the variable was set is still
    /// Claude Code's).
    fn data_dirs(&self, env: &Env) -> Vec<PathBuf> {
        let mut dirs = config_dirs(env);
        if let Some(h) = &env.home {
            dirs.push(h.join(".claude"));
        }
        if let Some(x) = env.xdg_config_home.as_ref().filter(|x| x.is_absolute()) {
            dirs.push(x.join("claude"));
        }
        if let Some(h) = &env.home {
            dirs.push(h.join(".config").join("claude"));
        }
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|d| seen.insert(d.clone()));
        dirs
    }

    fn detect(&self, path: &Path, meta: &std::fs::Metadata) -> Option<Detection> {
        discover::detect(path, meta.is_dir()).map(|k| Detection {
            kind: k.word(),
            confidence: Confidence::Content,
        })
    }

    /// The first data dir holding sessions. A `$CLAUDE_CONFIG_DIR` none of whose dirs exists is
    /// an error: the user named a place that is not there.
    fn discover(&self, env: &Env) -> Result<Option<PathBuf>, LoadError> {
        let configured = config_dirs(env);
        if let Some(first) = configured.first() {
            if !configured.iter().any(|d| d.is_dir()) {
                return Err(LoadError::Io {
                    path: first.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "$CLAUDE_CONFIG_DIR names no existing directory",
                    ),
                });
            }
        }
        Ok(self
            .data_dirs(env)
            .into_iter()
            .find(|d| d.is_dir() && discover::detect(d, true) == Some(InputKind::DataDir)))
    }

    fn open(&self, detected: &Detected<'_>) -> Result<Box<dyn SessionStore>, LoadError> {
        Ok(Box::new(ClaudeCodeStore::open(detected.path)?))
    }

    /// A session file with its sub-agent transcripts and meta files and its session folder
    /// (persisted tool outputs); a directory as a whole.
    fn read_parts(&self, detected: &Detected<'_>) -> Vec<ReadPart> {
        let path = detected.path;
        let kind = discover::detect(path, path.is_dir());
        match kind {
            Some(InputKind::SessionFile) => {
                let mut parts = vec![ReadPart::File {
                    path: path.to_owned(),
                    what: "input session file",
                }];
                for f in agent_files(path) {
                    parts.push(ReadPart::File {
                        path: f.path,
                        what: "input sub-agent transcript",
                    });
                    parts.push(ReadPart::File {
                        path: f.meta_path,
                        what: "input sub-agent meta file",
                    });
                }
                if let Some(folder) = subagents_dir(path).as_deref().and_then(Path::parent) {
                    parts.push(ReadPart::Dir {
                        path: folder.to_owned(),
                        what: "input session folder",
                    });
                }
                parts
            }
            Some(k) => vec![ReadPart::Dir {
                path: path.to_owned(),
                what: match k {
                    InputKind::DataDir => "input Claude Code data dir",
                    InputKind::ProjectsDir => "input Claude Code projects dir",
                    _ => "input Claude Code project dir",
                },
            }],
            None => Vec::new(),
        }
    }

    fn watch_spec(&self, detected: &Detected<'_>) -> Box<dyn WatchSpec> {
        Box::new(ClaudeCodeWatch::new(detected.path, detected.path.is_dir()))
    }
}

/// The session files of an opened Claude Code input.
#[derive(Debug)]
pub struct ClaudeCodeStore {
    path: PathBuf,
    kind: InputKind,
    sessions: Vec<PathBuf>,
    diagnostics: Diagnostics,
}

impl ClaudeCodeStore {
    pub fn open(path: &Path) -> Result<ClaudeCodeStore, LoadError> {
        let kind = discover::detect(path, path.is_dir())
            .ok_or_else(|| LoadError::NoData(path.to_owned()))?;
        let sessions = discover::session_files(path, kind);
        if sessions.is_empty() {
            return Err(LoadError::NoSessions {
                path: path.to_owned(),
            });
        }
        Ok(ClaudeCodeStore {
            path: path.to_owned(),
            kind,
            sessions,
            diagnostics: Diagnostics::new(),
        })
    }

    fn file_of(&self, id: &str) -> Option<&PathBuf> {
        self.sessions
            .iter()
            .find(|p| p.file_stem().is_some_and(|s| s == id))
    }
}

/// A session's line from a full read (the reference the quick listing is checked against); the
/// title is the listing's (custom title, AI title, summary, first prompt).
fn full_summary(path: &Path) -> Result<SessionSummary, LoadError> {
    let s = Session::read(path)?;
    let quick = summarize(path)?;
    let t = &s.main.transcript;
    let times: Vec<i64> = t
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            // Bookkeeping records count too: the first prompt's enqueue opens the session.
            super::record::Record::Other { raw, .. } => raw.get("timestamp")?.as_str(),
            r => r.common()?.timestamp.as_deref(),
        })
        .filter_map(unix_ms)
        .collect();
    let messages = t
        .entries
        .iter()
        .filter(|e| {
            matches!(
                e.record,
                super::record::Record::User(_) | super::record::Record::Assistant(_)
            )
        })
        .count();
    let mut children: Vec<String> = s
        .subagents
        .iter()
        .map(|x| format!("agent-{}", x.file.agent_id))
        .collect();
    children.sort();
    Ok(SessionSummary {
        id: t
            .session_id()
            .map(str::to_owned)
            .unwrap_or(quick.summary.id),
        title: quick.summary.title,
        directory: t.cwd().unwrap_or_default().to_owned(),
        parent_id: None,
        created: times.iter().copied().min().unwrap_or(0),
        updated: times.iter().copied().max().unwrap_or(0),
        messages,
        requests: s.main.requests.responses.len(),
        tokens: s.own_usage().to_usage(),
        cost: 0.0,
        children,
    })
}

impl SessionStore for ClaudeCodeStore {
    fn describe(&self) -> String {
        format!("Claude Code {} {}", self.kind.word(), self.path.display())
    }

    fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Each session file read by [`summarize`] (no cache: the scan reads only a few fields of
    /// each line), or in full when `cache` is `None`. A file that cannot be read is left out.
    fn list(&self, cache: Option<&ListingCache>) -> Result<Vec<SessionSummary>, LoadError> {
        Ok(self
            .sessions
            .iter()
            .filter_map(|p| match cache {
                Some(_) => summarize(p).ok().map(|l| l.summary),
                None => full_summary(p).ok(),
            })
            .collect())
    }

    fn default_session(&self) -> Option<(i64, bool, String)> {
        self.sessions
            .iter()
            .filter_map(|p| summarize(p).ok())
            .map(|l| (l.summary.updated, true, l.summary.id))
            .max()
    }

    fn has_session(&self, id: &str) -> bool {
        self.file_of(id).is_some()
    }

    fn load_session(&self, id: Option<&str>) -> Result<Trace, LoadError> {
        let path = id
            .and_then(|i| self.file_of(i))
            .unwrap_or(&self.path)
            .clone();
        Err(LoadError::Io {
            path,
            source: std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "Claude Code sessions are listed but not loaded yet",
            ),
        })
    }

    fn child_ids(&self, _trace: &Trace) -> Vec<String> {
        Vec::new()
    }

    fn load_children(&self, _trace: &Trace) -> Vec<Result<Trace, LoadError>> {
        Vec::new()
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
    fn data_dirs_follow_the_environment_and_the_defaults() {
        let env = Env {
            home: Some("/home/u".into()),
            xdg_config_home: Some("/home/u/.cfg".into()),
            ..Env::default()
        }
        .with_var("CLAUDE_CONFIG_DIR", "/a, relative ,/b,");
        let dirs = ClaudeCode.data_dirs(&env);
        let want: Vec<PathBuf> = [
            "/a",
            "/b",
            "/home/u/.claude",
            "/home/u/.cfg/claude",
            "/home/u/.config/claude",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(dirs, want);
        // The same dirs the output guard protects.
        let guarded = crate::trace::agent_dirs::agent_data_dirs(&env);
        for d in &dirs {
            assert!(guarded.iter().any(|g| &g.dir == d), "{}", d.display());
        }
    }

    #[test]
    fn discovery_finds_a_data_dir_and_refuses_a_missing_configured_one() {
        let home = tempfile::tempdir().expect("tempdir");
        let env = Env {
            home: Some(home.path().to_owned()),
            ..Env::default()
        };
        assert_eq!(ClaudeCode.discover(&env).expect("discover"), None);
        let env = env.with_var("CLAUDE_CONFIG_DIR", RECORDING);
        assert_eq!(
            ClaudeCode.discover(&env).expect("discover"),
            Some(PathBuf::from(RECORDING))
        );
        let missing = home.path().join("nowhere");
        let env = env.with_var("CLAUDE_CONFIG_DIR", &missing.display().to_string());
        assert!(ClaudeCode.discover(&env).is_err());
    }

    #[test]
    fn a_store_lists_every_session_alike_quick_or_full_and_does_not_load_yet() {
        let store = ClaudeCodeStore::open(Path::new(RECORDING)).expect("open");
        let mut quick = store.list(Some(&ListingCache::Off)).expect("list");
        let mut full = store.list(None).expect("list");
        quick.sort_by(|a, b| a.id.cmp(&b.id));
        full.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(quick.len(), 3);
        assert_eq!(quick, full);
        let id = "927b1170-f977-416a-aabb-46039b7eb22a";
        assert!(store.has_session(id));
        assert!(store.default_session().is_some());
        assert!(store.load_session(Some(id)).is_err());
    }

    #[test]
    fn a_session_file_reads_its_sub_agents_and_folder() {
        let file = Path::new(RECORDING)
            .join("projects/-home-dev-src-webhookd/f1757de4-c270-45a4-a408-d101959666e3.jsonl");
        let meta = std::fs::metadata(&file).expect("meta");
        let detection = ClaudeCode.detect(&file, &meta).expect("detected");
        assert_eq!(detection.kind, "session file");
        let detected = Detected {
            adapter: &ClaudeCode,
            path: &file,
            detection,
        };
        let parts = ClaudeCode.read_parts(&detected);
        let files = parts
            .iter()
            .filter(|p| matches!(p, ReadPart::File { .. }))
            .count();
        assert_eq!(files, 1 + 2 * 4);
        assert!(parts.iter().any(|p| matches!(p, ReadPart::Dir { path, .. }
            if *path == file.with_file_name("f1757de4-c270-45a4-a408-d101959666e3"))));
    }
}

//! Claude Code behind the adapter seam, as far as it goes today: where the data is, what a path
//! is, what a load reads, what to follow, and the listing. **Not in
//! [`crate::formats::ADAPTERS`]**: [`SessionStore::load_session`] says a Claude Code session
//! cannot be loaded yet (the neutral [`crate::trace::model::Trace`] still carries OpenCode's
//! part kinds), and a half-read agent must not reach users.

use std::path::{Path, PathBuf};

use super::discover::{self, InputKind};
use super::listing::summarize;
use super::session::Session;
use super::subagents::{agent_files, subagents_dir};
use super::to_trace::{thread_trace, ThreadInfo};
use super::watch::ClaudeCodeWatch;
use crate::trace::adapter::{
    Adapter, Confidence, Detected, Detection, Env, ListingCache, ReadPart, SessionStore, WatchSpec,
};
use crate::trace::diagnostics::Diagnostics;
use crate::trace::error::LoadError;
use crate::trace::load::SessionSummary;
use crate::trace::model::Trace;
use crate::trace::summary_call::SummaryCalls;

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

    /// A session file with its sub-agent transcripts and meta files, its session folder
    /// (persisted tool outputs) and its project dir (read for the sessions it may have resumed);
    /// a directory as a whole; and the Claude Code data dir the input lies in, whose files the
    /// CLI owns (a file created there would be a session of Claude Code's).
    fn read_parts(&self, detected: &Detected<'_>) -> Vec<ReadPart> {
        let path = detected.path;
        let mut parts = self.own_parts(path);
        if let Some(root) = enclosing_data(path) {
            parts.push(root);
        }
        parts
    }

    /// Claude Code's summary call is the conversation's own request with its summary
    /// instruction appended as a last user text block; the transcript does not record it, so
    /// none is built, and the instruction is known by its size (see
    /// [`super::to_trace::SUMMARY_INSTRUCTION_TOKENS`]). For the same reason there is no
    /// prompt to ask a model with (`experiment --summary-prompt FILE` supplies one).
    fn summary_calls(&self, _trace: &Trace) -> SummaryCalls {
        SummaryCalls {
            built: Vec::new(),
            fixed_prompt: String::new(),
            fixed_prompt_tokens: Some(super::to_trace::SUMMARY_INSTRUCTION_TOKENS),
            prompt: None,
        }
    }

    /// Claude Code's auto-compact ([`super::to_trace::flat_rules`]).
    fn flat_rules(&self, _trace: &Trace) -> crate::trace::flat_rules::FlatRules {
        super::to_trace::flat_rules()
    }

    fn watch_spec(&self, detected: &Detected<'_>) -> Box<dyn WatchSpec> {
        Box::new(ClaudeCodeWatch::new(detected.path, detected.path.is_dir()))
    }
}

impl ClaudeCode {
    /// What a load of `path` reads itself (see [`Adapter::read_parts`]).
    fn own_parts(&self, path: &Path) -> Vec<ReadPart> {
        match discover::detect(path, path.is_dir()) {
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
                if let Some(project) = path.parent() {
                    parts.push(ReadPart::Dir {
                        path: project.to_owned(),
                        what: "project dir of the input session file",
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
}

/// The Claude Code data dir (else projects dir) that `path` lies inside, if any.
fn enclosing_data(path: &Path) -> Option<ReadPart> {
    let ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
    let data = ancestors
        .iter()
        .find(|a| discover::detect(a, true) == Some(InputKind::DataDir))
        .map(|a| (a, "Claude Code data dir holding the input"));
    let projects = || {
        ancestors
            .iter()
            .find(|a| discover::detect(a, true) == Some(InputKind::ProjectsDir))
            .map(|a| (a, "Claude Code projects dir holding the input"))
    };
    data.or_else(projects).map(|(a, what)| ReadPart::Dir {
        path: a.to_path_buf(),
        what,
    })
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

/// The lines of a session file and its sub-agents from a quick scan ([`summarize`]): the
/// session's own, then one per sub-agent (its meta's description as title, the session as
/// parent). A sub-agent file that cannot be read is left out.
fn quick_lines(path: &Path) -> Result<Vec<SessionSummary>, LoadError> {
    let main = summarize(path)?.summary;
    let mut out = Vec::new();
    for f in agent_files(path) {
        let Ok(l) = summarize(&f.path) else {
            continue;
        };
        let meta = super::subagents::read_meta(&f.meta_path).ok();
        out.push(SessionSummary {
            id: format!("{AGENT_PREFIX}{}", f.agent_id),
            title: meta.and_then(|m| m.description).unwrap_or(l.summary.title),
            parent_id: Some(main.id.clone()),
            children: Vec::new(),
            ..l.summary
        });
    }
    out.insert(0, main);
    Ok(out)
}

/// The same lines from a full read (the reference the quick scan is checked against): the
/// loaded traces' figures, the quick scan's titles and times (bookkeeping records count for
/// times: the first prompt's enqueue opens the session).
fn full_lines(path: &Path) -> Result<Vec<SessionSummary>, LoadError> {
    let quick = quick_lines(path)?;
    let mut session = Session::read(path)?;
    let parent = session_id_of(&session, path);
    let mut traces = vec![load_main(path)?];
    traces.extend(subagent_traces(&mut session, &parent));
    let threads: Vec<&super::session::Thread> = std::iter::once(&session.main)
        .chain(session.subagents.iter().map(|s| &s.thread))
        .collect();
    Ok(traces
        .iter()
        .zip(threads)
        .map(|(t, thread)| {
            let q = quick.iter().find(|q| q.id == t.session.id);
            let mut children: Vec<String> = q.map(|q| q.children.clone()).unwrap_or_default();
            children.sort();
            let records = thread
                .transcript
                .entries
                .iter()
                .filter(|e| {
                    matches!(
                        e.record,
                        super::record::Record::User(_) | super::record::Record::Assistant(_)
                    )
                })
                .count();
            let responses = t
                .requests
                .iter()
                .filter(|r| !r.synthetic_call && r.status == crate::trace::model::RequestStatus::Ok)
                .count();
            SessionSummary {
                agent: "claude-code",
                id: t.session.id.clone(),
                title: q.map(|q| q.title.clone()).unwrap_or_default(),
                directory: t.session.directory.clone(),
                parent_id: t.session.parent_id.clone(),
                created: q.map_or(t.session.time_created, |q| q.created),
                updated: q.map_or(t.session.time_updated, |q| q.updated),
                messages: records,
                requests: responses,
                tokens: t.total_usage(),
                cost: t.total_cost(),
                children,
            }
        })
        .collect())
}

impl SessionStore for ClaudeCodeStore {
    fn describe(&self) -> String {
        format!("Claude Code {} {}", self.kind.word(), self.path.display())
    }

    fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Each session file and its sub-agents read by [`summarize`] (no cache: the scan reads
    /// only a few fields of each line), or in full when `cache` is `None`. A file that cannot be
    /// read is left out.
    fn list(&self, cache: Option<&ListingCache>) -> Result<Vec<SessionSummary>, LoadError> {
        Ok(self
            .sessions
            .iter()
            .filter_map(|p| match cache {
                Some(_) => quick_lines(p).ok(),
                None => full_lines(p).ok(),
            })
            .flatten()
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
        match id.strip_prefix(AGENT_PREFIX) {
            Some(agent) => self
                .sessions
                .iter()
                .any(|p| agent_files(p).iter().any(|f| f.agent_id == agent)),
            None => self.file_of(id).is_some(),
        }
    }

    fn load_session(&self, id: Option<&str>) -> Result<Trace, LoadError> {
        let want = match id {
            Some(w) => w.to_owned(),
            None => match self.default_session() {
                Some((_, _, id)) => id,
                None => {
                    return Err(LoadError::NoSessions {
                        path: self.path.clone(),
                    })
                }
            },
        };
        // A sub-agent is opened through the session that spawned it.
        if let Some(agent) = want.strip_prefix(AGENT_PREFIX) {
            for path in &self.sessions {
                if agent_files(path).iter().any(|f| f.agent_id == agent) {
                    let mut session = Session::read(path)?;
                    let parent = session_id_of(&session, path);
                    return subagent_traces(&mut session, &parent)
                        .into_iter()
                        .find(|t| t.session.id == want)
                        .ok_or_else(|| LoadError::SessionNotFound {
                            id: want.clone(),
                            path: self.path.clone(),
                        });
                }
            }
        }
        let stems: Vec<String> = self
            .sessions
            .iter()
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        let id = crate::trace::load::resolve(
            stems.iter().map(String::as_str),
            &want,
            &self.path.display().to_string(),
        )?;
        let path = self
            .file_of(&id)
            .cloned()
            .ok_or_else(|| LoadError::SessionNotFound {
                id: id.clone(),
                path: self.path.clone(),
            })?;
        load_main(&path)
    }

    fn child_ids(&self, trace: &Trace) -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for c in &trace.children {
            if !ids.contains(&c.session_id) && c.session_id != trace.session.id {
                ids.push(c.session_id.clone());
            }
        }
        ids
    }

    fn load_children(&self, trace: &Trace) -> Vec<Result<Trace, LoadError>> {
        let Some(path) = self.file_of(&trace.session.id).cloned().or_else(|| {
            // A sub-agent's children live beside the session that holds it.
            self.sessions
                .iter()
                .find(|p| {
                    trace
                        .session
                        .id
                        .strip_prefix(AGENT_PREFIX)
                        .is_some_and(|a| agent_files(p).iter().any(|f| f.agent_id == a))
                })
                .cloned()
        }) else {
            return Vec::new();
        };
        let wanted = self.child_ids(trace);
        if wanted.is_empty() {
            return Vec::new();
        }
        let mut session = match Session::read(&path) {
            Ok(s) => s,
            Err(e) => return vec![Err(e)],
        };
        let parent = session_id_of(&session, &path);
        let mut all = subagent_traces(&mut session, &parent);
        wanted
            .iter()
            .map(|id| match all.iter().position(|t| &t.session.id == id) {
                Some(i) => Ok(all.swap_remove(i)),
                None => Err(LoadError::SessionNotFound {
                    id: id.clone(),
                    path: path.clone(),
                }),
            })
            .collect()
    }
}

/// The session id of a sub-agent: its file's name (`agent-<agentId>`).
const AGENT_PREFIX: &str = "agent-";

/// The id of a session: its file's name (Claude Code names the file by the session's id; a
/// resumed copy carries the old id on its records), else the one its records carry.
fn session_id_of(session: &Session, path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| session.main.transcript.session_id().map(str::to_owned))
        .unwrap_or_default()
}

/// The sub-agents a thread spawned: (index of the spawning call, child id, description).
fn spawned_by(session: &Session, agent: Option<&str>) -> Vec<(usize, String, Option<String>)> {
    session
        .subagents
        .iter()
        .filter_map(|s| {
            let sp = s.spawned_by.as_ref()?;
            (sp.agent.as_deref() == agent).then(|| {
                (
                    sp.call,
                    format!("{AGENT_PREFIX}{}", s.file.agent_id),
                    s.meta.as_ref().and_then(|m| m.description.clone()),
                )
            })
        })
        .collect()
}

/// Load a session file as a trace (its sub-agents linked as children, not loaded).
fn load_main(path: &Path) -> Result<Trace, LoadError> {
    let mut session = Session::read(path)?;
    let id = session_id_of(&session, path);
    let title = summarize(path).map(|l| l.summary.title).unwrap_or_default();
    let children = spawned_by(&session, None);
    let mut trace = thread_trace(
        &mut session.main,
        ThreadInfo {
            id,
            title,
            parent_id: None,
            agent: None,
            path,
            resumed: super::resume::Origins::of(path),
        },
        &children,
    );
    trace.diagnostics.extend(&session.diagnostics);
    Ok(trace)
}

/// Every sub-agent of a session as its own trace (their results' contents moved into them).
fn subagent_traces(session: &mut Session, parent: &str) -> Vec<Trace> {
    let children: Vec<Vec<(usize, String, Option<String>)>> = session
        .subagents
        .iter()
        .map(|s| spawned_by(session, Some(&s.file.agent_id)))
        .collect();
    session
        .subagents
        .iter_mut()
        .zip(children)
        .map(|(s, children)| {
            let id = format!("{AGENT_PREFIX}{}", s.file.agent_id);
            let parent_id = match s.spawned_by.as_ref().and_then(|sp| sp.agent.as_deref()) {
                Some(a) => format!("{AGENT_PREFIX}{a}"),
                None => parent.to_owned(),
            };
            thread_trace(
                &mut s.thread,
                ThreadInfo {
                    id,
                    title: s
                        .meta
                        .as_ref()
                        .and_then(|m| m.description.clone())
                        .unwrap_or_default(),
                    parent_id: Some(parent_id),
                    agent: s.meta.as_ref().and_then(|m| m.agent_type.clone()),
                    path: &s.file.path,
                    resumed: super::resume::Origins::default(),
                },
                &children,
            )
        })
        .collect()
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
    fn a_store_lists_every_session_alike_quick_or_full_and_loads_one() {
        let store = ClaudeCodeStore::open(Path::new(RECORDING)).expect("open");
        let mut quick = store.list(Some(&ListingCache::Off)).expect("list");
        let mut full = store.list(None).expect("list");
        quick.sort_by(|a, b| a.id.cmp(&b.id));
        full.sort_by(|a, b| a.id.cmp(&b.id));
        // Three sessions and the four sub-agents of one.
        assert_eq!(quick.len(), 7);
        for (q, f) in quick.iter().zip(&full) {
            assert_eq!(q, f);
        }
        assert_eq!(quick.len(), full.len());
        let subs: Vec<&SessionSummary> = quick.iter().filter(|s| s.parent_id.is_some()).collect();
        assert_eq!(subs.len(), 4);
        for s in &subs {
            assert!(s.id.starts_with(AGENT_PREFIX));
            assert!(store.has_session(&s.id));
            let t = store.load_session(Some(&s.id)).expect("a sub-agent loads");
            assert_eq!(t.session.parent_id, s.parent_id);
        }
        let id = "927b1170-f977-416a-aabb-46039b7eb22a";
        assert!(store.has_session(id));
        assert!(store.default_session().is_some());
        let t = store.load_session(Some(id)).expect("load");
        assert_eq!(t.session.id, id);
        assert_eq!(t.origin.agent, "claude-code");
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

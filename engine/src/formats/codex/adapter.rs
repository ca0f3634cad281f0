//! Codex CLI behind the adapter seam: a `$CODEX_HOME`, its `sessions/` (or
//! `archived_sessions/`) dir, or one rollout file, opened as a [`SessionStore`] whose sessions
//! are Codex threads (id = thread id), loaded by [`super::to_trace`].
//!
//! A home's threads come from the thread index where there is one, and from the rollout files
//! (the active copy winning over an archived one) — [`super::listing`]. Sub-agent threads (their
//! `session_meta.source` names the parent, as does the index's `thread_spawn_edges`) are the
//! children of the thread that spawned them. A rollout file opened alone is one thread without
//! children.

use std::path::{Path, PathBuf};

use super::input::{self, Input};
use super::listing::{self, Depth, ThreadSummary};
use super::rollout;
use super::scan::scan_path;
use super::to_trace::{self, COMPACTION_PROMPT};
use super::watch::CodexWatch;
use crate::trace::adapter::{
    Adapter, Detected, Detection, Env, ListingCache, ReadPart, SessionStore, WatchSpec,
};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;
use crate::trace::load::{resolve, SessionSummary};
use crate::trace::model::Trace;
use crate::trace::summary_call::SummaryCalls;

/// Codex CLI (openai/codex): rollout files under `$CODEX_HOME/sessions/`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Codex;

/// What `path` is to Codex (a path detection gave to this adapter).
fn classify(path: &Path) -> Result<Input, LoadError> {
    let meta = std::fs::metadata(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    input::classify(path, &meta)
        .map(|(i, _)| i)
        .ok_or_else(|| LoadError::NoData(path.to_owned()))
}

impl Adapter for Codex {
    fn id(&self) -> &'static str {
        to_trace::AGENT
    }

    fn name(&self) -> &'static str {
        "Codex CLI"
    }

    fn data_dirs(&self, env: &Env) -> Vec<PathBuf> {
        input::data_dirs(env)
    }

    fn detect(&self, path: &Path, meta: &std::fs::Metadata) -> Option<Detection> {
        input::detect(path, meta)
    }

    fn discover(&self, env: &Env) -> Result<Option<PathBuf>, LoadError> {
        input::discover(env)
    }

    fn open(&self, detected: &Detected<'_>) -> Result<Box<dyn SessionStore>, LoadError> {
        Ok(Box::new(CodexStore::open(classify(detected.path)?)?))
    }

    fn read_parts(&self, detected: &Detected<'_>) -> Vec<ReadPart> {
        classify(detected.path)
            .map(|i| input::read_parts(&i))
            .unwrap_or_default()
    }

    /// No recorded call is rebuilt (the replay sizes Codex's compaction calls by what they
    /// showed: the history in view); a simulated call adds Codex's compaction prompt, unless a
    /// recorded call already put it into the compaction system chunk.
    fn summary_calls(&self, trace: &Trace) -> SummaryCalls {
        let recorded = trace
            .requests
            .iter()
            .any(|r| r.synthetic_call && r.prompt > 0);
        SummaryCalls {
            built: Vec::new(),
            fixed_prompt: if recorded {
                String::new()
            } else {
                COMPACTION_PROMPT.to_owned()
            },
            fixed_prompt_tokens: None,
            prompt: Some(to_trace::compaction_prompt()),
        }
    }

    /// Codex's auto-compact ([`super::to_trace::flat_rules`]).
    fn flat_rules(&self, _trace: &Trace) -> crate::trace::flat_rules::FlatRules {
        super::to_trace::flat_rules()
    }

    fn watch_spec(&self, detected: &Detected<'_>) -> Box<dyn WatchSpec> {
        let input =
            classify(detected.path).unwrap_or_else(|_| Input::Rollout(detected.path.into()));
        Box::new(CodexWatch::new(input))
    }
}

/// An opened Codex input: its threads, listed at open from the index and the file names.
#[derive(Debug)]
pub struct CodexStore {
    input: Input,
    threads: Vec<ThreadSummary>,
    diagnostics: Diagnostics,
}

impl CodexStore {
    /// Open what [`input::classify`] recognised. An input without threads is an error.
    pub fn open(input: Input) -> Result<CodexStore, LoadError> {
        let mut diagnostics = Diagnostics::new();
        let threads = match &input {
            Input::Rollout(path) => {
                let s = scan_path(path)?;
                let mut t = ThreadSummary {
                    id: s
                        .id
                        .clone()
                        .or_else(|| super::home::thread_id_of(path))
                        .unwrap_or_else(|| {
                            path.file_stem()
                                .map(|s| s.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        }),
                    rollout: Some(path.clone()),
                    ..ThreadSummary::default()
                };
                diagnostics.extend(&s.diagnostics);
                listing::fill(&mut t, s);
                vec![t]
            }
            Input::Home(home) => listing::list(home, Depth::Index, &mut diagnostics),
            Input::Sessions { dir, home } => listing::list(home, Depth::Index, &mut diagnostics)
                .into_iter()
                .filter(|t| t.rollout.as_deref().is_some_and(|p| p.starts_with(dir)))
                .collect(),
        };
        let path = match &input {
            Input::Home(p) | Input::Rollout(p) | Input::Sessions { dir: p, .. } => p.clone(),
        };
        if threads.is_empty() {
            return Err(LoadError::NoSessions { path });
        }
        Ok(CodexStore {
            input,
            threads,
            diagnostics,
        })
    }

    fn thread(&self, id: &str) -> Option<&ThreadSummary> {
        self.threads.iter().find(|t| t.id == id)
    }

    /// Load one thread by its exact id.
    fn load(&self, id: &str) -> Result<Trace, LoadError> {
        let t = self.thread(id).ok_or_else(|| LoadError::SessionNotFound {
            id: id.to_owned(),
            path: PathBuf::from(self.describe()),
        })?;
        let path = t.rollout.clone().ok_or_else(|| LoadError::Io {
            path: PathBuf::from(format!("rollout of thread {id}")),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the thread index names a rollout file that is not here",
            ),
        })?;
        let r = rollout::read_path(&path)?;
        let mut trace = to_trace::to_trace(&path, r);
        // The index knows a sub-agent's parent where the rollout does not say it.
        if trace.session.parent_id.is_none() {
            trace.session.parent_id = t.parent_id.clone();
        }
        Ok(trace)
    }

    /// `id` and the threads above it.
    fn ancestors(&self, id: &str) -> Vec<String> {
        let mut out = vec![id.to_owned()];
        let mut cur = id.to_owned();
        while let Some(p) = self.thread(&cur).and_then(|t| t.parent_id.clone()) {
            if out.contains(&p) {
                break;
            }
            out.push(p.clone());
            cur = p;
        }
        out
    }

    /// The full-load line of a thread: its listing line, completed from the loaded trace
    /// exactly as a scan completes it.
    fn full_summary(&self, t: &ThreadSummary) -> Option<SessionSummary> {
        let trace = self.load(&t.id).ok()?;
        let mut t = t.clone();
        let children = self.child_ids(&trace);
        let of = SessionSummary::of(&trace, Vec::new());
        t.requests = Some(of.requests);
        t.messages = Some(of.messages);
        t.usage = Some(of.tokens);
        t.cost = Some(of.cost);
        if t.title.is_empty() {
            t.title = of.title;
        }
        if t.cwd.is_empty() {
            t.cwd = of.directory;
        }
        if t.created == 0 {
            t.created = of.created;
        }
        t.updated = t.updated.max(of.updated);
        if t.parent_id.is_none() {
            t.parent_id = of.parent_id;
        }
        Some(t.to_session_summary(children))
    }
}

impl SessionStore for CodexStore {
    fn describe(&self) -> String {
        let n = self.threads.len();
        let threads = if n == 1 {
            "1 thread".to_owned()
        } else {
            format!("{n} threads")
        };
        match &self.input {
            Input::Home(p) => format!("Codex home {} ({threads})", p.display()),
            Input::Sessions { dir, .. } => {
                format!("Codex sessions dir {} ({threads})", dir.display())
            }
            Input::Rollout(p) => format!("Codex rollout {}", p.display()),
        }
    }

    fn diagnostics(&self) -> &Diagnostics {
        &self.diagnostics
    }

    /// Every thread with its rollout scanned ([`super::scan`]: no cache, the scan parses a few
    /// line types), or each loaded in full when `cache` is `None`.
    fn list(&self, cache: Option<&ListingCache>) -> Result<Vec<SessionSummary>, LoadError> {
        if cache.is_none() {
            return Ok(self
                .threads
                .iter()
                .filter_map(|t| self.full_summary(t))
                .collect());
        }
        let mut threads = self.threads.clone();
        let mut diags = Diagnostics::new();
        for t in &mut threads {
            let Some(path) = t.rollout.clone() else {
                continue;
            };
            match scan_path(&path) {
                Ok(s) => listing::fill(t, s),
                Err(e) => diags.push(
                    DiagnosticKind::UnreadableFile,
                    format!("{}: {e}", path.display()),
                ),
            }
        }
        Ok(listing::session_summaries(&threads))
    }

    fn default_session(&self) -> Option<(i64, bool, String)> {
        self.threads
            .iter()
            .filter(|t| t.rollout.is_some())
            .map(|t| (t.updated, t.parent_id.is_none(), t.id.clone()))
            .max_by(|(ta, ma, ia), (tb, mb, ib)| (ma, ta).cmp(&(mb, tb)).then_with(|| ib.cmp(ia)))
    }

    fn has_session(&self, id: &str) -> bool {
        self.thread(id).is_some()
    }

    fn load_session(&self, id: Option<&str>) -> Result<Trace, LoadError> {
        let id = match id {
            Some(want) => resolve(
                self.threads.iter().map(|t| t.id.as_str()),
                want,
                &self.describe(),
            )?,
            None => {
                self.default_session()
                    .ok_or_else(|| LoadError::NoSessions {
                        path: PathBuf::from(self.describe()),
                    })?
                    .2
            }
        };
        self.load(&id)
    }

    /// The threads it spawned (its `spawn_agent` calls' threads, then the threads naming it as
    /// parent, oldest first), never itself or a thread above it.
    fn child_ids(&self, trace: &Trace) -> Vec<String> {
        let above = self.ancestors(&trace.session.id);
        let mut out: Vec<String> = Vec::new();
        for c in &trace.children {
            if self.has_session(&c.session_id) && !out.contains(&c.session_id) {
                out.push(c.session_id.clone());
            }
        }
        let mut named: Vec<&ThreadSummary> = self
            .threads
            .iter()
            .filter(|t| t.parent_id.as_deref() == Some(trace.session.id.as_str()))
            .collect();
        named.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
        for t in named {
            if !out.contains(&t.id) {
                out.push(t.id.clone());
            }
        }
        out.retain(|id| !above.contains(id));
        out
    }

    fn load_children(&self, trace: &Trace) -> Vec<Result<Trace, LoadError>> {
        self.child_ids(trace)
            .iter()
            .map(|id| self.load(id))
            .collect()
    }
}

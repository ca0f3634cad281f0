//! The seam between the neutral core and each agent's formats.
//!
//! An [`Adapter`] knows one agent's recordings: where the agent keeps them, how to recognise a
//! path as one of its inputs, how to open it as a [`SessionStore`] (list sessions cheaply, load a
//! session and its children into the neutral [`Trace`]), and what to watch for `--follow`. The
//! registry ([`crate::formats::ADAPTERS`]) lists them; everything that needs to know what a path
//! is, or where an agent's data lives, walks that registry through the functions here, so input
//! detection happens in one place for loading, listing, watching and following.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use super::diagnostics::Diagnostics;
use super::error::LoadError;
use super::flat_rules::FlatRules;
use super::load::SessionSummary;
use super::model::Trace;
use super::summary_call::SummaryCalls;

/// The environment the adapters read (explicit, so tests need not touch the process environment).
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub home: Option<PathBuf>,
    pub xdg_data_home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    /// Agent-specific variables (`OPENCODE_DB`, …), by name; empty values are left out.
    pub vars: BTreeMap<String, String>,
}

/// The variables the registered adapters read, taken from the process by [`Env::from_process`].
const AGENT_VARS: &[&str] = &["OPENCODE_DB", "CLAUDE_CONFIG_DIR", "CODEX_HOME"];

impl Env {
    /// The running process's `HOME` (`USERPROFILE` on Windows), XDG dirs and agent variables.
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        Env {
            home: var("HOME")
                .or_else(|| var("USERPROFILE"))
                .map(PathBuf::from),
            xdg_data_home: var("XDG_DATA_HOME").map(PathBuf::from),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            vars: AGENT_VARS
                .iter()
                .filter_map(|k| Some((k.to_string(), var(k)?.to_string_lossy().into_owned())))
                .collect(),
        }
    }

    /// An agent variable, when set and not empty.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// This environment with `name` set to `value` (tests).
    pub fn with_var(mut self, name: &str, value: &str) -> Env {
        self.vars.insert(name.to_owned(), value.to_owned());
        self
    }

    /// `$XDG_DATA_HOME` when it is absolute (the XDG rule), else `~/.local/share`.
    pub fn data_home(&self) -> Option<PathBuf> {
        match &self.xdg_data_home {
            Some(x) if x.is_absolute() => Some(x.clone()),
            _ => self.home.as_ref().map(|h| h.join(".local").join("share")),
        }
    }
}

/// How sure an adapter is that a path is its input. Detection takes the surest claim; an equal
/// claim goes to the adapter registered first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    /// Nothing else claimed it and this adapter can try (OpenCode reads any other file as an
    /// export and says why when it is not one).
    Fallback,
    /// By its name or place (a `.db` file, before its first page is written).
    Name,
    /// By what it holds (a SQLite header, a data dir's files, a record's shape).
    Content,
}

/// An adapter's claim on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detection {
    /// The agent's own word for what the path is ("database", "data dir", "export", …).
    pub kind: &'static str,
    pub confidence: Confidence,
}

/// A path, recognised: which adapter reads it and as what.
#[derive(Clone, Copy)]
pub struct Detected<'p> {
    pub adapter: &'static dyn Adapter,
    pub path: &'p Path,
    pub detection: Detection,
}

impl fmt::Debug for Detected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Detected")
            .field("agent", &self.adapter.id())
            .field("path", &self.path)
            .field("detection", &self.detection)
            .finish()
    }
}

/// Where a listing may keep what it read between runs (an adapter with nothing costly to list
/// ignores it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ListingCache {
    /// [`crate::tokens::default_cache_dir`] (`$TIERSCOPE_CACHE_DIR`, else the platform's).
    #[default]
    Default,
    /// This cache dir (each adapter keeps its files in a folder of its own inside).
    At(PathBuf),
    /// No cache: every listing reads the sources again.
    Off,
}

/// One part of an input that a load reads: what the output guard protects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadPart {
    /// A file (an export, a session file).
    File { path: PathBuf, what: &'static str },
    /// A SQLite database, with its `-wal`, `-shm`, `-journal` and directory.
    Database { path: PathBuf, what: &'static str },
    /// A directory read as a whole (a data dir, a storage tree).
    Dir { path: PathBuf, what: &'static str },
}

/// One agent's recordings. See the module docs.
pub trait Adapter: Sync {
    /// Stable id, as a trace's origin names its agent (`"opencode"`).
    fn id(&self) -> &'static str;
    /// The agent's name for people (`"OpenCode"`).
    fn name(&self) -> &'static str;
    /// Where the agent keeps its data in `env`, whether or not it exists: places tierscope reads
    /// and never writes into.
    fn data_dirs(&self, env: &Env) -> Vec<PathBuf>;
    /// What `path` is to this agent, if it is one of its inputs. `meta` is the path's metadata:
    /// a directory or a regular file (anything else never reaches an adapter).
    fn detect(&self, path: &Path, meta: &std::fs::Metadata) -> Option<Detection>;
    /// With no path given: the input holding this agent's data on this machine, `None` when
    /// there is none. An explicitly configured location that is missing is an error.
    fn discover(&self, env: &Env) -> Result<Option<PathBuf>, LoadError>;
    /// Open a path this adapter detected.
    fn open(&self, detected: &Detected<'_>) -> Result<Box<dyn SessionStore>, LoadError>;
    /// Everything a load of a path this adapter detected reads (for the output guard).
    fn read_parts(&self, detected: &Detected<'_>) -> Vec<ReadPart>;
    /// The summary (compaction) calls of a trace this adapter loaded, built as the agent sent
    /// them, and the fixed prompt a simulated call adds. An agent whose calls are not known
    /// builds none.
    fn summary_calls(&self, _trace: &Trace) -> SummaryCalls {
        SummaryCalls::default()
    }
    /// How the agent compacts on its own, for the flat baseline's simulation (an agent whose
    /// compaction is not described gets [`FlatRules::generic`]).
    fn flat_rules(&self, _trace: &Trace) -> FlatRules {
        FlatRules::generic(self.name())
    }
    /// Where the agent sizes a kept tail by an estimate of its own rather than the model's
    /// tokens: each message's size in its units (characters), and the conversion to estimated
    /// tokens. `None`: the tail is sized in the model's tokens.
    fn tail_estimate(&self, _trace: &Trace) -> Option<TailEstimate> {
        None
    }
    /// What makes up the source at a path this adapter detected, for `--follow`.
    fn watch_spec(&self, detected: &Detected<'_>) -> Box<dyn WatchSpec>;
}

/// An agent's own estimate of each message's size, for choosing a kept tail.
#[derive(Debug, Clone)]
pub struct TailEstimate {
    /// Per message of the trace, its size in the agent's units (characters).
    pub message_units: Vec<u64>,
    /// Units to estimated tokens.
    pub to_tokens: fn(u64) -> u64,
}

/// An opened source of one agent: its sessions, listed and loaded into the neutral model.
pub trait SessionStore: fmt::Debug + Send {
    /// What was opened, for people ("database /…/opencode.db", "export …").
    fn describe(&self) -> String;
    /// What went wrong while indexing the source; per-session trouble is in each trace.
    fn diagnostics(&self) -> &Diagnostics;
    /// True for the sample session compiled into the binary.
    fn is_bundled(&self) -> bool {
        false
    }
    /// One line per session (any order). `cache: None` loads every session in full (the
    /// reference a quick listing is checked against).
    fn list(&self, cache: Option<&ListingCache>) -> Result<Vec<SessionSummary>, LoadError>;
    /// The session to open when none is named: (last update, is a main session, id).
    fn default_session(&self) -> Option<(i64, bool, String)>;
    /// Whether a session with exactly this id is here.
    fn has_session(&self, id: &str) -> bool;
    /// Load one session (`id`: exact or a unique prefix; `None`: [`Self::default_session`]).
    fn load_session(&self, id: Option<&str>) -> Result<Trace, LoadError>;
    /// Ids of the sub-agent sessions of `trace`, never `trace` itself or one of its ancestors.
    fn child_ids(&self, trace: &Trace) -> Vec<String>;
    /// The sub-agent sessions of `trace`, one result each.
    fn load_children(&self, trace: &Trace) -> Vec<Result<Trace, LoadError>>;
    /// [`Self::load_session`] with its [`Self::child_ids`] and, when `children`, its
    /// [`Self::load_children`], giving the store up: a store that already holds the session
    /// (an export, read whole when opened) hands it over instead of copying it, so a load
    /// holds the session once.
    fn into_session(
        self: Box<Self>,
        id: Option<&str>,
        children: bool,
    ) -> Result<SessionParts, LoadError> {
        let trace = self.load_session(id)?;
        Ok(SessionParts::of(self.as_ref(), trace, children))
    }
}

/// A loaded session with its sub-agent sessions' ids and, when asked for, the sessions (one
/// result each: an unloadable child does not stop the others).
#[derive(Debug)]
pub struct SessionParts {
    pub trace: Trace,
    pub child_ids: Vec<String>,
    pub children: Vec<Result<Trace, LoadError>>,
}

impl SessionParts {
    /// `trace` with what `store` says of its children.
    pub fn of<S: SessionStore + ?Sized>(store: &S, trace: Trace, children: bool) -> SessionParts {
        SessionParts {
            child_ids: store.child_ids(&trace),
            children: if children {
                store.load_children(&trace)
            } else {
                Vec::new()
            },
            trace,
        }
    }
}

/// The files and directories one followed source is made of.
pub trait WatchSpec: fmt::Debug + Send + Sync {
    /// Directories handed to the file-system notifier (recursive?). Parents rather than files:
    /// a file's watch dies with a replaced inode.
    fn roots(&self) -> Vec<(PathBuf, bool)>;
    /// True when a change of `p` can change the source.
    fn is_relevant(&self, p: &Path) -> bool;
    /// Every file of the source now, in a stable order (a missing one the source may gain, such
    /// as a `-wal`, included).
    fn files(&self) -> Vec<PathBuf>;
    /// Hash the state (name, size, mtime, inode) of every file of the source into `h`.
    fn fingerprint_into(&self, h: &mut Xxh3) {
        for p in self.files() {
            crate::watch::stat_into(h, &p);
        }
    }
    /// The SQLite files of the source, whose commits a file stat can miss.
    fn databases(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

/// The adapter registered under `id`.
pub fn adapter(id: &str) -> Option<&'static dyn Adapter> {
    crate::formats::ADAPTERS
        .iter()
        .copied()
        .find(|a| a.id() == id)
}

/// Recognise `path`: the surest claim of any registered adapter. A path that is neither a
/// directory nor a regular file is refused before anything opens it (a FIFO would block, a
/// device never end).
pub fn detect(path: &Path) -> Result<Detected<'_>, LoadError> {
    let meta = std::fs::metadata(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(LoadError::NotAFile {
            path: path.to_owned(),
            kind: super::input::file_kind(&meta),
        });
    }
    let mut best: Option<Detected<'_>> = None;
    for &adapter in crate::formats::ADAPTERS {
        if let Some(detection) = adapter.detect(path, &meta) {
            if best.is_none_or(|b| detection.confidence > b.detection.confidence) {
                best = Some(Detected {
                    adapter,
                    path,
                    detection,
                });
            }
        }
    }
    best.ok_or_else(|| LoadError::NoData(path.to_owned()))
}

/// With no path given: every registered agent's data on this machine, in registry order.
pub fn discover(env: &Env) -> Result<Vec<PathBuf>, LoadError> {
    let mut found = Vec::new();
    for adapter in crate::formats::ADAPTERS {
        if let Some(p) = adapter.discover(env)? {
            found.push(p);
        }
    }
    Ok(found)
}

/// Open `path` with the adapter that recognises it.
pub fn open_path(path: &Path) -> Result<Box<dyn SessionStore>, LoadError> {
    let detected = detect(path)?;
    detected.adapter.open(&detected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../sample-traces")
            .join(name)
    }

    #[test]
    fn content_beats_a_name_and_a_name_beats_the_fallback() {
        let db_path = sample("opencode.db");
        let db = detect(&db_path).expect("database");
        assert_eq!(
            (db.adapter.id(), db.detection.kind, db.detection.confidence),
            ("opencode", "database", Confidence::Content)
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let empty_db = dir.path().join("opencode.db");
        std::fs::write(&empty_db, b"").expect("write");
        assert_eq!(
            detect(&empty_db).expect("named").detection.confidence,
            Confidence::Name
        );
        let export_path = sample("M1.json");
        let export = detect(&export_path).expect("export");
        assert_eq!(
            (export.detection.kind, export.detection.confidence),
            ("export", Confidence::Fallback)
        );
    }

    #[test]
    fn a_fifo_or_a_missing_path_is_refused_before_any_adapter_sees_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nothing.db");
        assert!(matches!(detect(&missing), Err(LoadError::Io { .. })));
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .expect("mkfifo runs");
            assert!(made.success());
            assert!(matches!(detect(&fifo), Err(LoadError::NotAFile { .. })));
        }
    }

    /// Loading and following decide what a path is in the same place.
    #[test]
    fn watching_and_loading_detect_alike() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("mkdir");
        std::fs::copy(sample("opencode.db"), data.join("opencode.db")).expect("copy");
        for p in [
            sample("opencode.db"),
            sample("M1.json"),
            data,
            dir.path().join(""),
        ] {
            let loaded = detect(&p).expect("detected");
            let watched = crate::watch::WatchTarget::for_path(&p).expect("watchable");
            assert_eq!(
                (loaded.adapter.id(), loaded.detection.kind),
                (watched.agent(), watched.kind()),
                "{}",
                p.display()
            );
        }
    }

    #[test]
    fn with_no_agent_data_nothing_is_discovered() {
        let home = tempfile::tempdir().expect("tempdir");
        let env = Env {
            home: Some(home.path().to_owned()),
            ..Env::default()
        };
        assert!(discover(&env).expect("discover").is_empty());
        let dirs = crate::trace::agent_dirs::agent_data_dirs(&env);
        assert!(dirs
            .iter()
            .any(|d| d.agent == "OpenCode" && d.dir == home.path().join(".local/share/opencode")));
    }

    #[test]
    fn a_relative_xdg_data_home_is_ignored() {
        let env = Env {
            home: Some("/home/u".into()),
            xdg_data_home: Some("relative".into()),
            ..Env::default()
        };
        assert_eq!(env.data_home(), Some(PathBuf::from("/home/u/.local/share")));
    }

    #[test]
    fn every_adapter_is_registered_once() {
        let mut ids: Vec<&str> = crate::formats::ADAPTERS.iter().map(|a| a.id()).collect();
        ids.sort_unstable();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n);
        assert!(adapter("opencode").is_some());
    }
}

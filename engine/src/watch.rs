//! Watching a trace source for changes, for `--follow`.
//!
//! What makes up a source is its adapter's business ([`WatchSpec`]): OpenCode's database changes
//! through `opencode.db-wal` (and, at checkpoints, `opencode.db`), a JSON storage tree through
//! files created and renamed deep inside it, an export through a file being rewritten. Watching the file itself misses a file that is replaced (its watch dies with
//! the old inode), so the **parent directory** is watched and events are filtered by path; a tree
//! is watched recursively. Events are debounced ([`notify_debouncer_full`]) and their kinds are
//! not trusted: every wake-up re-stats the files (size, mtime, inode) and reports a change only
//! when that fingerprint moved. Where events do not arrive (a network file system, an inotify
//! limit, a backend that cannot start) the same re-check runs on a timer, which is also kept as a
//! safety net when events do arrive. Nothing here spins: the caller sleeps on its own channel
//! until a wake-up or [`Watch::poll_interval`] has passed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::RecursiveMode;

use crate::trace::adapter::{self, WatchSpec};
use xxhash_rust::xxh3::Xxh3;

/// Called (from the backend's thread) when something relevant may have changed.
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// Called by an [`EventBackend`] with the paths an event batch touched (empty: "rescan
/// everything", e.g. after the kernel queue overflowed or the backend reported an error).
pub type OnEvents = Box<dyn Fn(&[PathBuf]) + Send>;

/// Something that turns file-system activity under some roots into calls of an [`OnEvents`].
/// Injectable so tests (and platforms without a working notifier) can run on polling alone.
pub trait EventBackend {
    /// Start watching `roots` (directory, recursive?). The returned guard stops delivery when
    /// dropped. An error means "no events": the caller falls back to polling.
    fn start(
        &self,
        roots: &[(PathBuf, bool)],
        on_events: OnEvents,
    ) -> Result<Box<dyn Send>, String>;
}

/// The platform's notifier (inotify, FSEvents, ReadDirectoryChangesW) behind
/// `notify-debouncer-full`.
#[derive(Debug, Clone, Copy)]
pub struct NotifyBackend {
    /// Events of one path closer together than this arrive as one batch.
    pub debounce: Duration,
}

impl Default for NotifyBackend {
    fn default() -> Self {
        Self {
            debounce: Duration::from_millis(150),
        }
    }
}

impl EventBackend for NotifyBackend {
    fn start(
        &self,
        roots: &[(PathBuf, bool)],
        on_events: OnEvents,
    ) -> Result<Box<dyn Send>, String> {
        // The debouncer thread wakes every tick; a tick of half the timeout keeps that to a few
        // cheap wake-ups a second rather than the default four per timeout.
        let tick = self.debounce / 2;
        let mut debouncer = notify_debouncer_full::new_debouncer(
            self.debounce,
            Some(tick),
            move |res: notify_debouncer_full::DebounceEventResult| match res {
                Ok(events) => {
                    let paths: Vec<PathBuf> = events
                        .iter()
                        .flat_map(|e| e.paths.iter().cloned())
                        .collect();
                    if events.iter().any(|e| e.need_rescan()) {
                        on_events(&[]);
                    } else if !paths.is_empty() {
                        on_events(&paths);
                    }
                }
                // An error (e.g. a queue overflow) may hide a change: ask for a re-check.
                Err(_) => on_events(&[]),
            },
        )
        .map_err(|e| format!("cannot start the file watcher: {e}"))?;
        for (dir, recursive) in roots {
            let mode = if *recursive {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            debouncer
                .watch(dir, mode)
                .map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        }
        Ok(Box::new(debouncer))
    }
}

/// No events at all: the watch runs on its polling timer only (`--poll`, tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct PollOnly;

impl EventBackend for PollOnly {
    fn start(&self, _: &[(PathBuf, bool)], _: OnEvents) -> Result<Box<dyn Send>, String> {
        Err("polling requested".into())
    }
}

/// Why a watch could not be set up at all.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch {path}: {reason}")]
    Unwatchable { path: PathBuf, reason: String },
}

/// The files and directories one source is made of, as the adapter that reads it says.
#[derive(Debug, Clone)]
pub struct WatchTarget {
    path: PathBuf,
    agent: &'static str,
    kind: &'static str,
    spec: Arc<dyn WatchSpec>,
}

impl WatchTarget {
    /// Decide what to watch for `path` by what it is on disk, through the adapter registry (the
    /// same detection a load makes).
    pub fn for_path(path: &Path) -> Result<Self, WatchError> {
        let path = std::path::absolute(path).map_err(|e| WatchError::Unwatchable {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let detected = adapter::detect(&path).map_err(|e| WatchError::Unwatchable {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let spec: Arc<dyn WatchSpec> = Arc::from(detected.adapter.watch_spec(&detected));
        Ok(Self {
            agent: detected.adapter.id(),
            kind: detected.detection.kind,
            path,
            spec,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The adapter that reads the source.
    pub fn agent(&self) -> &'static str {
        self.agent
    }

    /// What the source is, in its agent's words ("database", "export", …).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Every file of the source now (see [`WatchSpec::files`]).
    pub fn files(&self) -> Vec<PathBuf> {
        self.spec.files()
    }

    /// The SQLite files of the source (their commits can hide from a file stat).
    pub fn databases(&self) -> Vec<PathBuf> {
        self.spec.databases()
    }

    /// True when a change of `p` can change the source.
    pub fn is_relevant(&self, p: &Path) -> bool {
        self.spec.is_relevant(p)
    }

    /// The current state of every file that makes up the source. Cheap for single files (a few
    /// `stat`s); a tree is walked.
    pub fn fingerprint(&self) -> Fingerprint {
        let meta = std::fs::metadata(&self.path).ok();
        let Some(meta) = meta else {
            return Fingerprint {
                present: false,
                identity: None,
                hash: 0,
            };
        };
        let mut h = Xxh3::new();
        self.spec.fingerprint_into(&mut h);
        Fingerprint {
            present: true,
            identity: identity(&meta),
            hash: h.digest(),
        }
    }
}

/// A summary of the files of a source; equal fingerprints mean "nothing to reload".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    /// The source's main path exists.
    pub present: bool,
    /// Device and inode of the main path (Unix), to tell a replaced file from a changed one.
    pub identity: Option<(u64, u64)>,
    /// Hash over (path, size, mtime) of every relevant file.
    pub hash: u64,
}

/// What a re-check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recheck {
    Unchanged,
    /// The files changed. `replaced`: the main path is a different file than before (rotated,
    /// or back after being gone).
    Changed {
        replaced: bool,
    },
    /// The main path is gone (deleted or moved away).
    Gone {
        reason: String,
    },
}

/// How changes are noticed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchMode {
    /// File-system events, with a slow polling safety net.
    Events,
    /// Polling only, and why.
    Polling { reason: String },
}

/// Timing of a watch.
#[derive(Debug, Clone, Copy)]
pub struct WatchOptions {
    /// Re-check interval when no events arrive (the polling fallback).
    pub poll: Duration,
    /// Re-check interval as a safety net while events do arrive.
    pub safety_poll: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            safety_poll: Duration::from_secs(2),
        }
    }
}

/// A running watch on one source. See the module docs.
pub struct Watch {
    target: WatchTarget,
    mode: WatchMode,
    opts: WatchOptions,
    last: Fingerprint,
    last_change: Option<SystemTime>,
    /// Keeps the backend alive; dropping it stops events.
    _guard: Option<Box<dyn Send>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("target", &self.target)
            .field("mode", &self.mode)
            .field("last", &self.last)
            .finish()
    }
}

impl Watch {
    /// Start watching `target`. `wake` is called from the backend's thread when a relevant path
    /// saw an event; the caller then calls [`Watch::recheck`]. A backend that cannot start
    /// leaves the watch in [`WatchMode::Polling`]; this never fails.
    pub fn start(
        target: WatchTarget,
        backend: &dyn EventBackend,
        opts: WatchOptions,
        wake: Wake,
    ) -> Watch {
        let filter = target.clone();
        let on_events: OnEvents = Box::new(move |paths: &[PathBuf]| {
            if paths.is_empty() || paths.iter().any(|p| filter.is_relevant(p)) {
                wake();
            }
        });
        let (guard, mode) = match backend.start(&target.spec.roots(), on_events) {
            Ok(g) => (Some(g), WatchMode::Events),
            Err(reason) => (None, WatchMode::Polling { reason }),
        };
        // The fingerprint is taken after the backend started, so nothing written in between
        // is missed: it either moved the fingerprint later or raised an event.
        let last = target.fingerprint();
        Watch {
            target,
            mode,
            opts,
            last,
            last_change: None,
            _guard: guard,
        }
    }

    pub fn target(&self) -> &WatchTarget {
        &self.target
    }

    pub fn mode(&self) -> &WatchMode {
        &self.mode
    }

    /// How long the caller may wait for a wake-up before it must call [`Watch::recheck`].
    pub fn poll_interval(&self) -> Duration {
        match self.mode {
            WatchMode::Events => self.opts.safety_poll,
            WatchMode::Polling { .. } => self.opts.poll,
        }
    }

    /// When the last change was seen (wall clock, for the status line).
    pub fn last_change(&self) -> Option<SystemTime> {
        self.last_change
    }

    /// Re-stat the source and say what moved since the last call.
    pub fn recheck(&mut self) -> Recheck {
        let now = self.target.fingerprint();
        let before = std::mem::replace(&mut self.last, now);
        if !now.present {
            if before.present {
                self.last_change = Some(SystemTime::now());
            }
            return Recheck::Gone {
                reason: format!("{} no longer exists", self.target.path.display()),
            };
        }
        if now == before {
            return Recheck::Unchanged;
        }
        self.last_change = Some(SystemTime::now());
        Recheck::Changed {
            replaced: !before.present || before.identity != now.identity,
        }
    }
}

/// `path` with `suffix` appended to its name (`opencode.db` → `opencode.db-wal`).
pub fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// `*.json`.
pub fn is_json(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "json")
}

/// The entries of `dir`, sorted (none for `None` or an unreadable dir).
pub fn sorted_entries(dir: Option<&Path>) -> Vec<PathBuf> {
    let Some(dir) = dir else { return Vec::new() };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Hash (path, size, mtime) of a file; a missing file hashes as its path alone.
pub fn stat_into(h: &mut Xxh3, p: &Path) {
    h.update(p.as_os_str().as_encoded_bytes());
    h.update(&[0]);
    if let Ok(m) = std::fs::metadata(p) {
        h.update(&m.len().to_le_bytes());
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        h.update(&mtime.to_le_bytes());
        if let Some((dev, ino)) = identity(&m) {
            h.update(&dev.to_le_bytes());
            h.update(&ino.to_le_bytes());
        }
    }
}

/// Every `*.json` under `dir`, in a stable order.
pub fn json_files(out: &mut Vec<PathBuf>, dir: &Path) {
    for p in sorted_entries(Some(dir)) {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => json_files(out, &p),
            Ok(_) if is_json(&p) => out.push(p),
            _ => {}
        }
    }
}

#[cfg(unix)]
fn identity(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn channel_wake() -> (Wake, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let wake: Wake = Arc::new(move || {
            if let Ok(tx) = tx.lock() {
                let _ = tx.send(());
            }
        });
        (wake, rx)
    }

    /// Wake-ups → re-checks, the way a follower loop runs them: wait, drain, re-check once.
    /// Returns the changes seen within `window`.
    fn changes_within(watch: &mut Watch, rx: &mpsc::Receiver<()>, window: Duration) -> usize {
        let end = std::time::Instant::now() + window;
        let mut n = 0;
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return n;
            }
            match rx.recv_timeout(left.min(watch.poll_interval())) {
                Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {
                    while rx.try_recv().is_ok() {}
                    if matches!(watch.recheck(), Recheck::Changed { .. }) {
                        n += 1;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return n,
            }
        }
    }

    fn slow_safety() -> WatchOptions {
        // Long timers, so a test of events cannot pass by polling.
        WatchOptions {
            poll: Duration::from_secs(60),
            safety_poll: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_burst_of_writes_is_one_debounced_change() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("E1.json");
        std::fs::write(&f, "{").unwrap();
        let (wake, rx) = channel_wake();
        let target = WatchTarget::for_path(&f).unwrap();
        assert_eq!(target.kind(), "export");
        let mut w = Watch::start(target, &NotifyBackend::default(), slow_safety(), wake);
        assert_eq!(w.mode(), &WatchMode::Events);
        for i in 0..5 {
            std::fs::write(&f, format!("{{\"n\": {i}}}")).unwrap();
        }
        assert_eq!(changes_within(&mut w, &rx, Duration::from_millis(1200)), 1);
        assert!(w.last_change().is_some());
        // Nothing more happens: no further change, and the channel stays quiet.
        assert_eq!(changes_within(&mut w, &rx, Duration::from_millis(400)), 0);
    }

    #[test]
    fn unrelated_files_and_shm_do_not_wake() {
        let dir = tempfile::tempdir().unwrap();
        let src = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/recordings/opencode-1.18.33/data/opencode.db"
        );
        let db = dir.path().join("opencode.db");
        std::fs::copy(src, &db).unwrap();
        let (wake, rx) = channel_wake();
        let target = WatchTarget::for_path(&db).unwrap();
        assert_eq!(target.kind(), "database");
        let mut w = Watch::start(target, &NotifyBackend::default(), slow_safety(), wake);
        std::fs::write(dir.path().join("opencode.db-shm"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        assert!(rx.recv_timeout(Duration::from_millis(600)).is_err());
        assert_eq!(w.recheck(), Recheck::Unchanged);
        // The WAL does matter.
        std::fs::write(dir.path().join("opencode.db-wal"), b"frames").unwrap();
        assert_eq!(changes_within(&mut w, &rx, Duration::from_millis(800)), 1);
    }

    struct Broken;
    impl EventBackend for Broken {
        fn start(&self, _: &[(PathBuf, bool)], _: OnEvents) -> Result<Box<dyn Send>, String> {
            Err("inotify limit reached".into())
        }
    }

    #[test]
    fn polling_takes_over_when_events_are_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.json");
        std::fs::write(&f, "{}").unwrap();
        let (wake, rx) = channel_wake();
        let opts = WatchOptions {
            poll: Duration::from_millis(50),
            safety_poll: Duration::from_secs(60),
        };
        // The failed backend dropped its copy of `wake`; keep one so the channel stays open.
        let _keep = wake.clone();
        let mut w = Watch::start(WatchTarget::for_path(&f).unwrap(), &Broken, opts, wake);
        assert_eq!(
            w.mode(),
            &WatchMode::Polling {
                reason: "inotify limit reached".into()
            }
        );
        assert_eq!(w.poll_interval(), Duration::from_millis(50));
        std::fs::write(&f, "{\"a\": 1}").unwrap();
        assert_eq!(changes_within(&mut w, &rx, Duration::from_millis(300)), 1);
    }

    #[test]
    fn a_removed_file_is_gone_and_a_new_one_is_a_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.json");
        std::fs::write(&f, "{}").unwrap();
        let (wake, _rx) = channel_wake();
        let mut w = Watch::start(
            WatchTarget::for_path(&f).unwrap(),
            &PollOnly,
            WatchOptions::default(),
            wake,
        );
        std::fs::remove_file(&f).unwrap();
        assert!(matches!(w.recheck(), Recheck::Gone { .. }));
        // A file of another inode appears at the same path (keep the old one's inode busy).
        let other = dir.path().join("keep.json");
        std::fs::write(&other, "{}").unwrap();
        std::fs::write(&f, "{\"b\": 2}").unwrap();
        assert_eq!(w.recheck(), Recheck::Changed { replaced: true });
        assert_eq!(w.recheck(), Recheck::Unchanged);
    }

    #[test]
    fn a_tree_is_watched_recursively_for_json_only() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("message").join("ses_1");
        std::fs::create_dir_all(&deep).unwrap();
        let (wake, rx) = channel_wake();
        let target = WatchTarget::for_path(dir.path()).unwrap();
        assert_eq!(target.kind(), "directory");
        let mut w = Watch::start(target, &NotifyBackend::default(), slow_safety(), wake);
        std::fs::write(deep.join("msg_1.json.tmp"), "{").unwrap();
        assert!(rx.recv_timeout(Duration::from_millis(500)).is_err());
        std::fs::write(deep.join("msg_1.json"), "{}").unwrap();
        assert_eq!(changes_within(&mut w, &rx, Duration::from_millis(800)), 1);
    }
}

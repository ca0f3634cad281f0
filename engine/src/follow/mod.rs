//! Following a session while OpenCode writes it (`--follow`): a [`Follower`] runs on its own
//! thread, watches the source ([`crate::watch`]), reloads the session when it changed and hands
//! each new state to a sink (the explorer's message loop, the `replay --follow` printer).
//!
//! **Half-written data.** OpenCode writes a message row, then its parts one by one, then updates
//! the message row; an export or a JSON tree is rewritten file by file. A reload can therefore
//! meet a part whose message row is not visible yet, JSON that does not parse yet, an export cut
//! short. Such a load is not published and not reported as corruption: the follower says
//! [`FollowStatus::Retrying`] and loads again on the next change (or shortly, when a commit
//! landed during the load). Only when the source then stays quiet for [`FollowConfig::settle`]
//! with the same trouble is the load published as it is, with its diagnostics — then it is real.
//!
//! For a database (or a data dir's databases), `PRAGMA data_version` on a connection of our own
//! is read before and after each load: when it moved, a commit landed mid-load and the load is
//! retried rather than trusted. It is read again at every wake whose file stats show no change:
//! a commit becomes visible when its WAL index (`-shm`, not watched) is updated, after its
//! frames are written, so stats taken in between would otherwise hide it for good.
//!
//! Nothing here blocks the caller: [`Follower::spawn`] returns at once, control calls only send
//! a message, and the thread sleeps on its channel between changes (no busy loop).

mod session;
pub use session::{follow_path, SessionBuilder};

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::trace::diagnostics::DiagnosticKind;
use crate::trace::error::LoadError;
use crate::trace::model::Trace;
use crate::watch::{
    EventBackend, NotifyBackend, Recheck, Wake, Watch, WatchError, WatchOptions, WatchTarget,
};

/// What to follow and how patiently.
#[derive(Debug, Clone)]
pub struct FollowConfig {
    /// A db file, a data dir, a storage dir or an export file (as for loading).
    pub path: PathBuf,
    /// Session id or unique prefix; `None`: the session a plain load picks, pinned after the
    /// first successful load (a newer session starting later does not steal the view).
    pub session: Option<String>,
    pub watch: WatchOptions,
    /// How long a half-written source may stay quiet before its load is taken as it is.
    pub settle: Duration,
    /// Delay before loading again after a load that met half-written data.
    pub retry: Duration,
    /// Watch with polling only (no file-system events).
    pub poll_only: bool,
}

impl FollowConfig {
    pub fn new(path: impl Into<PathBuf>, session: Option<String>) -> Self {
        Self {
            path: path.into(),
            session,
            watch: WatchOptions::default(),
            settle: Duration::from_secs(3),
            retry: Duration::from_millis(250),
            poll_only: false,
        }
    }
}

/// The follower's state as the status bar shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowStatus {
    /// Watching; the view is current.
    Following,
    /// Changes are noticed but not loaded until resumed.
    Paused,
    /// A half-written row or file was seen (`partial_write`); loading again on the next change.
    /// Information, not an error.
    Retrying(String),
    /// The file, or the session in it, is gone (deleted, moved, rotated away). The last state
    /// stays on screen; following resumes if it comes back.
    SourceGone(String),
}

impl FollowStatus {
    /// Short label for a status bar.
    pub fn label(&self) -> &'static str {
        match self {
            FollowStatus::Following => "following",
            FollowStatus::Paused => "paused",
            FollowStatus::Retrying(_) => "retrying",
            FollowStatus::SourceGone(_) => "source gone",
        }
    }
}

/// One consistent load of the followed session: its trace and its sub-agent sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub trace: Trace,
    /// Sub-agent sessions that loaded.
    pub children: Vec<Trace>,
    /// Sub-agent sessions that did not load, with why.
    pub child_errors: Vec<String>,
}

impl Snapshot {
    /// Diagnostics of one kind over the session and its children.
    fn count(&self, k: DiagnosticKind) -> usize {
        self.trace.diagnostics.count(k)
            + self
                .children
                .iter()
                .map(|c| c.diagnostics.count(k))
                .sum::<usize>()
    }

    fn example(&self, k: DiagnosticKind) -> String {
        std::iter::once(&self.trace)
            .chain(&self.children)
            .flat_map(|t| t.diagnostics.items())
            .find(|d| d.kind == k)
            .map_or_else(String::new, |d| d.example.clone())
    }
}

/// What changed between two published states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadStats {
    /// Requests in the new state.
    pub requests: usize,
    /// Requests that were not there before.
    pub new_requests: usize,
    /// Indices of requests that were there before and changed (a request still streaming).
    pub changed_requests: Vec<usize>,
    /// Loads that met half-written data before this one succeeded.
    pub partial_retries: usize,
    /// The source file was replaced (rotated) since the last state.
    pub replaced: bool,
    /// The first state after [`Follower::spawn`].
    pub initial: bool,
    /// When this state was loaded.
    pub at: SystemTime,
}

/// What a [`Follower`] reports.
#[derive(Debug)]
pub enum FollowEvent<T> {
    /// A new state of the session, built by the follower's `build` function.
    Reloaded {
        data: Box<T>,
        stats: ReloadStats,
    },
    Status(FollowStatus),
    /// Loading or building failed in a way retrying did not fix. Following goes on.
    Error(String),
}

#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error(transparent)]
    Watch(#[from] WatchError),
    #[error("cannot start the follower thread: {0}")]
    Thread(#[source] std::io::Error),
}

enum Ctl {
    Wake,
    Pause,
    Resume,
    Stop,
}

/// A running follower. Dropping it stops the thread (and waits for it).
#[derive(Debug)]
pub struct Follower {
    ctl: Sender<Ctl>,
    handle: Option<JoinHandle<()>>,
}

impl Follower {
    /// Start following. `build` turns each loaded trace into what the sink wants (a
    /// `LoadedSession`, the trace itself); `sink` receives every event, on the follower's thread.
    pub fn spawn<T, B, S>(cfg: FollowConfig, build: B, sink: S) -> Result<Follower, FollowError>
    where
        T: Send + 'static,
        B: FnMut(Snapshot) -> Result<T, String> + Send + 'static,
        S: FnMut(FollowEvent<T>) + Send + 'static,
    {
        let backend: Box<dyn EventBackend + Send> = if cfg.poll_only {
            Box::new(crate::watch::PollOnly)
        } else {
            Box::new(NotifyBackend::default())
        };
        Self::spawn_with(cfg, backend, build, sink)
    }

    /// [`Follower::spawn`] delivering events on a channel.
    pub fn spawn_channel<T, B>(
        cfg: FollowConfig,
        build: B,
    ) -> Result<(Follower, Receiver<FollowEvent<T>>), FollowError>
    where
        T: Send + 'static,
        B: FnMut(Snapshot) -> Result<T, String> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let f = Self::spawn(cfg, build, move |e| {
            let _ = tx.send(e);
        })?;
        Ok((f, rx))
    }

    /// [`Follower::spawn`] with an explicit event backend (tests, `--poll`).
    pub fn spawn_with<T, B, S>(
        cfg: FollowConfig,
        backend: Box<dyn EventBackend + Send>,
        build: B,
        sink: S,
    ) -> Result<Follower, FollowError>
    where
        T: Send + 'static,
        B: FnMut(Snapshot) -> Result<T, String> + Send + 'static,
        S: FnMut(FollowEvent<T>) + Send + 'static,
    {
        // Resolved here so a wrong path is an error of the caller, not an event.
        let target = WatchTarget::for_path(&cfg.path)?;
        let (ctl, rx) = mpsc::channel::<Ctl>();
        let wake_tx = Mutex::new(ctl.clone());
        let wake: Wake = Arc::new(move || {
            if let Ok(tx) = wake_tx.lock() {
                let _ = tx.send(Ctl::Wake);
            }
        });
        let handle = std::thread::Builder::new()
            .name("tierscope-follow".into())
            .spawn(move || {
                // Watching starts before the first read, so nothing written in between is lost.
                let watch = Watch::start(target, backend.as_ref(), cfg.watch, wake);
                let mut run = Run {
                    probe: Probe::new(&watch),
                    watch,
                    cfg,
                    build,
                    sink,
                    accepted: None,
                    pinned: None,
                    status: None,
                    retries: 0,
                    pending_since: None,
                    replaced: false,
                    paused: false,
                    again: false,
                    loaded_version: None,
                    _product: std::marker::PhantomData,
                };
                run.main(rx);
            })
            .map_err(FollowError::Thread)?;
        Ok(Follower {
            ctl,
            handle: Some(handle),
        })
    }

    /// Stop loading changes (they are still noticed, and loaded on [`Follower::resume`]).
    pub fn pause(&self) {
        let _ = self.ctl.send(Ctl::Pause);
    }

    pub fn resume(&self) {
        let _ = self.ctl.send(Ctl::Resume);
    }

    /// Stop the thread and wait for it (at most one load).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.ctl.send(Ctl::Stop);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `PRAGMA data_version` of a source's databases, each on a connection of our own (read-only).
struct Probe {
    /// Each database, with its connection once opened.
    dbs: Vec<(PathBuf, Option<rusqlite::Connection>)>,
}

impl Probe {
    fn new(watch: &Watch) -> Self {
        let dbs = watch
            .target()
            .databases()
            .into_iter()
            .map(|p| (p, None))
            .collect();
        Self { dbs }
    }

    /// The versions, or `None` when unknown (no database, one cannot be opened).
    fn version(&mut self) -> Option<Vec<i64>> {
        if self.dbs.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(self.dbs.len());
        for (path, conn) in &mut self.dbs {
            if conn.is_none() {
                *conn = crate::trace::sqlite::open_in_place(path);
            }
            let v = conn
                .as_ref()?
                .query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
                .ok();
            match v {
                Some(v) => out.push(v),
                None => {
                    *conn = None;
                    return None;
                }
            }
        }
        Some(out)
    }

    /// Open afresh (at the next [`Probe::version`]).
    fn reset(&mut self, watch: &Watch) {
        *self = Probe::new(watch);
    }
}

/// Diagnostic kinds a half-written source produces; more of them than the last published state
/// had means "retry", not "corrupt".
const TRANSIENT: &[DiagnosticKind] = &[
    DiagnosticKind::OrphanPart,
    DiagnosticKind::CorruptJson,
    DiagnosticKind::TruncatedExport,
    DiagnosticKind::PartialWrite,
    DiagnosticKind::UnreadableFile,
];

/// What one load attempt came to.
enum Attempt {
    /// A clean load; `raced`: a commit landed during it (load again soon to be sure).
    Loaded(Snapshot, bool),
    /// Half-written; the reason for the status line.
    Partial(String, Option<Snapshot>),
    Gone(String),
}

struct Run<T, B, S> {
    watch: Watch,
    probe: Probe,
    cfg: FollowConfig,
    build: B,
    sink: S,
    /// The last published trace.
    accepted: Option<Snapshot>,
    /// The session id, once known.
    pinned: Option<String>,
    status: Option<FollowStatus>,
    retries: usize,
    /// Since when the current half-written state has been seen.
    pending_since: Option<Instant>,
    /// The file was replaced since the last published state.
    replaced: bool,
    paused: bool,
    /// The last load raced a commit: load again after [`FollowConfig::retry`].
    again: bool,
    /// The databases' versions after the last load.
    loaded_version: Option<Vec<i64>>,
    _product: std::marker::PhantomData<fn() -> T>,
}

impl<T, B, S> Run<T, B, S>
where
    B: FnMut(Snapshot) -> Result<T, String>,
    S: FnMut(FollowEvent<T>),
{
    fn main(&mut self, rx: Receiver<Ctl>) {
        self.reload();
        loop {
            let wait = if self.pending_since.is_some() || self.again {
                self.cfg.retry
            } else {
                self.watch.poll_interval()
            };
            let first = match rx.recv_timeout(wait) {
                Ok(c) => c,
                Err(RecvTimeoutError::Timeout) => Ctl::Wake,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            // Drain what queued up meanwhile: one re-check covers any number of wake-ups.
            let mut wake = false;
            for c in std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok())) {
                match c {
                    Ctl::Stop => return,
                    Ctl::Wake => wake = true,
                    Ctl::Pause => {
                        self.paused = true;
                        self.set_status(FollowStatus::Paused);
                    }
                    Ctl::Resume if self.paused => {
                        self.paused = false;
                        self.set_status(FollowStatus::Following);
                        // Whatever changed while paused is loaded now.
                        self.reload();
                    }
                    Ctl::Resume => {}
                }
            }
            if wake && !self.paused {
                self.on_wake();
            }
        }
    }

    fn on_wake(&mut self) {
        match self.watch.recheck() {
            Recheck::Unchanged => {
                // A commit is visible once its WAL index (`-shm`) is updated, after its frames
                // are written: one whose frames the last fingerprint already had but the last
                // load did not see shows only in the version.
                let again = std::mem::take(&mut self.again);
                let committed = self
                    .probe
                    .version()
                    .is_some_and(|v| self.loaded_version.as_ref() != Some(&v));
                if again || committed || self.pending_since.is_some() {
                    self.reload();
                }
            }
            Recheck::Changed { replaced } => {
                self.replaced |= replaced;
                // Reopened at every change: the file may have been replaced, a data dir may
                // hold other databases, and a database opened immutable (no writer had it)
                // would not see the commits of one that started since.
                self.probe.reset(&self.watch);
                self.reload();
            }
            Recheck::Gone { reason } => {
                self.pending_since = None;
                self.set_status(FollowStatus::SourceGone(reason));
            }
        }
    }

    fn reload(&mut self) {
        match self.attempt() {
            Attempt::Loaded(snap, raced) => {
                self.again = raced;
                self.publish(snap)
            }
            Attempt::Partial(reason, trace) => {
                self.retries += 1;
                let since = *self.pending_since.get_or_insert_with(Instant::now);
                let quiet = self
                    .watch
                    .last_change()
                    .and_then(|t| t.elapsed().ok())
                    .is_none_or(|d| d >= self.cfg.settle);
                if quiet && since.elapsed() >= self.cfg.settle {
                    // The source stopped changing with the trouble still there: it is real.
                    match trace {
                        Some(t) => self.publish(t),
                        None => {
                            self.pending_since = None;
                            (self.sink)(FollowEvent::Error(reason));
                        }
                    }
                } else {
                    self.set_status(FollowStatus::Retrying(format!(
                        "partial_write: {reason}; retrying"
                    )));
                }
            }
            Attempt::Gone(reason) => {
                self.pending_since = None;
                self.set_status(FollowStatus::SourceGone(reason));
            }
        }
    }

    fn attempt(&mut self) -> Attempt {
        let before = self.probe.version();
        let result = load(
            &self.cfg.path,
            self.pinned.as_deref().or(self.cfg.session.as_deref()),
        );
        let after = self.probe.version();
        let raced = before != after;
        self.loaded_version = after;
        match result {
            Ok(snap) => {
                let reason = self.transient_trouble(&snap);
                match reason {
                    Some(r) => Attempt::Partial(r, Some(snap)),
                    // Rows are read in two statements; with a commit between them the trace may
                    // be a little behind (never inconsistent: parts without their message are
                    // caught above), so it is shown and loaded again shortly.
                    None => Attempt::Loaded(snap, raced),
                }
            }
            Err(e) => self.classify_error(e),
        }
    }

    /// The first transient diagnostic kind the snapshot has more of than the published state
    /// (or a sub-agent session that newly fails to load).
    fn transient_trouble(&self, snap: &Snapshot) -> Option<String> {
        let had_errors = self.accepted.as_ref().map_or(0, |a| a.child_errors.len());
        if snap.child_errors.len() > had_errors {
            return snap
                .child_errors
                .last()
                .map(|e| format!("sub-agent session: {e}"));
        }
        TRANSIENT.iter().find_map(|k| {
            let had = self.accepted.as_ref().map_or(0, |a| a.count(*k));
            (snap.count(*k) > had).then(|| format!("{} ({})", k.as_str(), snap.example(*k)))
        })
    }

    fn classify_error(&self, e: LoadError) -> Attempt {
        match e {
            LoadError::Io { ref source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Attempt::Gone(e.to_string())
            }
            LoadError::SessionNotFound { .. } if self.accepted.is_some() => {
                Attempt::Gone(format!("{e} (deleted?)"))
            }
            // Not there yet: OpenCode creates the database, then the session row.
            LoadError::SessionNotFound { .. }
            | LoadError::NoSessions { .. }
            | LoadError::NoData(_) => Attempt::Partial(e.to_string(), None),
            // A file cut short while being written fails to parse as a whole.
            LoadError::NotAnExport { .. } | LoadError::Database { .. } | LoadError::Io { .. } => {
                Attempt::Partial(e.to_string(), None)
            }
            // Not something a write in progress fixes.
            LoadError::NotAFile { .. } | LoadError::TooLarge { .. } => Attempt::Gone(e.to_string()),
        }
    }

    fn publish(&mut self, snap: Snapshot) {
        let partial_retries = std::mem::take(&mut self.retries);
        self.pending_since = None;
        self.pinned
            .get_or_insert_with(|| snap.trace.session.id.clone());
        if !self.paused {
            self.set_status(FollowStatus::Following);
        }
        if self.accepted.as_ref() == Some(&snap) {
            return;
        }
        let trace = &snap.trace;
        let old = self.accepted.as_ref().map(|a| &a.trace);
        let stats = ReloadStats {
            requests: trace.requests.len(),
            new_requests: trace
                .requests
                .len()
                .saturating_sub(old.map_or(0, |a| a.requests.len())),
            changed_requests: old.map_or_else(Vec::new, |a| changed_requests(a, trace)),
            partial_retries,
            replaced: std::mem::take(&mut self.replaced),
            initial: old.is_none(),
            at: SystemTime::now(),
        };
        self.accepted = Some(snap.clone());
        match (self.build)(snap) {
            Ok(data) => (self.sink)(FollowEvent::Reloaded {
                data: Box::new(data),
                stats,
            }),
            Err(e) => (self.sink)(FollowEvent::Error(e)),
        }
    }

    fn set_status(&mut self, s: FollowStatus) {
        if self.status.as_ref() != Some(&s) {
            self.status = Some(s.clone());
            (self.sink)(FollowEvent::Status(s));
        }
    }
}

/// Load one session and its sub-agent sessions from `path` the way every command does.
fn load(path: &Path, session: Option<&str>) -> Result<Snapshot, LoadError> {
    let source = crate::trace::load::open(Some(path))?;
    let trace = source.load_session(session)?;
    let mut children = Vec::new();
    let mut child_errors = Vec::new();
    for c in source.load_children(&trace) {
        match c {
            Ok(t) => children.push(t),
            Err(e) => child_errors.push(e.to_string()),
        }
    }
    Ok(Snapshot {
        trace,
        children,
        child_errors,
    })
}

/// Requests present in both whose record or message changed.
pub fn changed_requests(old: &Trace, new: &Trace) -> Vec<usize> {
    old.requests
        .iter()
        .zip(&new.requests)
        .filter(|(a, b)| {
            a != b || old.messages.get(a.message_index) != new.messages.get(b.message_index)
        })
        .map(|(a, _)| a.index)
        .collect()
}

/// True when the request's message is finished: it has a `step-finish` part, an error or a
/// `finish` field. Until then OpenCode may still add parts to it.
pub fn request_finished(trace: &Trace, index: usize) -> bool {
    let Some(r) = trace.requests.get(index) else {
        return false;
    };
    let Some(m) = trace.messages.get(r.message_index) else {
        return false;
    };
    m.finish.is_some()
        || m.error.is_some()
        || m.parts
            .iter()
            .any(|p| matches!(p.kind, crate::trace::model::PartKind::StepFinish { .. }))
}

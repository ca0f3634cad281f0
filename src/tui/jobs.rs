//! Background work: a latest-wins queue (gitui's `AsyncSingleJob` idea: a queued job is
//! replaced by a newer one of the same [`crate::tui::app::JobKey`] before it starts) and the
//! [`Worker`] that executes jobs against the engine. The worker owns the engine's data; the UI
//! only ever sees the prepared view-models that come back as [`Msg`]s.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

use crate::tui::app::{Effect, Msg, SessionView};
use crate::tui::presenter;
use tierscope_engine::output_guard::OutputGuard;
use tierscope_engine::session::progress::{LoadProgress, LoadStage, ProgressSink};
use tierscope_engine::session::LoadOptions;
use tierscope_engine::session::LoadedSession;

/// Pending jobs, at most one per key.
#[derive(Default)]
pub struct JobQueue {
    inner: Mutex<QueueInner>,
    cv: Condvar,
}

#[derive(Default)]
struct QueueInner {
    jobs: Vec<Effect>,
    closed: bool,
}

impl JobQueue {
    /// Queues `job`, dropping a queued (not yet started) job with the same key.
    pub fn push(&self, job: Effect) {
        let Ok(mut q) = self.inner.lock() else { return };
        if let Some(key) = job.job_key() {
            q.jobs.retain(|j| j.job_key() != Some(key));
        }
        q.jobs.push(job);
        self.cv.notify_one();
    }
    /// Blocks until a job is queued; `None` once closed.
    pub fn pop(&self) -> Option<Effect> {
        let mut q = self.inner.lock().ok()?;
        loop {
            if q.closed {
                return None;
            }
            if !q.jobs.is_empty() {
                return Some(q.jobs.remove(0));
            }
            q = self.cv.wait(q).ok()?;
        }
    }
    pub fn close(&self) {
        if let Ok(mut q) = self.inner.lock() {
            q.closed = true;
        }
        self.cv.notify_all();
    }
    pub fn len(&self) -> usize {
        self.inner.lock().map(|q| q.jobs.len()).unwrap_or(0)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Executes jobs. Holds the engine's loaded sessions (by id, sub-agents included) and the
/// latest replay, which the context renders read.
pub struct Worker {
    args: LoadOptions,
    sessions: HashMap<String, Arc<LoadedSession>>,
    current: Option<Arc<LoadedSession>>,
    /// The latest replay: its generation, policy and budget (context renders reuse them).
    replay: Option<(
        u64,
        tierscope_engine::policy::Policy,
        Option<u64>,
        Arc<tierscope_engine::replay::Replay>,
    )>,
    /// Live follow, when enabled by the runner.
    follow: Option<crate::tui::follow::FollowDriver>,
}

impl Worker {
    pub fn new(args: LoadOptions) -> Worker {
        Worker {
            args,
            sessions: HashMap::new(),
            current: None,
            replay: None,
            follow: None,
        }
    }

    /// Let this worker run a follower (`Effect::Follow`); `send` reaches the UI loop.
    pub fn enable_follow(
        &mut self,
        send: Arc<dyn Fn(crate::tui::follow::FollowMsg) + Send + Sync>,
    ) {
        self.follow = Some(crate::tui::follow::FollowDriver::new(
            self.args.clone(),
            send,
        ));
    }

    /// Take the newest followed state: the current session if it is the followed one, else
    /// only remembered for when the user comes back to it.
    fn adopt_followed(&mut self) {
        let Some(l) = self.follow.as_ref().and_then(|f| f.take_session()) else {
            return;
        };
        self.remember(&l);
        // No current session: following waited for the first one, which is shown now.
        if self
            .current
            .as_ref()
            .is_none_or(|c| c.trace.session.id == l.trace.session.id)
        {
            self.current = Some(l);
            self.replay = None;
        }
    }

    /// A worker over an already loaded session (tests, benchmarks).
    pub fn with_session(l: LoadedSession) -> Worker {
        let mut w = Worker::new(LoadOptions::default());
        let l = Arc::new(l);
        w.remember(&l);
        w.current = Some(l);
        w
    }

    /// The session loaded last.
    pub fn current(&self) -> Option<&Arc<LoadedSession>> {
        self.current.as_ref()
    }

    fn remember(&mut self, l: &Arc<LoadedSession>) {
        for c in &l.children {
            let c = Arc::new(c.clone());
            self.remember(&c);
        }
        self.sessions.insert(l.trace.session.id.clone(), l.clone());
    }

    /// Runs one job; `progress` receives intermediate messages. Returns the result message.
    pub fn run(&mut self, job: Effect, progress: &dyn Fn(Msg)) -> Option<Msg> {
        self.adopt_followed();
        match job {
            Effect::Follow(cmd) => {
                if let Some(f) = self.follow.as_mut() {
                    f.apply(cmd);
                }
                None
            }
            Effect::ListSessions => Some(self.list(progress)),
            Effect::LoadSession { id } => Some(self.load(id, progress)),
            Effect::Replay {
                gen,
                policy,
                budget,
            } => Some(self.replay(gen, &policy, budget)),
            Effect::Context { gen, at } => self.context(gen, at),
            Effect::SavePolicy {
                path,
                toml,
                overwrite,
            } => {
                let mut guard = OutputGuard::for_load(&self.args);
                for s in self.sessions.values() {
                    guard.loaded(s);
                }
                Some(Msg::Saved(crate::tui::knobs::write_policy(
                    &path, &toml, overwrite, &guard,
                )))
            }
            Effect::Panel(job) => Some(job.run(self.current.as_ref(), progress)),
            // Writing to the terminal is the runner's business.
            Effect::Copy(_) => None,
        }
    }

    fn list(&mut self, progress: &dyn Fn(Msg)) -> Msg {
        progress(Msg::Progress("looking for sessions…".to_owned()));
        let source = match tierscope_engine::trace::load::open(self.args.path.as_deref()) {
            Ok(s) => s,
            Err(e) => return Msg::Failed(e.to_string()),
        };
        let describe = source.describe();
        progress(Msg::Progress(format!("listing sessions of {describe}…")));
        match source.list_sessions() {
            Ok(list) => Msg::Opened {
                describe,
                sessions: presenter::session_entries(&list),
            },
            Err(e) => Msg::Failed(e.to_string()),
        }
    }

    fn load(&mut self, id: Option<String>, progress: &dyn Fn(Msg)) -> Msg {
        if let Some(l) = id.as_ref().and_then(|i| self.sessions.get(i)).cloned() {
            self.current = Some(l.clone());
            self.replay = None;
            return Msg::Loaded(Ok(Arc::new(SessionView {
                model: presenter::session_model(&l),
            })));
        }
        let what = self
            .args
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "the agents' data dirs".to_owned());
        let title = format!(
            "loading {} from {what}",
            id.as_deref().unwrap_or("the newest session")
        );
        progress(Msg::Progress(format!("{title}…")));
        let mut args = self.args.clone();
        args.session = id;
        match load_reporting(args, &|p| {
            progress(Msg::Progress(format!("{title} · {}", describe_progress(p))))
        }) {
            Ok(l) => {
                let l = Arc::new(l);
                self.remember(&l);
                self.current = Some(l.clone());
                self.replay = None;
                Msg::Loaded(Ok(Arc::new(SessionView {
                    model: presenter::session_model(&l),
                })))
            }
            Err(e) => Msg::Loaded(Err(e.to_string())),
        }
    }

    fn replay(
        &mut self,
        gen: u64,
        policy: &tierscope_engine::policy::Policy,
        budget: Option<u64>,
    ) -> Msg {
        let Some(l) = self.current.clone() else {
            return Msg::Replayed {
                gen,
                result: Err("no session loaded".to_owned()),
            };
        };
        let (replay, model) = presenter::run_replay(&l, policy, budget);
        self.replay = Some((gen, policy.clone(), budget, replay));
        Msg::Replayed {
            gen,
            result: Ok(Arc::new(model)),
        }
    }

    /// The context at `at` for replay `gen`. `None` when the worker holds another replay: the
    /// job is stale (latest wins), and the `Replayed` message of the current replay asks again.
    fn context(&mut self, gen: u64, at: usize) -> Option<Msg> {
        match (&self.current, &self.replay) {
            (Some(l), Some((g, policy, budget, replay))) if *g == gen => {
                let result = presenter::context_model(l, policy, *budget, replay, at).map(Arc::new);
                Some(Msg::Context { gen, at, result })
            }
            _ => None,
        }
    }
}

/// Load on a scoped thread while this one hands its stage reports to `report` (the engine's
/// sink must be `Send + 'static`; the job's progress callback is neither).
fn load_reporting(
    mut args: LoadOptions,
    report: &dyn Fn(LoadProgress),
) -> Result<LoadedSession, tierscope_engine::session::LoadSessionError> {
    let (tx, rx) = std::sync::mpsc::channel();
    args.progress = ProgressSink::new(move |p| {
        let _ = tx.send(p);
    });
    std::thread::scope(|s| {
        let job = s.spawn(move || tierscope_engine::session::load(&args));
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(50)) {
                Ok(p) => report(p),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !job.is_finished() => {}
                Err(_) => break,
            }
        }
        job.join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// A stage report as the loading screen shows it: `2/3 episodes, tiers and token counts: 8,192
/// of 20,000 (40%)`.
pub fn describe_progress(p: LoadProgress) -> String {
    use tierscope_engine::research::report::thousands_u64;
    let head = format!(
        "{}/{} {}",
        p.stage.number(),
        LoadStage::COUNT,
        p.stage.describe()
    );
    match (p.stage, p.percent()) {
        (LoadStage::Reading, _) if p.total > 0 => {
            format!("{head} ({:.1} MB)…", p.total as f64 / 1e6)
        }
        (_, Some(pct)) => format!(
            "{head}: {} of {} ({pct}%)",
            thousands_u64(p.done),
            thousands_u64(p.total)
        ),
        _ => format!("{head}…"),
    }
}

/// Runs effects inline until no more follow (tests and benchmarks: the same code path as the
/// worker thread, without the thread). Copy effects are returned for inspection.
pub fn run_sync(
    state: &mut crate::tui::app::State,
    worker: &mut Worker,
    effects: Vec<Effect>,
) -> Vec<Effect> {
    let mut copies = Vec::new();
    let mut queue: std::collections::VecDeque<Effect> = effects.into();
    while let Some(e) = queue.pop_front() {
        if matches!(e, Effect::Copy(_)) {
            copies.push(e);
            continue;
        }
        let msgs = std::cell::RefCell::new(Vec::new());
        let progress = |m: Msg| msgs.borrow_mut().push(m);
        if let Some(m) = worker.run(e, &progress) {
            msgs.borrow_mut().push(m);
        }
        for m in msgs.into_inner() {
            queue.extend(crate::tui::app::update(state, m));
        }
    }
    copies
}

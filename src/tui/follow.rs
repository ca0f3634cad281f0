//! Live follow in the explorer (`--follow`, key `W`): the session is reloaded as OpenCode writes
//! it, with the view state (selection, scrolls, knobs, policy) kept.
//!
//! Three pieces, each hooked into the app with a line or two:
//! * [`FollowState`] in the [`State`], and [`on_msg`] / [`toggle`] / [`on_session_shown`] called
//!   from `update` (pure, like the rest of it);
//! * [`FollowDriver`], owned by the worker: starts and steers a [`Follower`], builds each new
//!   [`LoadedSession`] off the UI thread and leaves it in a slot the worker adopts before its
//!   next job, and sends the UI a [`FollowMsg`] with the new session view;
//! * [`status_spans`] for the status bar: following / paused / retrying / source gone, the time
//!   of the last change, and "N new requests" when the cursor was not at the newest request.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ratatui::text::Span;

use crate::tui::app::{Effect, Level, Screen, SessionView, State};
use tierscope_engine::follow::{follow_path, SessionBuilder};
use tierscope_engine::follow::{FollowConfig, FollowEvent, FollowStatus, Follower, ReloadStats};
use tierscope_engine::session::LoadOptions;
use tierscope_engine::session::LoadedSession;

/// The key that turns following on and off (`F` is "previous hold").
pub const TOGGLE_KEY: char = 'W';

/// What the explorer knows about following.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FollowState {
    /// The user wants the session followed (`--follow`, toggled with [`TOGGLE_KEY`]).
    pub enabled: bool,
    /// The follower's last status; `None` before it reported.
    pub status: Option<FollowStatus>,
    /// When the last new state arrived (wall clock; for the status bar only).
    pub last_change: Option<SystemTime>,
    /// Requests that arrived while the cursor was not at the newest one.
    pub new_requests: usize,
    /// The session being followed.
    pub session: Option<String>,
    /// No session to show yet: following the source until it gets one (`--follow` on a
    /// database that has none), which is then shown.
    pub waiting: bool,
}

/// What the follower tells the UI.
#[derive(Debug)]
pub enum FollowMsg {
    Status(FollowStatus),
    Reloaded {
        view: Arc<SessionView>,
        stats: ReloadStats,
    },
    Error(String),
}

/// The follow the UI wants: a desired state, so that a newer command replaces a queued one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowCmd {
    /// Session to follow; `None` stops following, unless `first`.
    pub session: Option<String>,
    /// With no `session`: follow the session the source gets first (pinned once it loads).
    pub first: bool,
    /// Loading paused (changes are noticed, loaded on resume).
    pub paused: bool,
}

/// Called by `update` when a session is shown (loaded, drilled into, gone back to): follow it
/// if following is on.
pub fn on_session_shown(state: &mut State, fx: &mut Vec<Effect>) {
    let id = state.session.as_ref().map(|s| s.model.id.clone());
    if state.follow.enabled && state.follow.session != id {
        state.follow.session = id.clone();
        state.follow.new_requests = 0;
        state.follow.status = None;
        fx.push(Effect::Follow(FollowCmd {
            session: id,
            paused: false,
            first: false,
        }));
    }
}

/// The toggle key ([`TOGGLE_KEY`], bound in the keymap as `Action::ToggleFollow`, so only on
/// the main screen with nothing open): start following, else pause or resume.
pub fn toggle(state: &mut State, fx: &mut Vec<Effect>) {
    match (&state.follow.session, state.follow.status.as_ref()) {
        // Never started: start now.
        (None, _) => {
            state.follow.enabled = true;
            on_session_shown(state, fx);
            state.flash("following the session", Level::Info);
        }
        (Some(id), Some(FollowStatus::Paused)) => {
            fx.push(Effect::Follow(FollowCmd {
                session: Some(id.clone()),
                paused: false,
                first: false,
            }));
            state.flash("following resumed", Level::Info);
        }
        (Some(id), _) => {
            fx.push(Effect::Follow(FollowCmd {
                session: Some(id.clone()),
                paused: true,
                first: false,
            }));
            state.flash("following paused", Level::Info);
        }
    }
}

/// Called by `update` when loading failed with no session to show: with following on, wait for
/// the source to get a session (as `replay --follow` does) instead of failing. Returns false
/// when following is off (the caller shows the error).
pub fn wait_for_session(state: &mut State, error: &str, fx: &mut Vec<Effect>) -> bool {
    if !state.follow.enabled || state.follow.session.is_some() {
        return false;
    }
    state.follow.waiting = true;
    state.follow.status = None;
    state.screen = Screen::Loading(format!(
        "waiting for a session… ({}; following, q quits)",
        crate::tui::safe_line(error)
    ));
    fx.push(Effect::Follow(FollowCmd {
        session: None,
        paused: false,
        first: true,
    }));
    true
}

/// Handles a message of the follower.
pub fn on_msg(state: &mut State, m: FollowMsg, fx: &mut Vec<Effect>) {
    match m {
        FollowMsg::Status(s) => {
            if let FollowStatus::SourceGone(reason) = &s {
                if state.follow.waiting {
                    state.screen = Screen::Failed(format!("source gone: {reason}"));
                }
                state.flash(format!("source gone: {reason}"), Level::Warn);
            }
            state.follow.status = Some(s);
        }
        FollowMsg::Error(e) if state.follow.waiting => {
            state.screen = Screen::Failed(format!("follow: {e}"));
        }
        FollowMsg::Error(e) => state.flash(format!("follow: {e}"), Level::Error),
        FollowMsg::Reloaded { view, stats } => on_reloaded(state, view, &stats, fx),
    }
}

fn on_reloaded(
    state: &mut State,
    view: Arc<SessionView>,
    stats: &ReloadStats,
    fx: &mut Vec<Effect>,
) {
    if state.follow.waiting {
        // The first session the source got: shown like a loaded one, then followed as usual.
        state.follow.waiting = false;
        state.follow.session = Some(view.model.id.clone());
        state.follow.last_change = Some(stats.at);
        crate::tui::app::on_loaded(state, view, fx);
        return;
    }
    // A state of another session (the user moved on meanwhile) is not shown.
    if state.follow.session.as_deref() != Some(view.model.id.as_str()) {
        return;
    }
    state.follow.last_change = Some(stats.at);
    let Some(old) = state.session.as_ref() else {
        return;
    };
    if old.model.id != view.model.id || state.screen != Screen::Main {
        return;
    }
    let old_n = old.model.requests.len();
    let at_newest = old_n == 0 || state.main.cursor + 1 >= old_n;
    let n = view.model.requests.len();
    let episodes = view.model.episodes.len();
    state.session = Some(view);
    // The replay and context of the old state no longer match; new ones are requested below.
    state.on_screen.session_changed();
    state.main.context.model = None;
    if at_newest && n > 0 {
        state.main.cursor = n - 1;
        state.follow.new_requests = 0;
    } else {
        // Counted against what the screen showed (the first state after a start may repeat it).
        state.follow.new_requests += n.saturating_sub(old_n);
        state.main.cursor = state.main.cursor.min(n.saturating_sub(1));
    }
    state.main.selected = state.main.selected.min(episodes.saturating_sub(1));
    let (m, env) = state.main_and_env();
    m.refresh_search(&env);
    m.follow_cursor(&env);
    state.on_screen.request(fx);
    // Diff mode compares the grown session too (its cursor keeps up when at the newest).
    crate::tui::panels::on_session_changed(state, fx);
}

/// Status-bar spans: `● following 12:03:41 · 3 new requests · W pause`.
pub fn status_spans(state: &State) -> Vec<Span<'static>> {
    let t = &state.theme;
    if !state.follow.enabled {
        return Vec::new();
    }
    let (label, style) = match &state.follow.status {
        None => ("starting".to_owned(), t.status),
        Some(FollowStatus::Following) => ("● following".to_owned(), t.status_key),
        Some(FollowStatus::Paused) => ("‖ paused".to_owned(), t.warn),
        Some(FollowStatus::Retrying(_)) => (
            "● following (retrying a half-written row)".to_owned(),
            t.status_key,
        ),
        Some(FollowStatus::SourceGone(_)) => ("✕ source gone".to_owned(), t.error),
    };
    let mut text = format!(" {label}");
    if let Some(at) = state.follow.last_change {
        let local: chrono::DateTime<chrono::Local> = at.into();
        text.push_str(&format!(" {}", local.format("%H:%M:%S")));
    }
    let mut spans = vec![Span::styled(text, style)];
    if state.follow.new_requests > 0 {
        let n = state.follow.new_requests;
        spans.push(Span::styled(
            format!(" · {n} new request{} (G)", if n == 1 { "" } else { "s" }),
            t.warn,
        ));
    }
    let key = match state.follow.status {
        Some(FollowStatus::Paused) => "resume",
        _ => "pause",
    };
    spans.push(Span::styled(format!(" {TOGGLE_KEY}"), t.status_key));
    spans.push(Span::styled(format!(" {key} │"), t.status));
    spans
}

/// Called when the cursor moves: reaching the newest request clears "N new requests".
pub fn on_cursor_moved(state: &mut State) {
    if state.main.cursor + 1 >= state.requests() {
        state.follow.new_requests = 0;
    }
}

/// A followed session the worker has not adopted yet.
pub type AdoptSlot = Arc<Mutex<Option<Arc<LoadedSession>>>>;

/// Runs the [`Follower`] for the worker: see the module docs.
pub struct FollowDriver {
    args: LoadOptions,
    send: Arc<dyn Fn(FollowMsg) + Send + Sync>,
    slot: AdoptSlot,
    /// The followed session (`None`: the first the source gets) and its follower.
    running: Option<(Option<String>, Follower)>,
}

impl FollowDriver {
    /// `send` delivers a message to the UI loop (the runner wraps it in its `Msg`).
    pub fn new(args: LoadOptions, send: Arc<dyn Fn(FollowMsg) + Send + Sync>) -> Self {
        Self {
            args,
            send,
            slot: Arc::new(Mutex::new(None)),
            running: None,
        }
    }

    /// The newest followed session not adopted yet (the worker calls this before each job).
    pub fn take_session(&self) -> Option<Arc<LoadedSession>> {
        self.slot.lock().ok().and_then(|mut s| s.take())
    }

    /// Bring the follower to the state `cmd` asks for.
    pub fn apply(&mut self, cmd: FollowCmd) {
        if cmd.session.is_none() && !cmd.first {
            self.running = None; // dropping the follower stops it
            return;
        }
        let id = cmd.session;
        if self.running.as_ref().map(|(s, _)| s) != Some(&id) {
            self.running = None;
            match self.spawn(id.clone()) {
                Ok(f) => self.running = Some((id, f)),
                Err(e) => {
                    (self.send)(FollowMsg::Error(format!("{e:#}")));
                    return;
                }
            }
        }
        if let Some((_, f)) = &self.running {
            if cmd.paused {
                f.pause();
            } else {
                f.resume();
            }
        }
    }

    fn spawn(&self, session: Option<String>) -> anyhow::Result<Follower> {
        let path = follow_path(&self.args)?;
        let mut builder = SessionBuilder::new(&self.args)?;
        let cfg = FollowConfig::new(path, session);
        let slot = self.slot.clone();
        let send = self.send.clone();
        let f = Follower::spawn(
            cfg,
            move |snap| builder.build(snap).map(Arc::new),
            move |e: FollowEvent<Arc<LoadedSession>>| match e {
                FollowEvent::Reloaded { data, stats } => {
                    let l: Arc<LoadedSession> = *data;
                    let view = Arc::new(SessionView {
                        model: crate::tui::presenter::session_model(&l),
                    });
                    // The slot first, the message second: a replay the message triggers finds
                    // this session (or a newer one) waiting.
                    if let Ok(mut s) = slot.lock() {
                        *s = Some(l);
                    }
                    send(FollowMsg::Reloaded { view, stats });
                }
                FollowEvent::Status(s) => send(FollowMsg::Status(s)),
                FollowEvent::Error(e) => send(FollowMsg::Error(e)),
            },
        )?;
        Ok(f)
    }
}

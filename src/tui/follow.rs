//! Live follow in the explorer (`--follow`, key `W`): the session is reloaded as its agent writes
//! it, with the view state (selection, scrolls, knobs, policy) kept.
//!
//! Three pieces, each hooked into the app with a line or two:
//! * [`FollowState`] in the [`State`], whose updates (pure, like the rest of `update`) change
//!   only it and hand back an [`Out`]: the follower's commands, and asks to show a session
//!   or to grow the one on screen;
//! * [`FollowDriver`], owned by the worker: starts and steers a [`Follower`], builds each new
//!   [`LoadedSession`] off the UI thread and leaves it in a slot the worker adopts before its
//!   next job, and sends the UI a [`FollowMsg`] with the new session view;
//! * [`status_spans`] for the status bar: following / paused / retrying / source gone, the time
//!   of the last change, and "N new requests" when the cursor was not at the newest request.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ratatui::text::Span;

use crate::tui::app::{Effect, Level, SessionView, State};
use crate::tui::component::{Ask, Out};
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

impl FollowState {
    /// A session is shown (loaded, drilled into, gone back to): follow it if following is on.
    pub fn on_session_shown(&mut self, shown: Option<&str>, out: &mut Out) {
        if self.enabled && self.session.as_deref() != shown {
            self.session = shown.map(str::to_owned);
            self.new_requests = 0;
            self.status = None;
            out.job(Effect::Follow(FollowCmd {
                session: self.session.clone(),
                paused: false,
                first: false,
            }));
        }
    }

    /// The toggle key ([`TOGGLE_KEY`], bound in the keymap as `Action::ToggleFollow`, so only
    /// on the main screen with nothing open): start following, else pause or resume.
    pub fn toggle(&mut self, shown: Option<&str>, out: &mut Out) {
        let Some(id) = self.session.clone() else {
            // Never started: start now.
            self.enabled = true;
            self.on_session_shown(shown, out);
            out.flash("following the session", Level::Info);
            return;
        };
        let paused = !matches!(self.status, Some(FollowStatus::Paused));
        out.job(Effect::Follow(FollowCmd {
            session: Some(id),
            paused,
            first: false,
        }));
        let said = if paused { "paused" } else { "resumed" };
        out.flash(format!("following {said}"), Level::Info);
    }

    /// Loading failed with no session to show: with following on, wait for the source to get
    /// a session (as `replay --follow` does) instead of failing. Returns false when following
    /// is off (the caller shows the error).
    pub fn wait_for_session(&mut self, error: &str, out: &mut Out) -> bool {
        if !self.enabled || self.session.is_some() {
            return false;
        }
        self.waiting = true;
        self.status = None;
        out.ask(Ask::Loading(format!(
            "waiting for a session… ({}; following, q quits)",
            crate::tui::safe_line(error)
        )));
        out.job(Effect::Follow(FollowCmd {
            session: None,
            paused: false,
            first: true,
        }));
        true
    }

    /// A message of the follower.
    pub fn on_msg(&mut self, m: FollowMsg, out: &mut Out) {
        match m {
            FollowMsg::Status(s) => {
                if let FollowStatus::SourceGone(reason) = &s {
                    if self.waiting {
                        out.ask(Ask::Fail(format!("source gone: {reason}")));
                    }
                    out.flash(format!("source gone: {reason}"), Level::Warn);
                }
                self.status = Some(s);
            }
            FollowMsg::Error(e) if self.waiting => out.ask(Ask::Fail(format!("follow: {e}"))),
            FollowMsg::Error(e) => out.flash(format!("follow: {e}"), Level::Error),
            FollowMsg::Reloaded { view, stats } => {
                if self.waiting {
                    // The first session the source got: shown like a loaded one, then
                    // followed as usual.
                    self.waiting = false;
                    self.session = Some(view.model.id.clone());
                    self.last_change = Some(stats.at);
                    out.ask(Ask::ShowSession(view));
                } else if self.session.as_deref() == Some(view.model.id.as_str()) {
                    // (A state of another session, the user having moved on, is not shown.)
                    self.last_change = Some(stats.at);
                    out.ask(Ask::Grow(view));
                }
            }
        }
    }

    /// The followed session grew by `added` requests while on screen: counted as new unless
    /// the cursor was kept at the newest request.
    pub fn on_grown(&mut self, at_newest: bool, added: usize) {
        if at_newest {
            self.new_requests = 0;
        } else {
            // Counted against what the screen showed (the first state after a start may repeat
            // it).
            self.new_requests += added;
        }
    }

    /// The cursor moved: reaching the newest request clears "N new requests".
    pub fn on_cursor_moved(&mut self, at_newest: bool) {
        if at_newest {
            self.new_requests = 0;
        }
    }
}

/// Runs a follow update `f` (given the id of the session shown) and carries out what it hands
/// back.
pub fn update<R>(
    state: &mut State,
    fx: &mut Vec<Effect>,
    f: impl FnOnce(&mut FollowState, Option<&str>, &mut Out) -> R,
) -> R {
    let mut out = Out::default();
    let shown = state.session.as_ref().map(|s| s.model.id.as_str());
    let r = f(&mut state.follow, shown, &mut out);
    crate::tui::component::carry_out(state, None, out, fx);
    r
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

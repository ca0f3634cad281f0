//! The explorer's state and its one transition function, [`update`]. Pure: no terminal, no
//! threads, no clock. Anything slow (loading, replaying, rendering a context) is returned as an
//! [`Effect`] for the runner to execute off the UI thread; its result comes back as a [`Msg`].

use std::sync::Arc;

use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Rect};

use crate::tui::keymap::{self, Action, Mode};
use crate::tui::model::{ContextModel, ReplayModel, SessionEntry, SessionModel};
use crate::tui::theme::Theme;
use crate::tui::ui::layout::{self, MainRects};
use crate::tui::widgets::chart::ChartKind;
use crate::tui::widgets::Viewport;
use tierscope_engine::episode::model::Tier;
use tierscope_engine::policy::{KnobValue, Policy};

/// Auto-advance intervals for play, slowest first (ms per request).
pub const SPEEDS_MS: [u64; 7] = [2000, 1000, 500, 250, 120, 60, 30];
const DEFAULT_SPEED: usize = 2;

#[derive(Debug, Clone, PartialEq)]
pub enum Screen {
    /// Waiting for a source or a session; the line says what is happening.
    Loading(String),
    Picker,
    Main,
    /// Nothing to show: a load failed before any session was open.
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Heatmap,
    Episodes,
    Context,
    Detail,
}

impl Pane {
    const ORDER: [Pane; 4] = [Pane::Heatmap, Pane::Episodes, Pane::Context, Pane::Detail];
    fn next(self, by: isize) -> Pane {
        let i = Pane::ORDER.iter().position(|p| *p == self).unwrap_or(0) as isize;
        let n = Pane::ORDER.len() as isize;
        Pane::ORDER[((i + by).rem_euclid(n)) as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputPurpose {
    Search,
    KnobValue,
    SavePath,
    Budget,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub purpose: InputPurpose,
    pub text: String,
    /// Shown under the field (e.g. why the last value was refused).
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    None,
    Help { scroll: usize },
    Knobs { selected: usize },
    Policies { selected: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// What the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    pub at: Option<usize>,
    pub episode: Option<String>,
    pub play: bool,
    /// Open this session id directly (no picker).
    pub session: Option<String>,
    /// Show the picker when the source holds several sessions and none was named.
    pub picker: bool,
}

/// A session the user drilled out of, to come back to.
#[derive(Debug, Clone, PartialEq)]
pub struct Breadcrumb {
    pub session_id: String,
    pub title: String,
    pub cursor: usize,
    pub selected: usize,
}

#[derive(Debug, Clone)]
pub struct PickerState {
    pub sessions: Vec<SessionEntry>,
    pub filter: String,
    pub selected: usize,
}

/// A loaded session as the UI sees it (the engine's data stays with the worker).
#[derive(Debug, Clone)]
pub struct SessionView {
    pub model: SessionModel,
}

pub struct State {
    pub screen: Screen,
    pub theme: Theme,
    pub width: u16,
    pub height: u16,
    pub source: String,
    pub picker: PickerState,
    pub session: Option<Arc<SessionView>>,
    pub replay: Option<Arc<ReplayModel>>,
    pub replay_gen: u64,
    pub replay_pending: bool,
    pub replay_error: Option<String>,
    pub context: Option<Arc<ContextModel>>,
    pub context_pending: bool,
    pub policy: Policy,
    pub budget: Option<u64>,
    pub policy_names: Vec<String>,
    /// One line per built-in policy, for the policy list.
    pub policy_descs: Vec<String>,
    pub cursor: usize,
    pub selected: usize,
    pub focus: Pane,
    pub heat_first: usize,
    /// Heatmap zoom as (requests per column, cells per column); `None` fits the whole trace.
    pub zoom: Option<(usize, usize)>,
    pub ep_first: usize,
    pub table_first: usize,
    pub chart: ChartKind,
    pub detail_scroll: usize,
    /// The tier whose text the detail pane shows; `None` = the applied one.
    pub detail_tier: Option<Tier>,
    pub context_scroll: usize,
    /// The context pane shows every chunk's text (else one line per chunk).
    pub context_expanded: bool,
    pub overlay: Overlay,
    pub input: Option<Input>,
    pub playing: bool,
    pub speed: usize,
    pub search: Option<String>,
    /// Episodes matching `search`, kept up to date by `update` (views must not search).
    pub search_hits: Vec<usize>,
    pub stack: Vec<Breadcrumb>,
    pub flash: Option<(String, Level)>,
    pub start: StartOptions,
    pub spinner: usize,
    pub quit: bool,
    /// Live follow (`--follow`): status, last change, new requests.
    pub follow: crate::tui::follow::FollowState,
    /// Diff mode (`d`), when open.
    pub diff: Option<Box<crate::tui::diff::DiffState>>,
    /// The policy before the last knob edits, for diff mode's "before the last edits".
    pub diff_memo: crate::tui::diff::Memo,
    /// Sweep pane (`S`), when open.
    pub sweep: Option<Box<crate::tui::sweep::SweepState>>,
}

#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// A timer tick (only while playing or waiting for a job).
    Tick,
    Progress(String),
    /// The source is open and its sessions are listed.
    Opened {
        describe: String,
        sessions: Vec<SessionEntry>,
    },
    Loaded(Result<Arc<SessionView>, String>),
    Replayed {
        gen: u64,
        result: Result<Arc<ReplayModel>, String>,
    },
    Context {
        gen: u64,
        at: usize,
        result: Result<Arc<ContextModel>, String>,
    },
    Saved(Result<String, String>),
    /// A job failed before any session was shown.
    Failed(String),
    /// From the follower (`--follow`).
    Follow(crate::tui::follow::FollowMsg),
    /// Diff mode's results.
    Diff(crate::tui::diff::DiffMsg),
    /// Sweep pane's progress and results.
    Sweep(crate::tui::sweep::SweepMsg),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// List the sessions of the source.
    ListSessions,
    LoadSession {
        id: Option<String>,
    },
    Replay {
        gen: u64,
        policy: Box<Policy>,
        budget: Option<u64>,
    },
    /// The rendered context at `at` from the replay of generation `gen`.
    Context {
        gen: u64,
        at: usize,
    },
    /// Copy text to the clipboard (OSC 52).
    Copy(String),
    SavePolicy {
        path: String,
        toml: String,
    },
    /// Start, steer or stop following (latest wins).
    Follow(crate::tui::follow::FollowCmd),
    /// Diff mode's work (latest wins per kind).
    Diff(crate::tui::diff::DiffJob),
    /// The sweep pane's grid (latest wins).
    Sweep(crate::tui::sweep::SweepJob),
}

impl Effect {
    /// Jobs with the same key replace each other while queued (latest wins).
    pub fn job_key(&self) -> &'static str {
        match self {
            Effect::ListSessions => "list",
            Effect::LoadSession { .. } => "load",
            Effect::Replay { .. } => "replay",
            Effect::Context { .. } => "context",
            Effect::Copy(_) => "copy",
            Effect::SavePolicy { .. } => "save",
            Effect::Follow(_) => "follow",
            Effect::Diff(j) => j.job_key(),
            Effect::Sweep(j) => j.job_key(),
        }
    }
}

impl State {
    pub fn new(theme: Theme, policy: Policy, budget: Option<u64>, start: StartOptions) -> State {
        State {
            screen: Screen::Loading("opening…".to_owned()),
            theme,
            width: 80,
            height: 24,
            source: String::new(),
            picker: PickerState {
                sessions: Vec::new(),
                filter: String::new(),
                selected: 0,
            },
            session: None,
            replay: None,
            replay_gen: 0,
            replay_pending: false,
            replay_error: None,
            context: None,
            context_pending: false,
            policy,
            budget,
            policy_names: tierscope_engine::policy::builtin_names(),
            policy_descs: tierscope_engine::policy::builtins()
                .map(|v| v.into_iter().map(|p| p.description).collect())
                .unwrap_or_default(),
            cursor: 0,
            selected: 0,
            focus: Pane::Heatmap,
            heat_first: 0,
            zoom: None,
            ep_first: 0,
            table_first: 0,
            chart: ChartKind::Pressure,
            detail_scroll: 0,
            detail_tier: None,
            context_scroll: 0,
            context_expanded: false,
            overlay: Overlay::None,
            input: None,
            playing: false,
            speed: DEFAULT_SPEED,
            search: None,
            search_hits: Vec::new(),
            stack: Vec::new(),
            flash: None,
            start,
            spinner: 0,
            quit: false,
            follow: Default::default(),
            diff: None,
            diff_memo: Default::default(),
            sweep: None,
        }
    }

    pub fn requests(&self) -> usize {
        self.session.as_ref().map_or(0, |s| s.model.requests.len())
    }

    pub fn episodes(&self) -> usize {
        self.session.as_ref().map_or(0, |s| s.model.episodes.len())
    }

    /// Where keys go now.
    pub fn mode(&self) -> Mode {
        if self.input.is_some() {
            return Mode::Input;
        }
        match self.overlay {
            Overlay::Help { .. } => Mode::Help,
            Overlay::Knobs { .. } => Mode::Knobs,
            Overlay::Policies { .. } => Mode::PolicyPick,
            Overlay::None => match (&self.screen, &self.diff) {
                (Screen::Picker, _) => Mode::Picker,
                (Screen::Main, _) if self.sweep.is_some() => {
                    self.sweep.as_ref().map_or(Mode::Main, |s| s.mode())
                }
                (Screen::Main, Some(d)) => d.mode(),
                _ => Mode::Main,
            },
        }
    }

    /// How long the runner may block before it must send a [`Msg::Tick`]; `None` = until the
    /// next event (idle: no CPU).
    pub fn tick_interval_ms(&self) -> Option<u64> {
        if self.playing {
            return Some(SPEEDS_MS[self.speed.min(SPEEDS_MS.len() - 1)]);
        }
        let waiting = matches!(self.screen, Screen::Loading(_)) || self.replay_pending;
        waiting.then_some(120)
    }

    /// Rows of the knobs panel: the budget first, then the policy's knobs.
    pub fn knob_rows(&self) -> usize {
        1 + self.policy.specs.len()
    }

    /// Picker rows that match the filter, as indices into `picker.sessions`.
    pub fn picker_matches(&self) -> Vec<usize> {
        let f = self.picker.filter.to_lowercase();
        self.picker
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                f.is_empty()
                    || s.title.to_lowercase().contains(&f)
                    || s.directory.to_lowercase().contains(&f)
                    || s.id.to_lowercase().contains(&f)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Episodes whose text matches the search, in order.
    pub fn search_matches(&self) -> Vec<usize> {
        let (Some(q), Some(s)) = (&self.search, &self.session) else {
            return Vec::new();
        };
        let q = q.to_lowercase();
        if q.is_empty() {
            return Vec::new();
        }
        s.model
            .episodes
            .iter()
            .enumerate()
            .filter(|(_, e)| e.haystack.contains(&q) || e.id.to_lowercase() == q)
            .map(|(i, _)| i)
            .collect()
    }

    /// (requests per column, cells per column) for a heatmap `width` cells wide.
    pub fn zoom_at(&self, width: usize) -> (usize, usize) {
        let (p, w) = self
            .zoom
            .unwrap_or_else(|| Viewport::fit(self.requests(), width));
        (p.max(1), w.max(1))
    }

    pub fn main_rects(&self) -> MainRects {
        layout::main_rects(Rect::new(0, 0, self.width, self.height), self)
    }

    /// The heatmap's viewport at the current size.
    pub fn viewport(&self) -> Viewport {
        let width = usize::from(self.main_rects().heat_cols);
        let (per_col, col_w) = self.zoom_at(width);
        Viewport {
            first: self.heat_first,
            per_col,
            col_w,
            cols: width / col_w,
            total: self.requests(),
        }
    }

    fn flash(&mut self, text: impl Into<String>, level: Level) {
        self.flash = Some((text.into(), level));
    }
}

/// The one transition function.
pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    let mut fx = Vec::new();
    match msg {
        Msg::Key(k) => {
            // Windows reports releases too; only presses (and repeats) act.
            if k.kind != KeyEventKind::Release {
                on_key(state, k, &mut fx);
            }
        }
        Msg::Mouse(_) if state.sweep.is_some() => {}
        Msg::Mouse(m) if state.diff.is_some() => crate::tui::diff::on_mouse(state, m),
        Msg::Mouse(m) => on_mouse(state, m, &mut fx),
        Msg::Resize(w, h) => {
            state.width = w;
            state.height = h;
            follow_cursor(state);
        }
        Msg::Tick => {
            state.spinner = state.spinner.wrapping_add(1);
            if state.playing && state.screen == Screen::Main {
                if state.cursor + 1 < state.requests() {
                    move_cursor(state, state.cursor + 1, &mut fx);
                } else {
                    state.playing = false;
                    state.flash("end of the session", Level::Info);
                }
            }
        }
        Msg::Progress(p) => {
            if let Screen::Loading(_) = state.screen {
                state.screen = Screen::Loading(p);
            } else {
                state.flash(p, Level::Info);
            }
        }
        Msg::Opened { describe, sessions } => {
            state.source = describe;
            state.picker.sessions = sessions;
            state.picker.selected = 0;
            let named = state.start.session.take();
            if named.is_none() && state.start.picker && state.picker.sessions.len() > 1 {
                state.screen = Screen::Picker;
            } else {
                state.screen = Screen::Loading("loading the session…".to_owned());
                fx.push(Effect::LoadSession { id: named });
            }
        }
        Msg::Loaded(Ok(view)) => {
            // "opening …" and loading progress are done with; warnings and errors stay.
            if matches!(state.flash, Some((_, Level::Info))) {
                state.flash = None;
            }
            on_loaded(state, view, &mut fx);
            crate::tui::diff::on_session_changed(state, &mut fx);
        }
        Msg::Loaded(Err(e)) => {
            if state.session.is_some() {
                state.stack.pop();
                state.screen = Screen::Main;
                state.flash(e, Level::Error);
            } else if !state.picker.sessions.is_empty() {
                state.screen = Screen::Picker;
                state.flash(e, Level::Error);
            } else if !crate::tui::follow::wait_for_session(state, &e, &mut fx) {
                state.screen = Screen::Failed(e);
            }
        }
        Msg::Replayed { gen, result } => {
            if gen != state.replay_gen {
                return fx; // a newer replay is on its way (latest wins)
            }
            state.replay_pending = false;
            match result {
                Ok(r) => {
                    state.replay = Some(r);
                    state.replay_error = None;
                    // A session without requests has no context to render (the main screen
                    // says so instead).
                    if state.requests() > 0 {
                        fx.push(Effect::Context {
                            gen,
                            at: state.cursor,
                        });
                        state.context_pending = true;
                    }
                }
                Err(e) => {
                    state.replay_error = Some(e.clone());
                    state.flash(format!("replay failed: {e}"), Level::Error);
                }
            }
        }
        Msg::Context { gen, at, result } => {
            if gen == state.replay_gen && at == state.cursor {
                state.context_pending = false;
                match result {
                    Ok(c) => {
                        // Open at the divergence point: what broke the cache, at a glance.
                        state.context_scroll = context_home(&c, state.context_expanded);
                        state.context = Some(c);
                    }
                    Err(e) => state.flash(format!("render failed: {e}"), Level::Error),
                }
            }
        }
        Msg::Saved(Ok(path)) => state.flash(format!("saved {path}"), Level::Info),
        Msg::Saved(Err(e)) => state.flash(format!("save failed: {e}"), Level::Error),
        Msg::Failed(e) => state.screen = Screen::Failed(e),
        Msg::Follow(m) => crate::tui::follow::on_msg(state, m, &mut fx),
        Msg::Diff(m) => crate::tui::diff::on_msg(state, m, &mut fx),
        Msg::Sweep(m) => crate::tui::sweep::on_msg(state, m),
    }
    fx
}

/// Shows a loaded session: cursor and selection placed, its replay requested.
pub fn on_loaded(state: &mut State, view: Arc<SessionView>, fx: &mut Vec<Effect>) {
    let n = view.model.requests.len();
    let fresh = state.session.is_none();
    state.session = Some(view);
    state.screen = Screen::Main;
    state.replay = None;
    state.context = None;
    state.heat_first = 0;
    state.ep_first = 0;
    state.table_first = 0;
    state.detail_scroll = 0;
    state.detail_tier = None;
    state.zoom = None;
    let (mut cursor, mut selected) = (0, 0);
    if fresh {
        if let Some(at) = state.start.at.take() {
            cursor = at.min(n.saturating_sub(1));
        }
        if let Some(ep) = state.start.episode.take() {
            match state
                .session
                .as_ref()
                .and_then(|s| s.model.episodes.iter().position(|e| e.id == ep))
            {
                Some(i) => selected = i,
                None => state.flash(format!("no episode {ep}"), Level::Warn),
            }
        }
        state.playing = std::mem::take(&mut state.start.play);
    }
    if let Some(back) = state.pending_return() {
        cursor = back.0.min(n.saturating_sub(1));
        selected = back.1;
    }
    state.search_hits = state.search_matches();
    state.cursor = cursor;
    state.selected = selected.min(state.episodes().saturating_sub(1));
    follow_cursor(state);
    follow_selection(state);
    request_replay(state, fx);
    crate::tui::follow::on_session_shown(state, fx);
}

impl State {
    /// After going back to a parent session: its saved cursor and selection.
    fn pending_return(&mut self) -> Option<(usize, usize)> {
        let id = self.session.as_ref()?.model.id.clone();
        let top = self.stack.last()?;
        if top.session_id == id {
            let b = self.stack.pop()?;
            return Some((b.cursor, b.selected));
        }
        None
    }
}

/// Asks for a replay of the shown session under the current policy (a new generation: the
/// result of an older one is dropped).
pub fn request_replay(state: &mut State, fx: &mut Vec<Effect>) {
    state.replay_gen += 1;
    state.replay_pending = true;
    fx.push(Effect::Replay {
        gen: state.replay_gen,
        policy: Box::new(state.policy.clone()),
        budget: state.budget,
    });
}

fn move_cursor(state: &mut State, to: usize, fx: &mut Vec<Effect>) {
    let n = state.requests();
    if n == 0 {
        return;
    }
    let to = to.min(n - 1);
    if to == state.cursor && state.context.as_ref().is_some_and(|c| c.request == to) {
        return;
    }
    state.cursor = to;
    crate::tui::follow::on_cursor_moved(state);
    follow_cursor(state);
    if state.replay.is_some() {
        state.context_pending = true;
        fx.push(Effect::Context {
            gen: state.replay_gen,
            at: to,
        });
    }
}

/// Keeps the cursor column inside the heatmap.
fn follow_cursor(state: &mut State) {
    let vp = state.viewport();
    state.heat_first = Viewport::follow(vp.first, vp.per_col, vp.cols, vp.total, state.cursor);
}

/// Keeps the selected episode inside the heatmap rows and the table.
fn follow_selection(state: &mut State) {
    let r = state.main_rects();
    let rows = usize::from(r.heat_rows).max(1);
    if state.selected < state.ep_first {
        state.ep_first = state.selected;
    } else if state.selected >= state.ep_first + rows {
        state.ep_first = state.selected + 1 - rows;
    }
    let trows = usize::from(r.table_rows).max(1);
    if state.selected < state.table_first {
        state.table_first = state.selected;
    } else if state.selected >= state.table_first + trows {
        state.table_first = state.selected + 1 - trows;
    }
}

fn select(state: &mut State, i: usize) {
    let n = state.episodes();
    if n == 0 {
        return;
    }
    let i = i.min(n - 1);
    if i != state.selected {
        state.detail_scroll = 0;
        state.detail_tier = None;
    }
    state.selected = i;
    follow_selection(state);
}

/// The next (or previous) request after the cursor in a sorted list.
fn jump(list: &[usize], cursor: usize, forward: bool) -> Option<usize> {
    if forward {
        list.iter().copied().find(|&r| r > cursor)
    } else {
        list.iter().rev().copied().find(|&r| r < cursor)
    }
}

fn on_key(state: &mut State, k: KeyEvent, fx: &mut Vec<Effect>) {
    let mode = state.mode();
    let action = keymap::lookup(mode, &k);
    match mode {
        Mode::Input => on_input_key(state, k, action, fx),
        Mode::Picker => on_picker_key(state, k, action, fx),
        Mode::Help => match action {
            Some(Action::CloseOverlay) => state.overlay = Overlay::None,
            Some(Action::ForceQuit) => state.quit = true,
            Some(a) => {
                let (page, max) = crate::tui::ui::help::page_and_max_scroll(state);
                if let Overlay::Help { scroll } = &mut state.overlay {
                    *scroll = match a {
                        Action::ScrollDown => *scroll + 1,
                        Action::ScrollUp => scroll.saturating_sub(1),
                        Action::ListPageDown => *scroll + page,
                        Action::ListPageUp => scroll.saturating_sub(page),
                        Action::First => 0,
                        Action::Last => max,
                        _ => *scroll,
                    }
                    .min(max);
                }
            }
            None => {}
        },
        Mode::Knobs => on_knobs_key(state, action, fx),
        Mode::PolicyPick => on_policy_key(state, action, fx),
        Mode::Diff | Mode::DiffKnobs | Mode::DiffPick => {
            crate::tui::diff::on_key(state, action, fx)
        }
        Mode::Sweep | Mode::SweepSetup | Mode::SweepEdit => {
            crate::tui::sweep::on_key(state, &k, action, fx)
        }
        Mode::Main => {
            if let Some(a) = action {
                on_main_action(state, a, fx);
            }
        }
    }
}

fn on_main_action(state: &mut State, a: Action, fx: &mut Vec<Effect>) {
    if state.screen != Screen::Main {
        // Loading or failed: only quitting and help make sense.
        match a {
            Action::Quit | Action::ForceQuit => state.quit = true,
            Action::Help => state.overlay = Overlay::Help { scroll: 0 },
            _ => {}
        }
        return;
    }
    let empty: Vec<usize> = Vec::new();
    let (changes, holds, thrash) = match &state.replay {
        Some(r) => (
            r.change_requests.clone(),
            r.hold_requests.clone(),
            r.thrash_requests.clone(),
        ),
        None => (empty.clone(), empty.clone(), empty),
    };
    let (turns, compactions) = match &state.session {
        Some(s) => (s.model.user_turns.clone(), s.model.compactions.clone()),
        None => (Vec::new(), Vec::new()),
    };
    let c = state.cursor;
    let mut jump_to =
        |list: &[usize], fwd: bool, what: &str, state: &mut State| match jump(list, c, fwd) {
            Some(r) => move_cursor(state, r, fx),
            None => state.flash(
                format!("no {what} {}", if fwd { "ahead" } else { "before" }),
                Level::Info,
            ),
        };
    match a {
        Action::Quit => {
            if !state.stack.is_empty() && state.overlay == Overlay::None {
                go_back(state, fx);
            } else {
                state.quit = true;
            }
        }
        Action::ForceQuit => state.quit = true,
        Action::Back => {
            if state.stack.is_empty() && state.picker.sessions.len() > 1 {
                // Back to the session picker this session was opened from.
                state.playing = false;
                state.screen = Screen::Picker;
            } else if state.stack.is_empty() {
                state.flash("not inside a sub-agent session", Level::Info);
            } else {
                go_back(state, fx);
            }
        }
        Action::Help => state.overlay = Overlay::Help { scroll: 0 },
        Action::StepNext => move_cursor(state, c + 1, fx),
        Action::StepPrev => move_cursor(state, c.saturating_sub(1), fx),
        Action::StepNextFast => move_cursor(state, c + 10, fx),
        Action::StepPrevFast => move_cursor(state, c.saturating_sub(10), fx),
        Action::First => move_cursor(state, 0, fx),
        Action::Last => move_cursor(state, state.requests().saturating_sub(1), fx),
        Action::NextUserTurn => jump_to(&turns, true, "user turn", state),
        Action::PrevUserTurn => jump_to(&turns, false, "user turn", state),
        Action::NextChange => jump_to(&changes, true, "change", state),
        Action::PrevChange => jump_to(&changes, false, "change", state),
        Action::NextHold => jump_to(&holds, true, "hold", state),
        Action::PrevHold => jump_to(&holds, false, "hold", state),
        Action::NextThrash => jump_to(&thrash, true, "thrash", state),
        Action::PrevThrash => jump_to(&thrash, false, "thrash", state),
        Action::NextCompaction => jump_to(&compactions, true, "compaction", state),
        Action::PrevCompaction => jump_to(&compactions, false, "compaction", state),
        Action::PlayPause => {
            state.playing = !state.playing;
            if state.playing && state.cursor + 1 >= state.requests() {
                move_cursor(state, 0, fx);
            }
        }
        Action::Faster => state.speed = (state.speed + 1).min(SPEEDS_MS.len() - 1),
        Action::Slower => state.speed = state.speed.saturating_sub(1),
        Action::SelectDown => select(state, state.selected + 1),
        Action::SelectUp => select(state, state.selected.saturating_sub(1)),
        Action::ScrollDown | Action::ScrollUp => {
            let down = a == Action::ScrollDown;
            let page = usize::from(state.main_rects().detail_rows.max(2)) / 2;
            match state.focus {
                Pane::Context => state.context_scroll = scroll_by(state.context_scroll, page, down),
                Pane::Heatmap => {
                    let rows = usize::from(state.main_rects().heat_rows.max(1));
                    let to = if down {
                        state.selected + rows
                    } else {
                        state.selected.saturating_sub(rows)
                    };
                    select(state, to);
                }
                Pane::Episodes => {
                    let rows = usize::from(state.main_rects().table_rows.max(1));
                    let to = if down {
                        state.selected + rows
                    } else {
                        state.selected.saturating_sub(rows)
                    };
                    select(state, to);
                }
                Pane::Detail => state.detail_scroll = scroll_by(state.detail_scroll, page, down),
            }
        }
        Action::FocusNext => state.focus = state.focus.next(1),
        Action::FocusPrev => state.focus = state.focus.next(-1),
        Action::ZoomIn | Action::ZoomOut => {
            let width = usize::from(state.main_rects().heat_cols);
            let (per, cw) = state.zoom_at(width);
            let fit = Viewport::fit(state.requests(), width);
            let next = if a == Action::ZoomIn {
                if per > 1 {
                    (per / 2, 1)
                } else {
                    (1, (cw * 2).min(16))
                }
            } else if cw > 1 {
                (1, cw / 2)
            } else {
                ((per * 2).min(fit.0), 1)
            };
            // Zooming out past "the whole trace fits" would only leave columns empty: stop
            // there (requests per cell: next.0 / next.1 against fit.0 / fit.1).
            let next = if a == Action::ZoomOut && next.0 * fit.1 > fit.0 * next.1 {
                fit
            } else {
                next
            };
            state.zoom = if next == fit { None } else { Some(next) };
            state.heat_first = state.heat_first / next.0 * next.0;
            follow_cursor(state);
        }
        Action::PanLeft | Action::PanRight => {
            let vp = state.viewport();
            let step = (vp.cols / 4).max(1) * vp.per_col;
            let span = vp.cols * vp.per_col;
            let max_first = vp.total.saturating_sub(span).div_ceil(vp.per_col) * vp.per_col;
            state.heat_first = if a == Action::PanRight {
                (state.heat_first + step).min(max_first)
            } else {
                state.heat_first.saturating_sub(step)
            };
        }
        Action::ToggleChart => {
            state.chart = match state.chart {
                ChartKind::Pressure => ChartKind::Cost,
                ChartKind::Cost => ChartKind::Pressure,
            }
        }
        Action::NextTierText | Action::PrevTierText => cycle_tier_text(state, a),
        Action::ToggleContextText => {
            // Keep the same chunk in view across the switch.
            if let Some(c) = &state.context {
                state.context_scroll = if state.context_expanded {
                    c.lines
                        .get(state.context_scroll)
                        .map_or(0, |(chunk, _)| *chunk)
                } else {
                    c.chunk_start
                        .get(state.context_scroll)
                        .copied()
                        .unwrap_or(0)
                };
            }
            state.context_expanded = !state.context_expanded;
            state.focus = Pane::Context;
        }
        Action::OpenKnobs => {
            state.diff_memo.panel_opened();
            state.overlay = Overlay::Knobs { selected: 0 }
        }
        Action::OpenDiff => crate::tui::diff::open(state),
        Action::OpenSweep => crate::tui::sweep::open(state),
        Action::SwitchPolicy => open_policies(state),
        Action::SavePolicy => start_save(state),
        Action::DrillIn => drill_in(state, fx),
        Action::Search => {
            state.input = Some(Input {
                purpose: InputPurpose::Search,
                text: state.search.clone().unwrap_or_default(),
                error: None,
            })
        }
        Action::SearchNext | Action::SearchPrev => {
            let m = state.search_hits.clone();
            if m.is_empty() {
                state.flash("no search matches", Level::Info);
            } else {
                let s = state.selected;
                let next = if a == Action::SearchNext {
                    m.iter().copied().find(|&i| i > s).unwrap_or(m[0])
                } else {
                    m.iter()
                        .rev()
                        .copied()
                        .find(|&i| i < s)
                        .unwrap_or(m[m.len() - 1])
                };
                select(state, next);
            }
        }
        Action::Copy => copy_tier_text(state, fx),
        Action::ToggleFollow => crate::tui::follow::toggle(state, fx),
        _ => {}
    }
}

/// Where the context pane opens: a little above the divergence point (what broke the cache, at
/// a glance).
fn context_home(c: &ContextModel, expanded: bool) -> usize {
    match c.divergence_chunk {
        Some(d) if expanded => c.chunk_start.get(d).copied().unwrap_or(0).saturating_sub(3),
        Some(d) => d.saturating_sub(2),
        None => 0,
    }
}

fn scroll_by(v: usize, by: usize, down: bool) -> usize {
    if down {
        v.saturating_add(by)
    } else {
        v.saturating_sub(by)
    }
}

/// The tier the detail pane shows: the chosen one, else the applied one at the cursor.
pub fn shown_tier(state: &State) -> Option<Tier> {
    if state.detail_tier.is_some() {
        return state.detail_tier;
    }
    // A dropped episode has no text of its own: show its full tier.
    match applied_tier(state, state.selected) {
        Some(Tier::Dropped) | None => Some(Tier::Full),
        t => t,
    }
}

/// The applied tier of episode `ep` at the cursor (None while it is active or not yet there).
pub fn applied_tier(state: &State, ep: usize) -> Option<Tier> {
    state.replay.as_ref()?.grid.tier(ep, state.cursor)
}

fn cycle_tier_text(state: &mut State, a: Action) {
    let Some(s) = &state.session else { return };
    let Some(ep) = s.model.episodes.get(state.selected) else {
        return;
    };
    let tiers: Vec<Tier> = ep.tiers.iter().map(|t| t.tier).collect();
    if tiers.is_empty() {
        return;
    }
    let cur = shown_tier(state).unwrap_or(Tier::Full);
    let i = tiers.iter().position(|t| *t == cur).unwrap_or(0);
    let n = tiers.len();
    let j = if a == Action::NextTierText {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    };
    state.detail_tier = Some(tiers[j]);
    state.detail_scroll = 0;
}

fn copy_tier_text(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(s) = &state.session else { return };
    let Some(ep) = s.model.episodes.get(state.selected) else {
        return;
    };
    let Some(tier) = shown_tier(state) else {
        return;
    };
    match ep.tier_text(tier) {
        Some(t) => {
            let text = t.lines.join("\n");
            let msg = format!(
                "copied {} {} ({} lines) via OSC 52",
                ep.id,
                tier,
                t.lines.len()
            );
            fx.push(Effect::Copy(text));
            state.flash(msg, Level::Info);
        }
        None => state.flash(format!("{} has no {tier} text", ep.id), Level::Warn),
    }
}

fn drill_in(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(s) = &state.session else { return };
    let Some(ep) = s.model.episodes.get(state.selected) else {
        return;
    };
    let Some(child) = ep.children.first().cloned() else {
        state.flash(format!("{} spawned no sub-agent", ep.id), Level::Info);
        return;
    };
    let crumb = Breadcrumb {
        session_id: s.model.id.clone(),
        title: s.model.title.clone(),
        cursor: state.cursor,
        selected: state.selected,
    };
    state.stack.push(crumb);
    state.playing = false;
    state.flash(format!("opening sub-agent session {child}…"), Level::Info);
    fx.push(Effect::LoadSession { id: Some(child) });
}

fn go_back(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(top) = state.stack.last() else {
        return;
    };
    state.playing = false;
    fx.push(Effect::LoadSession {
        id: Some(top.session_id.clone()),
    });
}

fn open_policies(state: &mut State) {
    let selected = state
        .policy_names
        .iter()
        .position(|n| *n == state.policy.name)
        .unwrap_or(0);
    state.overlay = Overlay::Policies { selected };
}

fn start_save(state: &mut State) {
    state.input = Some(Input {
        purpose: InputPurpose::SavePath,
        text: format!("{}-tuned.toml", state.policy.name),
        error: None,
    });
}

fn on_policy_key(state: &mut State, action: Option<Action>, fx: &mut Vec<Effect>) {
    let Overlay::Policies { selected } = &mut state.overlay else {
        return;
    };
    let n = state.policy_names.len();
    match action {
        Some(Action::ListUp) => *selected = selected.saturating_sub(1),
        Some(Action::ListDown) => *selected = (*selected + 1).min(n.saturating_sub(1)),
        Some(Action::Accept) => {
            let name = state.policy_names.get(*selected).cloned();
            state.overlay = Overlay::None;
            if let Some(name) = name {
                match tierscope_engine::policy::load(&name, &[]) {
                    Ok(p) => {
                        state.policy = p;
                        state.flash(format!("policy {name}"), Level::Info);
                        if state.session.is_some() {
                            request_replay(state, fx);
                        }
                    }
                    Err(e) => state.flash(e.to_string(), Level::Error),
                }
            }
        }
        Some(Action::CloseOverlay) => state.overlay = Overlay::None,
        Some(Action::ForceQuit) => state.quit = true,
        _ => {}
    }
}

/// Sets knob `name` to `text` (validated by the policy, constraints included) and reruns the
/// replay. Returns the refusal, if any.
pub fn set_knob(
    state: &mut State,
    name: &str,
    text: &str,
    fx: &mut Vec<Effect>,
) -> Result<(), String> {
    let p = state
        .policy
        .clone()
        .with_overrides(&[(name.to_owned(), text.to_owned())])
        .map_err(|e| e.to_string())?;
    if p.knobs == state.policy.knobs {
        return Ok(());
    }
    state.diff_memo.knob_changing(&state.policy);
    state.policy = p;
    if state.session.is_some() {
        request_replay(state, fx);
    }
    Ok(())
}

fn set_budget(state: &mut State, budget: Option<u64>, fx: &mut Vec<Effect>) {
    if budget == state.budget {
        return;
    }
    state.budget = budget;
    if state.session.is_some() {
        request_replay(state, fx);
    }
}

/// The budget the current replay used (or the override).
pub fn effective_budget(state: &State) -> u64 {
    state
        .budget
        .or_else(|| state.replay.as_ref().map(|r| r.budget))
        .unwrap_or(0)
}

fn on_knobs_key(state: &mut State, action: Option<Action>, fx: &mut Vec<Effect>) {
    let Overlay::Knobs { selected } = state.overlay else {
        return;
    };
    let rows = state.knob_rows();
    let set_sel = |state: &mut State, s: usize| state.overlay = Overlay::Knobs { selected: s };
    match action {
        Some(Action::KnobUp) => set_sel(state, selected.saturating_sub(1)),
        Some(Action::KnobDown) => set_sel(state, (selected + 1).min(rows - 1)),
        Some(a @ (Action::KnobInc | Action::KnobDec | Action::KnobIncBig | Action::KnobDecBig)) => {
            let steps: f64 = match a {
                Action::KnobInc => 1.0,
                Action::KnobDec => -1.0,
                Action::KnobIncBig => 10.0,
                _ => -10.0,
            };
            step_knob(state, selected, steps, fx);
        }
        Some(Action::KnobType) => {
            let text = if selected == 0 {
                effective_budget(state).to_string()
            } else {
                state
                    .policy
                    .specs
                    .get(selected - 1)
                    .and_then(|s| state.policy.knobs.get(&s.name))
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            };
            state.input = Some(Input {
                purpose: if selected == 0 {
                    InputPurpose::Budget
                } else {
                    InputPurpose::KnobValue
                },
                text,
                error: None,
            });
        }
        Some(Action::KnobReset) => {
            if selected == 0 {
                set_budget(state, None, fx);
            } else if let Some(spec) = state.policy.specs.get(selected - 1).cloned() {
                if let Err(e) = set_knob(state, &spec.name, &spec.default.to_string(), fx) {
                    state.flash(e, Level::Error);
                }
            }
        }
        Some(Action::SavePolicy) => start_save(state),
        Some(Action::SwitchPolicy) => open_policies(state),
        Some(Action::CloseOverlay) => state.overlay = Overlay::None,
        Some(Action::ForceQuit) => state.quit = true,
        _ => {}
    }
}

/// Moves knob row `row` (0 = budget) by `steps` steps: numbers by their step, switches toggle,
/// choices cycle.
pub fn step_knob(state: &mut State, row: usize, steps: f64, fx: &mut Vec<Effect>) {
    if row == 0 {
        let b = effective_budget(state);
        if b == 0 {
            return;
        }
        set_budget(state, Some(crate::tui::model::stepped_budget(b, steps)), fx);
        return;
    }
    let Some(spec) = state.policy.specs.get(row - 1).cloned() else {
        return;
    };
    let cur = state.policy.knobs.get(&spec.name);
    let Some(text) = crate::tui::model::stepped_knob(&spec, cur, steps) else {
        return;
    };
    if let Err(e) = set_knob(state, &spec.name, &text, fx) {
        state.flash(e, Level::Warn);
    }
}

fn on_input_key(state: &mut State, k: KeyEvent, action: Option<Action>, fx: &mut Vec<Effect>) {
    let Some(mut input) = state.input.take() else {
        return;
    };
    match action {
        Some(Action::ForceQuit) => {
            state.quit = true;
            return;
        }
        Some(Action::CloseOverlay) => {
            // Cancelled: the field is dropped; a cancelled search also clears its matches.
            if input.purpose == InputPurpose::Search {
                state.search = None;
                state.search_hits.clear();
            }
            return;
        }
        Some(Action::Accept) => {
            if let Err(e) = accept_input(state, &input, fx) {
                input.error = Some(e);
                state.input = Some(input);
            }
            return;
        }
        _ => {}
    }
    match k.code {
        KeyCode::Backspace => {
            input.text.pop();
        }
        KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => input.text.push(c),
        _ => {}
    }
    input.error = None;
    if input.purpose == InputPurpose::Search {
        // Incremental: select the first match as the user types.
        state.search = Some(input.text.clone());
        state.search_hits = state.search_matches();
        if let Some(&first) = state.search_hits.first() {
            select(state, first);
        }
    }
    state.input = Some(input);
}

fn accept_input(state: &mut State, input: &Input, fx: &mut Vec<Effect>) -> Result<(), String> {
    let text = input.text.trim();
    match input.purpose {
        InputPurpose::Search => {
            state.search = (!text.is_empty()).then(|| text.to_owned());
            state.search_hits = state.search_matches();
            let n = state.search_hits.len();
            if !text.is_empty() {
                state.flash(format!("{n} episodes match {text:?} (n / N)"), Level::Info);
            }
            Ok(())
        }
        InputPurpose::KnobValue => {
            let Overlay::Knobs { selected } = state.overlay else {
                return Ok(());
            };
            let Some(spec) = state.policy.specs.get(selected.wrapping_sub(1)).cloned() else {
                return Ok(());
            };
            set_knob(state, &spec.name, text, fx)
        }
        InputPurpose::Budget => {
            let b: u64 = text
                .replace(['_', ','], "")
                .parse()
                .map_err(|_| format!("not a whole number of tokens: {text:?}"))?;
            if b == 0 {
                return Err("the budget must be above 0".to_owned());
            }
            set_budget(state, Some(b), fx);
            Ok(())
        }
        InputPurpose::SavePath => {
            if text.is_empty() {
                return Err("give a file name".to_owned());
            }
            let path = if text.ends_with(".toml") {
                text.to_owned()
            } else {
                format!("{text}.toml")
            };
            fx.push(Effect::SavePolicy {
                path,
                toml: policy_toml(&state.policy),
            });
            Ok(())
        }
    }
}

/// The current policy with its knobs as a policy TOML file that `--policy FILE` reads back.
pub fn policy_toml(p: &Policy) -> String {
    let mut out = String::new();
    out.push_str("# Saved from the tierscope explorer.\n");
    let mut root = toml::Table::new();
    root.insert(
        "name".into(),
        toml::Value::String(format!("{}-tuned", p.name)),
    );
    root.insert(
        "kind".into(),
        toml::Value::String(p.kind.as_str().to_owned()),
    );
    root.insert(
        "description".into(),
        toml::Value::String(format!("{} with knobs tuned in the explorer", p.name)),
    );
    root.insert("version".into(), toml::Value::Integer(i64::from(p.version)));
    if p.kind != tierscope_engine::policy::PolicyKind::Decay {
        root.insert(
            "respect_floors".into(),
            toml::Value::Boolean(p.respect_floors),
        );
    }
    let mut knobs = toml::Table::new();
    for (k, v) in &p.knobs {
        let integer = p.spec(k).is_some_and(|s| s.integer);
        let tv = match v {
            KnobValue::Num(n) if integer => toml::Value::Integer(n.round() as i64),
            KnobValue::Num(n) => toml::Value::Float(*n),
            KnobValue::Bool(b) => toml::Value::Boolean(*b),
            KnobValue::Choice(c) => toml::Value::String(c.clone()),
        };
        knobs.insert(k.clone(), tv);
    }
    root.insert("knobs".into(), toml::Value::Table(knobs));
    out.push_str(&toml::to_string(&root).unwrap_or_default());
    out
}

fn on_picker_key(state: &mut State, k: KeyEvent, action: Option<Action>, fx: &mut Vec<Effect>) {
    let matches = state.picker_matches();
    let n = matches.len();
    let page = usize::from(state.height.saturating_sub(6)).max(1);
    match action {
        Some(Action::ListUp) => state.picker.selected = state.picker.selected.saturating_sub(1),
        Some(Action::ListDown) => {
            state.picker.selected = (state.picker.selected + 1).min(n.saturating_sub(1))
        }
        Some(Action::ListPageUp) => {
            state.picker.selected = state.picker.selected.saturating_sub(page)
        }
        Some(Action::ListPageDown) => {
            state.picker.selected = (state.picker.selected + page).min(n.saturating_sub(1))
        }
        Some(Action::Accept) => {
            if let Some(&i) = matches.get(state.picker.selected) {
                let id = state.picker.sessions[i].id.clone();
                state.screen = Screen::Loading(format!("loading session {id}…"));
                fx.push(Effect::LoadSession { id: Some(id) });
            }
        }
        Some(Action::Back) => {
            if state.picker.filter.is_empty() {
                state.quit = true;
            } else {
                state.picker.filter.clear();
                state.picker.selected = 0;
            }
        }
        Some(Action::Help) => {
            let scroll = crate::tui::ui::help::scroll_to(state, Mode::Picker);
            state.overlay = Overlay::Help { scroll };
        }
        Some(Action::ForceQuit) => state.quit = true,
        _ => match k.code {
            KeyCode::Backspace => {
                state.picker.filter.pop();
                state.picker.selected = 0;
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => {
                state.picker.filter.push(c);
                state.picker.selected = 0;
            }
            _ => {}
        },
    }
}

fn on_mouse(state: &mut State, m: MouseEvent, fx: &mut Vec<Effect>) {
    if state.screen != Screen::Main || state.overlay != Overlay::None || state.input.is_some() {
        if state.screen == Screen::Picker {
            match m.kind {
                MouseEventKind::ScrollDown => {
                    let n = state.picker_matches().len();
                    state.picker.selected = (state.picker.selected + 1).min(n.saturating_sub(1));
                }
                MouseEventKind::ScrollUp => {
                    state.picker.selected = state.picker.selected.saturating_sub(1)
                }
                _ => {}
            }
        }
        return;
    }
    let r = state.main_rects();
    let p = Position::new(m.column, m.row);
    let in_rect = |rect: Rect| rect.contains(p);
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            if in_rect(r.heat_cells) {
                let row = usize::from(p.y - r.heat_cells.y) + state.ep_first;
                let vp = state.viewport();
                let col = vp.col_at(usize::from(p.x - r.heat_cells.x));
                let range = vp.range(col);
                if !range.is_empty() {
                    let to = if range.contains(&state.cursor) {
                        state.cursor
                    } else {
                        range.start
                    };
                    move_cursor(state, to, fx);
                }
                if row < state.episodes() {
                    select(state, row);
                }
                state.focus = Pane::Heatmap;
            } else if in_rect(r.heat_labels) {
                let row = usize::from(p.y - r.heat_labels.y) + state.ep_first;
                select(state, row);
                state.focus = Pane::Heatmap;
            } else if in_rect(r.table_body) {
                let row = usize::from(p.y - r.table_body.y) + state.table_first;
                select(state, row);
                state.focus = Pane::Episodes;
            } else if in_rect(r.chart) {
                let x = p.x.saturating_sub(r.heat_cells.x);
                let vp = state.viewport();
                let range = vp.range(vp.col_at(usize::from(x)));
                if !range.is_empty() {
                    move_cursor(state, range.start, fx);
                }
            } else if in_rect(r.context) {
                state.focus = Pane::Context;
            } else if in_rect(r.detail) {
                state.focus = Pane::Detail;
            }
        }
        MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
            let down = m.kind == MouseEventKind::ScrollDown;
            if in_rect(r.heat) || in_rect(r.chart) {
                let a = if down {
                    Action::PanRight
                } else {
                    Action::PanLeft
                };
                on_main_action(state, a, fx);
            } else if in_rect(r.detail) {
                state.detail_scroll = scroll_by(state.detail_scroll, 3, down);
            } else if in_rect(r.context) {
                state.context_scroll = scroll_by(state.context_scroll, 3, down);
            } else {
                let a = if down {
                    Action::SelectDown
                } else {
                    Action::SelectUp
                };
                on_main_action(state, a, fx);
            }
        }
        _ => {}
    }
}

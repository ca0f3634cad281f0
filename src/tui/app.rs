//! The explorer's state and its one transition function, [`update`]. Pure: no terminal, no
//! threads, no clock. Anything slow (loading, replaying, rendering a context) is returned as an
//! [`Effect`] for the runner to execute off the UI thread; its result comes back as a [`Msg`].
//!
//! The state is split by feature, each part owning its data the way gitui's components do:
//! [`MainState`] (the main screen), [`KnobsState`] (knobs panel, policy list, saving),
//! [`PickerState`] (session picker), [`FollowState`] (live follow), and the panes that open
//! over the main screen (diff mode, the sweep pane: [`crate::tui::panels`]). What they share
//! is the loaded session and the [`OnScreen`] run (policy, budget, replay). Page sizes and
//! hit-test rectangles come from the [`Geometry`] the view reports, never from a layout
//! computed here.

use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent};

use crate::tui::follow::{self, FollowState};
pub use crate::tui::geometry::Geometry;
use crate::tui::keymap::{self, Action, Mode};
use crate::tui::knobs::{self, KnobsState, SaveError};
use crate::tui::main::MainState;
use crate::tui::on_screen::OnScreen;
use crate::tui::picker::{self, PickerState};
use crate::tui::theme::Theme;
use crate::tui::view_model::{ContextModel, ReplayModel, SessionEntry, SessionModel};
use tierscope_engine::policy::Policy;

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
pub enum InputPurpose {
    Search,
    Goto,
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

impl Input {
    /// The most characters a field holds: a search, a number or a knob value is short; a path
    /// may be long. The bound keeps each keystroke's work (an incremental search) small.
    pub fn max_chars(&self) -> usize {
        match self.purpose {
            InputPurpose::SavePath => 4096,
            _ => 256,
        }
    }

    /// Appends `text` (control characters dropped, line breaks as spaces) up to
    /// [`Input::max_chars`]; what does not fit is dropped and the field says so. Whether
    /// anything was added.
    pub fn insert(&mut self, text: &str) -> bool {
        let max = self.max_chars();
        let mut len = self.text.chars().count();
        let mut added = false;
        for c in text.chars() {
            let c = match c {
                '\n' | '\r' | '\t' => ' ',
                c if tierscope_engine::text::is_unsafe_char(c) => continue,
                c => c,
            };
            if len >= max {
                self.error = Some(format!("the field holds at most {max} characters"));
                break;
            }
            self.text.push(c);
            len += 1;
            added = true;
        }
        added
    }
}

/// The help overlay: where it opened (a mode's section) or the row it was scrolled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelpView {
    /// Show from this mode's section (until scrolled).
    pub section: Option<Mode>,
    pub top: usize,
}

impl HelpView {
    pub fn at(mode: Mode) -> HelpView {
        HelpView {
            section: Some(mode),
            top: 0,
        }
    }
}

/// A question the user answers before something irreversible.
#[derive(Debug, Clone, PartialEq)]
pub enum Confirm {
    /// Quit although the knobs were edited and not saved.
    Quit,
    /// Save over an existing file.
    Overwrite { path: String, toml: String },
}

/// What is drawn over the screen and takes the keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    None,
    Help(HelpView),
    Confirm(Confirm),
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

/// A loaded session as the UI sees it (the engine's data stays with the worker).
#[derive(Debug, Clone)]
pub struct SessionView {
    pub model: SessionModel,
}

pub struct State {
    pub screen: Screen,
    pub theme: Theme,
    /// The themes `C-t` cycles through (the built-ins, as the user's theme files patch them;
    /// loaded before the loop starts, so switching reads no file).
    pub themes: Vec<Theme>,
    pub width: u16,
    pub height: u16,
    /// What the view reported about its last frame.
    pub geometry: Geometry,
    pub source: String,
    pub session: Option<Arc<SessionView>>,
    pub on_screen: OnScreen,
    pub main: MainState,
    pub knobs: KnobsState,
    pub picker: PickerState,
    /// Live follow (`--follow`): status, last change, new requests.
    pub follow: FollowState,
    /// The panes that open over the main screen (diff mode, the sweep pane): see
    /// [`crate::tui::panels`].
    pub panels: crate::tui::panels::Panels,
    pub overlay: Overlay,
    pub input: Option<Input>,
    pub flash: Option<(String, Level)>,
    pub start: StartOptions,
    pub spinner: usize,
    pub quit: bool,
}

#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste: one event, not a key per character).
    Paste(String),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// The view drew a frame whose geometry differs from the last one.
    Geometry(Geometry),
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
    Saved(Result<String, SaveError>),
    /// A job failed before any session was shown.
    Failed(String),
    /// From the follower (`--follow`).
    Follow(crate::tui::follow::FollowMsg),
    /// A pane's progress and results (diff mode, the sweep pane).
    Panel(crate::tui::panels::PanelMsg),
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
    /// Write a policy file; an existing file only when `overwrite`.
    SavePolicy {
        path: String,
        toml: String,
        overwrite: bool,
    },
    /// Start, steer or stop following (latest wins).
    Follow(crate::tui::follow::FollowCmd),
    /// A pane's work (latest wins per pane and slot).
    Panel(crate::tui::panels::PanelJob),
}

/// The kind of a background job: a queued job is replaced by a newer one of the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKey {
    ListSessions,
    LoadSession,
    Replay,
    Context,
    SavePolicy,
    Follow,
    /// A pane's jobs: one slot of its own.
    Panel(crate::tui::panels::PanelId, u8),
}

impl Effect {
    /// The job's kind; `None` for what the runner does itself (copying).
    pub fn job_key(&self) -> Option<JobKey> {
        Some(match self {
            Effect::ListSessions => JobKey::ListSessions,
            Effect::LoadSession { .. } => JobKey::LoadSession,
            Effect::Replay { .. } => JobKey::Replay,
            Effect::Context { .. } => JobKey::Context,
            Effect::Copy(_) => return None,
            Effect::SavePolicy { .. } => JobKey::SavePolicy,
            Effect::Follow(_) => JobKey::Follow,
            Effect::Panel(j) => j.job_key(),
        })
    }
}

impl State {
    pub fn new(theme: Theme, policy: Policy, budget: Option<u64>, start: StartOptions) -> State {
        let themes = crate::tui::theme::BUILTIN
            .iter()
            .filter_map(|(name, _)| Theme::builtin(name))
            .collect();
        State {
            screen: Screen::Loading("opening…".to_owned()),
            theme,
            themes,
            width: 80,
            height: 24,
            geometry: Geometry::default(),
            source: String::new(),
            session: None,
            knobs: KnobsState::new(&policy),
            on_screen: OnScreen::new(policy, budget),
            main: MainState::default(),
            picker: PickerState::default(),
            follow: Default::default(),
            panels: Default::default(),
            overlay: Overlay::None,
            input: None,
            flash: None,
            start,
            spinner: 0,
            quit: false,
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
            Overlay::Help(_) => return Mode::Help,
            Overlay::Confirm(_) => return Mode::Confirm,
            Overlay::None => {}
        }
        if self.knobs.policies.is_some() {
            return Mode::PolicyPick;
        }
        if self.knobs.panel.is_some() {
            return Mode::Knobs;
        }
        match &self.screen {
            Screen::Picker => Mode::Picker,
            Screen::Main => self.panels.mode().unwrap_or_else(|| self.main.mode()),
            _ => Mode::Main,
        }
    }

    /// How long the runner may block before it must send a [`Msg::Tick`]; `None` = until the
    /// next event (idle: no CPU).
    pub fn tick_interval_ms(&self) -> Option<u64> {
        use crate::tui::main::SPEEDS_MS;
        if self.main.playing {
            return Some(SPEEDS_MS[self.main.speed.min(SPEEDS_MS.len() - 1)]);
        }
        let waiting = matches!(self.screen, Screen::Loading(_)) || self.on_screen.pending;
        waiting.then_some(120)
    }

    pub fn flash(&mut self, text: impl Into<String>, level: Level) {
        self.flash = Some((text.into(), level));
    }

    /// `C-t`: the next theme of [`State::themes`] (after a theme of its own, the first).
    pub fn cycle_theme(&mut self) {
        if self.themes.is_empty() {
            return;
        }
        let next = self
            .themes
            .iter()
            .position(|t| t.name == self.theme.name)
            .map_or(0, |i| (i + 1) % self.themes.len());
        self.theme = self.themes[next].clone();
        let msg = format!("theme {} (C-t: the next one)", self.theme.name);
        self.flash(msg, Level::Info);
    }
}

/// The one transition function.
pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    let mut fx = Vec::new();
    match msg {
        Msg::Key(k) => {
            // Some terminals report releases too; act on presses (and repeats) only.
            if k.kind != KeyEventKind::Release {
                // A message answers the last key: the next key retires it (what that key says,
                // if anything, takes its place), so no message outlives what it was about.
                state.flash = None;
                on_key(state, k, &mut fx);
            }
        }
        Msg::Paste(text) => on_paste(state, &text),
        Msg::Mouse(m) => {
            // A click is an action too: it retires the last message, as a key does.
            if matches!(m.kind, ratatui::crossterm::event::MouseEventKind::Down(_)) {
                state.flash = None;
            }
            on_mouse(state, m, &mut fx)
        }
        Msg::Resize(w, h) => {
            state.width = w;
            state.height = h;
        }
        Msg::Geometry(g) => {
            let old = std::mem::replace(&mut state.geometry, g);
            if state.screen == Screen::Main {
                let (m, env) = state.main_and_env();
                m.on_geometry(&env, &old.main);
            }
        }
        Msg::Tick => {
            state.spinner = state.spinner.wrapping_add(1);
            if state.main.playing && state.screen == Screen::Main {
                if state.main.cursor + 1 < state.requests() {
                    crate::tui::main::update(state, &mut fx, |m, env, out| {
                        m.move_cursor(env, m.cursor + 1, out)
                    });
                } else {
                    state.main.playing = false;
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
            crate::tui::panels::on_session_changed(state, &mut fx);
        }
        Msg::Loaded(Err(e)) => {
            if state.session.is_some() {
                state.main.stack.pop();
                state.screen = Screen::Main;
                state.flash(e, Level::Error);
            } else if !state.picker.sessions.is_empty() {
                state.screen = Screen::Picker;
                state.flash(e, Level::Error);
            } else if !follow::update(state, &mut fx, |f, _, out| f.wait_for_session(&e, out)) {
                state.screen = Screen::Failed(e);
            }
        }
        Msg::Replayed { gen, result } => on_replayed(state, gen, result, &mut fx),
        Msg::Context { gen, at, result } => {
            if gen == state.on_screen.gen && at == state.main.cursor {
                state.main.context.pending = false;
                match result {
                    Ok(c) => {
                        let (m, env) = state.main_and_env();
                        m.show_context(&env, c);
                    }
                    Err(e) => state.flash(format!("render failed: {e}"), Level::Error),
                }
            }
        }
        Msg::Saved(r) => knobs::update(state, &mut fx, |k, env, out| k.on_saved(env, r, out)),
        Msg::Failed(e) => state.screen = Screen::Failed(e),
        Msg::Follow(m) => follow::update(state, &mut fx, |f, _, out| f.on_msg(m, out)),
        Msg::Panel(m) => crate::tui::panels::on_msg(state, m, &mut fx),
    }
    fx
}

fn on_replayed(
    state: &mut State,
    gen: u64,
    result: Result<Arc<ReplayModel>, String>,
    fx: &mut Vec<Effect>,
) {
    if gen != state.on_screen.gen {
        return; // a newer replay is on its way (latest wins)
    }
    state.on_screen.pending = false;
    match result {
        Ok(r) => {
            state.on_screen.replay = Some(r);
            state.on_screen.error = None;
            // A session without requests has no context to render (the main screen says so
            // instead).
            if state.requests() > 0 {
                fx.push(Effect::Context {
                    gen,
                    at: state.main.cursor,
                });
                state.main.context.pending = true;
            }
        }
        Err(e) => {
            state.on_screen.error = Some(e.clone());
            state.flash(format!("replay failed: {e}"), Level::Error);
        }
    }
}

/// Shows a loaded session: cursor and selection placed, its replay requested.
pub fn on_loaded(state: &mut State, view: Arc<SessionView>, fx: &mut Vec<Effect>) {
    let n = view.model.requests.len();
    let fresh = state.session.is_none();
    let id = view.model.id.clone();
    state.session = Some(view);
    state.screen = Screen::Main;
    state.on_screen.session_changed();
    let m = &mut state.main;
    m.context = Default::default();
    m.context.expanded = false;
    m.heat = Default::default();
    m.table_top = 0;
    m.detail = Default::default();
    m.children = None;
    let (mut cursor, mut selected) = (0, 0);
    if fresh {
        if let Some(at) = state.start.at.take() {
            cursor = at.min(n.saturating_sub(1));
            if at >= n {
                let msg = match n {
                    0 => format!("--at {at}: the session has no requests yet"),
                    _ => format!("--at {at} is past the end: at {} (the last)", n - 1),
                };
                state.flash(msg, Level::Warn);
            }
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
        state.main.playing = std::mem::take(&mut state.start.play);
    }
    // Back in a parent session: its cursor and selection as they were.
    if state.main.stack.last().is_some_and(|b| b.session_id == id) {
        if let Some(b) = state.main.stack.pop() {
            cursor = b.cursor.min(n.saturating_sub(1));
            selected = b.selected;
        }
    }
    state.main.cursor = cursor;
    state.main.selected = selected.min(state.episodes().saturating_sub(1));
    let (m, env) = state.main_and_env();
    m.refresh_search(&env);
    m.follow_cursor(&env);
    m.follow_selection(&env);
    state.on_screen.request(fx);
    follow::update(state, fx, |f, shown, out| f.on_session_shown(shown, out));
}

/// The followed session grew: shown in place of the one on screen, the main screen's cursor
/// kept (at the newest request when it was there), the replay and the open panes' work asked
/// for again. A state of another session, or one arriving while the main screen is not shown,
/// is left alone.
pub fn on_grown(state: &mut State, view: Arc<SessionView>, fx: &mut Vec<Effect>) {
    let Some(old) = state.session.as_ref() else {
        return;
    };
    if old.model.id != view.model.id || state.screen != Screen::Main {
        return;
    }
    let old_n = old.model.requests.len();
    let n = view.model.requests.len();
    let at_newest = old_n == 0 || state.main.cursor + 1 >= old_n;
    state.session = Some(view);
    // The replay and context of the old state no longer match; new ones are asked for below.
    state.on_screen.session_changed();
    state
        .follow
        .on_grown(at_newest && n > 0, n.saturating_sub(old_n));
    let (m, env) = state.main_and_env();
    m.on_grown(&env, at_newest);
    state.on_screen.request(fx);
    // Diff mode compares the grown session too (its cursor keeps up when at the newest).
    crate::tui::panels::on_session_changed(state, fx);
}

fn on_key(state: &mut State, k: KeyEvent, fx: &mut Vec<Effect>) {
    let mode = state.mode();
    let action = keymap::lookup(mode, &k);
    match mode {
        Mode::Input => on_input_key(state, k, action, fx),
        Mode::Picker => {
            let page = state.geometry.picker_rows;
            picker::update(state, fx, |p, out| p.on_key(page, &k, action, out))
        }
        Mode::Help => on_help_key(state, action),
        Mode::Confirm => on_confirm_key(state, action, fx),
        Mode::Knobs => knobs::update(state, fx, |k, env, out| k.on_panel_key(env, action, out)),
        Mode::PolicyPick => {
            knobs::update(state, fx, |k, env, out| k.on_policy_key(env, action, out))
        }
        Mode::SubAgents => crate::tui::main::on_children_key(state, action, fx),
        Mode::Main => {
            if let Some(a) = action {
                crate::tui::main::on_action(state, a, fx);
            }
        }
        Mode::Panel(_) => {
            crate::tui::panels::on_key(state, &k, action, fx);
        }
    }
}

fn on_help_key(state: &mut State, action: Option<Action>) {
    let Overlay::Help(_) = state.overlay else {
        return;
    };
    let g = state.geometry.help;
    // Scrolling starts from the row on screen (the section it opened at, resolved by the view).
    let top = state.geometry_help_top();
    let to = match action {
        Some(Action::CloseOverlay) => {
            state.overlay = Overlay::None;
            return;
        }
        Some(Action::ForceQuit) => {
            state.quit = true;
            return;
        }
        Some(Action::ScrollDown) => g.moved(top, 1),
        Some(Action::ScrollUp) => g.moved(top, -1),
        Some(Action::ListPageDown) => g.moved(top, g.page.max(1) as isize),
        Some(Action::ListPageUp) => g.moved(top, -(g.page.max(1) as isize)),
        Some(Action::First) => 0,
        Some(Action::Last) => g.max,
        _ => return,
    };
    state.overlay = Overlay::Help(HelpView {
        section: None,
        top: to,
    });
}

impl State {
    /// The help overlay's top row as last drawn.
    fn geometry_help_top(&self) -> usize {
        match self.overlay {
            Overlay::Help(HelpView { section: None, top }) => top.min(self.geometry.help.max),
            _ => self.geometry.help_top,
        }
    }
}

fn on_confirm_key(state: &mut State, action: Option<Action>, fx: &mut Vec<Effect>) {
    let Overlay::Confirm(c) = state.overlay.clone() else {
        return;
    };
    match (action, c) {
        (Some(Action::Accept), Confirm::Quit) => state.quit = true,
        (Some(Action::Accept), Confirm::Overwrite { path, toml }) => {
            state.overlay = Overlay::None;
            fx.push(Effect::SavePolicy {
                path,
                toml,
                overwrite: true,
            });
        }
        (Some(Action::SaveThenQuit), Confirm::Quit) => {
            state.overlay = Overlay::None;
            knobs::update(state, fx, |_, env, out| env.start_save(out));
        }
        (Some(Action::CloseOverlay), _) => state.overlay = Overlay::None,
        (Some(Action::ForceQuit), _) => state.quit = true,
        _ => {}
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
                let (m, env) = state.main_and_env();
                m.clear_search(&env);
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
        Some(Action::ClearInput) => input.text.clear(),
        _ => match k.code {
            KeyCode::Backspace => {
                input.text.pop();
            }
            // A full field keeps its text and says why.
            KeyCode::Char(c)
                if !k.modifiers.contains(KeyModifiers::CONTROL)
                    && !input.insert(&c.to_string()) =>
            {
                state.input = Some(input);
                return;
            }
            _ => {}
        },
    }
    input.error = None;
    input_changed(state, input);
}

/// The field's text changed: an incremental search filters the table and selects the first
/// match as the user types.
fn input_changed(state: &mut State, input: Input) {
    if input.purpose == InputPurpose::Search {
        let (m, env) = state.main_and_env();
        m.set_query(&env, &input.text);
    }
    state.input = Some(input);
}

/// A paste goes into the open text field (cut to what the field holds); elsewhere it is
/// ignored, so pasted text never acts as keys.
fn on_paste(state: &mut State, text: &str) {
    let Some(mut input) = state.input.take() else {
        return;
    };
    input.error = None;
    input.insert(text);
    input_changed(state, input);
}

fn accept_input(state: &mut State, input: &Input, fx: &mut Vec<Effect>) -> Result<(), String> {
    let text = input.text.trim();
    match input.purpose {
        InputPurpose::Search => {
            crate::tui::main::update(state, fx, |m, env, out| m.accept_search(env, text, out));
            Ok(())
        }
        InputPurpose::Goto => match crate::tui::panels::goto(state, text, fx) {
            Some(r) => r,
            None => crate::tui::main::update(state, fx, |m, env, out| m.goto(env, text, out)),
        },
        InputPurpose::KnobValue => {
            knobs::update(state, fx, |k, env, out| k.type_knob(env, text, out))
        }
        InputPurpose::Budget => knobs::update(state, fx, |_, env, out| env.type_budget(text, out)),
        InputPurpose::SavePath => knobs::update(state, fx, |k, env, out| k.save_to(env, text, out)),
    }
}

/// The wheel as the keys of a list: `down` / `up` (`None` for anything else the mouse did).
pub fn wheel_as(m: &MouseEvent, down: Action, up: Action) -> Option<Action> {
    use ratatui::crossterm::event::MouseEventKind;
    match m.kind {
        MouseEventKind::ScrollDown => Some(down),
        MouseEventKind::ScrollUp => Some(up),
        _ => None,
    }
}

fn on_mouse(state: &mut State, m: MouseEvent, fx: &mut Vec<Effect>) {
    let wheel = wheel_as(&m, Action::ScrollDown, Action::ScrollUp);
    let wheel_as = |down: Action, up: Action| wheel_as(&m, down, up);
    match state.mode() {
        Mode::Main if state.screen == Screen::Main => crate::tui::main::on_mouse(state, m, fx),
        Mode::Picker => picker::update(state, fx, |p, _| p.on_mouse(m)),
        Mode::Help => on_help_key(state, wheel),
        Mode::Knobs => {
            let a = wheel_as(Action::KnobDown, Action::KnobUp);
            knobs::update(state, fx, |k, env, out| k.on_panel_key(env, a, out));
        }
        Mode::SubAgents => {
            let a = wheel_as(Action::ListDown, Action::ListUp);
            crate::tui::main::on_children_key(state, a, fx);
        }
        Mode::PolicyPick => {
            let a = wheel_as(Action::ListDown, Action::ListUp);
            knobs::update(state, fx, |k, env, out| k.on_policy_key(env, a, out));
        }
        Mode::Input | Mode::Confirm | Mode::Main => {}
        Mode::Panel(_) => {
            crate::tui::panels::on_mouse(state, m, fx);
        }
    }
}

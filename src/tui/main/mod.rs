//! The main screen, as one component: its state (the request cursor, the selected episode, which
//! pane has the focus and whether it fills the screen, each pane's logical scroll, the rendered
//! context at the cursor, search, playing, and the trail of sub-agent sessions drilled into), its
//! updates (`update.rs`, `navigate.rs`, `search.rs`), its view (`view/`, a pane a file) and its
//! keys (`keys.rs`).
//!
//! Its updates take their own state and an [`Env`]: what they read of the rest of the explorer
//! (the session, the run on screen, the geometry the view last reported, the theme). What they
//! ask of the rest (a message, a job, another feature opened, quitting) goes into an [`Out`]
//! ([`crate::tui::component`]), which [`update`] carries out: the one place the main screen
//! touches the explorer's `State`.
//! Positions are logical (a request, an episode, a top row); the views map them to cells, and
//! the page sizes come from the geometry ([`crate::tui::geometry`]).

pub mod keys;
pub mod navigate;
pub mod search;
mod update;
pub mod view;

use std::sync::Arc;

use ratatui::crossterm::event::MouseEvent;

use crate::tui::app::{Effect, HelpView, Overlay, Screen, SessionView, State};
pub use crate::tui::component::{Ask, Out};
use crate::tui::geometry::MainGeometry;
use crate::tui::keymap::{Action, Mode};
use crate::tui::on_screen::OnScreen;
use crate::tui::theme::Theme;
use crate::tui::view_model::ContextModel;
use crate::tui::widgets::chart::ChartKind;
use crate::tui::widgets::Viewport;
use tierscope_engine::episode::model::Tier;

/// Auto-advance intervals for play, slowest first (ms per request).
pub const SPEEDS_MS: [u64; 7] = [2000, 1000, 500, 250, 120, 60, 30];
const DEFAULT_SPEED: usize = 2;

/// The play speed as the header and the status line say it: `500 ms/req`.
pub fn speed_label(speed: usize) -> String {
    format!("{} ms/req", SPEEDS_MS[speed.min(SPEEDS_MS.len() - 1)])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Heatmap,
    Episodes,
    Context,
    Detail,
}

impl Pane {
    pub const ORDER: [Pane; 4] = [Pane::Heatmap, Pane::Episodes, Pane::Context, Pane::Detail];

    pub fn next(self, by: isize) -> Pane {
        let i = Pane::ORDER.iter().position(|p| *p == self).unwrap_or(0) as isize;
        let n = Pane::ORDER.len() as isize;
        Pane::ORDER[((i + by).rem_euclid(n)) as usize]
    }

    pub fn name(&self) -> &'static str {
        match self {
            Pane::Heatmap => "heatmap",
            Pane::Episodes => "episodes",
            Pane::Context => "context",
            Pane::Detail => "detail",
        }
    }
}

/// The heatmap's window: which requests (`first`, and `span` of them; `None` fits the whole
/// trace) and which episode rows (from `top`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeatView {
    pub first: usize,
    pub span: Option<usize>,
    pub top: usize,
    /// Times zoomed in (`z`) and not out again (`Z`): 0 is the whole session.
    pub level: u32,
}

/// The detail pane: its top line and the tier whose text it shows (`None`: the applied one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DetailView {
    pub scroll: usize,
    pub tier: Option<Tier>,
}

/// The rendered context at the cursor, as the worker last sent it.
#[derive(Debug, Clone, Default)]
pub struct ContextView {
    pub model: Option<Arc<ContextModel>>,
    pub pending: bool,
    /// The top screen line (rows wrap: see [`view::context::ContextLayout`]).
    pub scroll: usize,
    /// Every chunk's text, or one line per chunk.
    pub expanded: bool,
    /// Long lines clipped at the border instead of wrapped (`E`).
    pub clip: bool,
}

/// A session the user drilled out of, to come back to.
#[derive(Debug, Clone, PartialEq)]
pub struct Breadcrumb {
    pub session_id: String,
    pub title: String,
    pub cursor: usize,
    pub selected: usize,
}

pub struct MainState {
    pub cursor: usize,
    pub selected: usize,
    pub focus: Pane,
    /// Which of the context and the detail a narrow terminal shows in their shared pane: the
    /// one focused last, so it stays on screen when the focus moves to the heatmap or table.
    pub side: Pane,
    /// The focused pane fills the screen between the header and the metrics.
    pub maximized: bool,
    pub heat: HeatView,
    /// The episode table's top row (of the rows shown: all, or the search's matches).
    pub table_top: usize,
    pub chart: ChartKind,
    pub detail: DetailView,
    pub context: ContextView,
    pub search: search::Search,
    pub playing: bool,
    pub speed: usize,
    pub stack: Vec<Breadcrumb>,
    /// The list of the selected episode's sub-agent sessions, open with a row selected.
    pub children: Option<usize>,
}

impl Default for MainState {
    fn default() -> MainState {
        MainState {
            cursor: 0,
            selected: 0,
            focus: Pane::Heatmap,
            side: Pane::Detail,
            maximized: false,
            heat: HeatView::default(),
            table_top: 0,
            chart: ChartKind::Pressure,
            detail: DetailView::default(),
            context: ContextView::default(),
            search: Default::default(),
            playing: false,
            speed: DEFAULT_SPEED,
            stack: Vec::new(),
            children: None,
        }
    }
}

impl MainState {
    /// The heatmap's requests at a width of `cells` for a trace of `total` requests.
    pub fn viewport(&self, cells: usize, total: usize) -> Viewport {
        Viewport::new(self.heat.first, self.heat.span, cells, total)
    }

    /// The episodes the table lists: every one, or the search's matches.
    pub fn table_rows(&self, episodes: usize) -> Vec<usize> {
        if self.search.filters() {
            self.search.hits.clone()
        } else {
            (0..episodes).collect()
        }
    }

    pub fn mode(&self) -> Mode {
        if self.children.is_some() {
            Mode::SubAgents
        } else {
            Mode::Main
        }
    }

    /// The tier the detail pane shows: the chosen one, else the applied one at the cursor (a
    /// dropped episode has no text of its own: its full tier).
    pub fn shown_tier(&self, on_screen: &OnScreen) -> Option<Tier> {
        if self.detail.tier.is_some() {
            return self.detail.tier;
        }
        match self.applied_tier(on_screen, self.selected) {
            Some(Tier::Dropped) | None => Some(Tier::Full),
            t => t,
        }
    }

    /// The applied tier of episode `ep` at the cursor (None while it is active or not yet there).
    pub fn applied_tier(&self, on_screen: &OnScreen, ep: usize) -> Option<Tier> {
        on_screen.replay.as_ref()?.grid.tier(ep, self.cursor)
    }
}

/// What the main screen reads of the rest of the explorer.
pub struct Env<'a> {
    pub session: Option<&'a SessionView>,
    pub on_screen: &'a OnScreen,
    /// What the view reported of the main screen's last frame.
    pub geometry: &'a MainGeometry,
    pub theme: &'a Theme,
}

impl Env<'_> {
    pub fn requests(&self) -> usize {
        self.session.map_or(0, |s| s.model.requests.len())
    }

    pub fn episodes(&self) -> usize {
        self.session.map_or(0, |s| s.model.episodes.len())
    }
}

impl State {
    /// The main screen's state and what it reads of the rest (disjoint borrows of the state).
    pub fn main_and_env(&mut self) -> (&mut MainState, Env<'_>) {
        let env = Env {
            session: self.session.as_deref(),
            on_screen: &self.on_screen,
            geometry: &self.geometry.main,
            theme: &self.theme,
        };
        (&mut self.main, env)
    }

    /// What the main screen reads, for a caller that only reads.
    pub fn main_env(&self) -> Env<'_> {
        Env {
            session: self.session.as_deref(),
            on_screen: &self.on_screen,
            geometry: &self.geometry.main,
            theme: &self.theme,
        }
    }
}

/// Runs a main-screen update `f` and carries out what it hands back.
pub fn update<R>(
    state: &mut State,
    fx: &mut Vec<Effect>,
    f: impl FnOnce(&mut MainState, &Env<'_>, &mut Out) -> R,
) -> R {
    let mut out = Out::default();
    let r = {
        let (m, env) = state.main_and_env();
        f(m, &env, &mut out)
    };
    crate::tui::component::carry_out(state, None, out, fx);
    r
}

/// A main-screen action (a key's).
pub fn on_action(state: &mut State, a: Action, fx: &mut Vec<Effect>) {
    if state.screen != Screen::Main {
        // Loading or failed: only quitting and help make sense.
        match a {
            Action::Quit | Action::ForceQuit => state.quit = true,
            Action::Help => state.overlay = Overlay::Help(HelpView::at(Mode::Main)),
            _ => {}
        }
        return;
    }
    update(state, fx, |m, env, out| m.act(env, a, out));
}

/// The mouse on the main screen.
pub fn on_mouse(state: &mut State, e: MouseEvent, fx: &mut Vec<Effect>) {
    update(state, fx, |m, env, out| m.on_mouse(env, e, out));
}

/// Keys of the sub-agent list.
pub fn on_children_key(state: &mut State, action: Option<Action>, fx: &mut Vec<Effect>) {
    update(state, fx, |m, env, out| m.on_children_key(env, action, out));
}

/// The next (or previous) request after `cursor` in a sorted list.
fn jump(list: &[usize], cursor: usize, forward: bool) -> Option<usize> {
    if forward {
        list.iter().copied().find(|&r| r > cursor)
    } else {
        list.iter().rev().copied().find(|&r| r < cursor)
    }
}

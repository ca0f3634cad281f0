//! The main screen's state and its keys: the request cursor, the selected episode, which pane has
//! the focus (and whether it fills the screen), each pane's logical scroll, the rendered context
//! at the cursor, search, goto, playing, and the trail of sub-agent sessions drilled into.
//! Positions are logical (a request, an episode, a top row); the views map them to cells, and the
//! page sizes come from the geometry the view last reported ([`crate::tui::geometry`]).

pub mod keys;
pub mod navigate;
pub mod search;

use std::sync::Arc;

use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::tui::app::{
    Confirm, Effect, HelpView, Input, InputPurpose, Level, Overlay, Screen, State,
};
use crate::tui::keymap::{Action, Mode};
use crate::tui::view_model::ContextModel;
use crate::tui::widgets::chart::ChartKind;
use crate::tui::widgets::Viewport;
use navigate::{move_cursor, scroll_context, scroll_detail, select, select_by};
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
    /// The top screen line (rows wrap: see [`crate::tui::ui::context::ContextLayout`]).
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
}

/// The tier the detail pane shows: the chosen one, else the applied one at the cursor (a
/// dropped episode has no text of its own: its full tier).
pub fn shown_tier(state: &State) -> Option<Tier> {
    if state.main.detail.tier.is_some() {
        return state.main.detail.tier;
    }
    match applied_tier(state, state.main.selected) {
        Some(Tier::Dropped) | None => Some(Tier::Full),
        t => t,
    }
}

/// The applied tier of episode `ep` at the cursor (None while it is active or not yet there).
pub fn applied_tier(state: &State, ep: usize) -> Option<Tier> {
    state
        .on_screen
        .replay
        .as_ref()?
        .grid
        .tier(ep, state.main.cursor)
}

/// The next (or previous) request after `cursor` in a sorted list.
fn jump(list: &[usize], cursor: usize, forward: bool) -> Option<usize> {
    if forward {
        list.iter().copied().find(|&r| r > cursor)
    } else {
        list.iter().rev().copied().find(|&r| r < cursor)
    }
}

/// What a main-screen action does.
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
    let c = state.main.cursor;
    let jump_list = |state: &State, a: Action| -> (Vec<usize>, &'static str) {
        let r = state.on_screen.replay.as_deref();
        let s = state.session.as_deref().map(|s| &s.model);
        let list = |v: Option<&Vec<usize>>| v.cloned().unwrap_or_default();
        match a {
            Action::NextChange | Action::PrevChange => {
                (list(r.map(|r| &r.change_requests)), "change")
            }
            Action::NextHold | Action::PrevHold => (list(r.map(|r| &r.hold_requests)), "hold"),
            Action::NextThrash | Action::PrevThrash => {
                (list(r.map(|r| &r.thrash_requests)), "thrash")
            }
            Action::NextUserTurn | Action::PrevUserTurn => {
                (list(s.map(|s| &s.user_turns)), "user turn")
            }
            _ => (list(s.map(|s| &s.compactions)), "compaction"),
        }
    };
    match a {
        Action::Quit => ask_to_quit(state),
        Action::ForceQuit => state.quit = true,
        Action::Cancel => cancel(state, fx),
        Action::Back => back(state, fx),
        Action::Help => state.overlay = Overlay::Help(HelpView::at(Mode::Main)),
        Action::StepNext => move_cursor(state, c + 1, fx),
        Action::StepPrev => move_cursor(state, c.saturating_sub(1), fx),
        Action::StepNextFast => move_cursor(state, c + 10, fx),
        Action::StepPrevFast => move_cursor(state, c.saturating_sub(10), fx),
        Action::First => move_cursor(state, 0, fx),
        Action::Last => move_cursor(state, state.requests().saturating_sub(1), fx),
        Action::NextUserTurn
        | Action::PrevUserTurn
        | Action::NextChange
        | Action::PrevChange
        | Action::NextHold
        | Action::PrevHold
        | Action::NextThrash
        | Action::PrevThrash
        | Action::NextCompaction
        | Action::PrevCompaction => {
            let forward = matches!(
                a,
                Action::NextUserTurn
                    | Action::NextChange
                    | Action::NextHold
                    | Action::NextThrash
                    | Action::NextCompaction
            );
            let (list, what) = jump_list(state, a);
            match jump(&list, c, forward) {
                Some(r) => move_cursor(state, r, fx),
                None => state.flash(
                    format!("no {what} {}", if forward { "ahead" } else { "before" }),
                    Level::Info,
                ),
            }
        }
        Action::PlayPause => {
            state.main.playing = !state.main.playing;
            if state.main.playing && state.main.cursor + 1 >= state.requests() {
                move_cursor(state, 0, fx);
            }
        }
        Action::Faster | Action::Slower => {
            let m = &mut state.main;
            m.speed = if a == Action::Faster {
                (m.speed + 1).min(SPEEDS_MS.len() - 1)
            } else {
                m.speed.saturating_sub(1)
            };
            let text = format!("play speed {}", speed_label(m.speed));
            state.flash(text, Level::Info);
        }
        Action::SelectDown => select_by(state, 1),
        Action::SelectUp => select_by(state, -1),
        Action::ScrollDown | Action::ScrollUp => {
            let down = a == Action::ScrollDown;
            let g = &state.geometry.main;
            match state.main.focus {
                Pane::Context => {
                    let by = g.context_scroll.text_step();
                    scroll_context(state, if down { by } else { -by });
                }
                Pane::Detail => {
                    let by = g.detail_scroll.text_step();
                    scroll_detail(state, if down { by } else { -by });
                }
                Pane::Heatmap => {
                    let rows = g.heat_rows.max(1) as isize;
                    select_by(state, if down { rows } else { -rows });
                }
                Pane::Episodes => {
                    let rows = usize::from(g.table_body.height).max(1) as isize;
                    select_by(state, if down { rows } else { -rows });
                }
            }
        }
        Action::FocusNext | Action::FocusPrev => {
            let by = if a == Action::FocusNext { 1 } else { -1 };
            focus(state, state.main.focus.next(by));
        }
        Action::Maximize => {
            state.main.maximized = !state.main.maximized;
            let what = if state.main.maximized {
                format!(
                    "{} fills the screen (+ or Esc restores)",
                    state.main.focus.name()
                )
            } else {
                "all panes".to_owned()
            };
            state.flash(what, Level::Info);
        }
        Action::ZoomIn | Action::ZoomOut => navigate::zoom(state, a == Action::ZoomIn),
        Action::PanLeft | Action::PanRight => navigate::pan(state, a == Action::PanRight),
        Action::ToggleChart => {
            state.main.chart = match state.main.chart {
                ChartKind::Pressure => ChartKind::Cost,
                ChartKind::Cost => ChartKind::Pressure,
            }
        }
        Action::NextTierText | Action::PrevTierText => {
            cycle_tier_text(state, a == Action::NextTierText)
        }
        Action::ToggleContextText => navigate::toggle_context_text(state),
        Action::ToggleWrap => navigate::toggle_wrap(state),
        Action::OpenKnobs => crate::tui::knobs::open_panel(state),
        Action::OpenDiff => crate::tui::diff::open(state),
        Action::OpenSweep => crate::tui::sweep::open(state),
        Action::SwitchPolicy => crate::tui::knobs::open_policies(state),
        Action::SavePolicy => crate::tui::knobs::start_save(state),
        Action::DrillIn => drill_in(state, fx),
        Action::Search => search::open(state),
        Action::Goto => {
            state.input = Some(Input {
                purpose: InputPurpose::Goto,
                text: String::new(),
                error: None,
            })
        }
        Action::SearchNext | Action::SearchPrev => {
            search::next_match(state, a == Action::SearchNext)
        }
        Action::Copy => copy_tier_text(state, fx),
        Action::ToggleFollow => crate::tui::follow::toggle(state, fx),
        Action::CycleTheme => state.cycle_theme(),
        _ => {}
    }
}

/// Focuses pane `p` (the shared pane of a narrow terminal shows it when it is the context or
/// the detail).
pub fn focus(state: &mut State, p: Pane) {
    state.main.focus = p;
    if matches!(p, Pane::Context | Pane::Detail) {
        state.main.side = p;
    }
}

/// `q`: quit, after a confirmation when knob edits would be lost.
pub fn ask_to_quit(state: &mut State) {
    if crate::tui::knobs::unsaved(state) {
        state.overlay = Overlay::Confirm(Confirm::Quit);
    } else {
        state.quit = true;
    }
}

/// Esc on the main screen closes or cancels what is open, the innermost first: the search, the
/// maximised pane, the sub-agent session. It never quits.
fn cancel(state: &mut State, fx: &mut Vec<Effect>) {
    if !state.main.search.query.is_empty() {
        search::clear(state);
        state.flash("search cleared", Level::Info);
    } else if state.main.maximized {
        state.main.maximized = false;
    } else if !state.main.stack.is_empty() {
        go_back(state, fx);
    } else {
        state.flash("nothing to close (q quits)", Level::Info);
    }
}

/// Backspace: back to the parent session, or to the session picker this one was opened from.
fn back(state: &mut State, fx: &mut Vec<Effect>) {
    if !state.main.stack.is_empty() {
        go_back(state, fx);
    } else if state.picker.sessions.len() > 1 {
        state.main.playing = false;
        state.screen = Screen::Picker;
    } else {
        state.flash("not inside a sub-agent session", Level::Info);
    }
}

fn cycle_tier_text(state: &mut State, forward: bool) {
    let Some(s) = &state.session else { return };
    let Some(ep) = s.model.episodes.get(state.main.selected) else {
        return;
    };
    let tiers: Vec<Tier> = ep.tiers.iter().map(|t| t.tier).collect();
    if tiers.is_empty() {
        return;
    }
    let cur = shown_tier(state).unwrap_or(Tier::Full);
    let i = tiers.iter().position(|t| *t == cur).unwrap_or(0);
    let n = tiers.len();
    let j = if forward {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    };
    state.main.detail.tier = Some(tiers[j]);
}

fn copy_tier_text(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(s) = &state.session else { return };
    let Some(ep) = s.model.episodes.get(state.main.selected) else {
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

/// Enter: open the selected episode's sub-agent session; with several, the list to choose from.
fn drill_in(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(s) = &state.session else { return };
    let Some(ep) = s.model.episodes.get(state.main.selected) else {
        return;
    };
    match ep.children.len() {
        0 => {
            let msg = format!("{} spawned no sub-agent", ep.id);
            state.flash(msg, Level::Info);
        }
        1 => {
            let id = ep.children[0].id.clone();
            open_child(state, id, fx);
        }
        _ => state.main.children = Some(0),
    }
}

/// Keys of the sub-agent list.
pub fn on_children_key(state: &mut State, action: Option<Action>, fx: &mut Vec<Effect>) {
    let Some(sel) = state.main.children else {
        return;
    };
    let kids: Vec<String> = state
        .session
        .as_ref()
        .and_then(|s| s.model.episodes.get(state.main.selected))
        .map(|e| e.children.iter().map(|c| c.id.clone()).collect())
        .unwrap_or_default();
    match action {
        Some(Action::ListUp) => state.main.children = Some(sel.saturating_sub(1)),
        Some(Action::ListDown) => {
            state.main.children = Some((sel + 1).min(kids.len().saturating_sub(1)))
        }
        Some(Action::Accept) => {
            state.main.children = None;
            if let Some(id) = kids.get(sel).cloned() {
                open_child(state, id, fx);
            }
        }
        Some(Action::CloseOverlay) => state.main.children = None,
        Some(Action::ForceQuit) => state.quit = true,
        _ => {}
    }
}

fn open_child(state: &mut State, child: String, fx: &mut Vec<Effect>) {
    let Some(s) = &state.session else { return };
    let crumb = Breadcrumb {
        session_id: s.model.id.clone(),
        title: s.model.title.clone(),
        cursor: state.main.cursor,
        selected: state.main.selected,
    };
    state.main.stack.push(crumb);
    state.main.playing = false;
    state.flash(format!("opening sub-agent session {child}…"), Level::Info);
    fx.push(Effect::LoadSession { id: Some(child) });
}

fn go_back(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(top) = state.main.stack.last() else {
        return;
    };
    state.main.playing = false;
    fx.push(Effect::LoadSession {
        id: Some(top.session_id.clone()),
    });
}

/// The mouse on the main screen: a click selects (heatmap cell or label, table row) or moves the
/// cursor (chart), and focuses the pane under it; the wheel scrolls the pane under it.
pub fn on_mouse(state: &mut State, m: MouseEvent, fx: &mut Vec<Effect>) {
    let g = state.geometry.main.clone();
    let p = Position::new(m.column, m.row);
    let inside = |r: Rect| r.contains(p);
    let vp = state
        .main
        .viewport(usize::from(g.heat_cells.width), state.requests());
    let request_at = |x: u16| {
        let cell = usize::from(x.saturating_sub(g.heat_cells.x));
        let range = vp.range(cell);
        (!range.is_empty()).then_some(range.start)
    };
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            if inside(g.heat_cells) || inside(g.heat_labels) {
                // Labels and cells share their rows.
                let row = usize::from(p.y - g.heat_labels.y);
                let ep = state.main.heat.top + row;
                if inside(g.heat_cells) {
                    if let Some(r) = request_at(p.x) {
                        move_cursor(state, r, fx);
                    }
                }
                if ep < state.episodes() {
                    select(state, ep);
                }
                state.main.focus = Pane::Heatmap;
            } else if inside(g.table_body) {
                let rows = state.main.table_rows(state.episodes());
                let i = state.main.table_top + usize::from(p.y - g.table_body.y);
                if let Some(&ep) = rows.get(i) {
                    select(state, ep);
                }
                state.main.focus = Pane::Episodes;
            } else if inside(g.chart) {
                if let Some(r) = request_at(p.x) {
                    move_cursor(state, r, fx);
                }
            } else if inside(g.context) {
                focus(state, Pane::Context);
            } else if inside(g.detail) {
                focus(state, Pane::Detail);
            } else if inside(g.table) {
                state.main.focus = Pane::Episodes;
            }
        }
        MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
            let by: isize = if m.kind == MouseEventKind::ScrollDown {
                3
            } else {
                -3
            };
            if inside(g.detail) {
                scroll_detail(state, by);
            } else if inside(g.context) {
                scroll_context(state, by);
            } else if inside(g.heat) && state.episodes() > g.heat_rows {
                navigate::scroll_heat_rows(state, by);
            } else if inside(g.heat) || inside(g.chart) {
                // Scrubbing: the wheel steps the cursor.
                let to = state.main.cursor.saturating_add_signed(by.signum());
                move_cursor(state, to, fx);
            } else {
                select_by(state, by.signum());
            }
        }
        _ => {}
    }
}

//! The explorer's sweep pane (`S`): two numeric knobs of the current policy swept over a grid
//! (on the worker thread, latest wins, progress shown, Esc cancels) and drawn as a coloured grid
//! of a chosen metric, with invalid points, the Pareto front and the current knobs marked. The
//! arrow keys move over the grid with the point's full metrics shown; Enter loads that point's
//! knobs into the main view (its replay reruns) and returns to it.
//!
//! Self-contained like diff mode: a [`Panel`] registered in [`crate::tui::panels`] (its state is
//! `State::panels.sweep`), its keys are the
//! `Sweep*` modes of the keymap, its work is [`SweepJob`] (run by [`job::run`]) and its results
//! come back as [`SweepMsg`]. It sweeps a copy of the policy; only Enter on a point changes the
//! main view.

pub mod axes;
pub mod grid;
pub mod job;
pub mod keys;
pub mod view;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent};
use ratatui::layout::Rect;
use ratatui::Frame;

use crate::tui::app::{Level, State};
use crate::tui::component::{Ask, Out};
use crate::tui::geometry::Scroll;
use crate::tui::keymap::Action;
use crate::tui::panels::{Panel, PanelAction, PanelEnv};
use axes::KnobChoice;
use grid::{Metric, SweepGrid};
use keys::{SweepAction, SweepMode};
use tierscope_engine::policy::Policy;
use tierscope_engine::sweep::{format_value, Axis};

/// Rows of the setup form.
pub const ROW_X: usize = 0;
pub const ROW_Y: usize = 1;
pub const ROW_METRIC: usize = 2;
const FORM_ROWS: usize = 3;

/// Stops a running sweep between grid rows. Compared by identity (two tokens are equal when
/// they are the same token), so jobs stay comparable in tests.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for CancelToken {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Work for the worker thread.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepJob {
    pub gen: u64,
    pub policy: Box<Policy>,
    pub budget: Option<u64>,
    /// Columns.
    pub x: Axis,
    /// Rows.
    pub y: Axis,
    pub cancel: CancelToken,
}

impl SweepJob {
    /// The answer when the job failed (e.g. panicked) with `e`.
    pub fn failed(&self, e: String) -> SweepMsg {
        SweepMsg::Done {
            gen: self.gen,
            result: Err(e),
        }
    }
}

/// Results of a [`SweepJob`].
#[derive(Debug)]
pub enum SweepMsg {
    /// `done` of `total` points replayed.
    Progress { gen: u64, done: usize, total: usize },
    Done {
        gen: u64,
        result: Result<Arc<SweepGrid>, String>,
    },
}

/// Where the pane is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Choosing knobs, ranges and the metric.
    Setup,
    /// The grid is being replayed: `done` of `total` points.
    Running { done: usize, total: usize },
    /// Browsing the finished grid.
    Grid,
}

pub struct SweepState {
    /// The policy swept (the main view's, when the pane opened).
    pub policy: Policy,
    pub budget: Option<u64>,
    /// The budget the main view's replay used (shown until the sweep reports its own).
    pub main_budget: u64,
    /// The policy's numeric knobs.
    pub knobs: Vec<KnobChoice>,
    /// Indices into `knobs` of the column (x) and row (y) knobs.
    pub x: usize,
    pub y: usize,
    pub x_axis: Axis,
    pub y_axis: Axis,
    pub metric: Metric,
    pub phase: Phase,
    /// The focused row of the setup form.
    pub form_row: usize,
    /// The range being typed (`FROM:TO:STEP`) for the focused axis row, and why the last
    /// attempt was refused.
    pub edit: Option<(String, Option<String>)>,
    pub gen: u64,
    pub cancel: Option<CancelToken>,
    pub grid: Option<Arc<SweepGrid>>,
    pub error: Option<String>,
    /// The selected cell (row, column).
    pub sel: (usize, usize),
}

impl SweepState {
    /// Where keys go.
    pub fn mode(&self) -> SweepMode {
        if self.edit.is_some() {
            SweepMode::Edit
        } else if self.phase == Phase::Setup {
            SweepMode::Setup
        } else {
            SweepMode::Grid
        }
    }

    /// The knob of the column axis.
    pub fn x_knob(&self) -> Option<&KnobChoice> {
        self.knobs.get(self.x)
    }
    pub fn y_knob(&self) -> Option<&KnobChoice> {
        self.knobs.get(self.y)
    }
}

impl Panel for SweepState {
    type Msg = SweepMsg;
    type Job = SweepJob;
    type Mode = keys::SweepMode;
    type Action = keys::SweepAction;
    const OPEN: crate::tui::keymap::Binding = keys::OPEN;
    const BINDINGS: &'static [crate::tui::keymap::Binding] = keys::BINDINGS;
    const MODES: &'static [SweepMode] = &[SweepMode::Grid, SweepMode::Setup, SweepMode::Edit];

    fn mode(&self) -> SweepMode {
        SweepState::mode(self)
    }
    fn title(mode: SweepMode) -> &'static str {
        mode.title()
    }
    fn render(&self, state: &State, f: &mut Frame, area: Rect) -> Option<Scroll> {
        view::render(state, self, f, area);
        None
    }

    /// `S` on the main screen: the setup form for the current policy.
    fn open(env: &PanelEnv<'_>, out: &mut Out) -> Option<SweepState> {
        if env.session.is_none() {
            out.flash("no session loaded", Level::Info);
            return None;
        }
        let policy = env.on_screen.policy.clone();
        let knobs = axes::numeric_knobs(&policy);
        let Some((x, y)) = axes::default_pair(&knobs, policy.sweep_pairs()) else {
            let name = crate::tui::safe_line(&policy.name);
            out.flash(
                format!("policy {name} reads fewer than two numeric knobs: nothing to sweep"),
                Level::Info,
            );
            return None;
        };
        out.ask(Ask::StopPlaying);
        let (x_axis, y_axis) = axes::proposed_axes(&policy, &knobs[x], &knobs[y]);
        Some(SweepState {
            budget: env.on_screen.budget,
            main_budget: env.on_screen.effective_budget(),
            policy,
            x_axis,
            y_axis,
            knobs,
            x,
            y,
            metric: Metric::Cost,
            phase: Phase::Setup,
            form_row: ROW_X,
            edit: None,
            gen: 0,
            cancel: None,
            grid: None,
            error: None,
            sel: (0, 0),
        })
    }

    /// Keys in the sweep modes (`k` for typing into the range field).
    fn on_key(&mut self, env: &PanelEnv<'_>, k: &KeyEvent, action: Option<Action>, out: &mut Out) {
        if action == Some(Action::ForceQuit) {
            out.ask(Ask::Close);
            out.ask(Ask::ForceQuit);
            return;
        }
        match self.mode() {
            SweepMode::Edit => self.on_edit(k, action),
            SweepMode::Setup => self.on_setup(action, out),
            SweepMode::Grid => self.on_grid(env, action, out),
        }
    }

    /// The wheel moves over the grid, or through the form's rows.
    fn on_mouse(&mut self, env: &PanelEnv<'_>, m: MouseEvent, out: &mut Out) {
        use crate::tui::app::wheel_as;
        let a = match self.mode() {
            SweepMode::Grid => wheel_as(&m, Action::SelectDown, Action::SelectUp),
            SweepMode::Setup => wheel_as(&m, Action::ListDown, Action::ListUp),
            SweepMode::Edit => return,
        };
        self.on_key(env, &KeyEvent::from(KeyCode::Null), a, out);
    }

    fn on_msg(&mut self, _env: &PanelEnv<'_>, msg: SweepMsg, out: &mut Out) {
        let s = self;
        match msg {
            SweepMsg::Progress { gen, done, total } => {
                if gen == s.gen && matches!(s.phase, Phase::Running { .. }) {
                    s.phase = Phase::Running { done, total };
                }
            }
            SweepMsg::Done { gen, result } => {
                if gen != s.gen {
                    return; // cancelled, or a newer grid is on its way
                }
                s.cancel = None;
                match result {
                    Ok(g) => {
                        // Start on the current knobs' cell: the point to beat.
                        s.sel = g.current.unwrap_or((0, 0));
                        s.grid = Some(g);
                        s.phase = Phase::Grid;
                    }
                    Err(e) => {
                        let e = crate::tui::safe_line(&e);
                        s.error = Some(e.clone());
                        s.phase = if s.grid.is_some() {
                            Phase::Grid
                        } else {
                            Phase::Setup
                        };
                        out.flash(format!("sweep failed: {e}"), Level::Error);
                    }
                }
            }
        }
    }

    /// Closing cancels the running sweep.
    fn on_close(&mut self) {
        if let Some(c) = self.cancel.take() {
            c.cancel();
        }
    }

    fn run(
        job: SweepJob,
        session: Option<&Arc<tierscope_engine::session::LoadedSession>>,
        progress: &dyn Fn(crate::tui::app::Msg),
    ) -> SweepMsg {
        job::run(session, job, progress)
    }
    fn failed(job: &SweepJob, e: String) -> SweepMsg {
        job.failed(e)
    }
}

/// Starts (or restarts: latest wins) the sweep of the form's grid.
fn run(s: &mut SweepState, out: &mut Out) {
    if let Some(c) = s.cancel.take() {
        c.cancel();
    }
    s.gen += 1;
    let cancel = CancelToken::default();
    s.cancel = Some(cancel.clone());
    s.error = None;
    s.phase = Phase::Running {
        done: 0,
        total: s.x_axis.len() * s.y_axis.len(),
    };
    out.job(SweepJob {
        gen: s.gen,
        policy: Box::new(s.policy.clone()),
        budget: s.budget,
        x: s.x_axis.clone(),
        y: s.y_axis.clone(),
        cancel,
    });
}

/// Stops the running sweep: back to the last grid, else to the form.
fn cancel(s: &mut SweepState) {
    if let Some(c) = s.cancel.take() {
        c.cancel();
    }
    s.gen += 1; // whatever the worker still sends is stale
    s.phase = if s.grid.is_some() {
        Phase::Grid
    } else {
        Phase::Setup
    };
}

impl SweepState {
    /// Typing a range into the form.
    fn on_edit(&mut self, k: &KeyEvent, action: Option<Action>) {
        let s = self;
        let Some((mut text, _)) = s.edit.take() else {
            return;
        };
        match action {
            Some(Action::CloseOverlay) => return,
            Some(Action::Accept) => {
                let knob = if s.form_row == ROW_X {
                    s.x_knob()
                } else {
                    s.y_knob()
                };
                let Some(knob) = knob.cloned() else { return };
                match axes::parse_axis(&knob, &text) {
                    Ok(a) if s.form_row == ROW_X => s.x_axis = a,
                    Ok(a) => s.y_axis = a,
                    Err(e) => s.edit = Some((text, Some(crate::tui::safe_line(&e)))),
                }
                return;
            }
            _ => {}
        }
        match k.code {
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) if !k.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
            _ => {}
        }
        s.edit = Some((text, None));
    }

    /// The setup form: the knobs, their ranges, the metric.
    fn on_setup(&mut self, action: Option<Action>, out: &mut Out) {
        let mode = self.mode();
        let s = self;
        let Some(a) = action else { return };
        match a {
            Action::ListUp => s.form_row = s.form_row.saturating_sub(1),
            Action::ListDown => s.form_row = (s.form_row + 1).min(FORM_ROWS - 1),
            Action::KnobInc | Action::KnobDec => {
                let by: isize = if a == Action::KnobInc { 1 } else { -1 };
                match s.form_row {
                    ROW_METRIC => s.metric = s.metric.cycle(by),
                    row => change_knob(s, row, by),
                }
            }
            Action::Panel(PanelAction::Sweep(SweepAction::EditRange)) => {
                let axis = match s.form_row {
                    ROW_X => &s.x_axis,
                    ROW_Y => &s.y_axis,
                    _ => return,
                };
                s.edit = Some((axes::axis_text(axis), None));
            }
            Action::Accept => run(s, out),
            Action::CloseOverlay => {
                // Back to the grid when there is one; else the pane closes.
                if s.grid.is_some() {
                    s.phase = Phase::Grid;
                } else {
                    out.ask(Ask::Close);
                }
            }
            Action::Help => out.ask(Ask::Help(mode.into())),
            _ => {}
        }
    }

    /// The grid (or the wait for it).
    fn on_grid(&mut self, env: &PanelEnv<'_>, action: Option<Action>, out: &mut Out) {
        let mode = self.mode();
        let s = self;
        let Some(a) = action else { return };
        if let Phase::Running { .. } = s.phase {
            match a {
                Action::CloseOverlay => cancel(s),
                Action::Help => out.ask(Ask::Help(mode.into())),
                _ => {}
            }
            return;
        }
        let (rows, cols) = s.grid.as_ref().map_or((0, 0), |g| (g.rows(), g.cols()));
        let (r, c) = s.sel;
        match a {
            Action::SelectUp => s.sel.0 = r.saturating_sub(1),
            Action::SelectDown => s.sel.0 = (r + 1).min(rows.saturating_sub(1)),
            Action::StepPrev => s.sel.1 = c.saturating_sub(1),
            Action::StepNext => s.sel.1 = (c + 1).min(cols.saturating_sub(1)),
            Action::First => s.sel = (0, 0),
            Action::Last => s.sel = (rows.saturating_sub(1), cols.saturating_sub(1)),
            Action::Panel(PanelAction::Sweep(SweepAction::NextMetric)) => {
                s.metric = s.metric.cycle(1)
            }
            Action::Panel(PanelAction::Sweep(SweepAction::PrevMetric)) => {
                s.metric = s.metric.cycle(-1)
            }
            Action::Panel(PanelAction::Sweep(SweepAction::Setup)) => s.phase = Phase::Setup,
            Action::Accept => s.load_point(env, out),
            Action::CloseOverlay | Action::Quit => out.ask(Ask::Close),
            Action::Help => out.ask(Ask::Help(mode.into())),
            _ => {}
        }
    }

    /// Enter on a cell: the main view's policy takes the point's knobs, its replay reruns, and
    /// the pane closes. An invalid point says why and stays.
    fn load_point(&mut self, env: &PanelEnv<'_>, out: &mut Out) {
        let Some(g) = self.grid.clone() else { return };
        let (r, c) = self.sel;
        let Some(i) = g.index(r, c) else { return };
        let Some(p) = g.result.points.get(i) else {
            return;
        };
        if !p.is_valid() {
            let why = g.reasons.get(i).cloned().flatten().unwrap_or_default();
            out.flash(format!("this point is invalid: {why}"), Level::Warn);
            return;
        }
        let overrides: Vec<(String, String)> = p
            .knobs
            .iter()
            .map(|(k, v)| (k.clone(), format_value(*v)))
            .collect();
        let shown = p
            .knobs
            .iter()
            .map(|(k, v)| format!("{}={}", crate::tui::safe_line(k), format_value(*v)))
            .collect::<Vec<_>>()
            .join(" ");
        match env.on_screen.policy.clone().with_overrides(&overrides) {
            Ok(np) => {
                out.ask(Ask::Close);
                // A point loaded is its own before → after.
                out.ask(Ask::LoadPolicy(Box::new(np)));
                out.flash(format!("loaded {shown} from the sweep"), Level::Info);
            }
            Err(e) => {
                let e = crate::tui::safe_line(&e.to_string());
                out.flash(format!("cannot load {shown}: {e}"), Level::Error);
            }
        }
    }
}

/// Moves axis `row`'s knob to the next numeric knob not used by the other axis; its range
/// starts over at the default.
fn change_knob(s: &mut SweepState, row: usize, by: isize) {
    let n = s.knobs.len() as isize;
    let (cur, other) = if row == ROW_X { (s.x, s.y) } else { (s.y, s.x) };
    let mut i = cur as isize;
    for _ in 0..n {
        i = (i + by).rem_euclid(n);
        if i as usize != other {
            break;
        }
    }
    let i = i as usize;
    if i == cur || i == other {
        return;
    }
    // A range valid with every value of the other axis.
    let other_axis = if row == ROW_X { &s.y_axis } else { &s.x_axis };
    let axis = axes::proposed_axis(&s.policy, &s.knobs[i], Some(other_axis));
    if row == ROW_X {
        s.x = i;
        s.x_axis = axis;
    } else {
        s.y = i;
        s.y_axis = axis;
    }
}

//! The explorer's diff mode (`d`): the current policy (A) against a second one (B) chosen from a
//! list (the built-ins, and the current policy with its knobs as they were before the last
//! edits). It shows where A and B disagree on tiers, both pressure curves, the deltas, and the
//! two rendered contexts side by side. Knobs of either side can be edited; both replays rerun
//! on the worker thread, latest wins.
//!
//! Self-contained: a [`Panel`] registered in [`crate::tui::panels`] (its state is
//! `State::panels.diff`), its keys are the `Diff*` modes of the keymap, its work is [`DiffJob`]
//! (run by [`job::run`]) and its results come back as [`DiffMsg`]. Diff mode works on copies of
//! the policies: closing it leaves the main screen's policy as it was. It has its own request
//! cursor, starting at the main one.

pub mod job;
pub mod keys;
pub mod view;
pub mod view_model;

use std::sync::Arc;

use ratatui::crossterm::event::{KeyEvent, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::Frame;

use crate::tui::app::{InputPurpose, Level, State};
use crate::tui::component::{Ask, Out};
use crate::tui::geometry::Scroll;
use crate::tui::keymap::Action;
use crate::tui::on_screen::OnScreen;
use crate::tui::panels::{Panel, PanelAction, PanelEnv};
use keys::{DiffAction, DiffMode};
use tierscope_engine::compare::ContextDiff;
use tierscope_engine::policy::Policy;
use view_model::DiffModel;

/// A side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

impl Side {
    pub fn label(&self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
        }
    }
    fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// One entry of the list B is chosen from.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub label: String,
    pub desc: String,
    pub policy: Policy,
    /// The budget B runs at when chosen (`None`: A's).
    pub budget: Option<Option<u64>>,
}

/// The label of the baseline's entry in the list (it starts with this).
pub const BASELINE: &str = "baseline";

/// The knobs panel of one side (row 0 is that side's budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnobEdit {
    pub side: Side,
    pub selected: usize,
}

pub struct DiffState {
    pub a: Policy,
    pub b: Policy,
    /// A's budget (`None` = the default budget).
    pub budget: Option<u64>,
    /// B's budget: A's unless B is the baseline, which runs at the budget it had.
    pub budget_b: Option<u64>,
    pub cursor: usize,
    pub selected: usize,
    pub gen: u64,
    pub pending: bool,
    pub model: Option<Arc<DiffModel>>,
    pub error: Option<String>,
    pub context: Option<Arc<ContextDiff>>,
    pub context_pending: bool,
    /// First row of the context diff shown.
    pub context_scroll: usize,
    /// The hunk last jumped to.
    pub hunk: Option<usize>,
    /// The list B is being chosen from (open: keys go to it).
    pub picker: Option<(Vec<Choice>, usize)>,
    /// The knobs panel (open: keys go to it).
    pub knobs: Option<KnobEdit>,
    /// The session grew (follow) while the cursor was at its newest request: the next replay
    /// puts it at the new newest.
    pub at_newest: bool,
}

impl DiffState {
    /// Where keys go.
    pub fn mode(&self) -> DiffMode {
        if self.picker.is_some() {
            DiffMode::Pick
        } else if self.knobs.is_some() {
            DiffMode::Knobs
        } else {
            DiffMode::Browse
        }
    }
    /// The policy of a side.
    pub fn policy(&self, s: Side) -> &Policy {
        match s {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }
    /// The budget of a side, as set (`None` = the default budget).
    pub fn budget(&self, s: Side) -> Option<u64> {
        match s {
            Side::A => self.budget,
            Side::B => self.budget_b,
        }
    }
    fn budget_mut(&mut self, s: Side) -> &mut Option<u64> {
        match s {
            Side::A => &mut self.budget,
            Side::B => &mut self.budget_b,
        }
    }
    fn policy_mut(&mut self, s: Side) -> &mut Policy {
        match s {
            Side::A => &mut self.a,
            Side::B => &mut self.b,
        }
    }
    fn requests(&self) -> usize {
        self.model.as_ref().map_or(0, |m| m.requests)
    }
    fn episodes(&self) -> usize {
        self.model.as_ref().map_or(0, |m| m.episodes.len())
    }
}

/// Work for the worker thread.
#[derive(Debug, Clone, PartialEq)]
pub enum DiffJob {
    /// Replay the current session under A and B and compare.
    Replay {
        gen: u64,
        a: Box<Policy>,
        b: Box<Policy>,
        /// The budgets of A and B.
        budgets: [Option<u64>; 2],
    },
    /// The rendered-context diff at `at`.
    Context {
        gen: u64,
        at: usize,
        a: Box<Policy>,
        b: Box<Policy>,
        /// The budgets of A and B.
        budgets: [Option<u64>; 2],
    },
}

impl DiffJob {
    /// The answer when the job failed (e.g. panicked) with `e`.
    pub fn failed(&self, e: String) -> DiffMsg {
        match self {
            DiffJob::Replay { gen, .. } => DiffMsg::Replayed {
                gen: *gen,
                result: Err(e),
            },
            DiffJob::Context { gen, at, .. } => DiffMsg::Context {
                gen: *gen,
                at: *at,
                result: Err(e),
            },
        }
    }
}

/// Results of [`DiffJob`]s.
#[derive(Debug)]
pub enum DiffMsg {
    Replayed {
        gen: u64,
        result: Result<Arc<DiffModel>, String>,
    },
    Context {
        gen: u64,
        at: usize,
        result: Result<Arc<ContextDiff>, String>,
    },
}

impl Panel for DiffState {
    type Msg = DiffMsg;
    type Job = DiffJob;
    type Mode = keys::DiffMode;
    type Action = keys::DiffAction;
    const OPEN: crate::tui::keymap::Binding = keys::OPEN;
    const BINDINGS: &'static [crate::tui::keymap::Binding] = keys::BINDINGS;
    const MODES: &'static [DiffMode] = &[DiffMode::Browse, DiffMode::Knobs, DiffMode::Pick];

    fn mode(&self) -> DiffMode {
        DiffState::mode(self)
    }
    fn title(mode: DiffMode) -> &'static str {
        mode.title()
    }
    fn covers_main(&self) -> bool {
        true
    }
    fn render(&self, state: &State, f: &mut Frame, area: Rect) -> Option<Scroll> {
        Some(view::render(state, self, f, area))
    }

    /// `d` on the main screen: the list to choose B, at the main screen's cursor.
    fn open(env: &PanelEnv<'_>, out: &mut Out) -> Option<DiffState> {
        if env.session.is_none() {
            out.flash("no session loaded", Level::Info);
            return None;
        }
        if env.requests() == 0 {
            out.flash("no requests yet: nothing to compare", Level::Info);
            return None;
        }
        let list = choices(env.on_screen);
        // Preselect the most likely comparison: the pre-edit policy, else a different built-in.
        let pre = list
            .iter()
            .position(|c| c.label.starts_with(BASELINE))
            .or_else(|| {
                let want = if env.on_screen.policy.name == "age" {
                    "retention"
                } else {
                    "age"
                };
                list.iter().position(|c| c.label == want)
            })
            .unwrap_or(0);
        Some(DiffState {
            a: env.on_screen.policy.clone(),
            b: env.on_screen.policy.clone(),
            budget: env.on_screen.budget,
            budget_b: env.on_screen.budget,
            cursor: env.cursor,
            selected: env.selected,
            gen: 0,
            pending: false,
            model: None,
            error: None,
            context: None,
            context_pending: false,
            context_scroll: 0,
            hunk: None,
            picker: Some((list, pre)),
            knobs: None,
            at_newest: false,
        })
    }

    fn on_key(&mut self, env: &PanelEnv<'_>, _k: &KeyEvent, action: Option<Action>, out: &mut Out) {
        match self.mode() {
            DiffMode::Pick => self.on_pick(action, out),
            DiffMode::Knobs => self.on_knobs(action, out),
            DiffMode::Browse => self.on_diff(env, action, out),
        }
    }

    /// The wheel scrolls the context diff (both sides), or moves through the list of B.
    fn on_mouse(&mut self, _env: &PanelEnv<'_>, m: MouseEvent, out: &mut Out) {
        match self.mode() {
            DiffMode::Browse => {
                let rows = self.context.as_ref().map_or(0, |c| c.rows.len());
                match m.kind {
                    MouseEventKind::ScrollDown => {
                        self.context_scroll = (self.context_scroll + 3).min(rows.saturating_sub(1))
                    }
                    MouseEventKind::ScrollUp => {
                        self.context_scroll = self.context_scroll.saturating_sub(3)
                    }
                    _ => {}
                }
            }
            DiffMode::Pick => {
                let a = crate::tui::app::wheel_as(&m, Action::ListDown, Action::ListUp);
                self.on_pick(a, out);
            }
            DiffMode::Knobs => {}
        }
    }

    fn on_msg(&mut self, _env: &PanelEnv<'_>, msg: DiffMsg, out: &mut Out) {
        let d = self;
        match msg {
            DiffMsg::Replayed { gen, result } => {
                if gen != d.gen {
                    return; // a newer pair is on its way
                }
                d.pending = false;
                match result {
                    Ok(m) => {
                        let last = m.requests.saturating_sub(1);
                        d.cursor = if std::mem::take(&mut d.at_newest) {
                            last
                        } else {
                            d.cursor.min(last)
                        };
                        d.selected = d.selected.min(m.episodes.len().saturating_sub(1));
                        d.model = Some(m);
                        d.error = None;
                        request_context(d, out);
                    }
                    Err(e) => {
                        d.error = Some(e.clone());
                        out.flash(format!("diff failed: {e}"), Level::Error);
                    }
                }
            }
            DiffMsg::Context { gen, at, result } => {
                if gen != d.gen || at != d.cursor {
                    return;
                }
                d.context_pending = false;
                match result {
                    Ok(c) => {
                        // Open at the first hunk: the difference, at a glance.
                        d.context_scroll = c.hunks.first().map_or(0, |h| h.saturating_sub(2));
                        d.hunk = c.hunks.first().map(|_| 0);
                        d.context = Some(c);
                    }
                    Err(e) => out.flash(format!("context diff failed: {e}"), Level::Error),
                }
            }
        }
    }

    /// The session was (re)loaded (a follow update, or another session): rerun both sides on
    /// it. A cursor at the newest request stays at the newest (diff mode keeps up with follow).
    fn on_session_changed(&mut self, _env: &PanelEnv<'_>, out: &mut Out) {
        let d = self;
        if d.picker.is_none() || d.model.is_some() {
            d.at_newest |= d.model.is_some() && d.cursor + 1 >= d.requests();
            d.context = None;
            request_replay(d, out);
        }
    }

    /// `:` in diff mode: a request moves diff mode's cursor, an episode selects its row.
    fn goto(
        &mut self,
        env: &PanelEnv<'_>,
        text: &str,
        out: &mut Out,
    ) -> Option<Result<(), String>> {
        let s = env.session?;
        let d = self;
        let r = match crate::tui::main::search::parse_goto(&s.model, text) {
            Err(e) => Err(e),
            Ok(crate::tui::main::search::Target::Episode(i)) => {
                d.selected = i.min(d.episodes().saturating_sub(1));
                Ok(())
            }
            Ok(crate::tui::main::search::Target::Request(r)) => {
                let n = d.requests();
                if n == 0 {
                    Err("nothing compared yet".to_owned())
                } else {
                    move_cursor(d, r, out);
                    if r >= n {
                        let msg = format!("request {r} is past the end: at r{} (the last)", n - 1);
                        out.flash(msg, Level::Warn);
                    }
                    Ok(())
                }
            }
        };
        Some(r)
    }

    /// The replay of both sides and the context diff replace their own kind only.
    fn job_slot(job: &DiffJob) -> u8 {
        match job {
            DiffJob::Replay { .. } => 0,
            DiffJob::Context { .. } => 1,
        }
    }
    fn run(
        job: DiffJob,
        session: Option<&Arc<tierscope_engine::session::LoadedSession>>,
        _progress: &dyn Fn(crate::tui::app::Msg),
    ) -> DiffMsg {
        job::run(session, job)
    }
    fn failed(job: &DiffJob, e: String) -> DiffMsg {
        job.failed(e)
    }
}

/// The list B is chosen from: the baseline (what was on screen before the last edits, at its
/// budget; when it differs from the current schedule), then every built-in at A's budget.
pub fn choices(on_screen: &OnScreen) -> Vec<Choice> {
    let mut out = Vec::new();
    let current = &on_screen.policy;
    if let Some(base) = on_screen.differing_baseline() {
        let mut what = base.changed_knobs(current);
        if base.budget != on_screen.budget {
            what.insert(
                0,
                format!("budget {}", crate::tui::ui::thousands(base.shown_budget)),
            );
        }
        out.push(Choice {
            label: format!("{BASELINE}: {}", base.name()),
            desc: if what.is_empty() {
                format!("before the last edits: {}", base.policy.name)
            } else {
                format!("before the last edits: {}", what.join(" "))
            },
            policy: base.policy.clone(),
            budget: Some(base.budget),
        });
    }
    if let Ok(list) = tierscope_engine::policy::builtins() {
        for p in list {
            out.push(Choice {
                label: p.name.clone(),
                desc: p.description.clone(),
                policy: p,
                budget: None,
            });
        }
    }
    out
}

fn request_replay(d: &mut DiffState, out: &mut Out) {
    d.gen += 1;
    d.pending = true;
    out.job(DiffJob::Replay {
        gen: d.gen,
        a: Box::new(d.a.clone()),
        b: Box::new(d.b.clone()),
        budgets: [d.budget, d.budget_b],
    });
}

fn request_context(d: &mut DiffState, out: &mut Out) {
    if d.model.is_none() {
        return;
    }
    d.context_pending = true;
    out.job(DiffJob::Context {
        gen: d.gen,
        at: d.cursor,
        a: Box::new(d.a.clone()),
        b: Box::new(d.b.clone()),
        budgets: [d.budget, d.budget_b],
    });
}

fn move_cursor(d: &mut DiffState, to: usize, out: &mut Out) {
    let n = d.requests();
    if n == 0 {
        return;
    }
    let to = to.min(n - 1);
    if to == d.cursor {
        return;
    }
    d.cursor = to;
    request_context(d, out);
}

impl DiffState {
    /// Keys of the list to choose B from.
    fn on_pick(&mut self, action: Option<Action>, out: &mut Out) {
        let d = self;
        let Some((list, sel)) = d.picker.as_mut() else {
            return;
        };
        match action {
            Some(Action::ListUp) => *sel = sel.saturating_sub(1),
            Some(Action::ListDown) => *sel = (*sel + 1).min(list.len().saturating_sub(1)),
            Some(Action::Accept) => {
                let chosen = list.get(*sel).map(|c| (c.policy.clone(), c.budget));
                d.picker = None;
                if let Some((p, budget)) = chosen {
                    d.b = p;
                    d.budget_b = budget.unwrap_or(d.budget);
                    d.context = None;
                    request_replay(d, out);
                }
            }
            Some(Action::CloseOverlay) => {
                d.picker = None;
                // Nothing compared yet: cancelling the choice cancels diff mode.
                if d.model.is_none() && !d.pending {
                    out.ask(Ask::Close);
                }
            }
            Some(Action::ForceQuit) => out.ask(Ask::ForceQuit),
            _ => {}
        }
    }

    /// Keys of the comparison itself.
    fn on_diff(&mut self, env: &PanelEnv<'_>, action: Option<Action>, out: &mut Out) {
        let page = env.page;
        let d = self;
        let c = d.cursor;
        let Some(a) = action else { return };
        match a {
            // One setting for every pane that wraps (the main screen's context and detail too).
            Action::ToggleWrap => out.ask(Ask::ToggleWrap),
            Action::CycleTheme => out.ask(Ask::CycleTheme),
            // The same field as on the main screen; Enter moves diff mode's cursor.
            Action::Goto => out.ask(Ask::Input(InputPurpose::Goto, String::new())),
            Action::CloseOverlay | Action::Quit => out.ask(Ask::Close),
            Action::ForceQuit => out.ask(Ask::ForceQuit),
            Action::Help => out.ask(Ask::Help(keys::BROWSE)),
            Action::StepNext => move_cursor(d, c + 1, out),
            Action::StepPrev => move_cursor(d, c.saturating_sub(1), out),
            Action::StepNextFast => move_cursor(d, c + 10, out),
            Action::StepPrevFast => move_cursor(d, c.saturating_sub(10), out),
            Action::First => move_cursor(d, 0, out),
            Action::Last => move_cursor(d, d.requests().saturating_sub(1), out),
            Action::NextChange | Action::PrevChange => {
                let list = d
                    .model
                    .as_ref()
                    .map(|m| m.differing.clone())
                    .unwrap_or_default();
                let fwd = a == Action::NextChange;
                let next = if fwd {
                    list.iter().copied().find(|&r| r > c)
                } else {
                    list.iter().rev().copied().find(|&r| r < c)
                };
                match next {
                    Some(r) => move_cursor(d, r, out),
                    None => {
                        let what = if fwd { "ahead" } else { "before" };
                        out.flash(format!("no difference between A and B {what}"), Level::Info)
                    }
                }
            }
            Action::SelectDown => d.selected = (d.selected + 1).min(d.episodes().saturating_sub(1)),
            Action::SelectUp => d.selected = d.selected.saturating_sub(1),
            Action::ScrollDown | Action::ScrollUp => {
                let by = page.half_page();
                let by = if a == Action::ScrollDown { by } else { -by };
                d.context_scroll = page.moved(d.context_scroll.min(page.max), by);
            }
            Action::Panel(PanelAction::Diff(DiffAction::NextHunk | DiffAction::PrevHunk)) => {
                let Some(ctx) = d.context.clone() else { return };
                if ctx.hunks.is_empty() {
                    out.flash("the rendered contexts are identical here", Level::Info);
                    return;
                }
                let n = ctx.hunks.len();
                let fwd = a == keys::own(DiffAction::NextHunk);
                // From the hunk last jumped to while the view still sits on it; after scrolling
                // by hand, from what is on screen (a jumped-to hunk sits two rows below the top).
                let at_hunk = d.hunk.filter(|&i| {
                    ctx.hunks
                        .get(i)
                        .is_some_and(|&h| h.saturating_sub(2) == d.context_scroll)
                });
                let i = match at_hunk {
                    Some(i) if fwd => (i + 1) % n,
                    Some(i) => (i + n - 1) % n,
                    None => {
                        let anchor = d.context_scroll + 2;
                        if fwd {
                            ctx.hunks.iter().position(|&h| h > anchor).unwrap_or(0)
                        } else {
                            ctx.hunks.iter().rposition(|&h| h < anchor).unwrap_or(n - 1)
                        }
                    }
                };
                d.hunk = Some(i);
                d.context_scroll = ctx.hunks[i].saturating_sub(2);
            }
            Action::Panel(PanelAction::Diff(DiffAction::EditA | DiffAction::EditB)) => {
                let side = if a == keys::own(DiffAction::EditA) {
                    Side::A
                } else {
                    Side::B
                };
                d.knobs = Some(KnobEdit { side, selected: 0 });
            }
            Action::Panel(PanelAction::Diff(DiffAction::PickB)) => {
                let list = choices(env.on_screen);
                let sel = list.iter().position(|ch| ch.policy == d.b).unwrap_or(0);
                d.picker = Some((list, sel));
            }
            Action::Panel(PanelAction::Diff(DiffAction::SwapSides)) => {
                std::mem::swap(&mut d.a, &mut d.b);
                std::mem::swap(&mut d.budget, &mut d.budget_b);
                d.context = None;
                request_replay(d, out);
            }
            _ => {}
        }
    }

    /// Keys of a side's knobs panel.
    fn on_knobs(&mut self, action: Option<Action>, out: &mut Out) {
        let d = self;
        let Some(k) = d.knobs else { return };
        let rows = 1 + d.policy(k.side).specs.len();
        let res = match action {
            Some(Action::KnobUp) => {
                d.knobs = Some(KnobEdit {
                    selected: k.selected.saturating_sub(1),
                    ..k
                });
                Ok(())
            }
            Some(Action::KnobDown) => {
                d.knobs = Some(KnobEdit {
                    selected: (k.selected + 1).min(rows - 1),
                    ..k
                });
                Ok(())
            }
            Some(Action::FocusNext) | Some(Action::FocusPrev) => {
                let side = k.side.other();
                let n = 1 + d.policy(side).specs.len();
                d.knobs = Some(KnobEdit {
                    side,
                    selected: k.selected.min(n - 1),
                });
                Ok(())
            }
            Some(
                a @ (Action::KnobInc | Action::KnobDec | Action::KnobIncBig | Action::KnobDecBig),
            ) => {
                let steps = match a {
                    Action::KnobInc => 1.0,
                    Action::KnobDec => -1.0,
                    Action::KnobIncBig => 10.0,
                    _ => -10.0,
                };
                step(d, k, steps, out)
            }
            Some(Action::KnobReset) => reset(d, k, out),
            Some(Action::CloseOverlay) => {
                d.knobs = None;
                Ok(())
            }
            Some(Action::ForceQuit) => {
                out.ask(Ask::ForceQuit);
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = res {
            out.flash(e, Level::Warn);
        }
    }
}

/// The budget a side ran at (what its row 0 steps from).
pub fn shown_budget(d: &DiffState, side: Side) -> u64 {
    d.budget(side)
        .or_else(|| {
            d.model.as_ref().map(|m| match side {
                Side::A => m.budget,
                Side::B => m.budget_b,
            })
        })
        .unwrap_or(0)
}

fn set_policy(d: &mut DiffState, side: Side, p: Policy, out: &mut Out) {
    if p.knobs == d.policy(side).knobs {
        return;
    }
    *d.policy_mut(side) = p;
    request_replay(d, out);
}

fn step(d: &mut DiffState, k: KnobEdit, steps: f64, out: &mut Out) -> Result<(), String> {
    if k.selected == 0 {
        let b = shown_budget(d, k.side);
        if b == 0 {
            return Ok(());
        }
        *d.budget_mut(k.side) = Some(crate::tui::knobs::stepped_budget(b, steps));
        request_replay(d, out);
        return Ok(());
    }
    let p = d.policy(k.side).clone();
    let Some(spec) = p.specs.get(k.selected - 1).cloned() else {
        return Ok(());
    };
    let Some(text) = crate::tui::knobs::stepped_knob(&spec, p.knobs.get(&spec.name), steps) else {
        return Ok(());
    };
    let np = p
        .with_overrides(&[(spec.name.clone(), text)])
        .map_err(|e| e.to_string())?;
    set_policy(d, k.side, np, out);
    Ok(())
}

fn reset(d: &mut DiffState, k: KnobEdit, out: &mut Out) -> Result<(), String> {
    if k.selected == 0 {
        if d.budget(k.side).is_some() {
            *d.budget_mut(k.side) = None;
            request_replay(d, out);
        }
        return Ok(());
    }
    let p = d.policy(k.side).clone();
    let Some(spec) = p.specs.get(k.selected - 1).cloned() else {
        return Ok(());
    };
    let np = p
        .with_overrides(&[(spec.name.clone(), spec.default.to_string())])
        .map_err(|e| e.to_string())?;
    set_policy(d, k.side, np, out);
    Ok(())
}

//! The schedule the main view shows: the policy with its knobs, the budget, the latest replay
//! under them (latest wins by generation) and the run totals before the last change, for the
//! metrics strip's before → after.

use std::sync::Arc;

use crate::tui::app::Effect;
use crate::tui::totals::RunTotals;
use crate::tui::view_model::ReplayModel;
use tierscope_engine::policy::Policy;

pub struct Schedule {
    pub policy: Policy,
    /// The budget the user set (`None`: the recorded model's default).
    pub budget: Option<u64>,
    /// The replay on screen (kept while a newer one runs).
    pub replay: Option<Arc<ReplayModel>>,
    /// Generation of the latest replay asked for; older results are dropped.
    pub gen: u64,
    pub pending: bool,
    pub error: Option<String>,
    /// The totals of the replay that was on screen before the current run of edits (knobs or
    /// budget since the knobs panel opened; a policy switch or a sweep point is a run of its
    /// own).
    pub before: Option<RunTotals>,
    /// A run of edits is under way: further edits keep `before`.
    editing: bool,
}

impl Schedule {
    pub fn new(policy: Policy, budget: Option<u64>) -> Schedule {
        Schedule {
            policy,
            budget,
            replay: None,
            gen: 0,
            pending: false,
            error: None,
            before: None,
            editing: false,
        }
    }

    /// Asks for a replay under the current policy and budget (a new generation).
    pub fn request(&mut self, fx: &mut Vec<Effect>) {
        self.gen += 1;
        self.pending = true;
        fx.push(Effect::Replay {
            gen: self.gen,
            policy: Box::new(self.policy.clone()),
            budget: self.budget,
        });
    }

    /// The policy, a knob or the budget is about to change: the first change of a run
    /// remembers the totals on screen.
    pub fn changing(&mut self) {
        if !self.editing {
            self.before = self.replay.as_ref().map(|r| r.totals);
            self.editing = true;
        }
    }

    /// The run of edits is over (the knobs panel opened again, a policy or a sweep point is
    /// about to be loaded): the next change starts a new one.
    pub fn end_edits(&mut self) {
        self.editing = false;
    }

    /// Another session (or a new state of it) is shown: nothing of the old replay applies.
    pub fn session_changed(&mut self) {
        self.replay = None;
        self.before = None;
        self.editing = false;
        self.error = None;
    }

    /// The budget the replay on screen used (or the one set).
    pub fn effective_budget(&self) -> u64 {
        self.budget
            .or_else(|| self.replay.as_ref().map(|r| r.budget))
            .unwrap_or(0)
    }
}

//! What the main view shows: the policy with its knobs, the budget, the latest replay
//! under them (latest wins by generation) and the one baseline: what was on screen before the
//! last run of edits (policy, knobs, budget and its totals). The metrics strip's before → after
//! and diff mode's "baseline" choice both read it, so there is one "before", named with its
//! budget, everywhere.

use std::sync::Arc;

use crate::tui::app::Effect;
use crate::tui::totals::RunTotals;
use crate::tui::view_model::ReplayModel;
use tierscope_engine::policy::Policy;

/// The schedule before the last run of edits: the one "before" the explorer compares with.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub policy: Policy,
    /// The budget as set (`None`: the recorded model's default).
    pub budget: Option<u64>,
    /// The budget its replay ran at (0 when no replay was on screen yet).
    pub shown_budget: u64,
    /// The totals of its replay, when one was on screen.
    pub totals: Option<RunTotals>,
}

impl Baseline {
    /// `retention @ 9,000`: how the strip, the diff list and the diff header name it.
    pub fn name(&self) -> String {
        if self.shown_budget > 0 {
            format!(
                "{} @ {}",
                self.policy.name,
                crate::tui::ui::thousands(self.shown_budget)
            )
        } else {
            self.policy.name.clone()
        }
    }

    /// The knobs that differ from `current`'s, as `k=v` (the baseline's values).
    pub fn changed_knobs(&self, current: &Policy) -> Vec<String> {
        self.policy
            .knobs
            .iter()
            .filter(|(k, v)| current.knobs.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }
}

pub struct OnScreen {
    pub policy: Policy,
    /// The budget the user set (`None`: the recorded model's default).
    pub budget: Option<u64>,
    /// The replay on screen (kept while a newer one runs).
    pub replay: Option<Arc<ReplayModel>>,
    /// Generation of the latest replay asked for; older results are dropped.
    pub gen: u64,
    pub pending: bool,
    pub error: Option<String>,
    /// What was on screen before the current run of edits (knobs or budget since the knobs
    /// panel opened; a policy switch or a sweep point is a run of its own).
    pub baseline: Option<Baseline>,
    /// A run of edits is under way: further edits keep `before`.
    editing: bool,
}

impl OnScreen {
    pub fn new(policy: Policy, budget: Option<u64>) -> OnScreen {
        OnScreen {
            policy,
            budget,
            replay: None,
            gen: 0,
            pending: false,
            error: None,
            baseline: None,
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
    /// remembers what is on screen as the baseline.
    pub fn changing(&mut self) {
        if !self.editing {
            self.baseline = Some(Baseline {
                policy: self.policy.clone(),
                budget: self.budget,
                shown_budget: self.effective_budget(),
                totals: self.replay.as_ref().map(|r| r.totals),
            });
            self.editing = true;
        }
    }

    /// The baseline when it differs from what is on screen (policy, knobs or budget).
    pub fn differing_baseline(&self) -> Option<&Baseline> {
        self.baseline.as_ref().filter(|b| {
            b.policy.name != self.policy.name
                || b.policy.knobs != self.policy.knobs
                || b.budget != self.budget
        })
    }

    /// The run of edits is over (the knobs panel opened again, a policy or a sweep point is
    /// about to be loaded): the next change starts a new one.
    pub fn end_edits(&mut self) {
        self.editing = false;
    }

    /// Another session (or a new state of it) is shown: nothing of the old replay applies.
    pub fn session_changed(&mut self) {
        self.replay = None;
        self.baseline = None;
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

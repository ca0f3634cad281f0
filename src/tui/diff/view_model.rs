//! The diff screen's view-model, prepared on the worker thread from two replays and their
//! comparison: tier grids of both sides, the pressure series, per-request deltas, and the
//! rendered-context diff with every text made safe for the terminal.

use crate::tui::view_model::Grid;
use tierscope_engine::compare::{Comparison, ContextDiff, FrameDiff, SummaryDiff};
use tierscope_engine::episode::Tier;
use tierscope_engine::policy::Policy;
use tierscope_engine::replay::Replay;

/// Two replays compared, for display.
#[derive(Debug, Clone, Default)]
pub struct DiffModel {
    /// Side labels: the policy name and the knobs that differ from the other side.
    pub a_label: String,
    pub b_label: String,
    pub budget: u64,
    pub budget_source: String,
    pub requests: usize,
    /// Episode ids and floors, in session order.
    pub episodes: Vec<(String, Tier)>,
    /// Applied tiers of A and B: episodes × requests, cells as in [`crate::tui::view_model::cell`].
    pub tiers_a: Grid,
    pub tiers_b: Grid,
    pub pressure_a: Vec<f64>,
    pub pressure_b: Vec<f64>,
    pub frames: Vec<FrameDiff>,
    /// Requests where anything differs, sorted.
    pub differing: Vec<usize>,
    pub summary: Option<SummaryDiff>,
}

pub use tierscope_engine::compare::side_label;

/// A side's label with how `opencode` compacted on it (which trigger ran, where).
fn with_compaction(label: String, r: &Replay) -> String {
    match &r.policy.compaction {
        Some(c) => format!("{label} [{}]", crate::tui::safe_line(&c.short())),
        None => label,
    }
}

fn grid_of(r: &Replay) -> Grid {
    crate::tui::prepare::applied_grid(r, r.applied.episodes, r.applied.requests)
}

impl DiffModel {
    pub fn build(a: &Policy, b: &Policy, ra: &Replay, rb: &Replay, c: Comparison) -> DiffModel {
        DiffModel {
            a_label: with_compaction(side_label(a, b), ra),
            b_label: with_compaction(side_label(b, a), rb),
            budget: ra.policy.budget,
            budget_source: ra.policy.budget_source.clone(),
            requests: c.requests,
            episodes: c.episodes.iter().map(|e| (e.id.clone(), e.floor)).collect(),
            tiers_a: grid_of(ra),
            tiers_b: grid_of(rb),
            pressure_a: ra.frames.iter().map(|f| f.pressure).collect(),
            pressure_b: rb.frames.iter().map(|f| f.pressure).collect(),
            differing: c.differing_requests(),
            frames: c.frames,
            summary: Some(c.summary),
        }
    }

    /// The disagreement at (episode, request): `None` where not both closed or equal, else which
    /// side is higher and whether the lower side is below the floor.
    pub fn disagreement(&self, ep: usize, t: usize) -> Option<(bool, bool)> {
        let (ta, tb) = (self.tiers_a.tier(ep, t)?, self.tiers_b.tier(ep, t)?);
        if ta == tb {
            return None;
        }
        let floor = self.episodes.get(ep).map_or(Tier::Dropped, |e| e.1);
        let a_higher = ta.depth() < tb.depth();
        let lower = if a_higher { tb } else { ta };
        Some((a_higher, lower.depth() > floor.depth()))
    }
}

/// The rendered-context diff, with segment texts made safe for a buffer.
pub fn safe_context(mut d: ContextDiff) -> ContextDiff {
    for r in &mut d.rows {
        for side in [&mut r.a, &mut r.b].into_iter().flatten() {
            for (_, s) in &mut side.segments {
                *s = crate::tui::safe_line(s);
            }
        }
    }
    d
}

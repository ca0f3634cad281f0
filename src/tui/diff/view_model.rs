//! The diff screen's view-model, prepared on the worker thread from two replays and their
//! comparison: tier grids of both sides, the pressure series, per-request deltas, and the
//! rendered-context diff with every text made safe for the terminal.

use super::Side;
use crate::tui::view_model::{cell, Grid};
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
    /// The budgets A and B ran at (B's is A's unless B is the baseline at its own).
    pub budget: u64,
    pub budget_b: u64,
    pub budget_source: String,
    pub requests: usize,
    /// Episode ids and floors, in session order.
    pub episodes: Vec<(String, Tier)>,
    /// Applied tiers of A and B: episodes × requests, cells as in [`crate::tui::view_model::cell`].
    pub tiers_a: Grid,
    pub tiers_b: Grid,
    /// Either side shows an episode only from a chunk on somewhere (the legend says `▐`).
    pub tail_only: bool,
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
    crate::tui::presenter::applied_grid(r, r.applied.episodes, r.applied.requests)
}

impl DiffModel {
    pub fn build(a: &Policy, b: &Policy, ra: &Replay, rb: &Replay, c: Comparison) -> DiffModel {
        let (tiers_a, tiers_b) = (grid_of(ra), grid_of(rb));
        DiffModel {
            a_label: with_compaction(side_label(a, b), ra),
            b_label: with_compaction(side_label(b, a), rb),
            budget: ra.policy.budget,
            budget_b: rb.policy.budget,
            budget_source: ra.policy.budget_source.clone(),
            requests: c.requests,
            episodes: c.episodes.iter().map(|e| (e.id.clone(), e.floor)).collect(),
            tail_only: [&tiers_a, &tiers_b]
                .iter()
                .any(|g| g.any_state(cell::TAIL_ONLY)),
            tiers_a,
            tiers_b,
            pressure_a: ra.frames.iter().map(|f| f.pressure).collect(),
            pressure_b: rb.frames.iter().map(|f| f.pressure).collect(),
            differing: c.differing_requests(),
            frames: c.frames,
            summary: Some(c.summary),
        }
    }

    /// The disagreement at (episode, request): `None` where not both closed or equal.
    pub fn disagreement(&self, ep: usize, t: usize) -> Option<Disagreement> {
        let (ta, tb) = (self.tiers_a.tier(ep, t)?, self.tiers_b.tier(ep, t)?);
        let tail = |g: &Grid| g.state(ep, t) == cell::TAIL_ONLY;
        let (tail_a, tail_b) = (tail(&self.tiers_a), tail(&self.tiers_b));
        if ta == tb && tail_a == tail_b {
            return None;
        }
        let floor = self.episodes.get(ep).map_or(Tier::Dropped, |e| e.1);
        // At the same tier, the side showing all of `full` is the higher one.
        let a_higher = if ta == tb {
            tail_b
        } else {
            ta.depth() < tb.depth()
        };
        let lower = if a_higher { tb } else { ta };
        Some(Disagreement {
            a_higher,
            below_floor: lower.depth() > floor.depth(),
            tail_only: match (tail_a, tail_b) {
                (true, _) => Some(Side::A),
                (_, true) => Some(Side::B),
                _ => None,
            },
        })
    }
}

/// How two sides differ on one episode at one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disagreement {
    /// A shows the episode at a higher tier (or all of `full` against B's tail of it).
    pub a_higher: bool,
    /// The lower side is below the episode's floor.
    pub below_floor: bool,
    /// A side that shows only the tail of `full` (its head in a compaction summary), so its
    /// tier alone overstates what it keeps.
    pub tail_only: Option<Side>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// One episode (floor `anchor`) at one request, A's cell and B's.
    fn model(a: u8, b: u8) -> DiffModel {
        let grid = |v: u8| {
            let mut g = Grid::new(1, 1);
            g.set(0, 0, v);
            g
        };
        DiffModel {
            episodes: vec![("E0".into(), Tier::Anchor)],
            tiers_a: grid(a),
            tiers_b: grid(b),
            ..DiffModel::default()
        }
    }

    #[test]
    fn a_tail_of_full_is_told_apart_from_all_of_it_and_named() {
        let full = cell::TIER0;
        let dense = cell::TIER0 + 1;
        assert_eq!(model(full, full).disagreement(0, 0), None);
        let tails = model(cell::TAIL_ONLY, cell::TAIL_ONLY);
        assert_eq!(tails.disagreement(0, 0), None);
        // Same tier, but B shows all of full: B is higher, and A is the tail-only side.
        let d = model(cell::TAIL_ONLY, full).disagreement(0, 0).unwrap();
        assert_eq!((d.a_higher, d.tail_only), (false, Some(Side::A)));
        // A's tail of full against B's dense: A's tier is higher, its tail is named.
        let d = model(cell::TAIL_ONLY, dense).disagreement(0, 0).unwrap();
        assert_eq!((d.a_higher, d.tail_only), (true, Some(Side::A)));
        let d = model(full, dense).disagreement(0, 0).unwrap();
        assert_eq!(
            (d.a_higher, d.below_floor, d.tail_only),
            (true, false, None)
        );
    }
}

//! Two replays of the same trace side by side (A and B: two policies, or one policy with two knob
//! sets): per request, the episodes whose applied tier differs and the metric deltas (B − A); per
//! session, the summary deltas; and at any request the rendered-context text diff ([`context`]).
//!
//! Pure: the comparison reads two finished [`Replay`]s and never replays anything itself, so the
//! same pair always gives the same output. Deltas are always B − A.

pub mod context;
pub mod delta;

use serde::Serialize;

use crate::episode::{Episode, Tier};
use crate::policy::Policy;
use crate::replay::{self, Cell, Change, Frame, Input, PolicyInfo, Replay, Summary};

pub use context::{context_diff, context_text, diff_texts, unified_diff, ContextDiff};

/// Errors of [`compare`].
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(
        "the two replays are not of the same trace: A has {a_requests} requests and {a_episodes} episodes, B has {b_requests} and {b_episodes}"
    )]
    Mismatch {
        a_requests: usize,
        a_episodes: usize,
        b_requests: usize,
        b_episodes: usize,
    },
}

/// Which side shows an episode more faithfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Higher {
    A,
    B,
}

/// One episode whose applied tier differs between A and B at one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TierDiff {
    /// Episode id (`E3`).
    pub episode: String,
    /// Index of the episode in the session (row of the heatmap).
    pub index: usize,
    pub a: Tier,
    pub b: Tier,
    pub floor: Tier,
    pub higher: Higher,
    /// The side's tier is below the episode's floor (a floor violation on that side).
    pub a_below_floor: bool,
    pub b_below_floor: bool,
    /// The side shows only the tail of `full` (its head in a compaction summary, or before
    /// the view): its tier alone overstates what it keeps.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub a_tail_only: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub b_tail_only: bool,
}

/// The measured numbers of one request (or their B − A difference).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub tokens: i64,
    pub pressure: f64,
    pub overflow: i64,
    pub divergence: i64,
    pub radius: i64,
    pub cache_read: i64,
    pub cache_write: i64,
    pub cost: f64,
    pub changes: i64,
    pub deferred: i64,
    pub emergencies: i64,
    pub holds: i64,
    pub thrash: i64,
    pub floor_violations: i64,
    pub pin_violations: i64,
    pub probes_due: i64,
    pub probes_ok: i64,
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Metrics {
    /// The numbers of one frame.
    pub fn of(f: &Frame) -> Metrics {
        Metrics {
            tokens: i(f.tokens),
            pressure: f.pressure,
            overflow: i(f.overflow),
            divergence: i(f.divergence),
            radius: i(f.radius),
            cache_read: i(f.cache_read),
            cache_write: i(f.cache_write),
            cost: f.cost,
            changes: f.changes.len() as i64,
            deferred: i(f.deferred),
            emergencies: i(f.emergencies),
            holds: i(f.holds),
            thrash: i(f.thrash),
            floor_violations: i(f.floor_violations),
            pin_violations: i(f.pin_violations),
            probes_due: i(f.probes_due),
            probes_ok: i(f.probes_ok),
        }
    }

    /// `b − a`, field by field.
    pub fn delta(a: &Metrics, b: &Metrics) -> Metrics {
        Metrics {
            tokens: b.tokens - a.tokens,
            pressure: b.pressure - a.pressure,
            overflow: b.overflow - a.overflow,
            divergence: b.divergence - a.divergence,
            radius: b.radius - a.radius,
            cache_read: b.cache_read - a.cache_read,
            cache_write: b.cache_write - a.cache_write,
            cost: b.cost - a.cost,
            changes: b.changes - a.changes,
            deferred: b.deferred - a.deferred,
            emergencies: b.emergencies - a.emergencies,
            holds: b.holds - a.holds,
            thrash: b.thrash - a.thrash,
            floor_violations: b.floor_violations - a.floor_violations,
            pin_violations: b.pin_violations - a.pin_violations,
            probes_due: b.probes_due - a.probes_due,
            probes_ok: b.probes_ok - a.probes_ok,
        }
    }

    /// Every field is zero.
    pub fn is_zero(&self) -> bool {
        *self == Metrics::default()
    }
}

/// One request of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameDiff {
    pub request: usize,
    pub status: String,
    pub synthetic_call: bool,
    /// Episodes shown at a different tier by A and B, in episode order.
    pub tier_diffs: Vec<TierDiff>,
    pub a: Metrics,
    pub b: Metrics,
    /// B − A.
    pub delta: Metrics,
    /// The tier changes applied here by each side, when they differ (both empty otherwise).
    pub changes_a: Vec<Change>,
    pub changes_b: Vec<Change>,
    /// The two frames agree on everything measured (tiers, numbers, changes, violations).
    pub same: bool,
}

/// Summary deltas (B − A). Optional yardsticks are present only when both sides have them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SummaryDelta {
    pub mean_tokens: f64,
    pub max_overflow: i64,
    pub cost: f64,
    pub cache_hit_ratio: f64,
    pub divergence_cost_tokens: i64,
    pub divergence_cost_dollars: f64,
    pub changes: i64,
    pub switches_per_100: f64,
    pub thrash: i64,
    pub holds: i64,
    pub deferred: i64,
    pub emergencies: i64,
    pub floor_violations: i64,
    pub pin_violations: i64,
    pub prunes: i64,
    pub synthetic_calls: i64,
    pub probe_survival: Option<f64>,
    pub excess_fidelity_tokens: Option<i64>,
    pub under_fidelity_misses: Option<i64>,
}

impl SummaryDelta {
    pub fn of(a: &Summary, b: &Summary) -> SummaryDelta {
        let opt = |x: Option<u64>, y: Option<u64>| Some(i(y?) - i(x?));
        SummaryDelta {
            mean_tokens: b.mean_tokens - a.mean_tokens,
            max_overflow: i(b.max_overflow) - i(a.max_overflow),
            cost: b.cost - a.cost,
            cache_hit_ratio: b.cache_hit_ratio - a.cache_hit_ratio,
            divergence_cost_tokens: b.divergence_cost.tokens - a.divergence_cost.tokens,
            divergence_cost_dollars: b.divergence_cost.dollars - a.divergence_cost.dollars,
            changes: i(b.changes) - i(a.changes),
            switches_per_100: b.switches_per_100 - a.switches_per_100,
            thrash: i(b.thrash) - i(a.thrash),
            holds: i(b.holds) - i(a.holds),
            deferred: i(b.deferred) - i(a.deferred),
            emergencies: i(b.emergencies) - i(a.emergencies),
            floor_violations: i(b.floor_violations) - i(a.floor_violations),
            pin_violations: i(b.pin_violations) - i(a.pin_violations),
            prunes: i(b.prunes) - i(a.prunes),
            synthetic_calls: i(b.synthetic_calls) - i(a.synthetic_calls),
            probe_survival: a.probe_survival.zip(b.probe_survival).map(|(x, y)| y - x),
            excess_fidelity_tokens: opt(a.excess_fidelity_tokens, b.excess_fidelity_tokens),
            under_fidelity_misses: opt(a.under_fidelity_misses, b.under_fidelity_misses),
        }
    }
}

/// The session-level comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryDiff {
    pub a: Summary,
    pub b: Summary,
    pub delta: SummaryDelta,
    /// Requests where the frames differ in anything measured.
    pub requests_differing: u64,
    /// (request, episode) cells where the applied tiers differ, and which side is higher there.
    pub tier_cells_differing: u64,
    pub a_higher_cells: u64,
    pub b_higher_cells: u64,
    /// Of the differing cells, those where a side shows only the tail of `full`.
    #[serde(skip_serializing_if = "is_zero")]
    pub tail_only_cells: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Per episode, what the comparison needs to know besides tiers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EpisodeRef {
    pub id: String,
    pub floor: Tier,
}

/// Two replays of one trace compared request by request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub session: String,
    pub title: String,
    pub requests: usize,
    pub episodes: Vec<EpisodeRef>,
    pub a: PolicyInfo,
    pub b: PolicyInfo,
    pub summary: SummaryDiff,
    pub frames: Vec<FrameDiff>,
}

impl Comparison {
    /// Requests where anything differs, in order (for "next difference" jumps).
    pub fn differing_requests(&self) -> Vec<usize> {
        self.frames
            .iter()
            .filter(|f| !f.same)
            .map(|f| f.request)
            .collect()
    }
    /// No request differs.
    pub fn identical(&self) -> bool {
        self.summary.requests_differing == 0
    }
}

/// `name` and the knobs that set it apart: against the same policy, the knobs whose values
/// differ; against another policy (whose kind's defaults differ anyway), the knobs overridden.
pub fn side_label(p: &Policy, other: &Policy) -> String {
    let knobs: Vec<String> = p
        .knobs
        .iter()
        .filter(|(k, v)| {
            if p.name == other.name {
                other.knobs.get(*k) != Some(*v)
            } else {
                p.overridden.iter().any(|o| o == *k)
            }
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if knobs.is_empty() {
        p.name.clone()
    } else {
        format!("{} {}", p.name, knobs.join(" "))
    }
}

/// Each due probe's answer on both sides, from the frames' probe changes, and how many
/// probes the two sides answer differently (a frame is the same on both only when none).
#[derive(Default)]
struct ProbeAnswers {
    /// By probe id: (answered on a, answered on b); a probe not due yet is absent.
    by_id: std::collections::HashMap<String, (bool, bool)>,
    disagree: u64,
}

impl ProbeAnswers {
    fn apply(&mut self, a: &[crate::replay::ProbeChange], b: &[crate::replay::ProbeChange]) {
        let changes = a
            .iter()
            .map(|c| (c, true))
            .chain(b.iter().map(|c| (c, false)));
        for (c, side_a) in changes {
            let slot = self.by_id.entry(c.id.clone()).or_insert((c.ok, c.ok));
            let before = slot.0 != slot.1;
            if side_a {
                slot.0 = c.ok;
            } else {
                slot.1 = c.ok;
            }
            let after = slot.0 != slot.1;
            self.disagree = self.disagree + u64::from(after) - u64::from(before);
        }
    }
}

/// Compare two finished replays of the episodes `episodes` (the trace both replays ran on).
pub fn compare(episodes: &[Episode], a: &Replay, b: &Replay) -> Result<Comparison, CompareError> {
    let (na, nb) = (a.frames.len(), b.frames.len());
    let (ea, eb) = (a.applied.episodes, b.applied.episodes);
    if na != nb || ea != eb || ea != episodes.len() {
        return Err(CompareError::Mismatch {
            a_requests: na,
            a_episodes: ea,
            b_requests: nb,
            b_episodes: eb,
        });
    }
    let mut frames = Vec::with_capacity(na);
    let (mut differing, mut cells, mut a_hi, mut b_hi, mut tails) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut answers = ProbeAnswers::default();
    for (fa, fb) in a.frames.iter().zip(&b.frames) {
        answers.apply(&fa.probe_changes, &fb.probe_changes);
        let t = fa.request;
        let mut tier_diffs = Vec::new();
        for (e, ep) in episodes.iter().enumerate() {
            // The active and future cells are the trace's, the same on both sides; only closed
            // episodes' tiers are the policies' doing.
            let (Cell::Tier(ta), Cell::Tier(tb)) = (a.applied.get(t, e), b.applied.get(t, e))
            else {
                continue;
            };
            let (tail_a, tail_b) = (
                a.tail_only_at(t, e).is_some(),
                b.tail_only_at(t, e).is_some(),
            );
            if ta == tb && tail_a == tail_b {
                continue;
            }
            // At the same tier, the side showing all of `full` is the higher one.
            let higher = if ta == tb && tail_a || ta.depth() > tb.depth() {
                Higher::B
            } else {
                Higher::A
            };
            match higher {
                Higher::A => a_hi += 1,
                Higher::B => b_hi += 1,
            }
            tails += u64::from(tail_a || tail_b);
            tier_diffs.push(TierDiff {
                episode: ep.id.clone(),
                index: e,
                a: ta,
                b: tb,
                floor: ep.floor,
                higher,
                a_below_floor: ta.depth() > ep.floor.depth(),
                b_below_floor: tb.depth() > ep.floor.depth(),
                a_tail_only: tail_a,
                b_tail_only: tail_b,
            });
        }
        cells += tier_diffs.len() as u64;
        let (ma, mb) = (Metrics::of(fa), Metrics::of(fb));
        let delta = Metrics::delta(&ma, &mb);
        let same = tier_diffs.is_empty()
            && delta.is_zero()
            && fa.changes == fb.changes
            && fa.held == fb.held
            && fa.violations == fb.violations
            && answers.disagree == 0
            && fa.compaction == fb.compaction;
        if !same {
            differing += 1;
        }
        let (changes_a, changes_b) = if fa.changes == fb.changes {
            (Vec::new(), Vec::new())
        } else {
            (fa.changes.clone(), fb.changes.clone())
        };
        frames.push(FrameDiff {
            request: t,
            status: fa.status.clone(),
            synthetic_call: fa.synthetic_call,
            tier_diffs,
            a: ma,
            b: mb,
            delta,
            changes_a,
            changes_b,
            same,
        });
    }
    Ok(Comparison {
        session: a.trace.session.clone(),
        title: a.trace.title.clone(),
        requests: na,
        episodes: episodes
            .iter()
            .map(|e| EpisodeRef {
                id: e.id.clone(),
                floor: e.floor,
            })
            .collect(),
        a: a.policy.clone(),
        b: b.policy.clone(),
        summary: SummaryDiff {
            delta: SummaryDelta::of(&a.summary, &b.summary),
            a: a.summary.clone(),
            b: b.summary.clone(),
            requests_differing: differing,
            tier_cells_differing: cells,
            a_higher_cells: a_hi,
            b_higher_cells: b_hi,
            tail_only_cells: tails,
        },
        frames,
    })
}

/// Replay `input` under A and B (at one budget; `None` = the default budget) and compare.
/// Returns both replays too, for views that chart them.
pub fn compare_policies(
    input: &Input<'_>,
    a: &Policy,
    b: &Policy,
    budget: Option<u64>,
) -> Result<(Replay, Replay, Comparison), CompareError> {
    let ra = replay::replay(input, a, budget);
    let rb = replay::replay(input, b, budget);
    let c = compare(input.episodes, &ra, &rb)?;
    Ok((ra, rb, c))
}

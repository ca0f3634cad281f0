//! The chapter's second experiment as one table: several policies on the same trace, at one
//! budget or at budgets tuned so that their mean context sizes match, with per-request size, tier
//! distribution, violations, holds, thrash, switches, divergence cost, cost and probe survival.

use rayon::prelude::*;
use serde::Serialize;

use super::flat_summaries::{replay_written, FlatSummaryError, SummarySource};
use crate::episode::Tier;
use crate::policy::Policy;
use crate::replay::{self, Replay};
use crate::session::LoadedSession;

/// How budgets are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetMode {
    /// One budget for every policy (`None`: the recorded model's usable input limit).
    Fixed(Option<u64>),
    /// Per policy, the budget whose replay's mean tokens come closest to the target (`None`:
    /// [`auto_target`], a mean that puts the session under pressure).
    MatchMeanTokens(Option<f64>),
}

/// Share of (episode, request) cells at each tier, over every request (the active episode
/// counts as `full`, as in the replay's frames).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TierShare {
    pub full: f64,
    pub dense: f64,
    pub compact: f64,
    pub anchor: f64,
    pub dropped: f64,
}

impl TierShare {
    pub fn get(&self, t: Tier) -> f64 {
        match t {
            Tier::Full => self.full,
            Tier::Dense => self.dense,
            Tier::Compact => self.compact,
            Tier::Anchor => self.anchor,
            Tier::Dropped => self.dropped,
        }
    }
}

/// One policy's line of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub policy: String,
    pub kind: String,
    pub respect_floors: bool,
    pub budget: u64,
    pub budget_source: String,
    pub mean_tokens: f64,
    pub p50_tokens: u64,
    pub p95_tokens: u64,
    pub max_tokens: u64,
    pub max_overflow: u64,
    /// The largest irreducible part of a request (system chunk + active episode; see
    /// [`replay::irreducible`]) at this row's budget: the same for every policy.
    pub irreducible_max: u64,
    /// The largest overflow above what the request could not shed (tokens − max(budget,
    /// irreducible)): the schedule's share of `max_overflow`.
    pub avoidable_overflow: u64,
    /// Requests whose overflow is above their irreducible part.
    pub avoidable_requests: u64,
    pub tiers: TierShare,
    pub floor_violations: u64,
    pub pin_violations: u64,
    pub holds: u64,
    pub thrash: u64,
    pub changes: u64,
    pub switches_per_100: f64,
    pub deferred: u64,
    pub emergencies: u64,
    pub divergence_tokens: i64,
    pub divergence_dollars: f64,
    pub cost: f64,
    pub cache_hit_ratio: f64,
    pub probe_survival: Option<f64>,
    pub excess_fidelity_tokens: Option<u64>,
    pub under_fidelity_misses: Option<u64>,
    /// In `MatchMeanTokens` mode: whether the mean came within 2 % of the target (some policies,
    /// e.g. `full` and the oracles, do not respond to the budget).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<bool>,
    /// `opencode`: which trigger ran and why, where it compacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<replay::CompactionRun>,
    /// Per request, the overflow (tokens above the budget), for the per-request table.
    #[serde(skip)]
    pub overflow: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    pub session: String,
    pub title: String,
    pub requests: usize,
    pub episodes: usize,
    pub probes: usize,
    /// `budget` or `match-mean-tokens`.
    pub mode: String,
    pub target_mean_tokens: Option<f64>,
    /// How the target was chosen, when the experiment chose it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rule: Option<String>,
    /// Per request, the irreducible part (system chunk + active episode).
    pub irreducible: Vec<u64>,
    pub rows: Vec<Row>,
}

/// The rule behind [`auto_target`], for outputs.
pub const AUTO_TARGET_RULE: &str =
    "half of what a schedule can shed: mean of irreducible + (full − irreducible) / 2 per request";

/// The mean `--match-mean-tokens` aims at without a value: per request, the irreducible part
/// (system chunk + active episode, [`replay::irreducible`]) plus half of the rest of `full`'s
/// rendering, averaged. Below `full`'s own mean whenever any closed history is shown (so every
/// budget-driven policy is under pressure), and above what no schedule can shed (so it can be
/// reached). Half of `full`'s peak would be simpler, but on a session whose system chunk is most
/// of the context (M1: 6,728 of an 11,181 peak) it lies below the system chunk itself.
pub fn auto_target(input: &replay::Input<'_>) -> f64 {
    let Ok(full) = crate::policy::load("full", &[]) else {
        return 0.0;
    };
    let r = replay::replay(input, &full, None);
    if r.frames.is_empty() {
        return 0.0;
    }
    let irr = replay::irreducible(input);
    let sum: f64 = r
        .frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let floor = irr.get(i).copied().unwrap_or(0).min(f.tokens);
            floor as f64 + (f.tokens - floor) as f64 / 2.0
        })
        .sum();
    sum / r.frames.len() as f64
}

/// Summarise one replay as a row; `irreducible` per request (see [`replay::irreducible`]).
pub fn row_of(r: &Replay, matched: Option<bool>, irreducible: &[u64]) -> Row {
    let budget = r.policy.budget;
    let avoidable: Vec<u64> = r
        .frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let floor = irreducible.get(i).copied().unwrap_or(0).max(budget);
            f.tokens.saturating_sub(floor)
        })
        .collect();
    let mut sizes: Vec<u64> = r.frames.iter().map(|f| f.tokens).collect();
    sizes.sort_unstable();
    let pct = |p: f64| -> u64 {
        if sizes.is_empty() {
            return 0;
        }
        let i = ((sizes.len() - 1) as f64 * p).round() as usize;
        sizes[i.min(sizes.len() - 1)]
    };
    let mut counts = [0u64; 5];
    for f in &r.frames {
        for t in Tier::ALL {
            counts[t.depth()] += f.tiers.get(t).count;
        }
    }
    let total: u64 = counts.iter().sum();
    let share = |t: Tier| {
        if total == 0 {
            0.0
        } else {
            counts[t.depth()] as f64 / total as f64
        }
    };
    let s = &r.summary;
    Row {
        policy: r.policy.name.clone(),
        kind: r.policy.kind.as_str().to_string(),
        respect_floors: r.policy.respect_floors,
        budget: r.policy.budget,
        budget_source: r.policy.budget_source.clone(),
        mean_tokens: s.mean_tokens,
        p50_tokens: pct(0.5),
        p95_tokens: pct(0.95),
        max_tokens: sizes.last().copied().unwrap_or(0),
        max_overflow: s.max_overflow,
        irreducible_max: irreducible.iter().copied().max().unwrap_or(0),
        avoidable_overflow: avoidable.iter().copied().max().unwrap_or(0),
        avoidable_requests: avoidable.iter().filter(|&&a| a > 0).count() as u64,
        tiers: TierShare {
            full: share(Tier::Full),
            dense: share(Tier::Dense),
            compact: share(Tier::Compact),
            anchor: share(Tier::Anchor),
            dropped: share(Tier::Dropped),
        },
        floor_violations: s.floor_violations,
        pin_violations: s.pin_violations,
        holds: s.holds,
        thrash: s.thrash,
        changes: s.changes,
        switches_per_100: s.switches_per_100,
        deferred: s.deferred,
        emergencies: s.emergencies,
        divergence_tokens: s.divergence_cost.tokens,
        divergence_dollars: s.divergence_cost.dollars,
        cost: s.cost,
        cache_hit_ratio: s.cache_hit_ratio,
        probe_survival: s.probe_survival,
        excess_fidelity_tokens: s.excess_fidelity_tokens,
        under_fidelity_misses: s.under_fidelity_misses,
        matched,
        compaction: r.policy.compaction.clone(),
        overflow: r.frames.iter().map(|f| f.overflow).collect(),
    }
}

/// Run every policy on `s`. Policies run in parallel; rows keep the order of `policies`.
pub fn run(s: &LoadedSession, policies: &[Policy], mode: BudgetMode) -> Experiment {
    let input = replay::Input::from(s);
    let plain = |p: &Policy, at: At| Ok::<_, std::convert::Infallible>(at.replay(&input, p));
    match run_by(s, policies, mode, &plain) {
        Ok(e) => e,
        Err(never) => match never {},
    }
}

/// [`run`] with the flat baseline's summaries written by a model ([`flat_summaries`]): a flat
/// policy's row replays at its budget (mean-matched with the stand-in summaries) with every
/// simulated compaction's summary written.
///
/// [`flat_summaries`]: super::flat_summaries
pub fn run_with_summaries(
    s: &LoadedSession,
    policies: &[Policy],
    mode: BudgetMode,
    src: &SummarySource<'_>,
) -> Result<Experiment, FlatSummaryError> {
    let input = replay::Input::from(s);
    let written = |p: &Policy, at: At| {
        if p.role() != crate::policy::KindRole::Compaction {
            return Ok(at.replay(&input, p));
        }
        let budget = match at {
            At::Budget(b) => b,
            // The budget the stand-in matched; the summaries then move the mean.
            At::MeanTokens(_) => {
                let r = at.replay(&input, p);
                (r.policy.budget_source == "--budget").then_some(r.policy.budget)
            }
        };
        replay_written(s, p, budget, src).map(|(r, _)| r)
    };
    run_by(s, policies, mode, &written)
}

/// Where a row replays: at a budget, or at the one whose mean tokens match.
#[derive(Debug, Clone, Copy)]
enum At {
    Budget(Option<u64>),
    MeanTokens(f64),
}

impl At {
    fn replay(self, input: &replay::Input<'_>, p: &Policy) -> Replay {
        match self {
            At::Budget(b) => replay::replay(input, p, b),
            At::MeanTokens(t) => match_mean(input, p, t),
        }
    }
}

/// The experiment with each row's replay from `replay_at`.
fn run_by<E: Send>(
    s: &LoadedSession,
    policies: &[Policy],
    mode: BudgetMode,
    replay_at: &(dyn Fn(&Policy, At) -> Result<Replay, E> + Sync),
) -> Result<Experiment, E> {
    let input = replay::Input::from(s);
    let irreducible = replay::irreducible(&input);
    let mut rule = None;
    let (mode_name, target, rows) = match mode {
        BudgetMode::Fixed(budget) => {
            let rows = policies
                .par_iter()
                .map(|p| {
                    Ok(row_of(
                        &replay_at(p, At::Budget(budget))?,
                        None,
                        &irreducible,
                    ))
                })
                .collect::<Result<Vec<_>, E>>()?;
            ("budget", None, rows)
        }
        BudgetMode::MatchMeanTokens(target) => {
            let target = target.unwrap_or_else(|| {
                rule = Some(AUTO_TARGET_RULE.to_owned());
                auto_target(&input)
            });
            let rows = policies
                .par_iter()
                .map(|p| {
                    let r = replay_at(p, At::MeanTokens(target))?;
                    let off = (r.summary.mean_tokens - target).abs();
                    Ok(row_of(
                        &r,
                        Some(target > 0.0 && off <= 0.02 * target),
                        &irreducible,
                    ))
                })
                .collect::<Result<Vec<_>, E>>()?;
            ("match-mean-tokens", Some(target), rows)
        }
    };
    Ok(Experiment {
        session: s.trace.session.id.clone(),
        title: s.trace.session.title.clone(),
        requests: s.trace.requests.len(),
        episodes: s.episodes.len(),
        probes: s.probes.len(),
        mode: mode_name.to_string(),
        target_mean_tokens: target,
        target_rule: rule,
        irreducible,
        rows,
    })
}

/// The replay of `p` at the budget whose mean tokens come closest to `target`: a bisection over
/// the budget (mean tokens grow with the budget until nothing is under pressure).
pub fn match_mean(input: &replay::Input<'_>, p: &Policy, target: f64) -> Replay {
    let ceiling = input
        .trace
        .requests
        .iter()
        .map(|r| r.recorded_prompt())
        .max()
        .unwrap_or(0);
    let first = replay::replay(input, p, None);
    // The largest context any policy could render: `full`'s peak, bounded below by the recording.
    let hi0 = first
        .frames
        .iter()
        .map(|f| f.tokens)
        .max()
        .unwrap_or(0)
        .max(ceiling)
        .max(first.policy.budget)
        .max(1024);
    let mut best = first;
    let mut best_off = (best.summary.mean_tokens - target).abs();
    let (mut lo, mut hi) = (256u64, hi0.saturating_mul(2));
    for _ in 0..14 {
        if hi <= lo + 1 || best_off <= 0.005 * target {
            break;
        }
        let mid = lo + (hi - lo) / 2;
        let r = replay::replay(input, p, Some(mid));
        let mean = r.summary.mean_tokens;
        let off = (mean - target).abs();
        if off < best_off {
            best_off = off;
            best = r;
        }
        if mean < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    best
}

//! The chapter's second experiment as one table: several policies on the same trace, at one
//! budget or at budgets tuned so that their mean context sizes match, with per-request size, tier
//! distribution, violations, holds, thrash, switches, divergence cost, cost and probe survival.
//! [`run_strategies`] runs the table once per tier strategy (`source`, `cascade`, `record`, …)
//! so that the strategies are compared under the same schedules.

use rayon::prelude::*;
use serde::Serialize;

use crate::episode::Tier;
use crate::loaded::LoadedSession;
use crate::policy::Policy;
use crate::replay::{self, Replay};

/// How budgets are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetMode {
    /// One budget for every policy (`None`: the recorded model's usable input limit).
    Fixed(Option<u64>),
    /// Per policy, the budget whose replay's mean tokens come closest to the target (`None`:
    /// the mean tokens of the built-in `retention` at the default budget).
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
    /// The tier strategy the episodes' representations came from.
    pub strategy: String,
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
    /// The tier strategies of the rows, in order.
    pub strategies: Vec<String>,
    pub rows: Vec<Row>,
}

/// Summarise one replay as a row.
pub fn row_of(r: &Replay, matched: Option<bool>) -> Row {
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
        strategy: String::new(),
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
    }
}

/// Run every policy on `s`. Policies run in parallel; rows keep the order of `policies`.
pub fn run(s: &LoadedSession, policies: &[Policy], mode: BudgetMode) -> Experiment {
    run_strategies(&[s], policies, mode)
}

/// Run every policy on each load of the same session (one per tier strategy); rows by strategy,
/// then policy. In `MatchMeanTokens` mode without a target, the target is the first load's
/// `retention` mean, so every strategy is tuned to the same size.
pub fn run_strategies(
    loads: &[&LoadedSession],
    policies: &[Policy],
    mode: BudgetMode,
) -> Experiment {
    let Some(first) = loads.first() else {
        return Experiment {
            session: String::new(),
            title: String::new(),
            requests: 0,
            episodes: 0,
            probes: 0,
            mode: String::new(),
            target_mean_tokens: None,
            strategies: Vec::new(),
            rows: Vec::new(),
        };
    };
    let mode = match mode {
        BudgetMode::MatchMeanTokens(None) => {
            BudgetMode::MatchMeanTokens(Some(retention_mean(first)))
        }
        m => m,
    };
    let mut rows = Vec::new();
    let mut strategies = Vec::new();
    let mut head = None;
    for s in loads {
        let mut e = run_one(s, policies, mode);
        for r in &mut e.rows {
            r.strategy = s.tier_source.as_str().to_owned();
        }
        strategies.push(s.tier_source.as_str().to_owned());
        rows.append(&mut e.rows);
        head.get_or_insert(e);
    }
    let mut e = head.unwrap_or_else(|| run_one(first, &[], mode));
    e.rows = rows;
    e.strategies = strategies;
    e
}

/// The mean tokens of the built-in `retention` at the default budget (the default target).
fn retention_mean(s: &LoadedSession) -> f64 {
    let input = replay::Input::from(s);
    crate::policy::load("retention", &[])
        .map(|p| replay::replay(&input, &p, None).summary.mean_tokens)
        .unwrap_or(0.0)
}

fn run_one(s: &LoadedSession, policies: &[Policy], mode: BudgetMode) -> Experiment {
    let input = replay::Input::from(s);
    let (mode_name, target, rows) = match mode {
        BudgetMode::Fixed(budget) => {
            let rows = policies
                .par_iter()
                .map(|p| row_of(&replay::replay(&input, p, budget), None))
                .collect();
            ("budget", None, rows)
        }
        BudgetMode::MatchMeanTokens(target) => {
            let target = target.unwrap_or_else(|| retention_mean(s));
            let rows = policies
                .par_iter()
                .map(|p| {
                    let r = match_mean(&input, p, target);
                    let off = (r.summary.mean_tokens - target).abs();
                    row_of(&r, Some(target > 0.0 && off <= 0.02 * target))
                })
                .collect();
            ("match-mean-tokens", Some(target), rows)
        }
    };
    Experiment {
        session: s.trace.session.id.clone(),
        title: s.trace.session.title.clone(),
        requests: s.trace.requests.len(),
        episodes: s.episodes.len(),
        probes: s.probes.len(),
        mode: mode_name.to_string(),
        target_mean_tokens: target,
        strategies: vec![s.tier_source.as_str().to_owned()],
        rows,
    }
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

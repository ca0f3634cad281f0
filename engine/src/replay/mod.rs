//! The replay engine (MODEL §2–§3): one pure, deterministic pass over the requests of a trace
//! under a policy, rendering each request's context chunk by chunk and measuring it.
//!
//! Entry points: [`replay`] (frames + summary + tier matrix) and [`render_at`] (the text of one
//! request's context). Both take an [`Input`] (a [`LoadedSession`] converts into one).
//!
//! Choices where MODEL.md is silent (also in `docs` of each item):
//! - Milestone boundary: the request right after the one whose step changed a todo or was a
//!   compaction summary call (the change happened during that step).
//! - `boundary = user-turn` also lets changes through at milestones and cache expiry, and
//!   `milestone` at cache expiry: changing the prefix there costs nothing extra.
//! - The active episode counts as `full` in `tiers`.
//! - `decay` computes desired tiers only at folds, so it never defers; an overflow between folds
//!   forces a fold, counted as an emergency. Importance without a source: pin 100, a floor at
//!   `compact` or above 75, compressible 50, discardable 25.
//! - `oracle` without probes drops every episode (nothing is asked of them).
//! - Summary calls (`synthetic_call`) are a conversation of their own for divergence and cache.

pub mod cache_cost;
mod compaction_call;
mod engine;
pub mod limits;
mod params;
mod prepare;
pub mod probes;
pub mod records;
pub mod render;
pub mod synth;
pub mod types;

use std::collections::BTreeSet;

pub use render::{render_at, RenderedChunk, RenderedContext};
pub use types::*;

use crate::episode::sidecar::Probe;
use crate::episode::Episode;
use crate::loaded::LoadedSession;
use crate::policy::{Policy, PolicyKind};
use crate::trace::compaction_request::CompactionSizes;
use crate::trace::Trace;

/// What a replay reads: a trace, its episodes with tiers, its probes and milestones.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub trace: &'a Trace,
    pub episodes: &'a [Episode],
    pub probes: &'a [Probe],
    /// Request indices of todo changes and compaction summary calls (see
    /// [`crate::loaded::milestones`]).
    pub milestones: &'a BTreeSet<usize>,
    /// The recorded compaction calls as OpenCode built them, and the release's compaction
    /// prompt, sized at load (see [`crate::trace::compaction_request`]).
    pub compaction: &'a CompactionSizes,
}

impl<'a> From<&'a LoadedSession> for Input<'a> {
    fn from(s: &'a LoadedSession) -> Self {
        Input {
            trace: &s.trace,
            episodes: &s.episodes,
            probes: &s.probes,
            milestones: &s.milestones,
            compaction: &s.compaction,
        }
    }
}

/// The budget used and where it came from: `--budget` if given, else the usable input limit of
/// the recorded model from the bundled table (by session, then model), else the fallback.
pub fn resolve_budget(trace: &Trace, budget: Option<u64>) -> (u64, String) {
    match budget {
        Some(b) => (b, "--budget".into()),
        None => {
            let l = limits::limits_for(trace);
            (l.usable(), l.source)
        }
    }
}

/// Replay `input` under `policy` with `budget` (None = the default budget). Pure and
/// deterministic: the same input, policy and budget give byte-identical output.
pub fn replay(input: &Input<'_>, policy: &Policy, budget: Option<u64>) -> Replay {
    let (budget_v, budget_source) = resolve_budget(input.trace, budget);
    let par = params::Params::from_policy(policy);
    let prep = prepare::Prep::new(
        input,
        engine::filter_for(&par),
        par.apply_prunes,
        par.system_tokens,
    );
    let pass = run_prepared(input, &prep, &par, budget_v, true);
    // divergence_cost is measured against `full` on the same trace, with the same system chunk.
    let baseline = if policy.kind == PolicyKind::Full {
        None
    } else {
        let sys = policy.num("system_tokens").to_string();
        crate::policy::load("full", &[("system_tokens".to_owned(), sys)])
            .ok()
            .map(|full| {
                let fpar = params::Params::from_policy(&full);
                let same = engine::filter_for(&fpar) == engine::filter_for(&par)
                    && fpar.apply_prunes == par.apply_prunes;
                let b = if same {
                    run_prepared(input, &prep, &fpar, budget_v, false)
                } else {
                    let fprep = prepare::Prep::new(
                        input,
                        engine::filter_for(&fpar),
                        fpar.apply_prunes,
                        fpar.system_tokens,
                    );
                    run_prepared(input, &fprep, &fpar, budget_v, false)
                };
                let radius: u64 = b.pass.frames.iter().map(|f| f.radius).sum();
                let cost: f64 = b.pass.frames.iter().map(|f| f.cost).sum();
                (radius, cost)
            })
    };
    assemble(input, policy, budget_v, budget_source, pass, baseline)
}

/// Replay a loaded session (convenience for [`replay`]).
pub fn replay_session(s: &LoadedSession, policy: &Policy, budget: Option<u64>) -> Replay {
    replay(&Input::from(s), policy, budget)
}

pub(crate) struct PassOut {
    pass: engine::Pass,
    segments: Vec<SystemSegment>,
    pricing: cache_cost::PricingInfo,
}

pub(crate) fn run_pass(input: &Input<'_>, policy: &Policy, budget: u64) -> PassOut {
    let par = params::Params::from_policy(policy);
    let prep = prepare::Prep::new(
        input,
        engine::filter_for(&par),
        par.apply_prunes,
        par.system_tokens,
    );
    run_prepared(input, &prep, &par, budget, true)
}

fn run_prepared(
    input: &Input<'_>,
    prep: &prepare::Prep<'_>,
    par: &params::Params,
    budget: u64,
    keep_views: bool,
) -> PassOut {
    let probes = probes::ProbeIndex::new(prep, input.probes);
    let model = input
        .trace
        .requests
        .iter()
        .find_map(|r| r.model.as_ref())
        .or(input.trace.session.model.as_ref());
    let pricing = cache_cost::PricingTable::bundled().lookup(model);
    let mut engine = engine::Engine::new(prep, par, &probes, &pricing.price, budget);
    engine.keep_views = keep_views;
    let pass = engine.run();
    PassOut {
        pass,
        segments: prep.segments.clone(),
        pricing,
    }
}

fn assemble(
    input: &Input<'_>,
    policy: &Policy,
    budget: u64,
    budget_source: String,
    out: PassOut,
    baseline: Option<(u64, f64)>,
) -> Replay {
    let frames = out.pass.frames;
    let n = frames.len() as u64;
    let tokens: u64 = frames.iter().map(|f| f.tokens).sum();
    let cache_read: u64 = frames.iter().map(|f| f.cache_read).sum();
    let radius: u64 = frames.iter().map(|f| f.radius).sum();
    // Every request's cost, plus the compaction calls the policy simulated.
    let cost: f64 = frames
        .iter()
        .map(|f| f.cost + f.compaction_call.map_or(0.0, |c| c.cost))
        .sum();
    let changes: u64 = frames.iter().map(|f| f.changes.len() as u64).sum();
    let (base_radius, base_cost) = baseline.unwrap_or((radius, cost));
    let mut err = RecordedError::default();
    let mut pct_sum = 0.0;
    let mut delta = 0i64;
    for f in frames
        .iter()
        .filter(|f| !f.synthetic_call && f.recorded.prompt > 0)
    {
        let pct =
            (f.tokens as f64 - f.recorded.prompt as f64).abs() / f.recorded.prompt as f64 * 100.0;
        err.requests += 1;
        pct_sum += pct;
        err.max_abs_pct = err.max_abs_pct.max(pct);
        delta += f.tokens as i64 - f.recorded.prompt as i64;
    }
    if err.requests > 0 {
        err.mean_abs_pct = pct_sum / err.requests as f64;
    }
    err.total_delta = delta;
    let (ok_pairs, pairs) = out.pass.probe_pairs;
    let summary = Summary {
        requests: n,
        mean_tokens: if n > 0 { tokens as f64 / n as f64 } else { 0.0 },
        max_overflow: frames.iter().map(|f| f.overflow).max().unwrap_or(0),
        cost,
        cache_hit_ratio: if tokens > 0 {
            cache_read as f64 / tokens as f64
        } else {
            0.0
        },
        divergence_cost: DivergenceCost {
            tokens: radius as i64 - base_radius as i64,
            dollars: cost - base_cost,
        },
        changes,
        switches_per_100: if n > 0 {
            changes as f64 * 100.0 / n as f64
        } else {
            0.0
        },
        thrash: frames.iter().map(|f| f.thrash).sum(),
        holds: frames.iter().map(|f| f.holds).sum(),
        deferred: frames.iter().map(|f| f.deferred).sum(),
        emergencies: frames.iter().map(|f| f.emergencies).sum(),
        floor_violations: frames.iter().map(|f| f.floor_violations).sum(),
        pin_violations: frames.iter().map(|f| f.pin_violations).sum(),
        prunes: frames.iter().map(|f| f.prunes).sum(),
        synthetic_calls: out.pass.synthetic_calls,
        probe_survival: (pairs > 0).then(|| ok_pairs as f64 / pairs as f64),
        excess_fidelity_tokens: out.pass.excess,
        under_fidelity_misses: out.pass.under,
        recorded_error: err,
    };
    Replay {
        trace: TraceInfo {
            session: input.trace.session.id.clone(),
            title: input.trace.session.title.clone(),
            requests: input.trace.requests.len(),
            episodes: input.episodes.len(),
            system_segments: out.segments,
            pricing: out.pricing,
        },
        policy: PolicyInfo {
            name: policy.name.clone(),
            kind: policy.kind,
            version: policy.version,
            respect_floors: policy.respect_floors,
            knobs: policy.knobs.clone(),
            budget,
            budget_source,
        },
        frames,
        summary,
        applied: out.pass.applied,
        desired: out.pass.desired,
        render_states: out.pass.render_states,
    }
}

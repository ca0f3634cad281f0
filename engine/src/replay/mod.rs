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
mod divergence;
mod fenwick;
pub mod limits;
mod metrics;
mod pass;
pub(crate) mod policies;
mod prepare;
pub mod probes;
pub mod records;
pub mod render;
pub(crate) mod schedule;
mod state;
pub mod synth;
pub mod types;

use std::collections::BTreeSet;

pub use render::{render_at, render_requests, RenderedChunk, RenderedContext};
pub use types::*;

use crate::episode::sidecar::Probe;
use crate::episode::Episode;
use crate::loaded::LoadedSession;
use crate::policy::{Policy, PolicyKind};
use crate::trace::summary_call::CompactionSizes;
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
    /// The Magic Context compartments behind the episodes, if they come from a `context.db`.
    pub magic_context: Option<&'a crate::episode::magic_context::MagicContextSession>,
    /// The recorded compaction calls as the agent built them, and its compaction
    /// prompt, sized at load (see [`crate::formats::opencode::compaction_request`]).
    pub compaction: &'a CompactionSizes,
}

impl<'a> From<&'a LoadedSession> for Input<'a> {
    fn from(s: &'a LoadedSession) -> Self {
        Input {
            trace: &s.trace,
            episodes: &s.episodes,
            probes: &s.probes,
            milestones: &s.milestones,
            magic_context: s.magic_context.as_ref(),
            compaction: &s.compaction,
        }
    }
}

/// The budget used and where it came from: `--budget` if given, else the usable input limit of
/// the recorded model from the bundled table (by session, then model, else the fallback), as
/// the trace's agent reckons it (the output reserve and buffer of its own compaction).
pub fn resolve_budget(trace: &Trace, budget: Option<u64>) -> (u64, String) {
    match budget {
        Some(b) => (b, "--budget".into()),
        None => {
            let l = limits::limits_for(trace);
            let usable = crate::trace::adapter::adapter(trace.origin.agent).map_or_else(
                || l.usable(),
                |a| a.flat_rules(trace).usable(l.context, l.output),
            );
            (usable, l.source)
        }
    }
}

/// One pass of a policy, prepared: the precomputed view of the input (under the policy's
/// chunk filter), its common knobs, its probes and its pricing.
pub(crate) struct Prepared<'a> {
    pub prep: prepare::Prep<'a>,
    pub common: crate::policy::knobs::Common,
    pub filter: prepare::Filter,
    pub probes: probes::ProbeIndex,
    pub pricing: cache_cost::PricingInfo,
}

impl<'a> Prepared<'a> {
    /// `explicit_budget`: the budget was given (not the model's default); a policy's chunk
    /// filter may depend on it (`opencode` simulates under one).
    pub fn new(input: &Input<'a>, policy: &Policy, explicit_budget: bool) -> Prepared<'a> {
        let common = crate::policy::knobs::Common::from_policy(policy);
        let filter = policies::filter(policy, explicit_budget);
        let prep = prepare::Prep::new(input, filter, common.apply_prunes, common.system_tokens);
        Prepared::with_prep(input, policy, prep, filter)
    }

    /// Reuse a view built for another policy with the same filter, prunes and system chunk.
    fn with_prep(
        input: &Input<'a>,
        policy: &Policy,
        prep: prepare::Prep<'a>,
        filter: prepare::Filter,
    ) -> Prepared<'a> {
        let common = crate::policy::knobs::Common::from_policy(policy);
        let probes = probes::ProbeIndex::new(&prep, input.probes);
        let model = input
            .trace
            .requests
            .iter()
            .find_map(|r| r.model.as_ref())
            .or(input.trace.session.model.as_ref());
        let pricing = cache_cost::PricingTable::bundled().lookup(model);
        Prepared {
            common,
            filter,
            prep,
            probes,
            pricing,
        }
    }

    /// Run the pass of `policy` at `budget` (its own common knobs; the view must have been built
    /// with the same chunk filter, prunes and system chunk).
    pub fn run(
        &self,
        policy: &Policy,
        budget: u64,
        budget_source: &str,
        keep_views: bool,
    ) -> pass::PassOutput {
        let setup = policies::Setup {
            prep: &self.prep,
            probes: &self.probes,
            budget,
            budget_source,
        };
        let mut decide = policies::build(policy, &setup);
        pass::run(
            &pass::PassInput {
                prep: &self.prep,
                common: crate::policy::knobs::Common::from_policy(policy),
                probes: &self.probes,
                price: &self.pricing.price,
                budget,
                keep_views,
            },
            decide.as_mut(),
        )
    }
}

/// Replay `input` under `policy` with `budget` (None = the default budget). Pure and
/// deterministic: the same input, policy and budget give byte-identical output.
pub fn replay(input: &Input<'_>, policy: &Policy, budget: Option<u64>) -> Replay {
    let (budget_v, budget_source) = resolve_budget(input.trace, budget);
    let prepared = Prepared::new(input, policy, budget.is_some());
    let out = prepared.run(policy, budget_v, &budget_source, true);
    // divergence_cost is measured against `full` on the same trace, with the same system chunk.
    let baseline = if policy.kind == PolicyKind::Full {
        None
    } else {
        let sys = policy.num("system_tokens").to_string();
        crate::policy::load("full", &[("system_tokens".to_owned(), sys)])
            .ok()
            .map(|full| {
                let fcommon = crate::policy::knobs::Common::from_policy(&full);
                let same = policies::filter(&full, budget.is_some()) == prepared.filter
                    && fcommon.apply_prunes == prepared.common.apply_prunes;
                let b = if same {
                    prepared.run(&full, budget_v, &budget_source, false)
                } else {
                    Prepared::new(input, &full, budget.is_some()).run(
                        &full,
                        budget_v,
                        &budget_source,
                        false,
                    )
                };
                let radius: u64 = b.frames.iter().map(|f| f.radius).sum();
                let cost: f64 = b.frames.iter().map(|f| f.cost).sum();
                (radius, cost)
            })
    };
    let summary = metrics::summary(&out, baseline);
    Replay {
        trace: TraceInfo {
            session: input.trace.session.id.clone(),
            title: input.trace.session.title.clone(),
            requests: input.trace.requests.len(),
            episodes: input.episodes.len(),
            system_segments: prepared.prep.segments.clone(),
            pricing: prepared.pricing.clone(),
            calibration: None,
        },
        policy: PolicyInfo {
            name: policy.name.clone(),
            kind: policy.kind,
            version: policy.version,
            respect_floors: policy.respect_floors,
            knobs: policy.knobs.clone(),
            budget: budget_v,
            budget_source,
            note: out.note.clone(),
            compaction: out.compaction.clone(),
        },
        summary,
        frames: out.frames,
        applied: out.applied,
        desired: out.desired,
        render_states: out.render_states,
    }
}

/// The irreducible part of each request: what no schedule can remove — the system chunk plus
/// the active episode so far at `full` (for a recorded summary call, the call as the agent built
/// it). An overflow above it is the schedule's; the rest is the request's own. Counted as
/// `full` renders it (no compaction artefacts, recorded prunes not applied).
pub fn irreducible(input: &Input<'_>) -> Vec<u64> {
    let Ok(full) = crate::policy::load("full", &[]) else {
        return Vec::new();
    };
    let prepared = Prepared::new(input, &full, false);
    let p = &prepared.prep;
    let n = p.episodes.len();
    p.reqs
        .iter()
        .zip(&input.trace.requests)
        .map(|(rq, req)| {
            if let Some(call) = rq.call_tokens.filter(|_| req.synthetic_call) {
                return rq.sys_tokens + call;
            }
            let active = if rq.active < n {
                p.td(rq.active, crate::episode::Tier::Full)
                    .map_or(0, |td| td.prefix[td.pos.partition_point(|x| *x < rq.pos)])
            } else {
                0
            };
            rq.sys_tokens + active
        })
        .collect()
}

/// Replay a loaded session (convenience for [`replay`]).
pub fn replay_session(s: &LoadedSession, policy: &Policy, budget: Option<u64>) -> Replay {
    let mut r = replay(&Input::from(s), policy, budget);
    r.trace.calibration.clone_from(&s.calibration);
    r
}

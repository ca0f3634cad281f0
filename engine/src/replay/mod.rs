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
pub(crate) mod compaction_call;
pub mod decision_log;
mod divergence;
mod fenwick;
mod holds;
pub mod limits;
mod metrics;
pub mod output;
mod pass;
pub(crate) mod prepare;
pub mod probes;
pub mod render;
pub(crate) mod schedule;
pub(crate) mod state;
pub mod synth;
pub mod written;
pub(crate) mod written_request;

use std::collections::BTreeSet;

use crate::policy::kinds;
use std::ops::ControlFlow;

pub use output::*;
pub use prepare::PrepCache;
pub use render::{render_at, render_replayed, render_requests, RenderedChunk, RenderedContext};

use crate::episode::sidecar::Probe;
use crate::episode::Episode;
use crate::policy::{KindRole, Policy};
use crate::session::LoadedSession;
use crate::trace::summary_call::CompactionSizes;
use crate::trace::Trace;

/// What a replay reads: a trace, its episodes with tiers, its probes and milestones.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub trace: &'a Trace,
    pub episodes: &'a [Episode],
    pub probes: &'a [Probe],
    /// Request indices of todo changes and compaction summary calls (see
    /// [`crate::session::milestones`]).
    pub milestones: &'a BTreeSet<usize>,
    /// The Magic Context compartments behind the episodes, if they come from a `context.db`.
    pub magic_context: Option<&'a crate::formats::magic_context::MagicContextSession>,
    /// The recorded compaction calls as the agent built them, and its compaction
    /// prompt, sized at load (see [`crate::formats::opencode::compaction_request`]).
    pub compaction: &'a CompactionSizes,
    /// Where the loaded session keeps what every replay of it would work out again.
    pub cache: Option<&'a PrepCache>,
    /// Model-written summaries for the flat baseline's simulated compactions (`None`: they
    /// are stand-ins; see [`written`]).
    pub summaries: Option<&'a written::SummaryBook>,
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
            cache: Some(&s.prep_cache),
            summaries: None,
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
        let filter = kinds::filter(policy, explicit_budget);
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
        let pricing = cache_cost::pricing_of(input.trace);
        Prepared {
            common,
            filter,
            prep,
            probes,
            pricing,
        }
    }

    /// Run the pass of `policy` at `budget` (its own common knobs; the view must have been built
    /// with the same chunk filter, prunes and system chunk), its frames kept.
    pub fn run(
        &self,
        policy: &Policy,
        budget: u64,
        budget_source: &str,
        keep_views: bool,
    ) -> pass::PassOutput {
        let mut decide = self.decide(policy, budget, budget_source);
        let mut frames = Vec::with_capacity(self.prep.reqs.len());
        let mut out = self.run_into(
            policy,
            decide.as_mut(),
            budget,
            (keep_views, &self.probes),
            &mut |f| {
                frames.push(f);
                ControlFlow::Continue(())
            },
        );
        out.frames = frames;
        out
    }

    /// The decision of `policy` for one pass.
    fn decide(&self, policy: &Policy, budget: u64, budget_source: &str) -> Box<dyn kinds::Decide> {
        let setup = kinds::Setup {
            prep: &self.prep,
            probes: &self.probes,
            budget,
            budget_source,
        };
        kinds::build(policy, &setup)
    }

    /// Run the pass of `decide` (built for `policy`), its frames to `emit`; `(keep_views,
    /// probes)`: keep the tier matrices and render states, and the probes tallied (the policy's
    /// own view of the probes is its `Setup`'s).
    fn run_into(
        &self,
        policy: &Policy,
        decide: &mut dyn kinds::Decide,
        budget: u64,
        (keep_views, probes): (bool, &probes::ProbeIndex),
        emit: &mut dyn FnMut(Frame) -> ControlFlow<()>,
    ) -> pass::PassOutput {
        pass::run(
            &pass::PassInput {
                prep: &self.prep,
                common: crate::policy::knobs::Common::from_policy(policy),
                probes,
                price: &self.pricing.price,
                budget,
                keep_views,
            },
            decide,
            emit,
        )
    }
}

/// Where a streamed replay's output goes, in the order of the JSON document.
pub trait FrameSink {
    /// The trace and the policy, before the first frame.
    fn head(&mut self, trace: &TraceInfo, policy: &PolicyInfo) -> ControlFlow<()>;
    /// One frame, in request order. `Break` stops the replay (the reader went away).
    fn frame(&mut self, frame: Frame) -> ControlFlow<()>;
}

/// Keeps the frames: what [`replay`] returns.
struct Collect(Vec<Frame>);

impl FrameSink for Collect {
    fn head(&mut self, _: &TraceInfo, _: &PolicyInfo) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn frame(&mut self, frame: Frame) -> ControlFlow<()> {
        self.0.push(frame);
        ControlFlow::Continue(())
    }
}

/// What [`replay_into`] keeps besides the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// The tier matrices and render states (for views and `render`; big on long traces:
    /// requests × episodes bytes each).
    pub views: bool,
}

/// Replay `input` under `policy` with `budget` (None = the default budget). Pure and
/// deterministic: the same input, policy and budget give byte-identical output.
pub fn replay(input: &Input<'_>, policy: &Policy, budget: Option<u64>) -> Replay {
    replay_collect(input, policy, budget, None)
}

fn replay_collect(
    input: &Input<'_>,
    policy: &Policy,
    budget: Option<u64>,
    calibration: Option<crate::session::calibration::Calibration>,
) -> Replay {
    let mut frames = Collect(Vec::with_capacity(input.trace.requests.len()));
    let r = replay_into(
        input,
        policy,
        budget,
        calibration,
        Keep { views: true },
        &mut frames,
    );
    // The collecting sink never stops the replay.
    let mut r = r.unwrap_or_else(|| unreachable!("a collecting sink never stops"));
    r.frames = frames.0;
    r
}

/// Replay `input` as [`replay`] does, handing the trace and policy, then each frame as it is
/// produced, to `sink` instead of keeping them: the returned replay has no frames (and no views
/// unless `keep` says so). `None` when the sink stopped it.
///
/// The policy's part of the document (`note`, `compaction`) of a policy that reports what its
/// pass did (decay's folds, a compaction's requests) is known only after the pass; such a
/// policy's pass runs twice (the first one without output), so the head still comes first.
pub fn replay_into(
    input: &Input<'_>,
    policy: &Policy,
    budget: Option<u64>,
    calibration: Option<crate::session::calibration::Calibration>,
    keep: Keep,
    sink: &mut dyn FrameSink,
) -> Option<Replay> {
    let (budget_v, budget_source) = resolve_budget(input.trace, budget);
    let prepared = Prepared::new(input, policy, budget.is_some());
    let trace = TraceInfo {
        session: input.trace.session.id.clone(),
        title: input.trace.session.title.clone(),
        requests: input.trace.requests.len(),
        episodes: input.episodes.len(),
        system_segments: prepared.prep.segments.clone(),
        pricing: prepared.pricing.clone(),
        calibration,
    };
    let mut info = PolicyInfo {
        name: policy.name.clone(),
        kind: policy.kind,
        version: policy.version,
        respect_floors: policy.respect_floors,
        knobs: policy.knobs.clone(),
        budget: budget_v,
        budget_source: budget_source.clone(),
        note: None,
        compaction: None,
    };
    let no_probes = probes::ProbeIndex::default();
    let mut decide = prepared.decide(policy, budget_v, &budget_source);
    if decide.reports_after_pass() {
        let dry = prepared.run_into(
            policy,
            decide.as_mut(),
            budget_v,
            (false, &no_probes),
            &mut |_| ControlFlow::Continue(()),
        );
        info.note = dry.note;
        info.compaction = dry.compaction;
        decide = prepared.decide(policy, budget_v, &budget_source);
    } else {
        info.note = decide.note();
        info.compaction = decide.compaction_run();
    }
    if sink.head(&trace, &info).is_break() {
        return None;
    }
    let mut acc = metrics::SummaryAcc::default();
    let out = prepared.run_into(
        policy,
        decide.as_mut(),
        budget_v,
        (keep.views, &prepared.probes),
        &mut |f| {
            acc.add(&f);
            sink.frame(f)
        },
    );
    if out.stopped {
        return None;
    }
    debug_assert!(out.note == info.note && out.compaction == info.compaction);
    // divergence_cost is measured against `full` on the same trace, with the same system chunk
    // (its probes are not needed).
    let baseline = if policy.role() == KindRole::Baseline {
        None
    } else {
        let sys = policy.num("system_tokens").to_string();
        crate::policy::load("full", &[("system_tokens".to_owned(), sys)])
            .ok()
            .map(|full| {
                let fcommon = crate::policy::knobs::Common::from_policy(&full);
                let same = kinds::filter(&full, budget.is_some()) == prepared.filter
                    && fcommon.apply_prunes == prepared.common.apply_prunes;
                let bare = Input {
                    probes: &[],
                    ..*input
                };
                let other;
                let base = if same {
                    &prepared
                } else {
                    other = Prepared::new(&bare, &full, budget.is_some());
                    &other
                };
                let mut decide = base.decide(&full, budget_v, &budget_source);
                let mut b = metrics::SummaryAcc::default();
                base.run_into(
                    &full,
                    decide.as_mut(),
                    budget_v,
                    (false, &no_probes),
                    &mut |f| {
                        b.add(&f);
                        ControlFlow::Continue(())
                    },
                );
                b.radius_cost()
            })
    };
    let summary = acc.finish(&out, baseline);
    Some(Replay {
        trace,
        policy: info,
        summary,
        frames: Vec::new(),
        applied: out.applied,
        desired: out.desired,
        render_states: out.render_states,
    })
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
                p.tier_data_at(rq.active, crate::episode::Tier::Full)
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
    replay_collect(&Input::from(s), policy, budget, s.calibration.clone())
}

/// Replay a loaded session into `sink` (see [`replay_into`]).
pub fn replay_session_into(
    s: &LoadedSession,
    policy: &Policy,
    budget: Option<u64>,
    keep: Keep,
    sink: &mut dyn FrameSink,
) -> Option<Replay> {
    replay_into(
        &Input::from(s),
        policy,
        budget,
        s.calibration.clone(),
        keep,
        sink,
    )
}

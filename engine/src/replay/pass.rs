//! The pass (MODEL §3): one walk over the requests of a trace under one policy. Per request:
//! close episodes, apply recorded prunes, let the policy observe, compute the boundaries, let
//! the policy decide and schedule, then size the rendered context and measure it
//! ([`super::metrics`]).
//!
//! The rendered context of a request is: the system chunk of its (agent, model), the compaction
//! summary if one is shown, each closed episode at its applied tier, then the active episode's
//! chunks before the request's position ([`context_tokens`] is the one place it is sized). A
//! request of a loop with its own history (OpenCode's v2) sees nothing before the loop's first message. A recorded
//! compaction call is its own request: the system chunk plus what the agent's builder sent
//! ([`super::compaction_call`]).
//! Closing an episode at `full` only appends, so the state keeps running sums (a Fenwick tree
//! over closed episodes) and divergence starts from the first episode changed since the
//! conversation's previous request: per request the work is O(changes · log episodes).

use std::ops::ControlFlow;

use super::cache_cost::Price;
use super::compaction_call;
use super::divergence::{self, Conv, Current};
use super::metrics::{self, ProbeTally, ProbeTotals};
use super::output::{Frame, RenderState, TierMatrix};
use super::prepare::Prep;
use super::probes::ProbeIndex;
use super::schedule::{Boundaries, BoundaryKind};
use super::state::State;
use crate::episode::Tier;
use crate::policy::kinds::{Decide, RequestView};
use crate::policy::knobs::Common;

/// The output of one pass (before the summary is assembled); its frames went to the pass's
/// `emit`, one at a time, so a long replay need not hold them.
pub(crate) struct PassOutput {
    /// The frames, where the caller kept them (`Prepared::run`); empty when they were streamed.
    pub frames: Vec<Frame>,
    /// `emit` asked to stop (the reader went away): the frames stop short.
    pub stopped: bool,
    pub applied: TierMatrix,
    pub desired: TierMatrix,
    pub render_states: Vec<RenderState>,
    /// Summary calls: recorded ones plus the policy's own compactions.
    pub synthetic_calls: u64,
    pub probes: ProbeTotals,
    /// What the policy reports about its run (e.g. the token counter it used).
    pub note: Option<String>,
    /// How the policy compacted (`opencode`).
    pub compaction: Option<super::output::CompactionRun>,
}

/// What one pass needs besides the policy's decision.
pub(crate) struct PassInput<'s, 'a> {
    pub prep: &'s Prep<'a>,
    pub common: Common,
    pub probes: &'s ProbeIndex,
    pub price: &'s Price,
    pub budget: u64,
    /// Keep the tier matrices and render states (off for the `full` baseline of a replay).
    pub keep_views: bool,
}

/// Tokens of a request's rendered context: system chunk + summary + closed episodes at their
/// applied tiers + the active episode so far.
pub(crate) fn context_tokens(st: &State<'_, '_>, sys: u64, active_tok: u64) -> u64 {
    sys + st.summary_tokens() + st.applied_sum() + active_tok
}

/// The boundary kinds at request `t` of conversation `conv`.
fn boundaries(p: &Prep<'_>, t: usize, conv: &Conv, ttl_ms: i64) -> (Boundaries, bool) {
    let rq = &p.reqs[t];
    // Entries the previous request wrote with a longer recorded lifetime outlive the knob's.
    let ttl_ms = rq.prev_cache_ttl_s.map_or(ttl_ms, |s| {
        ttl_ms.max(i64::try_from(s).unwrap_or(i64::MAX / 1000) * 1000)
    });
    let warm = conv.has_prev && rq.time - conv.prev_time <= ttl_ms;
    let mut b = Boundaries::default();
    b.insert(BoundaryKind::Request);
    if rq.user_turn {
        b.insert(BoundaryKind::UserTurn);
    }
    if !warm {
        b.insert(BoundaryKind::CacheExpiry);
    }
    if rq.milestone {
        b.insert(BoundaryKind::Milestone);
    }
    (b, warm)
}

/// Run one pass of `policy` over the prepared input, handing each frame to `emit`.
pub(crate) fn run(
    input: &PassInput<'_, '_>,
    policy: &mut dyn Decide,
    emit: &mut dyn FnMut(Frame) -> ControlFlow<()>,
) -> PassOutput {
    let p = input.prep;
    let common = input.common;
    let n = p.episodes.len();
    let nreq = p.reqs.len();
    let mut st = State::new(p, input.budget, common.respect_floors, common.thrash_window);
    let cap = if input.keep_views { nreq } else { 0 };
    let mut applied_m = TierMatrix::with_capacity(n, cap);
    let mut desired_m = TierMatrix::with_capacity(n, cap);
    let mut render_states = Vec::with_capacity(cap);
    let mut synthetic = 0u64;
    let mut probes = ProbeTally::new(input.probes);
    let mut next_prune = 0usize;
    let mut stopped = false;
    for t in 0..nreq {
        if stopped {
            break;
        }
        let rq = &p.reqs[t];
        let req = &p.trace.requests[t];
        let (bset, warm) = boundaries(p, t, &st.conv[rq.conv], common.ttl_ms);
        // A summary call that continues the conversation finds the conversation's cache warm
        // or cold, not a cache of its own.
        let warm = if req.synthetic_call && !p.trace.wire.summary_call_own_system {
            boundaries(p, t, &st.conv[0], common.ttl_ms).1
        } else {
            warm
        };
        st.begin(t, bset);
        // A recorded summary call the policy does not make (it compacts on its own).
        let not_made = req.synthetic_call && policy.skips_recorded_summary_calls();
        if req.synthetic_call && !not_made {
            synthetic += 1;
        }
        // 1. Close episodes.
        while st.closed_count() < rq.active.min(n) {
            let e = st.closed_count();
            st.close(e);
            policy.on_close(&st, e);
        }
        // A request of a loop with its own history never saw the session's earlier history.
        st.view_from(p.context_start(rq.msg));
        // Prunes recorded up to this request's start.
        let mut prunes = 0u64;
        if common.apply_prunes {
            while let Some(ev) = p.prunes.get(next_prune).copied() {
                if ev.time > rq.time {
                    break;
                }
                next_prune += 1;
                prunes += 1;
                st.prune(ev.episode as usize, ev.pos as usize, ev.delta);
            }
        }
        policy.observe(&st, t);
        let active = rq.active;
        let active_n = if active < n {
            st.active_count(active, rq.pos)
        } else {
            0
        };
        let active_tokens = |st: &State<'_, '_>| {
            if active < n {
                st.tokens_at(active, Tier::Full, Some(active_n))
            } else {
                0
            }
        };
        let view = RequestView {
            t,
            rq,
            req,
            base: rq.sys_tokens + active_tokens(&st),
        };
        // 2–3. Decide and schedule.
        let mut compacted = None;
        if !(req.synthetic_call && policy.holds_through_summary_calls()) {
            compacted = policy.decide(&mut st, &view);
            if compacted.is_some() {
                synthetic += 1;
            }
        } else {
            // Nothing is decided here, so nothing is held.
            st.release_holds();
        }
        // 4–5. Render and measure (the decision may have cut the active episode).
        let active_tok = active_tokens(&st);
        // A recorded compaction call is its own request, sized as the agent built it.
        let call = compaction_call::recorded_call(p, t, not_made);
        let built = call.map(|(c, n)| c.tokens(n));
        let tokens = match call {
            Some((compaction_call::RecordedCall::NotMade, _)) => 0,
            Some((c, n)) => rq.sys_tokens + c.tokens(n),
            None => context_tokens(&st, rq.sys_tokens, active_tok),
        };
        let div = match built {
            // A call that continues the conversation (its system prompt and tools, the history,
            // then the instruction) reads the conversation's cached prefix.
            Some(_) if !p.trace.wire.summary_call_own_system => {
                compaction_call::shared_with_conversation(
                    &st.conv[0].prefix(),
                    rq.sys_key,
                    tokens.saturating_sub(p.compaction.prompt_tokens),
                )
            }
            Some(_) => {
                let conv = &st.conv[rq.conv];
                let sys =
                    compaction_call::divergence(&conv.prefix(), rq.sys_key, rq.sys_tokens, tokens);
                // After the previous call as the agent built it, the same system prompt, and
                // the text both calls begin with (the agent's template, the history's head).
                let after_previous_call = matches!(
                    call,
                    Some((compaction_call::RecordedCall::Built(c), _))
                        if p.compaction
                            .previous_call(c.request)
                            .is_some_and(|prev| prev.request == conv.prev_request)
                );
                match call {
                    Some((compaction_call::RecordedCall::Built(c), _))
                        if after_previous_call && sys == rq.sys_tokens =>
                    {
                        (sys + c.shared_with_previous)
                            .min(conv.prev_tokens)
                            .min(tokens)
                    }
                    _ => sys,
                }
            }
            None => {
                let d = divergence::divergence(
                    &st,
                    common.apply_prunes,
                    &Current {
                        conv: rq.conv,
                        sys_key: rq.sys_key,
                        sys: rq.sys_tokens,
                        sys_changed_from: rq.sys_changed_from,
                        active,
                        active_n,
                        tokens,
                        time: rq.time,
                    },
                );
                // The previous request's answer, in flight there, reaches a later message
                // rebuilt from storage.
                let c = &st.conv[rq.conv];
                match divergence::rebuilt_answer_cap(c.prev_resent_at, c.prev_msg, rq.msg) {
                    Some(at) if c.has_prev => d.min(at),
                    _ => d,
                }
            }
        };
        let resent = if built.is_none() {
            divergence::resent_at(&st, common.apply_prunes, rq, active_n, rq.time)
        } else {
            None
        };
        let fresh = warm;
        let waiting = policy.waiting(&st);
        let frame = metrics::frame(
            &mut st,
            metrics::Measured {
                req,
                tokens,
                divergence: div,
                cache_fresh: fresh,
                active: (active < n).then_some((active, active_n, active_tok)),
                prunes,
                compacted,
                built,
                not_made,
                waiting,
            },
            input.price,
            &mut probes,
        );
        // A call not made leaves the conversation's cache state as it was.
        if !not_made {
            st.conv[rq.conv] = Conv {
                has_prev: true,
                prev_request: t,
                prev_tokens: tokens,
                prev_time: rq.time,
                prev_sys: rq.sys_key,
                prev_summary: st.summary_id(),
                prev_k: st.closed_count(),
                prev_active: active,
                prev_active_count: active_n,
                pending: None,
                prev_msg: rq.msg,
                prev_resent_at: resent,
            };
        }
        policy.after(&st, &view, tokens);
        stopped = emit(frame).is_break();
        if active < n && active >= st.closed_count() {
            st.row_applied[active] = TierMatrix::ACTIVE_CODE;
            st.row_desired[active] = TierMatrix::ACTIVE_CODE;
            st.row_touched.push(active);
        }
        if input.keep_views {
            applied_m.push_touched(&st.row_applied, &st.row_touched);
            desired_m.push_touched(&st.row_desired, &st.row_touched);
            render_states.push(RenderState {
                summary: st.summary().clone(),
                cuts: st.cuts_list().to_vec(),
                call_not_made: not_made,
                resent_at: resent,
            });
        }
        st.row_touched.clear();
    }
    PassOutput {
        frames: Vec::new(),
        stopped,
        applied: applied_m,
        desired: desired_m,
        render_states,
        synthetic_calls: synthetic,
        probes: probes.totals,
        note: policy.note(),
        compaction: policy.compaction_run(),
    }
}

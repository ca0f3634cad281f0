//! Every measure of the replay is assembled here (MODEL §3.5–3.6): a request's frame from the
//! pass state, and the session summary from the frames. The summary's counters are sums of the
//! frames' counters, so a total always equals what the frames show.
//!
//! What the counters count, per request (a change waiting across several requests is counted
//! at each of them, as is a hold that lasts):
//! - `changes`: tier changes applied at this request (`applied` says how);
//! - `holds`: closed episodes that pressure wants lower but that are shown at their floor
//!   (`held` lists those whose hold began here);
//! - `deferred`: changes desired but waiting for a boundary;
//! - `dwell_blocks`: changes desired but waiting because their episode changed less than
//!   `min_dwell` requests ago;
//! - `emergencies`: changes applied off schedule (between boundaries or inside `min_dwell`)
//!   because the context would otherwise overflow the budget;
//! - `thrash`: changes that reverse the same episode's previous change within `thrash_window`
//!   requests;
//! - `floor_violations` / `pin_violations`: every violation in force at this request.

use super::cache_cost::{self, Price};
use super::compaction_call;
use super::pass::PassOutput;
use super::policies::Compacted;
use super::probes::ProbeIndex;
use super::schedule::Waiting;
use super::state::State;
use super::types::*;
use crate::episode::Tier;

/// What the pass measured at one request, besides the state.
pub(crate) struct Measured<'s> {
    pub req: &'s crate::trace::Request,
    pub tokens: u64,
    pub divergence: u64,
    /// The gap to the conversation's previous request is within the cache TTL.
    pub cache_fresh: bool,
    /// (episode, chunks shown, tokens) of the active episode.
    pub active: Option<(usize, usize, u64)>,
    pub prunes: u64,
    /// The summary call the policy made here.
    pub compacted: Option<Compacted>,
    /// A recorded compaction call's own request (its tokens without the system chunk).
    pub built: Option<u64>,
    /// A recorded summary call the policy does not make: nothing sent, nothing billed.
    pub not_made: bool,
    pub waiting: Waiting,
}

/// Probe results over a pass, and the oracle yardsticks.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProbeTotals {
    /// The trace has probes.
    pub enabled: bool,
    /// (probe, request ≥ due) pairs whose needle was present, and all such pairs.
    pub ok_pairs: u64,
    pub pairs: u64,
    /// Σ tokens shown above the oracle's tier.
    pub excess: u64,
    /// (episode, request) pairs shown below the oracle's tier.
    pub under: u64,
}

/// Probe results as the pass goes.
pub(crate) struct ProbeTally<'s> {
    index: &'s ProbeIndex,
    pub totals: ProbeTotals,
}

impl<'s> ProbeTally<'s> {
    pub fn new(index: &'s ProbeIndex) -> ProbeTally<'s> {
        ProbeTally {
            index,
            totals: ProbeTotals {
                enabled: !index.is_empty(),
                ..ProbeTotals::default()
            },
        }
    }

    /// Probes due at request `t`: (due, ok, results); also adds up excess and under fidelity.
    fn measure(
        &mut self,
        st: &State<'_, '_>,
        t: usize,
        active: Option<(usize, usize)>,
    ) -> (u64, u64, Vec<ProbeResult>) {
        let mut results = Vec::new();
        if !self.totals.enabled {
            return (0, 0, results);
        }
        let (mut due, mut ok) = (0u64, 0u64);
        let k = st.k();
        for (pi, id) in self.index.due_at(t) {
            due += 1;
            let present = self.index.present(
                pi,
                &st.applied_tiers()[..k],
                st.cuts(),
                active,
                st.summary(),
                st.p,
            );
            ok += u64::from(present);
            results.push(ProbeResult {
                id: id.to_owned(),
                ok: present,
            });
        }
        self.totals.pairs += due;
        self.totals.ok_pairs += ok;
        for e in 0..k {
            let o = self.index.oracle_tier(e);
            let a = st.applied(e);
            if a < o {
                self.totals.excess += st
                    .ep_tokens(e)
                    .saturating_sub(st.p.td(e, o).map_or(0, |_| st.tokens_at(e, o, None)));
            } else if a > o {
                self.totals.under += 1;
            }
        }
        (due, ok, results)
    }
}

/// The frame of the current request.
pub(crate) fn frame(
    st: &mut State<'_, '_>,
    m: Measured<'_>,
    price: &Price,
    probes: &mut ProbeTally<'_>,
) -> Frame {
    let t = st.now();
    let req = m.req;
    let budget = st.budget();
    let output = if m.not_made { 0 } else { req.usage.output };
    let cc = cache_cost::price_request(price, m.tokens, m.divergence, m.cache_fresh, output);
    // The policy's own summary call before this request, answered by the summary it wrote
    // (now the one shown): billed in this frame.
    let prev = st.conv[0].prefix();
    let sys_key = st.p.reqs.get(req.index).map_or(0, |r| r.sys_key);
    let call = m.compacted.map(|c| {
        compaction_call::price_simulated(price, st.p, c, st.summary_tokens(), (&prev, sys_key))
    });
    let mut tiers = TierStats::default();
    let stats = st.tier_stats();
    for tier in Tier::ALL {
        *tiers.get_mut(tier) = stats[tier.depth()];
    }
    if let Some((_, _, tok)) = m.active {
        tiers.full.count += 1;
        tiers.full.tokens += tok;
    }
    if let Some(call) = m.built {
        tiers = compaction_call::tiers(call);
    }
    // Counters count every violation in force; the list names those that began (or changed)
    // at this request, so long replays stay small.
    let mut violations = Vec::new();
    for e in st.take_new_violations() {
        let Some((floor, pins)) = st.violation(e) else {
            continue;
        };
        let ep = &st.p.episodes[e];
        if floor {
            violations.push(Violation {
                episode: ep.id.clone(),
                kind: ViolationKind::Floor,
                tier: st.applied(e),
                floor: Some(ep.floor),
                missing_pins: None,
            });
        }
        if pins > 0 {
            violations.push(Violation {
                episode: ep.id.clone(),
                kind: ViolationKind::Pin,
                tier: st.applied(e),
                floor: None,
                missing_pins: Some(pins),
            });
        }
    }
    let (probes_due, probes_ok, probe_results) =
        probes.measure(st, t, m.active.map(|(e, n, _)| (e, n)));
    let counts = std::mem::take(&mut st.counts);
    let mut held = counts.held_new;
    held.sort_unstable();
    let mut cut_new = counts.cut_new;
    cut_new.sort_unstable();
    cut_new.dedup();
    let cuts = st.cuts_list();
    let tail_only = cut_new
        .iter()
        // An episode dropped at the same time shows nothing: its cut is no news.
        .filter(|&&e| e >= st.k() || st.applied(e) == Tier::Full)
        .filter_map(|&e| {
            cuts.binary_search_by_key(&e, |c| c.episode)
                .ok()
                .map(|i| &cuts[i])
        })
        .map(|c| TailOnly {
            episode: st.p.episodes[c.episode].id.clone(),
            hidden: c.from,
            chunks: c.chunks,
            hidden_tokens: c.hidden_tokens,
            by: c.by,
        })
        .collect();
    Frame {
        request: t,
        time: req.time_created,
        status: req.status.as_str().to_owned(),
        synthetic_call: req.synthetic_call,
        boundaries: st.boundaries().to_vec(),
        tokens: m.tokens,
        budget,
        pressure: if budget > 0 {
            m.tokens as f64 / budget as f64
        } else {
            0.0
        },
        overflow: m.tokens.saturating_sub(budget),
        tiers,
        divergence: m.divergence,
        radius: m.tokens - m.divergence,
        cache_read: cc.cache_read,
        cache_write: cc.cache_write,
        uncached: cc.uncached,
        cost: cc.cost + call.as_ref().map_or(0.0, |c| c.cost),
        changes: counts.changes,
        deferred: m.waiting.deferred,
        dwell_blocks: m.waiting.dwell_blocked,
        emergencies: counts.emergencies,
        holds: counts.holds,
        held: held.iter().map(|&e| st.p.episodes[e].id.clone()).collect(),
        holding: counts
            .holding
            .iter()
            .map(|&e| st.p.episodes[e].id.clone())
            .collect(),
        floor_violations: st.floor_violations(),
        pin_violations: st.pin_violations(),
        violations,
        thrash: counts.thrash,
        prunes: m.prunes,
        tail_only,
        compaction: m.compacted.is_some(),
        compaction_call: call,
        probes_due,
        probes_ok,
        probes: probe_results,
        recorded: Recorded {
            input: req.usage.input,
            output: req.usage.output,
            cache_read: req.usage.cache_read,
            cache_write: req.usage.cache_write,
            prompt: super::prepare::recorded_prompt(st.p.trace, t),
        },
    }
}

/// The session summary from a pass's frames; `baseline` = (Σ radius, Σ cost) of `full` on the
/// same trace (None: this is `full`).
pub(crate) fn summary(out: &PassOutput, baseline: Option<(u64, f64)>) -> Summary {
    let frames = &out.frames;
    let n = frames.len() as u64;
    let sum = |f: fn(&Frame) -> u64| frames.iter().map(f).sum::<u64>();
    let tokens = sum(|f| f.tokens);
    let cache_read = sum(|f| f.cache_read);
    let radius = sum(|f| f.radius);
    // Every request's cost (a frame's includes the compaction call the policy made before it).
    let cost: f64 = frames.iter().map(|f| f.cost).sum();
    let changes = sum(|f| f.changes.len() as u64);
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
    err.follows_recording = frames.iter().all(|f| {
        // A recorded call left out shows as an empty frame where the agent sent something.
        let call_left_out = f.synthetic_call && f.tokens == 0 && f.recorded.prompt > 0;
        !f.compaction && !call_left_out && f.changes.iter().all(|c| c.reason == Reason::Compaction)
    });
    let pr = &out.probes;
    Summary {
        requests: n,
        mean_tokens: if n > 0 { tokens as f64 / n as f64 } else { 0.0 },
        max_overflow: frames.iter().map(|f| f.overflow).max().unwrap_or(0),
        overflow_requests: sum(|f| u64::from(f.overflow > 0)),
        overflow_tokens: sum(|f| f.overflow),
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
        thrash: sum(|f| f.thrash),
        holds: sum(|f| f.holds),
        deferred: sum(|f| f.deferred),
        dwell_blocks: sum(|f| f.dwell_blocks),
        emergencies: sum(|f| f.emergencies),
        floor_violations: sum(|f| f.floor_violations),
        pin_violations: sum(|f| f.pin_violations),
        prunes: sum(|f| f.prunes),
        synthetic_calls: out.synthetic_calls,
        probe_survival: (pr.pairs > 0).then(|| pr.ok_pairs as f64 / pr.pairs as f64),
        excess_fidelity_tokens: pr.enabled.then_some(pr.excess),
        under_fidelity_misses: pr.enabled.then_some(pr.under),
        recorded_error: err,
    }
}

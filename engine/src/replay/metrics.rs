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
use super::output::*;
use super::pass::PassOutput;
use super::probes::ProbeIndex;
use super::schedule::Waiting;
use super::state::State;
use crate::episode::Tier;
use crate::policy::kinds::Compacted;

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

/// Probe results as the pass goes, kept up to date with what changes: a probe is re-checked
/// when an episode holding its needles closes or changes (tier, cut, prunes), when the active
/// episode grows, or when the summary shown changes; never at every request. The same goes for
/// the oracle yardsticks, which are sums over the closed episodes of a per-episode term.
pub(crate) struct ProbeTally<'s> {
    index: &'s ProbeIndex,
    pub totals: ProbeTotals,
    /// Per probe: the rendered context answers it now (due or not).
    present: Vec<bool>,
    /// Probes of `index.due_order()` counted as due so far.
    next_due: usize,
    /// Due probes, and those of them answered.
    due: u64,
    ok: u64,
    /// The active (episode, chunks) and summary the statuses were last checked against.
    last_active: Option<(usize, usize)>,
    last_summary: u64,
    /// Per probe, the last request it was re-checked at (+1), so a request checks it once.
    stamp: Vec<usize>,
    /// Per closed episode: tokens shown above the oracle's tier, and shown below it; with
    /// their sums over the closed episodes.
    fidelity: Vec<(u64, bool)>,
    excess_now: u64,
    under_now: u64,
    #[cfg(test)]
    check: Option<tests::Reference>,
}

impl<'s> ProbeTally<'s> {
    pub fn new(index: &'s ProbeIndex) -> ProbeTally<'s> {
        let enabled = !index.is_empty();
        ProbeTally {
            index,
            totals: ProbeTotals {
                enabled,
                ..ProbeTotals::default()
            },
            // Nothing rendered yet answers anything.
            present: vec![false; index.len()],
            next_due: 0,
            due: 0,
            ok: 0,
            last_active: None,
            last_summary: 0,
            stamp: vec![0; index.len()],
            fidelity: Vec::new(),
            excess_now: 0,
            under_now: 0,
            #[cfg(test)]
            check: tests::reference(enabled),
        }
    }

    /// Probes at request `t`: (due, ok, the probes that became due or whose answer changed,
    /// by probe index); also adds up the totals and the excess and under fidelity.
    fn measure(
        &mut self,
        st: &mut State<'_, '_>,
        t: usize,
        active: Option<(usize, usize)>,
    ) -> (u64, u64, Vec<ProbeChange>) {
        let touched = st.take_touched();
        if !self.totals.enabled {
            return (0, 0, Vec::new());
        }
        let k = st.closed_count();
        for &e in &touched {
            if e < k {
                self.refresh_fidelity(st, e);
            }
        }
        let mut recheck: Vec<usize> = Vec::new();
        let stamp = t + 1;
        let mut add = |list: &[usize], stamps: &mut Vec<usize>| {
            for &pi in list {
                if stamps[pi] != stamp {
                    stamps[pi] = stamp;
                    recheck.push(pi);
                }
            }
        };
        for &e in &touched {
            add(self.index.by_episode(e), &mut self.stamp);
        }
        if active != self.last_active {
            for (e, _) in [self.last_active, active].into_iter().flatten() {
                add(self.index.by_episode(e), &mut self.stamp);
            }
            self.last_active = active;
        }
        if st.summary_id() != self.last_summary {
            add(self.index.summary_sensitive(), &mut self.stamp);
            self.last_summary = st.summary_id();
        }
        let mut changed: Vec<(usize, bool)> = Vec::new();
        for pi in recheck {
            let now = self.index.present(
                pi,
                &st.applied_tiers()[..k],
                st.cuts(),
                active,
                st.summary(),
                st.p,
            );
            if now != self.present[pi] {
                self.present[pi] = now;
                // A probe already due changes its answer; one due from here on is listed below.
                if self.index.probe(pi).1 < t {
                    if now {
                        self.ok += 1;
                    } else {
                        self.ok -= 1;
                    }
                    changed.push((pi, now));
                }
            }
        }
        let order = self.index.due_order();
        while let Some(&pi) = order.get(self.next_due) {
            if self.index.probe(pi).1 > t {
                break;
            }
            self.next_due += 1;
            self.due += 1;
            self.ok += u64::from(self.present[pi]);
            changed.push((pi, self.present[pi]));
        }
        changed.sort_unstable();
        self.totals.pairs += self.due;
        self.totals.ok_pairs += self.ok;
        self.totals.excess += self.excess_now;
        self.totals.under += self.under_now;
        #[cfg(test)]
        if let Some(r) = &mut self.check {
            r.check(self.index, st, t, active, &changed, (self.due, self.ok));
            r.check_fidelity(self.index, st, (self.excess_now, self.under_now));
        }
        let changes = changed
            .into_iter()
            .map(|(pi, ok)| ProbeChange {
                id: self.index.probe(pi).0.to_owned(),
                ok,
            })
            .collect();
        (self.due, self.ok, changes)
    }

    /// Re-measure closed episode `e` against the oracle's tier.
    fn refresh_fidelity(&mut self, st: &State<'_, '_>, e: usize) {
        if self.fidelity.len() <= e {
            self.fidelity.resize(e + 1, (0, false));
        }
        let (old_excess, old_under) = self.fidelity[e];
        let term = fidelity(self.index, st, e);
        self.excess_now = self.excess_now - old_excess + term.0;
        self.under_now = self.under_now - u64::from(old_under) + u64::from(term.1);
        self.fidelity[e] = term;
    }
}

/// Closed episode `e` against the oracle's tier: (tokens shown above it, shown below it).
fn fidelity(index: &ProbeIndex, st: &State<'_, '_>, e: usize) -> (u64, bool) {
    let o = index.oracle_tier(e);
    let a = st.applied(e);
    if a < o {
        let at_oracle =
            st.p.tier_data_at(e, o)
                .map_or(0, |_| st.tokens_at(e, o, None));
        (st.ep_tokens(e).saturating_sub(at_oracle), false)
    } else {
        (0, a > o)
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
    let (probes_due, probes_ok, probe_changes) =
        probes.measure(st, t, m.active.map(|(e, n, _)| (e, n)));
    let counts = std::mem::take(&mut st.counts);
    let (holds, held, hold_ends) = st.hold_counts();
    let mut cut_new = counts.cut_new;
    cut_new.sort_unstable();
    cut_new.dedup();
    let cuts = st.cuts_list();
    let tail_only = cut_new
        .iter()
        // An episode dropped at the same time shows nothing: its cut is no news.
        .filter(|&&e| e >= st.closed_count() || st.applied(e) == Tier::Full)
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
        radius_cost: cache_cost::radius_price(price, m.tokens - m.divergence),
        cache_read: cc.cache_read,
        cache_write: cc.cache_write,
        uncached: cc.uncached,
        cost: cc.cost + call.as_ref().map_or(0.0, |c| c.cost),
        changes: counts.changes,
        deferred: m.waiting.deferred,
        dwell_blocks: m.waiting.dwell_blocked,
        emergencies: counts.emergencies,
        holds,
        held: held.iter().map(|&e| st.p.episodes[e].id.clone()).collect(),
        hold_starts: held,
        hold_ends,
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
        probe_changes,
        recorded: Recorded {
            input: req.usage.input,
            output: req.usage.output,
            cache_read: req.usage.cache_read,
            cache_write: req.usage.cache_write,
            prompt: super::prepare::recorded_prompt(st.p.trace, t),
        },
    }
}

/// The neutral start of an `f64` sum, as `Iterator::sum` has it, so a running sum gives the
/// very bits the sum of the frames' values gave.
fn sum_start() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// The session summary, added up frame by frame as the pass hands them out (the frames need
/// not be kept): every total is the sum of what the frames show.
pub(crate) struct SummaryAcc {
    n: u64,
    tokens: u64,
    cache_read: u64,
    radius: u64,
    radius_cost: f64,
    cost: f64,
    changes: u64,
    max_overflow: u64,
    overflow_requests: u64,
    overflow_tokens: u64,
    thrash: u64,
    holds: u64,
    deferred: u64,
    dwell_blocks: u64,
    emergencies: u64,
    floor_violations: u64,
    pin_violations: u64,
    prunes: u64,
    err: RecordedError,
    pct_sum: f64,
    delta: i64,
    /// Every frame so far sends what the agent sent (see [`RecordedError::follows_recording`]).
    follows_recording: bool,
    /// The last frame was the agent's summary call: the agent's next request starts from its
    /// summary, so a policy that follows the recording compacts there (or at the call).
    after_recorded_summary: bool,
}

impl Default for SummaryAcc {
    fn default() -> Self {
        SummaryAcc {
            n: 0,
            tokens: 0,
            cache_read: 0,
            radius: 0,
            radius_cost: 0.0,
            cost: sum_start(),
            changes: 0,
            max_overflow: 0,
            overflow_requests: 0,
            overflow_tokens: 0,
            thrash: 0,
            holds: 0,
            deferred: 0,
            dwell_blocks: 0,
            emergencies: 0,
            floor_violations: 0,
            pin_violations: 0,
            prunes: 0,
            err: RecordedError::default(),
            pct_sum: 0.0,
            delta: 0,
            follows_recording: true,
            after_recorded_summary: false,
        }
    }
}

impl SummaryAcc {
    pub fn add(&mut self, f: &Frame) {
        self.n += 1;
        self.tokens += f.tokens;
        self.cache_read += f.cache_read;
        self.radius += f.radius;
        self.radius_cost += f.radius_cost;
        // Every request's cost (a frame's includes the compaction call the policy made before it).
        self.cost += f.cost;
        self.changes += f.changes.len() as u64;
        self.max_overflow = self.max_overflow.max(f.overflow);
        self.overflow_requests += u64::from(f.overflow > 0);
        self.overflow_tokens += f.overflow;
        self.thrash += f.thrash;
        self.holds += f.holds;
        self.deferred += f.deferred;
        self.dwell_blocks += f.dwell_blocks;
        self.emergencies += f.emergencies;
        self.floor_violations += f.floor_violations;
        self.pin_violations += f.pin_violations;
        self.prunes += f.prunes;
        if !f.synthetic_call && f.recorded.prompt > 0 {
            let pct = (f.tokens as f64 - f.recorded.prompt as f64).abs() / f.recorded.prompt as f64
                * 100.0;
            self.err.requests += 1;
            self.pct_sum += pct;
            self.err.max_abs_pct = self.err.max_abs_pct.max(pct);
            self.delta += f.tokens as i64 - f.recorded.prompt as i64;
        }
        // A recorded call left out shows as an empty frame where the agent sent something.
        let call_left_out = f.synthetic_call && f.tokens == 0 && f.recorded.prompt > 0;
        // A policy that keeps the history the agent compacted away (retention under a budget
        // the recording never reached) changes no tier, yet sends something else from there on.
        let compacted_here = f.changes.iter().any(|c| c.reason == Reason::Compaction);
        let kept_what_the_agent_compacted =
            self.after_recorded_summary && !f.synthetic_call && !compacted_here;
        self.follows_recording &= !f.compaction
            && !call_left_out
            && !kept_what_the_agent_compacted
            && f.changes.iter().all(|c| c.reason == Reason::Compaction);
        // Whether the policy made the agent's summary call or left it out, the agent's next
        // request started from its summary.
        self.after_recorded_summary = f.synthetic_call && !compacted_here;
    }

    /// (Σ radius, what it cost above cache reads) so far: what a replay measures its `full`
    /// baseline by.
    pub fn radius_cost(&self) -> (u64, f64) {
        (self.radius, self.radius_cost)
    }

    /// The summary; `baseline` = [`SummaryAcc::radius_cost`] of `full` on the same trace (None:
    /// this is `full`).
    pub fn finish(self, out: &PassOutput, baseline: Option<(u64, f64)>) -> Summary {
        let n = self.n;
        let (base_radius, base_cost) = baseline.unwrap_or((self.radius, self.radius_cost));
        let mut err = self.err;
        if err.requests > 0 {
            err.mean_abs_pct = self.pct_sum / err.requests as f64;
        }
        err.total_delta = self.delta;
        err.follows_recording = self.follows_recording;
        let pr = &out.probes;
        Summary {
            requests: n,
            mean_tokens: if n > 0 {
                self.tokens as f64 / n as f64
            } else {
                0.0
            },
            max_overflow: self.max_overflow,
            overflow_requests: self.overflow_requests,
            overflow_tokens: self.overflow_tokens,
            cost: self.cost,
            cache_hit_ratio: if self.tokens > 0 {
                self.cache_read as f64 / self.tokens as f64
            } else {
                0.0
            },
            divergence_cost: DivergenceCost {
                tokens: self.radius as i64 - base_radius as i64,
                dollars: self.radius_cost - base_cost,
            },
            changes: self.changes,
            switches_per_100: if n > 0 {
                self.changes as f64 * 100.0 / n as f64
            } else {
                0.0
            },
            thrash: self.thrash,
            holds: self.holds,
            deferred: self.deferred,
            dwell_blocks: self.dwell_blocks,
            emergencies: self.emergencies,
            floor_violations: self.floor_violations,
            pin_violations: self.pin_violations,
            prunes: self.prunes,
            synthetic_calls: out.synthetic_calls,
            probe_survival: (pr.pairs > 0).then(|| pr.ok_pairs as f64 / pr.pairs as f64),
            excess_fidelity_tokens: pr.enabled.then_some(pr.excess),
            under_fidelity_misses: pr.enabled.then_some(pr.under),
            recorded_error: err,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The incremental tally against a brute-force re-check of every due probe and every closed
    //! episode at every request (what the tally did before it was incremental).

    use std::cell::Cell;

    use super::*;

    thread_local! {
        /// Tallies created on this thread check themselves at every request.
        static CHECK: Cell<bool> = const { Cell::new(false) };
    }

    /// Run `f` with every probe tally on this thread checked against the brute force; returns
    /// how many requests were checked.
    pub(crate) fn checked<T>(f: impl FnOnce() -> T) -> (T, u64) {
        CHECK.with(|c| c.set(true));
        CHECKED.with(|c| c.set(0));
        let out = f();
        CHECK.with(|c| c.set(false));
        (out, CHECKED.with(Cell::get))
    }

    thread_local! {
        static CHECKED: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn reference(enabled: bool) -> Option<Reference> {
        (enabled && CHECK.with(Cell::get)).then(Reference::default)
    }

    /// The brute force's previous answers, by probe (None: not due).
    #[derive(Default)]
    pub(crate) struct Reference {
        prev: Vec<Option<bool>>,
    }

    impl Reference {
        pub(crate) fn check(
            &mut self,
            index: &ProbeIndex,
            st: &State<'_, '_>,
            t: usize,
            active: Option<(usize, usize)>,
            changed: &[(usize, bool)],
            (due, ok): (u64, u64),
        ) {
            self.prev.resize(index.len(), None);
            let k = st.closed_count();
            let (mut bdue, mut bok) = (0u64, 0u64);
            let mut expect = Vec::new();
            for (pi, _) in index.due_at(t) {
                let present = index.present(
                    pi,
                    &st.applied_tiers()[..k],
                    st.cuts(),
                    active,
                    st.summary(),
                    st.p,
                );
                bdue += 1;
                bok += u64::from(present);
                if self.prev[pi] != Some(present) {
                    expect.push((pi, present));
                }
                self.prev[pi] = Some(present);
            }
            assert_eq!((due, ok), (bdue, bok), "request {t}: (due, ok)");
            assert_eq!(changed, &expect[..], "request {t}: probe changes");
            CHECKED.with(|c| c.set(c.get() + 1));
        }

        pub(crate) fn check_fidelity(
            &self,
            index: &ProbeIndex,
            st: &State<'_, '_>,
            (excess, under): (u64, u64),
        ) {
            let (mut be, mut bu) = (0u64, 0u64);
            for e in 0..st.closed_count() {
                let (x, u) = fidelity(index, st, e);
                be += x;
                bu += u64::from(u);
            }
            assert_eq!((excess, under), (be, bu), "request {}: fidelity", st.now());
        }
    }
}

#[cfg(test)]
mod incremental {
    //! The incremental probe tally agrees with the brute force at every request, on a recording
    //! with a probes sidecar and on a generated session with probes, under every built-in
    //! policy, with and without a budget that forces changes, compactions and cuts.

    use std::path::Path;

    use crate::session::{self, LoadOptions, LoadedSession};

    fn load(path: &Path, cache: &Path) -> LoadedSession {
        session::load(&LoadOptions {
            path: Some(path.to_owned()),
            token_cache_dir: Some(cache.to_owned()),
            ..LoadOptions::default()
        })
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn every_policy(s: &LoadedSession, budgets: &[Option<u64>]) {
        assert!(!s.probes.is_empty(), "the session has probes");
        let mut policies: Vec<crate::policy::Policy> = [
            "full",
            "truncate",
            "opencode",
            "claude-code",
            "codex",
            "age",
            "retention",
            "decay",
            "oracle",
            "oracle-legal",
        ]
        .iter()
        .map(|n| crate::policy::load(n, &[]).expect("built-in policy"))
        .collect();
        policies.push(
            crate::policy::load(
                "retention",
                &[("relevance_source".to_owned(), "probes".to_owned())],
            )
            .expect("retention with probes"),
        );
        for p in &policies {
            for &b in budgets {
                let (r, checked) = super::tests::checked(|| crate::replay::replay_session(s, p, b));
                assert!(
                    checked >= r.frames.len() as u64 && !r.frames.is_empty(),
                    "{} {b:?}: every request was checked",
                    p.name
                );
            }
        }
    }

    #[test]
    fn incremental_tally_matches_brute_force_on_a_recording() {
        let cache = tempfile::tempdir().expect("tempdir");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample-traces/M1.json");
        let s = load(&path, cache.path());
        every_policy(&s, &[None, Some(9000), Some(4000)]);
    }

    #[test]
    fn incremental_tally_matches_brute_force_on_a_generated_session() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = crate::fixture::FixtureConfig {
            seed: 7,
            requests: 300,
            episodes: Some(60),
            probe_density: 1.0,
            name: Some("fx".into()),
            ..crate::fixture::FixtureConfig::default()
        };
        crate::fixture::write_fixture(&cfg, dir.path()).expect("fixture");
        let s = load(&dir.path().join("fx.json"), dir.path());
        every_policy(&s, &[None, Some(20_000), Some(6000)]);
    }
}

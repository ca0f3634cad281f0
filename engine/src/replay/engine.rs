//! The replay loop (MODEL §3): one pass over the requests of a trace, keeping desired and applied
//! tiers apart, applying changes at boundaries, and measuring each rendered context.
//!
//! The rendered context of a request is: the system chunk of its (agent, model), an optional
//! compaction summary, each closed episode at its applied tier, then the active episode's
//! chunks before the request's message. Closing an episode at `full` only appends, so the
//! engine keeps running sums (a Fenwick tree over closed episodes) and finds the divergence from
//! the first episode changed since the conversation's previous request; per request the work is
//! O(changes · log episodes), which is what lets 10,000 × 2,000 replays run in milliseconds.

use std::collections::{BTreeMap, BTreeSet};

use super::cache_cost::Price;
use super::params::{Boundary, Params};
use super::prepare::{Filter, Prep};
use super::probes::ProbeIndex;
use super::types::*;
use crate::episode::Tier;
use crate::policy::PolicyKind;

/// A Fenwick tree of token counts per episode (prefix sums in O(log n)).
struct Fenwick(Vec<i64>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }
    fn add(&mut self, i: usize, d: i64) {
        let mut i = i + 1;
        while i < self.0.len() {
            self.0[i] += d;
            i += i & i.wrapping_neg();
        }
    }
    /// Σ of entries `0..i`.
    fn prefix(&self, i: usize) -> i64 {
        let mut i = i.min(self.0.len() - 1);
        let mut s = 0;
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// What a conversation's previous request rendered, for divergence and cache.
#[derive(Default, Clone)]
struct Conv {
    has_prev: bool,
    prev_tokens: u64,
    prev_time: i64,
    prev_sys: u64,
    prev_summary: u64,
    prev_k: usize,
    prev_active: usize,
    prev_active_count: usize,
    /// The first episode changed since then, with its tier and cut before the change.
    pending: Option<(usize, Tier, usize)>,
}

impl Conv {
    /// What a builder-sized request shares with this conversation's previous one.
    fn prefix(&self) -> Option<(u64, u64)> {
        self.has_prev.then_some((self.prev_sys, self.prev_tokens))
    }
}

/// The output of one pass (before the summary is assembled).
pub(crate) struct Pass {
    pub frames: Vec<Frame>,
    pub applied: TierMatrix,
    pub desired: TierMatrix,
    pub render_states: Vec<RenderState>,
    pub synthetic_calls: u64,
    pub excess: Option<u64>,
    pub under: Option<u64>,
    pub probe_pairs: (u64, u64),
}

pub(crate) struct Engine<'p, 'a> {
    p: &'p Prep<'a>,
    par: &'p Params,
    probes: &'p ProbeIndex,
    price: &'p Price,
    budget: u64,
    /// Keep the tier matrices and render states (off for the `full` baseline of a replay).
    pub(crate) keep_views: bool,
    n: usize,
    k: usize,
    applied: Vec<Tier>,
    desired: Vec<Tier>,
    /// The matrix rows in the making (tier codes, active, future).
    row_applied: Vec<u8>,
    row_desired: Vec<u8>,
    want_reason: Vec<Reason>,
    cut: Vec<usize>,
    closed_at: Vec<usize>,
    last_change: Vec<Option<(usize, i8)>>,
    ep_tok: Vec<u64>,
    des_tok: Vec<u64>,
    fen: Fenwick,
    applied_sum: u64,
    desired_sum: u64,
    stats: [TierStat; 5],
    pruned: Vec<Vec<(usize, u64)>>,
    next_prune: usize,
    pending: BTreeSet<usize>,
    summary: Option<SummaryPiece>,
    summary_id: u64,
    summary_tokens: u64,
    /// Episodes replaced by the current summary, with the pins the summary text lacks.
    summarised: BTreeMap<usize, u64>,
    violations: BTreeMap<usize, (bool, u64)>,
    floor_count: u64,
    pin_sum: u64,
    /// Episodes whose violation began or changed at this request.
    viol_new: Vec<usize>,
    /// First rendered chunk of cut episodes, by episode.
    cuts_list: Vec<(usize, usize)>,
    /// retention: closed episodes that can still go lower, in victim order.
    demotable: BTreeSet<(u8, bool, usize)>,
    in_demotable: Vec<Option<(u8, bool, usize)>>,
    held_stamp: Vec<Option<usize>>,
    held_count: u64,
    held_new: Vec<usize>,
    conv: [Conv; 2],
    // relevance
    rel_count: Vec<u32>,
    // truncate
    trunc_next: usize,
    // decay
    imp_factor: Vec<f64>,
    folded: bool,
    m0_tokens: u64,
    m1_tokens: u64,
    last_sys: Option<u64>,
    // flat
    compaction_in_effect: Option<usize>,
    /// The history tokens of the compaction call simulated at this request.
    sim_call: Option<u64>,
    /// Where the model's view starts (a v2-loop request sees no v1 message).
    context_from: usize,
    sim_number: usize,
    // per-request scratch
    now: usize,
    changes: Vec<Change>,
    thrash: u64,
    emergencies: u64,
    boundaries: Vec<&'static str>,
}

impl<'p, 'a> Engine<'p, 'a> {
    pub fn new(
        p: &'p Prep<'a>,
        par: &'p Params,
        probes: &'p ProbeIndex,
        price: &'p Price,
        budget: u64,
    ) -> Self {
        let n = p.episodes.len();
        Engine {
            p,
            par,
            probes,
            price,
            budget,
            keep_views: true,
            n,
            k: 0,
            applied: vec![Tier::Full; n],
            desired: vec![Tier::Full; n],
            row_applied: vec![TierMatrix::FUTURE_CODE; n],
            row_desired: vec![TierMatrix::FUTURE_CODE; n],
            want_reason: vec![Reason::Pressure; n],
            cut: vec![0; n],
            closed_at: vec![0; n],
            last_change: vec![None; n],
            ep_tok: vec![0; n],
            des_tok: vec![0; n],
            fen: Fenwick::new(n),
            applied_sum: 0,
            desired_sum: 0,
            stats: [TierStat::default(); 5],
            pruned: vec![Vec::new(); n],
            next_prune: 0,
            pending: BTreeSet::new(),
            summary: None,
            summary_id: 0,
            summary_tokens: 0,
            summarised: BTreeMap::new(),
            violations: BTreeMap::new(),
            floor_count: 0,
            pin_sum: 0,
            viol_new: Vec::new(),
            cuts_list: Vec::new(),
            demotable: BTreeSet::new(),
            in_demotable: vec![None; n],
            held_stamp: vec![None; n],
            held_count: 0,
            held_new: Vec::new(),
            conv: [Conv::default(), Conv::default()],
            rel_count: vec![0; n],
            trunc_next: 0,
            imp_factor: Vec::new(),
            folded: false,
            m0_tokens: 0,
            m1_tokens: 0,
            last_sys: None,
            compaction_in_effect: None,
            sim_call: None,
            context_from: 0,
            sim_number: 0,
            now: 0,
            changes: Vec::new(),
            thrash: 0,
            emergencies: 0,
            boundaries: Vec::new(),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Tokens and chunks
    // ----------------------------------------------------------------------------------------

    /// Tokens of episode `e` at tier `t` with its cut and the prunes applied so far; `upto`
    /// limits the full tier to its first chunks (the active episode).
    fn tokens_at(&self, e: usize, t: Tier, upto: Option<usize>) -> u64 {
        if t == Tier::Dropped {
            return 0;
        }
        let Some(td) = self.p.td(e, t) else {
            return 0;
        };
        if self.p.effective(e, t) != Tier::Full
            || (upto.is_none() && self.cut[e] == 0 && self.pruned[e].is_empty())
        {
            return td.tokens();
        }
        let end = upto.unwrap_or(td.len()).min(td.len());
        let from = self.cut[e].min(end);
        let pruned: u64 = self.pruned[e]
            .iter()
            .filter(|(pos, _)| *pos >= from && *pos < end)
            .map(|(_, d)| d)
            .sum();
        (td.prefix[end] - td.prefix[from]).saturating_sub(pruned)
    }

    /// Included full-tier chunks of the active episode before the request's message.
    fn active_count(&self, e: usize, pos: (usize, u32)) -> usize {
        self.p
            .td(e, Tier::Full)
            .map_or(0, |td| td.pos.partition_point(|p| *p < pos))
    }

    /// (hash, tokens) of the chunks an episode renders at a tier, with prunes as of `time`.
    pub(crate) fn chunk_list(
        p: &Prep<'_>,
        apply_prunes: bool,
        e: usize,
        t: Tier,
        from: usize,
        upto: Option<usize>,
        time: i64,
    ) -> Vec<(u64, u64, usize)> {
        let mut out = Vec::new();
        if t == Tier::Dropped {
            return out;
        }
        let eff = p.effective(e, t);
        let (Some(td), Some(rep)) = (p.td(e, t), p.episodes[e].representation(eff)) else {
            return out;
        };
        let full = eff == Tier::Full;
        let end = upto.unwrap_or(td.len()).min(td.len());
        let from = if full { from.min(end) } else { 0 };
        for &ci in &td.idx[from..end] {
            let c = &rep.chunks[ci as usize];
            match &c.pruned {
                Some(pc) if full && apply_prunes && pc.time_compacted <= time => {
                    out.push((pc.hash, u64::from(pc.tokens), ci as usize))
                }
                _ => out.push((c.hash, u64::from(c.tokens), ci as usize)),
            }
        }
        out
    }

    // ----------------------------------------------------------------------------------------
    // State changes
    // ----------------------------------------------------------------------------------------

    /// Remember, per conversation, the first episode changed since its previous request.
    fn mark_changed(&mut self, e: usize) {
        let (tier, cut) = (self.applied[e], self.cut[e]);
        for c in &mut self.conv {
            match c.pending {
                Some((pe, _, _)) if pe <= e => {}
                _ => c.pending = Some((e, tier, cut)),
            }
        }
    }

    fn detach(&mut self, e: usize) {
        let t = self.applied[e];
        let s = &mut self.stats[t.depth()];
        s.count -= 1;
        s.tokens -= self.ep_tok[e];
        self.fen.add(e, -(self.ep_tok[e] as i64));
        self.applied_sum -= self.ep_tok[e];
        self.desired_sum -= self.des_tok[e];
    }

    fn attach(&mut self, e: usize) {
        self.row_applied[e] = TierMatrix::code(self.applied[e]);
        self.row_desired[e] = TierMatrix::code(self.desired[e]);
        let tok = self.tokens_at(e, self.applied[e], None);
        let dtok = self.tokens_at(e, self.desired[e], None);
        self.ep_tok[e] = tok;
        self.des_tok[e] = dtok;
        let s = &mut self.stats[self.applied[e].depth()];
        s.count += 1;
        s.tokens += tok;
        self.fen.add(e, tok as i64);
        self.applied_sum += tok;
        self.desired_sum += dtok;
        self.refresh_violation(e);
    }

    fn refresh_violation(&mut self, e: usize) {
        let ep = &self.p.episodes[e];
        let t = self.applied[e];
        let floor = t.depth() > ep.floor.depth();
        let pins = match self.summarised.get(&e) {
            Some(missing) => *missing,
            None => self.p.eps[e].missing_pins[self.p.effective(e, t).depth()],
        };
        let old = self.violations.get(&e).copied();
        if let Some((f, p)) = old {
            self.floor_count -= u64::from(f);
            self.pin_sum -= p;
        }
        if floor || pins > 0 {
            self.floor_count += u64::from(floor);
            self.pin_sum += pins;
            self.violations.insert(e, (floor, pins));
            if old != Some((floor, pins)) {
                self.viol_new.push(e);
            }
        } else if old.is_some() {
            self.violations.remove(&e);
        }
        self.refresh_demotable(e);
    }

    /// Keep `demotable` (retention's victims in order) in step with the desired tiers.
    fn refresh_demotable(&mut self, e: usize) {
        if self.par.kind != PolicyKind::Progressive || self.par.age_driver {
            return;
        }
        if let Some(key) = self.in_demotable[e].take() {
            self.demotable.remove(&key);
        }
        if e < self.k && self.next_lower(e, self.desired[e]).is_some() {
            let key = self.victim_key(e);
            self.demotable.insert(key);
            self.in_demotable[e] = Some(key);
        }
    }

    /// Victim order: discardable before compressible (pins last), not relevant before
    /// relevant, then oldest first.
    fn victim_key(&self, e: usize) -> (u8, bool, usize) {
        let class_rank = match self.p.episodes[e].class {
            crate::episode::RetentionClass::Discardable => 0,
            crate::episode::RetentionClass::Compressible => 1,
            crate::episode::RetentionClass::Pin => 2,
        };
        (class_rank, self.rel_count[e] > 0, e)
    }

    /// Count a hold of `e` at this request (listed when it was not held at the previous one).
    fn hold(&mut self, e: usize) {
        if self.held_stamp[e] == Some(self.now) {
            return;
        }
        let continuing = self.now > 0 && self.held_stamp[e] == Some(self.now - 1);
        self.held_stamp[e] = Some(self.now);
        self.held_count += 1;
        if !continuing {
            self.held_new.push(e);
        }
    }

    fn close(&mut self, e: usize) {
        self.applied[e] = Tier::Full;
        self.desired[e] = Tier::Full;
        self.closed_at[e] = self.now;
        self.ep_tok[e] = 0;
        self.des_tok[e] = 0;
        self.k = e + 1;
        self.attach(e);
        if self.par.kind == PolicyKind::Decay {
            self.m1_tokens += self.ep_tok[e];
        }
    }

    /// Set the desired tier of a closed episode.
    fn want(&mut self, e: usize, t: Tier, reason: Reason) {
        let t = self.p.effective(e, t);
        if self.desired[e] == t {
            return;
        }
        self.desired_sum -= self.des_tok[e];
        self.desired[e] = t;
        self.row_desired[e] = TierMatrix::code(t);
        self.des_tok[e] = self.tokens_at(e, t, None);
        self.desired_sum += self.des_tok[e];
        self.want_reason[e] = reason;
        if self.desired[e] != self.applied[e] {
            self.pending.insert(e);
        } else {
            self.pending.remove(&e);
        }
        self.refresh_demotable(e);
    }

    /// Apply the desired tier of `e` now.
    fn apply(&mut self, e: usize, how: &str) {
        let (from, to) = (self.applied[e], self.desired[e]);
        self.pending.remove(&e);
        if from == to {
            return;
        }
        self.mark_changed(e);
        self.detach(e);
        self.applied[e] = to;
        self.attach(e);
        let dir: i8 = if to > from { 1 } else { -1 };
        if let Some((r, d)) = self.last_change[e] {
            if d == -dir && self.now - r <= self.par.thrash_window {
                self.thrash += 1;
            }
        }
        self.last_change[e] = Some((self.now, dir));
        self.changes.push(Change {
            episode: self.p.episodes[e].id.clone(),
            from,
            to,
            reason: self.want_reason[e],
            applied: how.to_owned(),
        });
    }

    /// Want and apply at once.
    fn set_now(&mut self, e: usize, t: Tier, reason: Reason, how: &str) {
        self.want(e, t, reason);
        self.apply(e, how);
    }

    /// Cut the full tier of `e` to start at included chunk `from` (a recorded kept tail).
    fn set_cut(&mut self, e: usize, from: usize) {
        if self.cut[e] == from {
            return;
        }
        match self.cuts_list.binary_search_by_key(&e, |(x, _)| *x) {
            Ok(i) => self.cuts_list[i].1 = from,
            Err(i) => self.cuts_list.insert(i, (e, from)),
        }
        self.mark_changed(e);
        if e < self.k {
            self.detach(e);
            self.cut[e] = from;
            self.attach(e);
        } else {
            self.cut[e] = from;
        }
    }

    /// The deepest tier at or above `t` that the policy may show.
    fn clamp(&self, e: usize, t: Tier) -> Tier {
        if !self.par.respect_floors {
            return self.p.effective(e, t);
        }
        let legal = &self.p.eps[e].legal;
        legal
            .iter()
            .rev()
            .find(|l| **l <= t)
            .copied()
            .unwrap_or(legal[0])
    }

    fn next_lower(&self, e: usize, t: Tier) -> Option<Tier> {
        let list = if self.par.respect_floors {
            &self.p.eps[e].legal
        } else {
            &self.p.eps[e].avail
        };
        list.iter().find(|x| **x > t).copied()
    }

    fn next_higher(&self, e: usize, t: Tier) -> Option<Tier> {
        self.p.eps[e].avail.iter().rev().find(|x| **x < t).copied()
    }

    // ----------------------------------------------------------------------------------------
    // The pass
    // ----------------------------------------------------------------------------------------

    pub fn run(mut self) -> Pass {
        let nreq = self.p.reqs.len();
        let mut frames = Vec::with_capacity(nreq);
        let cap = if self.keep_views { nreq } else { 0 };
        let mut applied_m = TierMatrix::with_capacity(self.n, cap);
        let mut desired_m = TierMatrix::with_capacity(self.n, cap);
        let mut render_states = Vec::with_capacity(nreq);
        let mut synthetic = 0u64;
        let has_probes = !self.probes.is_empty();
        let (mut excess, mut under) = (0u64, 0u64);
        let (mut probe_ok_pairs, mut probe_pairs) = (0u64, 0u64);
        let window = self.par.relevance_window;
        for t in 0..nreq {
            self.now = t;
            self.changes.clear();
            self.held_count = 0;
            self.held_new.clear();
            self.viol_new.clear();
            self.thrash = 0;
            self.emergencies = 0;
            let rq = &self.p.reqs[t];
            let (conv_i, active, time, sys_key) = (rq.conv, rq.active, rq.time, rq.sys_key);
            let sys = rq.sys_tokens;
            let req = &self.p.trace.requests[t];
            if req.synthetic_call {
                synthetic += 1;
            }
            // 1. Close episodes.
            while self.k < active.min(self.n) {
                let e = self.k;
                self.close(e);
            }
            // A request of OpenCode's v2 loop never saw the session's v1 history.
            let from = self.p.context_start(rq.msg);
            if from > self.context_from {
                self.context_from = from;
                for e in 0..(self.k + 1).min(self.n) {
                    self.cut_before(e, from);
                }
            }
            // Prunes recorded up to this request's start.
            let mut prunes = 0u64;
            if self.par.apply_prunes {
                while let Some(ev) = self.p.prunes.get(self.next_prune).copied() {
                    if ev.time > time {
                        break;
                    }
                    self.next_prune += 1;
                    let e = ev.episode as usize;
                    prunes += 1;
                    self.mark_changed(e);
                    if e < self.k {
                        self.detach(e);
                        self.pruned[e].push((ev.pos as usize, ev.delta));
                        self.attach(e);
                    } else {
                        self.pruned[e].push((ev.pos as usize, ev.delta));
                    }
                }
            }
            // Relevance window (t − w, t): add request t − 1, remove t − 1 − w.
            if !self.par.relevance_probes && window > 0 {
                if t >= 1 {
                    for &e in &self.p.reqs[t - 1].touched {
                        let e = e as usize;
                        self.rel_count[e] += 1;
                        if self.rel_count[e] == 1 {
                            self.refresh_demotable(e);
                        }
                    }
                }
                if t > window {
                    for &e in &self.p.reqs[t - 1 - window].touched {
                        let e = e as usize;
                        self.rel_count[e] -= 1;
                        if self.rel_count[e] == 0 {
                            self.refresh_demotable(e);
                        }
                    }
                }
            } else if self.par.relevance_probes {
                let due: Vec<usize> = self.probes.needed_from(t).collect();
                for e in due {
                    self.rel_count[e] += 1;
                    if self.rel_count[e] == 1 {
                        self.refresh_demotable(e);
                    }
                }
            }
            // Boundaries.
            let c = &self.conv[conv_i];
            let gap_ok = c.has_prev && time - c.prev_time <= self.par.ttl_ms;
            self.boundaries.clear();
            self.boundaries.push("request");
            if rq.user_turn {
                self.boundaries.push("user-turn");
            }
            if !gap_ok {
                self.boundaries.push("cache-expiry");
            }
            if rq.milestone {
                self.boundaries.push("milestone");
            }
            let active_n = if active < self.n {
                self.active_count(active, rq.pos)
            } else {
                0
            };
            let active_tok = if active < self.n {
                self.tokens_at(active, Tier::Full, Some(active_n))
            } else {
                0
            };
            // 2–3. Decide and schedule. A recorded compaction's summary call is a side call with
            // its own, atypically small context: counterfactual policies hold their schedule
            // through it, or its low pressure would promote what the next step demotes again.
            let mut compaction = false;
            let hold_schedule = req.synthetic_call && self.par.kind != PolicyKind::Flat;
            match self.par.kind {
                _ if hold_schedule => {}
                PolicyKind::Full => {}
                PolicyKind::Truncate => self.truncate(sys + active_tok),
                PolicyKind::Progressive if self.par.age_driver => self.age(),
                PolicyKind::Progressive => self.retention(sys + active_tok),
                PolicyKind::Oracle => self.oracle(),
                PolicyKind::Decay => self.decay(sys, sys_key, gap_ok, active_tok),
                PolicyKind::Flat if self.par.recorded => self.flat_recorded(t),
                PolicyKind::Flat => {
                    compaction = self.flat_simulate(t, sys + active_tok);
                    if compaction {
                        synthetic += 1;
                    }
                }
            }
            if !hold_schedule
                && matches!(
                    self.par.kind,
                    PolicyKind::Progressive | PolicyKind::Truncate | PolicyKind::Oracle
                )
            {
                self.schedule(sys + active_tok);
            }
            self.last_sys = Some(sys_key);

            // 4–5. Measure.
            let active_tok = if active < self.n {
                self.tokens_at(active, Tier::Full, Some(active_n))
            } else {
                0
            };
            // A recorded compaction call is its own request, sized as OpenCode built it.
            let built = rq.call_tokens.filter(|_| req.synthetic_call);
            let tokens = match built {
                Some(call) => sys + call,
                None => sys + self.summary_tokens + self.applied_sum + active_tok,
            };
            let divergence = match built {
                Some(_) => super::compaction_call::divergence(
                    &self.conv[conv_i].prefix(),
                    sys_key,
                    sys,
                    tokens,
                ),
                None => self.divergence(conv_i, sys_key, sys, active, active_n, tokens, time),
            };
            let c = &self.conv[conv_i];
            let fresh = c.has_prev && time - c.prev_time <= self.par.ttl_ms;
            let output = req.usage.output;
            let cc =
                super::cache_cost::price_request(self.price, tokens, divergence, fresh, output);
            self.conv[conv_i] = Conv {
                has_prev: true,
                prev_tokens: tokens,
                prev_time: time,
                prev_sys: sys_key,
                prev_summary: self.summary_id,
                prev_k: self.k,
                prev_active: active,
                prev_active_count: active_n,
                pending: None,
            };
            let mut tiers = TierStats::default();
            for tier in Tier::ALL {
                *tiers.get_mut(tier) = self.stats[tier.depth()];
            }
            if active < self.n {
                tiers.full.count += 1;
                tiers.full.tokens += active_tok;
            }
            if let Some(call) = built {
                tiers = super::compaction_call::tiers(call);
            }
            // Counters count every violation in force; the list names those that began (or
            // changed) at this request, so long replays stay small.
            let mut violations = Vec::new();
            let (floor_v, pin_v) = (self.floor_count, self.pin_sum);
            let mut vnew = std::mem::take(&mut self.viol_new);
            vnew.sort_unstable();
            vnew.dedup();
            for &e in &vnew {
                let Some(&(floor, pins)) = self.violations.get(&e) else {
                    continue;
                };
                let ep = &self.p.episodes[e];
                if floor {
                    violations.push(Violation {
                        episode: ep.id.clone(),
                        kind: "floor".into(),
                        tier: self.applied[e],
                        floor: Some(ep.floor),
                        missing_pins: None,
                    });
                }
                if pins > 0 {
                    violations.push(Violation {
                        episode: ep.id.clone(),
                        kind: "pin".into(),
                        tier: self.applied[e],
                        floor: None,
                        missing_pins: Some(pins),
                    });
                }
            }
            // Probes.
            let mut probe_results = Vec::new();
            let (mut due, mut ok) = (0u64, 0u64);
            if has_probes {
                for (pi, id) in self.probes.due_at(t) {
                    due += 1;
                    let present = self.probes.present(
                        pi,
                        &self.applied[..self.k],
                        &self.cut,
                        (active < self.n).then_some((active, active_n)),
                        &self.summary,
                        self.p,
                    );
                    if present {
                        ok += 1;
                    }
                    probe_results.push(ProbeResult {
                        id: id.to_owned(),
                        ok: present,
                    });
                }
                probe_pairs += due;
                probe_ok_pairs += ok;
                for e in 0..self.k {
                    let o = self.probes.oracle_tier(e);
                    let a = self.applied[e];
                    if a < o {
                        excess += self.ep_tok[e].saturating_sub(
                            self.p.td(e, o).map_or(0, |_| self.tokens_at(e, o, None)),
                        );
                    } else if a > o {
                        under += 1;
                    }
                }
            }
            let recorded = Recorded {
                input: req.usage.input,
                output: req.usage.output,
                cache_read: req.usage.cache_read,
                cache_write: req.usage.cache_write,
                prompt: super::prepare::recorded_prompt(self.p.trace, t),
            };
            frames.push(Frame {
                request: t,
                time,
                status: req.status.as_str().to_owned(),
                synthetic_call: req.synthetic_call,
                boundaries: self.boundaries.iter().map(|b| (*b).to_owned()).collect(),
                tokens,
                budget: self.budget,
                pressure: if self.budget > 0 {
                    tokens as f64 / self.budget as f64
                } else {
                    0.0
                },
                overflow: tokens.saturating_sub(self.budget),
                tiers,
                divergence,
                radius: tokens - divergence,
                cache_read: cc.cache_read,
                cache_write: cc.cache_write,
                uncached: cc.uncached,
                cost: cc.cost,
                changes: std::mem::take(&mut self.changes),
                deferred: self.pending.len() as u64,
                emergencies: self.emergencies,
                holds: self.held_count,
                held: {
                    let mut v = self.held_new.clone();
                    v.sort_unstable();
                    v.iter().map(|&e| self.p.episodes[e].id.clone()).collect()
                },
                floor_violations: floor_v,
                pin_violations: pin_v,
                violations,
                thrash: self.thrash,
                prunes,
                compaction,
                compaction_call: self.sim_call.take().filter(|_| compaction).map(|history| {
                    super::compaction_call::price_simulated(
                        self.price,
                        self.p,
                        history,
                        self.summary_tokens,
                    )
                }),
                probes_due: due,
                probes_ok: ok,
                probes: probe_results,
                recorded,
            });
            if active < self.n && active >= self.k {
                self.row_applied[active] = TierMatrix::ACTIVE_CODE;
                self.row_desired[active] = TierMatrix::ACTIVE_CODE;
            }
            if self.keep_views {
                applied_m.push_raw(&self.row_applied);
                desired_m.push_raw(&self.row_desired);
                render_states.push(RenderState {
                    summary: self.summary.clone(),
                    cuts: self.cuts_list.clone(),
                });
            }
        }
        Pass {
            frames,
            applied: applied_m,
            desired: desired_m,
            render_states,
            synthetic_calls: synthetic,
            excess: has_probes.then_some(excess),
            under: has_probes.then_some(under),
            probe_pairs: (probe_ok_pairs, probe_pairs),
        }
    }

    /// Tokens of the longest common chunk prefix with the conversation's previous request.
    #[allow(clippy::too_many_arguments)]
    fn divergence(
        &self,
        ci: usize,
        sys_key: u64,
        sys: u64,
        active: usize,
        active_n: usize,
        tokens: u64,
        time: i64,
    ) -> u64 {
        let c = &self.conv[ci];
        if !c.has_prev || c.prev_sys != sys_key {
            return 0;
        }
        if c.prev_summary != self.summary_id {
            return sys.min(c.prev_tokens).min(tokens);
        }
        let d = match c.pending {
            None => c.prev_tokens,
            Some((e, _, _)) if e > c.prev_active => c.prev_tokens,
            Some((e, old_tier, old_cut)) => {
                let before = sys + self.summary_tokens + self.fen.prefix(e).max(0) as u64;
                let old = if e < c.prev_k {
                    Self::chunk_list(
                        self.p,
                        self.par.apply_prunes,
                        e,
                        old_tier,
                        old_cut,
                        None,
                        c.prev_time,
                    )
                } else {
                    Self::chunk_list(
                        self.p,
                        self.par.apply_prunes,
                        e,
                        Tier::Full,
                        old_cut,
                        Some(c.prev_active_count),
                        c.prev_time,
                    )
                };
                let new = if e < self.k {
                    Self::chunk_list(
                        self.p,
                        self.par.apply_prunes,
                        e,
                        self.applied[e],
                        self.cut[e],
                        None,
                        time,
                    )
                } else if e == active {
                    Self::chunk_list(
                        self.p,
                        self.par.apply_prunes,
                        e,
                        Tier::Full,
                        self.cut[e],
                        Some(active_n),
                        time,
                    )
                } else {
                    Vec::new()
                };
                let common: u64 = old
                    .iter()
                    .zip(new.iter())
                    .take_while(|(a, b)| a.0 == b.0)
                    .map(|(a, _)| a.1)
                    .sum();
                before + common
            }
        };
        d.min(c.prev_tokens).min(tokens)
    }

    // ----------------------------------------------------------------------------------------
    // Scheduling (progressive, truncate, oracle)
    // ----------------------------------------------------------------------------------------

    /// The boundary kind that lets changes through now, if any.
    fn boundary_now(&self) -> Option<&'static str> {
        let has = |b: &str| self.boundaries.contains(&b);
        match self.par.boundary {
            Boundary::Request => Some("immediate"),
            Boundary::UserTurn => ["user-turn", "milestone", "cache-expiry"]
                .into_iter()
                .find(|b| has(b))
                .map(label),
            Boundary::Milestone => ["milestone", "cache-expiry"]
                .into_iter()
                .find(|b| has(b))
                .map(label),
            Boundary::CacheExpiry => has("cache-expiry").then_some("boundary:cache-expiry"),
        }
    }

    /// Apply pending changes at a boundary; otherwise keep them deferred unless the budget
    /// would overflow, then apply pending demotions oldest first as counted emergencies.
    fn schedule(&mut self, base: u64) {
        if let Some(how) = self.boundary_now() {
            let pend: Vec<usize> = self.pending.iter().copied().collect();
            for e in pend {
                let dwell_ok =
                    self.last_change[e].is_none_or(|(r, _)| self.now - r >= self.par.min_dwell);
                if dwell_ok || self.par.min_dwell == 0 {
                    self.apply(e, how);
                }
            }
        }
        let mut total = base + self.summary_tokens + self.applied_sum;
        if total > self.budget {
            let pend: Vec<usize> = self
                .pending
                .iter()
                .copied()
                .filter(|&e| self.desired[e] > self.applied[e])
                .collect();
            for e in pend {
                if total <= self.budget {
                    break;
                }
                self.apply(e, "emergency");
                self.emergencies += 1;
                total = base + self.summary_tokens + self.applied_sum;
            }
        }
    }

    /// `retention` (MODEL §4): hysteresis on the desired projection; victims ordered
    /// discardable before compressible, not relevant before relevant, oldest first.
    fn retention(&mut self, base: u64) {
        let b = self.budget.max(1) as f64;
        let proj = |s: &Self| (base + s.summary_tokens + s.desired_sum) as f64 / b;
        if proj(self) > self.par.demote_at {
            let mut last: Option<(u8, bool, usize)> = None;
            while proj(self) > self.par.target && !self.demotable.is_empty() {
                let victims: Vec<(u8, bool, usize)> = self.demotable.iter().copied().collect();
                for key in victims {
                    if proj(self) <= self.par.target {
                        break;
                    }
                    let e = key.2;
                    if let Some(lower) = self.next_lower(e, self.desired[e]) {
                        self.want(e, lower, Reason::Pressure);
                        last = Some(key);
                    }
                }
            }
            // Victims at their floor that the walk passed over are held (all of them when the
            // target was not reached).
            if self.par.respect_floors {
                let reached = proj(self) <= self.par.target;
                for e in 0..self.k {
                    if self.in_demotable[e].is_some() {
                        continue;
                    }
                    if !reached || last.is_some_and(|l| self.victim_key(e) < l) {
                        self.hold(e);
                    }
                }
            }
            return;
        }
        // Promotion only below promote_at (the hysteresis band), most relevant first, then
        // newest, while the projection stays at or under the target.
        if proj(self) >= self.par.promote_at {
            return;
        }
        let mut cands: Vec<usize> = (0..self.k)
            .filter(|&e| self.desired[e] > Tier::Full)
            .collect();
        if cands.is_empty() {
            return;
        }
        cands.sort_by_key(|&e| (std::cmp::Reverse(self.rel_count[e]), std::cmp::Reverse(e)));
        let mut progress = true;
        while progress {
            progress = false;
            for &e in &cands {
                let Some(up) = self.next_higher(e, self.desired[e]) else {
                    continue;
                };
                let extra = self.tokens_at(e, up, None).saturating_sub(self.des_tok[e]);
                if (base + self.summary_tokens + self.desired_sum + extra) as f64 / b
                    <= self.par.target
                {
                    let reason = if self.rel_count[e] > 0 {
                        Reason::Relevance
                    } else {
                        Reason::Pressure
                    };
                    self.want(e, up, reason);
                    progress = true;
                }
            }
        }
    }

    /// `age`: tier from requests since the episode closed.
    fn age(&mut self) {
        let [d, c, a] = self.par.age_thresholds;
        for e in 0..self.k {
            let age = self.now - self.closed_at[e];
            let t = if age >= a {
                Tier::Anchor
            } else if age >= c {
                Tier::Compact
            } else if age >= d {
                Tier::Dense
            } else {
                Tier::Full
            };
            let t = self.clamp(e, t);
            if t != self.desired[e] {
                self.want(e, t, Reason::Age);
            }
        }
    }

    /// `truncate`: drop the oldest closed episodes until the desired render fits.
    fn truncate(&mut self, base: u64) {
        while base + self.desired_sum > self.budget && self.trunc_next < self.k {
            let e = self.trunc_next;
            self.trunc_next += 1;
            let t = self.clamp(e, Tier::Dropped);
            self.want(e, t, Reason::Truncation);
        }
    }

    /// `oracle`: each closed episode at the oracle's tier (clamped to the legal range).
    fn oracle(&mut self) {
        for e in 0..self.k {
            let t = self.clamp(e, self.probes.oracle_tier(e));
            if t != self.desired[e] {
                self.want(e, t, Reason::Oracle);
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // Decay (Magic Context, re-tiering only at folds)
    // ----------------------------------------------------------------------------------------

    fn decay(&mut self, sys: u64, sys_key: u64, gap_ok: bool, active_tok: u64) {
        if self.k == 0 {
            return;
        }
        let hb = self.budget as f64 * self.par.history_share;
        // Magic Context's HARD triggers: first render, cache expiry, agent or model change, and
        // the pressure backstop; an overflow between folds forces one as an emergency.
        let backstop = (self.m0_tokens >= 500
            && self.m1_tokens as f64 > self.par.backstop_m1_m0 * self.m0_tokens as f64)
            || self.m1_tokens as f64 > self.par.backstop_m1_budget * hb;
        let changed = self.last_sys.is_some_and(|k| k != sys_key);
        let reason = if !self.folded || !gap_ok || changed || backstop {
            Some("boundary:fold")
        } else if sys + self.summary_tokens + self.applied_sum + active_tok > self.budget {
            Some("emergency")
        } else {
            None
        };
        let Some(how) = reason else {
            return;
        };
        if how == "emergency" {
            self.emergencies += 1;
        }
        if !self.boundaries.contains(&"fold") {
            self.boundaries.push("fold");
        }
        self.fold(hb, how);
    }

    fn fold(&mut self, hb: f64, how: &str) {
        let k = self.k;
        let curve = self.par.curve;
        if self.imp_factor.len() < k {
            let start = self.imp_factor.len();
            for e in start..self.n {
                self.imp_factor.push(curve.factor(self.p.eps[e].importance));
            }
        }
        // Pressure once per fold: Σ cost of each episode's tier at p = 1 ÷ history budget.
        let natural: f64 = (0..k)
            .map(
                |e| match curve.tier_with_factor(k - e, self.imp_factor[e], 1.0) {
                    t @ 1..=4 => {
                        let d = usize::from(t) - 1;
                        if self.par.measured_cost {
                            self.tokens_at(e, Tier::TIERS[d], None) as f64
                        } else {
                            self.par.const_costs[d]
                        }
                    }
                    _ => 0.0,
                },
            )
            .sum();
        let pressure = if hb <= 0.0 {
            1.0
        } else {
            (natural / hb).max(curve.p_floor)
        };
        let mut tiers: Vec<Tier> = (0..k)
            .map(|e| {
                let mc = curve.tier_with_factor(k - e, self.imp_factor[e], pressure);
                let t = Tier::from_depth(usize::from(mc) - 1).unwrap_or(Tier::Dropped);
                let c = self.clamp(e, t);
                if c < self.p.effective(e, t) {
                    self.hold(e);
                }
                c
            })
            .collect();
        // Budget guard: oldest first, each all the way down before the next.
        let tok = |s: &Self, e: usize, t: Tier| s.tokens_at(e, t, None);
        let mut running: u64 = (0..k).map(|e| tok(self, e, tiers[e])).sum();
        let mut guard = 5 * k;
        let mut oldest = 0;
        while running as f64 > hb && guard > 0 && oldest < k {
            guard -= 1;
            match self.next_lower(oldest, tiers[oldest]) {
                Some(lower) => {
                    running = running - tok(self, oldest, tiers[oldest]) + tok(self, oldest, lower);
                    tiers[oldest] = lower;
                }
                None => {
                    if self.par.respect_floors && tiers[oldest] != Tier::Dropped {
                        self.hold(oldest);
                    }
                    oldest += 1;
                }
            }
        }
        for (e, t) in tiers.into_iter().enumerate() {
            if t != self.applied[e] {
                self.set_now(e, t, Reason::Decay, how);
            } else {
                self.want(e, t, Reason::Decay);
            }
        }
        self.folded = true;
        self.m0_tokens = self.applied_sum;
        self.m1_tokens = 0;
    }

    // ----------------------------------------------------------------------------------------
    // OpenCode compaction
    // ----------------------------------------------------------------------------------------

    /// `trigger = recorded`: from the request after a recorded summary call, show its compaction
    /// message and summary, then the kept tail from `tail_start_id`.
    fn flat_recorded(&mut self, t: usize) {
        let trace = self.p.trace;
        let Some(ci) = trace
            .compactions
            .iter()
            .rposition(|c| c.summary_request.is_some_and(|s| s < t))
        else {
            return;
        };
        if self.compaction_in_effect == Some(ci) {
            return;
        }
        self.compaction_in_effect = Some(ci);
        let (start, msgs) = self.p.recorded_summary(ci);
        let text: String = msgs
            .iter()
            .flat_map(|&m| self.p.message_chunks(m).map(|c| c.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        self.summary = Some(SummaryPiece::Recorded { compaction: ci });
        self.summary_id += 1;
        self.summary_tokens = msgs.iter().map(|&m| self.p.message_tokens(m)).sum();
        self.replace_before(start, &text);
    }

    /// Drop every episode wholly before message `start` (replaced by the summary `text`) and
    /// cut the one that straddles it.
    fn replace_before(&mut self, start: usize, text: &str) {
        let limit = (self.k + 1).min(self.n);
        for e in 0..limit {
            let ep = &self.p.episodes[e];
            if ep.last_message < start {
                let missing = ep
                    .pins
                    .iter()
                    .filter(|p| !text.contains(p.text.as_str()))
                    .count() as u64;
                self.summarised.insert(e, missing);
                if e < self.k {
                    if self.applied[e] != Tier::Dropped {
                        self.set_now(e, Tier::Dropped, Reason::Compaction, "immediate");
                    } else {
                        self.refresh_violation(e);
                    }
                } else {
                    // The active episode lies wholly before the tail: nothing of it is shown.
                    self.cut_before(e, start);
                }
            } else {
                self.cut_before(e, start);
            }
        }
    }

    /// Show only the chunks of episode `e` from message `start` on (all of it, part of it, or
    /// none).
    fn cut_before(&mut self, e: usize, start: usize) {
        let ep = &self.p.episodes[e];
        if ep.first_message >= start {
            return;
        }
        let from = self
            .p
            .td(e, Tier::Full)
            .map_or(0, |td| td.pos.partition_point(|p| p.0 < start));
        self.set_cut(e, from);
    }

    /// `trigger = simulate`: compact when the rendered context reaches the usable limit.
    fn flat_simulate(&mut self, t: usize, base: u64) -> bool {
        let limits = super::limits::limits_for(self.p.trace);
        let context = if self.par.context_limit > 0 {
            self.par.context_limit
        } else {
            limits.context
        };
        let output = if self.par.max_output > 0 {
            self.par.max_output
        } else {
            limits.output
        };
        let usable = context.saturating_sub(output.min(super::limits::OUTPUT_TOKEN_MAX));
        if base + self.summary_tokens + self.applied_sum < usable || self.k == 0 {
            return false;
        }
        let preserve = ((usable as f64 * self.par.preserve_share) as u64).clamp(
            self.par.preserve_min,
            self.par.preserve_max.max(self.par.preserve_min),
        );
        // The tail_turns-th last human turn before this request.
        let msg = self.p.reqs[t].msg;
        let humans: Vec<usize> = self
            .p
            .trace
            .messages
            .iter()
            .enumerate()
            .filter(|(i, m)| *i < msg && m.user_kind == Some(crate::trace::UserKind::Human))
            .map(|(i, _)| i)
            .collect();
        let turn_start = if self.par.tail_turns == 0 {
            msg
        } else {
            humans
                .len()
                .checked_sub(self.par.tail_turns)
                .map_or(0, |i| humans[i])
        };
        let mut keep_from = self.k;
        let mut cum = 0u64;
        while keep_from > 0 {
            let e = keep_from - 1;
            if self.applied[e] == Tier::Dropped
                || self.p.episodes[e].first_message < turn_start
                || cum + self.ep_tok[e] > preserve
            {
                break;
            }
            cum += self.ep_tok[e];
            keep_from -= 1;
        }
        let covers: Vec<usize> = (0..keep_from).collect();
        if covers.iter().all(|&e| self.applied[e] == Tier::Dropped) {
            return false;
        }
        let view = base - self.p.reqs[t].sys_tokens + self.summary_tokens + self.applied_sum;
        let covered: Vec<(u64, f64)> = covers
            .iter()
            .map(|&e| (self.ep_tok[e], self.p.compaction_keep[e]))
            .collect();
        self.sim_call = Some(super::compaction_call::simulated_history(
            self.p.compaction.shape,
            view,
            self.summary_tokens,
            &covered,
        ));
        let trace = self.p.trace;
        let text_from = trace
            .compactions
            .iter()
            .position(|c| c.summary_request.is_some_and(|s| s >= t))
            .or_else(|| trace.compactions.len().checked_sub(1));
        let (tokens, text) = match text_from {
            Some(ci) => {
                let c = &trace.compactions[ci];
                let ms = trace.compaction_message_indices(c);
                (
                    ms.iter().map(|&m| self.p.message_tokens(m)).sum::<u64>(),
                    c.summary_text.clone(),
                )
            }
            None => {
                let mut tok = 0u64;
                let mut text = String::new();
                for &e in &covers {
                    if tok >= self.par.summary_tokens {
                        break;
                    }
                    tok += self.tokens_at(e, Tier::Compact, None);
                    if let Some(r) =
                        self.p.episodes[e].representation(self.p.effective(e, Tier::Compact))
                    {
                        text.push_str(&r.text());
                        text.push('\n');
                    }
                }
                (tok.min(self.par.summary_tokens), text)
            }
        };
        self.sim_number += 1;
        self.summary = Some(SummaryPiece::Simulated {
            number: self.sim_number,
            covers: covers.clone(),
            text_from,
            tokens,
        });
        self.summary_id += 1;
        self.summary_tokens = tokens;
        for e in covers {
            let missing = self.p.episodes[e]
                .pins
                .iter()
                .filter(|p| !text.contains(p.text.as_str()))
                .count() as u64;
            self.summarised.insert(e, missing);
            if self.applied[e] != Tier::Dropped {
                self.set_now(e, Tier::Dropped, Reason::Compaction, "immediate");
            } else {
                self.refresh_violation(e);
            }
        }
        true
    }
}

fn label(b: &str) -> &'static str {
    match b {
        "user-turn" => "boundary:user-turn",
        "milestone" => "boundary:milestone",
        "cache-expiry" => "boundary:cache-expiry",
        _ => "immediate",
    }
}

/// Whether this engine renders recorded compaction artefacts.
pub(crate) fn filter_for(par: &Params) -> Filter {
    if par.kind == PolicyKind::Flat && par.recorded {
        Filter::Recorded
    } else {
        Filter::NoArtefacts
    }
}

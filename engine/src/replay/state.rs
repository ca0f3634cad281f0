//! The state one pass shares with its policy, behind a narrow API:
//! - **want** `(e, tier, reason)`: the policy's desired tier of a closed episode;
//! - **apply** `(e, how)`: show the desired tier now (counted as a change, with thrash);
//! - **hold** `(e)`: pressure wants `e` lower but it is already at its floor (counted);
//! - a change wanted and not applied stays **pending** until the schedule applies it (deferred).
//!
//! Everything else here keeps the rendered context's running sums in step with the applied
//! tiers: tokens per episode (with the kept-tail cut and recorded prunes), a Fenwick tree for
//! divergence, tier statistics, floor and pin violations, the compaction summary shown.

use std::collections::{BTreeMap, BTreeSet};

use super::divergence::Conv;
use super::fenwick::Fenwick;
use super::holds::Holds;
use super::output::{Change, Cut, CutBy, Reason, SummaryPiece, TierMatrix, TierStat};
use super::prepare::Prep;
use super::schedule::{Applied, Boundaries};
use crate::episode::Tier;

/// A change applied at request `at`, in direction `dir` (+1 = demotion, −1 = promotion).
#[derive(Debug, Clone, Copy)]
struct LastChange {
    at: usize,
    dir: i8,
}

/// Counts of one request, reset by [`State::begin`].
#[derive(Debug, Default)]
pub(crate) struct RequestCounts {
    pub changes: Vec<Change>,
    pub thrash: u64,
    pub emergencies: u64,
    /// Episodes whose applied tier changed at this request.
    pub applied: Vec<usize>,
    /// Episodes whose cut began or moved at this request.
    pub cut_new: Vec<usize>,
}

pub(crate) struct State<'p, 'a> {
    pub p: &'p Prep<'a>,
    budget: u64,
    respect_floors: bool,
    thrash_window: usize,
    n: usize,
    /// Episodes `0..k` are closed.
    k: usize,
    now: usize,
    boundaries: Boundaries,
    applied: Vec<Tier>,
    desired: Vec<Tier>,
    /// The lowest tier the policy may show each episode at (its floor, or the deepest tier it
    /// has when floors are not respected).
    lowest: Vec<Tier>,
    want_reason: Vec<Reason>,
    /// The matrix rows in the making (tier codes, active, future).
    pub(crate) row_applied: Vec<u8>,
    pub(crate) row_desired: Vec<u8>,
    /// Episodes whose `row_*` bytes were written since the pass last read them.
    pub(crate) row_touched: Vec<usize>,
    /// First rendered chunk of the full tier (a recorded compaction's kept tail, the start of
    /// OpenCode's v2 loop).
    cut: Vec<usize>,
    /// The first message the model's view includes ([`State::view_from`]).
    context_from: usize,
    closed_at: Vec<usize>,
    last_change: Vec<Option<LastChange>>,
    ep_tok: Vec<u64>,
    des_tok: Vec<u64>,
    fen: Fenwick,
    applied_sum: u64,
    desired_sum: u64,
    stats: [TierStat; 5],
    /// Recorded prunes applied so far: (position among included full-tier chunks, tokens saved).
    pruned: Vec<Vec<(usize, u64)>>,
    pending: BTreeSet<usize>,
    summary: Option<SummaryPiece>,
    summary_id: u64,
    summary_tokens: u64,
    /// Every summary shown so far as chunks, by id (0: none), so a request can be compared
    /// with one that showed an earlier summary.
    summary_chunks: Vec<Vec<(u64, u64, usize)>>,
    /// Episodes replaced by the current summary, with the pins the summary text lacks.
    summarised: BTreeMap<usize, u64>,
    violations: BTreeMap<usize, (bool, u64)>,
    floor_count: u64,
    pin_sum: u64,
    /// Episodes whose violation began or changed at this request.
    viol_new: Vec<usize>,
    /// The cut episodes, by episode.
    cuts_list: Vec<Cut>,
    holds: Holds,
    /// Episodes closed, or whose applied tier, cut or prunes changed, since
    /// [`State::take_touched`] (what the probe tally re-checks).
    touched: Vec<usize>,
    pub(crate) conv: [Conv; 2],
    pub(crate) counts: RequestCounts,
}

impl<'p, 'a> State<'p, 'a> {
    pub fn new(p: &'p Prep<'a>, budget: u64, respect_floors: bool, thrash_window: usize) -> Self {
        let n = p.episodes.len();
        State {
            p,
            budget,
            respect_floors,
            thrash_window,
            n,
            k: 0,
            now: 0,
            boundaries: Boundaries::default(),
            applied: vec![Tier::Full; n],
            desired: vec![Tier::Full; n],
            lowest: p
                .eps
                .iter()
                .map(|d| {
                    let list = if respect_floors { &d.legal } else { &d.avail };
                    list.last().copied().unwrap_or(Tier::Full)
                })
                .collect(),
            want_reason: vec![Reason::Pressure; n],
            row_applied: vec![TierMatrix::FUTURE_CODE; n],
            row_desired: vec![TierMatrix::FUTURE_CODE; n],
            row_touched: Vec::new(),
            cut: vec![0; n],
            context_from: 0,
            closed_at: vec![0; n],
            last_change: vec![None; n],
            ep_tok: vec![0; n],
            des_tok: vec![0; n],
            fen: Fenwick::new(n),
            applied_sum: 0,
            desired_sum: 0,
            stats: [TierStat::default(); 5],
            pruned: vec![Vec::new(); n],
            pending: BTreeSet::new(),
            summary: None,
            summary_id: 0,
            summary_tokens: 0,
            summary_chunks: vec![Vec::new()],
            summarised: BTreeMap::new(),
            violations: BTreeMap::new(),
            floor_count: 0,
            pin_sum: 0,
            viol_new: Vec::new(),
            cuts_list: Vec::new(),
            holds: Holds::new(n),
            touched: Vec::new(),
            conv: [Conv::default(), Conv::default()],
            counts: RequestCounts::default(),
        }
    }

    // ----------------------------------------------------------------------------------------
    // Reading
    // ----------------------------------------------------------------------------------------

    /// Episodes in the trace.
    pub fn episode_count(&self) -> usize {
        self.n
    }
    /// Episodes closed so far: they are `0..closed_count()`.
    pub fn closed_count(&self) -> usize {
        self.k
    }
    /// The request being replayed.
    pub fn now(&self) -> usize {
        self.now
    }
    pub fn budget(&self) -> u64 {
        self.budget
    }
    pub fn respect_floors(&self) -> bool {
        self.respect_floors
    }
    pub fn boundaries(&self) -> Boundaries {
        self.boundaries
    }
    pub fn add_boundary(&mut self, b: super::schedule::BoundaryKind) {
        self.boundaries.insert(b);
    }
    pub fn applied(&self, e: usize) -> Tier {
        self.applied[e]
    }
    pub fn applied_tiers(&self) -> &[Tier] {
        &self.applied
    }
    pub fn desired(&self, e: usize) -> Tier {
        self.desired[e]
    }
    pub fn want_reason(&self, e: usize) -> Reason {
        self.want_reason[e]
    }
    /// The request at which `e` closed.
    pub fn closed_at(&self, e: usize) -> usize {
        self.closed_at[e]
    }
    /// The request of `e`'s last applied change.
    pub fn last_change(&self, e: usize) -> Option<usize> {
        self.last_change[e].map(|c| c.at)
    }
    /// The request at which `e` was last demoted, when its last applied change was a demotion.
    pub fn demoted_at(&self, e: usize) -> Option<usize> {
        self.last_change[e].filter(|c| c.dir > 0).map(|c| c.at)
    }
    /// Tokens of `e` at its applied tier.
    pub fn ep_tokens(&self, e: usize) -> u64 {
        self.ep_tok[e]
    }
    /// Tokens of `e` at its desired tier.
    pub fn desired_tokens(&self, e: usize) -> u64 {
        self.des_tok[e]
    }
    /// Σ tokens of the closed episodes at their applied tiers.
    pub fn applied_sum(&self) -> u64 {
        self.applied_sum
    }
    /// Σ tokens of the closed episodes at their desired tiers.
    pub fn desired_sum(&self) -> u64 {
        self.desired_sum
    }
    /// Tokens of the closed episodes before `e`.
    pub fn tokens_before(&self, e: usize) -> u64 {
        self.fen.prefix(e).max(0) as u64
    }
    pub fn summary(&self) -> &Option<SummaryPiece> {
        &self.summary
    }
    pub fn summary_id(&self) -> u64 {
        self.summary_id
    }
    pub fn summary_tokens(&self) -> u64 {
        self.summary_tokens
    }
    pub fn cut(&self, e: usize) -> usize {
        self.cut[e]
    }
    pub fn cuts(&self) -> &[usize] {
        &self.cut
    }
    pub fn cuts_list(&self) -> &[Cut] {
        &self.cuts_list
    }
    /// Episodes whose desired tier is not applied yet, in order.
    pub fn pending(&self) -> Vec<usize> {
        self.pending.iter().copied().collect()
    }
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }
    pub fn tier_stats(&self) -> [TierStat; 5] {
        self.stats
    }
    pub fn floor_violations(&self) -> u64 {
        self.floor_count
    }
    pub fn pin_violations(&self) -> u64 {
        self.pin_sum
    }
    /// (floor violated, missing pins) of `e`, when it violates either.
    pub fn violation(&self, e: usize) -> Option<(bool, u64)> {
        self.violations.get(&e).copied()
    }

    /// Tokens of episode `e` at tier `t` with its cut and the prunes applied so far; `upto`
    /// limits the full tier to its first chunks (the active episode).
    pub fn tokens_at(&self, e: usize, t: Tier, upto: Option<usize>) -> u64 {
        if t == Tier::Dropped {
            return 0;
        }
        let Some(td) = self.p.tier_data_at(e, t) else {
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

    /// Included full-tier chunks of the active episode `e` before position `pos` (the
    /// request's message and step).
    pub fn active_count(&self, e: usize, pos: (usize, u32)) -> usize {
        self.p
            .tier_data_at(e, Tier::Full)
            .map_or(0, |td| td.pos.partition_point(|p| *p < pos))
    }

    /// The deepest tier at or above `t` that the policy may show.
    pub fn clamp(&self, e: usize, t: Tier) -> Tier {
        if !self.respect_floors {
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

    /// The next tier below `t` the policy may show (legal tiers when floors are respected).
    pub fn next_lower(&self, e: usize, t: Tier) -> Option<Tier> {
        let list = if self.respect_floors {
            &self.p.eps[e].legal
        } else {
            &self.p.eps[e].avail
        };
        list.iter().find(|x| **x > t).copied()
    }

    /// The next generated tier above `t`.
    pub fn next_higher(&self, e: usize, t: Tier) -> Option<Tier> {
        self.p.eps[e].avail.iter().rev().find(|x| **x < t).copied()
    }

    /// Whether `e` is shown at the lowest tier the policy may show it at (no tier below it is
    /// allowed: [`State::next_lower`] finds none).
    pub fn at_floor(&self, e: usize) -> bool {
        self.applied[e] >= self.lowest[e]
    }

    // ----------------------------------------------------------------------------------------
    // The policy's API
    // ----------------------------------------------------------------------------------------

    /// Set the desired tier of a closed episode (the nearest generated tier at or above `t`).
    pub fn want(&mut self, e: usize, t: Tier, reason: Reason) {
        let t = self.p.effective(e, t);
        if self.desired[e] == t {
            return;
        }
        self.desired_sum -= self.des_tok[e];
        self.desired[e] = t;
        self.row_desired[e] = TierMatrix::code(t);
        self.row_touched.push(e);
        self.des_tok[e] = self.tokens_at(e, t, None);
        self.desired_sum += self.des_tok[e];
        self.want_reason[e] = reason;
        if self.desired[e] != self.applied[e] {
            self.pending.insert(e);
        } else {
            self.pending.remove(&e);
        }
    }

    /// Withdraw a pending change: the desired tier becomes the applied one again.
    pub fn cancel(&mut self, e: usize) {
        let (t, r) = (self.applied[e], self.want_reason[e]);
        self.want(e, t, r);
    }

    /// Apply the desired tier of `e` now; counts the change (and an emergency, and thrash when
    /// it reverses the episode's previous change within `thrash_window` requests).
    pub fn apply(&mut self, e: usize, how: Applied) {
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
        let thrash = self.last_change[e]
            .is_some_and(|last| last.dir == -dir && self.now - last.at <= self.thrash_window);
        if thrash {
            self.counts.thrash += 1;
        }
        self.last_change[e] = Some(LastChange { at: self.now, dir });
        self.counts.applied.push(e);
        if how == Applied::Emergency {
            self.counts.emergencies += 1;
        }
        self.counts.changes.push(Change {
            episode: self.p.episodes[e].id.clone(),
            from,
            to,
            reason: self.want_reason[e],
            applied: how,
            thrash,
        });
    }

    /// Want and apply at once.
    pub fn set_now(&mut self, e: usize, t: Tier, reason: Reason, how: Applied) {
        self.want(e, t, reason);
        self.apply(e, how);
    }

    /// Count a hold of `e` at this request only: pressure wants it lower, and it is shown at
    /// its floor (the lowest tier the policy may show). Returns whether it was counted; an
    /// episode above its floor is never held (its pending change is a deferral or a dwell
    /// block). A hold is listed in `held` only at the first request of a run of consecutive
    /// holds.
    pub fn hold(&mut self, e: usize) -> bool {
        if e >= self.k || !self.at_floor(e) {
            return false;
        }
        self.holds.hold_now(e);
        true
    }

    /// Hold `e` (`on`) or release it from now on, until changed: for a policy that keeps its
    /// held set in step with its own state instead of naming every hold at every request. Only
    /// a closed episode shown at its floor may be held.
    pub fn set_held(&mut self, e: usize, on: bool) {
        debug_assert!(!on || (e < self.k && self.at_floor(e)));
        self.holds.set(e, on);
    }

    /// Release every hold (a request the policy does not decide holds nothing).
    pub(crate) fn release_holds(&mut self) {
        self.holds.release_all();
    }

    /// Changes when every hold was released at once ([`State::release_holds`]).
    pub fn holds_epoch(&self) -> u64 {
        self.holds.epoch()
    }

    /// Holds in force at this request, and the holds that began and ended at it.
    pub(crate) fn hold_counts(&self) -> (u64, Vec<usize>, Vec<usize>) {
        let (began, ended) = self.holds.changes();
        (self.holds.count(), began, ended)
    }

    /// Episodes whose applied tier changed at this request so far.
    pub fn applied_now(&self) -> &[usize] {
        &self.counts.applied
    }

    /// Show `piece` (of `tokens` tokens) after the system chunk from now on.
    pub fn set_summary(&mut self, piece: SummaryPiece, tokens: u64) {
        self.summary_chunks
            .push(self.p.summary_chunk_list(&piece, tokens));
        self.summary = Some(piece);
        self.summary_id += 1;
        self.summary_tokens = tokens;
    }

    /// The chunks of summary `id` ([`State::summary_id`]; 0: none).
    pub fn summary_chunks(&self, id: u64) -> &[(u64, u64, usize)] {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.summary_chunks.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// Record that `e` is replaced by the current summary, whose text lacks `missing_pins` of
    /// its pinned spans (then a closed episode is dropped).
    pub fn summarise(&mut self, e: usize, missing_pins: u64, reason: Reason) {
        self.summarised.insert(e, missing_pins);
        if e < self.k {
            if self.applied[e] != Tier::Dropped {
                self.set_now(e, Tier::Dropped, reason, Applied::Immediate);
            } else {
                self.refresh_violation(e);
            }
        }
    }

    /// Cut the full tier of `e` to start at included chunk `from`, for the reason `by`.
    pub fn set_cut(&mut self, e: usize, from: usize, by: CutBy) {
        if self.cut[e] == from {
            return;
        }
        let (chunks, hidden_tokens) = self
            .p
            .tier_data_at(e, Tier::Full)
            .map_or((0, 0), |td| (td.len(), td.prefix[from.min(td.len())]));
        let cut = Cut {
            episode: e,
            from,
            chunks,
            hidden_tokens,
            by,
        };
        match self.cuts_list.binary_search_by_key(&e, |c| c.episode) {
            Ok(i) => self.cuts_list[i] = cut,
            Err(i) => self.cuts_list.insert(i, cut),
        }
        self.counts.cut_new.push(e);
        self.mark_changed(e);
        if e < self.k {
            self.detach(e);
            self.cut[e] = from;
            self.attach(e);
        } else {
            self.cut[e] = from;
        }
    }

    /// Show only the chunks of episode `e` from message `start` on (all of it, part of it, or
    /// none), for the reason `by`.
    pub fn cut_before(&mut self, e: usize, start: usize, by: CutBy) {
        if self.p.episodes[e].first_message >= start {
            return;
        }
        let from = self
            .p
            .tier_data_at(e, Tier::Full)
            .map_or(0, |td| td.pos.partition_point(|p| p.0 < start));
        self.set_cut(e, from, by);
    }

    // ----------------------------------------------------------------------------------------
    // The pass's API
    // ----------------------------------------------------------------------------------------

    /// The model's view starts at message `from` from now on (a request of OpenCode's v2 loop
    /// never saw the session's v1 history): the episodes so far are cut before it.
    pub(crate) fn view_from(&mut self, from: usize) {
        if from <= self.context_from {
            return;
        }
        self.context_from = from;
        for e in 0..(self.k + 1).min(self.n) {
            self.cut_before(e, from, CutBy::View);
        }
    }

    /// Start request `t`: clear its counts and boundaries.
    pub(crate) fn begin(&mut self, t: usize, boundaries: Boundaries) {
        self.now = t;
        self.boundaries = boundaries;
        self.counts = RequestCounts::default();
        self.viol_new.clear();
        self.holds.begin(t);
    }

    /// Episode `e` closes: it enters at applied tier `full`.
    pub(crate) fn close(&mut self, e: usize) {
        self.applied[e] = Tier::Full;
        self.desired[e] = Tier::Full;
        self.closed_at[e] = self.now;
        self.ep_tok[e] = 0;
        self.des_tok[e] = 0;
        self.k = e + 1;
        self.touched.push(e);
        self.attach(e);
    }

    /// A recorded prune of `delta` tokens at included full-tier chunk `pos` of `e`.
    pub(crate) fn prune(&mut self, e: usize, pos: usize, delta: u64) {
        self.mark_changed(e);
        if e < self.k {
            self.detach(e);
            self.pruned[e].push((pos, delta));
            self.attach(e);
        } else {
            self.pruned[e].push((pos, delta));
        }
    }

    /// Episodes whose violation began or changed at this request, sorted.
    pub(crate) fn take_new_violations(&mut self) -> Vec<usize> {
        let mut v = std::mem::take(&mut self.viol_new);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Episodes touched since the last call (unsorted, may repeat).
    pub(crate) fn take_touched(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.touched)
    }

    /// Remember, per conversation, the first episode changed since its previous request.
    fn mark_changed(&mut self, e: usize) {
        self.touched.push(e);
        let (tier, cut) = (self.applied[e], self.cut[e]);
        for c in &mut self.conv {
            c.mark(e, tier, cut);
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
        self.row_touched.push(e);
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

    /// Re-check whether `e` is shown below its floor or without some of its pinned spans.
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
    }
}

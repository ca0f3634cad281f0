//! `retention` (MODEL §4), the `progressive` kind's pressure driver.
//!
//! p = tokens ÷ budget. Per request:
//! - **Demote** while the desired projection is above `demote_at`: the next victim one tier at
//!   a time until the projection is ≤ `target`. Victims are ordered discardable before
//!   compressible (pins last), not relevant before relevant, then oldest first. A victim the
//!   walk passes over because it is shown at its floor counts one **hold** (every such victim
//!   when the target is not reached). A victim whose demotion to its floor is only pending is
//!   not held: its change is a deferral or a dwell block.
//! - **Promote** only when p measured before this request's changes (the applied context) is
//!   below `promote_at`: compressible before discardable (the reverse of the victims' order),
//!   then the most relevant, then the newest, one tier at a time while the projection stays ≤
//!   `target`. An episode demoted `promote_after` or fewer requests ago is not a candidate:
//!   the room that came back so soon may go as soon, and the reversal would be thrash.
//! - **Hysteresis**: a request that needs room gives none back. When it demotes, pending
//!   promotions are withdrawn; when it promotes, pending demotions for pressure are withdrawn;
//!   between `promote_at` and `demote_at`, pending promotions for pressure are withdrawn (their
//!   room is gone). So no request applies both demotions and promotions for pressure, and a
//!   promotion for pressure is applied only at a request whose p before its changes is below
//!   `promote_at`.
//!
//! Changes go through the shared schedule (`boundary`, `min_dwell`). An episode the view shows
//! nothing of at any tier (the agent's own compaction messages, which this policy leaves out)
//! is neither a victim nor a candidate: a change there would move no token.

use std::collections::BTreeSet;
use std::ops::Bound;

use super::progressive::Relevance;
use super::{Compacted, Decide, RequestView};
use crate::episode::RetentionClass;
use crate::replay::output::Reason;
use crate::replay::prepare::Prep;
use crate::replay::schedule::Schedule;
use crate::replay::state::State;

use super::victims::{VictimKey, VictimSet};

/// Which of the victims shown at their floor are held: none, those before a victim in
/// victim order (the walk reached its target there), or all (it did not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum HeldBelow {
    Nothing,
    Key(VictimKey),
    Everything,
}

impl HeldBelow {
    fn holds(self, key: VictimKey) -> bool {
        match self {
            HeldBelow::Nothing => false,
            HeldBelow::Key(k) => key < k,
            HeldBelow::Everything => true,
        }
    }

    /// The keys `hi` holds and `lo` does not (`lo` ≤ `hi`).
    fn between(lo: HeldBelow, hi: HeldBelow) -> (Bound<VictimKey>, Bound<VictimKey>) {
        let start = match lo {
            HeldBelow::Key(k) => Bound::Included(k),
            _ => Bound::Unbounded,
        };
        let end = match hi {
            HeldBelow::Key(k) => Bound::Excluded(k),
            _ => Bound::Unbounded,
        };
        (start, end)
    }
}

/// The hysteresis band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RetentionKnobs {
    pub demote_at: f64,
    pub target: f64,
    pub promote_at: f64,
    /// An episode demoted this many requests ago or fewer is not promoted.
    pub promote_after: usize,
}

pub(crate) struct Retention {
    knobs: RetentionKnobs,
    schedule: Schedule,
    relevance: Relevance,
    /// Class rank per episode (discardable 0, compressible 1, pin 2).
    class_rank: Vec<u8>,
    /// Closed episodes whose desired tier can still go lower, in victim order.
    demotable: VictimSet,
    in_demotable: Vec<Option<VictimKey>>,
    /// Closed episodes that are not in `demotable` and are shown at their floor, in victim
    /// order: the victims a walk passes over are held, a prefix of this set. Kept in step with
    /// the state so that a request's holds cost what changed, not every held episode.
    floored: VictimSet,
    in_floored: Vec<Option<VictimKey>>,
    /// Episodes whose place in `floored` changed since the holds were last set.
    floor_dirty: Vec<usize>,
    /// The holds in force, as last set, and the state's hold epoch then.
    held_below: HeldBelow,
    held_epoch: u64,
    /// Closed episodes whose desired tier is below `full` (the promotion candidates).
    lowered: BTreeSet<usize>,
    /// Episodes the view shows nothing of at any tier (the agent's own compaction messages,
    /// which this policy leaves out): nothing to demote or promote, so never a victim nor a
    /// candidate (a change there would be counted, and counted as thrash, for no token).
    inert: Vec<bool>,
    in_lowered: Vec<bool>,
}

impl Retention {
    pub fn new(
        knobs: RetentionKnobs,
        schedule: Schedule,
        relevance: Relevance,
        prep: &Prep<'_>,
    ) -> Retention {
        let n = prep.episodes.len();
        Retention {
            knobs,
            schedule,
            relevance,
            class_rank: prep
                .episodes
                .iter()
                .map(|e| match e.class {
                    RetentionClass::Discardable => 0,
                    RetentionClass::Compressible => 1,
                    RetentionClass::Pin => 2,
                })
                .collect(),
            demotable: VictimSet::new(n),
            in_demotable: vec![None; n],
            floored: VictimSet::new(n),
            in_floored: vec![None; n],
            floor_dirty: Vec::new(),
            held_below: HeldBelow::Nothing,
            held_epoch: 0,
            lowered: BTreeSet::new(),
            in_lowered: vec![false; n],
            inert: prep
                .eps
                .iter()
                .map(|d| d.tiers.iter().flatten().all(|t| t.idx.is_empty()))
                .collect(),
        }
    }

    fn victim_key(&self, e: usize) -> VictimKey {
        (self.class_rank[e], self.relevance.is_relevant(e), e)
    }

    /// Keep `demotable` in step with `e`'s desired tier and relevance.
    fn refresh(&mut self, st: &State<'_, '_>, e: usize) {
        // Only what changed touches the sets: this runs at every want.
        let key =
            (e < st.closed_count() && !self.inert[e] && st.next_lower(e, st.desired(e)).is_some())
                .then(|| self.victim_key(e));
        if self.in_demotable[e] != key {
            if let Some(old) = self.in_demotable[e] {
                self.demotable.remove(old);
            }
            if let Some(k) = key {
                self.demotable.insert(k);
            }
            self.in_demotable[e] = key;
        }
        let lowered =
            e < st.closed_count() && !self.inert[e] && st.desired(e) > crate::episode::Tier::Full;
        if self.in_lowered[e] != lowered {
            if lowered {
                self.lowered.insert(e);
            } else {
                self.lowered.remove(&e);
            }
            self.in_lowered[e] = lowered;
        }
        self.refresh_floor(st, e);
    }

    /// `e`'s relevance changed: it keeps its place in the sets under its new key (nothing
    /// else about it changed, so its tiers need not be read).
    fn rekey(&mut self, e: usize) {
        let key = self.victim_key(e);
        if let Some(old) = self.in_demotable[e].filter(|&k| k != key) {
            self.demotable.remove(old);
            self.demotable.insert(key);
            self.in_demotable[e] = Some(key);
        }
        if let Some(old) = self.in_floored[e].filter(|&k| k != key) {
            self.floored.remove(old);
            self.floored.insert(key);
            self.in_floored[e] = Some(key);
            self.floor_dirty.push(e);
        }
    }

    /// Keep `floored` in step with `e` (its place in `demotable`, its applied tier, its key).
    fn refresh_floor(&mut self, st: &State<'_, '_>, e: usize) {
        let key = (e < st.closed_count() && self.in_demotable[e].is_none() && st.at_floor(e))
            .then(|| self.victim_key(e));
        if self.in_floored[e] == key {
            return;
        }
        if let Some(old) = self.in_floored[e] {
            self.floored.remove(old);
        }
        if let Some(k) = key {
            self.floored.insert(k);
        }
        self.in_floored[e] = key;
        self.floor_dirty.push(e);
    }

    /// Hold the floored victims `below` holds, and only those: the ones whose hold changes are
    /// those between the previous threshold and this one, and those whose place changed.
    fn set_holds(&mut self, st: &mut State<'_, '_>, below: HeldBelow) {
        if self.held_epoch != st.holds_epoch() {
            // The pass released every hold (a request it did not decide).
            self.held_below = HeldBelow::Nothing;
            self.held_epoch = st.holds_epoch();
        }
        let old = self.held_below;
        if old != below {
            let (lo, hi, on) = if old < below {
                (old, below, true)
            } else {
                (below, old, false)
            };
            for (_, _, e) in self.floored.range(HeldBelow::between(lo, hi)) {
                st.set_held(e, on);
            }
        }
        for e in std::mem::take(&mut self.floor_dirty) {
            let on = self.in_floored[e].is_some_and(|k| below.holds(k));
            st.set_held(e, on);
        }
        self.held_below = below;
    }

    fn want(&mut self, st: &mut State<'_, '_>, e: usize, t: crate::episode::Tier, r: Reason) {
        st.want(e, t, r);
        self.refresh(st, e);
    }

    /// Withdraw `e`'s pending change.
    fn cancel(&mut self, st: &mut State<'_, '_>, e: usize) {
        st.cancel(e);
        self.refresh(st, e);
    }

    /// Withdraw the pending changes that `keep` rejects: (desired deeper than applied, reason).
    fn withdraw(&mut self, st: &mut State<'_, '_>, keep: impl Fn(bool, Reason) -> bool) {
        if st.pending_count() == 0 {
            return;
        }
        for e in st.pending() {
            let demotion = st.desired(e) > st.applied(e);
            if !keep(demotion, st.want_reason(e)) {
                self.cancel(st, e);
            }
        }
    }

    /// Hysteresis in time: room that came back soon after a demotion may go again as soon, so
    /// an episode demoted `promote_after` or fewer requests ago stays where it is (the span
    /// inside which the reversal would count as thrash when `promote_after = thrash_window`).
    fn too_soon_to_promote(&self, st: &State<'_, '_>, e: usize) -> bool {
        st.demoted_at(e)
            .is_some_and(|at| st.now() - at <= self.knobs.promote_after)
    }

    fn decide_tiers(&mut self, st: &mut State<'_, '_>, base: u64) {
        let k = self.knobs;
        let b = st.budget().max(1) as f64;
        let proj = |st: &State<'_, '_>| (base + st.summary_tokens() + st.desired_sum()) as f64 / b;
        // p before this request's changes: what the applied context weighs now.
        let p_now = (base + st.summary_tokens() + st.applied_sum()) as f64 / b;
        if proj(st) > k.demote_at {
            // Room is needed: no pending promotion goes through.
            self.withdraw(st, |demotion, _| demotion);
            let mut last: Option<VictimKey> = None;
            // Walk the victims in order, one tier each, round after round until the target:
            // the next victim is looked up after the current one (a demotion changes only its
            // own place), so a request costs the victims it demotes, not every one there is.
            let mut after: Option<VictimKey> = None;
            while proj(st) > k.target && !self.demotable.is_empty() {
                let Some(key) = self.demotable.next_after(after) else {
                    // End of a round: the next starts from the first victim again.
                    after = None;
                    continue;
                };
                after = Some(key);
                let e = key.2;
                if let Some(lower) = st.next_lower(e, st.desired(e)) {
                    self.want(st, e, lower, Reason::Pressure);
                    last = Some(key);
                }
            }
            // Victims the walk passed over (all of them when the target was not reached) are
            // held when they are shown at their floor: those not in `demotable` (above their
            // floor they wait for a deferral or a dwell block instead).
            let below = if !st.respect_floors() {
                HeldBelow::Nothing
            } else if proj(st) > k.target {
                HeldBelow::Everything
            } else {
                last.map_or(HeldBelow::Nothing, HeldBelow::Key)
            };
            self.set_holds(st, below);
            return;
        }
        self.set_holds(st, HeldBelow::Nothing);
        if p_now >= k.promote_at {
            // Inside the band: the room a pending promotion for pressure counted on is gone.
            self.withdraw(st, |demotion, r| demotion || r != Reason::Pressure);
            return;
        }
        // Below promote_at: room to give back, so pending demotions for pressure are withdrawn,
        // then the most relevant, then the newest, are promoted while the projection stays at
        // or under the target.
        self.withdraw(st, |demotion, r| !demotion || r != Reason::Pressure);
        // A promotion still pending was sized at an earlier request: over the target now, the
        // pending promotions for pressure are withdrawn and only those that still fit are made
        // again below.
        if proj(st) > k.target {
            self.withdraw(st, |demotion, r| demotion || r != Reason::Pressure);
        }
        let mut cands: Vec<usize> = self.lowered.iter().copied().collect();
        if cands.is_empty() {
            return;
        }
        // The reverse of the victims' order: the class pressure takes last comes back first
        // (a discardable episode, first to go, is last to return), then the most relevant,
        // then the newest.
        cands.sort_by_key(|&e| {
            (
                std::cmp::Reverse(self.class_rank[e]),
                std::cmp::Reverse(self.relevance.touches(e)),
                std::cmp::Reverse(e),
            )
        });
        let mut progress = true;
        while progress {
            progress = false;
            for &e in &cands {
                if self.too_soon_to_promote(st, e) {
                    continue;
                }
                let Some(up) = st.next_higher(e, st.desired(e)) else {
                    continue;
                };
                let extra = st
                    .tokens_at(e, up, None)
                    .saturating_sub(st.desired_tokens(e));
                if (base + st.summary_tokens() + st.desired_sum() + extra) as f64 / b <= k.target {
                    let reason = if self.relevance.is_relevant(e) {
                        Reason::Relevance
                    } else {
                        Reason::Pressure
                    };
                    self.want(st, e, up, reason);
                    progress = true;
                }
            }
        }
    }
}

impl Decide for Retention {
    fn on_close(&mut self, st: &State<'_, '_>, e: usize) {
        self.refresh(st, e);
    }
    fn observe(&mut self, st: &State<'_, '_>, t: usize) {
        for e in self.relevance.advance(st, t) {
            self.rekey(e);
        }
    }
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        self.decide_tiers(st, rq.base);
        self.schedule.run(st, rq.base);
        // Applied tiers moved: who is shown at its floor may have changed.
        for i in 0..st.applied_now().len() {
            let e = st.applied_now()[i];
            self.refresh_floor(st, e);
        }
        None
    }
    fn schedule(&self) -> Option<Schedule> {
        Some(self.schedule)
    }
}

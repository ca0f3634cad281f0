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
//!   `target`.
//! - **Hysteresis**: a request that needs room gives none back. When it demotes, pending
//!   promotions are withdrawn; when it promotes, pending demotions for pressure are withdrawn;
//!   between `promote_at` and `demote_at`, pending promotions for pressure are withdrawn (their
//!   room is gone). So no request applies both demotions and promotions for pressure, and a
//!   promotion for pressure is applied only at a request whose p before its changes is below
//!   `promote_at`.
//!
//! Changes go through the shared schedule (`boundary`, `min_dwell`).

use std::collections::BTreeSet;

use super::progressive::Relevance;
use super::{Compacted, Decide, RequestView};
use crate::episode::RetentionClass;
use crate::replay::prepare::Prep;
use crate::replay::schedule::Schedule;
use crate::replay::state::State;
use crate::replay::types::Reason;

/// Victim order: (class rank, relevant, episode).
type VictimKey = (u8, bool, usize);

/// The hysteresis band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RetentionKnobs {
    pub demote_at: f64,
    pub target: f64,
    pub promote_at: f64,
}

pub(crate) struct Retention {
    knobs: RetentionKnobs,
    schedule: Schedule,
    relevance: Relevance,
    /// Class rank per episode (discardable 0, compressible 1, pin 2).
    class_rank: Vec<u8>,
    /// Closed episodes whose desired tier can still go lower, in victim order.
    demotable: BTreeSet<VictimKey>,
    in_demotable: Vec<Option<VictimKey>>,
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
            demotable: BTreeSet::new(),
            in_demotable: vec![None; n],
        }
    }

    fn victim_key(&self, e: usize) -> VictimKey {
        (self.class_rank[e], self.relevance.is_relevant(e), e)
    }

    /// Keep `demotable` in step with `e`'s desired tier and relevance.
    fn refresh(&mut self, st: &State<'_, '_>, e: usize) {
        if let Some(key) = self.in_demotable[e].take() {
            self.demotable.remove(&key);
        }
        if e < st.k() && st.next_lower(e, st.desired(e)).is_some() {
            let key = self.victim_key(e);
            self.demotable.insert(key);
            self.in_demotable[e] = Some(key);
        }
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
            while proj(st) > k.target && !self.demotable.is_empty() {
                let victims: Vec<VictimKey> = self.demotable.iter().copied().collect();
                for key in victims {
                    if proj(st) <= k.target {
                        break;
                    }
                    let e = key.2;
                    if let Some(lower) = st.next_lower(e, st.desired(e)) {
                        self.want(st, e, lower, Reason::Pressure);
                        last = Some(key);
                    }
                }
            }
            // Victims the walk passed over (all of them when the target was not reached) are
            // held when they are shown at their floor; `hold` skips the others.
            if st.respect_floors() {
                let reached = proj(st) <= k.target;
                for e in 0..st.k() {
                    if self.in_demotable[e].is_some() {
                        continue;
                    }
                    if !reached || last.is_some_and(|l| self.victim_key(e) < l) {
                        st.hold(e);
                    }
                }
            }
            return;
        }
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
        let mut cands: Vec<usize> = (0..st.k())
            .filter(|&e| st.desired(e) > crate::episode::Tier::Full)
            .collect();
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
            self.refresh(st, e);
        }
    }
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        self.decide_tiers(st, rq.base);
        self.schedule.run(st, rq.base);
        None
    }
    fn schedule(&self) -> Option<Schedule> {
        Some(self.schedule)
    }
}

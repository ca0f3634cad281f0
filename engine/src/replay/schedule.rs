//! When desired changes are applied (MODEL §1 "boundary", §2 law 5): the boundary kinds of a
//! request, how a change was applied, and the shared schedule of the policies that defer
//! (`retention`, `age`, `truncate`, `oracle`): pending changes go through at a boundary unless
//! their episode changed less than `min_dwell` requests ago, and at once, as a counted emergency,
//! when the context would otherwise overflow the budget.
//!
//! Every pending change (desired ≠ applied after scheduling) is counted at each request it waits,
//! under exactly one name:
//! - **dwell block**: its episode changed less than `min_dwell` requests ago, so not even a
//!   boundary would let it through;
//! - **deferral**: otherwise; it waits for the next boundary.

use serde::{Serialize, Serializer};

use super::state::State;

/// A moment where applying tier changes is cheap (MODEL §1), in the order frames list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BoundaryKind {
    /// Every request.
    Request,
    /// A human turn starts.
    UserTurn,
    /// The gap since the conversation's previous request exceeds `ttl_s`.
    CacheExpiry,
    /// The previous step changed a todo's status or was a compaction summary call.
    Milestone,
    /// Magic Context folded (a HARD trigger or its pressure backstop).
    Fold,
}

impl BoundaryKind {
    pub const ALL: [BoundaryKind; 5] = [
        BoundaryKind::Request,
        BoundaryKind::UserTurn,
        BoundaryKind::CacheExpiry,
        BoundaryKind::Milestone,
        BoundaryKind::Fold,
    ];
    pub fn as_str(&self) -> &'static str {
        match self {
            BoundaryKind::Request => "request",
            BoundaryKind::UserTurn => "user-turn",
            BoundaryKind::CacheExpiry => "cache-expiry",
            BoundaryKind::Milestone => "milestone",
            BoundaryKind::Fold => "fold",
        }
    }
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl std::fmt::Display for BoundaryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for BoundaryKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The boundary kinds that hold at one request (a set, listed in [`BoundaryKind`] order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Boundaries(u8);

impl Boundaries {
    pub fn insert(&mut self, b: BoundaryKind) {
        self.0 |= b.bit();
    }
    pub fn contains(&self, b: BoundaryKind) -> bool {
        self.0 & b.bit() != 0
    }
    pub fn iter(&self) -> impl Iterator<Item = BoundaryKind> + '_ {
        BoundaryKind::ALL.into_iter().filter(|b| self.contains(*b))
    }
    pub fn to_vec(self) -> Vec<BoundaryKind> {
        self.iter().collect()
    }
}

/// How a change was applied: `immediate`, `boundary:<kind>` or `emergency` in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Applied {
    /// At once: the policy applies at every request (or the change is a compaction).
    Immediate,
    /// At a boundary of this kind.
    Boundary(BoundaryKind),
    /// Off schedule (between boundaries, or inside `min_dwell`) because the context would
    /// otherwise overflow the budget.
    Emergency,
}

impl Applied {
    pub fn as_str(&self) -> &'static str {
        match self {
            Applied::Immediate => "immediate",
            Applied::Boundary(BoundaryKind::Request) => "boundary:request",
            Applied::Boundary(BoundaryKind::UserTurn) => "boundary:user-turn",
            Applied::Boundary(BoundaryKind::CacheExpiry) => "boundary:cache-expiry",
            Applied::Boundary(BoundaryKind::Milestone) => "boundary:milestone",
            Applied::Boundary(BoundaryKind::Fold) => "boundary:fold",
            Applied::Emergency => "emergency",
        }
    }
    /// The boundary kind a change waited for, if it waited for one.
    pub fn boundary(&self) -> Option<BoundaryKind> {
        match self {
            Applied::Boundary(b) => Some(*b),
            _ => None,
        }
    }
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Applied {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for Applied {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The `boundary` knob: which boundary lets deferred changes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Boundary {
    Request,
    /// A human turn; milestones and cache expiry also let changes through (changing the prefix
    /// there costs nothing extra).
    UserTurn,
    /// A milestone, or cache expiry.
    Milestone,
    CacheExpiry,
}

impl Boundary {
    pub fn from_knob(word: &str) -> Boundary {
        match word {
            "user-turn" => Boundary::UserTurn,
            "cache-expiry" => Boundary::CacheExpiry,
            "milestone" => Boundary::Milestone,
            _ => Boundary::Request,
        }
    }

    /// How a change may be applied now, if a boundary of this kind holds.
    pub fn now(&self, b: Boundaries) -> Option<Applied> {
        use BoundaryKind as K;
        let first = |kinds: &[K]| {
            kinds
                .iter()
                .copied()
                .find(|k| b.contains(*k))
                .map(Applied::Boundary)
        };
        match self {
            Boundary::Request => Some(Applied::Immediate),
            Boundary::UserTurn => first(&[K::UserTurn, K::Milestone, K::CacheExpiry]),
            Boundary::Milestone => first(&[K::Milestone, K::CacheExpiry]),
            Boundary::CacheExpiry => first(&[K::CacheExpiry]),
        }
    }
}

/// The shared schedule: a boundary knob and a minimum dwell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    pub boundary: Boundary,
    /// Requests an episode stays at a tier before it may change again (0 = no dwell).
    pub min_dwell: usize,
}

/// Counts of one request's pending changes (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Waiting {
    pub deferred: u64,
    pub dwell_blocked: u64,
}

impl Schedule {
    /// Whether episode `e` may change again at request `now` (outside an emergency).
    pub fn dwell_ok(&self, st: &State<'_, '_>, e: usize) -> bool {
        self.min_dwell == 0
            || st
                .last_change(e)
                .is_none_or(|r| st.now() - r >= self.min_dwell)
    }

    /// Apply pending changes at a boundary; otherwise keep them waiting unless the context
    /// (`base` = system + active episode) would overflow, then apply pending demotions oldest
    /// first as counted emergencies until it fits.
    pub fn run(&self, st: &mut State<'_, '_>, base: u64) {
        if st.pending_count() == 0 {
            return;
        }
        if let Some(how) = self.boundary.now(st.boundaries()) {
            for e in st.pending() {
                if self.dwell_ok(st, e) {
                    st.apply(e, how);
                }
            }
        }
        let total = |st: &State<'_, '_>| base + st.summary_tokens() + st.applied_sum();
        if total(st) > st.budget() {
            let demotions: Vec<usize> = st
                .pending()
                .into_iter()
                .filter(|&e| st.desired(e) > st.applied(e))
                .collect();
            for e in demotions {
                if total(st) <= st.budget() {
                    break;
                }
                st.apply(e, Applied::Emergency);
            }
        }
    }

    /// Split the changes still pending after [`Schedule::run`] into deferrals and dwell blocks.
    pub fn waiting(&self, st: &State<'_, '_>) -> Waiting {
        let mut w = Waiting::default();
        if self.min_dwell == 0 {
            w.deferred = st.pending_count() as u64;
            return w;
        }
        for e in st.pending() {
            if self.dwell_ok(st, e) {
                w.deferred += 1;
            } else {
                w.dwell_blocked += 1;
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(kinds: &[BoundaryKind]) -> Boundaries {
        let mut b = Boundaries::default();
        for k in kinds {
            b.insert(*k);
        }
        b
    }

    #[test]
    fn boundary_knob_picks_the_kind_that_lets_changes_through() {
        use BoundaryKind as K;
        let only_request = set(&[K::Request]);
        assert_eq!(
            Boundary::Request.now(only_request),
            Some(Applied::Immediate)
        );
        assert_eq!(Boundary::UserTurn.now(only_request), None);
        assert_eq!(Boundary::Milestone.now(only_request), None);
        assert_eq!(Boundary::CacheExpiry.now(only_request), None);
        let turn_and_expiry = set(&[K::Request, K::UserTurn, K::CacheExpiry]);
        assert_eq!(
            Boundary::UserTurn.now(turn_and_expiry),
            Some(Applied::Boundary(K::UserTurn))
        );
        assert_eq!(
            Boundary::Milestone.now(turn_and_expiry),
            Some(Applied::Boundary(K::CacheExpiry))
        );
        let milestone = set(&[K::Request, K::Milestone]);
        assert_eq!(
            Boundary::UserTurn.now(milestone),
            Some(Applied::Boundary(K::Milestone))
        );
        assert_eq!(Boundary::CacheExpiry.now(milestone), None);
    }

    /// The schedule on a real state: a demotion waits for a boundary (deferred), goes through
    /// at one, then a reversal inside `min_dwell` waits (dwell block) unless the context would
    /// overflow (emergency).
    #[test]
    fn pending_changes_wait_for_a_boundary_or_the_dwell() {
        use crate::episode::Tier;
        use crate::replay::output::Reason;
        let synth = crate::replay::synth::generate(&crate::replay::synth::SynthSpec {
            requests: 12,
            episodes: 4,
            ..Default::default()
        });
        let input = synth.input();
        let prep = crate::replay::prepare::Prep::new(
            &input,
            crate::replay::prepare::Filter::NoArtefacts,
            false,
            Some(0),
        );
        let mut st = State::new(&prep, 1_000_000, false, 20);
        let sched = Schedule {
            boundary: Boundary::UserTurn,
            min_dwell: 3,
        };
        let request_only = set(&[BoundaryKind::Request]);
        st.begin(0, request_only);
        st.close(0);
        st.want(0, Tier::Compact, Reason::Pressure);
        sched.run(&mut st, 0);
        assert_eq!(st.applied(0), Tier::Full);
        assert_eq!(
            sched.waiting(&st),
            Waiting {
                deferred: 1,
                dwell_blocked: 0
            }
        );
        st.begin(1, set(&[BoundaryKind::Request, BoundaryKind::UserTurn]));
        sched.run(&mut st, 0);
        assert_eq!(st.applied(0), Tier::Compact);
        assert_eq!(st.counts.changes.len(), 1);
        assert_eq!(
            st.counts.changes[0].applied,
            Applied::Boundary(BoundaryKind::UserTurn)
        );
        // A promotion back two requests later is inside min_dwell, even at a boundary.
        st.begin(3, set(&[BoundaryKind::Request, BoundaryKind::UserTurn]));
        st.want(0, Tier::Full, Reason::Pressure);
        sched.run(&mut st, 0);
        assert_eq!(
            sched.waiting(&st),
            Waiting {
                deferred: 0,
                dwell_blocked: 1
            }
        );
        // A demotion inside min_dwell goes through only when the context would overflow.
        st.want(0, Tier::Anchor, Reason::Pressure);
        let tight = st.applied_sum() - 1;
        sched.run(&mut st, 0);
        assert_eq!(st.applied(0), Tier::Compact, "within budget: it waits");
        let mut over = State::new(&prep, tight, false, 20);
        over.begin(0, request_only);
        over.close(0);
        over.want(0, Tier::Anchor, Reason::Pressure);
        sched.run(&mut over, 0);
        assert_eq!(over.applied(0), Tier::Anchor);
        assert_eq!(over.counts.emergencies, 1);
        assert_eq!(over.counts.changes[0].applied, Applied::Emergency);
    }

    #[test]
    fn words_stay_the_json_words() {
        assert_eq!(
            serde_json::to_string(&Applied::Boundary(BoundaryKind::UserTurn)).ok(),
            Some("\"boundary:user-turn\"".to_owned())
        );
        assert_eq!(Applied::Emergency.to_string(), "emergency");
        let b = set(&[
            BoundaryKind::Fold,
            BoundaryKind::Request,
            BoundaryKind::Milestone,
        ]);
        assert_eq!(
            serde_json::to_string(&b.to_vec()).ok(),
            Some("[\"request\",\"milestone\",\"fold\"]".to_owned())
        );
    }
}

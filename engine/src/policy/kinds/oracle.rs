//! `oracle` and `oracle-legal`: the policy that knows the probes. Each closed episode at the
//! lowest tier whose text still holds every needle due later (within the legal range when
//! floors are respected, so floors set too high show up as excess fidelity). Without probes
//! nothing is asked of an episode, so every one is dropped (`oracle`) or at its floor
//! (`oracle-legal`).

use super::{Compacted, Decide, Kind, KindRole, RequestView, Setup};
use crate::episode::Tier;
use crate::policy::knobs::{boundary, common};
use crate::policy::{KnobSpec, Policy};
use crate::replay::output::Reason;
use crate::replay::schedule::{Boundary, Schedule};
use crate::replay::state::State;

pub(crate) struct Oracle {
    schedule: Schedule,
    /// The unconstrained oracle tier per episode.
    tiers: Vec<Tier>,
}

impl Kind for Oracle {
    const ROLE: KindRole = KindRole::Oracle;
    fn specs() -> Vec<KnobSpec> {
        let mut v = common(false);
        v.push(boundary("request"));
        v
    }
    fn build(p: &Policy, setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        let n = setup.prep.episodes.len();
        Box::new(Oracle {
            schedule: Schedule {
                boundary: Boundary::from_knob(p.choice("boundary")),
                min_dwell: 0,
            },
            tiers: (0..n).map(|e| setup.probes.oracle_tier(e)).collect(),
        })
    }
}

impl Decide for Oracle {
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        for e in 0..st.closed_count() {
            let t = st.clamp(e, self.tiers[e]);
            if t != st.desired(e) {
                st.want(e, t, Reason::Oracle);
            }
        }
        self.schedule.run(st, rq.base);
        None
    }
    fn schedule(&self) -> Option<Schedule> {
        Some(self.schedule)
    }
}

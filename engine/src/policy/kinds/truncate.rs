//! `truncate`: drop the oldest closed episodes whole until the desired rendering fits the
//! budget (ignores floors). Changes go through the shared schedule (`boundary`, default
//! `request`).

use super::{Compacted, Decide, Kind, RequestView, Setup};
use crate::episode::Tier;
use crate::policy::knobs::{boundary, common};
use crate::policy::{KnobSpec, Policy};
use crate::replay::output::Reason;
use crate::replay::schedule::{Boundary, Schedule};
use crate::replay::state::State;

pub(crate) struct Truncate {
    schedule: Schedule,
    /// The next episode to drop (every one before it is dropped).
    next: usize,
}

impl Kind for Truncate {
    fn specs() -> Vec<KnobSpec> {
        let mut v = common(false);
        v.push(boundary("request"));
        v
    }
    fn build(p: &Policy, _setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        Box::new(Truncate {
            schedule: Schedule {
                boundary: Boundary::from_knob(p.choice("boundary")),
                min_dwell: 0,
            },
            next: 0,
        })
    }
}

impl Decide for Truncate {
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        while rq.base + st.desired_sum() > st.budget() && self.next < st.closed_count() {
            let e = self.next;
            self.next += 1;
            let t = st.clamp(e, Tier::Dropped);
            st.want(e, t, Reason::Truncation);
        }
        self.schedule.run(st, rq.base);
        None
    }
    fn schedule(&self) -> Option<Schedule> {
        Some(self.schedule)
    }
}

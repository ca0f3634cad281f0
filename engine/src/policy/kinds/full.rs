//! `full`: every episode at `full`, forever; no changes. The never-forget baseline (it
//! overflows), and the yardstick of `divergence_cost`.

use super::{Compacted, Decide, Floors, Kind, KindRole, RequestView, Setup};
use crate::policy::knobs::common;
use crate::policy::{KnobSpec, Policy};
use crate::replay::state::State;

pub(crate) struct Full;

impl Kind for Full {
    const ROLE: KindRole = KindRole::Baseline;
    const FLOORS: Floors = Floors::Always;
    /// No knob decides anything: every episode stays full.
    fn headline_knobs(_p: &Policy) -> &'static [&'static str] {
        &[]
    }
    fn specs() -> Vec<KnobSpec> {
        common(false)
    }
    fn build(_p: &Policy, _setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        Box::new(Full)
    }
}

impl Decide for Full {
    fn decide(&mut self, _st: &mut State<'_, '_>, _rq: &RequestView<'_>) -> Option<Compacted> {
        None
    }
}

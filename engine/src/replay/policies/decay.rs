//! STEP1-PORT: the decay kind as it was, moved out of the engine unchanged.

use super::{Decide, Kind, RequestView, Setup};
use crate::episode::Tier;
use crate::policy::decay::Curve;
use crate::policy::kinds::{choice, common, flag, num};
use crate::policy::{KnobSpec, Policy};
use crate::replay::schedule::{Applied, BoundaryKind};
use crate::replay::state::State;
use crate::replay::types::Reason;

pub(crate) struct Decay {
    curve: Curve,
    measured_cost: bool,
    const_costs: [f64; 4],
    history_share: f64,
    backstop_m1_m0: f64,
    backstop_m1_budget: f64,
    imp_factor: Vec<f64>,
    folded: bool,
    m0_tokens: u64,
    m1_tokens: u64,
    last_sys: Option<u64>,
}

impl Kind for Decay {
    fn specs() -> Vec<KnobSpec> {
        let mut v = common(false);
        v.extend([
            flag("respect_floors", false,
                "keep episodes at or above their floors (Magic Context has no floors, so off by default)"),
            num("h50", 24.0, 1.0, 1000.0, 1.0, "half-life in episodes at importance 50 and pressure 1"),
            num("d", 25.0, 1.0, 200.0, 1.0, "importance points per doubling of the half-life"),
            num("z1", 0.201, 0.0, 10.0, 0.001, "z-boundary full → dense"),
            num("z2", 0.729, 0.0, 10.0, 0.001, "z-boundary dense → compact"),
            num("z3", 1.322, 0.0, 10.0, 0.001, "z-boundary compact → anchor"),
            num("z4", 2.587, 0.0, 20.0, 0.001, "z-boundary anchor → archived (dropped)"),
            num("p_floor", 0.1, 0.001, 1.0, 0.01, "pressure floor (caps relaxation at 1/p_floor)"),
            choice("tier_cost", "constants", &["constants", "measured"],
                "pressure from Magic Context's per-tier constants or from each episode's own token counts"),
            num("cost_full", 322.0, 0.0, 100_000.0, 1.0, "constant tokens of a full (P1) episode"),
            num("cost_dense", 109.0, 0.0, 100_000.0, 1.0, "constant tokens of a dense (P2) episode"),
            num("cost_compact", 35.0, 0.0, 100_000.0, 1.0, "constant tokens of a compact (P3) episode"),
            num("cost_anchor", 20.0, 0.0, 100_000.0, 1.0, "constant tokens of an anchor (P4) episode"),
            num("execute_threshold", 0.65, 0.2, 0.9, 0.05, "Magic Context's execute threshold (share of the budget)"),
            num("history_budget_percentage", 0.15, 0.05, 1.0, 0.05,
                "history budget = budget × execute_threshold × this"),
            num("backstop_m1_m0", 0.15, 0.0, 10.0, 0.01,
                "fold when tokens closed since the last fold exceed this share of the folded tokens (folded ≥ 500)"),
            num("backstop_m1_budget", 0.2, 0.0, 10.0, 0.01,
                "fold when tokens closed since the last fold exceed this share of the history budget"),
        ]);
        v
    }
    fn check(p: &Policy) -> Result<(), String> {
        let z = [p.num("z1"), p.num("z2"), p.num("z3"), p.num("z4")];
        if !(z[0] < z[1] && z[1] < z[2] && z[2] < z[3]) {
            return Err(format!("knobs must satisfy z1 < z2 < z3 < z4 (got {z:?})"));
        }
        Ok(())
    }
    fn build(p: &Policy, _setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        Box::new(Decay {
            curve: Curve {
                h50: p.num("h50"),
                d: p.num("d"),
                z: [p.num("z1"), p.num("z2"), p.num("z3"), p.num("z4")],
                p_floor: p.num("p_floor"),
            },
            measured_cost: p.choice("tier_cost") == "measured",
            const_costs: [
                p.num("cost_full"),
                p.num("cost_dense"),
                p.num("cost_compact"),
                p.num("cost_anchor"),
            ],
            history_share: p.num("execute_threshold") * p.num("history_budget_percentage"),
            backstop_m1_m0: p.num("backstop_m1_m0"),
            backstop_m1_budget: p.num("backstop_m1_budget"),
            imp_factor: Vec::new(),
            folded: false,
            m0_tokens: 0,
            m1_tokens: 0,
            last_sys: None,
        })
    }
}

impl Decide for Decay {
    fn on_close(&mut self, st: &State<'_, '_>, e: usize) {
        self.m1_tokens += st.ep_tokens(e);
    }
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> bool {
        if st.k() == 0 {
            return false;
        }
        let hb = st.budget() as f64 * self.history_share;
        let backstop = (self.m0_tokens >= 500
            && self.m1_tokens as f64 > self.backstop_m1_m0 * self.m0_tokens as f64)
            || self.m1_tokens as f64 > self.backstop_m1_budget * hb;
        let changed = self.last_sys.is_some_and(|k| k != rq.rq.sys_key);
        let how = if !self.folded || !rq.cache_warm || changed || backstop {
            Applied::Boundary(BoundaryKind::Fold)
        } else if rq.base + st.summary_tokens() + st.applied_sum() > st.budget() {
            Applied::Emergency
        } else {
            return false;
        };
        st.add_boundary(BoundaryKind::Fold);
        self.fold(st, hb, how);
        false
    }
    fn after(&mut self, _st: &State<'_, '_>, rq: &RequestView<'_>, _tokens: u64) {
        self.last_sys = Some(rq.rq.sys_key);
    }
}

impl Decay {
    fn fold(&mut self, st: &mut State<'_, '_>, hb: f64, how: Applied) {
        let k = st.k();
        let curve = self.curve;
        if self.imp_factor.len() < k {
            let start = self.imp_factor.len();
            for e in start..st.n() {
                self.imp_factor.push(curve.factor(st.p.eps[e].importance));
            }
        }
        let natural: f64 = (0..k)
            .map(
                |e| match curve.tier_with_factor(k - e, self.imp_factor[e], 1.0) {
                    t @ 1..=4 => {
                        let d = usize::from(t) - 1;
                        if self.measured_cost {
                            st.tokens_at(e, Tier::TIERS[d], None) as f64
                        } else {
                            self.const_costs[d]
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
                let c = st.clamp(e, t);
                if c < st.p.effective(e, t) {
                    st.hold(e);
                }
                c
            })
            .collect();
        let tok = |st: &State<'_, '_>, e: usize, t: Tier| st.tokens_at(e, t, None);
        let mut running: u64 = (0..k).map(|e| tok(st, e, tiers[e])).sum();
        let mut guard = 5 * k;
        let mut oldest = 0;
        while running as f64 > hb && guard > 0 && oldest < k {
            guard -= 1;
            match st.next_lower(oldest, tiers[oldest]) {
                Some(lower) => {
                    running = running - tok(st, oldest, tiers[oldest]) + tok(st, oldest, lower);
                    tiers[oldest] = lower;
                }
                None => {
                    if st.respect_floors() && tiers[oldest] != Tier::Dropped {
                        st.hold(oldest);
                    }
                    oldest += 1;
                }
            }
        }
        for (e, t) in tiers.into_iter().enumerate() {
            if t != st.applied(e) {
                st.set_now(e, t, Reason::Decay, how);
            } else {
                st.want(e, t, Reason::Decay);
            }
        }
        self.folded = true;
        self.m0_tokens = st.applied_sum();
        self.m1_tokens = 0;
    }
}

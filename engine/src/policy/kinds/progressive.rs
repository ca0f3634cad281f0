//! The `progressive` kind: tiers that step down as the session goes on, through the shared
//! schedule (`boundary`, `min_dwell`). Two drivers:
//! - `driver = age` (the built-in `age`): the naive baseline, a tier from requests since the
//!   episode closed (`dense_after`, `compact_after`, `anchor_after`), floors ignored;
//! - `driver = pressure` (the built-in `retention`): budget pressure with hysteresis inside the
//!   legal range, victims ordered by class, relevance and age ([`super::retention`]).
//!
//! Relevance (MODEL §3.2) is kept here for both: an episode is relevant at request t when a
//! request in (t − `relevance_window`, t) touched one of its keys; with
//! `relevance_source = probes` the schedule is told instead which episodes the due probes need.

use super::retention::{Retention, RetentionKnobs};
use super::{Compacted, Decide, Kind, PromotionWait, RequestView, Setup, Thresholds};
use crate::episode::Tier;
use crate::policy::knobs::{boundary, choice, common, num, uint};
use crate::policy::{KnobSpec, Policy};
use crate::replay::output::Reason;
use crate::replay::schedule::{Boundary, Schedule};
use crate::replay::state::State;

pub(crate) struct Progressive;

impl Kind for Progressive {
    /// The age driver reads its age steps, the pressure driver its thresholds and relevance
    /// (the relevance window only when relevance comes from the requests, not the probes).
    fn reads(p: &Policy, name: &str) -> bool {
        let age = p.choice("driver") == "age";
        match name {
            "demote_at" | "target" | "promote_at" | "promote_after" | "relevance_source" => !age,
            "relevance_window" => !age && p.choice("relevance_source") != "probes",
            "dense_after" | "compact_after" | "anchor_after" => age,
            _ => true,
        }
    }
    fn headline_knobs(p: &Policy) -> &'static [&'static str] {
        if p.choice("driver") == "age" {
            &["dense_after", "compact_after", "anchor_after"]
        } else {
            &["demote_at", "target", "promote_at", "min_dwell"]
        }
    }
    fn thresholds(p: &Policy) -> Option<Thresholds> {
        (p.choice("driver") != "age").then(|| Thresholds::of(p))
    }
    /// The hysteresis thresholds of the pressure driver; the age driver's steps.
    fn sweep_pairs(_p: &Policy) -> &'static [(&'static str, &'static str)] {
        &[
            ("demote_at", "promote_at"),
            ("dense_after", "compact_after"),
        ]
    }
    /// The pressure driver's `promote_after` (the age driver never promotes).
    fn promotion_wait(p: &Policy) -> Option<PromotionWait> {
        Self::reads(p, "promote_after").then(|| PromotionWait {
            requests: uint(p.num("promote_after")) as usize,
            knob: "promote_after",
        })
    }
    fn specs() -> Vec<KnobSpec> {
        let mut v = common(false);
        v.extend([
            choice("driver", "pressure", &["pressure", "age"],
                "pressure = demote/promote by budget pressure with hysteresis (retention); age = tier from age alone (the naive baseline)"),
            num("demote_at", 0.9, 0.05, 2.0, 0.01, "pressure above which victims are demoted").short("dem"),
            num("target", 0.75, 0.05, 2.0, 0.01, "pressure that demotion aims for and promotion must not exceed").short("tgt"),
            num("promote_at", 0.6, 0.0, 2.0, 0.01, "pressure below which episodes are promoted").short("pro"),
            num("promote_after", 20.0, 0.0, 1000.0, 1.0,
                "an episode demoted this many requests ago or fewer is not promoted again (0 = no wait): a reversal that soon is thrash"),
            num("min_dwell", 3.0, 0.0, 1000.0, 1.0,
                "an episode changed less than this many requests ago is not changed again (except in an emergency)")
                .short("dwell"),
            boundary("user-turn"),
            num("relevance_window", 10.0, 0.0, 1000.0, 1.0,
                "an episode is relevant when one of the last N requests touched one of its keys"),
            choice("relevance_source", "keys", &["keys", "probes"],
                "keys = from tool inputs and user text; probes = the scheduler is told which episodes due probes need"),
            num("dense_after", 2.0, 0.0, 100_000.0, 1.0, "age driver: requests after closing before dense").short("dense"),
            num("compact_after", 4.0, 0.0, 100_000.0, 1.0, "age driver: requests after closing before compact").short("cmpct"),
            num("anchor_after", 8.0, 0.0, 100_000.0, 1.0, "age driver: requests after closing before anchor").short("anchr"),
        ]);
        v
    }
    fn check(p: &Policy) -> Result<(), String> {
        let (pa, t, da) = (p.num("promote_at"), p.num("target"), p.num("demote_at"));
        if !(pa < t && t < da) {
            return Err(format!(
                "knobs must satisfy promote_at < target < demote_at (got {pa} < {t} < {da})"
            ));
        }
        let (d, c, a) = (
            p.num("dense_after"),
            p.num("compact_after"),
            p.num("anchor_after"),
        );
        if !(d <= c && c <= a) {
            return Err(format!(
                "knobs must satisfy dense_after <= compact_after <= anchor_after (got {d}, {c}, {a})"
            ));
        }
        Ok(())
    }
    fn build(p: &Policy, setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        let n = setup.prep.episodes.len();
        let schedule = Schedule {
            boundary: Boundary::from_knob(p.choice("boundary")),
            min_dwell: uint(p.num("min_dwell")) as usize,
        };
        let relevance = Relevance {
            window: uint(p.num("relevance_window")) as usize,
            from_probes: p.choice("relevance_source") == "probes",
            count: vec![0; n],
            needed: if p.choice("relevance_source") == "probes" {
                (0..setup.prep.reqs.len())
                    .map(|t| setup.probes.needed_from(t).collect())
                    .collect()
            } else {
                Vec::new()
            },
        };
        if p.choice("driver") == "age" {
            Box::new(Age {
                schedule,
                thresholds: [
                    uint(p.num("dense_after")) as usize,
                    uint(p.num("compact_after")) as usize,
                    uint(p.num("anchor_after")) as usize,
                ],
            })
        } else {
            Box::new(Retention::new(
                RetentionKnobs {
                    demote_at: p.num("demote_at"),
                    target: p.num("target"),
                    promote_at: p.num("promote_at"),
                    promote_after: uint(p.num("promote_after")) as usize,
                },
                schedule,
                relevance,
                setup.prep,
            ))
        }
    }
}

/// Which episodes are relevant now (MODEL §3.2).
pub(crate) struct Relevance {
    window: usize,
    from_probes: bool,
    /// Per episode: touches inside the window (probes: due probes needing it so far).
    count: Vec<u32>,
    /// `relevance_source = probes`: per request, the source episodes of the probes due there.
    needed: Vec<Vec<usize>>,
}

impl Relevance {
    pub fn is_relevant(&self, e: usize) -> bool {
        self.count[e] > 0
    }
    pub fn touches(&self, e: usize) -> u32 {
        self.count[e]
    }
    /// Slide the window to request `t`: add request t − 1, remove t − 1 − window. Returns the
    /// episodes that became or stopped being relevant.
    pub fn advance(&mut self, st: &State<'_, '_>, t: usize) -> Vec<usize> {
        let mut flipped = Vec::new();
        if self.from_probes {
            for &e in self.needed.get(t).map_or(&[][..], Vec::as_slice) {
                self.count[e] += 1;
                if self.count[e] == 1 {
                    flipped.push(e);
                }
            }
            return flipped;
        }
        if self.window == 0 {
            return flipped;
        }
        if t >= 1 {
            for &e in st.p.touched(t - 1) {
                let e = e as usize;
                self.count[e] += 1;
                if self.count[e] == 1 {
                    flipped.push(e);
                }
            }
        }
        if t > self.window {
            for &e in st.p.touched(t - 1 - self.window) {
                let e = e as usize;
                self.count[e] -= 1;
                if self.count[e] == 0 {
                    flipped.push(e);
                }
            }
        }
        flipped
    }
}

/// `driver = age`: a tier from requests since the episode closed.
struct Age {
    schedule: Schedule,
    thresholds: [usize; 3],
}

impl Decide for Age {
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        let [d, c, a] = self.thresholds;
        for e in 0..st.closed_count() {
            let age = st.now() - st.closed_at(e);
            let t = if age >= a {
                Tier::Anchor
            } else if age >= c {
                Tier::Compact
            } else if age >= d {
                Tier::Dense
            } else {
                Tier::Full
            };
            let t = st.clamp(e, t);
            if t != st.desired(e) {
                st.want(e, t, Reason::Age);
            }
        }
        self.schedule.run(st, rq.base);
        None
    }
    fn schedule(&self) -> Option<Schedule> {
        Some(self.schedule)
    }
}

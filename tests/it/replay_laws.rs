//! The laws of MODEL §2 and the scheduling rules of §3, as properties over generated traces,
//! budgets and knobs (see `tierscope_engine::replay::synth`).

use proptest::prelude::*;
use tierscope_engine::episode::{Episode, Tier};
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::synth::{generate, Synth, SynthSpec};
use tierscope_engine::replay::{self, render_at, Applied, Cell, Frame, Reason, Replay};

fn spec() -> impl Strategy<Value = SynthSpec> {
    (
        20usize..160,
        3usize..30,
        any::<u64>(),
        10u32..200,
        0usize..40,
    )
        .prop_map(|(requests, episodes, seed, hi, long_gap_every)| SynthSpec {
            requests,
            episodes,
            seed,
            chunk_tokens: (5, hi.max(6)),
            long_gap_every,
            probes: true,
            recorded_system: 0,
        })
}

/// Retention knobs: demote_at, the band's width, min_dwell and the boundary.
fn band() -> impl Strategy<Value = (f64, f64, usize, &'static str)> {
    (
        0.8f64..0.99,
        0.05f64..0.3,
        0usize..6,
        prop::sample::select(vec!["request", "user-turn", "cache-expiry", "milestone"]),
    )
}

/// `retention` with promote_at < target < demote_at spread over `gap`, plus `more` knobs.
fn retention(
    (demote, gap, dwell, boundary): (f64, f64, usize, &str),
    more: &[(&str, String)],
) -> Policy {
    let mut sets = vec![
        ("demote_at", format!("{demote:.3}")),
        ("target", format!("{:.3}", demote - gap / 2.0)),
        ("promote_at", format!("{:.3}", demote - gap)),
        ("min_dwell", dwell.to_string()),
        ("boundary", boundary.to_owned()),
    ];
    sets.extend(more.iter().cloned());
    pol("retention", &sets)
}

fn pol(name: &str, sets: &[(&str, String)]) -> Policy {
    let o: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    match policy::load(name, &o) {
        Ok(p) => p,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn total_full(s: &Synth) -> u64 {
    s.episodes
        .iter()
        .map(|e| u64::from(e.tokens(Tier::Full)))
        .sum()
}

/// The lowest tier a floor-respecting policy may show: the legal range, without `dropped` for an
/// episode with pinned spans (law 2 keeps them in the context).
fn lowest_legal(e: &Episode) -> Tier {
    let mut legal = e.legal_tiers();
    if !e.pins.is_empty() {
        legal.retain(|t| *t != Tier::Dropped);
    }
    *legal.last().unwrap_or(&Tier::Full)
}

/// Law 1 and 2 for floor-respecting policies: every applied tier is legal, nothing is counted.
fn check_legal(s: &Synth, r: &Replay) {
    for t in 0..r.frames.len() {
        for (i, e) in s.episodes.iter().enumerate() {
            if let Cell::Tier(tier) = r.applied.get(t, i) {
                assert!(
                    e.legal_tiers().contains(&tier),
                    "{} at {tier} outside {:?} at {t}",
                    e.id,
                    e.legal_tiers()
                );
            }
        }
        assert_eq!(r.frames[t].floor_violations, 0);
        assert_eq!(r.frames[t].pin_violations, 0);
    }
}

/// Law 5: a change is applied at a boundary of its frame, at once where the policy applies at
/// every request, or as a counted emergency.
fn check_schedule(r: &Replay, boundary: &str, min_dwell: usize) {
    let mut last: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &r.frames {
        let mut emergencies = 0;
        for c in &f.changes {
            match c.applied {
                Applied::Emergency => emergencies += 1,
                Applied::Immediate => {
                    assert_eq!(boundary, "request", "immediate change under {boundary}")
                }
                Applied::Boundary(kind) => {
                    assert!(
                        f.boundaries.contains(&kind),
                        "{} at a frame with {:?}",
                        c.applied,
                        f.boundaries
                    );
                    if let Some(prev) = last.get(&c.episode) {
                        assert!(
                            f.request - prev >= min_dwell,
                            "{} changed again after {} requests",
                            c.episode,
                            f.request - prev
                        );
                    }
                }
            }
            last.insert(c.episode.clone(), f.request);
        }
        assert_eq!(
            emergencies, f.emergencies,
            "emergencies counted at {}",
            f.request
        );
    }
}

/// Tokens of a frame's context before its changes: its tokens minus what each change added.
fn tokens_before_changes(s: &Synth, f: &Frame) -> u64 {
    let tok = |id: &str, t: Tier| {
        s.episodes
            .iter()
            .find(|e| e.id == id)
            .map_or(0, |e| i64::from(e.tokens(t)))
    };
    let delta: i64 = f
        .changes
        .iter()
        .map(|c| tok(&c.episode, c.to) - tok(&c.episode, c.from))
        .sum();
    (f.tokens as i64 - delta) as u64
}

/// MODEL §2 law 1: a hold is a victim already at its floor. Every episode listed as held is
/// shown at the lowest tier the policy may show it at, and no request counts more holds than it
/// has closed episodes at that tier.
fn check_held_at_floor(s: &Synth, r: &Replay) {
    for f in &r.frames {
        let mut at_floor = 0u64;
        for (i, e) in s.episodes.iter().enumerate() {
            if let Cell::Tier(t) = r.applied.get(f.request, i) {
                let lowest = if r.policy.respect_floors {
                    lowest_legal(e)
                } else {
                    Tier::Dropped
                };
                let floor_here = t == lowest;
                at_floor += u64::from(floor_here);
                if f.held.contains(&e.id) {
                    assert!(
                        floor_here,
                        "{} held at {t} above its floor {lowest} at {}",
                        e.id, f.request
                    );
                }
            } else {
                assert!(
                    !f.held.contains(&e.id),
                    "{} held but not closed at {}",
                    e.id,
                    f.request
                );
            }
        }
        assert!(
            f.holds >= f.held.len() as u64,
            "fewer holds than held at {}",
            f.request
        );
        assert!(
            f.holds <= at_floor,
            "{} holds but {at_floor} episodes at their floor at {}",
            f.holds,
            f.request
        );
    }
}

/// Every change still pending (desired ≠ applied) is counted once, as a deferral or a dwell
/// block.
fn check_pending_split(r: &Replay) {
    for f in &r.frames {
        let pending = (0..r.applied.episodes)
            .filter(|&e| {
                matches!(
                    (r.applied.get(f.request, e), r.desired.get(f.request, e)),
                    (Cell::Tier(a), Cell::Tier(d)) if a != d
                )
            })
            .count() as u64;
        assert_eq!(
            pending,
            f.deferred + f.dwell_blocks,
            "pending at {}",
            f.request
        );
    }
}

/// Thrash = changes that reverse the same episode's previous change within the window.
fn check_thrash(r: &Replay, window: usize) {
    let mut last: std::collections::BTreeMap<String, (usize, bool)> = Default::default();
    for f in &r.frames {
        let mut thrash = 0;
        for c in &f.changes {
            let down = c.to > c.from;
            if let Some((at, was_down)) = last.get(&c.episode) {
                if *was_down != down && f.request - at <= window {
                    thrash += 1;
                }
            }
            last.insert(c.episode.clone(), (f.request, down));
        }
        assert_eq!(thrash, f.thrash, "thrash at {}", f.request);
    }
}

/// The summary's counters are the sums of the frames'.
fn check_totals(r: &Replay) {
    let sum = |g: fn(&Frame) -> u64| r.frames.iter().map(g).sum::<u64>();
    let s = &r.summary;
    assert_eq!(s.changes, sum(|f| f.changes.len() as u64));
    assert_eq!(s.holds, sum(|f| f.holds));
    assert_eq!(s.deferred, sum(|f| f.deferred));
    assert_eq!(s.dwell_blocks, sum(|f| f.dwell_blocks));
    assert_eq!(s.emergencies, sum(|f| f.emergencies));
    assert_eq!(s.thrash, sum(|f| f.thrash));
    assert_eq!(s.floor_violations, sum(|f| f.floor_violations));
    assert_eq!(s.pin_violations, sum(|f| f.pin_violations));
    assert_eq!(s.prunes, sum(|f| f.prunes));
    assert_eq!(s.overflow_tokens, sum(|f| f.overflow));
    assert_eq!(s.overflow_requests, sum(|f| u64::from(f.overflow > 0)));
    assert_eq!(
        s.max_overflow,
        r.frames.iter().map(|f| f.overflow).max().unwrap_or(0)
    );
    assert_eq!(
        s.emergencies,
        r.frames
            .iter()
            .flat_map(|f| &f.changes)
            .filter(|c| c.applied == Applied::Emergency)
            .count() as u64
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn retention_keeps_floors_and_schedules_at_boundaries(
        sp in spec(),
        share in 0.05f64..1.2,
        knobs in band(),
    ) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        let (_, _, dwell, boundary) = knobs;
        let p = retention(knobs, &[]);
        let r = replay::replay(&s.input(), &p, Some(budget));
        check_legal(&s, &r);
        check_schedule(&r, boundary, dwell);
        // Overflow only when the floors alone exceed the budget.
        for f in r.frames.iter().filter(|f| f.overflow > 0) {
            let mut slack = 0u64;
            for (i, e) in s.episodes.iter().enumerate() {
                if let Cell::Tier(t) = r.applied.get(f.request, i) {
                    slack += u64::from(e.tokens(t)).saturating_sub(u64::from(e.tokens(lowest_legal(e))));
                }
            }
            prop_assert!(f.tokens - slack > budget, "overflow at {} with {} tokens of legal slack", f.request, slack);
        }
        // Law 4: byte-identical output.
        let again = replay::replay(&s.clone().input(), &p, Some(budget));
        prop_assert_eq!(serde_json::to_string(&r).ok(), serde_json::to_string(&again).ok());
    }

    #[test]
    fn every_builtin_keeps_its_contract(sp in spec(), share in 0.05f64..1.5) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        for name in policy::builtin_names() {
            let p = pol(&name, &[]);
            let r = replay::replay(&s.input(), &p, Some(budget));
            prop_assert_eq!(r.frames.len(), s.trace.requests.len());
            if p.respect_floors {
                check_legal(&s, &r);
            }
            if name == "full" {
                prop_assert_eq!(r.summary.changes, 0);
                prop_assert_eq!(r.summary.divergence_cost.tokens, 0);
                // Never forgetting only appends: every request extends the previous one.
                for w in r.frames.windows(2) {
                    prop_assert_eq!(w[1].divergence, w[0].tokens);
                }
            }
            for (i, f) in r.frames.iter().enumerate() {
                prop_assert_eq!(f.radius, f.tokens - f.divergence);
                if i > 0 {
                    prop_assert!(f.divergence <= r.frames[i - 1].tokens);
                }
                prop_assert!(f.cache_read <= f.divergence);
            }
            // Law 6: the replay never touches classes (they are inputs); tiers are reported apart.
            let again = replay::replay(&s.input(), &p, Some(budget));
            prop_assert_eq!(serde_json::to_string(&r).ok(), serde_json::to_string(&again).ok());
        }
    }

    /// The incremental divergence equals a chunk-by-chunk comparison of the rendered contexts.
    #[test]
    fn divergence_matches_rendered_chunks(sp in spec(), share in 0.1f64..0.9, pick in any::<prop::sample::Index>()) {
        let s = generate(&SynthSpec { requests: sp.requests.min(60), ..sp });
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        for name in ["retention", "age", "decay", "truncate", "oracle"] {
            let p = pol(name, &[]);
            let r = replay::replay(&s.input(), &p, Some(budget));
            let t = pick.index(r.frames.len());
            let ctx = render_at(&s.input(), &p, Some(budget), t).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(ctx.tokens, r.frames[t].tokens, "{} tokens at {}", name, t);
            if t > 0 {
                prop_assert_eq!(ctx.divergence, r.frames[t].divergence, "{} divergence at {}", name, t);
            }
        }
    }

    /// The counters of MODEL §2/§4, each meaning one thing: a held episode is shown at its
    /// floor; every pending change is a deferral or a dwell block; emergencies and thrash are
    /// exactly the changes that are emergencies and reversals; the summary totals are the sums
    /// of the frames.
    #[test]
    fn counters_mean_one_thing(
        sp in spec(),
        share in 0.05f64..1.2,
        knobs in band(),
        window in 1usize..30,
    ) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        let (_, _, dwell, boundary) = knobs;
        let p = retention(knobs, &[("thrash_window", window.to_string())]);
        let r = replay::replay(&s.input(), &p, Some(budget));
        check_held_at_floor(&s, &r);
        check_pending_split(&r);
        check_thrash(&r, window);
        check_schedule(&r, boundary, dwell);
        check_totals(&r);
    }

    /// Hysteresis (MODEL §4 `retention`): a request that needs room gives none back. No request
    /// applies both demotions and promotions for pressure; a promotion for pressure is applied
    /// only where p before the request's changes is below `promote_at`, and leaves p at or under
    /// `target`.
    #[test]
    fn retention_hysteresis_laws(
        sp in spec(),
        share in 0.05f64..1.2,
        knobs in band(),
    ) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        let p = retention(knobs, &[]);
        let (target, promote) = (p.num("target"), p.num("promote_at"));
        let r = replay::replay(&s.input(), &p, Some(budget));
        for f in &r.frames {
            let pressure_demotes = f.changes.iter().any(|c| c.reason == Reason::Pressure && c.to > c.from);
            let pressure_promotes = f.changes.iter().any(|c| c.reason == Reason::Pressure && c.to < c.from);
            prop_assert!(!(pressure_demotes && pressure_promotes), "request {} demotes and promotes for pressure: {:?}", f.request, f.changes);
            if pressure_promotes {
                let before = tokens_before_changes(&s, f) as f64 / budget as f64;
                prop_assert!(before < promote, "request {} promotes for pressure at p {before:.3} >= promote_at {promote}", f.request);
                prop_assert!(f.pressure <= target + 1e-9, "request {} promotes past the target: p {:.3} > {target}", f.request, f.pressure);
            }
        }
    }

    /// Hysteresis in time: no episode is promoted `promote_after` or fewer requests after its
    /// last demotion, whatever the promotion's reason, so with `promote_after = thrash_window`
    /// no promotion is thrash (a demotion soon after a promotion still can be).
    #[test]
    fn retention_waits_promote_after_a_demotion(
        sp in spec(),
        share in 0.05f64..1.2,
        knobs in band(),
        wait in 0usize..30,
    ) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        let p = retention(knobs, &[("promote_after", wait.to_string()), ("thrash_window", wait.max(1).to_string())]);
        let r = replay::replay(&s.input(), &p, Some(budget));
        let mut demoted_at: std::collections::HashMap<&str, usize> = Default::default();
        for f in &r.frames {
            for c in &f.changes {
                if c.to > c.from {
                    demoted_at.insert(&c.episode, f.request);
                } else if let Some(&at) = demoted_at.get(c.episode.as_str()) {
                    prop_assert!(f.request - at > wait, "request {} promotes {} demoted at {at} (promote_after {wait})", f.request, c.episode);
                }
                prop_assert!(!(c.thrash && c.to < c.from), "request {}: a promotion counted as thrash: {c:?}", f.request);
            }
        }
    }

    /// Every built-in's summary is the sum of its frames, and its pending changes are split
    /// into deferrals and dwell blocks.
    #[test]
    fn every_builtin_totals_its_frames(sp in spec(), share in 0.05f64..1.5) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        for name in policy::builtin_names() {
            let r = replay::replay(&s.input(), &pol(&name, &[]), Some(budget));
            check_totals(&r);
            check_pending_split(&r);
            check_held_at_floor(&s, &r);
        }
    }
}

/// Oscillating pressure: with the default hysteresis band the schedule thrashes less than with
/// the thresholds squeezed together (a fixed session, so the comparison is deterministic).
#[test]
fn oscillating_pressure_thrashes_without_hysteresis() {
    let s = generate(&SynthSpec {
        requests: 400,
        episodes: 80,
        seed: 7,
        ..SynthSpec::default()
    });
    let budget = total_full(&s) / 4;
    let wide = pol(
        "retention",
        &[("boundary", "request".into()), ("min_dwell", "0".into())],
    );
    let narrow = pol(
        "retention",
        &[
            ("boundary", "request".into()),
            ("min_dwell", "0".into()),
            ("promote_at", "0.89".into()),
            ("target", "0.895".into()),
            ("demote_at", "0.9".into()),
        ],
    );
    let a = replay::replay(&s.input(), &wide, Some(budget));
    let b = replay::replay(&s.input(), &narrow, Some(budget));
    println!(
        "thrash: defaults {} · squeezed thresholds {}",
        a.summary.thrash, b.summary.thrash
    );
    assert!(
        a.summary.thrash < b.summary.thrash,
        "defaults {} vs squeezed {}",
        a.summary.thrash,
        b.summary.thrash
    );
}

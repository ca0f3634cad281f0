//! The laws of MODEL §2 and the scheduling rules of §3, as properties over generated traces,
//! budgets and knobs (see `tierscope_engine::replay::synth`).

use proptest::prelude::*;
use tierscope_engine::episode::{Episode, Tier};
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::synth::{generate, Synth, SynthSpec};
use tierscope_engine::replay::{self, render_at, Cell, Replay};

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
            match c.applied.as_str() {
                "emergency" => emergencies += 1,
                "immediate" => assert_eq!(boundary, "request", "immediate change under {boundary}"),
                other => {
                    let kind = other.strip_prefix("boundary:").unwrap_or(other);
                    assert!(
                        f.boundaries.iter().any(|b| b == kind),
                        "{other} at a frame with {:?}",
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn retention_keeps_floors_and_schedules_at_boundaries(
        sp in spec(),
        share in 0.05f64..1.2,
        demote in 0.8f64..0.99,
        gap in 0.05f64..0.3,
        dwell in 0usize..6,
        boundary in prop::sample::select(vec!["request", "user-turn", "cache-expiry", "milestone"]),
    ) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        let target = demote - gap / 2.0;
        let promote = demote - gap;
        let p = pol("retention", &[
            ("demote_at", format!("{demote:.3}")),
            ("target", format!("{target:.3}")),
            ("promote_at", format!("{promote:.3}")),
            ("min_dwell", dwell.to_string()),
            ("boundary", boundary.to_owned()),
        ]);
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

    /// Hysteresis: the default gap between promote_at and demote_at thrashes no more than
    /// thresholds squeezed together.
    #[test]
    fn hysteresis_reduces_thrash(sp in spec(), share in 0.1f64..0.6) {
        let s = generate(&sp);
        let budget = ((total_full(&s) as f64) * share) as u64 + 1;
        let request = ("boundary", "request".to_owned());
        let wide = pol("retention", &[request.clone(), ("min_dwell", "0".into())]);
        let narrow = pol("retention", &[
            request,
            ("min_dwell", "0".into()),
            ("promote_at", "0.89".into()),
            ("target", "0.895".into()),
            ("demote_at", "0.9".into()),
        ]);
        let a = replay::replay(&s.input(), &wide, Some(budget));
        let b = replay::replay(&s.input(), &narrow, Some(budget));
        prop_assert!(a.summary.thrash <= b.summary.thrash, "defaults {} > squeezed {}", a.summary.thrash, b.summary.thrash);
    }
}

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
    assert!(a.summary.thrash <= b.summary.thrash);
}

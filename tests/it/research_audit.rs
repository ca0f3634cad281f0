//! The tier audit on a fixture with probes: the full tier keeps every probe and identifier, pins
//! survive every tier, `source` and `cascade` are both audited and their generation costs counted.

use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::Tier;
use tierscope_engine::fixture::{write_fixture, FixtureConfig};
use tierscope_engine::research::audit::audit;
use tierscope_engine::session::LoadOptions;

#[test]
fn audit_of_a_fixture_with_both_strategies() {
    let dir = tempfile::tempdir().unwrap();
    let report = write_fixture(
        &FixtureConfig {
            seed: 21,
            requests: 300,
            probe_density: 1.0,
            ..FixtureConfig::default()
        },
        dir.path(),
    )
    .unwrap();
    let load = |tiers| {
        tierscope_engine::session::load(&LoadOptions {
            path: report.export_path.clone(),
            tiers,
            ..LoadOptions::default()
        })
        .unwrap()
    };
    let (src, cas) = (load(TierSource::Source), load(TierSource::Cascade));
    let a = audit(&[&src, &cas]);
    assert_eq!(a.strategies.len(), 2);
    assert_eq!(a.strategies[0].strategy, "source");
    assert_eq!(a.strategies[1].strategy, "cascade");
    for s in &a.strategies {
        let full = s.totals.iter().find(|t| t.tier == Tier::Full).unwrap();
        // Every probe is planted in its episode's messages, so the full tier holds all of them.
        assert_eq!(full.probes, report.probes, "{}", s.strategy);
        assert_eq!(full.probes_ok, full.probes, "{}", s.strategy);
        assert_eq!(full.needles_ok, full.needles);
        assert_eq!(
            full.unsupported + full.contradictions + full.non_monotonic,
            0
        );
        // Lower tiers cost fewer tokens and keep less.
        let anchor = s.totals.iter().find(|t| t.tier == Tier::Anchor).unwrap();
        assert!(anchor.tokens < full.tokens);
        assert!(anchor.survival < full.survival);
        for e in &s.episodes {
            for t in &e.tiers {
                assert_eq!(
                    t.pins_ok, t.pins,
                    "{} {} {} loses a pin",
                    s.strategy, e.episode, t.tier
                );
            }
        }
        assert!(s.generation.representations > 0 && s.generation.output_tokens > 0);
    }
    // Cascade reads the tier above, source reads the full tier every time.
    assert!(a.strategies[1].generation.input_tokens < a.strategies[0].generation.input_tokens);
}

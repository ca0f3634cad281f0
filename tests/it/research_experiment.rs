//! The experiment table on a fixture: the oracles and `full` keep every probe, and no built-in
//! policy that stays within the legal range keeps as much as `oracle-legal` with fewer tokens.

use tierscope_engine::fixture::{write_fixture, FixtureConfig};
use tierscope_engine::research::experiment::{run, BudgetMode, Experiment};
use tierscope_engine::session::LoadOptions;

fn fixture_experiment(seed: u64, requests: usize, mode: BudgetMode) -> Experiment {
    let dir = tempfile::tempdir().unwrap();
    let cfg = FixtureConfig {
        seed,
        requests,
        ..FixtureConfig::default()
    };
    let report = write_fixture(&cfg, dir.path()).unwrap();
    let args = LoadOptions {
        path: report.export_path.clone(),
        ..LoadOptions::default()
    };
    let s = tierscope_engine::session::load(&args).unwrap();
    assert_eq!(
        s.probes.len(),
        report.probes,
        "the probes sidecar is found beside the export"
    );
    // The built-ins as `experiment` runs them: the session's own agent's flat baseline only.
    let policies = tierscope_engine::policy::builtins_for_agent(s.trace.origin.agent).unwrap();
    run(&s, &policies, mode)
}

fn row<'a>(e: &'a Experiment, name: &str) -> &'a tierscope_engine::research::experiment::Row {
    e.rows.iter().find(|r| r.policy == name).unwrap()
}

#[test]
fn oracles_and_full_keep_every_probe_and_oracle_legal_is_cheapest_at_its_survival() {
    for (seed, budget) in [(3u64, 40_000u64), (8, 25_000)] {
        let e = fixture_experiment(seed, 400, BudgetMode::Fixed(Some(budget)));
        for r in &e.rows {
            eprintln!(
                "{:<13} mean {:>9.0} surv {:?} floorv {} holds {} thrash {} changes {}",
                r.policy,
                r.mean_tokens,
                r.probe_survival,
                r.floor_violations,
                r.holds,
                r.thrash,
                r.changes
            );
        }
        assert_eq!(e.rows.len(), 8);
        assert_eq!(row(&e, "oracle").probe_survival, Some(1.0));
        assert_eq!(row(&e, "full").probe_survival, Some(1.0));
        let ol = row(&e, "oracle-legal");
        assert_eq!(ol.floor_violations, 0);
        let ol_surv = ol.probe_survival.unwrap();
        for r in e
            .rows
            .iter()
            .filter(|r| r.respect_floors && r.floor_violations == 0)
        {
            if r.probe_survival.unwrap() >= ol_surv {
                assert!(
                    r.mean_tokens >= ol.mean_tokens,
                    "{} keeps as much as oracle-legal with fewer tokens ({} < {})",
                    r.policy,
                    r.mean_tokens,
                    ol.mean_tokens
                );
            }
        }
    }
}

#[test]
fn budgets_tuned_to_a_mean_match_it_for_budget_driven_policies() {
    let e = fixture_experiment(5, 300, BudgetMode::MatchMeanTokens(Some(20_000.0)));
    assert_eq!(e.mode, "match-mean-tokens");
    assert_eq!(e.target_mean_tokens, Some(20_000.0));
    for name in ["retention", "truncate"] {
        let r = row(&e, name);
        assert_eq!(
            r.matched,
            Some(true),
            "{name}: mean {} at budget {}",
            r.mean_tokens,
            r.budget
        );
        assert!((r.mean_tokens - 20_000.0).abs() <= 400.0);
    }
    // `full` does not respond to the budget: reported, not matched.
    assert_eq!(row(&e, "full").matched, Some(false));
}

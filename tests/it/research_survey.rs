//! The survey on the recorded sample data dir: shares are shares, `full` saves nothing against
//! itself, aged history adds up, and the totals weight sessions by requests.

use tierscope_engine::episode::Tier;
use tierscope_engine::research::survey::{combine, survey_session, Unsurveyed};

#[test]
fn survey_of_the_sample_data_dir() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");
    let source = tierscope_engine::trace::open(Some(std::path::Path::new(dir))).unwrap();
    let list = source.list_sessions().unwrap();
    let policies: Vec<_> = ["full", "opencode", "retention", "age"]
        .iter()
        .map(|n| tierscope_engine::policy::load(n, &[]).unwrap())
        .collect();
    let mut sessions = Vec::new();
    for s in list.iter().filter(|s| s.parent_id.is_none()) {
        let t = source.load_session(Some(&s.id)).unwrap();
        let loaded = tierscope_engine::session::from_trace(t, &Default::default());
        let sv = survey_session(&loaded, &policies);
        assert!(
            (0.0..=1.0).contains(&sv.old_context_share),
            "{}",
            sv.old_context_share
        );
        assert!(sv.mean_old_tokens <= sv.mean_full_tokens);
        let aged: u64 = sv.aged_by_class.values().sum();
        let last = loaded.trace.requests.last().unwrap().message_index;
        let want: u64 = loaded
            .episodes
            .iter()
            .filter(|e| e.last_message < last)
            .map(|e| u64::from(e.tokens(Tier::Full)))
            .sum();
        assert_eq!(aged, want);
        for p in &sv.policies {
            let t = p.tiers;
            let sum = t.full + t.dense + t.compact + t.anchor + t.dropped;
            assert!(
                (sum - 1.0).abs() < 1e-9,
                "{} tier shares sum to {sum}",
                p.policy
            );
        }
        let full = sv.policies.iter().find(|p| p.policy == "full").unwrap();
        assert_eq!(full.saves_vs_full_tokens, 0.0);
        assert_eq!(full.switches_per_100, 0.0);
        sessions.push(sv);
    }
    assert!(sessions.len() >= 3);
    let failures = vec![Unsurveyed {
        session: "ses_broken".into(),
        error: "cannot read".into(),
    }];
    let n = sessions.len();
    let s = combine("sample".into(), sessions, failures);
    assert_eq!(s.sessions.len(), n);
    assert_eq!(s.failures.len(), 1);
    assert_eq!(s.policies.len(), 4);
    assert!(s.policies.iter().all(|p| p.sessions == n));
    assert!((0.0..=1.0).contains(&s.old_context_share));
}

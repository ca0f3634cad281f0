//! Sweeps on real recordings: a 6×6 grid on the largest recording completes, invalid points are
//! listed and skipped, the Pareto front is exactly the non-dominated set, results are deterministic.

use std::path::PathBuf;

use tierscope_engine::session::LoadOptions;
use tierscope_engine::session::LoadedSession;
use tierscope_engine::sweep::{self, dominates, Axis};

fn exports() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/recordings/opencode-1.18.33/exports"
        ),
        concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces"),
    ] {
        let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
        for e in rd.flatten() {
            let p = e.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.ends_with(".json")
                && !name.contains(".child")
                && !name.contains("manifest")
                && !name.ends_with(".probes.json")
                && !name.ends_with(".annotations.json")
                && !name.ends_with(".tiers.json")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    assert_eq!(out.len(), 5, "expected E1, E2, M1, B1, C1; found {out:?}");
    out
}

fn load(p: &std::path::Path) -> LoadedSession {
    tierscope_engine::session::load(&LoadOptions {
        path: Some(p.to_path_buf()),
        ..LoadOptions::default()
    })
    .unwrap()
}

/// The recording with the most requests.
fn largest() -> LoadedSession {
    let mut best: Option<LoadedSession> = None;
    for p in exports() {
        let s = load(&p);
        if best
            .as_ref()
            .is_none_or(|b| s.trace.requests.len() > b.trace.requests.len())
        {
            best = Some(s);
        }
    }
    best.expect("no recordings found")
}

#[test]
fn a_6x6_sweep_on_the_largest_recording_completes_with_a_correct_front() {
    let s = largest();
    let policy = tierscope_engine::policy::load("retention", &[]).unwrap();
    let axes = vec![
        Axis::parse("demote_at=0.80:0.95:0.03").unwrap(),
        Axis::parse("promote_at=0.35:0.60:0.05").unwrap(),
    ];
    // A budget well under the session's peak so that pressure matters.
    let peak = s
        .trace
        .requests
        .iter()
        .map(|r| r.recorded_prompt())
        .max()
        .unwrap();
    let budget = peak * 6 / 10;
    let ticks = std::sync::atomic::AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let r = sweep::run_with(&s, &policy, &axes, Some(budget), &|| {
        ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    eprintln!(
        "6x6 sweep on {} ({} requests) in {:.2}s",
        s.trace.session.id,
        s.trace.requests.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(r.points.len(), 36);
    assert_eq!(ticks.into_inner(), 36);
    assert_eq!(r.valid(), 36);
    assert_eq!(
        r.at(&[5, 5]).unwrap().knobs,
        vec![("demote_at".into(), 0.95), ("promote_at".into(), 0.6)]
    );
    // The front is exactly the set of points no other point dominates.
    for (i, p) in r.points.iter().enumerate() {
        let m = p.metrics.unwrap();
        let dominated = r
            .points
            .iter()
            .enumerate()
            .any(|(j, o)| j != i && dominates(&o.metrics.unwrap(), &m));
        assert_eq!(p.pareto, !dominated, "point {i}");
    }
    assert!(r.points.iter().any(|p| p.pareto));
    // Deterministic whatever the thread timing.
    let again = sweep::run_with(&s, &policy, &axes, Some(budget), &|| {}).unwrap();
    assert_eq!(r, again);
}

#[test]
fn invalid_points_are_listed_and_skipped() {
    let s = load(&exports()[0]);
    let policy = tierscope_engine::policy::load("retention", &[]).unwrap();
    // target is 0.75: demote_at 0.70 and 0.75 break promote_at < target < demote_at.
    let axes = vec![Axis::parse("demote_at=0.70:0.80:0.05").unwrap()];
    let r = sweep::run(&s, &policy, &axes).unwrap();
    let status: Vec<&str> = r.points.iter().map(|p| p.status.as_str()).collect();
    assert_eq!(status, vec!["invalid", "invalid", "ok"]);
    assert!(r.points[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("promote_at < target < demote_at"));
    assert!(!r.points[0].pareto && r.points[2].pareto);
    // An unknown knob fails before anything runs.
    assert!(sweep::run(&s, &policy, &[Axis::parse("nope=1:2:1").unwrap()]).is_err());
}

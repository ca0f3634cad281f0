//! The compare engine on the real recordings: a policy diffed with itself shows no difference at
//! any request (tiers, numbers, rendered text), for every built-in on every recording; and on the
//! migration recording, `retention` vs `age` at a tight budget keeps the rejected approach's
//! episode at or above its floor in A and takes it below in B, with the violation counted in B.

use std::path::{Path, PathBuf};

use tierscope_engine::compare::{self, context::RowKind};
use tierscope_engine::episode::Tier;
use tierscope_engine::policy;
use tierscope_engine::replay::{self, Input};
use tierscope_engine::session::LoadOptions;
use tierscope_engine::session::{self, LoadedSession};

const REC_118: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33"
);
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

/// Every export of the 1.18.33 recording and every main session export in `sample-traces`
/// (sub-agent exports, sidecars and the manifest left out).
fn recordings() -> Vec<PathBuf> {
    let mut v = Vec::new();
    let mut add = |dir: &Path| {
        let Ok(rd) = std::fs::read_dir(dir) else {
            panic!("cannot read {}", dir.display());
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                crate::loader_support::is_export_name(&n) && !n.contains(".child")
            })
            .collect();
        files.sort();
        v.extend(files);
    };
    add(&PathBuf::from(REC_118).join("exports"));
    add(Path::new(SAMPLES));
    assert!(v.len() >= 5, "expected E1, E2, M1, B1, C1; found {v:?}");
    v
}

fn load(path: &Path) -> LoadedSession {
    let args = LoadOptions {
        path: Some(path.to_path_buf()),
        ..LoadOptions::default()
    };
    session::load(&args).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

#[test]
fn a_policy_diffed_with_itself_shows_no_difference_at_any_request() {
    for path in recordings() {
        let s = load(&path);
        let input = Input::from(&s);
        let n = s.trace.requests.len();
        for name in policy::builtin_names() {
            // Two separately loaded copies: the comparison must not rely on sharing one object.
            let a = policy::load(&name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            let b = policy::load(&name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (_, _, c) = compare::compare_policies(&input, &a, &b, None)
                .unwrap_or_else(|e| panic!("{}: {name}: {e}", path.display()));
            assert_eq!(c.frames.len(), n);
            for f in &c.frames {
                assert!(
                    f.same && f.tier_diffs.is_empty() && f.delta.is_zero(),
                    "{} {name}: request {} differs: {f:?}",
                    path.display(),
                    f.request
                );
            }
            assert!(c.identical());
            assert_eq!(c.summary.tier_cells_differing, 0);
            assert_eq!(
                c.summary.delta,
                compare::SummaryDelta::of(&c.summary.a, &c.summary.a)
            );
        }
        // The rendered text too, at the first, middle and last request (each render is a pass).
        let p = policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
        let tight = Some(9000);
        for at in [0, n / 2, n.saturating_sub(1)] {
            let d = compare::context_diff(&input, &p, &p, tight, at, None)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                d.identical(),
                "{} request {at}: {:?}",
                path.display(),
                d.hunks
            );
            assert!(d.rows.iter().all(|r| r.kind == RowKind::Equal));
            assert_eq!(d.a_tokens, d.b_tokens);
        }
    }
}

#[test]
fn retention_keeps_the_rejected_approach_at_its_floor_where_age_goes_below() {
    let s = load(&PathBuf::from(SAMPLES).join("M1.json"));
    // The episode of the rejected approach: its full text holds the build error that killed it.
    let needle = "error: failed to select a version for `tomlette`.";
    let (ei, ep) = s
        .episodes
        .iter()
        .enumerate()
        .find(|(_, e)| {
            e.representation(Tier::Full)
                .is_some_and(|r| r.text().contains(needle))
        })
        .unwrap_or_else(|| panic!("no episode holds {needle:?}"));
    assert!(
        ep.floor.depth() <= Tier::Compact.depth(),
        "{} holds a rejected approach, its floor should be compact or higher, is {}",
        ep.id,
        ep.floor
    );
    let a = policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
    let b = policy::load("age", &[]).unwrap_or_else(|e| panic!("{e}"));
    let (ra, rb, c) = compare::compare_policies(&Input::from(&s), &a, &b, Some(9000))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut below_in_b = Vec::new();
    for (t, f) in c.frames.iter().enumerate() {
        if let replay::Cell::Tier(ta) = ra.applied.get(t, ei) {
            assert!(
                ta.depth() <= ep.floor.depth(),
                "A shows {} at {ta} at request {t}",
                ep.id
            );
        }
        if let Some(d) = f.tier_diffs.iter().find(|d| d.index == ei) {
            assert!(!d.a_below_floor, "request {t}: {d:?}");
            if d.b_below_floor {
                assert_eq!(d.higher, compare::Higher::A);
                assert!(
                    f.b.floor_violations >= 1,
                    "request {t}: B below the floor, not counted"
                );
                below_in_b.push(t);
            }
        }
        assert_eq!(f.a.floor_violations, 0, "retention violated a floor at {t}");
    }
    // The violation's details (episode, tier, floor) are in B's frames too.
    assert!(
        below_in_b.iter().any(
            |&t| rb.frames[t].violations.iter().any(|v| v.episode == ep.id
                && v.kind == tierscope_engine::replay::ViolationKind::Floor
                && v.floor == Some(ep.floor))
        ),
        "no frame of B lists the floor violation of {}",
        ep.id
    );
    assert!(
        !below_in_b.is_empty(),
        "age never took {} below its floor at budget 9000",
        ep.id
    );
    assert_eq!(c.summary.a.floor_violations, 0);
    assert!(c.summary.b.floor_violations >= below_in_b.len() as u64);
    assert!(c.summary.delta.floor_violations > 0);

    // At such a request the rendered contexts differ, and the difference is that episode.
    let at = below_in_b[0];
    let d = compare::context_diff(&Input::from(&s), &a, &b, Some(9000), at, None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!d.identical());
    let removed: String = d
        .rows
        .iter()
        .filter(|r| r.kind != RowKind::Equal)
        .filter_map(|r| r.a.as_ref().map(|l| l.text()))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        removed.contains(&format!("── {} compact", ep.id)),
        "{removed}"
    );
}

#[test]
fn two_knob_sets_of_one_policy_compare_and_name_their_differences() {
    let s = load(&PathBuf::from(SAMPLES).join("C1.json"));
    let a = policy::load("retention", &[]).unwrap_or_else(|e| panic!("{e}"));
    let b = policy::load("retention", &[("target".into(), "0.65".into())])
        .unwrap_or_else(|e| panic!("{e}"));
    let (ra, rb, c) = compare::compare_policies(&Input::from(&s), &a, &b, Some(11000))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        c.summary.requests_differing > 0,
        "a lower target should change something on C1"
    );
    // Deltas are B − A, frame by frame and in the summary.
    // Each side's answer to every due probe, from the frames' probe changes.
    let (mut pa, mut pb) = (
        std::collections::BTreeMap::new(),
        std::collections::BTreeMap::new(),
    );
    for (f, (fa, fb)) in c.frames.iter().zip(ra.frames.iter().zip(&rb.frames)) {
        pa.extend(fa.probe_changes.iter().map(|p| (p.id.clone(), p.ok)));
        pb.extend(fb.probe_changes.iter().map(|p| (p.id.clone(), p.ok)));
        assert_eq!(f.delta.tokens, fb.tokens as i64 - fa.tokens as i64);
        assert_eq!(f.delta.thrash, fb.thrash as i64 - fa.thrash as i64);
        assert_eq!(
            f.same,
            f.tier_diffs.is_empty()
                && f.delta.is_zero()
                && fa.changes == fb.changes
                && fa.held == fb.held
                && fa.violations == fb.violations
                && pa == pb
                && fa.compaction == fb.compaction
        );
    }
    assert_eq!(
        c.summary.delta.changes,
        rb.summary.changes as i64 - ra.summary.changes as i64
    );
    let cells: usize = c.frames.iter().map(|f| f.tier_diffs.len()).sum();
    assert_eq!(cells as u64, c.summary.tier_cells_differing);
    assert_eq!(
        c.summary.a_higher_cells + c.summary.b_higher_cells,
        c.summary.tier_cells_differing
    );
}

/// `full` against `opencode` compacting M1 at 9,000 tokens: where `opencode` shows only the
/// tail of an episode's full tier, the two sides differ although both are at `full`, `full` is
/// the higher side, and the cell is named and counted as tail-only.
#[test]
fn a_tail_of_full_differs_from_all_of_it() {
    let s = load(&PathBuf::from(SAMPLES).join("M1.json"));
    let a = policy::load("full", &[]).unwrap_or_else(|e| panic!("{e}"));
    let b = policy::load("opencode", &[]).unwrap_or_else(|e| panic!("{e}"));
    let (ra, rb, c) = compare::compare_policies(&Input::from(&s), &a, &b, Some(9000))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut tails = 0;
    for f in &c.frames {
        for d in &f.tier_diffs {
            assert!(!d.a_tail_only, "full shows every chunk");
            assert_eq!(d.b_tail_only, rb.tail_only_at(f.request, d.index).is_some());
            assert!(ra.tail_only_at(f.request, d.index).is_none());
            if d.b_tail_only {
                tails += 1;
                if d.b == Tier::Full {
                    assert_eq!((d.a, d.higher), (Tier::Full, compare::Higher::A));
                }
            }
        }
    }
    assert!(tails > 0, "opencode splits an episode at 9,000 tokens");
    assert_eq!(tails, c.summary.tail_only_cells);
}

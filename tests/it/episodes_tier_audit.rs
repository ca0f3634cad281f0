//! The tier audit's checks on every recording: no tier loses a needle (identifier, pin) that a
//! lower tier of its episode keeps (non-monotonic), and no tier below `full` holds an identifier
//! or number the full tier lacks, or cites an id that is not the episode's (unsupported
//! addition). For every generated strategy (`source`, `cascade`, `record`) and both the default
//! and the finest segmentation, on the recordings of all three OpenCode eras.

use std::path::{Path, PathBuf};

use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::segment::Segmentation;
use tierscope_engine::research::audit::audit_session;
use tierscope_engine::session::from_trace;
use tierscope_engine::session::EpisodeOptions;

const REC_118: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33"
);
const ERAS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/recordings");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

/// Every recording: the export files of 1.18.33 and the samples (sidecars and the manifest are
/// not exports), then the databases and the older eras' storage trees.
fn recordings() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in [Path::new(REC_118).join("exports"), PathBuf::from(SAMPLES)] {
        let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        v.extend(rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            crate::loader_support::is_export_name(n)
        }));
    }
    v.sort();
    // The databases hold the same sessions as recorded by OpenCode itself (patch parts included);
    // the older eras' JSON storage holds sessions no export has (0.5.29 has no `export`).
    v.extend(
        [
            Path::new(REC_118).join("data/opencode.db"),
            Path::new(SAMPLES).join("opencode.db"),
            Path::new(ERAS).join("opencode-1.1.65/data"),
            Path::new(ERAS).join("opencode-0.5.29/data"),
        ]
        .into_iter()
        .inspect(|p| assert!(p.exists(), "{} is missing", p.display())),
    );
    // E1, E2, M1, M1's sub-agent, B1, C1, then the four above.
    assert_eq!(v.len(), 10, "recordings: {v:?}");
    v
}

#[test]
fn tiers_are_monotonic_and_add_nothing_on_every_recording() {
    let files = recordings();
    assert!(files.len() >= 2, "recordings found: {files:?}");
    let mut problems = Vec::new();
    let mut audited = 0;
    for p in &files {
        let src = tierscope_engine::trace::load::open(Some(p)).unwrap();
        for s in src.list_sessions().unwrap() {
            let trace = src.load_session(Some(&s.id)).unwrap();
            for seg in [Segmentation::UserTurn, Segmentation::Request] {
                for tiers in TierSource::GENERATED {
                    let opts = EpisodeOptions {
                        segmentation: seg,
                        tiers,
                        ..EpisodeOptions::default()
                    };
                    let l = from_trace(trace.clone(), &opts);
                    for e in audit_session(&l).episodes {
                        for t in &e.tiers {
                            audited += 1;
                            let at = format!(
                                "{} {} {seg:?}/{tiers:?} {} {}",
                                p.display(),
                                s.id,
                                e.episode,
                                t.tier
                            );
                            if !t.non_monotonic.is_empty() {
                                problems
                                    .push(format!("{at}: lost, kept lower: {:?}", t.non_monotonic));
                            }
                            if !t.unsupported.is_empty() {
                                problems.push(format!("{at}: unsupported: {:?}", t.unsupported));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(audited > 1000, "only {audited} tiers audited");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

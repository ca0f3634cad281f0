//! Following an export file that is being written: a file cut short is retried, never shown as
//! a truncated export; the finished file loads as a fresh load does; removing it is "source gone".

use std::time::{Duration, Instant};

use tierscope_engine::follow::{FollowConfig, FollowEvent, FollowStatus, Follower, Snapshot};
use tierscope_engine::trace::{load, Trace};

const E1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33/exports/E1.json"
);

#[test]
fn a_half_written_export_is_retried_until_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("E1.json");
    let bytes = std::fs::read(E1).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let (f, rx) = Follower::spawn_channel(FollowConfig::new(&path, None), |s: Snapshot| {
        Ok::<Trace, String>(s.trace)
    })
    .unwrap();
    let mut statuses = Vec::new();
    let mut states: Vec<Trace> = Vec::new();
    let end = Instant::now() + Duration::from_secs(15);
    let mut written = false;
    let mut gone = false;
    while let Ok(e) = rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
        match e {
            FollowEvent::Reloaded { data, .. } => states.push(*data),
            FollowEvent::Status(s) => {
                if !written && matches!(s, FollowStatus::Retrying(_)) {
                    // The writer finishes the file (another write, as a shell redirect does).
                    std::fs::write(&path, &bytes).unwrap();
                    written = true;
                }
                if matches!(s, FollowStatus::SourceGone(_)) {
                    gone = true;
                    statuses.push(s);
                    break;
                }
                statuses.push(s);
            }
            FollowEvent::Error(e) => panic!("error: {e}"),
        }
        if states.len() == 1 && !path.with_extension("moved").exists() {
            std::fs::rename(&path, path.with_extension("moved")).unwrap();
        }
    }
    f.stop();
    assert!(
        written,
        "no retry while the file was cut short: {statuses:?}"
    );
    assert_eq!(states.len(), 1, "only the complete file is published");
    let fresh = load::open(Some(std::path::Path::new(E1)))
        .unwrap()
        .load_session(None)
        .unwrap();
    let mut got = states.remove(0);
    got.source = fresh.source.clone();
    assert_eq!(got, fresh);
    assert!(gone, "moving the file away was not reported: {statuses:?}");
}

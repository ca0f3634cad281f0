//! The follower's statuses on a copy of a real recording: half-written rows are retried, not
//! reported; a deleted session or file is "source gone"; pausing holds changes back.

use crate::follow_common;

use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use follow_common::*;
use tierscope_engine::follow::{FollowConfig, FollowEvent, FollowStatus, Follower, Snapshot};
use tierscope_engine::trace::{DiagnosticKind, Trace};

type Rx = Receiver<FollowEvent<Trace>>;

fn start(
    db: &std::path::Path,
    session: &str,
    cfg: impl FnOnce(&mut FollowConfig),
) -> (Follower, Rx) {
    let mut config = FollowConfig::new(db, Some(session.to_owned()));
    cfg(&mut config);
    Follower::spawn_channel(config, |s: Snapshot| Ok::<Trace, String>(s.trace)).unwrap()
}

/// The next event that `pick` accepts, within `limit`; the events passed over are returned too.
fn next_matching<T>(
    rx: &Rx,
    limit: Duration,
    mut pick: impl FnMut(&FollowEvent<Trace>) -> Option<T>,
) -> (Option<T>, Vec<FollowEvent<Trace>>) {
    let end = Instant::now() + limit;
    let mut skipped = Vec::new();
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) => match pick(&e) {
                Some(t) => return (Some(t), skipped),
                None => skipped.push(e),
            },
            Err(_) => return (None, skipped),
        }
    }
}

fn reloaded(e: &FollowEvent<Trace>) -> Option<Trace> {
    match e {
        FollowEvent::Reloaded { data, .. } => Some((**data).clone()),
        _ => None,
    }
}

fn status(e: &FollowEvent<Trace>) -> Option<FollowStatus> {
    match e {
        FollowEvent::Status(s) => Some(s.clone()),
        _ => None,
    }
}

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn a_part_before_its_message_is_retried_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let rest = truncate(&w, E1, 5);
    let (f, rx) = start(&db, E1, |_| {});
    let first = next_matching(&rx, WAIT, reloaded).0.expect("first state");
    assert_eq!(first.messages.len(), 5);

    // Parts of the next message land before its row (foreign keys off, as a torn read would see).
    w.pragma_update(None, "foreign_keys", "off").unwrap();
    let (msg, parts) = &rest[0];
    for p in parts {
        insert(&w, "part", p);
    }
    let (retrying, skipped) = next_matching(&rx, WAIT, |e| match status(e) {
        Some(FollowStatus::Retrying(r)) => Some(r),
        _ => None,
    });
    let retrying = retrying.expect("a retrying status");
    assert!(retrying.starts_with("partial_write"), "{retrying}");
    assert!(retrying.contains("orphan_part"), "{retrying}");
    assert!(
        skipped.iter().all(|e| reloaded(e).is_none()),
        "a half-written state was published"
    );

    insert(&w, "message", msg);
    let (next, skipped) = next_matching(&rx, WAIT, reloaded);
    let next = next.expect("the state once the message row is there");
    assert_eq!(next.messages.len(), 6);
    assert!(next.diagnostics.is_empty(), "{:?}", next.diagnostics);
    assert!(skipped.iter().all(|e| !matches!(e, FollowEvent::Error(_))));
    f.stop();
}

#[test]
fn trouble_that_stays_is_published_as_it_is_after_settling() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let rest = truncate(&w, E1, 5);
    let (f, rx) = start(&db, E1, |c| c.settle = Duration::from_millis(600));
    next_matching(&rx, WAIT, reloaded).0.expect("first state");
    w.pragma_update(None, "foreign_keys", "off").unwrap();
    insert(&w, "part", &rest[0].1[0]);
    // Never followed by its message: after the source stays quiet, the load is real.
    let t = next_matching(&rx, WAIT, reloaded)
        .0
        .expect("published after settling");
    assert_eq!(t.diagnostics.count(DiagnosticKind::OrphanPart), 1);
    f.stop();
}

#[test]
fn a_deleted_session_and_a_removed_file_are_source_gone() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let (f, rx) = start(&db, E1, |_| {});
    next_matching(&rx, WAIT, reloaded).0.expect("first state");
    w.execute("DELETE FROM session WHERE id = ?1", [E1])
        .unwrap();
    let gone = next_matching(&rx, WAIT, |e| match status(e) {
        Some(FollowStatus::SourceGone(r)) => Some(r),
        _ => None,
    })
    .0
    .expect("source gone after the session was deleted");
    assert!(gone.contains(E1), "{gone}");
    f.stop();
    drop(w);

    let (f, rx) = start(&db, E2, |_| {});
    next_matching(&rx, WAIT, reloaded).0.expect("first state");
    for s in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{s}", db.display()));
    }
    let gone = next_matching(&rx, WAIT, |e| match status(e) {
        Some(FollowStatus::SourceGone(r)) => Some(r),
        _ => None,
    })
    .0
    .expect("source gone after the file was removed");
    assert!(gone.contains("opencode.db"), "{gone}");
    f.stop();
}

#[test]
fn paused_changes_load_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let rest = truncate(&w, E2, 10);
    let (f, rx) = start(&db, E2, |_| {});
    next_matching(&rx, WAIT, reloaded).0.expect("first state");
    f.pause();
    assert_eq!(
        next_matching(&rx, WAIT, status).0,
        Some(FollowStatus::Paused)
    );
    append_like_opencode(&w, &rest[..4], Duration::ZERO);
    let (none, _) = next_matching(&rx, Duration::from_millis(1500), reloaded);
    assert!(none.is_none(), "loaded while paused");
    f.resume();
    let t = next_matching(&rx, WAIT, reloaded)
        .0
        .expect("loaded on resume");
    assert_eq!(t.messages.len(), 14);
    f.stop();
}

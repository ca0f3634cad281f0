//! Following a real recording's database while rows are appended to a copy of it, the way
//! OpenCode writes them, from another thread.

use crate::follow_common;

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use follow_common::*;
use tierscope_engine::follow::{FollowConfig, FollowEvent, FollowStatus, Follower, ReloadStats};
use tierscope_engine::trace::Trace;

/// Everything the follower said, and the last state.
#[derive(Default)]
struct Seen {
    states: Vec<ReloadStats>,
    last: Option<Trace>,
    statuses: Vec<FollowStatus>,
    errors: Vec<String>,
}

impl Seen {
    fn take(&mut self, e: FollowEvent<Trace>) {
        match e {
            FollowEvent::Reloaded { data, stats } => {
                self.states.push(stats);
                self.last = Some(*data);
            }
            FollowEvent::Status(s) => self.statuses.push(s),
            FollowEvent::Error(e) => self.errors.push(e),
        }
    }

    /// Receive until `done` holds for the last state or `limit` passes.
    fn until(
        &mut self,
        rx: &Receiver<FollowEvent<Trace>>,
        limit: Duration,
        done: impl Fn(&Trace) -> bool,
    ) -> bool {
        let end = Instant::now() + limit;
        loop {
            if self.last.as_ref().is_some_and(&done) {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match rx.recv_timeout(left) {
                Ok(e) => self.take(e),
                Err(_) => return false,
            }
        }
    }

    /// Only "following" and partial-write retries; no errors, no gone source.
    fn assert_clean(&self) {
        assert!(self.errors.is_empty(), "errors: {:?}", self.errors);
        for s in &self.statuses {
            match s {
                FollowStatus::Following => {}
                FollowStatus::Retrying(r) => assert!(r.starts_with("partial_write"), "{r}"),
                other => panic!("unexpected status {other:?}"),
            }
        }
    }
}

/// Start following with `config` and wait for the first state.
fn start(config: FollowConfig) -> (Follower, Receiver<FollowEvent<Trace>>, Seen) {
    let (follower, rx) =
        Follower::spawn_channel(config, |s: tierscope_engine::follow::Snapshot| {
            Ok::<Trace, String>(s.trace)
        })
        .unwrap();
    let mut seen = Seen::default();
    assert!(
        seen.until(&rx, Duration::from_secs(10), |_| true),
        "no first state"
    );
    (follower, rx, seen)
}

fn follow_growth(session: &str, keep: usize, cfg: impl FnOnce(&mut FollowConfig)) -> Seen {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let w = writer(&db);
    let rest = truncate(&w, session, keep);
    assert!(!rest.is_empty());
    let full = neutral(fresh_load(Path::new(RECORDING), session));
    assert!(full.diagnostics.is_empty(), "{:?}", full.diagnostics);

    let mut config = FollowConfig::new(&db, Some(session.to_owned()));
    cfg(&mut config);
    let (follower, rx, mut seen) = start(config);
    let first = seen.last.clone().unwrap();
    assert!(seen.states[0].initial);
    assert!(first.requests.len() < full.requests.len());
    assert_eq!(first.messages.len(), keep);

    let writer_thread = std::thread::spawn(move || {
        append_like_opencode(&w, &rest, Duration::from_millis(12));
        w
    });
    let reached = seen.until(&rx, Duration::from_secs(60), |t| neutral(t.clone()) == full);
    let _w = writer_thread.join().unwrap();
    assert!(
        reached,
        "the followed trace never became the full one: {} of {} messages, {} of {} requests",
        seen.last.as_ref().map_or(0, |t| t.messages.len()),
        full.messages.len(),
        seen.last.as_ref().map_or(0, |t| t.requests.len()),
        full.requests.len()
    );
    // Settle: nothing more arrives, and what arrived was clean.
    while let Ok(e) = rx.recv_timeout(Duration::from_millis(500)) {
        seen.take(e);
    }
    follower.stop();
    eprintln!(
        "{session}: {} states, {} partial-write retries, statuses {:?}",
        seen.states.len(),
        seen.states.iter().map(|s| s.partial_retries).sum::<usize>(),
        seen.statuses
    );
    assert_eq!(neutral(seen.last.clone().unwrap()), full);
    seen.assert_clean();
    // Every request was announced once as new.
    let new: usize = seen.states.iter().skip(1).map(|s| s.new_requests).sum();
    assert_eq!(new + first.requests.len(), full.requests.len());
    seen
}

#[test]
fn following_a_growing_database_ends_equal_to_a_fresh_load() {
    let seen = follow_growth(E2, 6, |_| {});
    // The writer leaves assistant messages unfinished, then finishes them: some published
    // state must have caught a request still streaming and later reported it changed.
    assert!(
        seen.states.iter().any(|s| !s.changed_requests.is_empty()),
        "no state saw a request change"
    );
    assert!(seen.states.len() > 3, "only {} states", seen.states.len());
}

#[test]
fn polling_alone_follows_too() {
    follow_growth(E1, 10, |c| {
        c.poll_only = true;
        c.watch.poll = Duration::from_millis(100);
    });
}

/// A commit whose files stat exactly as before is still followed. The WAL restarts from its
/// start after a checkpoint (its length stays), and the mtime is put back: what a follower sees
/// when its stats fall between a commit's frames and its WAL-index update, the moment the
/// commit becomes visible. Only the database's version shows such a commit.
#[test]
fn a_commit_the_file_stats_do_not_show_is_still_followed() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let wal = dir.path().join("opencode.db-wal");
    let w = writer(&db);
    // A long WAL, checkpointed so that the next commit writes from its start.
    w.execute_batch("UPDATE part SET data = data").unwrap();
    let busy: i64 = w
        .query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(busy, 0, "the checkpoint restarts the WAL");
    let mut config = FollowConfig::new(&db, Some(E1.to_owned()));
    config.poll_only = true;
    config.watch.poll = Duration::from_millis(100);
    let (follower, rx, mut seen) = start(config);
    // A few polls: the follower's fingerprint is the files as they are now.
    std::thread::sleep(Duration::from_millis(400));
    let stat = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (m.len(), m.modified().unwrap())
    };
    let (db_before, wal_before) = (stat(&db), stat(&wal));
    w.execute(
        "UPDATE session SET title = 'renamed while followed' WHERE id = ?1",
        [E1],
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_modified(wal_before.1)
        .unwrap();
    assert_eq!((stat(&db), stat(&wal)), (db_before, wal_before));
    assert!(
        seen.until(&rx, Duration::from_secs(10), |t| t.session.title
            == "renamed while followed"),
        "the commit was not followed: {:?}",
        seen.last.as_ref().map(|t| &t.session.title)
    );
    follower.stop();
    seen.assert_clean();
}

/// Following a database OpenCode left with a clean exit (neither `-wal` nor `-shm`) creates
/// neither beside it, as the file or through its data dir; when OpenCode starts writing it
/// again, its commits are followed.
#[test]
fn following_after_a_clean_exit_creates_no_side_file_and_sees_the_next_writer() {
    for through_dir in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let db = copy_recording(dir.path());
        // What a clean exit does: the last connection checkpoints the WAL and removes both.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        c.close().map_err(|(_, e)| e).unwrap();
        let side = |s: &str| dir.path().join(format!("opencode.db{s}"));
        assert!(!side("-wal").exists() && !side("-shm").exists());
        let path = if through_dir {
            dir.path()
        } else {
            db.as_path()
        };
        let mut config = FollowConfig::new(path, Some(E1.to_owned()));
        config.poll_only = true;
        config.watch.poll = Duration::from_millis(100);
        let (follower, rx, mut seen) = start(config);
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            !side("-wal").exists() && !side("-shm").exists(),
            "following created a side file (through the dir: {through_dir})"
        );
        let w = writer(&db);
        w.execute("UPDATE session SET title = 'a new run' WHERE id = ?1", [E1])
            .unwrap();
        assert!(
            seen.until(&rx, Duration::from_secs(10), |t| t.session.title
                == "a new run"),
            "the new writer's commit was not followed (through the dir: {through_dir})"
        );
        follower.stop();
        seen.assert_clean();
    }
}

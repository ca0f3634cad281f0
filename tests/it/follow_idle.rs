//! No busy loop: an idle follower costs (almost) no CPU. Only the follower's own threads are
//! measured (its loop, `tierscope-follow`, and notify's watcher threads), since the other suites
//! of this test binary run in the same process at the same time.

use crate::follow_common;

use std::time::Duration;

use follow_common::*;
use tierscope_engine::follow::{FollowConfig, FollowEvent, Follower, Snapshot};
use tierscope_engine::trace::Trace;

fn start_and_wait(
    db: &std::path::Path,
) -> (Follower, std::sync::mpsc::Receiver<FollowEvent<Trace>>) {
    let (f, rx) =
        Follower::spawn_channel(FollowConfig::new(db, Some(E2.to_owned())), |s: Snapshot| {
            Ok::<Trace, String>(s.trace)
        })
        .unwrap();
    loop {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(FollowEvent::Reloaded { .. }) => return (f, rx),
            Ok(_) => {}
            Err(e) => panic!("no first state: {e}"),
        }
    }
}

/// CPU time (user + system) of the follower's threads, from /proc: its loop thread and the
/// notify watcher's (thread names are cut to 15 bytes in /proc).
#[cfg(target_os = "linux")]
fn cpu_ticks() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // The thread name is in parentheses and may hold spaces; fields follow the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = &stat[open + 1..close];
        if !(name.starts_with("tierscope-follo") || name.starts_with("notify-rs")) {
            continue;
        }
        let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the full line: 11 and 12 after the name.
        total += f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0);
    }
    total
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_follower_does_not_spin() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let (f, rx) = start_and_wait(&db);
    let before = cpu_ticks();
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks() - before;
    // Clock ticks are 1/100 s: a busy loop would burn ~300 here.
    assert!(used <= 10, "{used} ticks of CPU in 3 s of idle following");
    assert!(rx.try_recv().is_err(), "events while nothing changed");
    f.stop();
}

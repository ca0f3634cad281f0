//! No busy loop: an idle follower costs (almost) no CPU. A test binary of its own, so no other
//! test's threads run in the same process while it measures.

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

/// CPU time (user + system) of this process, from /proc.
#[cfg(target_os = "linux")]
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the full line: 11 and 12 after the name.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
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

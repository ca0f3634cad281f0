//! No busy loop: an idle follower costs (almost) no CPU. The suites of this test binary run in
//! one process at the same time, so the measurement runs in a process of its own: the test
//! starts this binary again for the one ignored test that measures.

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

/// Set in the process that measures.
const CHILD: &str = "TIERSCOPE_FOLLOW_IDLE_CHILD";

#[cfg(target_os = "linux")]
#[test]
fn an_idle_follower_does_not_spin() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "follow_idle::idle_follower_alone",
            "--ignored",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The measurement, in a process where nothing else runs (see the module docs).
#[cfg(target_os = "linux")]
#[test]
#[ignore = "run alone by an_idle_follower_does_not_spin"]
fn idle_follower_alone() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = copy_recording(dir.path());
    let (f, rx) = start_and_wait(&db);
    let before = cpu_ticks();
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks().saturating_sub(before);
    // Clock ticks are 1/100 s: a busy loop would burn ~300 here.
    assert!(used <= 10, "{used} ticks of CPU in 3 s of idle following");
    assert!(rx.try_recv().is_err(), "events while nothing changed");
    f.stop();
}

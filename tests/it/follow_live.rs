//! By hand: follow a database that a real OpenCode is writing (e.g. under the recorder in
//! `scripts/record/opencode/`) and print what the follower reports.
//!
//! ```sh
//! TIERSCOPE_FOLLOW_DB=$WORK_DIR/home/.local/share/opencode/opencode.db \
//!   cargo test --test follow_live -- --ignored --nocapture
//! ```
//! `TIERSCOPE_FOLLOW_SECS` (default 120) ends it; the database may appear after the start.

use std::time::{Duration, Instant, SystemTime};

use tierscope_engine::follow::{request_finished, FollowConfig, FollowEvent, Follower, Snapshot};
use tierscope_engine::trace::Trace;

#[test]
#[ignore = "needs a live OpenCode database (TIERSCOPE_FOLLOW_DB)"]
fn follow_a_live_database() {
    let Some(db) = std::env::var_os("TIERSCOPE_FOLLOW_DB") else {
        eprintln!("set TIERSCOPE_FOLLOW_DB");
        return;
    };
    let secs: u64 = std::env::var("TIERSCOPE_FOLLOW_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let end = Instant::now() + Duration::from_secs(secs);
    let db = std::path::PathBuf::from(db);
    while !db.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    let session = std::env::var("TIERSCOPE_FOLLOW_SESSION").ok();
    let (f, rx) = Follower::spawn_channel(FollowConfig::new(&db, session), |s: Snapshot| {
        Ok::<Trace, String>(s.trace)
    })
    .unwrap();
    let t0 = SystemTime::now();
    while let Ok(e) = rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
        let at = t0.elapsed().map_or(0.0, |d| d.as_secs_f64());
        match e {
            FollowEvent::Reloaded { data, stats } => {
                let unfinished: Vec<usize> = (0..data.requests.len())
                    .filter(|&i| !request_finished(&data, i))
                    .collect();
                println!(
                    "{at:7.2}s  {} \"{}\": {} messages, {} requests (+{} new, changed {:?}, unfinished {:?}), retries {}, diagnostics {}",
                    data.session.id,
                    data.session.title,
                    data.messages.len(),
                    stats.requests,
                    stats.new_requests,
                    stats.changed_requests,
                    unfinished,
                    stats.partial_retries,
                    data.diagnostics.total()
                );
            }
            FollowEvent::Status(s) => println!("{at:7.2}s  status: {s:?}"),
            FollowEvent::Error(e) => println!("{at:7.2}s  error: {e}"),
        }
    }
    f.stop();
}

//! Following a session that spawns a sub-agent: the child session appears while the parent is
//! followed (written the way OpenCode writes it), and the followed state ends equal to a fresh
//! load of the parent and its child.

use crate::follow_common;

use std::time::{Duration, Instant};

use follow_common::*;
use tierscope_engine::follow::{FollowConfig, FollowEvent, FollowStatus, Follower, Snapshot};

/// M1: a dependency migration that runs an @explore sub-agent.
const M1: &str = "ses_dd584fea1fferO2dnWzHsfVmcZ";
const M1_CHILD: &str = "ses_dd584f7b6ffeknyVO3Z4g5sBjI";

fn neutral_snap(mut s: Snapshot) -> Snapshot {
    s.trace = neutral(s.trace);
    s.children = s.children.into_iter().map(neutral).collect();
    s
}

#[test]
fn a_sub_agent_session_that_appears_is_followed_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_db(SAMPLES, dir.path());
    let w = writer(&db);
    let child_row = session_row(&w, M1_CHILD);
    let child_msgs = session_rows(&w, M1_CHILD);
    let parent = session_rows(&w, M1);
    // Cut the parent at the message holding the `task` call (and drop the child session).
    let cut = parent
        .iter()
        .position(|(_, parts)| parts.iter().any(|p| p.data()["tool"] == "task"))
        .expect("M1 has a task call");
    let rest = truncate(&w, M1, cut);
    w.execute("DELETE FROM session WHERE id = ?1", [M1_CHILD])
        .unwrap();

    let source = tierscope_engine::trace::load::open(Some(std::path::Path::new(SAMPLES))).unwrap();
    let full_trace = source.load_session(Some(M1)).unwrap();
    let children: Vec<_> = source
        .load_children(&full_trace)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(children.len(), 1);
    let full = neutral_snap(Snapshot {
        trace: full_trace,
        children,
        child_errors: Vec::new(),
    });

    let (f, rx) = Follower::spawn_channel(FollowConfig::new(&db, Some(M1.into())), |s| {
        Ok::<Snapshot, String>(s)
    })
    .unwrap();
    let first = loop {
        match rx
            .recv_timeout(Duration::from_secs(10))
            .expect("first state")
        {
            FollowEvent::Reloaded { data, .. } => break *data,
            FollowEvent::Error(e) => panic!("{e}"),
            FollowEvent::Status(_) => {}
        }
    };
    assert!(first.children.is_empty());

    // OpenCode's order: the parent's message with the task call, the child session row and its
    // messages, then the rest of the parent; by creation time.
    let writer_thread = std::thread::spawn(move || {
        let pause = Duration::from_millis(10);
        let (task_msg, task_parts) = &rest[0];
        append_message(&w, task_msg, task_parts, pause);
        insert(&w, "session", &child_row);
        append_like_opencode(&w, &child_msgs, pause);
        append_like_opencode(&w, &rest[1..], pause);
        w
    });
    let mut last = first;
    let mut statuses = Vec::new();
    let end = Instant::now() + Duration::from_secs(60);
    while neutral_snap(last.clone()) != full {
        match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
            Ok(FollowEvent::Reloaded { data, .. }) => last = *data,
            Ok(FollowEvent::Status(s)) => statuses.push(s),
            Ok(FollowEvent::Error(e)) => panic!("{e}"),
            Err(_) => panic!(
                "never reached the full state: {} messages, {} children, statuses {statuses:?}",
                last.trace.messages.len(),
                last.children.len()
            ),
        }
    }
    let _w = writer_thread.join().unwrap();
    f.stop();
    for s in &statuses {
        match s {
            FollowStatus::Following => {}
            FollowStatus::Retrying(r) => assert!(r.starts_with("partial_write"), "{r}"),
            other => panic!("unexpected status {other:?}"),
        }
    }
    assert_eq!(last.children[0].session.id, M1_CHILD);
    assert!(last.child_errors.is_empty());
}

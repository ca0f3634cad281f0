//! The recordings in `sample-traces/` have the shape their README documents (found by file name,
//! since ids change when they are re-recorded). A missing file fails the test.

use crate::loader_support;

use std::path::Path;

use loader_support::*;
use tierscope_engine::trace::load::open;
use tierscope_engine::trace::{RequestStatus, ToolStatus, UserKind};

fn sample(name: &str) -> std::path::PathBuf {
    let p = Path::new(SAMPLES).join(name);
    assert!(p.is_file(), "{} is missing", p.display());
    p
}

#[test]
fn c1_compactions_replay_and_failed_requests() {
    let p = sample("C1.json");
    let t = open(Some(&p))
        .expect("open")
        .load_session(None)
        .expect("C1");
    let kinds = |k: UserKind| t.messages.iter().filter(|m| m.user_kind == Some(k)).count();
    assert_eq!(t.messages.len(), 38);
    assert_eq!(kinds(UserKind::Human), 7);
    assert_eq!(kinds(UserKind::Compaction), 3);
    assert_eq!(kinds(UserKind::ContinueAfterCompaction), 2);
    assert_eq!(kinds(UserKind::PromptReplayed), 1);
    assert_eq!(t.requests.len(), 25);
    let summaries: Vec<usize> = t
        .compactions
        .iter()
        .filter_map(|c| c.summary_request)
        .collect();
    assert_eq!(summaries, [12, 16, 22]);
    assert_eq!(t.requests[9].status, RequestStatus::Error);
    assert_eq!(t.requests[15].status, RequestStatus::Empty);
    assert!(t.compactions[1].overflow);
    assert!(t.requests[9].usage.is_zero() && t.requests[15].usage.is_zero());
}

#[test]
fn b1_tool_errors_and_raw_escape_bytes_are_kept() {
    let p = sample("B1.json");
    let t = open(Some(&p))
        .expect("open")
        .load_session(None)
        .expect("B1");
    assert_eq!(t.requests.len(), 23);
    let tools: Vec<_> = t.messages.iter().flat_map(|m| m.tool_parts()).collect();
    assert_eq!(tools.len(), 23);
    assert_eq!(
        tools
            .iter()
            .filter(|(_, tp)| tp.status == ToolStatus::Error)
            .count(),
        2
    );
    // The trace keeps the output as recorded; only printing sanitizes it.
    let raw = tools
        .iter()
        .filter_map(|(_, tp)| tp.output.as_deref())
        .find(|o| o.contains('\u{1b}'))
        .expect("the output with ESC bytes");
    let shown = tierscope_engine::text::sanitize_for_terminal(raw);
    assert!(!shown.contains('\u{1b}') && shown.contains("\\x1b]0;owned\\x07\\x1b[2J"));
}

#[test]
fn m1_child_loads_with_its_parent_from_the_export_and_the_database() {
    let p = sample("M1.json");
    let source = open(Some(&p)).expect("open");
    let t = source.load_session(None).expect("M1");
    assert_eq!(t.requests.len(), 24);
    assert_eq!(t.children.len(), 1);
    let kids = source.load_children(&t);
    assert_eq!(kids.len(), 1);
    let kid = kids[0].as_ref().expect("child");
    assert_eq!(kid.session.id, t.children[0].session_id);
    assert_eq!(
        kid.session.parent_id.as_deref(),
        Some(t.session.id.as_str())
    );
    let db = sample("opencode.db");
    let source = open(Some(&db)).expect("db");
    let from_db = source
        .load_session(Some(&t.session.id))
        .expect("M1 from db");
    let kids = source.load_children(&from_db);
    assert_eq!(kids.len(), 1);
    assert_eq!(
        comparable(kids[0].as_ref().expect("child from db")),
        comparable(kid)
    );
    // The child is not the default session even if it were newer: it has a parent.
    assert!(source
        .load_session(None)
        .expect("default")
        .session
        .parent_id
        .is_none());
}

/// A load reports its stages in order, with the input's size while reading and a count of the
/// episodes that reaches their number; the loading screen shows these.
#[test]
fn a_load_reports_its_stages_in_order() {
    use std::sync::{Arc, Mutex};
    use tierscope_engine::session::progress::{LoadProgress, LoadStage, ProgressSink};
    let path = sample("M1.json");
    let seen: Arc<Mutex<Vec<LoadProgress>>> = Arc::default();
    let sink = seen.clone();
    let opts = tierscope_engine::session::LoadOptions {
        path: Some(path.clone()),
        progress: ProgressSink::new(move |p| sink.lock().expect("lock").push(p)),
        ..Default::default()
    };
    let l = tierscope_engine::session::load(&opts).expect("M1 loads");
    let seen = seen.lock().expect("lock").clone();
    let stages: Vec<usize> = seen.iter().map(|p| p.stage.number()).collect();
    assert!(stages.windows(2).all(|w| w[0] <= w[1]), "{stages:?}");
    assert_eq!(stages.first(), Some(&1), "{seen:?}");
    assert_eq!(stages.last(), Some(&LoadStage::COUNT), "{seen:?}");
    let bytes = std::fs::metadata(&path).expect("M1").len();
    assert!(seen
        .iter()
        .any(|p| p.stage == LoadStage::Reading && p.done == bytes && p.total == bytes));
    let last = seen
        .iter()
        .rfind(|p| p.stage == LoadStage::Episodes)
        .expect("episode progress");
    assert_eq!(
        (last.done, last.total, last.percent()),
        (l.episodes.len() as u64, l.episodes.len() as u64, Some(100)),
        "{seen:?}"
    );
}

//! The session listing from message rows (issue 17): every line equals the line a full load of
//! the session gives, on every recording; the rows pass reads what it should; a row it cannot
//! take exactly sends its session to a full load.

use std::path::{Path, PathBuf};

use crate::loader_support::{TestDb, SAMPLES, SHARED};
use tierscope_engine::trace::load::open;
use tierscope_engine::trace::opencode::db::Database;

const RECORDINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/recordings");

/// Every input a listing can be asked for: the databases and data dirs of the recordings, their
/// exports, and the bundled samples.
fn inputs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in [SHARED, RECORDINGS] {
        let mut eras: Vec<PathBuf> = std::fs::read_dir(root)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        eras.sort();
        for era in eras {
            let data = era.join("data");
            if data.is_dir() {
                out.push(data.clone());
                if data.join("opencode.db").is_file() {
                    out.push(data.join("opencode.db"));
                }
            }
            let mut exports: Vec<PathBuf> = std::fs::read_dir(era.join("exports"))
                .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            exports.retain(|p| p.extension().is_some_and(|e| e == "json"));
            exports.sort();
            out.extend(exports);
        }
    }
    for f in ["opencode.db", "M1.json", "B1.json", "C1.json"] {
        out.push(Path::new(SAMPLES).join(f));
    }
    out.retain(|p| p.exists());
    out
}

#[test]
fn the_listing_equals_the_listing_by_full_loads_on_every_recording() {
    let inputs = inputs();
    assert!(inputs.len() >= 10, "recordings missing: {inputs:?}");
    let mut sessions = 0;
    for input in &inputs {
        let source = open(Some(input)).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        let quick = source.list_sessions().expect("listing");
        let full = source.list_sessions_by_full_load().expect("full listing");
        assert_eq!(quick, full, "{}", input.display());
        sessions += quick.len();
    }
    assert!(sessions >= 30, "only {sessions} sessions listed");
}

/// The rows pass covers what it should: every 1.x session of a recording database is taken from
/// its rows (none sent to a full load, its messages all read), so the equality above is a test
/// of the quick path and not of the fallback.
#[test]
fn database_sessions_of_one_request_per_message_eras_are_listed_from_rows() {
    let mut covered = 0;
    for input in inputs()
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
    {
        let db = Database::open(input).expect("open");
        let rows = db.listing_rows().expect("rows").expect("a complete pass");
        let source = open(Some(input)).expect("open");
        for s in source.list_sessions_by_full_load().expect("list") {
            let v2 = rows.full_load.contains(&s.id);
            let info = source.load_session(Some(&s.id)).expect("load");
            if v2 || !tierscope_engine::trace::listing::from_rows_possible(&info.session) {
                continue;
            }
            let read = rows.messages.get(&s.id).map_or(0, Vec::len);
            assert_eq!(read, s.messages, "{} in {}", s.id, input.display());
            assert!(read > 0);
            covered += 1;
        }
    }
    assert!(covered >= 4, "only {covered} sessions came from rows");
}

/// A message row whose JSON needs the lenient parser's repair (a raw control character) cannot
/// be read by SQLite's JSON functions: its session is loaded in full, so its line still counts
/// the repaired message.
#[test]
fn a_damaged_row_sends_its_session_to_a_full_load_and_the_line_stays_exact() {
    let db = TestDb::new();
    db.session("ses_a", None, "a", 1, 10);
    db.session("ses_b", None, "b", 2, 20);
    for (sid, damaged) in [("ses_a", false), ("ses_b", true)] {
        db.user(&format!("msg_{sid}_1"), sid, 100, "hello");
        let text = if damaged { "raw\u{1}control" } else { "fine" };
        db.message(
            &format!("msg_{sid}_2"),
            sid,
            200,
            &format!(
                r#"{{"role":"assistant","parentID":"msg_{sid}_1","note":"{text}","cost":0.25,
                   "tokens":{{"input":100,"output":7,"reasoning":0,"cache":{{"read":30,"write":2}}}},
                   "time":{{"created":200}}}}"#
            ),
        );
    }
    let rows = Database::open(&db.path)
        .expect("open")
        .listing_rows()
        .expect("rows")
        .expect("complete");
    assert!(rows.full_load.contains("ses_b"), "{rows:?}");
    assert_eq!(rows.messages.get("ses_a").map(Vec::len), Some(2));
    let source = open(Some(&db.path)).expect("open");
    let quick = source.list_sessions().expect("list");
    assert_eq!(quick, source.list_sessions_by_full_load().expect("full"));
    let b = quick.iter().find(|s| s.id == "ses_b").expect("b listed");
    assert_eq!((b.messages, b.requests, b.tokens.input), (2, 1, 100));
    assert_eq!(b.cost, 0.25);
}

/// Sub-agent sessions are listed under their parent in the order they were created, whatever
/// order the `session` table holds them in.
#[test]
fn children_are_the_sessions_naming_the_parent_oldest_first() {
    let db = TestDb::new();
    db.session("ses_p", None, "parent", 1, 50);
    db.session("ses_late", Some("ses_p"), "late", 30, 40);
    db.session("ses_early", Some("ses_p"), "early", 10, 20);
    let source = open(Some(&db.path)).expect("open");
    let list = source.list_sessions().expect("list");
    let p = list.iter().find(|s| s.id == "ses_p").expect("parent");
    assert_eq!(p.children, ["ses_early", "ses_late"]);
}

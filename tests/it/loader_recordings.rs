//! The real recordings: every export loads to the same trace as the same session in the database,
//! counts match SQL, and no tierscope command changes a byte of the database or its -wal.

use crate::loader_support;

use std::path::Path;
use std::process::Command;

use loader_support::*;
use rusqlite::{Connection, OpenFlags};
use tierscope_engine::formats::opencode::db::Database;
use tierscope_engine::formats::opencode::export::load_export;
use tierscope_engine::trace::adapter::Env;
use tierscope_engine::trace::load::{open, open_with_env};
use tierscope_engine::trace::{PartKind, SourceKind, ToolStatus};

#[test]
fn there_are_recordings() {
    let recs = recordings();
    assert!(!recs.is_empty(), "no recordings under {RECORDINGS}");
    assert!(recs.iter().all(|r| !r.exports.is_empty()));
}

#[test]
fn db_and_export_of_the_same_session_load_to_the_same_trace() {
    for rec in recordings() {
        let source = open(Some(&rec.db)).expect("open db");
        for export in &rec.exports {
            let from_export = load_export(export).expect("export loads");
            let id = from_export.session.id.clone();
            let from_db = source.load_session(Some(&id)).expect("db session loads");
            assert!(matches!(from_db.source, SourceKind::Database(_)));
            assert!(!from_export.messages.is_empty(), "{}", export.display());
            assert_eq!(
                comparable(&from_db),
                comparable(&from_export),
                "{} differs between {} and {}",
                id,
                rec.db.display(),
                export.display()
            );
            assert!(
                from_db.diagnostics.is_empty(),
                "{id}: {:?}",
                from_db.diagnostics
            );
        }
    }
}

#[test]
fn counts_match_a_direct_sql_count() {
    for rec in recordings() {
        let source = open(Some(&rec.db)).expect("open db");
        let copy = tempfile::tempdir().expect("tempdir");
        copy_dir(rec.db.parent().expect("dir"), copy.path());
        let conn = Connection::open_with_flags(
            copy.path().join("opencode.db"),
            OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("sqlite");
        let count = |sql: &str, id: &str| -> usize {
            conn.query_row(sql, [id], |r| r.get::<_, i64>(0))
                .expect("count") as usize
        };
        let sessions = source.list_sessions().expect("list");
        let n_sessions: i64 = conn
            .query_row("select count(*) from session", [], |r| r.get(0))
            .expect("count");
        assert_eq!(sessions.len() as i64, n_sessions);
        for s in &sessions {
            let t = source.load_session(Some(&s.id)).expect("load");
            let id = s.id.as_str();
            assert_eq!(
                t.messages.len(),
                count("select count(*) from message where session_id=?1", id)
            );
            assert_eq!(s.messages, t.messages.len());
            assert_eq!(
                t.messages.iter().map(|m| m.parts.len()).sum::<usize>(),
                count("select count(*) from part where session_id=?1", id)
            );
            let assistants = count(
                "select count(*) from message where session_id=?1 and json_extract(data,'$.role')='assistant'",
                id,
            );
            assert_eq!(t.requests.len(), assistants);
            assert_eq!(s.requests, assistants);
            let tools = count(
                "select count(*) from part where session_id=?1 and json_extract(data,'$.type')='tool'",
                id,
            );
            let tool_parts = t
                .messages
                .iter()
                .flat_map(|m| &m.parts)
                .filter(|p| matches!(p.kind, PartKind::Tool(_)))
                .count();
            assert_eq!(tool_parts, tools);
            let tool_errors = count(
                "select count(*) from part where session_id=?1 and json_extract(data,'$.type')='tool' \
                 and json_extract(data,'$.state.status')='error'",
                id,
            );
            assert_eq!(
                t.messages
                    .iter()
                    .flat_map(|m| m.tool_parts())
                    .filter(|(_, tp)| tp.status == ToolStatus::Error)
                    .count(),
                tool_errors
            );
            // Recorded usage: the step-finish sums equal OpenCode's own session usage columns.
            let (input, output, cache_read): (i64, i64, i64) = conn
                .query_row(
                    "select tokens_input, tokens_output, tokens_cache_read from session where id=?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .expect("usage");
            let u = t.total_usage();
            assert_eq!(
                (u.input as i64, u.output as i64, u.cache_read as i64),
                (input, output, cache_read),
                "{id}"
            );
            // Messages in OpenCode's SQL order.
            let mut stmt = conn
                .prepare("select id from message where session_id=?1 order by time_created, id")
                .expect("prepare");
            let ids: Vec<String> = stmt
                .query_map([id], |r| r.get(0))
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("ids");
            let loaded: Vec<&str> = t.messages.iter().map(|m| m.id.as_str()).collect();
            assert_eq!(loaded, ids);
        }
    }
}

#[test]
fn the_e2_recording_has_its_documented_shape() {
    let db = Path::new(RECORDINGS).join("opencode-1.18.33/data/opencode.db");
    let source = open(Some(&db)).expect("open");
    let t = source
        .load_session(Some("ses_dd5b108b3ffe2Z7irYdh3R4z2R"))
        .expect("E2");
    // README: 11 user (7 typed + 2 compaction + 2 synthetic continue), 24 assistant incl. 2 summaries.
    assert_eq!(t.messages.iter().filter(|m| m.is_user()).count(), 11);
    assert_eq!(t.human_turns().count(), 7);
    assert_eq!(t.requests.len(), 24);
    assert_eq!(t.compactions.len(), 2);
    assert_eq!(t.requests.iter().filter(|r| r.synthetic_call).count(), 2);
    for c in &t.compactions {
        assert!(c.summary_request.is_some() && c.continuation_message_id.is_some());
    }
    // Default: the most recently updated main session is E2.
    assert_eq!(
        source.load_session(None).expect("default").session.id,
        t.session.id
    );
}

fn hashes(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        bytes(&dir.join("opencode.db")),
        bytes(&dir.join("opencode.db-wal")),
    )
}

fn run_bin(args: &[&str]) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run tierscope");
    assert!(
        out.status.success(),
        "tierscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty());
}

/// Every command and a library load, on a writable copy (SQLite opens it in place, read-only) and
/// on the checked-in directory itself.
#[test]
fn database_and_wal_are_byte_identical_after_every_command() {
    for rec in recordings() {
        let original = rec.db.parent().expect("dir").to_owned();
        let copy = tempfile::tempdir().expect("tempdir");
        copy_dir(&original, copy.path());
        for dir in [copy.path().to_owned(), original.clone()] {
            let before = hashes(&dir);
            assert!(!before.1.is_empty(), "{}: no -wal", dir.display());
            let d = dir.to_str().expect("utf-8 path");
            let db = dir.join("opencode.db");
            let db = db.to_str().expect("utf-8 path");
            for target in [d, db] {
                run_bin(&["sessions", target]);
                run_bin(&["sessions", target, "--json"]);
                run_bin(&["inspect", target]);
                run_bin(&["inspect", target, "--json"]);
            }
            let source = open(Some(&dir)).expect("open");
            for s in source.list_sessions().expect("list") {
                let t = source.load_session(Some(&s.id)).expect("load");
                let _ = source.load_children(&t);
            }
            drop(source);
            assert!(hashes(&dir) == before, "{} changed", dir.display());
        }
    }
}

/// The WAL rows must be seen: the 1.18.33 recording keeps most of its data in the -wal.
#[test]
fn rows_in_the_wal_are_read() {
    let rec = &recordings()[0];
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(rec.db.parent().expect("dir"), copy.path());
    let db = Database::open(&copy.path().join("opencode.db")).expect("open");
    assert!(!db.is_copy(), "a writable directory is opened in place");
    let mut d = tierscope_engine::trace::Diagnostics::new();
    let sessions = db.sessions(&mut d).expect("sessions");
    let total: usize = sessions
        .iter()
        .map(|s| db.messages(&s.id, &mut d).expect("messages").len())
        .sum();
    let (_, parts) = db.raw_counts(&sessions[0].id).expect("counts");
    assert!(parts > 0);
    // README: 57 messages in all; without the -wal the main file holds far fewer.
    assert!(rec.db.starts_with(RECORDINGS), "{}", rec.db.display());
    assert_eq!(total, 57);
}

/// `dir` and its files without write bits (put the directory's back before it is removed).
#[cfg(unix)]
fn make_read_only(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).expect("ls").flatten() {
        std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o444)).expect("chmod");
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
}

#[cfg(unix)]
#[test]
fn a_read_only_directory_is_read_through_a_copy() {
    use std::os::unix::fs::PermissionsExt;
    let rec = &recordings()[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ro");
    copy_dir(rec.db.parent().expect("dir"), &dir);
    make_read_only(&dir);
    let before = hashes(&dir);
    let result = std::panic::catch_unwind(|| {
        let db = Database::open(&dir.join("opencode.db")).expect("open read-only dir");
        assert!(db.is_copy());
        let source = open(Some(&dir)).expect("open");
        assert!(
            source.describe().contains("temporary copy"),
            "{}",
            source.describe()
        );
        let export = load_export(&rec.exports[0]).expect("export");
        let t = source
            .load_session(Some(&export.session.id))
            .expect("session");
        assert_eq!(comparable(&t), comparable(&export));
    });
    let after = hashes(&dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
    assert!(result.is_ok());
    assert!(before == after);
}

/// OpenCode's clean exit leaves a WAL database with neither `-wal` nor `-shm`. In a read-only
/// directory (a backup, another user's data) that is read in place, immutable, with no copy of
/// the database made, creates no side file, and its listing is cached like any read in place.
#[cfg(unix)]
#[test]
fn a_read_only_directory_after_a_clean_exit_is_read_in_place_and_its_listing_cached() {
    use std::os::unix::fs::PermissionsExt;
    use tierscope_engine::formats::opencode::listing_cache::ListingCache;
    let rec = &recordings()[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ro");
    copy_dir(rec.db.parent().expect("dir"), &dir);
    // What a clean exit does: the last connection checkpoints the WAL and removes both files.
    let c = Connection::open(dir.join("opencode.db")).expect("open copy");
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    c.close().map_err(|(_, e)| e).expect("close copy");
    let side = |s: &str| dir.join(format!("opencode.db{s}"));
    assert!(!side("-wal").exists() && !side("-shm").exists());
    make_read_only(&dir);
    let before = hashes(&dir);
    let cache_dir = tempfile::tempdir().expect("tempdir");
    let cache = ListingCache::At(cache_dir.path().to_owned());
    let result = std::panic::catch_unwind(|| {
        let db = Database::open(&dir.join("opencode.db")).expect("open read-only dir");
        assert!(!db.is_copy(), "read in place");
        let source = open(Some(&dir)).expect("open");
        assert!(!source.describe().contains("temporary copy"));
        let export = load_export(&rec.exports[0]).expect("export");
        let t = source
            .load_session(Some(&export.session.id))
            .expect("session");
        assert_eq!(comparable(&t), comparable(&export));
        let listed = source.list_sessions_with(&cache).expect("cold listing");
        let files = std::fs::read_dir(cache_dir.path().join("listing"))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(files, 1, "the listing is cached");
        let again = open(Some(&dir)).expect("open again");
        assert_eq!(
            again.list_sessions_with(&cache).expect("warm listing"),
            listed
        );
    });
    let created = side("-wal").exists() || side("-shm").exists();
    let after = hashes(&dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
    assert!(result.is_ok());
    assert!(!created, "no side file is created next to the database");
    assert!(before == after);
}

#[test]
fn with_no_data_the_bundled_sample_loads() {
    let home = tempfile::tempdir().expect("tempdir");
    let env = Env {
        xdg_data_home: None,
        home: Some(home.path().to_owned()),
        ..Env::default()
    };
    let source = open_with_env(None, &env).expect("bundled");
    assert!(source.is_bundled());
    let t = source.load_session(None).expect("sample");
    assert!(t.requests.len() > 5);
    assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
    assert_eq!(source.list_sessions().expect("list").len(), 1);
}

#[test]
fn discovery_finds_xdg_data_home_and_opencode_db() {
    let rec = &recordings()[0];
    let xdg = tempfile::tempdir().expect("tempdir");
    let data = xdg.path().join("opencode");
    copy_dir(rec.db.parent().expect("dir"), &data);
    let env = Env {
        xdg_data_home: Some(xdg.path().to_owned()),
        home: None,
        ..Env::default()
    };
    let source = open_with_env(None, &env).expect("xdg");
    assert!(
        source.describe().contains("data dir"),
        "{}",
        source.describe()
    );
    assert!(!source.is_bundled());
    // A channel database named by OPENCODE_DB, relative to the data dir.
    std::fs::rename(data.join("opencode.db"), data.join("opencode-dev.db")).expect("mv");
    std::fs::rename(
        data.join("opencode.db-wal"),
        data.join("opencode-dev.db-wal"),
    )
    .expect("mv");
    std::fs::rename(
        data.join("opencode.db-shm"),
        data.join("opencode-dev.db-shm"),
    )
    .expect("mv");
    let env = env.with_var("OPENCODE_DB", "opencode-dev.db");
    let source = open_with_env(None, &env).expect("OPENCODE_DB");
    assert!(source.describe().contains("opencode-dev.db"));
    assert_eq!(
        source.list_sessions().expect("list").len(),
        open(Some(&rec.db))
            .expect("open")
            .list_sessions()
            .expect("list")
            .len()
    );
    // The data dir also finds channel files on its own.
    let source = open(Some(&data)).expect("channel db in data dir");
    assert!(source.describe().contains("opencode-dev.db"));
}

#[test]
fn an_export_brings_its_child_siblings() {
    let rec = &recordings()[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let main = tmp.path().join("main.json");
    std::fs::copy(&rec.exports[0], &main).expect("copy");
    let other = rec.exports.last().expect("export");
    std::fs::copy(other, tmp.path().join("main.child1.json")).expect("copy");
    let source = open(Some(&main)).expect("open");
    let t = source.load_session(None).expect("main");
    let kids = source.load_children(&t);
    if other != &rec.exports[0] {
        assert_eq!(kids.len(), 1);
        let kid = kids[0].as_ref().expect("child loads");
        assert_eq!(
            source
                .load_session(Some(&kid.session.id))
                .expect("by id")
                .session
                .id,
            kid.session.id
        );
        assert_eq!(source.list_sessions().expect("list").len(), 2);
    }
}

/// `inspect --json` has exactly the documented keys, and db and export agree on every count.
#[test]
fn inspect_json_has_the_documented_keys_and_formats_agree() {
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    let sorted = |a: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    for rec in recordings() {
        for export in &rec.exports {
            let id = load_export(export).expect("export").session.id;
            let mut docs = Vec::new();
            for (target, session) in [(&rec.db, Some(id.as_str())), (export, None)] {
                let mut args = vec!["inspect", target.to_str().expect("utf-8"), "--json"];
                if let Some(s) = session {
                    args.extend(["--session", s]);
                }
                let out = Command::new(BIN).args(&args).output().expect("run");
                assert!(out.status.success());
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
                assert_eq!(
                    keys(&v),
                    sorted(&[
                        "session",
                        "counts",
                        "usage",
                        "compaction_requests",
                        "diagnostics"
                    ])
                );
                assert_eq!(
                    keys(&v["session"]),
                    sorted(&["id", "title", "parent_id", "version", "rules"])
                );
                assert_eq!(
                    keys(&v["counts"]),
                    sorted(&[
                        "messages",
                        "user_messages",
                        "human_turns",
                        "assistant_messages",
                        "parts",
                        "parts_by_type",
                        "requests",
                        "requests_by_status",
                        "tool_calls",
                        "tool_errors",
                        "compactions",
                        "pruned_outputs",
                        "child_sessions",
                    ])
                );
                assert_eq!(
                    keys(&v["usage"]),
                    sorted(&[
                        "input",
                        "output",
                        "reasoning",
                        "cache_read",
                        "cache_write",
                        "cost"
                    ])
                );
                assert_eq!(v["session"]["id"], id.as_str());
                docs.push(v);
            }
            let counts = |v: &serde_json::Value| {
                let mut c = v["counts"].clone();
                // The database knows children the export file does not bring along.
                c.as_object_mut().expect("counts").remove("child_sessions");
                c
            };
            assert_eq!(counts(&docs[0]), counts(&docs[1]), "{id}");
            assert_eq!(docs[0]["usage"], docs[1]["usage"]);
            assert_eq!(
                docs[0]["compaction_requests"],
                docs[1]["compaction_requests"]
            );
        }
    }
}

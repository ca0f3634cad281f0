//! The session listing from message rows (issue 17): every line equals the line a full load of
//! the session gives, on every recording; the rows pass reads what it should; a row it cannot
//! take exactly sends its session to a full load. The listing cache gives the same lines, cold
//! or warm, after writes to the database or its WAL, and with its file damaged.

use std::path::{Path, PathBuf};

use crate::loader_support::{TestDb, RECORDINGS, SAMPLES, V2_DDL};
use tierscope_engine::formats::opencode::db::Database;
use tierscope_engine::formats::opencode::listing_cache::{self, ListingCache};
use tierscope_engine::trace::load::open;
use tierscope_engine::trace::SessionSummary;

/// Every input a listing can be asked for: the databases and data dirs of the recordings, their
/// exports, and the bundled samples.
fn inputs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut eras: Vec<PathBuf> = std::fs::read_dir(RECORDINGS)
        .unwrap_or_else(|e| panic!("{RECORDINGS}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        // OpenCode's releases (the other agents' recordings are read by their own suites).
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("opencode-"))
        })
        .collect();
    eras.sort();
    assert_eq!(eras.len(), 10, "recorded releases: {eras:?}");
    for era in eras {
        // Each release keeps its data dir, its exports, or both.
        let data = era.join("data");
        if data.is_dir() {
            out.push(data.clone());
            if data.join("opencode.db").is_file() {
                out.push(data.join("opencode.db"));
            }
        }
        let exports = era.join("exports");
        if exports.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&exports)
                .unwrap_or_else(|e| panic!("{}: {e}", exports.display()))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            files.sort();
            out.extend(files);
        }
        assert!(
            data.is_dir() || exports.is_dir(),
            "{}: neither data/ nor exports/",
            era.display()
        );
    }
    for f in ["opencode.db", "M1.json", "B1.json", "C1.json"] {
        let p = Path::new(SAMPLES).join(f);
        assert!(p.is_file(), "{} is missing", p.display());
        out.push(p);
    }
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
            if v2
                || !tierscope_engine::formats::opencode::listing::from_rows_possible(&info.session)
            {
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

/// The cache files in a listing cache dir, by name.
fn cache_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir.join("listing"))
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "bin"))
                .map(|p| {
                    let b = std::fs::read(&p).expect("read cache file");
                    (p, b)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn listed(path: &Path, cache: &ListingCache) -> Vec<SessionSummary> {
    open(Some(path))
        .expect("open")
        .list_sessions_with(cache)
        .expect("listing")
}

#[test]
fn the_cached_listing_equals_the_cold_one_and_the_full_loads_on_every_recording() {
    let mut served = 0;
    for input in &inputs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ListingCache::At(dir.path().to_owned());
        let source = open(Some(input)).expect("open");
        let full = source.list_sessions_by_full_load().expect("full");
        let uncached = source.list_sessions_with(&ListingCache::Off).expect("off");
        let cold = source.list_sessions_with(&cache).expect("cold");
        let written = cache_files(dir.path());
        let warm = listed(input, &cache);
        assert_eq!(uncached, full, "{}", input.display());
        assert_eq!(cold, full, "{}", input.display());
        assert_eq!(warm, full, "{}", input.display());
        // A hit rewrites nothing; another cold listing writes the same bytes.
        assert_eq!(cache_files(dir.path()), written, "{}", input.display());
        let again = tempfile::tempdir().expect("tempdir");
        listed(input, &ListingCache::At(again.path().to_owned()));
        let bytes = |v: Vec<(PathBuf, Vec<u8>)>| v.into_iter().map(|(_, b)| b).collect::<Vec<_>>();
        assert_eq!(
            bytes(cache_files(again.path())),
            bytes(written.clone()),
            "{}",
            input.display()
        );
        let has_db = input.extension().is_some_and(|e| e == "db")
            || (input.is_dir() && input.join("opencode.db").is_file());
        // A database read through a temporary copy (a read-only directory) is not cached.
        let in_place = !source.describe().contains("temporary copy");
        if has_db && in_place {
            assert!(!written.is_empty(), "{}: not cached", input.display());
            served += 1;
        } else {
            assert!(
                written.is_empty(),
                "{}: only databases read in place are cached",
                input.display()
            );
        }
    }
    assert!(
        served >= 3,
        "only {served} databases went through the cache"
    );
}

/// What a listing writes into its cache dir does not depend on what another cache dir held when
/// the database was opened (a source opens through the default dir; a caller may list into
/// another). It did: an open served from the other dir's file passed on no session rows, so the
/// file went without them, and a test comparing two cold listings failed when a test running
/// beside it had filled the default dir in between.
#[test]
fn a_listing_file_does_not_depend_on_the_cache_dir_the_open_read() {
    let db = two_sessions();
    let database = Database::open(&db.path).expect("open");
    let dirs: Vec<tempfile::TempDir> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let at = |k: usize| ListingCache::At(dirs[k].path().to_owned());
    let mut d = tierscope_engine::trace::Diagnostics::new();
    // The open's dir empty: it reads the session rows.
    let cold = listing_cache::open(&database, &at(0), &mut d).expect("cold open");
    listing_cache::rows(&database, &at(1), &cold).expect("listing");
    // The open's dir filled: it is served from that dir's file.
    let filling = listing_cache::open(&database, &at(0), &mut d).expect("open");
    listing_cache::rows(&database, &at(0), &filling).expect("listing");
    assert_eq!(cache_files(dirs[0].path()).len(), 1);
    let warm = listing_cache::open(&database, &at(0), &mut d).expect("warm open");
    listing_cache::rows(&database, &at(2), &warm).expect("listing");
    let bytes = |k: usize| {
        cache_files(dirs[k].path())
            .into_iter()
            .map(|(_, b)| b)
            .collect::<Vec<_>>()
    };
    assert_eq!(bytes(1).len(), 1);
    assert_eq!(bytes(1), bytes(2));
    // Each listing still equals the uncached one.
    let source = open(Some(&db.path)).expect("source");
    let off = source.list_sessions_with(&ListingCache::Off).expect("off");
    for k in 0..3 {
        assert_eq!(source.list_sessions_with(&at(k)).expect("cached"), off);
    }
}

/// A database as OpenCode leaves it mid-session: rows still in the `-wal`.
fn two_sessions() -> TestDb {
    let db = TestDb::new();
    db.session("ses_a", None, "a", 1, 10);
    db.session("ses_b", None, "b", 2, 20);
    for sid in ["ses_a", "ses_b"] {
        db.user(&format!("msg_{sid}_1"), sid, 100, "hello");
        db.assistant(
            &format!("msg_{sid}_2"),
            sid,
            &format!("msg_{sid}_1"),
            200,
            "hi",
            100,
        );
    }
    db
}

fn line<'a>(list: &'a [SessionSummary], id: &str) -> &'a SessionSummary {
    list.iter().find(|s| s.id == id).expect("listed")
}

#[test]
fn a_write_to_the_wal_or_the_file_shows_in_the_next_cached_listing() {
    let db = two_sessions();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ListingCache::At(dir.path().to_owned());
    let exact = |what: &str| {
        let source = open(Some(&db.path)).expect("open");
        let cached = source.list_sessions_with(&cache).expect("cached");
        assert_eq!(
            cached,
            source.list_sessions_by_full_load().expect("full"),
            "{what}"
        );
        cached
    };
    let before = exact("cold");
    assert_eq!(line(&before, "ses_b").messages, 2);
    let main_len = std::fs::metadata(&db.path).expect("db").len();

    // A new message: only the WAL grows (no checkpoint while this connection is open).
    db.assistant("msg_ses_b_3", "ses_b", "msg_ses_b_1", 300, "more", 7);
    assert_eq!(std::fs::metadata(&db.path).expect("db").len(), main_len);
    let after = exact("a message added to the WAL");
    assert_eq!(line(&after, "ses_b").messages, 3);
    assert_eq!(line(&after, "ses_b").tokens.input, 107);
    assert_eq!(line(&after, "ses_a"), line(&before, "ses_a"));

    // The same rows rewritten with a number of the same width (the message and its step, as
    // OpenCode copies the step's usage into the message): same sizes, other content.
    db.conn
        .execute_batch(
            "UPDATE message SET data = replace(data, '\"input\":7', '\"input\":9') WHERE id = 'msg_ses_b_3';
             UPDATE part SET data = replace(data, '\"input\":7', '\"input\":9') WHERE message_id = 'msg_ses_b_3';",
        )
        .expect("update");
    assert_eq!(
        line(&exact("a message rewritten"), "ses_b").tokens.input,
        109
    );

    // A message deleted, then everything checkpointed into the main file and the WAL reset.
    db.conn
        .execute("DELETE FROM message WHERE id = 'msg_ses_a_2'", [])
        .expect("delete");
    db.conn
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
    let last = exact("a message deleted and the WAL checkpointed");
    assert_eq!(line(&last, "ses_a").messages, 1);
    assert_eq!(line(&last, "ses_a").requests, 0);

    // A row the quick read cannot take: its session goes to a full load, from the cache too.
    db.message(
        "msg_ses_a_9",
        "ses_a",
        400,
        r#"{"role":"assistant","tokens":{"input":"12"},"time":{"created":400}}"#,
    );
    exact("an odd row");
    exact("an odd row, from the cache");
}

#[test]
fn a_damaged_truncated_or_foreign_cache_file_is_ignored_and_replaced() {
    let db = two_sessions();
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ListingCache::At(dir.path().to_owned());
    let good = listed(&db.path, &cache);
    let [(file, bytes)] = &cache_files(dir.path())[..] else {
        panic!("one cache file expected")
    };
    let decoded = listing_cache::decode(bytes).expect("a valid file");
    assert!(decoded.sessions.len() == 2, "{decoded:?}");
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x20;
    let mut foreign = bytes.clone();
    let at = foreign
        .windows(9)
        .position(|w| w == b"listing-3")
        .expect("version in header");
    foreign[at + 8] = b'0';
    for (what, damaged) in [
        ("truncated", bytes[..bytes.len() / 3].to_vec()),
        ("empty", Vec::new()),
        ("flipped", flipped),
        ("foreign version", foreign),
        ("not a cache file", b"{\"sessions\": []}".to_vec()),
    ] {
        std::fs::write(file, &damaged).expect("damage");
        assert_eq!(listed(&db.path, &cache), good, "{what}");
        assert_eq!(&std::fs::read(file).expect("rewritten"), bytes, "{what}");
    }
}

#[test]
fn the_cache_is_never_written_beside_the_database() {
    let db = two_sessions();
    let beside = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let files = beside(db.dir.path());
    for cache_dir in [db.dir.path().to_owned(), db.dir.path().join("cache")] {
        let list = listed(&db.path, &ListingCache::At(cache_dir.clone()));
        assert_eq!(list.len(), 2);
        assert_eq!(beside(db.dir.path()), files, "{}", cache_dir.display());
    }
    let elsewhere = tempfile::tempdir().expect("tempdir");
    listed(&db.path, &ListingCache::At(elsewhere.path().to_owned()));
    assert_eq!(cache_files(elsewhere.path()).len(), 1);
    assert_eq!(beside(db.dir.path()), files);
}

/// `TIERSCOPE_CACHE_DIR` moves the cache (and so bypasses it); the output is the same bytes.
#[test]
fn the_sessions_command_prints_the_same_bytes_with_and_without_the_cache() {
    let db = Path::new(SAMPLES).join("opencode.db");
    let run = |cache: &Path| sessions_command(&db, cache, true).stdout;
    let dir = tempfile::tempdir().expect("tempdir");
    let cold = run(dir.path());
    assert_eq!(cache_files(dir.path()).len(), 1);
    let warm = run(dir.path());
    let other = tempfile::tempdir().expect("tempdir");
    assert_eq!(cold, warm);
    assert_eq!(run(other.path()), cold);
}

/// `tierscope sessions DB` (`--json` when `json`) with the cache in `cache` (what every
/// command's open reads); it must succeed.
fn sessions_command(db: &Path, cache: &Path, json: bool) -> std::process::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tierscope"))
        .arg("sessions")
        .args(json.then_some("--json"))
        .arg(db)
        .env("TIERSCOPE_CACHE_DIR", cache)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn sessions_json(db: &Path, cache: &Path) -> serde_json::Value {
    serde_json::from_slice(&sessions_command(db, cache, true).stdout).expect("json")
}

fn titles(v: &serde_json::Value) -> Vec<String> {
    let mut t: Vec<String> = v
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| s["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    t.sort();
    t
}

/// An open of a database that did not change takes its session rows from the cache file (no SQL
/// over `session`): a file whose rows were altered is what is listed, until the database
/// changes.
#[test]
fn a_warm_open_takes_the_session_rows_from_the_cache_file() {
    let db = two_sessions();
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(titles(&sessions_json(&db.path, dir.path())), ["a", "b"]);
    let [(file, bytes)] = &cache_files(dir.path())[..] else {
        panic!("one cache file expected")
    };
    let mut c = listing_cache::decode(bytes).expect("a valid file");
    let infos = c.infos.as_mut().expect("the session rows are kept");
    assert_eq!(infos.len(), 2);
    for i in infos.iter_mut() {
        i.title = format!("cached {}", i.title);
    }
    std::fs::write(file, listing_cache::encode(&c)).expect("rewrite");
    assert_eq!(
        titles(&sessions_json(&db.path, dir.path())),
        ["cached a", "cached b"]
    );
    // Any write changes the marker: the rows are read again (and the file rewritten).
    db.session("ses_c", None, "c", 3, 30);
    assert_eq!(
        titles(&sessions_json(&db.path, dir.path())),
        ["a", "b", "c"]
    );
    assert_eq!(
        titles(&sessions_json(&db.path, dir.path())),
        ["a", "b", "c"]
    );
}

/// Session rows whose read raises a diagnostic are not kept: every open reads them and reports
/// it again.
#[test]
fn session_rows_with_a_diagnostic_are_read_and_reported_at_every_open() {
    let db = two_sessions();
    db.conn
        .execute(
            "UPDATE session SET title = CAST(x'62ff' AS BLOB) WHERE id = 'ses_b'",
            [],
        )
        .expect("bad title");
    let dir = tempfile::tempdir().expect("tempdir");
    let warnings = || {
        String::from_utf8_lossy(&sessions_command(&db.path, dir.path(), false).stderr).into_owned()
    };
    let cold = warnings();
    assert!(cold.contains("UTF-8"), "reported: {cold}");
    let [(_, bytes)] = &cache_files(dir.path())[..] else {
        panic!("one cache file expected")
    };
    let c = listing_cache::decode(bytes).expect("a valid file");
    assert_eq!(c.infos, None);
    assert_eq!(c.sessions.len(), 2, "the listing itself is still cached");
    assert_eq!(warnings(), cold, "reported again by a warm open");
}

/// Three sessions whose message rows take turns (a, b, c, a, …) over several of the row
/// pipeline's batches (512 rows): 9,000 rows, one of `ses_c`'s damaged at turn 700, a row whose
/// session id is a blob (not listed), and the v2 session `ses_d` with message rows among them.
fn interleaved() -> TestDb {
    let db = TestDb::new();
    db.conn.execute_batch(V2_DDL).expect("v2 tables");
    db.conn
        .execute_batch(
            "INSERT INTO session_v2 VALUES ('ses_d','p',NULL,'s','/d','a 2.x session','2.0.1',
               '{\"id\":\"m\",\"providerID\":\"p\"}',5,900);
             INSERT INTO session_message VALUES ('sm_1','ses_d','user',1,100,100,
               '{\"text\":\"fix it\",\"time\":{\"created\":100}}');
             BEGIN;",
        )
        .expect("v2 tables");
    for (n, sid) in ["ses_a", "ses_b", "ses_c"].iter().enumerate() {
        db.session(sid, None, sid, n as i64 + 1, 10);
    }
    for turn in 0..1500i64 {
        for sid in ["ses_a", "ses_b", "ses_c"] {
            let t = 1000 + turn * 10;
            db.message(
                &format!("msg_{sid}_{turn:04}_u"),
                sid,
                t,
                &format!(
                    r#"{{"role":"user","time":{{"created":{t}}},"path":{{"cwd":"/w/{sid}"}}}}"#
                ),
            );
            let note = if sid == "ses_c" && turn == 700 {
                "raw\u{1}control"
            } else {
                "fine"
            };
            db.message(
                &format!("msg_{sid}_{turn:04}_a"),
                sid,
                t + 1,
                &format!(
                    r#"{{"role":"assistant","parentID":"msg_{sid}_{turn:04}_u","note":"{note}",
                       "cost":0.25,"tokens":{{"input":{},"output":7,"reasoning":0,
                       "cache":{{"read":30,"write":2}}}},"time":{{"created":{}}}}}"#,
                    100 + turn,
                    t + 1
                ),
            );
        }
        if turn % 500 == 0 {
            db.message(
                &format!("msg_ses_d_{turn}"),
                "ses_d",
                1000,
                r#"{"role":"user","time":{"created":1000}}"#,
            );
        }
    }
    db.conn
        .execute_batch(
            "INSERT INTO message VALUES ('msg_blob', X'7365735f61', 1, 1, '{\"role\":\"user\"}');
             COMMIT;",
        )
        .expect("commit");
    db
}

/// The pass whose rows are hashed and read on worker threads gives what a row-by-row read gives:
/// sessions in the order of their first row, each session's messages in row order, a session
/// sent to a full load by its damaged row whatever batch that row is in, the same hashes as the
/// pass that hashes each row where SQLite has it, the same entries as each session read alone,
/// and lines equal to those of full loads.
#[test]
fn the_pass_on_worker_threads_is_the_row_by_row_read() {
    use tierscope_engine::formats::opencode::listing_scan::{self, Entry};
    let db = interleaved();
    let database = Database::open(&db.path).expect("open");
    let read = listing_scan::read_all(&database)
        .expect("read")
        .expect("a complete pass");
    let order: Vec<&str> = read.keyed.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(order, ["ses_a", "ses_b", "ses_c"]);
    assert_eq!(read.v2_sessions, ["ses_d"]);
    assert!(read.rows.full_load.contains("ses_d"));
    assert!(read.rows.full_load.contains("ses_c"), "its damaged row");
    assert_eq!(read.keyed[2].1.entry, Entry::FullLoad);
    assert!(!read.rows.messages.contains_key("ses_c"));
    for sid in ["ses_a", "ses_b"] {
        let ids: Vec<&str> = read.rows.messages[sid]
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        let want: Vec<String> = (0..1500)
            .flat_map(|t| [format!("msg_{sid}_{t:04}_u"), format!("msg_{sid}_{t:04}_a")])
            .collect();
        assert_eq!(
            ids, want,
            "{sid}: its messages in row order, the blob row not among them"
        );
    }
    let hashes = listing_scan::hash_all(&database)
        .expect("hash")
        .expect("a complete pass");
    let keyed_hashes: Vec<(String, u128)> = read
        .keyed
        .iter()
        .map(|(s, k)| (s.clone(), k.hash))
        .collect();
    assert_eq!(hashes.sessions, keyed_hashes);
    assert_eq!(hashes.v2_sessions, ["ses_d"]);
    for (sid, keyed) in &read.keyed {
        let alone = listing_scan::read_sessions(&database, &[sid], &read.v2_sessions)
            .expect("read")
            .expect("a complete pass");
        assert_eq!(alone.keyed, [(sid.clone(), keyed.clone())], "{sid}");
        assert_eq!(alone.rows.messages.get(sid), read.rows.messages.get(sid));
    }
    for _ in 0..3 {
        let again = listing_scan::read_all(&database)
            .expect("read")
            .expect("pass");
        assert_eq!(again.keyed, read.keyed, "the same every time");
        assert_eq!(again.rows.messages, read.rows.messages);
    }
    let source = open(Some(&db.path)).expect("open");
    let quick = source.list_sessions_with(&ListingCache::Off).expect("list");
    assert_eq!(quick, source.list_sessions_by_full_load().expect("full"));
    assert_eq!(line(&quick, "ses_a").messages, 3000);
}

/// A damaged page of the message table met while rows are on worker threads ends the pass and
/// every line is then loaded in full (as a load reads a damaged table): no hang, no panic, the
/// same lines as full loads, every time.
#[test]
fn a_damaged_message_page_mid_pass_sends_every_line_to_a_full_load() {
    use tierscope_engine::formats::opencode::listing_scan;
    let (dir, path) = interleaved().with_damaged_leaf("message", 300);
    let database = Database::open(&path).expect("open");
    assert!(listing_scan::read_all(&database).expect("read").is_none());
    assert!(listing_scan::hash_all(&database).expect("hash").is_none());
    let source = open(Some(&path)).expect("open");
    let full = source.list_sessions_by_full_load().expect("full");
    for _ in 0..3 {
        let quick = source.list_sessions_with(&ListingCache::Off).expect("list");
        assert_eq!(quick, full);
    }
    for sid in ["ses_a", "ses_b", "ses_c"] {
        let n = line(&full, sid).messages;
        assert!(
            (1..3000).contains(&n),
            "{sid}: the rows before the damage: {n}"
        );
    }
    drop(dir);
}

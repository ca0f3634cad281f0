//! `episodes --json` kept for an unchanged source (issue #34 item 5): the second run prints the
//! kept output and says so; a change of the source, of a file beside it or of the database
//! (even one its file stats do not show) drafts the episodes again; the cache can be turned
//! off, and a hostile entry is a miss.

use std::path::{Path, PathBuf};
use std::process::Command;

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");
const DB_118: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33/data"
);
const NOTE: &str = "note: the episodes of an unchanged source";

struct Run {
    ok: bool,
    out: String,
    err: String,
}

/// `tierscope episodes INPUT --json` with a cache dir (and data dir) of the test's own.
fn command(input: &Path, cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tierscope"));
    c.arg("episodes")
        .arg(input)
        .arg("--json")
        .env("TIERSCOPE_CACHE_DIR", cache)
        .env("XDG_DATA_HOME", cache.join("data"))
        .env_remove("TIERSCOPE_NO_OUTPUT_CACHE");
    c
}

fn episodes(input: &Path, cache: &Path, env: &[(&str, &str)]) -> Run {
    let mut c = command(input, cache);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap_or_else(|e| panic!("run: {e}"));
    Run {
        ok: o.status.success(),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn json(r: &Run) -> serde_json::Value {
    assert!(r.ok, "{}", r.err);
    serde_json::from_str(&r.out).unwrap_or_else(|e| panic!("{e}: {}", r.out))
}

/// `v` without its `token_stats` (the counting of the load that made it).
fn without_stats(mut v: serde_json::Value) -> serde_json::Value {
    v.as_object_mut().map(|o| o.remove("token_stats"));
    v
}

/// The `token_stats` block of an output, as printed.
fn stats(r: &Run) -> String {
    let at = r.out.find("\"token_stats\"").expect("token_stats");
    let end = r.out[at..].find('}').expect("its end") + at;
    r.out[at..=end].to_owned()
}

fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache.join("outputs"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
}

/// Put back a file's mtime (a change the stat must not be the only witness of).
fn set_mtime(p: &Path, t: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .and_then(|f| f.set_modified(t))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
}

/// A scratch dir with a copy of sample M1 (an export) and a cache dir beside it.
fn m1_copy() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let m1 = dir.path().join("M1.json");
    copy(&Path::new(SAMPLES).join("M1.json"), &m1);
    (dir, cache, m1)
}

#[test]
fn a_second_run_prints_the_kept_output_and_a_changed_source_drafts_again() {
    let (dir, cache, m1) = m1_copy();
    copy(
        &Path::new(SAMPLES).join("M1.probes.json"),
        &dir.path().join("M1.probes.json"),
    );

    let first = episodes(&m1, &cache, &[]);
    assert!(!first.err.contains(NOTE), "{}", first.err);
    assert_eq!(entries(&cache).len(), 1, "one entry kept");
    let second = episodes(&m1, &cache, &[]);
    assert!(second.err.contains(NOTE), "{}", second.err);
    assert_eq!(second.out, first.out, "the kept output, byte for byte");

    // What a hit prints is the entry's body: a doctored one shows through…
    let entry = &entries(&cache)[0];
    let bytes = std::fs::read(entry).expect("entry");
    let nl = bytes.iter().position(|&b| b == b'\n').expect("header line");
    let mut doctored = bytes[..=nl].to_vec();
    let body = b"{\"doctored\": true}\n";
    doctored.extend_from_slice(body);
    doctored.extend_from_slice(&(body.len() as u64).to_le_bytes());
    doctored.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes());
    std::fs::write(entry, &doctored).expect("doctor");
    assert_eq!(json(&episodes(&m1, &cache, &[]))["doctored"], true);
    // A damaged entry (a byte of its output changed) fails its checksum: a miss.
    let mut damaged = doctored.clone();
    damaged[nl + 3] ^= 0x20;
    std::fs::write(entry, &damaged).expect("damage");
    let r = episodes(&m1, &cache, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    assert_eq!(r.out, first.out.replace(&stats(&first), &stats(&r)));
    // A torn one (its footer's length is not what is there) too.
    std::fs::write(entry, &doctored[..doctored.len() - 20]).expect("tear");
    let torn = episodes(&m1, &cache, &[]);
    assert!(!torn.err.contains(NOTE), "{}", torn.err);
    assert_eq!(torn.out, first.out.replace(&stats(&first), &stats(&torn)));

    // …until the source changes: the same bytes with a new mtime draft the episodes again.
    let t = std::fs::metadata(&m1)
        .and_then(|m| m.modified())
        .expect("mtime");
    set_mtime(&m1, t + std::time::Duration::from_secs(5));
    let third = episodes(&m1, &cache, &[]);
    assert!(!third.err.contains(NOTE), "{}", third.err);
    assert_eq!(without_stats(json(&third)), without_stats(json(&first)));

    // Turned off: neither read nor written.
    let off = episodes(&m1, &cache, &[("TIERSCOPE_NO_OUTPUT_CACHE", "1")]);
    assert!(!off.err.contains(NOTE), "{}", off.err);
    assert_eq!(without_stats(json(&off)), without_stats(json(&first)));
}

#[test]
fn a_sidecar_created_beside_the_source_drafts_again() {
    let (dir, cache, m1) = m1_copy();
    let before = json(&episodes(&m1, &cache, &[]));
    assert_eq!(before["probes"], 0, "no sidecar yet");
    copy(
        &Path::new(SAMPLES).join("M1.probes.json"),
        &dir.path().join("M1.probes.json"),
    );
    let r = episodes(&m1, &cache, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    assert_eq!(json(&r)["probes"], 5, "the new sidecar's probes");
}

/// After a checkpoint that restarts the WAL, a commit rewrites it from its start: its length
/// stays, and with its mtime put back neither file's stat shows the commit. The WAL's header
/// (a new salt) does. A cache dir inside the database's own dir is refused (no entry, no note).
#[test]
fn a_database_commit_its_stats_hide_still_drafts_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Not inside the database's dir: nothing is ever written into an agent's data dir.
    let cache = dir.path().join("cache");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    for f in ["opencode.db", "opencode.db-wal", "opencode.db-shm"] {
        copy(&Path::new(DB_118).join(f), &data.join(f));
    }
    let db = data.join("opencode.db");
    let wal = data.join("opencode.db-wal");
    let w = rusqlite::Connection::open(&db).expect("open the copy");
    w.execute_batch("UPDATE part SET data = data")
        .expect("a long WAL");
    let busy: i64 = w
        .query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get(0))
        .expect("checkpoint");
    assert_eq!(busy, 0, "the checkpoint restarts the WAL");

    let first = json(&episodes(&db, &cache, &[]));
    assert!(episodes(&db, &cache, &[]).err.contains(NOTE), "kept");
    let id = first["session_id"].as_str().expect("session id").to_owned();

    let stat = |p: &Path| {
        let m = std::fs::metadata(p).expect("stat");
        (m.len(), m.modified().expect("mtime"))
    };
    let (db_before, wal_before) = (stat(&db), stat(&wal));
    w.execute(
        "UPDATE session SET title = 'renamed under the cache' WHERE id = ?1",
        [&id],
    )
    .expect("commit");
    set_mtime(&db, db_before.1);
    set_mtime(&wal, wal_before.1);
    assert_eq!(
        (stat(&db), stat(&wal)),
        (db_before, wal_before),
        "the stats hide the commit"
    );
    let r = episodes(&db, &cache, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    assert_eq!(json(&r)["title"], "renamed under the cache");

    let inside = data.join("cache");
    json(&episodes(&db, &inside, &[]));
    let r = episodes(&db, &inside, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    assert!(
        entries(&inside).is_empty(),
        "nothing written beside the database"
    );
}

/// An entry's path taken by a FIFO or a symlink to a large file is a miss (never a hang nor a
/// read through the link), and the run replaces it with a real entry.
#[cfg(unix)]
#[test]
fn a_hostile_entry_is_a_miss() {
    let (dir, cache, m1) = m1_copy();
    let first = episodes(&m1, &cache, &[]);
    let entry = entries(&cache).pop().expect("an entry");
    std::fs::remove_file(&entry).expect("rm");
    let status = Command::new("mkfifo").arg(&entry).status().expect("mkfifo");
    assert!(status.success());
    let r = episodes(&m1, &cache, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    assert_eq!(without_stats(json(&r)), without_stats(json(&first)));
    assert!(
        std::fs::metadata(&entry).expect("entry").is_file(),
        "replaced"
    );

    std::fs::remove_file(&entry).expect("rm");
    let big = dir.path().join("big");
    std::fs::write(&big, b"{\"format\":\"tierscope-output-cache-1\"}\n{}").expect("write");
    std::os::unix::fs::symlink(&big, &entry).expect("symlink");
    let r = episodes(&m1, &cache, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    assert_eq!(without_stats(json(&r)), without_stats(json(&first)));
}

/// An edit in place that keeps the size and sets the mtime back still drafts again: the change
/// time moves with every write, and nothing short of the clock sets it back.
#[test]
fn an_edit_that_forges_the_mtime_still_drafts_again() {
    let (_dir, cache, m1) = m1_copy();
    let first = json(&episodes(&m1, &cache, &[]));
    let title = first["title"].as_str().expect("title").to_owned();
    let t = std::fs::metadata(&m1)
        .and_then(|m| m.modified())
        .expect("mtime");
    let text = std::fs::read_to_string(&m1).expect("read");
    let forged = title.replacen("Migrate", "Mxgrate", 1);
    assert_eq!(forged.len(), title.len(), "the same size");
    std::fs::write(&m1, text.replacen(&title, &forged, 1)).expect("edit in place");
    set_mtime(&m1, t);
    let r = episodes(&m1, &cache, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    assert_eq!(json(&r)["title"], forged.as_str());
}

/// A reader that goes away (`episodes --json | head`) took part of the document: what was
/// written is not kept, so the next run drafts the whole again.
#[test]
fn half_a_document_is_not_kept() {
    use std::process::Stdio;
    let (_dir, cache, m1) = m1_copy();
    let mut child = command(&m1, &cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // Closed before the load is done: the first write finds no reader.
    drop(child.stdout.take());
    assert!(
        child.wait().expect("wait").success(),
        "a closed pipe is no error"
    );
    assert!(entries(&cache).is_empty(), "{:?}", entries(&cache));
    let r = episodes(&m1, &cache, &[]);
    assert!(!r.err.contains(NOTE), "{}", r.err);
    json(&r);
}

/// An `outputs` dir that is a symlink (here to the recording's own dir) is not followed: no entry
/// is written beside the recording, and the run drafts as usual.
#[cfg(unix)]
#[test]
fn a_symlinked_outputs_dir_writes_nothing_beside_the_source() {
    let (dir, cache, m1) = m1_copy();
    std::fs::create_dir_all(&cache).expect("mkdir");
    std::os::unix::fs::symlink(dir.path(), cache.join("outputs")).expect("symlink");
    for _ in 0..2 {
        let r = episodes(&m1, &cache, &[]);
        assert!(!r.err.contains(NOTE), "{}", r.err);
        json(&r);
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    assert_eq!(names, ["M1.json", "cache"], "nothing beside the recording");
}

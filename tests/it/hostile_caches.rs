//! Caches read as untrusted input (issue 33, item 5): a listing or token cache entry that is a
//! symlink to `/dev/zero`, a 20 GiB sparse file or a FIFO is refused at once (every command runs
//! under a deadline: a hang is a failure), the output is what an empty cache gives, and the entry
//! is rewritten as a regular file. A database edited in place with its size kept and its mtime
//! forged is not served from the listing cache. (The historian's cache: unit tests in
//! `engine/src/historian/cache.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use tierscope_engine::formats::opencode::listing_cache::file_for;
use tierscope_engine::tokens::{cache_file_name, TokenizerKind};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");

/// Generous for a debug build on a loaded machine; what it catches is a run that never ends.
const DEADLINE: Duration = Duration::from_secs(120);

/// A copy of the sample database in `dir/data`, checkpointed into one file (no `-wal`).
fn sample_db(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    for name in ["opencode.db", "opencode.db-wal", "opencode.db-shm"] {
        let from = src.join(name);
        if name == "opencode.db" {
            assert!(from.is_file(), "missing fixture {}", from.display());
        }
        if from.is_file() {
            std::fs::copy(&from, data.join(name)).expect("copy");
        }
    }
    let db = data.join("opencode.db");
    let conn = rusqlite::Connection::open(&db).expect("open copy");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    conn.query_row("PRAGMA journal_mode=DELETE", [], |_| Ok(()))
        .expect("journal mode");
    drop(conn);
    assert!(!data.join("opencode.db-wal").exists());
    db
}

/// Run tierscope with `cache` as its cache dir; a run past [`DEADLINE`] is killed and fails.
fn run(args: &[&str], cache: &Path) -> String {
    let child = Command::new(BIN)
        .args(args)
        .env("TIERSCOPE_CACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tierscope");
    // Output is drained by another thread (a full pipe would stall the child too).
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(DEADLINE) {
        Ok(out) => out.expect("output"),
        Err(_) => {
            // The child this test started, by its id.
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("tierscope {args:?} hung on a hostile cache entry");
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "tierscope {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status();
    assert!(ok.is_ok_and(|s| s.success()), "mkfifo {}", p.display());
}

#[cfg(unix)]
#[test]
fn a_symlink_a_sparse_giant_or_a_fifo_in_a_cache_is_refused_and_rewritten() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = sample_db(tmp.path());
    let data = db
        .parent()
        .expect("data dir")
        .to_string_lossy()
        .into_owned();
    let clean_cache = tmp.path().join("clean");
    let want_sessions = run(&["sessions", &data, "--json"], &clean_cache);
    let want_inspect = run(&["inspect", &data, "--json"], &clean_cache);
    let want_episodes = run(&["episodes", &data, "--json"], &clean_cache);

    type Plant = fn(&Path);
    let plants: [(&str, Plant); 3] = [
        ("symlink to /dev/zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).expect("symlink")
        }),
        ("20 GiB sparse file", |p| {
            std::fs::File::create(p)
                .expect("create")
                .set_len(20 << 30)
                .expect("sparse")
        }),
        ("FIFO", mkfifo),
    ];
    for (i, (what, plant)) in plants.into_iter().enumerate() {
        let cache = tmp.path().join(format!("cache-{i}"));
        let listing = cache.join("listing");
        std::fs::create_dir_all(&listing).expect("mkdir");
        let entries = [
            file_for(&listing, &db).expect("listing cache file"),
            cache.join(cache_file_name(TokenizerKind::O200k)),
        ];
        for e in &entries {
            plant(e);
        }
        assert_eq!(
            run(&["sessions", &data, "--json"], &cache),
            want_sessions,
            "{what}"
        );
        assert_eq!(
            run(&["inspect", &data, "--json"], &cache),
            want_inspect,
            "{what}"
        );
        assert_eq!(
            run(&["episodes", &data, "--json"], &cache),
            want_episodes,
            "{what}"
        );
        for e in &entries {
            let m = std::fs::symlink_metadata(e).expect("rewritten");
            assert!(
                m.file_type().is_file() && m.len() < 1 << 30,
                "{what}: {} not rewritten as a cache file",
                e.display()
            );
        }
        // And the rewritten entries serve the next run.
        assert_eq!(
            run(&["sessions", &data, "--json"], &cache),
            want_sessions,
            "{what}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_same_size_edit_with_a_forged_mtime_is_not_served_from_the_listing_cache() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = sample_db(tmp.path());
    let data = db
        .parent()
        .expect("data dir")
        .to_string_lossy()
        .into_owned();
    let cache = tmp.path().join("cache");
    let before = run(&["sessions", &data, "--json"], &cache);
    let (old, new) = ("November invoices", "December invoices");
    assert!(before.contains(old), "fixture title: {before}");
    // The listing cache is warm: the next run is served from it.
    assert_eq!(run(&["sessions", &data, "--json"], &cache), before);

    // Edit the title in place (same size), then set the mtime back.
    let meta = std::fs::metadata(&db).expect("stat");
    let mut bytes = std::fs::read(&db).expect("read db");
    let at = bytes
        .windows(old.len())
        .position(|w| w == old.as_bytes())
        .expect("title bytes in the database");
    bytes[at..at + new.len()].copy_from_slice(new.as_bytes());
    std::fs::write(&db, &bytes).expect("edit db");
    std::fs::File::options()
        .write(true)
        .open(&db)
        .expect("open db")
        .set_modified(meta.modified().expect("mtime"))
        .expect("forge mtime");
    let after = std::fs::metadata(&db).expect("stat");
    assert_eq!(after.len(), meta.len());
    assert_eq!(after.modified().ok(), meta.modified().ok());

    let listed = run(&["sessions", &data, "--json"], &cache);
    assert!(listed.contains(new) && !listed.contains(old), "{listed}");
    // The same lines as a cold listing, and `inspect` agrees with it.
    assert_eq!(
        listed,
        run(&["sessions", &data, "--json"], &tmp.path().join("cold"))
    );
    let sid = "ses_dd58464c9ffe75lU1oErdHLUjV";
    assert!(listed.contains(sid), "fixture session id");
    let inspect = run(&["inspect", &data, "--session", sid, "--json"], &cache);
    assert!(
        inspect.contains(new) && !inspect.contains(old),
        "inspect mixed stale figures: {inspect}"
    );
}

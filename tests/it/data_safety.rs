//! Issue 33, items 1 and 2: tierscope never destroys or touches the data it reads. Every output
//! that is an input (by path, symlink or hard link), a database's side file, a sidecar being
//! read, or lies inside an agent's data dir is refused with nothing created; Magic Context's
//! database gets nothing beside it; a cache dir inside data is not used.
//!
//! Every run gets a fake home (agent dirs, XDG dirs, cache) inside its own tempdir.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Copies `names` from `sample-traces/` into `rel` (a missing sample fails the test).
    fn samples(&self, rel: &str, names: &[&str]) -> PathBuf {
        let to = self.path(rel);
        std::fs::create_dir_all(&to).expect("mkdir");
        for n in names {
            std::fs::copy(Path::new(SAMPLES).join(n), to.join(n))
                .unwrap_or_else(|e| panic!("sample-traces/{n}: {e}"));
        }
        to
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("HOME", self.path("home"))
            .env("XDG_DATA_HOME", self.path("xdg"))
            .env("CODEX_HOME", self.path("codex"))
            .env(
                "CLAUDE_CONFIG_DIR",
                format!(
                    "{},{}",
                    self.path("claude-a").display(),
                    self.path("claude-b").display()
                ),
            )
            .env("TIERSCOPE_CACHE_DIR", self.path("cache"))
            .env("NO_COLOR", "1")
            .env_remove("OPENCODE_DB")
            .env_remove("XDG_CONFIG_HOME");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("run tierscope")
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Every file under `dir` (relative path → bytes), and every dir (→ empty).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd {
            let p = e.expect("dir entry").path();
            let rel = p.strip_prefix(root).expect("under root").to_owned();
            let meta = std::fs::symlink_metadata(&p).expect("metadata");
            if meta.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(std::fs::read(&p).expect("read")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The run failed, saying it refuses `output` and naming what it collides with.
fn assert_refused(o: &Output, output: &Path, names: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "{} was written: {err}",
        output.display()
    );
    assert!(
        err.contains("refusing to write") && err.contains(names),
        "{}: expected a refusal naming {names:?}, got: {err}",
        output.display()
    );
}

fn assert_ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

#[test]
fn records_onto_the_database_its_side_files_or_beside_it_are_refused() {
    let sb = Sandbox::new();
    let data = sb.samples(
        "data",
        &["opencode.db", "opencode.db-wal", "opencode.db-shm"],
    );
    let db = data.join("opencode.db");
    let wal = data.join("opencode.db-wal");
    let before = snapshot(&data);
    for (cmd, out, names) in [
        (
            "replay",
            db.clone(),
            format!("input database {}", db.display()),
        ),
        ("episodes", db.clone(), "input database".to_owned()),
        (
            "replay",
            wal.clone(),
            "-wal file of the input database".to_owned(),
        ),
        (
            "episodes",
            wal.clone(),
            "-wal file of the input database".to_owned(),
        ),
        (
            "replay",
            data.join("opencode.db-journal"),
            "-journal file of the input database".to_owned(),
        ),
        // Inside the data dir (PATH the dir) or the database's dir (PATH the file).
        (
            "replay",
            data.join("records.jsonl"),
            "it is inside the".to_owned(),
        ),
    ] {
        // The data dir and the database file as PATH.
        for input in [&data, &db] {
            let o = sb.run(&[cmd, s(input), "--records", s(&out)]);
            assert_refused(&o, &out, &names);
        }
    }
    // `..` and a symlinked dir name the same files.
    std::os::unix::fs::symlink(&data, sb.path("alias")).expect("symlink");
    let dotdot = data.join("../data/opencode.db");
    let o = sb.run(&["replay", s(&db), "--records", s(&dotdot)]);
    assert_refused(&o, &dotdot, "input database");
    let aliased = sb.path("alias/opencode.db-wal");
    let o = sb.run(&["replay", s(&db), "--records", s(&aliased)]);
    assert_refused(&o, &aliased, "-wal file");
    assert_eq!(snapshot(&data), before, "the data dir changed");
}

#[test]
fn an_export_its_sidecars_and_rules_are_never_overwritten() {
    let sb = Sandbox::new();
    let dir = sb.samples("in", &["M1.json", "M1.child1.json", "M1.probes.json"]);
    let m1 = dir.join("M1.json");
    let rules = dir.join("rules.toml");
    std::fs::write(&rules, "# my rules\n").expect("write");
    let before = snapshot(&dir);
    let cases: Vec<(Vec<&str>, PathBuf, &str)> = vec![
        (vec!["plot", s(&m1), "--out"], m1.clone(), "input export"),
        (
            vec!["replay", s(&m1), "--records"],
            m1.clone(),
            "input export",
        ),
        (
            vec!["episodes", s(&m1), "--records"],
            m1.clone(),
            "input export",
        ),
        (
            vec!["plot", s(&m1), "--out"],
            dir.join("M1.child1.json"),
            "input sub-agent export",
        ),
        (
            vec!["plot", s(&m1), "--out"],
            dir.join("M1.probes.json"),
            "probes sidecar",
        ),
        (
            vec!["episodes", s(&m1), "--rules", s(&rules), "--records"],
            rules.clone(),
            "--rules file",
        ),
    ];
    for (args, out, names) in cases {
        let mut args = args.clone();
        args.push(s(&out));
        let o = sb.run(&args);
        assert_refused(&o, &out, names);
    }
    // A policy file read is an input too.
    let policy = dir.join("mine.toml");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/engine/src/policy/builtin/full.toml"
        ),
        &policy,
    )
    .expect("copy the built-in policy");
    let before_policy = std::fs::read(&policy).expect("read");
    let o = sb.run(&["plot", s(&m1), "-p", s(&policy), "--out", s(&policy)]);
    assert_refused(&o, &policy, "policy file");
    assert_eq!(std::fs::read(&policy).expect("read"), before_policy);
    std::fs::remove_file(&policy).expect("rm");
    assert_eq!(snapshot(&dir), before, "an input changed");
}

#[test]
fn a_symlink_or_a_hard_link_to_an_input_is_refused() {
    let sb = Sandbox::new();
    let dir = sb.samples("in", &["M1.json"]);
    let m1 = dir.join("M1.json");
    let bytes = std::fs::read(&m1).expect("read");
    let out = sb.path("out");
    std::fs::create_dir_all(&out).expect("mkdir");
    let soft = out.join("soft.svg");
    std::os::unix::fs::symlink(&m1, &soft).expect("symlink");
    let hard = out.join("hard.svg");
    std::fs::hard_link(&m1, &hard).expect("hard link");
    for link in [&soft, &hard] {
        let o = sb.run(&["plot", s(&m1), "--out", s(link)]);
        assert_refused(&o, link, "a link to the input export");
        let o = sb.run(&["replay", s(&m1), "--records", s(link)]);
        assert_refused(&o, link, "a link to the input export");
    }
    assert_eq!(std::fs::read(&m1).expect("read"), bytes);
    assert!(std::fs::symlink_metadata(&soft)
        .expect("still there")
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_dir(&out).expect("ls").count(), 2);
}

#[test]
fn outputs_inside_an_agent_data_dir_are_refused_and_nothing_is_created() {
    let sb = Sandbox::new();
    let dir = sb.samples("in", &["M1.json"]);
    let m1 = dir.join("M1.json");
    for (inside, agent) in [
        ("home/.claude/projects/fig.svg", "Claude Code's data dir"),
        ("claude-b/fig.svg", "Claude Code's data dir"),
        ("home/.config/claude/fig.svg", "Claude Code's data dir"),
        ("codex/sessions/fig.svg", "Codex CLI's data dir"),
        ("home/.codex/fig.svg", "Codex CLI's data dir"),
        ("xdg/opencode/fig.svg", "OpenCode's data dir"),
        ("home/.local/share/opencode/fig.svg", "OpenCode's data dir"),
    ] {
        let out = sb.path(inside);
        let o = sb.run(&["plot", s(&m1), "--out", s(&out)]);
        assert_refused(&o, &out, agent);
        let o = sb.run(&["episodes", s(&m1), "--records", s(&out)]);
        assert_refused(&o, &out, agent);
        let parent = out.parent().expect("parent");
        let o = sb.run(&["fixture", "--requests", "5", "--out", s(parent)]);
        assert_refused(&o, parent, agent);
    }
    for agent_dir in ["home", "claude-b", "codex", "xdg"] {
        assert!(
            !sb.path(agent_dir).exists(),
            "{agent_dir} was created by a refused run"
        );
    }
}

#[test]
fn a_plot_and_records_are_written_whole_beside_an_export() {
    let sb = Sandbox::new();
    let dir = sb.samples("in", &["M1.json"]);
    let m1 = dir.join("M1.json");
    let svg = dir.join("M1.svg");
    // The previous figure is replaced whole.
    std::fs::write(&svg, "old").expect("write");
    assert_ok(&sb.run(&["plot", s(&m1), "--out", s(&svg)]));
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    let rec = dir.join("records.jsonl");
    assert_ok(&sb.run(&["replay", s(&m1), "--budget", "9000", "--records", s(&rec)]));
    assert!(
        std::fs::read_to_string(&rec)
            .expect("records")
            .lines()
            .count()
            > 0
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["M1.json", "M1.svg", "records.jsonl"],
        "a temporary file was left"
    );
}

/// The `compartments` table as Magic Context creates it.
const MC_SCHEMA: &str = "CREATE TABLE compartments (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, sequence INTEGER NOT NULL,
  start_message INTEGER NOT NULL, end_message INTEGER NOT NULL,
  start_message_id TEXT DEFAULT '', end_message_id TEXT DEFAULT '',
  title TEXT NOT NULL, content TEXT NOT NULL,
  p1 TEXT, p2 TEXT, p3 TEXT, p4 TEXT,
  importance INTEGER NOT NULL DEFAULT 50, episode_type TEXT,
  p1_embedding BLOB, p1_embedding_model_id TEXT,
  legacy INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
  harness TEXT NOT NULL DEFAULT 'opencode', UNIQUE(session_id, sequence));";

#[test]
fn a_magic_context_db_with_a_wal_and_no_shm_gets_nothing_beside_it() {
    let sb = Sandbox::new();
    let live = sb.path("live");
    std::fs::create_dir_all(&live).expect("mkdir");
    let c = rusqlite::Connection::open(live.join("context.db")).expect("open");
    c.pragma_update(None, "journal_mode", "wal").expect("wal");
    c.pragma_update(None, "wal_autocheckpoint", 0)
        .expect("no checkpoint");
    c.execute_batch(MC_SCHEMA).expect("schema");
    let ins = "INSERT INTO compartments (session_id, sequence, start_message, end_message, title, content, created_at) VALUES ('ses_1', ?1, ?2, ?3, ?4, 'body', 0)";
    c.execute(ins, rusqlite::params![1, 1, 2, "first"])
        .expect("row");
    c.execute(ins, rusqlite::params![2, 3, 4, "second, only in the WAL"])
        .expect("row");
    // A writer that died: its database and -wal, no -shm.
    let mc = sb.path("mc");
    std::fs::create_dir_all(&mc).expect("mkdir");
    for name in ["context.db", "context.db-wal"] {
        std::fs::copy(live.join(name), mc.join(name)).expect("copy");
    }
    drop(c);
    assert!(
        std::fs::metadata(mc.join("context.db-wal"))
            .expect("wal")
            .len()
            > 0
    );
    let before = snapshot(&mc);
    let rows = tierscope_engine::formats::magic_context::read_compartments(
        &mc.join("context.db"),
        "ses_1",
    )
    .expect("read");
    assert_eq!(rows.len(), 2, "the rows in the -wal are read");
    assert_eq!(
        snapshot(&mc),
        before,
        "a file appeared or changed beside context.db"
    );
    assert!(!mc.join("context.db-shm").exists());
}

#[test]
fn a_cache_dir_inside_data_is_not_used_and_the_run_still_works() {
    let sb = Sandbox::new();
    let data = sb.samples(
        "data",
        &["opencode.db", "opencode.db-wal", "opencode.db-shm"],
    );
    let names = |d: &Path| -> Vec<PathBuf> { snapshot(d).into_keys().collect() };
    let before = names(&data);
    let db_bytes = std::fs::read(data.join("opencode.db")).expect("db");
    let wal_bytes = std::fs::read(data.join("opencode.db-wal")).expect("wal");
    // Beside the database read.
    let cache = data.join("cache");
    for cmd in ["episodes", "inspect", "sessions"] {
        let o = sb.run_with(&[cmd, s(&data)], &[("TIERSCOPE_CACHE_DIR", &cache)]);
        let err = assert_ok(&o);
        if cmd == "episodes" {
            assert!(err.contains("token cache not kept"), "{err}");
        }
    }
    assert_eq!(names(&data), before, "a file appeared in the data dir");
    assert_eq!(
        std::fs::read(data.join("opencode.db")).expect("db"),
        db_bytes
    );
    assert_eq!(
        std::fs::read(data.join("opencode.db-wal")).expect("wal"),
        wal_bytes
    );

    // Inside an agent's data dir while reading an export elsewhere.
    let dir = sb.samples("in", &["M1.json"]);
    let cache = sb.path("xdg/opencode/tierscope-cache");
    let o = sb.run_with(
        &["episodes", s(&dir.join("M1.json"))],
        &[("TIERSCOPE_CACHE_DIR", &cache)],
    );
    let err = assert_ok(&o);
    assert!(err.contains("OpenCode's data dir"), "{err}");
    assert!(
        !sb.path("xdg/opencode").exists(),
        "the cache was written into OpenCode's data"
    );
}

/// A write that fails mid-way (the file size limit reached: `EFBIG`) leaves the previous file as
/// it was and no temporary file.
#[test]
fn a_write_that_fails_midway_leaves_the_previous_file_and_no_temporary() {
    let sb = Sandbox::new();
    let dir = sb.samples("in", &["M1.json"]);
    let svg = dir.join("M1.svg");
    std::fs::write(&svg, "previous figure").expect("write");
    // 8 blocks (4 or 8 KiB) is less than the figure (about 20 KiB); SIGXFSZ ignored, so the
    // write fails instead of killing the process.
    let o = Command::new("sh")
        .arg("-c")
        .arg(r#"trap "" XFSZ; ulimit -f 8; exec "$@""#)
        .arg("sh")
        .args([BIN, "plot", s(&dir.join("M1.json")), "--out", s(&svg)])
        .env("HOME", sb.path("home"))
        .env("TIERSCOPE_CACHE_DIR", sb.path("cache"))
        .output()
        .expect("run sh");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the write did not fail: {err}");
    assert!(err.contains("cannot write"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&svg).expect("svg"),
        "previous figure"
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["M1.json", "M1.svg"], "a temporary file was left");
}

/// A Claude Code session file or a Codex rollout read from a copy of the agent's data (not a
/// default data dir): nothing is written inside the data it lies in, beside the session file
/// (a new `.jsonl` there would be a session of Claude Code's) or into the Codex home around the
/// rollout (its thread index, the index's side files); nothing is created or changed.
#[test]
fn outputs_inside_the_agent_data_an_input_lies_in_are_refused() {
    let sb = Sandbox::new();
    let copy = sb.path("copies");
    let recs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recordings");
    let cp = |from: &Path, to: &Path| {
        let ok = Command::new("cp")
            .args(["-a", s(from), s(to)])
            .status()
            .expect("cp");
        assert!(ok.success());
    };
    std::fs::create_dir_all(&copy).expect("mkdir");
    cp(
        &recs.join("claude-code-2.1.197/dot-claude"),
        &copy.join("dc"),
    );
    cp(&recs.join("codex-0.171.0/dot-codex"), &copy.join("cx"));
    let before = snapshot(&copy);
    let project = copy.join("dc/projects/-home-dev-src-greeter");
    let session = project.join("d8678dc4-f11f-4ee6-bd2a-05a966d9ea36.jsonl");
    for (out, names) in [
        (
            project.join("x.jsonl"),
            "project dir of the input session file",
        ),
        (
            copy.join("dc/new.jsonl"),
            "Claude Code data dir holding the input",
        ),
        (session.clone(), "input session file"),
    ] {
        let o = sb.run(&["replay", s(&session), "--records", s(&out)]);
        assert_refused(&o, &out, names);
    }
    let rollout = copy.join(
        "cx/sessions/2026/12/02/rollout-2026-12-02T05-58-56-01a23555-a9c3-78b2-acc5-cacf3e71aa76.jsonl",
    );
    for out in [
        copy.join("cx/out.jsonl"),
        copy.join("cx/state_5.sqlite-wal"),
        copy.join("cx/sessions/2026/out.jsonl"),
        rollout.clone(),
    ] {
        let o = sb.run(&["replay", s(&rollout), "--records", s(&out)]);
        assert_refused(&o, &out, "");
    }
    assert_eq!(snapshot(&copy), before, "nothing created or changed");
}

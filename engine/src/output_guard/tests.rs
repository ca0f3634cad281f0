use super::*;
use crate::trace::adapter::Env;

/// A guard whose agent dirs are those of a fake home inside `root` (never the real ones).
fn fake_home_guard(root: &Path) -> OutputGuard {
    OutputGuard::with_agent_env(
        &Env {
            xdg_data_home: Some(root.join("xdg")),
            home: Some(root.join("home")),
            ..Env::default()
        }
        .with_var(
            "CLAUDE_CONFIG_DIR",
            &format!(
                "{},{}",
                root.join("c1").display(),
                root.join("c2").display()
            ),
        )
        .with_var("CODEX_HOME", &root.join("codex").display().to_string()),
    )
}

fn refused(g: &OutputGuard, out: &Path) -> Conflict {
    match g.check(out) {
        Err(r) => r.conflict,
        Ok(()) => panic!("{} was allowed", out.display()),
    }
}

#[test]
fn an_input_is_refused_by_path_symlink_dotdot_and_hard_link() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let export = d.join("M1.json");
    std::fs::write(&export, b"{}").unwrap();
    let mut g = fake_home_guard(d);
    g.input_file(&export, "input export");

    let c = refused(&g, &export);
    assert!(matches!(&c, Conflict::Input { link: false, .. }), "{c:?}");
    assert!(c.to_string().contains("input export"), "{c}");
    std::fs::create_dir(d.join("sub")).unwrap();
    refused(&g, &d.join("sub/../M1.json"));
    refused(&g, &d.join("not-yet/../M1.json"));

    let link = d.join("link.json");
    std::os::unix::fs::symlink(&export, &link).unwrap();
    assert!(matches!(
        refused(&g, &link),
        Conflict::Input { link: true, .. }
    ));
    let hard = d.join("hard.json");
    std::fs::hard_link(&export, &hard).unwrap();
    assert!(matches!(
        refused(&g, &hard),
        Conflict::Input { link: true, .. }
    ));

    assert!(g.check(&d.join("M1.svg")).is_ok());
    assert!(g.check(&d.join("new/dir/M1.svg")).is_ok());
}

#[test]
fn a_database_brings_its_side_files_and_its_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let db = data.join("opencode.db");
    std::fs::write(&db, b"SQLite format 3\0").unwrap();
    let mut g = fake_home_guard(dir.path());
    g.input(&db, "input database");
    for suffix in ["-wal", "-shm", "-journal"] {
        let side = data.join(format!("opencode.db{suffix}"));
        match refused(&g, &side) {
            Conflict::SqliteSide { suffix: s, .. } => assert_eq!(s, suffix),
            c => panic!("{c:?}"),
        }
    }
    assert!(matches!(
        refused(&g, &data.join("records.jsonl")),
        Conflict::InsideDir { .. }
    ));
    // Through a symlinked dir, and as a path that does not exist yet.
    let alias = dir.path().join("alias");
    std::os::unix::fs::symlink(&data, &alias).unwrap();
    assert!(matches!(
        refused(&g, &alias.join("opencode.db-wal")),
        Conflict::SqliteSide { .. }
    ));
    refused(&g, &alias.join("new/records.jsonl"));
    // A hard link to the -wal, outside the database's dir.
    std::fs::write(data.join("opencode.db-wal"), b"frames").unwrap();
    let mut g = fake_home_guard(dir.path());
    g.input(&db, "input database");
    let linked = dir.path().join("elsewhere.jsonl");
    std::fs::hard_link(data.join("opencode.db-wal"), &linked).unwrap();
    assert!(matches!(
        refused(&g, &linked),
        Conflict::SqliteSide { suffix: "-wal", .. }
    ));
    assert!(g.check(&dir.path().join("records.jsonl")).is_ok());
}

#[test]
fn every_agent_data_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = fake_home_guard(d);
    for (inside, agent) in [
        ("xdg/opencode/out.svg", "OpenCode"),
        ("home/.local/share/opencode/x/out.svg", "OpenCode"),
        ("xdg/cortexkit/magic-context/out.svg", "Magic Context"),
        ("home/.claude/projects/out.svg", "Claude Code"),
        ("c1/out.svg", "Claude Code"),
        ("c2/out.svg", "Claude Code"),
        ("home/.config/claude/out.svg", "Claude Code"),
        ("codex/sessions/out.svg", "Codex CLI"),
        ("home/.codex/out.svg", "Codex CLI"),
    ] {
        let c = refused(&g, &d.join(inside));
        assert!(
            c.to_string().contains(&format!("{agent}'s data dir")),
            "{inside}: {c}"
        );
    }
    // A symlink from elsewhere into an agent's dir.
    std::fs::create_dir_all(d.join("home/.claude")).unwrap();
    std::os::unix::fs::symlink(d.join("home/.claude"), d.join("innocent")).unwrap();
    refused(&g, &d.join("innocent/out.svg"));
    assert!(g.check(&d.join("home/out.svg")).is_ok());
}

#[test]
fn a_refused_output_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let export = d.join("M1.json");
    std::fs::write(&export, b"{\"keep\": 1}").unwrap();
    let mut g = fake_home_guard(d);
    g.input_file(&export, "input export");
    assert!(matches!(
        write_file(&export, &g, b"<svg/>"),
        Err(OutputError::Refused(_))
    ));
    assert_eq!(std::fs::read(&export).unwrap(), b"{\"keep\": 1}");
    let inside = d.join("codex/new/out.svg");
    assert!(AtomicFile::create(&inside, &g).is_err());
    assert!(
        !d.join("codex").exists(),
        "the refused output's dir was created"
    );
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 1);
}

#[test]
fn a_write_that_fails_midway_leaves_the_previous_file_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = fake_home_guard(d);
    let out = d.join("out.jsonl");
    std::fs::write(&out, b"previous\n").unwrap();
    {
        let mut f = AtomicFile::create(&out, &g).unwrap();
        f.write_all(b"half of the new").unwrap();
        // The run fails here: the file is dropped without a commit.
    }
    assert_eq!(std::fs::read(&out).unwrap(), b"previous\n");
    let names: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("out.jsonl")]);

    let mut f = AtomicFile::create(&out, &g).unwrap();
    f.write_all(b"new\n").unwrap();
    f.commit().unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"new\n");

    let mut f = AtomicFile::create(&out, &g).unwrap();
    f.write_all(b"other\n").unwrap();
    assert!(matches!(f.commit_new(), Err(OutputError::Exists { .. })));
    assert_eq!(std::fs::read(&out).unwrap(), b"new\n");
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 1);
}

#[test]
fn a_cache_dir_inside_data_or_beside_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let db = d.join("data/opencode.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::write(&db, b"SQLite format 3\0").unwrap();
    assert!(cache_dir_refusal(&d.join("data/cache"), &[&db]).is_some());
    assert!(cache_dir_refusal(&d.join("data"), &[&db]).is_some());
    assert!(cache_dir_refusal(&d.join("cache"), &[&db]).is_none());
    // An export's dir is not an agent's data: a cache beside it is allowed.
    let export = d.join("M1.json");
    std::fs::write(&export, b"{}").unwrap();
    assert!(cache_dir_refusal(&d.join("cache"), &[&export]).is_none());
}

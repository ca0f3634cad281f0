//! Ids that try to leave the data dir (issue 33, item 3): a session, message or part whose id is
//! `../../…/outside` in a copy of a real JSON storage tree. A canary file outside the data dir
//! must never be read; the bad id is reported (`unsafe_id`) and everything else loads. Nor is it
//! read through a plain id whose directory is a symlink out of the tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use tierscope_engine::episode::sidecar::{SidecarKind, SidecarLocator};
use tierscope_engine::trace::load::open;
use tierscope_engine::trace::DiagnosticKind;

const BIN: &str = env!("CARGO_BIN_EXE_tierscope");
const CANARY: &str = "CANARY-OUTSIDE-THE-DATA-DIR";

fn recording(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/recordings")
        .join(rel);
    assert!(p.is_dir(), "missing fixture {}", p.display());
    p
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).expect("copy");
        }
    }
}

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_string_pretty(v).expect("json")).expect("write");
}

/// `<tmp>/outside/`: a message file and `parts/` with a part holding the canary, the targets of
/// the traversal ids.
fn plant_canary(tmp: &Path) {
    let out = tmp.join("outside");
    write(
        &out.join("msg_outside.json"),
        &json!({"id": "msg_outside", "role": "user", "time": {"created": 5}}),
    );
    write(
        &out.join("parts/prt_outside.json"),
        &json!({"id": "prt_outside", "type": "text", "text": CANARY}),
    );
    write(
        &out.join("msg_outside/prt_outside.json"),
        &json!({"id": "prt_outside2", "type": "text", "text": CANARY}),
    );
}

fn run(args: &[&str], cache: &Path) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("TIERSCOPE_CACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .output()
        .expect("run tierscope");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "tierscope {args:?} failed: {all}");
    all
}

/// Every session of `path` loaded through the library: none may hold the canary.
fn assert_no_canary_loaded(path: &Path) -> usize {
    let source = open(Some(path)).expect("open");
    let mut unsafe_ids = source.diagnostics().count(DiagnosticKind::UnsafeId);
    let listed = source.list_sessions_by_full_load().expect("list");
    assert!(!listed.is_empty());
    for s in &listed {
        assert!(!s.id.contains(".."), "listed a traversal id {:?}", s.id);
        let t = source.load_session(Some(&s.id)).expect("load");
        unsafe_ids += t.diagnostics.count(DiagnosticKind::UnsafeId);
        for m in &t.messages {
            assert!(!m.text().contains(CANARY), "read outside the data dir");
            assert!(m.parts.iter().all(|p| p.id != "prt_outside"));
        }
    }
    unsafe_ids
}

#[cfg(unix)]
#[test]
fn traversal_ids_in_a_global_tree_are_skipped_and_the_rest_loads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let storage = tmp.path().join("data/storage");
    copy_tree(&recording("opencode-1.2.1/data/storage"), &storage);
    plant_canary(tmp.path());
    let clean = open(Some(&storage)).expect("open clean");
    let real = clean.load_session(None).expect("load clean");
    let real_count = real.messages.len();
    let sid = real.session.id.clone();
    let project = std::fs::read_dir(storage.join("session"))
        .expect("session dir")
        .flatten()
        .next()
        .expect("a project dir")
        .path();

    // storage/message/<id> and storage/part/<id> climb to <tmp>/outside.
    write(
        &project.join("ses_evil.json"),
        &json!({"id": "../../../outside", "title": "evil", "directory": "/w",
                "time": {"created": 1, "updated": 2}}),
    );
    write(
        &storage.join(format!("message/{sid}/msg_evil.json")),
        &json!({"id": "../../../outside/parts", "sessionID": sid, "role": "user",
                "time": {"created": 1}}),
    );
    // A part id is never a path; one that looks like a traversal is plain data.
    let some_msg = &real.messages[0].id;
    write(
        &storage.join(format!("part/{some_msg}/prt_evil.json")),
        &json!({"id": "../../../outside/parts/prt_outside", "type": "text", "text": "harmless"}),
    );

    // A plain id whose directories are symlinks out of the tree.
    write(
        &project.join("ses_link.json"),
        &json!({"id": "ses_link", "title": "link", "directory": "/w",
                "time": {"created": 1, "updated": 2}}),
    );
    std::os::unix::fs::symlink(tmp.path().join("outside"), storage.join("message/ses_link"))
        .expect("symlink");
    std::os::unix::fs::symlink(
        tmp.path().join("outside/parts"),
        storage.join("part/msg_outside"),
    )
    .expect("symlink");

    let unsafe_ids = assert_no_canary_loaded(&storage);
    assert!(unsafe_ids >= 2, "bad ids not reported: {unsafe_ids}");
    let source = open(Some(&storage)).expect("open");
    let t = source.load_session(Some(&sid)).expect("load");
    assert_eq!(
        t.messages.len(),
        real_count,
        "the rest of the session loads"
    );

    let cache = tmp.path().join("cache");
    let s = storage.to_string_lossy();
    let listing = run(&["sessions", &s, "--json"], &cache);
    assert!(
        !listing.contains(CANARY) && !listing.contains("../"),
        "{listing}"
    );
    let inspect = run(&["inspect", &s, "--session", &sid, "--json"], &cache);
    assert!(!inspect.contains(CANARY), "{inspect}");
    assert!(inspect.contains("unsafe_id"), "{inspect}");
    let render = run(
        &[
            "render",
            &s,
            "--session",
            &sid,
            "--policy",
            "full",
            "--at",
            "0",
        ],
        &cache,
    );
    assert!(!render.contains(CANARY), "{render}");
}

#[test]
fn traversal_ids_in_a_per_project_tree_are_skipped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    copy_tree(&recording("opencode-0.1.174/data"), &data);
    plant_canary(tmp.path());
    let slug = std::fs::read_dir(data.join("project"))
        .expect("project dir")
        .flatten()
        .next()
        .expect("a project")
        .path();
    let st = slug.join("storage/session");
    // <slug>/storage/session/message/<id> is six levels below <tmp>.
    write(
        &st.join("info/ses_evil.json"),
        &json!({"id": "../../../../../../outside", "title": "evil",
                "time": {"created": 1, "updated": 2}}),
    );
    let sid = std::fs::read_dir(st.join("message"))
        .expect("message dir")
        .flatten()
        .next()
        .expect("a session")
        .file_name()
        .to_string_lossy()
        .into_owned();
    // …/session/part/<sid>/<id> climbs to <tmp>/outside/msg_outside.
    write(
        &st.join(format!("message/{sid}/msg_evil.json")),
        &json!({"id": "../../../../../../../outside/msg_outside", "role": "user",
                "time": {"created": 1}}),
    );
    let unsafe_ids = assert_no_canary_loaded(&data);
    assert!(unsafe_ids >= 2, "bad ids not reported: {unsafe_ids}");
    let inspect = run(
        &[
            "inspect",
            &data.to_string_lossy(),
            "--session",
            &sid,
            "--json",
        ],
        &tmp.path().join("cache"),
    );
    assert!(!inspect.contains(CANARY) && inspect.contains("unsafe_id"));
}

#[test]
fn sidecars_are_looked_up_by_plain_session_ids_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("sidecars");
    let locator = SidecarLocator {
        dir: Some(dir.clone()),
        export_file: None,
        data_dir: Some(tmp.path().join("data")),
    };
    for kind in [
        SidecarKind::Annotations,
        SidecarKind::Tiers,
        SidecarKind::Probes,
    ] {
        assert!(locator.candidates("../outside/x", kind).is_empty());
        assert!(locator.candidates("/etc/passwd", kind).is_empty());
        let ok = locator.candidates("ses_1", kind);
        assert_eq!(ok.len(), 2);
        assert!(ok
            .iter()
            .all(|p| p.parent() == Some(&dir) || p.parent() == Some(&tmp.path().join("data"))));
    }
    // The historian never names its sidecar after a traversal id.
    assert!(tierscope_engine::historian::write::sidecar_path(&dir, "../x").is_err());
}

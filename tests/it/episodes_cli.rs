//! `tierscope episodes` end to end: the table, --json keys, --explain, --show (sanitized),
//! --records, --rules.

use std::path::Path;
use std::process::Command;

const REC_118: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33"
);
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

fn run(args: &[&str], cache: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tierscope"))
        .arg("episodes")
        .args(args)
        .env("TIERSCOPE_CACHE_DIR", cache)
        .env("XDG_DATA_HOME", cache.join("data"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn e1() -> String {
    format!("{REC_118}/exports/E1.json")
}

#[test]
fn table_explain_show_and_json() {
    let cache = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(&[&e1()], cache.path());
    assert!(ok, "{err}");
    assert!(out.contains("id ") && out.contains("floor") && out.contains("anchor"));
    assert!(out
        .lines()
        .any(|l| l.starts_with("E0 ") && l.contains("compact")));

    let (ok, out, err) = run(&[&e1(), "--explain", "E0"], cache.path());
    assert!(ok, "{err}");
    assert!(out.contains("floor compact: rejected"));
    assert!(out.contains(r#"snapprune.sh: 35: Syntax error: "(" unexpected (expecting "}")"#));
    assert!(out.contains("Hard constraint, never to be broken"));

    let (ok, out, _) = run(&[&e1(), "--show", "E0", "--tier", "compact"], cache.path());
    assert!(ok);
    assert!(out.starts_with("# E0 compact"));
    assert!(out.contains("rejected:"));

    let (ok, _, err) = run(&[&e1(), "--explain", "E99"], cache.path());
    assert!(!ok && err.contains("no episode E99"), "{err}");

    let (ok, out, err) = run(&[&e1(), "--json"], cache.path());
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let eps = v["episodes"].as_array().unwrap();
    assert!(!eps.is_empty());
    for e in eps {
        for k in [
            "id",
            "first_request",
            "last_request",
            "title",
            "kinds",
            "class",
            "floor",
            "reasons",
            "pins",
            "tier_notes",
            "continues",
            "children",
            "tiers",
        ] {
            assert!(e.get(k).is_some(), "missing {k}");
        }
        let full = &e["tiers"]["full"];
        assert!(full["tokens"].as_u64().unwrap() > 0);
        assert_eq!(full["strategy"], "source");
    }
}

#[test]
fn show_sanitizes_terminal_escapes() {
    let b1 = format!("{SAMPLES}/B1.json");
    let cache = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(&[&b1, "--show", "E0", "--tier", "full"], cache.path());
    assert!(ok, "{err}");
    assert!(out.contains("owned"), "the scanner's user agent is shown");
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{7}'),
        "raw ESC/BEL reached the terminal"
    );
}

#[test]
fn records_are_jsonl_with_lineage() {
    let cache = tempfile::tempdir().unwrap();
    let rec = cache.path().join("records.jsonl");
    let (ok, _, err) = run(&[&e1(), "--records", rec.to_str().unwrap()], cache.path());
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&rec).unwrap();
    let mut tiers = 0;
    let mut records = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        // Each episode's canonical record comes first, then its representations.
        if v["kind"] == "episode-record" {
            let r: tierscope_engine::episode::record::EpisodeRecord =
                serde_json::from_value(v["record"].clone()).expect("a typed record");
            assert_eq!(Some(r.episode_id.as_str()), v["episode_id"].as_str());
            records += 1;
            continue;
        }
        assert_eq!(v["kind"], "representation", "{line}");
        for k in [
            "session_id",
            "episode_id",
            "tier",
            "strategy",
            "method",
            "generator",
            "tokenizer",
            "tokens",
            "contract",
            "source_message_ids",
            "chunks",
            "text",
        ] {
            assert!(v.get(k).is_some(), "record lacks {k}");
        }
        tiers += 1;
    }
    assert!(tiers >= 4);
    assert_eq!(records, 4, "one record per episode of E1");
}

#[test]
fn rules_file_overrides_the_embedded_rules() {
    let cache = tempfile::tempdir().unwrap();
    let rules = cache.path().join("rules.toml");
    let text = tierscope_engine::episode::rules::DEFAULT_RULES.replace(
        "[kinds.constraint]\n",
        "[kinds.constraint]\nclass = \"pin\"\n",
    );
    assert_ne!(text, tierscope_engine::episode::rules::DEFAULT_RULES);
    std::fs::write(&rules, text).unwrap();
    let (ok, out, err) = run(
        &[&e1(), "--rules", rules.to_str().unwrap(), "--json"],
        cache.path(),
    );
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let e0 = &v["episodes"][0];
    assert_eq!(e0["class"], "pin");
    assert_eq!(e0["floor"], "full");

    std::fs::write(&rules, "version = 1\n[defaults]\nclass = \"sometimes\"\n").unwrap();
    let (ok, _, err) = run(&[&e1(), "--rules", rules.to_str().unwrap()], cache.path());
    assert!(!ok && err.contains("invalid rules"), "{err}");
}

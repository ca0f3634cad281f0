//! External tiers and sidecars: a Magic Context `context.db` built from the reference's schema,
//! a `*.tiers.json`, an annotations sidecar and a probes sidecar, found where MODEL §6 says.

use std::path::Path;

use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::segment::Segmentation;
use tierscope_engine::episode::sidecar::{Needle, SidecarLocator, Sidecars};
use tierscope_engine::episode::{RetentionClass, Strategy, Tier};
use tierscope_engine::formats::magic_context::read_compartments;
use tierscope_engine::session::from_trace;
use tierscope_engine::session::EpisodeOptions;
use tierscope_engine::trace::Trace;

const REC_118: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33"
);

fn e1() -> Trace {
    tierscope_engine::formats::opencode::export::load_export(
        &Path::new(REC_118).join("exports/E1.json"),
    )
    .unwrap()
}

/// The `compartments` table exactly as the reference (§1.9) gives it.
const SCHEMA: &str = "CREATE TABLE compartments (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, sequence INTEGER NOT NULL,
  start_message INTEGER NOT NULL, end_message INTEGER NOT NULL,
  start_message_id TEXT DEFAULT '', end_message_id TEXT DEFAULT '',
  title TEXT NOT NULL, content TEXT NOT NULL,
  p1 TEXT, p2 TEXT, p3 TEXT, p4 TEXT,
  importance INTEGER NOT NULL DEFAULT 50, episode_type TEXT,
  p1_embedding BLOB, p1_embedding_model_id TEXT,
  legacy INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL,
  harness TEXT NOT NULL DEFAULT 'opencode', UNIQUE(session_id, sequence));";

fn m_time(t: &tierscope_engine::trace::Trace, i: usize) -> i64 {
    t.messages[i].time_created
}

#[test]
fn magic_context_db_loads_as_episodes_with_external_tiers() {
    let t = e1();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("context.db");
    let sid = t.session.id.clone();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(SCHEMA).unwrap();
        let ins = "INSERT INTO compartments (session_id, sequence, start_message, end_message, start_message_id, end_message_id, title, content, p1, p2, p3, p4, importance, episode_type, legacy, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,0,0)";
        let m = &t.messages;
        // Compartment 1 by message id: the first turn (messages 0..=11).
        c.execute(ins, rusqlite::params![sid, 1, 1, 12, m[0].id, m[11].id, "POSIX refactor of snapprune",
            "p1 body", "I split snapprune.sh into POSIX functions after a bash-array rewrite failed under dash with `snapprune.sh: 35: Syntax error`; kept running under plain /bin/sh as required, added --keep-monthly and a test.",
            "Refactored snapprune.sh into POSIX sh functions; bash arrays rejected (dash syntax error); --keep-monthly added.",
            "snapprune POSIX refactor, --keep-monthly.", "", 85, "refactor,feature"]).unwrap();
        // Compartment 2 by ordinal only (old rows have no ids): messages 13..=14 (1-based 13..14).
        c.execute(ins, rusqlite::params![sid, 2, 13, 14, "", "", "dry run", "p1",
            "Dry run with -k 7 --keep-monthly 3 keeps 9 and would delete 5; no bash-isms found.", "Dry run: 5 would go.", "", "", 30, "investigation"]).unwrap();
        // Another session's row and an all-empty row are ignored.
        c.execute(
            ins,
            rusqlite::params![
                "ses_other",
                1,
                1,
                2,
                "",
                "",
                "x",
                "x",
                "x",
                "",
                "",
                "",
                50,
                ""
            ],
        )
        .unwrap();
        c.execute(
            ins,
            rusqlite::params![sid, 3, 15, 15, "", "", "", "", "", "", "", "", 50, ""],
        )
        .unwrap();
    }
    let before = std::fs::metadata(&db).unwrap().modified().unwrap();
    let rows = read_compartments(&db, &sid).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        std::fs::metadata(&db).unwrap().modified().unwrap(),
        before,
        "opened read-only"
    );

    let opts = EpisodeOptions {
        segmentation: Segmentation::MagicContext,
        tiers: TierSource::External,
        compartments: rows,
        magic_context_db: Some(db.clone()),
        ..EpisodeOptions::default()
    };
    let l = from_trace(t.clone(), &opts);
    // Compartment ranges are episode boundaries; the rest is segmented by user turn.
    assert_eq!(l.episodes[0].first_message, 0);
    assert_eq!(l.episodes[0].last_message, 11);
    assert_eq!(l.episodes[0].title, "POSIX refactor of snapprune");
    assert_eq!(l.episodes[1].first_message, 12);
    assert_eq!(l.episodes[1].last_message, 13);
    assert!(l.episodes.len() >= 3);
    assert_eq!(
        l.episodes.last().unwrap().last_message,
        t.messages.len() - 1
    );
    let e0 = &l.episodes[0];
    assert_eq!(e0.importance, Some(0.85));
    for tier in [Tier::Dense, Tier::Compact] {
        let r = e0.representation(tier).unwrap();
        assert_eq!(r.strategy, Strategy::External);
        assert!(r.generator.starts_with("magic-context compartment 1"));
    }
    // p1..p4 → full..anchor, each the block Magic Context injects: heading (range, dates of
    // the boundary messages in UTC, title) and the tier text; the empty p4 (`<p4/>`) is the
    // heading alone.
    let day =
        |i: usize| tierscope_engine::formats::magic_context::date_of(m_time(&t, i), 0).unwrap();
    let dates = if day(0) == day(11) {
        day(0)
    } else {
        format!("{}→{}", day(0), day(11))
    };
    let heading = format!("## 1-12 · {dates} · POSIX refactor of snapprune");
    assert_eq!(
        e0.representation(Tier::Full).unwrap().text(),
        format!("{heading}\nI split snapprune.sh into POSIX functions after a bash-array rewrite failed under dash with `snapprune.sh: 35: Syntax error`; kept running under plain /bin/sh as required, added --keep-monthly and a test.")
    );
    assert_eq!(e0.representation(Tier::Anchor).unwrap().text(), heading);
    // Magic Context's text is what it injects: a pin it lacks is reported, not appended.
    let pin = "Hard constraint, never to be broken: it must keep running under plain /bin/sh.";
    assert!(e0.pins.iter().any(|p| p.text == pin));
    for r in e0.tiers.values() {
        assert!(!r.text().contains(pin), "{} has the pin appended", r.tier);
    }
    assert!(e0
        .tier_notes
        .iter()
        .any(|n| n.contains("lacks pinned span")));
    assert!(!e0.tier_notes.iter().any(|n| n.contains("appended")));
    // The decay policy reads the compartment behind each episode, its importance exact.
    let mc = l.magic_context.as_ref().expect("compartments recorded");
    assert_eq!(mc.episodes[0].as_ref().map(|c| c.importance), Some(85.0));
    assert_eq!(mc.episodes[1].as_ref().map(|c| c.sequence), Some(2));
    assert!(mc.episodes[2..].iter().all(Option::is_none));
    let e1 = &l.episodes[1];
    assert!(e1.tiers.values().all(|r| r.strategy == Strategy::External));
    // A row without message ids has no dates in its heading.
    assert_eq!(
        e1.representation(Tier::Full).unwrap().text(),
        "## 13-14 · dry run\nDry run with -k 7 --keep-monthly 3 keeps 9 and would delete 5; no bash-isms found."
    );
    assert!(e1
        .tier_notes
        .iter()
        .any(|n| n.contains("episode_type: investigation")));
    // Episodes after the compartments keep source tiers.
    assert_eq!(
        l.episodes
            .last()
            .unwrap()
            .representation(Tier::Full)
            .unwrap()
            .strategy,
        Strategy::Source
    );
}

#[test]
fn sidecars_are_found_and_applied() {
    let t = e1();
    let m = &t.messages;
    let dir = tempfile::tempdir().unwrap();
    let turn2 = t.human_turns().nth(1).unwrap().id.clone();
    std::fs::write(
        dir.path()
            .join(format!("{}.annotations.json", t.session.id)),
        serde_json::json!({
            "version": 1,
            "episode_starts": [turn2],
            "overrides": [{"message_id": m[0].id, "class": "pin", "reason": "the constraint turn"}],
            "pins": [{"message_id": m[0].id, "text": "no bash-isms at all", "reason": "POSIX only"}]
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("E1.probes.json"),
        serde_json::json!({"probes": [
            {"id": "p1", "needle": "plain /bin/sh", "source_message_id": m[0].id, "due_from_request": 4, "dimension": "constraint"},
            {"id": "p2", "needles": [{"regex": "35: Syntax error"}], "source_message_id": m[0].id, "due_from_request": 10, "kind": "semantic", "dimension": "rejected alternative"}
        ]})
        .to_string(),
    )
    .unwrap();
    let last = t.messages.len() - 1;
    std::fs::write(
        dir.path().join("E1.tiers.json"),
        serde_json::json!({"episodes": [{
            "first_message_id": turn2, "last_message_id": m[last].id,
            "tiers": {"compact": {"text": "Dry run, then CHANGELOG.", "generator": "hand", "model": "none"}, "p4": {"text": "dry run"}}
        }]})
        .to_string(),
    )
    .unwrap();

    // Lookup: the --sidecars dir wins; the export stem and the session id both work.
    let loc = SidecarLocator {
        dir: Some(dir.path().to_path_buf()),
        export_file: Some(Path::new(REC_118).join("exports/E1.json")),
        data_dir: None,
    };
    let sidecars = Sidecars::find(&loc, &t.session.id).unwrap();
    assert!(sidecars.annotations.is_some() && sidecars.tiers.is_some());
    let probes = &sidecars.probes.as_ref().unwrap().1;
    assert_eq!(probes.len(), 2);
    assert!(matches!(probes[1].needles[0], Needle::Regex(_)));

    let opts = EpisodeOptions {
        segmentation: Segmentation::Annotations,
        tiers: TierSource::External,
        sidecars,
        ..EpisodeOptions::default()
    };
    let l = from_trace(t.clone(), &opts);
    assert_eq!(l.probes.len(), 2);
    assert_eq!(l.episodes.len(), 2, "first message + one explicit start");
    let e0 = &l.episodes[0];
    assert_eq!(e0.class, RetentionClass::Pin);
    assert_eq!(e0.floor, Tier::Full);
    assert!(e0
        .class_reasons
        .iter()
        .any(|r| r.contains("the constraint turn")));
    assert!(e0.pins.iter().any(|p| p.text == "no bash-isms at all"));
    for r in e0.tiers.values() {
        assert!(r.text().contains("no bash-isms at all"));
    }
    let e1 = &l.episodes[1];
    let compact = e1.representation(Tier::Compact).unwrap();
    assert_eq!(compact.strategy, Strategy::External);
    assert_eq!(compact.text(), "Dry run, then CHANGELOG.");
    assert_eq!(compact.generator, "hand model=none");
    assert_eq!(e1.representation(Tier::Anchor).unwrap().text(), "dry run");
    // The sidecar gives no full tier: full stays the messages as sent.
    assert_eq!(
        e1.representation(Tier::Full).unwrap().strategy,
        Strategy::Source
    );
}

/// The JSON examples in docs/episodes.md parse with the real parsers, and the TOML example is
/// valid rules.
#[test]
fn documented_examples_parse() {
    use tierscope_engine::episode::sidecar::{parse_annotations, parse_probes, parse_tiers};
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/episodes.md")).unwrap();
    let blocks = |lang: &str| -> Vec<String> {
        let fence = format!("```{lang}\n");
        doc.split(&fence)
            .skip(1)
            .filter_map(|b| b.split("```").next().map(str::to_owned))
            .collect()
    };
    let json = blocks("json");
    assert_eq!(json.len(), 4);
    let p = Path::new("docs");
    let a = parse_annotations(&json[0], p).unwrap();
    assert_eq!(a.pins.len(), 2);
    let t = parse_tiers(&json[1], p).unwrap();
    assert_eq!(t.episodes[0].tiers.len(), 3);
    // A tier with the lineage the historian writes.
    let tier: tierscope_engine::episode::sidecar::ExternalTier =
        serde_json::from_str(&json[2]).unwrap();
    assert_eq!(tier.usage.unwrap().output_tokens, Some(412));
    let pr = parse_probes(&json[3], p).unwrap();
    assert_eq!(pr.len(), 2);
    let toml = blocks("toml");
    assert_eq!(toml.len(), 1);
    tierscope_engine::episode::rules::Rules::parse(&toml[0], "docs").unwrap();
}

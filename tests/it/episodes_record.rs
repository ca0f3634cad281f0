//! The canonical record (`--tiers record`, issue 20) and the evidence rule, on recordings and on
//! generated sessions: the killing evidence of a rejected approach is its failing command and
//! decisive line (chosen by rule: never a diff line that happens to say "error"); the record's
//! views nest by construction (every item of a lower view is in the view above it), add nothing
//! the source lacks, cite only the episode's own ids, keep every pin, and render byte-identically.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;
use regex::Regex;
use serde_json::{json, Value};
use tierscope_engine::episode::evidence::KillRule;
use tierscope_engine::episode::needles::identifiers;
use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::record::EpisodeRecord;
use tierscope_engine::episode::sidecar::{Dimension, Probe};
use tierscope_engine::episode::{EpisodeKind, Tier};
use tierscope_engine::fixture::{generate_in_memory, FixtureConfig};
use tierscope_engine::formats::opencode::export::parse_export;
use tierscope_engine::research::audit::{audit_episode, episode_ids};
use tierscope_engine::session::EpisodeOptions;
use tierscope_engine::session::{from_trace, LoadedSession};

const RECORDINGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/recordings");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

/// A citation and the space before it: lineage, not content.
static CITATION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r" ?\[@[^\]\n]*\]").unwrap());

fn uncited(s: &str) -> String {
    CITATION.replace_all(s, "").into_owned()
}

fn load(path: &Path, tiers: TierSource) -> LoadedSession {
    let src = tierscope_engine::trace::load::open(Some(path)).unwrap();
    let t = src.load_session(None).unwrap();
    from_trace(
        t,
        &EpisodeOptions {
            tiers,
            keep_records: true,
            ..EpisodeOptions::default()
        },
    )
}

fn rejected_episode(l: &LoadedSession) -> (&tierscope_engine::episode::Episode, &EpisodeRecord) {
    let e = l
        .episodes
        .iter()
        .find(|e| e.has_kind(EpisodeKind::Rejected))
        .expect("an episode with a rejected approach");
    (e, l.record(e).expect("its record"))
}

/// The rejected approach of a recording: its record, its record views and the source anchor
/// all cite `command` and `line`; no `**` debris in any of them.
fn check_rejection(path: &Path, command: &str, line: &str) {
    let rec = load(path, TierSource::Record);
    let (e, r) = rejected_episode(&rec);
    let x = &r.rejected[0];
    let k = x.killed_by.as_ref().expect("killing evidence");
    assert_eq!(k.command, command);
    assert!(k.line.contains(line), "{k:?}");
    assert!(k.failed, "{k:?}");
    assert_eq!(k.rule, KillRule::Quoted, "the rejecting message quotes it");
    assert!(x.approach.is_some() && x.reason.is_some() && x.revert.is_some());
    for t in [Tier::Dense, Tier::Compact] {
        let text = e.representation(t).unwrap().text();
        assert!(
            text.contains(&format!("killed by `{command}`")) && text.contains(line),
            "record {t} lacks the evidence:\n{text}"
        );
    }
    let source = load(path, TierSource::Source);
    let (se, _) = rejected_episode(&source);
    for t in [Tier::Compact, Tier::Anchor] {
        let text = se.representation(t).unwrap().text();
        assert!(
            text.contains(&format!("`{command}`")) && text.contains(line),
            "source {t} lacks the evidence:\n{text}"
        );
    }
    for l in [&rec, &source] {
        for e in &l.episodes {
            for t in [Tier::Compact, Tier::Anchor] {
                if let Some(r) = e.representation(t) {
                    assert_no_debris(&r.text());
                }
            }
        }
    }
}

/// No markdown emphasis left in a tier (backticked code may hold `**`, a glob).
fn assert_no_debris(text: &str) {
    let outside_code: String = text.split('`').step_by(2).collect();
    assert!(!outside_code.contains("**"), "markdown debris in:\n{text}");
}

#[test]
fn m1_rejected_approach_cites_the_build_and_the_resolver_error() {
    check_rejection(
        &Path::new(SAMPLES).join("M1.json"),
        "cargo build --offline",
        "failed to select a version for `tomlette`",
    );
}

/// M1's probes: the record's anchor answers every probe the source anchor answers (it keeps
/// the pinned rule and the rejected approach with what killed it), and the record's compact
/// keeps the conflicting requirements that are the resolver error's reason.
#[test]
fn m1_record_anchor_keeps_what_the_source_anchor_keeps() {
    let path = Path::new(SAMPLES).join("M1.probes.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let probes = tierscope_engine::episode::sidecar::parse_probes(&text, &path).unwrap();
    let m1 = Path::new(SAMPLES).join("M1.json");
    let (rec, source) = (load(&m1, TierSource::Record), load(&m1, TierSource::Source));
    let answered = |l: &LoadedSession, t: Tier| -> BTreeSet<String> {
        let texts: Vec<String> = l
            .episodes
            .iter()
            .filter_map(|e| e.representation(t).map(|r| r.text()))
            .collect();
        probes
            .iter()
            .filter(|p| texts.iter().any(|x| p.is_answered_by(x)))
            .map(|p| p.id.clone())
            .collect()
    };
    let (r, s) = (
        answered(&rec, Tier::Anchor),
        answered(&source, Tier::Anchor),
    );
    assert!(
        s.is_subset(&r),
        "record anchor {r:?} vs source anchor {s:?}"
    );
    assert!(r.contains("p-conflict") && r.contains("p-api"), "{r:?}");
    let (_, record) = rejected_episode(&rec);
    let compact = tierscope_engine::episode::record_view::render(record, Tier::Compact).unwrap();
    assert!(
        compact.contains("required by package `cfgkit v0.3.0`") && compact.contains("`=0.4.0`"),
        "{compact}"
    );
}

#[test]
fn e1_rejected_bash_arrays_cite_the_dash_error() {
    check_rejection(
        &Path::new(RECORDINGS).join("opencode-1.18.33/exports/E1.json"),
        "sh tests/run.sh",
        r#"Syntax error: "(" unexpected"#,
    );
}

/// The issue's symptom: a `diff -u` that exits 1 (files differ) after the build that failed,
/// with a diff line that says "error". The build stays the evidence, whether or not the
/// rejecting message quotes it; the diff is a `no-match`, its quoted line is no diff line.
#[test]
fn a_later_diff_does_not_take_the_place_of_the_failed_build() {
    let bytes = std::fs::read(Path::new(SAMPLES).join("M1.json")).unwrap();
    let mut v: Value = serde_json::from_slice(&bytes).unwrap();
    let msgs = v["messages"].as_array_mut().unwrap();
    let at = msgs
        .iter()
        .position(|m| m.to_string().contains("cargo build --offline\""))
        .unwrap();
    let mut diff = msgs[at].clone();
    diff["info"]["id"] = json!("msg_22a7b0f90001GRl534ZzuDIFF1");
    let diff_out = "--- vendor/tomlette-0.3.5/src/lib.rs\n+++ vendor/tomlette-0.4.0/src/lib.rs\n@@ -29,8 +29,11 @@\n-/// Expand `${VAR}`; unknown variables are left untouched.\n+/// Expand `${VAR}`; unknown variables are an error (changed in 0.4).\n";
    for p in diff["parts"].as_array_mut().unwrap() {
        p["messageID"] = json!("msg_22a7b0f90001GRl534ZzuDIFF1");
        if p["type"] == "tool" {
            p["callID"] = json!("call_M1_diff");
            p["state"]["input"] = json!({"command": "diff -u vendor/tomlette-0.3.5/src/lib.rs vendor/tomlette-0.4.0/src/lib.rs"});
            p["state"]["output"] = json!(diff_out);
            p["state"]["metadata"]["exit"] = json!(1);
            p["state"]["metadata"]["output"] = json!(diff_out);
        }
        if let Some(id) = p["id"].as_str() {
            p["id"] = json!(format!("{id}d"));
        }
    }
    msgs.insert(at + 1, diff);
    let with_quote = serde_json::to_vec(&v).unwrap();
    // The same, with the rejecting message no longer quoting the resolver error.
    let msgs = v["messages"].as_array_mut().unwrap();
    let reject = msgs
        .iter_mut()
        .find(|m| m.to_string().contains("I'm dropping it"))
        .unwrap();
    for p in reject["parts"].as_array_mut().unwrap() {
        if p["type"] == "text" {
            p["text"] = json!("That approach doesn't work, so I'm dropping it.");
        }
        if p["type"] == "reasoning" {
            p["text"] = json!("Reject this approach, revert.");
        }
    }
    let without_quote = serde_json::to_vec(&v).unwrap();
    for (bytes, rule) in [
        (with_quote, KillRule::Quoted),
        (without_quote, KillRule::Strongest),
    ] {
        let t = parse_export(&bytes, Path::new("M1-with-diff.json")).unwrap();
        for tiers in [TierSource::Record, TierSource::Source] {
            let l = from_trace(
                t.clone(),
                &EpisodeOptions {
                    tiers,
                    keep_records: true,
                    ..EpisodeOptions::default()
                },
            );
            let (e, r) = rejected_episode(&l);
            let k = r.rejected[0].killed_by.as_ref().unwrap();
            assert_eq!(k.command, "cargo build --offline", "{k:?}");
            assert_eq!(k.line, "error: failed to select a version for `tomlette`.");
            assert_eq!(k.rule, rule);
            let diff = r
                .failures
                .iter()
                .find(|f| f.command.starts_with("diff -u"))
                .expect("the diff is a failure");
            assert_eq!(diff.kind.as_str(), "no-match");
            // Nothing but diff: no line of it is a verdict, and neither compact nor anchor
            // quotes one.
            assert_eq!(
                diff.line,
                "+/// Expand `${VAR}`; unknown variables are an error (changed in 0.4)."
            );
            for t in [Tier::Compact, Tier::Anchor] {
                let text = e.representation(t).unwrap().text();
                assert!(!text.contains("+/// Expand"), "{t}: {text}");
            }
            let floor = e.floor_reasons.join("\n");
            assert!(floor.contains("`cargo build --offline`"), "{floor}");
        }
    }
}

/// The canonical record is typed data: it round-trips through JSON, is the same on every build,
/// and every citation names a message, part or call of its episode.
/// Other loads skip the records: nothing downstream reads them.
#[test]
fn records_are_kept_only_when_asked_for() {
    let t = tierscope_engine::trace::load::open(Some(&Path::new(SAMPLES).join("M1.json")))
        .unwrap()
        .load_session(None)
        .unwrap();
    let plain = from_trace(t.clone(), &EpisodeOptions::default());
    assert!(plain.records.is_empty());
    let kept = from_trace(
        t,
        &EpisodeOptions {
            keep_records: true,
            ..EpisodeOptions::default()
        },
    );
    assert_eq!(kept.records.len(), kept.episodes.len());
    // Keeping them changes no tier.
    assert_eq!(plain.episodes, kept.episodes);
}

#[test]
fn records_round_trip_and_cite_their_own_episode() {
    for p in [
        Path::new(SAMPLES).join("M1.json"),
        Path::new(SAMPLES).join("B1.json"),
        Path::new(SAMPLES).join("C1.json"),
        Path::new(RECORDINGS).join("opencode-1.18.33/exports/E2.json"),
    ] {
        let a = load(&p, TierSource::Record);
        let b = load(&p, TierSource::Record);
        assert_eq!(a.records, b.records, "{}", p.display());
        for (e, r) in a.episodes.iter().zip(&a.records) {
            let json = serde_json::to_string(r).unwrap();
            let back: EpisodeRecord = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, r);
            let ids = episode_ids(&a.trace, e);
            let mut cited = BTreeSet::new();
            collect_cites(&serde_json::to_value(r).unwrap(), &mut cited);
            for id in &cited {
                assert!(ids.contains(id), "{} {}: cites {id}", p.display(), e.id);
            }
            assert!(!cited.is_empty());
        }
    }
}

fn collect_cites(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            if let Some(c) = o.get("cite").and_then(Value::as_object) {
                for k in ["message_id", "part_id", "call_id"] {
                    if let Some(s) = c.get(k).and_then(Value::as_str) {
                        out.insert(s.to_owned());
                    }
                }
            }
            o.values().for_each(|x| collect_cites(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_cites(x, out)),
        _ => {}
    }
}

/// Every needle of `lower` (identifiers of the full tier, pins, probes) is in `upper`.
fn needles_nest(full: &str, upper: &str, lower: &str, pins: &[String], probes: &[&Probe]) {
    for n in identifiers(full) {
        assert!(
            !lower.contains(&n) || upper.contains(&n),
            "{n} in the lower view only"
        );
    }
    for p in pins {
        assert!(
            upper.contains(p.as_str()) && lower.contains(p.as_str()),
            "pin {p}"
        );
    }
    for p in probes {
        assert!(
            !p.is_answered_by(lower) || p.is_answered_by(upper),
            "probe {} answered lower only",
            p.id
        );
    }
}

/// The views nest line by line: each fact line of compact is part of dense; each part of the
/// anchor (title, outcome, invariant, names) is part of compact.
fn views_nest(dense: &str, compact: &str, anchor: &str) {
    let d = uncited(dense);
    let c = uncited(compact);
    for l in c.lines().skip(1) {
        if let Some(names) = l.strip_prefix("names: ") {
            for n in names.split(", ").filter(|n| *n != "…") {
                assert!(d.contains(n), "name {n} not in dense");
            }
        } else if !l.starts_with("omitted: ") {
            assert!(
                d.contains(l),
                "compact line not in dense: {l}\n--- dense:\n{d}"
            );
        }
    }
    let a = uncited(anchor);
    for seg in a.split(" · ") {
        let seg = seg.split_once("] ").map_or(
            seg,
            |(head, rest)| if head.starts_with('[') { rest } else { seg },
        );
        if seg.starts_with("omitted: ") || seg.starts_with("source:") {
            continue;
        }
        let body = seg
            .strip_prefix("invariant: ")
            .or_else(|| seg.strip_prefix("names: "))
            .unwrap_or(seg);
        for part in body.split(['…']).flat_map(|p| p.split(" / ")) {
            for piece in part.split(", ").flat_map(|x| x.split(" — ")) {
                let piece = piece
                    .trim()
                    .trim_start_matches("not: ")
                    .trim_start_matches([':', ' '])
                    .trim_end_matches(':');
                if piece.chars().count() >= 3 {
                    assert!(
                        c.contains(piece),
                        "anchor part not in compact: {piece:?}\n--- compact:\n{c}"
                    );
                }
            }
        }
    }
}

fn fixture_session(seed: u64, requests: usize) -> (LoadedSession, Vec<Probe>) {
    fixture_with(seed, requests, TierSource::Record)
}

fn fixture_with(seed: u64, requests: usize, tiers: TierSource) -> (LoadedSession, Vec<Probe>) {
    let cfg = FixtureConfig {
        seed,
        requests,
        probe_density: 1.0,
        ..FixtureConfig::default()
    };
    let (bytes, probes, _) = generate_in_memory(&cfg).unwrap();
    let t = parse_export(&bytes, Path::new("fixture.json")).unwrap();
    let l = from_trace(
        t,
        &EpisodeOptions {
            tiers,
            ..EpisodeOptions::default()
        },
    );
    (l, probes.probes)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// On generated sessions (every dimension the chapter plants): the record's views nest,
    /// add nothing, cite only the episode's ids, keep every pin, render the same twice, and the
    /// error that killed a rejected alternative survives in compact.
    #[test]
    fn record_views_nest_and_add_nothing(seed in any::<u64>(), requests in 30usize..160) {
        let (l, probes) = fixture_session(seed, requests);
        let (again, _) = fixture_session(seed, requests);
        prop_assert_eq!(&l.records, &again.records);
        let (source, _) = fixture_with(seed, requests, TierSource::Source);
        let mut rejected = 0;
        for (e, r) in l.episodes.iter().zip(&l.records) {
            let here: Vec<&Probe> = probes
                .iter()
                .filter(|p| {
                    l.trace
                        .message_index(&p.source_message_id)
                        .is_some_and(|i| e.first_message <= i && i <= e.last_message)
                })
                .collect();
            let text = |t: Tier| e.representation(t).map(|x| x.text()).unwrap_or_default();
            let full = text(Tier::Full);
            let pins: Vec<String> = e.pins.iter().map(|p| p.text.clone()).collect();
            // Rendered from the record, whether or not the size rule kept the tier.
            let view = |t: Tier| tierscope_engine::episode::record_view::render(r, t).unwrap();
            let (dense, compact, anchor) = (view(Tier::Dense), view(Tier::Compact), view(Tier::Anchor));
            // What the source anchor keeps of the chapter's facts, the record's anchor keeps too.
            let source_anchor = source.episodes.iter().find(|s| s.id == e.id)
                .and_then(|s| s.representation(Tier::Anchor)).map(|x| x.text()).unwrap_or_default();
            for p in &here {
                prop_assert!(!p.is_answered_by(&source_anchor) || p.is_answered_by(&view(Tier::Anchor)),
                    "{}: probe {} kept by the source anchor, lost by the record's:\n{}\n--- source:\n{}",
                    e.id, p.id, view(Tier::Anchor), source_anchor);
            }
            needles_nest(&full, &dense, &compact, &pins, &here);
            needles_nest(&full, &compact, &anchor, &pins, &here);
            views_nest(&dense, &compact, &anchor);
            let audit = audit_episode(e, &here, &episode_ids(&l.trace, e));
            for t in &audit.tiers {
                prop_assert!(t.unsupported.is_empty(), "{} {}: {:?}", e.id, t.tier, t.unsupported);
                prop_assert!(t.non_monotonic.is_empty(), "{} {}: {:?}", e.id, t.tier, t.non_monotonic);
                prop_assert_eq!(t.pins_ok, t.pins);
            }
            for p in here.iter().filter(|p| p.dimension == Dimension::RejectedAlternative) {
                prop_assert!(p.is_answered_by(&compact), "{}: probe {} lost in compact:\n{}", e.id, p.id, compact);
                rejected += 1;
            }
        }
        // Long enough sessions plant a rejected alternative.
        if requests >= 120 {
            prop_assert!(rejected > 0 || probes.iter().all(|p| p.dimension != Dimension::RejectedAlternative));
        }
    }
}

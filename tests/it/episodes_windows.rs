//! A session of more episodes than one drafting window (`session::from_trace_with` drafts and
//! counts 512 at a time): every window's counts and statistics are those of one batch, and a
//! counts-only load (`drop_tier_texts`, what `episodes` uses) differs from a full one only in
//! the texts it no longer holds.

use std::path::Path;

use tierscope_engine::fixture::{generate_in_memory, FixtureConfig};
use tierscope_engine::formats::opencode::export::parse_export;
use tierscope_engine::session::EpisodeOptions;
use tierscope_engine::session::{from_trace, LoadedSession};
use tierscope_engine::trace::Trace;

/// 1,300 episodes: two full windows and part of a third.
fn trace() -> Trace {
    let cfg = FixtureConfig {
        seed: 7,
        requests: 3_900,
        episodes: Some(1_300),
        output_size: 300,
        ..FixtureConfig::default()
    };
    let (bytes, _, _) = generate_in_memory(&cfg).unwrap();
    parse_export(&bytes, Path::new("fixture.json")).unwrap()
}

fn load(t: Trace, drop_tier_texts: bool) -> LoadedSession {
    from_trace(
        t,
        &EpisodeOptions {
            keep_records: true,
            drop_tier_texts,
            ..EpisodeOptions::default()
        },
    )
}

#[test]
fn a_counts_only_load_is_the_full_load_without_its_texts() {
    let t = trace();
    let full = load(t.clone(), false);
    let lean = load(t, true);
    assert!(full.episodes.len() > 1_024, "{}", full.episodes.len());

    // The texts were there, then dropped; nothing else differs.
    let mut emptied = full.episodes.clone();
    for e in &mut emptied {
        e.tiers.values_mut().for_each(|r| r.drop_texts());
    }
    assert_eq!(lean.episodes, emptied);
    assert!(full
        .episodes
        .iter()
        .flat_map(|e| e.tiers.values())
        .all(|r| r.chunks.iter().all(|c| !c.text.is_empty())));
    assert_eq!(lean.records, full.records);
    assert_eq!(lean.token_stats, full.token_stats);

    // A text met in two windows is tokenized in the first and, as in one batch, not reported
    // as cached in the second (the in-memory cache starts empty).
    let mut windows: std::collections::HashMap<&str, std::collections::BTreeSet<usize>> =
        Default::default();
    for (k, e) in full.episodes.iter().enumerate() {
        for c in e.tiers.values().flat_map(|r| &r.chunks) {
            windows.entry(c.text.as_str()).or_default().insert(k / 512);
        }
    }
    assert!(
        windows.values().any(|w| w.len() > 1),
        "no text recurs across windows"
    );
    assert_eq!(full.token_stats.cached, 0, "{:?}", full.token_stats);
    // Each chunk's count is its text's exact count.
    for c in full
        .episodes
        .iter()
        .flat_map(|e| e.tiers.values())
        .flat_map(|r| &r.chunks)
        .step_by(97)
    {
        assert_eq!(
            c.tokens,
            tierscope_engine::tokens::count_exact(Default::default(), &c.text)
        );
    }
}

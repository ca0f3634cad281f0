//! Token counts are exactly tiktoken's on every text tierscope counts, for every recording of
//! every OpenCode era and for generated sessions: the tier chunks (full, pruned, dense, compact,
//! anchor; source and cascade tiers), the compaction calls and the compaction prompt, each
//! episode's chunks joined into one text, and every session's text as one text. The reference is
//! tiktoken-rs (`encode_ordinary`), the port of tiktoken's own core; the counter under test is
//! [`Tokenizer::count_many`] (bpe-openai behind our pre-tokenizer, distinct pieces cut at the
//! exact cuts). The replay's error figures are made of these counts.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use tierscope_engine::episode::classify;
use tierscope_engine::episode::rules::Rules;
use tierscope_engine::episode::segment::{self, Segmentation};
use tierscope_engine::episode::tiers;
use tierscope_engine::episode::Strategy;
use tierscope_engine::fixture::{generate_in_memory, FixtureConfig};
use tierscope_engine::formats::opencode::compaction_request;
use tierscope_engine::formats::opencode::export::parse_export;
use tierscope_engine::tokens::{Tokenizer, TokenizerKind};
use tierscope_engine::trace::Trace;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn is_opencode_recording(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("opencode-"))
}

/// Every session of every recording: the data dirs and exports of each era
/// (`tests/recordings/`) and the bundled samples.
fn recordings() -> Vec<(String, Trace)> {
    let root = Path::new(ROOT);
    let mut sources: Vec<PathBuf> = Vec::new();
    let mut dirs: Vec<PathBuf> = read_dir(&root.join("tests/recordings"));
    // OpenCode's releases (the other agents' recordings are read by their own suites).
    dirs.retain(|p| p.is_dir() && is_opencode_recording(p));
    dirs.sort();
    assert_eq!(dirs.len(), 10, "recorded releases: {dirs:?}");
    for era in dirs {
        // Each release keeps its data dir, its exports, or both.
        let (data, exports) = (era.join("data"), era.join("exports"));
        assert!(data.is_dir() || exports.is_dir(), "{}", era.display());
        if data.is_dir() {
            sources.push(data);
        }
        if exports.is_dir() {
            sources.extend(export_files(&exports));
        }
    }
    sources.extend(export_files(&root.join("sample-traces")));
    sources.push(root.join("sample-traces/opencode.db"));
    let mut out = Vec::new();
    for p in sources {
        let src = tierscope_engine::trace::load::open(Some(&p))
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let sessions = src
            .list_sessions()
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        for s in sessions {
            let t = src
                .load_session(Some(&s.id))
                .unwrap_or_else(|e| panic!("{} {}: {e}", p.display(), s.id));
            out.push((format!("{} {}", p.display(), s.id), t));
        }
    }
    assert!(out.len() >= 20, "sessions found: {}", out.len());
    out
}

fn read_dir(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect()
}

/// The session exports in `dir` (not the sidecars or manifests beside them).
fn export_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = read_dir(dir)
        .into_iter()
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".json")
                && n != "manifest.json"
                && ![".probes.json", ".annotations.json", ".tiers.json"]
                    .iter()
                    .any(|s| n.ends_with(s))
        })
        .collect();
    v.sort();
    v
}

/// Generated sessions: two seeds, long tool outputs in one of them.
fn fixtures() -> Vec<(String, Trace)> {
    [(1, 300, 1200), (7, 120, 6000)]
        .into_iter()
        .map(|(seed, requests, output_size)| {
            let cfg = FixtureConfig {
                seed,
                requests,
                output_size,
                ..FixtureConfig::default()
            };
            let (bytes, _, _) = generate_in_memory(&cfg).expect("fixture");
            let name = format!("fixture seed {seed}, {requests} requests");
            let t = parse_export(&bytes, Path::new("fixture.json")).expect("fixture parses");
            (name, t)
        })
        .collect()
}

/// The texts a load counts for `trace` (as `session::from_trace_with` builds them), plus the
/// joined texts of each episode and of the whole session.
fn counted_texts(trace: &Trace) -> Vec<String> {
    let rules = Rules::embedded().expect("embedded rules");
    let req_of = classify::request_of_message(trace);
    let todos = segment::todo_changes(trace);
    let artefacts = tiers::artefact_ids(trace);
    let segments = segment::segment(trace, Segmentation::UserTurn, None, &BTreeSet::new(), None);
    let mut texts: Vec<String> = Vec::new();
    let mut session = String::new();
    for strategy in [Strategy::Source, Strategy::Cascade] {
        for (k, seg) in segments.iter().enumerate() {
            let cl = classify::classify_with_todos(trace, seg, &rules, &req_of, &todos);
            let drafts = tiers::generate(
                &tiers::EpisodeSource {
                    trace,
                    episode_id: &format!("E{k}"),
                    seg,
                    classified: &cl,
                    rules: &rules,
                    artefacts: &artefacts,
                },
                strategy,
            );
            let episode: Vec<&str> = drafts.iter().flat_map(|d| d.texts()).collect();
            let joined = episode.join("\n");
            texts.extend(episode.iter().map(|t| (*t).to_owned()));
            if strategy == Strategy::Source {
                session.push_str(&joined);
                session.push('\n');
            }
            texts.push(joined);
        }
    }
    texts.extend(
        compaction_request::build_all(trace)
            .into_iter()
            .map(|r| r.text),
    );
    texts.push(compaction_request::fixed_prompt_text(
        &tierscope_engine::formats::opencode::Dialect::of(&trace.origin),
    ));
    texts.push(session);
    texts
}

/// Our counts of `texts` against tiktoken's, text by text; the first mismatch names the
/// session and shows the text.
fn assert_exact(kind: TokenizerKind, name: &str, texts: &[String]) -> (usize, usize) {
    let reference = match kind {
        TokenizerKind::O200k => tiktoken_rs::o200k_base_singleton(),
        TokenizerKind::Cl100k => tiktoken_rs::cl100k_base_singleton(),
    };
    let mut seen = HashSet::new();
    let distinct: Vec<&str> = texts
        .iter()
        .map(String::as_str)
        .filter(|t| seen.insert(*t))
        .collect();
    let ours = Tokenizer::in_memory(kind).count_many(&distinct);
    let mut bytes = 0;
    for (text, n) in distinct.iter().zip(&ours) {
        let want = reference.encode_ordinary(text).len() as u32;
        assert_eq!(
            *n,
            want,
            "{kind}: {name}: {} bytes counted {n}, tiktoken {want}: {:?}",
            text.len(),
            tierscope_engine::text::clip_chars(text, 400)
        );
        bytes += text.len();
    }
    (distinct.len(), bytes)
}

#[test]
fn counts_are_tiktokens_on_every_recording_and_fixture() {
    let mut total = (0, 0);
    for (name, t) in recordings().into_iter().chain(fixtures()) {
        let (n, bytes) = assert_exact(TokenizerKind::O200k, &name, &counted_texts(&t));
        total = (total.0 + n, total.1 + bytes);
    }
    // The recordings hold megabytes of text of every kind (code, logs, JSON, prose).
    assert!(total.0 > 5_000 && total.1 > 10_000_000, "{total:?}");
}

#[test]
fn cl100k_counts_are_tiktokens_on_the_samples_and_a_fixture() {
    let samples = recordings()
        .into_iter()
        .filter(|(n, _)| n.contains("sample-traces"));
    for (name, t) in samples.chain(fixtures().into_iter().take(1)) {
        assert_exact(TokenizerKind::Cl100k, &name, &counted_texts(&t));
    }
}

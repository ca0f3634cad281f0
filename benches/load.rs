//! Micro-benchmarks behind BENCHMARKS.md (run by `bench/run.sh`; `cargo bench --bench load`).
//!
//! - `load/parse_export`: export bytes → trace (parse + derive), no tokenization.
//! - `load/episodes_warm`: trace → episodes and tiers with every count already in the tokenizer's
//!   memory cache (the cost of segmentation, classification and tier building alone).
//! - `tokenize/*`: o200k_base over the same distinct texts Python's tiktoken gets in
//!   `bench/tok_py.py` (`TIERSCOPE_BENCH_TEXTS`, a JSON array of strings): tiktoken-rs on one
//!   thread (the reference), tierscope's counter text by text (`tokens::count_exact`) and
//!   `Tokenizer::count_many` (cold cache: distinct pieces, in parallel), each on a rayon pool
//!   of 1 and of 2 threads. Targets (issue 17; `bench/summarise.py` checks them): tierscope
//!   single-threaded ≥ 1.5× Python tiktoken single-threaded, and 2 threads ≥ 1.8× faster than 1
//!   (which needs two idle cores: on a shared machine compare the CPU time, see BENCHMARKS.md).
//!
//! - `replay_loaded/<policy>`: the replay engine alone (`replay::replay_session`) per built-in policy on
//!   an already loaded session (`TIERSCOPE_BENCH_REPLAY`, default: the export), budget = the
//!   model's usable input limit.
//!
//! Inputs: `TIERSCOPE_BENCH_EXPORT` (default: the E2 recording,
//! `tests/recordings/opencode-1.18.33/exports/E2.json`), `TIERSCOPE_BENCH_TEXTS` (default: the
//! texts of that export, extracted by the same rule) and `TIERSCOPE_BENCH_REPLAY` (any path
//! `tierscope` loads; default: the export).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rayon::prelude::*;
use serde_json::Value;
use tierscope_engine::formats::opencode::export::parse_export;
use tierscope_engine::session::EpisodeOptions;
use tierscope_engine::tokens::{count_exact, Tokenizer, TokenizerKind};

const DEFAULT_EXPORT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33/exports/E2.json"
);

fn export_path() -> PathBuf {
    std::env::var_os("TIERSCOPE_BENCH_EXPORT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_EXPORT))
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("bench input {}: {e}", path.display()))
}

/// The distinct part texts and tool outputs / errors of an export (the rule of `bench/tok_py.py`).
fn texts_of_export(bytes: &[u8]) -> Result<Vec<String>, String> {
    let start = bytes.iter().position(|b| *b == b'{').unwrap_or(0);
    let doc: Value =
        serde_json::from_slice(&bytes[start..]).map_err(|e| format!("bench export: {e}"))?;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let messages = doc["messages"].as_array().cloned().unwrap_or_default();
    for m in &messages {
        for p in m["parts"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let kind = p["type"].as_str().unwrap_or("");
            let cands: Vec<&Value> = match kind {
                "text" | "reasoning" => vec![&p["text"]],
                "tool" => vec![&p["state"]["output"], &p["state"]["error"]],
                _ => vec![],
            };
            for t in cands.into_iter().filter_map(Value::as_str) {
                if !t.is_empty() && seen.insert(t.to_owned()) {
                    out.push(t.to_owned());
                }
            }
        }
    }
    Ok(out)
}

fn texts() -> Result<Vec<String>, String> {
    match std::env::var_os("TIERSCOPE_BENCH_TEXTS") {
        Some(p) => serde_json::from_slice(&read(Path::new(&p))?)
            .map_err(|e| format!("TIERSCOPE_BENCH_TEXTS is not a JSON array of strings: {e}")),
        None => texts_of_export(&read(&export_path())?),
    }
}

/// Bench inputs come from files: a bad one skips its group with the reason (no panic).
fn or_skip<T>(group: &str, r: Result<T, String>) -> Option<T> {
    r.map_err(|e| eprintln!("skipping {group}: {e}")).ok()
}

fn load(c: &mut Criterion) {
    let path = export_path();
    let Some(bytes) = or_skip("load", read(&path)) else {
        return;
    };
    let Some(trace) = or_skip(
        "load",
        parse_export(&bytes, &path).map_err(|e| e.to_string()),
    ) else {
        return;
    };
    let mut g = c.benchmark_group("load");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("parse_export", |b| {
        b.iter(|| parse_export(black_box(&bytes), &path).is_ok())
    });
    let opts = EpisodeOptions::default();
    let tokenizer = Tokenizer::in_memory(TokenizerKind::O200k);
    drop(tierscope_engine::session::from_trace_with(
        trace.clone(),
        &opts,
        &tokenizer,
    ));
    g.bench_function("episodes_warm", |b| {
        b.iter_batched(
            || trace.clone(),
            |t| tierscope_engine::session::from_trace_with(t, &opts, &tokenizer),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn tokenize(c: &mut Criterion) {
    let Some(texts) = or_skip("tokenize", texts()) else {
        return;
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let bytes: usize = refs.iter().map(|t| t.len()).sum();
    let bpe = tiktoken_rs::o200k_base_singleton();
    let mut g = c.benchmark_group("tokenize");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("tiktoken_rs_single", |b| {
        b.iter(|| {
            refs.iter()
                .map(|t| bpe.encode_ordinary(t).len())
                .sum::<usize>()
        })
    });
    for threads in [1, 2] {
        let Some(pool) = or_skip(
            "tokenize",
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| e.to_string()),
        ) else {
            return;
        };
        let exact = || {
            pool.install(|| {
                refs.par_iter()
                    .map(|t| u64::from(count_exact(TokenizerKind::O200k, t)))
                    .sum::<u64>()
            })
        };
        g.bench_function(format!("tierscope_exact_{threads}_threads"), |b| {
            b.iter(exact)
        });
        let many = || {
            pool.install(|| {
                Tokenizer::in_memory(TokenizerKind::O200k)
                    .count_many(black_box(&refs))
                    .iter()
                    .map(|n| u64::from(*n))
                    .sum::<u64>()
            })
        };
        g.bench_function(
            format!("tierscope_count_many_cold_{threads}_threads"),
            |b| b.iter(many),
        );
        // The same work in CPU seconds of the whole process: on a shared machine the wall-clock
        // speed-up of 2 threads shows the other load as much as ours; equal CPU time on 1 and 2
        // threads says the threads do not get in each other's way.
        if process_cpu().is_some() {
            for (name, f) in [
                ("exact", &exact as &dyn Fn() -> u64),
                ("count_many_cold", &many),
            ] {
                g.bench_function(format!("tierscope_{name}_{threads}_threads_cpu"), |b| {
                    b.iter_custom(|iters| {
                        let start = process_cpu().unwrap_or_default();
                        for _ in 0..iters {
                            black_box(f());
                        }
                        process_cpu().unwrap_or_default().saturating_sub(start)
                    })
                });
            }
        }
    }
    g.finish();
}

/// CPU time (user + system) of this process so far, all threads (Linux `/proc/self/stat`, in
/// clock ticks of 10 ms); `None` elsewhere.
fn process_cpu() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(ticks * 10))
}

fn replay(c: &mut Criterion) {
    let path = std::env::var_os("TIERSCOPE_BENCH_REPLAY")
        .map(PathBuf::from)
        .unwrap_or_else(export_path);
    let args = tierscope_engine::session::LoadOptions {
        path: Some(path),
        ..Default::default()
    };
    let Some(session) = or_skip(
        "replay",
        tierscope_engine::session::load(&args).map_err(|e| e.to_string()),
    ) else {
        return;
    };
    let Some(policies) = or_skip(
        "replay",
        tierscope_engine::policy::builtins().map_err(|e| e.to_string()),
    ) else {
        return;
    };
    eprintln!(
        "replay input: {} requests, {} episodes",
        session.trace.requests.len(),
        session.episodes.len()
    );
    let mut g = c.benchmark_group("replay_loaded");
    g.sample_size(10);
    for p in &policies {
        g.bench_function(p.name.as_str(), |b| {
            b.iter(|| tierscope_engine::replay::replay_session(black_box(&session), p, None))
        });
    }
    g.finish();
}

criterion_group!(benches, load, tokenize, replay);
criterion_main!(benches);

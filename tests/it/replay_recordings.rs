//! Every built-in policy on every recording: it runs; `full` never changes a tier; `retention`
//! never violates a floor or a pin; `age` at a tight budget on the migration recording does; and
//! the replayed tokens track the recorded prompt (`full` without compaction, `opencode` with
//! `trigger = recorded` where OpenCode compacted). The per-request error is printed.

use std::path::{Path, PathBuf};

use tierscope_engine::loaded::LoadOptions;
use tierscope_engine::loaded::{self, LoadedSession};
use tierscope_engine::policy;
use tierscope_engine::replay::{self, Replay};

const REC_118: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/recordings/opencode-1.18.33"
);
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

fn recordings() -> Vec<(String, PathBuf)> {
    let mut v = vec![
        (
            "E1".to_owned(),
            PathBuf::from(REC_118).join("exports/E1.json"),
        ),
        (
            "E2".to_owned(),
            PathBuf::from(REC_118).join("exports/E2.json"),
        ),
    ];
    for name in ["M1", "B1", "C1"] {
        let p = PathBuf::from(SAMPLES).join(format!("{name}.json"));
        assert!(p.is_file(), "{} is missing", p.display());
        v.push((name.to_owned(), p));
    }
    v
}

fn load(path: &Path) -> LoadedSession {
    let args = LoadOptions {
        path: Some(path.to_path_buf()),
        ..LoadOptions::default()
    };
    match loaded::load(&args) {
        Ok(s) => s,
        Err(e) => panic!("loading {}: {e}", path.display()),
    }
}

fn run(s: &LoadedSession, name: &str, budget: Option<u64>) -> Replay {
    let p = policy::load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
    replay::replay_session(s, &p, budget)
}

fn errors(r: &Replay) -> Vec<(usize, u64, u64, f64)> {
    r.frames
        .iter()
        .filter(|f| !f.synthetic_call && f.recorded.prompt > 0)
        .map(|f| {
            let pct =
                (f.tokens as f64 - f.recorded.prompt as f64) / f.recorded.prompt as f64 * 100.0;
            (f.request, f.tokens, f.recorded.prompt, pct)
        })
        .collect()
}

#[test]
fn every_builtin_runs_on_every_recording_and_keeps_the_laws() {
    for (name, path) in recordings() {
        let s = load(&path);
        for p in policy::builtin_names() {
            let r = run(&s, &p, None);
            assert_eq!(r.frames.len(), s.trace.requests.len(), "{name} {p}");
            for f in &r.frames {
                assert_eq!(
                    f.radius,
                    f.tokens - f.divergence,
                    "{name} {p} request {}",
                    f.request
                );
                let tier_tokens: u64 =
                    [f.tiers.full, f.tiers.dense, f.tiers.compact, f.tiers.anchor]
                        .iter()
                        .map(|t| t.tokens)
                        .sum();
                assert!(tier_tokens <= f.tokens, "{name} {p} request {}", f.request);
            }
            match p.as_str() {
                "full" => assert_eq!(r.summary.changes, 0, "{name}: full changes nothing"),
                "retention" | "oracle-legal" => {
                    assert_eq!(r.summary.floor_violations, 0, "{name} {p}");
                    assert_eq!(r.summary.pin_violations, 0, "{name} {p}");
                }
                _ => {}
            }
            // Deterministic byte for byte.
            let again = run(&s, &p, None);
            let a = serde_json::to_string(&r).expect("json");
            let b = serde_json::to_string(&again).expect("json");
            assert_eq!(a, b, "{name} {p} is not deterministic");
        }
        // Tight budgets: retention still never breaks a floor.
        for share in [0.5, 0.7] {
            let tight = (s
                .trace
                .requests
                .iter()
                .map(|r| r.usage.input + r.usage.cache_read)
                .max()
                .unwrap_or(0) as f64
                * share) as u64;
            let r = run(&s, "retention", Some(tight.max(1)));
            assert_eq!(
                r.summary.floor_violations + r.summary.pin_violations,
                0,
                "{name} retention at {tight}"
            );
        }
    }
}

#[test]
fn age_breaks_floors_on_the_migration_recording_at_a_tight_budget() {
    let path = PathBuf::from(SAMPLES).join("M1.json");
    let s = load(&path);
    let peak = s
        .trace
        .requests
        .iter()
        .map(|r| r.usage.input + r.usage.cache_read)
        .max()
        .unwrap_or(0);
    let age = run(&s, "age", Some(peak / 2));
    assert!(
        age.summary.floor_violations > 0,
        "age should demote below floors on {}: {:?}",
        path.display(),
        age.summary
    );
    let ret = run(&s, "retention", Some(peak / 2));
    assert_eq!(ret.summary.floor_violations, 0);
    println!(
        "{}: at budget {}: age floor violations {}, pin violations {}; retention holds {}",
        path.display(),
        peak / 2,
        age.summary.floor_violations,
        age.summary.pin_violations,
        ret.summary.holds
    );
}

#[test]
fn replayed_tokens_track_the_recorded_prompt() {
    println!("session  policy     requests  mean|err|%  max|err|%   (per request: replayed/recorded err%)");
    for (name, path) in recordings() {
        let s = load(&path);
        let compacted = !s.trace.compactions.is_empty();
        let policy = if compacted { "opencode" } else { "full" };
        let r = run(&s, policy, None);
        let e = errors(&r);
        assert!(!e.is_empty(), "{name}: no request with recorded usage");
        let mean = e.iter().map(|x| x.3.abs()).sum::<f64>() / e.len() as f64;
        let max = e.iter().map(|x| x.3.abs()).fold(0.0, f64::max);
        let detail: Vec<String> = e
            .iter()
            .map(|(t, a, b, p)| format!("{t}:{a}/{b}({p:+.2})"))
            .collect();
        println!(
            "{name:<8} {policy:<10} {:>8}  {mean:>9.2}  {max:>9.2}",
            e.len()
        );
        println!("         {}", detail.join(" "));
        // The recordings count o200k tokens of what OpenCode sent; the system chunk carries the
        // rest, so the conversation must match within a few percent.
        assert!(mean < 2.0, "{name} {policy}: mean error {mean:.2}%");
        assert!(max < 5.0, "{name} {policy}: max error {max:.2}%");
        if compacted {
            // The counterfactual keeps everything OpenCode summarised away: it is larger.
            let full = run(&s, "full", None);
            let last = full.frames.last().map(|f| f.tokens).unwrap_or(0);
            let last_oc = r.frames.last().map(|f| f.tokens).unwrap_or(0);
            assert!(
                last > last_oc,
                "{name}: full {last} should exceed opencode {last_oc}"
            );
            let fe = errors(&full);
            let fmean = fe.iter().map(|x| x.3.abs()).sum::<f64>() / fe.len() as f64;
            println!(
                "{name:<8} full       {:>8}  {fmean:>9.2}  (counterfactual: no compaction)",
                fe.len()
            );
        }
    }
}

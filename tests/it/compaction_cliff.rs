//! Issue 19: `opencode` at the same budget as the tiers. Under an explicit budget it simulates
//! OpenCode's compaction with that budget as its usable limit, bills each summary call in its
//! frame, and says which trigger ran; at the recorded limit its compactions land where the real
//! ones did.

use std::path::Path;

use tierscope_engine::policy;
use tierscope_engine::replay::{self, Replay};
use tierscope_engine::research::experiment::{self, BudgetMode};
use tierscope_engine::session::{load, LoadOptions, LoadedSession};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-traces");

fn sample(name: &str) -> LoadedSession {
    load(&LoadOptions {
        path: Some(Path::new(SAMPLES).join(name)),
        ..LoadOptions::default()
    })
    .expect("sample loads")
}

fn opencode(s: &LoadedSession, set: &[(&str, &str)], budget: Option<u64>) -> Replay {
    let kv: Vec<(String, String)> = set
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let p = policy::load("opencode", &kv).expect("policy");
    replay::replay_session(s, &p, budget)
}

/// Requests whose frame shows a new summary (the simulated compactions).
fn compacted_at(r: &Replay) -> Vec<usize> {
    r.frames
        .iter()
        .filter(|f| f.compaction)
        .map(|f| f.request)
        .collect()
}

#[test]
fn an_explicit_budget_makes_opencode_compact_at_it_and_says_so() {
    let m1 = sample("M1.json");
    let r = opencode(&m1, &[], Some(9_000));
    let run = r
        .policy
        .compaction
        .as_ref()
        .expect("opencode reports its trigger");
    assert_eq!(run.trigger, "simulate");
    assert_eq!(run.usable_limit, Some(9_000));
    assert!(run.why.contains("budget"), "{}", run.why);
    assert!(r.policy.note.as_deref().is_some_and(|n| n.contains("9000")));
    let at = compacted_at(&r);
    assert!(!at.is_empty(), "M1 reaches 9,000 tokens: the cliff shows");
    assert_eq!(run.compactions, at);
    // Each compaction follows a request whose prompt + output reached the limit (OpenCode checks
    // the finished step), and none before the first such request.
    for &t in &at {
        let prev = &r.frames[t - 1];
        let out = m1.trace.requests[t - 1].usage.output;
        assert!(
            prev.tokens + out >= 9_000,
            "request {t}: {} + {out}",
            prev.tokens
        );
    }
    let first_over = (0..r.frames.len())
        .find(|&t| r.frames[t].tokens + m1.trace.requests[t].usage.output >= 9_000)
        .expect("some request reaches the limit");
    assert_eq!(at[0], first_over + 1);
    // M1 has no recorded compaction: the summary is built from compact tiers, and says so.
    assert!(run.summary_text.iter().all(|s| s == "compact-tiers"));
    assert!(r.summary.mean_tokens < 9_000.0);

    // Without a budget, or when asked, it follows the recording (M1 never compacted).
    for (set, budget, why) in [
        (vec![], None, "no budget"),
        (
            vec![("trigger", "recorded")],
            Some(9_000),
            "trigger = recorded",
        ),
    ] {
        let r = opencode(&m1, &set, budget);
        let run = r.policy.compaction.as_ref().expect("reported");
        assert_eq!(run.trigger, "recorded");
        assert!(run.why.contains(why), "{}", run.why);
        assert!(compacted_at(&r).is_empty());
    }
}

#[test]
fn a_simulated_compaction_is_billed_in_its_frame() {
    let m1 = sample("M1.json");
    let r = opencode(&m1, &[], Some(9_000));
    let price = &r.trace.pricing.price;
    let mut calls = 0;
    for f in r.frames.iter().filter(|f| f.compaction) {
        let c = f.compaction_call.as_ref().expect("a compaction is a call");
        calls += 1;
        // Input: the compaction agent's system chunk, the release's prompt, the history.
        assert!(c.tokens > c.history && c.history > 0, "{c:?}");
        assert_eq!(c.tokens, c.uncached + c.cache_read + c.cache_write);
        // Output: the summary it wrote, the one shown from this request on.
        assert!(c.output > 0);
        let want = (c.uncached as f64 * price.input
            + c.cache_read as f64 * price.input * price.read_multiplier
            + c.cache_write as f64 * price.input * price.write_multiplier
            + c.output as f64 * price.output)
            * 1e-6;
        assert!((c.cost - want).abs() < 1e-12, "{} vs {want}", c.cost);
        assert!(f.cost > c.cost, "the request's own price is there too");
    }
    assert!(calls > 0);
    let frames: f64 = r.frames.iter().map(|f| f.cost).sum();
    assert!(
        (r.summary.cost - frames).abs() < 1e-12,
        "per session = Σ per request"
    );
    assert_eq!(r.summary.synthetic_calls, calls);
}

#[test]
fn at_the_recorded_limit_the_simulation_compacts_where_opencode_did() {
    // C1: 14,000 / 3,000 → usable 11,000. OpenCode compacted three times: after requests 11
    // and 21 because prompt + output reached 11,000 (summary calls 12 and 22), and at 16
    // because the provider answered request 15 with a scripted `context_length_exceeded` at
    // ~9.8k tokens, below any limit — no threshold reproduces that one.
    let c1 = sample("C1.json");
    let recorded = opencode(&c1, &[], None);
    assert_eq!(
        recorded
            .policy
            .compaction
            .as_ref()
            .map(|c| c.compactions.clone()),
        Some(vec![13, 17, 23])
    );
    let sim = opencode(&c1, &[("trigger", "simulate")], None);
    let run = sim.policy.compaction.as_ref().expect("reported");
    assert_eq!(run.usable_limit, Some(11_000));
    assert_eq!(compacted_at(&sim), vec![13, 23], "{}", run.describe());
    // The recording's own summary calls are not made by the simulation (no double bill).
    assert_eq!(run.recorded_calls_skipped, 3);
    for f in sim.frames.iter().filter(|f| f.synthetic_call) {
        assert_eq!((f.tokens, f.cost), (0, 0.0));
    }
    // Its summaries are the recorded texts, and its contexts follow what was sent.
    assert!(run.summary_text.iter().all(|s| s.starts_with("recorded:")));
    let e = &sim.summary.recorded_error;
    assert!(e.mean_abs_pct < 3.0 && e.max_abs_pct < 10.0, "{e:?}");
    // The explicit budget equal to the limit gives the same run.
    let at_budget = opencode(&c1, &[], Some(11_000));
    assert_eq!(compacted_at(&at_budget), vec![13, 23]);
}

#[test]
fn the_experiment_shows_the_irreducible_part_and_targets_pressure() {
    let m1 = sample("M1.json");
    let input = replay::Input::from(&m1);
    let irr = replay::irreducible(&input);
    assert_eq!(irr.len(), m1.trace.requests.len());
    let full = replay::replay_session(&m1, &policy::load("full", &[]).unwrap(), None);
    for (i, f) in full.frames.iter().enumerate() {
        // The system chunk and the active episode are part of every rendering.
        assert!(irr[i] <= f.tokens, "request {i}: {} > {}", irr[i], f.tokens);
        assert!(irr[i] >= full.trace.system_segments[0].tokens);
    }
    let policies = vec![
        policy::load("truncate", &[]).unwrap(),
        policy::load("opencode", &[]).unwrap(),
    ];
    let e = experiment::run(&m1, &policies, BudgetMode::Fixed(Some(9_000)));
    assert_eq!(e.irreducible, irr);
    for r in &e.rows {
        assert_eq!(r.irreducible_max, *irr.iter().max().unwrap());
        assert!(r.avoidable_overflow <= r.max_overflow);
    }
    let oc = e.rows.iter().find(|r| r.policy == "opencode").unwrap();
    assert_eq!(
        oc.compaction.as_ref().map(|c| c.trigger.as_str()),
        Some("simulate")
    );

    // Without N, the target is below full's own mean (every budget-driven policy is squeezed)
    // and above the irreducible mean (it can be reached): halfway, request by request.
    let target = experiment::auto_target(&input);
    let irr_mean = irr.iter().sum::<u64>() as f64 / irr.len() as f64;
    assert!(target < full.summary.mean_tokens - 1.0, "{target}");
    assert!(target > irr_mean, "{target} vs {irr_mean}");
    let halfway = (irr_mean + full.summary.mean_tokens) / 2.0;
    assert!((target - halfway).abs() < 1e-6, "{target} vs {halfway}");
    let e = experiment::run(&m1, &policies, BudgetMode::MatchMeanTokens(None));
    assert_eq!(e.target_mean_tokens, Some(target));
    assert!(e.target_rule.is_some());
    // `truncate` answers the budget: it reaches the target.
    let t = e.rows.iter().find(|r| r.policy == "truncate").unwrap();
    assert_eq!(t.matched, Some(true), "mean {} vs {target}", t.mean_tokens);
}

/// The episode a compaction's kept tail starts inside (M1 under a budget: simulated; C1: the
/// recorded `tail_start_id`): its frame says how many chunks went into the summary, the
/// rendered context holds exactly the rest at `full`, and the cut lasts until the episode is
/// dropped.
#[test]
fn an_episode_split_by_the_kept_tail_is_shown_from_the_cut_and_says_so() {
    use std::collections::BTreeMap;
    use tierscope_engine::episode::Tier;
    use tierscope_engine::replay::{render_at, Cell, CutBy, Input};
    for (name, budget) in [("M1.json", Some(9_000)), ("C1.json", None)] {
        let s = sample(name);
        let r = opencode(&s, &[], budget);
        let p = policy::load("opencode", &[]).expect("policy");
        let index = |id: &str| s.episodes.iter().position(|e| e.id == id).expect("episode");
        // Episode → (hidden, chunks), as the frames have said so far.
        let mut cuts: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        let mut checked = 0;
        for f in &r.frames {
            for c in &f.tail_only {
                assert!(0 < c.hidden && c.hidden <= c.chunks, "{name}: {c:?}");
                assert!(c.hidden_tokens > 0, "{name}: {c:?}");
                assert_eq!(c.by, CutBy::Summary, "{name}: {c:?}");
                let e = index(&c.episode);
                if let Some(&(before, _)) = cuts.get(&e) {
                    assert!(c.hidden > before, "{name}: a kept tail only moves on");
                }
                cuts.insert(e, (c.hidden, c.chunks));
            }
            // A summary call shows the call it was, not the conversation's episodes.
            if f.synthetic_call {
                continue;
            }
            let ctx = render_at(&Input::from(&s), &p, budget, f.request).expect("renders");
            for (&e, &(hidden, chunks)) in &cuts {
                if r.applied.get(f.request, e) != Cell::Tier(Tier::Full) {
                    continue;
                }
                let shown = ctx
                    .chunks
                    .iter()
                    .filter(|c| c.episode.as_deref() == Some(s.episodes[e].id.as_str()))
                    .count();
                assert_eq!(shown, chunks - hidden, "{name} r{}", f.request);
                checked += 1;
            }
        }
        assert!(
            checked > 0,
            "{name}: no request shows an episode from its tail"
        );
    }
}

/// At the recorded limits, the simulation reproduces OpenCode compaction by compaction: it
/// compacts where OpenCode did, keeps the tail OpenCode kept (sized, as OpenCode sizes it, by
/// characters ÷ 4 of the messages, a turn split at the message OpenCode split it at), keeps an
/// earlier summary its tail still holds, and sizes each request after within 2 % of what the
/// model received. Recorded: `opencode-1.18.33/exports/E2.json` (context 14,000, output 3,000;
/// tails from the middle of turns 3 and 5).
#[test]
fn simulated_compaction_at_the_recorded_limits_reproduces_the_recording() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/recordings/opencode-1.18.33/exports/E2.json");
    let s = load(&LoadOptions {
        path: Some(path),
        ..LoadOptions::default()
    })
    .expect("E2 loads");
    let recorded = opencode(&s, &[("trigger", "recorded")], None);
    let sim = opencode(&s, &[("trigger", "simulate")], None);
    let at = compacted_at(&sim);
    let shown_from: Vec<usize> = recorded
        .policy
        .compaction
        .as_ref()
        .expect("a compaction run")
        .compactions
        .clone();
    assert_eq!(at, shown_from, "compacts where OpenCode did");
    assert_eq!(at.len(), 2);
    for &t in &at {
        let cut = |r: &Replay| r.frames[t].tail_only.clone();
        assert_eq!(cut(&sim), cut(&recorded), "the kept tail at request {t}");
        assert!(!cut(&sim).is_empty(), "a split turn at request {t}");
    }
    for f in sim.frames.iter().filter(|f| !f.synthetic_call) {
        let rec = f.recorded.prompt as f64;
        let err = (f.tokens as f64 - rec).abs() / rec * 100.0;
        assert!(
            err < 2.0,
            "request {}: {} vs {rec} ({err:.2} %)",
            f.request,
            f.tokens
        );
    }
}

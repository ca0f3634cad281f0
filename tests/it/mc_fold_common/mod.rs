//! tierscope's side of the Magic Context fold conformance (docs/decay.md, "Fold conformance
//! harness"): a `context.db` of one session's compartments, replayed under `decay` at a history
//! budget with `ttl_s = 0` (every request after a response folds), read back as the Magic Context
//! tier (1 = full … 4 = anchor, 5 = archived) of each compartment at the last request's fold.
//! Shared by the `magic_context_fold` example (the harness) and the golden test.

use std::path::Path;

use tierscope_engine::episode::options::TierSource;
use tierscope_engine::episode::segment::Segmentation;
use tierscope_engine::formats::magic_context::{self as mc, estimate::Estimator, HeadingDates};
use tierscope_engine::policy::{self, Policy};
use tierscope_engine::replay::synth::{generate, SynthSpec};
use tierscope_engine::replay::{self, BoundaryKind, Cell, Input};
use tierscope_engine::session::EpisodeOptions;
use tierscope_engine::session::{from_trace, LoadedSession};
use tierscope_engine::trace::Trace;

/// The session id the compartments are written under (the synthetic trace's, seed 3).
pub const SESSION: &str = "ses_synth_3";

/// A session of one two-message turn per compartment, `tail` more turns that no compartment
/// covers yet (the historian has not reached them: raw messages in Magic Context's live tail),
/// and an open last turn.
pub fn trace(compartments: usize, tail: usize) -> Trace {
    let n = compartments + tail + 1;
    let t = generate(&SynthSpec {
        requests: n,
        episodes: n,
        seed: 3,
        chunk_tokens: (20, 40),
        long_gap_every: 0,
        probes: false,
        recorded_system: 0,
    })
    .trace;
    debug_assert_eq!(t.session.id, SESSION);
    t
}

/// The (first, last) message ids of turn `i`, which compartment `i` covers.
pub fn turn_ids(t: &Trace, i: usize) -> Option<(String, String)> {
    Some((
        t.messages.get(2 * i)?.id.clone(),
        t.messages.get(2 * i + 1)?.id.clone(),
    ))
}

/// `decay` at history budget `hb` exactly (context limit 2·hb × 0.5 × 1.0), `ttl_s = 0`, the
/// backstop out of the way.
pub fn decay_at(hb: u64) -> Result<Policy, String> {
    let sets: Vec<(String, String)> = [
        ("context_limit", (2 * hb).to_string()),
        ("execute_threshold", "0.5".into()),
        ("history_budget_percentage", "1".into()),
        ("ttl_s", "0".into()),
        ("backstop_m1_m0", "10".into()),
        ("backstop_m1_budget", "10".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    policy::load("decay", &sets).map_err(|e| e.to_string())
}

/// The session read from `db`, with `tail` uncovered turns after its compartments (headings
/// without dates: the harness has no OpenCode database for Magic Context to date them from).
pub fn load(db: &Path, tail: usize) -> Result<(LoadedSession, usize), String> {
    let read = mc::read_session(db, SESSION).map_err(|e| e.to_string())?;
    let n = read.rows.len();
    let l = from_trace(
        trace(n, tail),
        &EpisodeOptions {
            segmentation: Segmentation::MagicContext,
            tiers: TierSource::External,
            compartments: read.rows,
            magic_context_meta: read.meta,
            magic_context_db: Some(db.to_owned()),
            magic_context_dates: HeadingDates::Off,
            ..EpisodeOptions::default()
        },
    );
    Ok((l, n))
}

/// Every fold of the replay at history budget `hb` with the compartments closed by then: (request,
/// the tier of each of the first compartments); the first render, with none, is left out.
#[allow(dead_code)] // the golden test reads the last fold only
pub fn every_fold(l: &LoadedSession, n: usize, hb: u64) -> Result<Vec<(usize, Vec<u8>)>, String> {
    let r = replay::replay(&Input::from(l), &decay_at(hb)?, None);
    let mut out = Vec::new();
    for (j, f) in r.frames.iter().enumerate() {
        if !f.boundaries.contains(&BoundaryKind::Fold) {
            continue;
        }
        let tiers: Vec<u8> = (0..n)
            .map_while(|e| match r.applied.get(j, e) {
                Cell::Tier(t) => Some(t.depth() as u8 + 1),
                Cell::Active | Cell::Future => None,
            })
            .collect();
        if !tiers.is_empty() {
            out.push((f.request, tiers));
        }
    }
    Ok(out)
}

/// The tier of each of the `n` compartments at the last request's fold, at history budget `hb`.
pub fn fold_tiers(l: &LoadedSession, n: usize, hb: u64) -> Result<Vec<u8>, String> {
    let r = replay::replay(&Input::from(l), &decay_at(hb)?, None);
    let last = r
        .frames
        .len()
        .checked_sub(1)
        .ok_or("the replay has no request")?;
    if !r.frames[last].boundaries.contains(&BoundaryKind::Fold) {
        return Err(format!("no fold at the last request ({:?})", r.policy.note));
    }
    (0..n)
        .map(|e| match r.applied.get(last, e) {
            Cell::Tier(t) => Ok(t.depth() as u8 + 1),
            other => Err(format!("episode {e} is {other:?} at the last request")),
        })
        .collect()
}

/// Which estimator the fold counts with: `claude` or `chars` (Magic Context's fallback).
pub fn estimator() -> &'static str {
    match Estimator::magic_context().0 {
        Estimator::Claude(_) => "claude",
        Estimator::Chars => "chars",
    }
}

//! The worker side of diff mode: replay both sides and compare, or diff the rendered contexts
//! at one request. Runs on the worker thread (or inline in tests); the results are prepared
//! models, so the UI thread never replays or diffs anything.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::view_model::{safe_context, DiffModel};
use super::{DiffJob, DiffMsg};
use tierscope_engine::compare;
use tierscope_engine::replay::{self, Input};
use tierscope_engine::session::LoadedSession;

/// How long the line and word diff may search for a minimal diff before settling for a coarser
/// one: the rendered contexts of a long session run to thousands of lines.
pub const TEXT_DIFF_BUDGET: Duration = Duration::from_millis(250);

/// Runs one diff job against the current session.
pub fn run(session: Option<&Arc<LoadedSession>>, job: DiffJob) -> DiffMsg {
    let Some(s) = session else {
        return job.failed("no session loaded".to_owned());
    };
    let input = Input::from(s.as_ref());
    // Each side at its own budget (B is the baseline at the budget it had, or at A's).
    match job {
        DiffJob::Replay { gen, a, b, budgets } => DiffMsg::Replayed {
            gen,
            result: {
                let ra = replay::replay(&input, &a, budgets[0]);
                let rb = replay::replay(&input, &b, budgets[1]);
                compare::compare(input.episodes, &ra, &rb)
                    .map(|c| Arc::new(DiffModel::build(&a, &b, &ra, &rb, c)))
                    .map_err(|e| e.to_string())
            },
        },
        DiffJob::Context {
            gen,
            at,
            a,
            b,
            budgets,
        } => DiffMsg::Context {
            gen,
            at,
            result: replay::render_at(&input, &a, budgets[0], at)
                .and_then(|ca| {
                    let cb = replay::render_at(&input, &b, budgets[1], at)?;
                    Ok(compare::context::diff_contexts(
                        &ca,
                        &cb,
                        Some(Instant::now() + TEXT_DIFF_BUDGET),
                    ))
                })
                .map(|d| Arc::new(safe_context(d)))
                .map_err(|e| e.to_string()),
        },
    }
}

//! The worker side of diff mode: replay both sides and compare, or diff the rendered contexts
//! at one request. Runs on the worker thread (or inline in tests); the results are prepared
//! models, so the UI thread never replays or diffs anything.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::view_model::{safe_context, DiffModel};
use super::{DiffJob, DiffMsg};
use crate::tui::app::Msg;
use tierscope_engine::compare;
use tierscope_engine::loaded::LoadedSession;
use tierscope_engine::replay::Input;

/// How long the line and word diff may search for a minimal diff before settling for a coarser
/// one: the rendered contexts of a long session run to thousands of lines.
pub const TEXT_DIFF_BUDGET: Duration = Duration::from_millis(250);

/// Runs one diff job against the current session.
pub fn run(session: Option<&Arc<LoadedSession>>, job: DiffJob) -> Msg {
    let Some(s) = session else {
        return Msg::Diff(job.failed("no session loaded".to_owned()));
    };
    let input = Input::from(s.as_ref());
    Msg::Diff(match job {
        DiffJob::Replay { gen, a, b, budget } => DiffMsg::Replayed {
            gen,
            result: compare::compare_policies(&input, &a, &b, budget)
                .map(|(ra, rb, c)| Arc::new(DiffModel::build(&a, &b, &ra, &rb, c)))
                .map_err(|e| e.to_string()),
        },
        DiffJob::Context {
            gen,
            at,
            a,
            b,
            budget,
        } => DiffMsg::Context {
            gen,
            at,
            result: compare::context_diff(
                &input,
                &a,
                &b,
                budget,
                at,
                Some(Instant::now() + TEXT_DIFF_BUDGET),
            )
            .map(|d| Arc::new(safe_context(d)))
            .map_err(|e| e.to_string()),
        },
    })
}

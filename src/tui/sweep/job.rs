//! The worker side of the sweep pane: the grid is replayed one row at a time (each row's points
//! in parallel, by [`tierscope_engine::sweep::run_with`]), progress is reported per finished point, and a
//! cancel takes effect between rows; the rows are then joined and the Pareto front marked over the whole
//! grid, exactly as one `sweep::run` over both axes would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::grid::SweepGrid;
use super::{SweepJob, SweepMsg};
use crate::tui::app::Msg;
use tierscope_engine::session::LoadedSession;
use tierscope_engine::sweep::{self, Axis, SweepResult};

/// How often a running row's progress is looked at.
const POLL: Duration = Duration::from_millis(100);

/// Runs one sweep job against the current session; `progress` receives a message per row.
pub fn run(
    session: Option<&Arc<LoadedSession>>,
    job: SweepJob,
    progress: &dyn Fn(Msg),
) -> SweepMsg {
    let Some(s) = session else {
        return job.failed("no session loaded".to_owned());
    };
    let gen = job.gen;
    let result = sweep_rows(s, &job, &|done, total| {
        progress(SweepMsg::Progress { gen, done, total }.into())
    });
    let x_cur = current(&job.policy, &job.x.key);
    let y_cur = current(&job.policy, &job.y.key);
    SweepMsg::Done {
        gen,
        result: result.map(|r| Arc::new(SweepGrid::build(r, x_cur, y_cur))),
    }
}

fn current(p: &tierscope_engine::policy::Policy, key: &str) -> f64 {
    match p.knobs.get(key) {
        Some(tierscope_engine::policy::KnobValue::Num(v)) => *v,
        _ => f64::NAN,
    }
}

/// The grid of `job` (axes `[y, x]`), row by row; `Err` when cancelled or invalid.
pub fn sweep_rows(
    s: &LoadedSession,
    job: &SweepJob,
    progress: &dyn Fn(usize, usize),
) -> Result<SweepResult, String> {
    let axes = [job.y.clone(), job.x.clone()];
    sweep::validate(&job.policy, &axes).map_err(|e| e.to_string())?;
    let total = job.y.len() * job.x.len();
    let mut out: Option<SweepResult> = None;
    let done = AtomicUsize::new(0);
    for (i, y) in job.y.values().into_iter().enumerate() {
        if job.cancel.is_cancelled() {
            return Err("cancelled".to_owned());
        }
        let row_axis = Axis {
            key: job.y.key.clone(),
            from: y,
            to: y,
            step: job.y.step,
        };
        let axes = [row_axis, job.x.clone()];
        // The row replays on a helper thread (its points in parallel) while this thread
        // reports every finished point: `progress` may only be called from here.
        let row = std::thread::scope(|sc| {
            let h = sc.spawn(|| {
                sweep::run_with(s, &job.policy, &axes, job.budget, &|| {
                    done.fetch_add(1, Ordering::Relaxed);
                })
            });
            let mut last = usize::MAX;
            while !h.is_finished() {
                let d = done.load(Ordering::Relaxed);
                if d != last {
                    progress(d, total);
                    last = d;
                }
                std::thread::sleep(POLL);
            }
            h.join()
        })
        .map_err(|_| format!("a replay of row {} panicked", i + 1))?
        .map_err(|e| e.to_string())?;
        match out.as_mut() {
            None => out = Some(row),
            Some(o) => o.points.extend(row.points),
        }
        progress(done.load(Ordering::Relaxed), total);
    }
    let mut r = out.ok_or_else(|| "the grid is empty".to_owned())?;
    r.axes = axes.to_vec();
    sweep::mark_pareto(&mut r.points);
    Ok(r)
}

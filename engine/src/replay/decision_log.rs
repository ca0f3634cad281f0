//! The chapter's "selection decision" records (Context Lab implications): one JSON object per
//! applied tier change, with selected tier, reason, budget pressure, application time, first
//! divergence, mutation radius and policy version.

use serde::Serialize;

use super::output::{Frame, Replay};
use crate::episode::Tier;

/// One selection decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectionRecord {
    pub session: String,
    pub policy: String,
    pub policy_version: u32,
    pub request: usize,
    /// Request start (ms since the epoch), as recorded.
    pub time: i64,
    pub episode: String,
    pub from: Tier,
    pub selected: Tier,
    pub reason: String,
    /// `immediate`, `boundary:<kind>` or `emergency`.
    pub applied: super::output::Applied,
    pub pressure: f64,
    /// Tokens of the common prefix with the previous request (the first divergence).
    pub first_divergence: u64,
    /// Tokens processed again.
    pub radius: u64,
}

/// Every applied change of a replay as a selection record, in request order.
pub fn selection_records(r: &Replay) -> Vec<SelectionRecord> {
    r.frames
        .iter()
        .flat_map(|f| frame_records(&r.trace.session, &r.policy.name, r.policy.version, f))
        .collect()
}

/// The selection records of one frame's changes (a streamed replay writes them frame by frame).
pub fn frame_records<'f>(
    session: &'f str,
    policy: &'f str,
    policy_version: u32,
    f: &'f Frame,
) -> impl Iterator<Item = SelectionRecord> + 'f {
    f.changes.iter().map(move |c| SelectionRecord {
        session: session.to_owned(),
        policy: policy.to_owned(),
        policy_version,
        request: f.request,
        time: f.time,
        episode: c.episode.clone(),
        from: c.from,
        selected: c.to,
        reason: c.reason.as_str().to_owned(),
        applied: c.applied,
        pressure: f.pressure,
        first_divergence: f.divergence,
        radius: f.radius,
    })
}

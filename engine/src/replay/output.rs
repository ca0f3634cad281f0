//! What a replay produces (MODEL §3.5–3.6). Serialized as the `replay --format json` output:
//! `{trace, policy, frames, summary}`; the tier matrix and render states are for the TUI and
//! `render`, not serialized.

use std::collections::BTreeMap;

use serde::Serialize;

use super::cache_cost::PricingInfo;
pub use super::schedule::{Applied, BoundaryKind};
use crate::episode::Tier;
use crate::policy::{KnobValue, PolicyKind};

/// Why a tier changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    Pressure,
    Age,
    Relevance,
    Compaction,
    Truncation,
    Decay,
    Oracle,
}

impl Reason {
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::Pressure => "pressure",
            Reason::Age => "age",
            Reason::Relevance => "relevance",
            Reason::Compaction => "compaction",
            Reason::Truncation => "truncation",
            Reason::Decay => "decay",
            Reason::Oracle => "oracle",
        }
    }
}

/// One applied tier change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Episode id (`E3`).
    pub episode: String,
    pub from: Tier,
    pub to: Tier,
    pub reason: Reason,
    /// `immediate`, `boundary:<kind>` or `emergency`.
    pub applied: Applied,
    /// This change reverses the episode's previous change within `thrash_window` requests: one
    /// of the frame's `thrash` (the same fact, so a mark on a change and the counter agree).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub thrash: bool,
}

/// Count and tokens of the episodes shown at one tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TierStat {
    pub count: u64,
    pub tokens: u64,
}

/// Episodes per tier at one request (the active episode counts as `full`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TierStats {
    pub full: TierStat,
    pub dense: TierStat,
    pub compact: TierStat,
    pub anchor: TierStat,
    pub dropped: TierStat,
}

impl TierStats {
    pub fn get_mut(&mut self, t: Tier) -> &mut TierStat {
        match t {
            Tier::Full => &mut self.full,
            Tier::Dense => &mut self.dense,
            Tier::Compact => &mut self.compact,
            Tier::Anchor => &mut self.anchor,
            Tier::Dropped => &mut self.dropped,
        }
    }
    pub fn get(&self, t: Tier) -> TierStat {
        match t {
            Tier::Full => self.full,
            Tier::Dense => self.dense,
            Tier::Compact => self.compact,
            Tier::Anchor => self.anchor,
            Tier::Dropped => self.dropped,
        }
    }
}

/// What a violation broke (MODEL §2 laws 1 and 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ViolationKind {
    /// A closed episode shown below its floor.
    Floor,
    /// Pinned spans missing from the context.
    Pin,
}

impl ViolationKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ViolationKind::Floor => "floor",
            ViolationKind::Pin => "pin",
        }
    }
}

impl std::fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A floor or pin violation at one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub episode: String,
    pub kind: ViolationKind,
    /// The tier shown.
    pub tier: Tier,
    /// The floor, for a floor violation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<Tier>,
    /// How many pinned spans are missing, for a pin violation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_pins: Option<u64>,
}

/// Why an episode shows only a tail of its full tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CutBy {
    /// Its head is in a compaction summary: the kept tail starts inside the episode (a recorded
    /// compaction's `tail_start_id`, or `opencode`'s simulated one).
    Summary,
    /// Its head lies before the message the request's view starts at (OpenCode's v2 loop never
    /// saw the session's v1 history).
    View,
}

impl CutBy {
    /// Where the hidden head went, in words.
    pub fn says(self) -> &'static str {
        match self {
            CutBy::Summary => "in the compaction summary",
            CutBy::View => "before the v2 loop's view",
        }
    }

    /// A cut in words: `first 2/11 chunks (610 tok) in the compaction summary`, or, with every
    /// chunk hidden, `all 6 chunks (1130 tok) before the v2 loop's view, none shown`.
    pub fn describe(self, hidden: usize, chunks: usize, hidden_tokens: u64) -> String {
        if hidden >= chunks {
            format!(
                "all {chunks} chunks ({hidden_tokens} tok) {}, none shown",
                self.says()
            )
        } else {
            format!(
                "first {hidden}/{chunks} chunks ({hidden_tokens} tok) {}",
                self.says()
            )
        }
    }
}

/// An episode shown at `full` from chunk `from` on: its first `from` of `chunks` full-tier
/// chunks (`hidden_tokens` tokens as drafted, before any prune) are not in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub episode: usize,
    pub from: usize,
    pub chunks: usize,
    pub hidden_tokens: u64,
    pub by: CutBy,
}

/// A frame's record of a [`Cut`] that began or moved at its request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TailOnly {
    pub episode: String,
    /// Full-tier chunks not shown, from the first; of `chunks`.
    pub hidden: usize,
    pub chunks: usize,
    pub hidden_tokens: u64,
    pub by: CutBy,
}

/// A probe that became due at a request (with its answer there), or a due probe whose answer
/// changed there: `ok` = the rendered context now answers it, else it is now lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeChange {
    pub id: String,
    pub ok: bool,
}

/// Recorded usage of the request (MODEL §3.5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Recorded {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// input + cache read + cache write (input alone where the OpenCode version counted cache
    /// inside input).
    pub prompt: u64,
}

/// Everything measured at one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    pub request: usize,
    /// Request start, ms since the epoch (as recorded).
    pub time: i64,
    pub status: String,
    pub synthetic_call: bool,
    /// Boundary kinds that hold at this request (`request` always).
    pub boundaries: Vec<BoundaryKind>,
    pub tokens: u64,
    pub budget: u64,
    pub pressure: f64,
    pub overflow: u64,
    pub tiers: TierStats,
    pub divergence: u64,
    pub radius: u64,
    /// What the radius cost above reading it from the cache ([`super::cache_cost::radius_price`]);
    /// summed into the summary's divergence cost, not written per frame.
    #[serde(skip)]
    pub radius_cost: f64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub uncached: u64,
    pub cost: f64,
    pub changes: Vec<Change>,
    /// Changes desired but not applied, waiting for the next boundary (counted at every request
    /// they wait).
    pub deferred: u64,
    /// Changes desired but not applied because their episode changed less than `min_dwell`
    /// requests ago (counted at every request they wait).
    pub dwell_blocks: u64,
    /// Changes applied off schedule (between boundaries or inside `min_dwell`) because the
    /// context would otherwise overflow the budget.
    pub emergencies: u64,
    /// Closed episodes that pressure wanted lower, shown at their floor (the lowest tier the
    /// policy may show them at).
    pub holds: u64,
    /// The held episodes whose hold began at this request (a hold that continues from the
    /// previous request is counted in `holds` but not listed again).
    pub held: Vec<String>,
    /// `held` by episode index (not in the JSON output).
    #[serde(skip)]
    pub hold_starts: Vec<usize>,
    /// The episodes whose hold ended at this request: held at the previous request, not at
    /// this one, by index (not in the JSON output). With `hold_starts` they give every hold
    /// as a run of requests, without listing the held episodes at every request.
    #[serde(skip)]
    pub hold_ends: Vec<usize>,
    /// Closed episodes shown below their floor (every one in force at this request).
    pub floor_violations: u64,
    /// Pinned spans missing from the context (every one in force at this request).
    pub pin_violations: u64,
    /// The violations that began or changed at this request (those that continue are counted
    /// above but not listed again).
    pub violations: Vec<Violation>,
    /// Changes that reverse the same episode's previous change within `thrash_window` requests.
    pub thrash: u64,
    pub prunes: u64,
    /// Episodes shown only from a chunk on (the head in a summary, or before the view), whose
    /// cut began or moved at this request; a cut in force stays until the episode is dropped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tail_only: Vec<TailOnly>,
    /// The policy compacted here (a simulated summary call).
    pub compaction: bool,
    /// The compaction call the policy made before this request (a synthetic call: its input
    /// sized as the release would have built it, its output the new summary), priced; its cost
    /// is included in this frame's `cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction_call: Option<CompactionCallCost>,
    /// Probes due at this request (`due_from_request` ≤ request), and those of them answered.
    pub probes_due: u64,
    pub probes_ok: u64,
    /// The probes that became due here and the due probes whose answer changed here, by
    /// position in the sidecar: every probe's answer at every request follows from them (a
    /// probe keeps its answer until it is listed again).
    pub probe_changes: Vec<ProbeChange>,
    pub recorded: Recorded,
}

/// A simulated compaction call, billed like a recorded one: its request (the compaction agent's
/// system chunk, the release's prompt and the history it sends), its output (the summary), the
/// cache and the dollars.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionCallCost {
    /// Input tokens of the call.
    pub tokens: u64,
    /// Of which the history (what the compaction agent is asked to summarise).
    pub history: u64,
    /// Output tokens: the summary it writes.
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub uncached: u64,
    pub cost: f64,
    /// Where the summary's text comes from: `recorded:<compaction>` (the trace's summary of
    /// that compaction), `compact-tiers` (the covered episodes' compact tiers) or
    /// `written:<call>` (a model wrote it; the call's id).
    pub summary_text: String,
}

/// How `opencode` compacted in one replay, and why (MODEL §4; issue 19).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactionRun {
    /// `recorded` (where the agent compacted) or `simulate` (at the usable limit).
    pub trigger: String,
    /// Why this trigger ran (the `trigger` knob and whether a budget was given).
    pub why: String,
    /// Simulate: the usable limit it compacts at, and where that came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable_limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_source: Option<String>,
    /// Simulate: the kept-tail rule applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<String>,
    /// Requests from which a new summary is shown (simulate: the policy's compactions).
    pub compactions: Vec<usize>,
    /// Simulate: per compaction, where its summary text came from (`recorded:<n>`,
    /// `compact-tiers` or `written:<call>`).
    pub summary_text: Vec<String>,
    /// Simulate: recorded summary calls not made (the simulation compacts on its own; they
    /// render as empty frames).
    pub recorded_calls_skipped: u64,
    /// With model-written summaries: the first simulated compaction whose request the book
    /// does not answer (its summary, and every later one, are stand-ins in this pass). Not in
    /// the JSON: what the caller asks the model next ([`super::written`]).
    #[serde(skip)]
    pub pending_summary: Option<super::written::SummaryRequest>,
}

impl CompactionRun {
    /// A few words for a header: `simulate@9000: 8 compactions from req 12` or `recorded: 3
    /// compactions from req 13` or `simulate@9000: no compaction`.
    pub fn short(&self) -> String {
        let head = match self.usable_limit {
            Some(l) => format!("{}@{l}", self.trigger),
            None => self.trigger.clone(),
        };
        match self.compactions.first() {
            None => format!("{head}: no compaction"),
            Some(first) => format!(
                "{head}: {} compaction{} from req {first}",
                self.compactions.len(),
                if self.compactions.len() == 1 { "" } else { "s" }
            ),
        }
    }
    /// One line for headers and notes.
    pub fn describe(&self) -> String {
        let mut s = format!("trigger {} ({})", self.trigger, self.why);
        if let (Some(l), Some(src)) = (self.usable_limit, &self.limit_source) {
            s.push_str(&format!("; usable limit {l} ({src})"));
        }
        if let Some(t) = &self.tail {
            s.push_str(&format!("; tail: {t}"));
        }
        if self.compactions.is_empty() {
            s.push_str("; no compaction");
        } else {
            let at: Vec<String> = self.compactions.iter().map(|r| r.to_string()).collect();
            s.push_str(&format!(
                "; {} compaction{} (summary shown from request {})",
                at.len(),
                if at.len() == 1 { "" } else { "s" },
                at.join(", ")
            ));
        }
        if !self.summary_text.is_empty() {
            // A written summary is named by its call: one word for them all here.
            let mut kinds: Vec<&str> = self
                .summary_text
                .iter()
                .map(|t| {
                    if t.starts_with("written:") {
                        "written"
                    } else {
                        t.as_str()
                    }
                })
                .collect();
            kinds.dedup();
            s.push_str(&format!("; summary text: {}", kinds.join(", ")));
            if kinds.contains(&"compact-tiers") {
                // Our own tiers stand in for a summary no model wrote: it keeps what they keep,
                // so the cliff (a summary that drops the reason) cannot show through it.
                s.push_str(
                    " (compact-tiers: our compact tiers stand in for a written summary, an upper bound on what one keeps)",
                );
            }
            if kinds.contains(&"written") {
                s.push_str(" (written: by a model, asked with the agent's compaction prompt)");
            }
        }
        if self.recorded_calls_skipped > 0 {
            s.push_str(&format!(
                "; {} recorded summary call{} not made",
                self.recorded_calls_skipped,
                if self.recorded_calls_skipped == 1 {
                    ""
                } else {
                    "s"
                }
            ));
        }
        s
    }
}

/// A system chunk estimate (MODEL §3 "The system chunk").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemSegment {
    pub agent: String,
    pub model: String,
    pub tokens: u64,
    /// `estimated` (recorded prompt − rendered conversation), `knob` (`system_tokens`) or
    /// `none` (no request of the pair has recorded usage).
    pub source: String,
    /// The request the estimate came from.
    pub from_request: Option<usize>,
}

/// The trace part of the output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceInfo {
    pub session: String,
    pub title: String,
    pub requests: usize,
    pub episodes: usize,
    pub system_segments: Vec<SystemSegment>,
    pub pricing: PricingInfo,
    /// How the counts compare with the recorded usage where the model's provider tokenizes
    /// otherwise (see [`crate::session::calibration`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::session::calibration::Calibration>,
}

/// The policy part of the output: resolved knobs and where the budget came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyInfo {
    pub name: String,
    pub kind: PolicyKind,
    pub version: u32,
    pub respect_floors: bool,
    pub knobs: BTreeMap<String, KnobValue>,
    pub budget: u64,
    /// `--budget`, `session-limits:<id>`, `model-limits:<provider/model>` or `fallback`.
    pub budget_source: String,
    /// What the policy reports about how it ran (e.g. `decay`'s token counter, `opencode`'s
    /// trigger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `opencode`: which trigger ran and why, where it compacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionRun>,
}

/// Σ radius over `full`'s Σ radius on the same trace: in tokens, and in what those tokens cost
/// above reading them from the cache (not the difference of the two replays' whole costs, which
/// the smaller contexts of a policy that forgets move the other way).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DivergenceCost {
    pub tokens: i64,
    pub dollars: f64,
}

/// Replayed tokens against the recorded prompt, over requests with recorded usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RecordedError {
    pub requests: u64,
    /// Mean of |replayed − recorded| ÷ recorded, in percent.
    pub mean_abs_pct: f64,
    pub max_abs_pct: f64,
    /// Σ replayed − Σ recorded, in tokens.
    pub total_delta: i64,
    /// The policy sent what the agent sent (no tier changed but by the recording's own
    /// compactions, each recorded compaction followed, no compaction simulated, no recorded call
    /// left out): the figures measure the
    /// replay's accuracy. Otherwise they measure how far the policy's counterfactual context is
    /// from what was sent, which is no error.
    pub follows_recording: bool,
}

/// The session summary (MODEL §3.6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub requests: u64,
    pub mean_tokens: f64,
    pub max_overflow: u64,
    /// Requests whose context exceeds the budget.
    pub overflow_requests: u64,
    /// Σ tokens above the budget over all requests.
    pub overflow_tokens: u64,
    pub cost: f64,
    pub cache_hit_ratio: f64,
    pub divergence_cost: DivergenceCost,
    /// Σ applied changes.
    pub changes: u64,
    pub switches_per_100: f64,
    /// Σ frames' `thrash`, `holds`, `deferred`, `dwell_blocks` and `emergencies`: every total
    /// is the sum of what the frames show.
    pub thrash: u64,
    pub holds: u64,
    pub deferred: u64,
    pub dwell_blocks: u64,
    pub emergencies: u64,
    pub floor_violations: u64,
    pub pin_violations: u64,
    pub prunes: u64,
    /// Summary calls: recorded ones plus the policy's own compactions.
    pub synthetic_calls: u64,
    /// Share of (probe, request ≥ due) pairs whose needle is present; `None` without probes.
    pub probe_survival: Option<f64>,
    /// Σ over requests and closed episodes of tokens shown above the oracle's tier.
    pub excess_fidelity_tokens: Option<u64>,
    /// (episode, request) pairs shown below the oracle's tier.
    pub under_fidelity_misses: Option<u64>,
    /// Replayed tokens against the recorded prompt (non-synthetic requests with usage).
    pub recorded_error: RecordedError,
}

/// One cell of the applied-tier matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cell {
    /// A closed episode at this tier.
    Tier(Tier),
    /// The episode holding the request.
    Active,
    /// Not yet written.
    Future,
}

/// Applied tiers per request and episode, kept as runs per episode: an episode's cell changes
/// a few times over a session (future, active, a handful of tier changes), so the matrix holds
/// what changed, not requests × episodes cells (at 100k requests and 20k episodes that would be
/// 2 GB a matrix).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TierMatrix {
    pub requests: usize,
    pub episodes: usize,
    /// Per episode: (first request, raw cell) of each run, in request order; before the first
    /// run the episode is in the future.
    runs: Vec<Vec<(u32, u8)>>,
}

const ACTIVE: u8 = 5;
const FUTURE: u8 = 6;

impl TierMatrix {
    pub(crate) fn with_capacity(episodes: usize, _requests: usize) -> TierMatrix {
        TierMatrix {
            requests: 0,
            episodes,
            runs: vec![Vec::new(); episodes],
        }
    }
    /// Append one request's row: `row` holds every episode's raw byte (0..=4 tiers, 5 active,
    /// 6 future), `touched` the episodes whose byte may have changed since the last row (the
    /// others are read as unchanged).
    pub(crate) fn push_touched(&mut self, row: &[u8], touched: &[usize]) {
        let t = u32::try_from(self.requests).unwrap_or(u32::MAX);
        for &e in touched {
            let (Some(runs), Some(&v)) = (self.runs.get_mut(e), row.get(e)) else {
                continue;
            };
            let last = runs.last().map_or(FUTURE, |r| r.1);
            if last == v {
                continue;
            }
            match runs.last_mut() {
                // Changed twice within this request: the last value stands.
                Some(r) if r.0 == t => r.1 = v,
                _ => runs.push((t, v)),
            }
        }
        self.requests += 1;
    }
    /// Raw byte of a closed tier.
    pub(crate) fn code(t: Tier) -> u8 {
        t.depth() as u8
    }
    pub(crate) const ACTIVE_CODE: u8 = ACTIVE;
    pub(crate) const FUTURE_CODE: u8 = FUTURE;
    fn cell(v: u8) -> Cell {
        match v {
            ACTIVE => Cell::Active,
            FUTURE => Cell::Future,
            d => Tier::from_depth(usize::from(d)).map_or(Cell::Future, Cell::Tier),
        }
    }
    /// The cell at (request, episode); `Future` outside the matrix.
    pub fn get(&self, request: usize, episode: usize) -> Cell {
        if request >= self.requests {
            return Cell::Future;
        }
        let Some(runs) = self.runs.get(episode) else {
            return Cell::Future;
        };
        let t = u32::try_from(request).unwrap_or(u32::MAX);
        match runs.partition_point(|r| r.0 <= t) {
            0 => Cell::Future,
            i => Self::cell(runs[i - 1].1),
        }
    }
    /// An episode's cells as spans `(first request, last request, cell)`, in request order,
    /// the future before its first span left out: what a heatmap row draws, without a lookup
    /// per cell.
    pub fn spans(&self, episode: usize) -> impl Iterator<Item = (usize, usize, Cell)> + '_ {
        let runs = self.runs.get(episode).map_or(&[][..], Vec::as_slice);
        let end = self.requests;
        runs.iter().enumerate().filter_map(move |(i, &(from, v))| {
            let from = from as usize;
            let to = runs.get(i + 1).map_or(end, |r| r.0 as usize);
            (from < to && from < end).then(|| (from, to - 1, Self::cell(v)))
        })
    }
}

/// The pieces of one request's rendered context, so `render` can rebuild its text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RenderState {
    /// The summary piece shown after the system chunk, if any.
    pub summary: Option<SummaryPiece>,
    /// The episodes shown at `full` from a chunk on (a compaction's kept tail starts inside
    /// them, or the view starts after their head), by episode. Sparse.
    pub cuts: Vec<Cut>,
    /// A recorded summary call the policy does not make (it compacts on its own).
    pub call_not_made: bool,
    /// [`super::divergence::Conv::prev_resent_at`] of this request: where a later message's
    /// request stops sharing its prefix (its own answer was in flight here).
    pub resent_at: Option<u64>,
}

/// A compaction summary standing in for the episodes before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryPiece {
    /// The recorded compaction `index` of `Trace::compactions` (its compaction message and
    /// summary, as the agent sent them).
    Recorded { compaction: usize },
    /// The policy's own summary: the model-written summary `written` of the replay's
    /// [`super::written::SummaryBook`], else the recorded summary text of compaction
    /// `text_from` if any, else the compact tiers of episodes `shown` (`tokens` in all).
    Simulated {
        number: usize,
        /// The episodes it replaces.
        covers: Vec<usize>,
        /// Without a recorded text: the episodes whose compact tiers make up the summary (the
        /// newest of those summarised so far, within `summary_tokens`).
        shown: Vec<usize>,
        text_from: Option<usize>,
        /// Recorded summaries standing for earlier simulated ones that lie inside this one's
        /// kept tail (sent in place, after it), newest last.
        kept_earlier: Vec<usize>,
        /// The book's entry written for it, with model-written summaries.
        written: Option<usize>,
        /// Written summaries of earlier simulated compactions inside its kept tail, as
        /// `kept_earlier` for recorded ones.
        kept_written: Vec<usize>,
        tokens: u64,
    },
}

/// A replay: frames, summary, and the tier matrix for views.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replay {
    pub trace: TraceInfo,
    pub policy: PolicyInfo,
    pub frames: Vec<Frame>,
    pub summary: Summary,
    /// Applied tiers per request × episode.
    #[serde(skip)]
    pub applied: TierMatrix,
    /// Desired tiers per request × episode (differs from `applied` where a change is deferred).
    #[serde(skip)]
    pub desired: TierMatrix,
    /// Per request: what besides tiers `render` needs.
    #[serde(skip)]
    pub render_states: Vec<RenderState>,
}

/// The mark of an episode shown only from a chunk on (the head gone, the tail kept).
pub const TAIL_MARK: &str = "▐";

/// A tier in words, `full▐` when only the tail of `full` is shown.
pub fn tier_shown(tier: Tier, tail_only: bool) -> String {
    if tail_only {
        format!("{tier}{TAIL_MARK}")
    } else {
        tier.to_string()
    }
}

impl Replay {
    /// The cut of episode `e` at `request` when it is shown at `full` from a chunk on there
    /// (closed at `full`, or active); `None` otherwise, or without kept views.
    pub fn tail_only_at(&self, request: usize, e: usize) -> Option<&Cut> {
        let cuts = &self.render_states.get(request)?.cuts;
        let cut = &cuts[cuts.binary_search_by_key(&e, |c| c.episode).ok()?];
        self.shows_tail(request, cut).then_some(cut)
    }

    /// The cuts of `request` whose episode is shown from a chunk on there.
    pub fn tail_only_cuts(&self, request: usize) -> impl Iterator<Item = &Cut> {
        self.render_states
            .get(request)
            .map_or(&[][..], |s| &s.cuts[..])
            .iter()
            .filter(move |c| self.shows_tail(request, c))
    }

    fn shows_tail(&self, request: usize, c: &Cut) -> bool {
        c.from > 0
            && matches!(
                self.applied.get(request, c.episode),
                Cell::Tier(Tier::Full) | Cell::Active
            )
    }
}

#[cfg(test)]
mod tier_matrix_tests {
    use super::*;

    /// The runs read back as the dense rows they stand for, cell by cell and span by span.
    #[test]
    fn runs_read_back_as_the_rows_pushed() {
        let (f, a) = (TierMatrix::FUTURE_CODE, TierMatrix::ACTIVE_CODE);
        let rows: [[u8; 3]; 5] = [[a, f, f], [a, f, f], [0, a, f], [2, a, f], [2, 0, a]];
        let mut m = TierMatrix::with_capacity(3, rows.len());
        let mut prev = [f; 3];
        for row in &rows {
            let touched: Vec<usize> = (0..3).filter(|&e| row[e] != prev[e]).collect();
            m.push_touched(row, &touched);
            prev = *row;
        }
        for (t, row) in rows.iter().enumerate() {
            for (e, &v) in row.iter().enumerate() {
                assert_eq!(m.get(t, e), TierMatrix::cell(v), "r{t} E{e}");
            }
        }
        assert_eq!(m.get(9, 0), Cell::Future);
        let spans: Vec<_> = m.spans(0).collect();
        assert_eq!(
            spans,
            [
                (0, 1, Cell::Active),
                (2, 2, Cell::Tier(Tier::Full)),
                (3, 4, Cell::Tier(Tier::Compact)),
            ]
        );
        assert_eq!(m.spans(2).collect::<Vec<_>>(), [(4, 4, Cell::Active)]);
    }
}

//! The view-models: what the views read, plain data prepared once off the UI thread (at load and
//! after each replay, by [`crate::tui::presenter`]) so that `draw` only indexes and slices. All
//! trace text in here has already gone through [`crate::tui::safe_text`] and is inert.

use tierscope_engine::episode::model::Tier;

/// One session, prepared for display.
#[derive(Debug, Clone, Default)]
pub struct SessionModel {
    pub id: String,
    pub title: String,
    pub directory: String,
    pub model: String,
    pub parent_id: Option<String>,
    pub requests: Vec<RequestRow>,
    pub episodes: Vec<EpisodeRow>,
    /// Requests where a human turn starts (sorted).
    pub user_turns: Vec<usize>,
    /// Requests of recorded compactions (summary calls; sorted).
    pub compactions: Vec<usize>,
    /// Loader diagnostics worth a line in the status bar.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct RequestRow {
    pub time: i64,
    pub status: &'static str,
    pub synthetic: bool,
    pub recorded_prompt: u64,
    pub recorded_cost: f64,
    /// The episode holding this request.
    pub episode: Option<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct EpisodeRow {
    pub id: String,
    pub title: String,
    pub kinds: String,
    pub class: &'static str,
    pub floor: Tier,
    pub class_reasons: Vec<String>,
    pub floor_reasons: Vec<String>,
    /// (reason, text) of each pinned span.
    pub pins: Vec<(String, String)>,
    /// Generated tiers, most faithful first: tier, tokens, text lines.
    pub tiers: Vec<TierText>,
    pub tier_notes: Vec<String>,
    /// Sub-agent sessions spawned from this episode.
    pub children: Vec<ChildRef>,
    pub first_request: Option<usize>,
    pub last_request: Option<usize>,
    /// Lower-cased title + tier texts, for `/` search.
    pub haystack: String,
}

impl ReplayModel {
    /// The tier a waiting change of episode `ep` wants at request `req`, if one waits there.
    pub fn desired_at(&self, ep: usize, req: usize) -> Option<Tier> {
        let runs = self.desired.get(ep)?;
        let i = runs.partition_point(|r| r.1 < req);
        runs.get(i).filter(|r| r.0 <= req).map(|r| r.2)
    }
}

/// A sub-agent session an episode spawned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildRef {
    pub id: String,
    /// Its title (the id when the recording does not hold the session).
    pub title: String,
    /// Its requests; `None` when the recording does not hold the session.
    pub requests: Option<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct TierText {
    pub tier: Tier,
    pub tokens: u64,
    pub lines: Vec<String>,
}

impl EpisodeRow {
    pub fn tier_text(&self, tier: Tier) -> Option<&TierText> {
        self.tiers.iter().find(|t| t.tier == tier)
    }
}

pub use crate::tui::grid::{cell, Grid};

/// Requests `first..=last` over which an episode is shown only from a chunk on, with the same
/// cut throughout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailSpan {
    pub first: usize,
    pub last: usize,
    /// Full-tier chunks not shown, of `chunks`, and their tokens.
    pub hidden: usize,
    pub chunks: usize,
    pub hidden_tokens: u64,
    pub by: tierscope_engine::replay::CutBy,
}

/// One applied (or deferred) change, with its reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRow {
    pub request: usize,
    pub episode: usize,
    pub from: Tier,
    pub to: Tier,
    pub reason: String,
    pub applied: String,
    /// It reverses the episode's previous change within `thrash_window` (the engine's fact).
    pub thrash: bool,
}

/// Per-request figures of one replay.
#[derive(Debug, Clone, Default)]
pub struct FrameRow {
    pub tokens: u64,
    pub budget: u64,
    pub pressure: f64,
    pub divergence: u64,
    pub radius: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
    pub cum_cost: f64,
    pub recorded_cum_cost: f64,
    pub changes: usize,
    pub deferred: usize,
    pub holds: usize,
    pub thrash: usize,
    /// Changes applied off schedule because the context would overflow the budget.
    pub emergencies: usize,
    pub floor_violations: usize,
    pub pin_violations: usize,
    pub probes_ok: usize,
    pub probes_due: usize,
    pub status: String,
    /// The context diverged from the previous request's before its end (the cache broke).
    pub cache_break: bool,
}

/// One replay, prepared for display.
#[derive(Debug, Clone, Default)]
pub struct ReplayModel {
    pub policy: String,
    pub budget: u64,
    pub budget_source: String,
    pub frames: Vec<FrameRow>,
    pub grid: Grid,
    /// Per episode: runs of requests `(first, last, desired tier)` where a change to the
    /// desired tier waits (deferred or held by `min_dwell`), in request order.
    pub desired: Vec<Vec<(usize, usize, Tier)>>,
    /// Per episode: its changes in request order.
    pub history: Vec<Vec<ChangeRow>>,
    /// Per episode: runs of requests `(first, last)` where it was held at its floor, in order.
    pub holds_of: Vec<Vec<(usize, usize)>>,
    /// Per episode: where it was shown only from a chunk on, in request order.
    pub tail_only: Vec<Vec<TailSpan>>,
    /// Some episode was (the heatmap's legend says `▐`); found once, not at every draw.
    pub any_tail_only: bool,
    pub change_requests: Vec<usize>,
    pub hold_requests: Vec<usize>,
    pub thrash_requests: Vec<usize>,
    /// The pressure chart's top ([`crate::tui::presenter::chart_top`]): the budget band, or the
    /// replayed tokens when far below the budget.
    pub y_max: u64,
    /// The largest replayed or recorded prompt: above `y_max`, the chart says it is off scale.
    pub data_max: u64,
    pub cost_max: f64,
    /// The policy's `demote_at`, `promote_at` and `target` knobs, when it has them.
    pub demote_at: Option<f64>,
    pub promote_at: Option<f64>,
    pub target: Option<f64>,
    /// Summary line items.
    pub summary: Vec<(String, String)>,
    /// Totals of the run (the metrics strip).
    pub totals: crate::tui::totals::RunTotals,
    /// The highest pressure of any request.
    pub peak_pressure: f64,
    /// Set when the prices are an assumption: the model is not in the pricing table.
    pub pricing_note: Option<String>,
    /// The prices the costs use: `$1.25 in, $10 out per M tok`.
    pub prices: String,
    /// Set when no schedule can keep to the budget: the system chunk alone is over it, or
    /// every request is (the explorer warns in the chart and the status bar).
    pub budget_warning: Option<String>,
    /// The same in a few words (the chart's title, a narrow footer).
    pub budget_warning_short: Option<String>,
    pub notes: Vec<String>,
    /// `opencode`: which trigger ran and where it compacted, in a few words (the header).
    pub compaction: Option<String>,
}

impl ReplayModel {
    /// The tail-only span of episode `ep` that holds request `req`, if any.
    pub fn tail_at(&self, ep: usize, req: usize) -> Option<&TailSpan> {
        let spans = self.tail_only.get(ep)?;
        let k = spans.partition_point(|s| s.last < req);
        spans.get(k).filter(|s| s.first <= req)
    }
    /// Where the budget came from, in words for the header: `set`, `session limit`, `model
    /// limit`, or `assumed` when nothing in the recording or the limits table gave one.
    pub fn budget_origin(&self) -> &'static str {
        let src = self.budget_source.as_str();
        if src == "--budget" {
            "set"
        } else if src.starts_with("session-limits") {
            "session limit"
        } else if src.starts_with("model-limits") {
            "model limit"
        } else {
            "assumed"
        }
    }
}

/// The rendered context at one request, chunk by chunk.
#[derive(Debug, Clone, Default)]
pub struct ContextModel {
    pub request: usize,
    pub chunks: Vec<ChunkRow>,
    /// Index of the first chunk that differs from the previous request's context.
    pub divergence_chunk: Option<usize>,
    pub divergence_tokens: u64,
    pub total_tokens: u64,
    /// What the request is besides its chunks, where the engine says why (a recorded summary
    /// call, a previous answer rebuilt from storage that ends the cached prefix early).
    pub note: Option<String>,
    /// Every chunk's text, line by line, for the expanded view: (chunk index, line).
    pub lines: Vec<(usize, String)>,
    /// Index into `lines` of each chunk's first line.
    pub chunk_start: Vec<usize>,
    /// The rows of the one-line-per-chunk view and of the expanded view, in order.
    pub collapsed: Vec<ContextRow>,
    pub expanded: Vec<ContextRow>,
}

/// One row of the context pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextRow {
    /// Where this context stops matching the previous request's (the cache breaks there).
    Divergence,
    /// The engine's note on the request: under the divergence marker, else first.
    Note,
    /// The previous context is a prefix of this one (the last row).
    NoDivergence,
    /// A chunk on one line (collapsed), or the header above its text (expanded).
    Chunk(usize),
    /// A line of a chunk's text: index into `lines`.
    Line(usize),
}

impl ContextModel {
    /// Builds the row lists from the chunks, the lines and the divergence point.
    pub fn with_rows(mut self) -> ContextModel {
        let mut collapsed = Vec::with_capacity(self.chunks.len() + 2);
        let mut expanded = Vec::with_capacity(self.chunks.len() * 2 + self.lines.len() + 2);
        let note_first = self.note.is_some() && self.divergence_chunk.is_none();
        if note_first {
            collapsed.push(ContextRow::Note);
            expanded.push(ContextRow::Note);
        }
        for i in 0..self.chunks.len() {
            if self.divergence_chunk == Some(i) {
                collapsed.push(ContextRow::Divergence);
                expanded.push(ContextRow::Divergence);
                if self.note.is_some() {
                    collapsed.push(ContextRow::Note);
                    expanded.push(ContextRow::Note);
                }
            }
            collapsed.push(ContextRow::Chunk(i));
            expanded.push(ContextRow::Chunk(i));
            let start = self.chunk_start.get(i).copied().unwrap_or(self.lines.len());
            let end = self
                .chunk_start
                .get(i + 1)
                .copied()
                .unwrap_or(self.lines.len());
            expanded.extend((start..end).map(ContextRow::Line));
        }
        if self.divergence_chunk.is_none() {
            collapsed.push(ContextRow::NoDivergence);
            expanded.push(ContextRow::NoDivergence);
        }
        self.collapsed = collapsed;
        self.expanded = expanded;
        self
    }

    pub fn rows(&self, expanded: bool) -> &[ContextRow] {
        if expanded {
            &self.expanded
        } else {
            &self.collapsed
        }
    }

    /// The row of the divergence marker, if any.
    pub fn divergence_row(&self, expanded: bool) -> Option<usize> {
        self.rows(expanded)
            .iter()
            .position(|r| *r == ContextRow::Divergence)
    }

    /// The row where chunk `c` starts.
    pub fn chunk_row(&self, c: usize, expanded: bool) -> Option<usize> {
        self.rows(expanded)
            .iter()
            .position(|r| *r == ContextRow::Chunk(c))
    }

    /// The chunk shown at row `row` (a divergence marker belongs to the chunk below it).
    pub fn chunk_at(&self, row: usize, expanded: bool) -> usize {
        let rows = self.rows(expanded);
        rows.iter()
            .skip(row)
            .find_map(|r| match r {
                ContextRow::Chunk(c) => Some(*c),
                ContextRow::Line(l) => self.lines.get(*l).map(|(c, _)| *c),
                _ => None,
            })
            .or_else(|| {
                rows[..row.min(rows.len())]
                    .iter()
                    .rev()
                    .find_map(|r| match r {
                        ContextRow::Chunk(c) => Some(*c),
                        _ => None,
                    })
            })
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone, Default)]
pub struct ChunkRow {
    /// Episode id, or "system".
    pub label: String,
    pub tier: String,
    pub tokens: u64,
    /// Differs from the chunk at the same position in the previous request's context.
    pub changed: bool,
    pub preview: String,
}

/// One line of the session picker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionEntry {
    /// The agent that recorded it (`opencode`, `claude-code`, `codex`).
    pub agent: &'static str,
    pub id: String,
    pub title: String,
    pub directory: String,
    pub updated: i64,
    pub requests: usize,
    pub tokens: u64,
    pub parent_id: Option<String>,
    /// Nesting depth in the picker (children under parents).
    pub depth: usize,
}

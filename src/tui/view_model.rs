//! What the views read: plain data prepared once off the UI thread (at load and after each
//! replay) so that `draw` only indexes and slices. All trace text in here has already gone
//! through [`crate::tui::safe_text`] and is inert.

use std::collections::BTreeMap;

use tierscope_engine::episode::model::Tier;
use tierscope_engine::policy::{KnobSpec, KnobValue, Policy};

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
    /// Sub-agent session ids spawned from this episode.
    pub children: Vec<String>,
    pub first_request: Option<usize>,
    pub last_request: Option<usize>,
    /// Lower-cased title + tier texts, for `/` search.
    pub haystack: String,
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

/// A heatmap cell: the low 3 bits say what the episode is at that request, the high bits mark
/// what happened there.
pub mod cell {
    /// The episode does not exist yet at this request.
    pub const NONE: u8 = 0;
    /// The episode is active (rendered as it stands).
    pub const ACTIVE: u8 = 1;
    /// Closed at tier `t`: `TIER0 + t.depth()`.
    pub const TIER0: u8 = 2;
    pub const STATE: u8 = 0x07;
    pub const CHANGE: u8 = 0x08;
    pub const HOLD: u8 = 0x10;
    pub const DEFERRED: u8 = 0x20;
    pub const THRASH: u8 = 0x40;
    /// With CHANGE: the change went up (a promotion).
    pub const PROMOTE: u8 = 0x80;
}

/// Episodes × requests, row-major.
#[derive(Debug, Clone, Default)]
pub struct Grid {
    pub rows: usize,
    pub cols: usize,
    pub cells: Vec<u8>,
}

impl Grid {
    pub fn new(rows: usize, cols: usize) -> Grid {
        Grid {
            rows,
            cols,
            cells: vec![cell::NONE; rows * cols],
        }
    }
    pub fn get(&self, row: usize, col: usize) -> u8 {
        if row < self.rows && col < self.cols {
            self.cells[row * self.cols + col]
        } else {
            cell::NONE
        }
    }
    pub fn set(&mut self, row: usize, col: usize, v: u8) {
        if row < self.rows && col < self.cols {
            self.cells[row * self.cols + col] = v;
        }
    }
    pub fn or(&mut self, row: usize, col: usize, bits: u8) {
        if row < self.rows && col < self.cols {
            self.cells[row * self.cols + col] |= bits;
        }
    }
    /// The applied tier at a cell, if the episode is closed there.
    pub fn tier(&self, row: usize, col: usize) -> Option<Tier> {
        let s = self.get(row, col) & cell::STATE;
        if s >= cell::TIER0 {
            Tier::from_depth(usize::from(s - cell::TIER0))
        } else {
            None
        }
    }
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
    pub floor_violations: usize,
    pub pin_violations: usize,
    pub probes_ok: usize,
    pub probes_due: usize,
    pub status: String,
    /// The context diverged from the previous request's before its end (the cache broke).
    pub cache_break: bool,
}

/// A knob value as the panel and saved files show it: integers without a fraction, others
/// with at most four decimals and no trailing zeros.
pub fn fmt_knob(v: f64, integer: bool) -> String {
    if integer {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_owned()
    }
}

/// The value a policy runs knob `spec` with: its override, else the default.
pub fn knob_value(p: &Policy, spec: &KnobSpec) -> KnobValue {
    p.knobs
        .get(&spec.name)
        .cloned()
        .unwrap_or_else(|| spec.default.clone())
}

/// The budget `steps` steps away from `b` (a step is 1 % of it, at least 1,000 tokens), never
/// under 1,000: the knobs panels of the main screen and of diff mode step it alike.
pub fn stepped_budget(b: u64, steps: f64) -> u64 {
    let step = (b as f64 * 0.01).round().max(1000.0);
    (b as f64 + steps * step).max(1000.0) as u64
}

/// The text of knob `spec` `steps` steps away from `cur` (its current value): numbers move by
/// the spec's step within its range, flags flip, choices cycle. `None` when it cannot step.
pub fn stepped_knob(spec: &KnobSpec, cur: Option<&KnobValue>, steps: f64) -> Option<String> {
    match (&spec.default, cur) {
        (KnobValue::Num(_), Some(KnobValue::Num(v))) => {
            let step = spec.step.unwrap_or(if spec.integer { 1.0 } else { 0.01 });
            let mut nv = v + steps * step;
            if let Some(lo) = spec.min {
                nv = nv.max(lo);
            }
            if let Some(hi) = spec.max {
                nv = nv.min(hi);
            }
            // Snap to the step grid so repeated steps do not accumulate float noise.
            if step > 0.0 {
                let base = spec.min.unwrap_or(0.0);
                nv = base + ((nv - base) / step).round() * step;
                nv = (nv * 1e9).round() / 1e9;
            }
            Some(fmt_knob(nv, spec.integer))
        }
        (KnobValue::Bool(_), Some(KnobValue::Bool(b))) => Some((!b).to_string()),
        (KnobValue::Choice(_), Some(KnobValue::Choice(c))) => {
            let n = spec.choices.len();
            if n == 0 {
                return None;
            }
            let i = spec.choices.iter().position(|x| x == c).unwrap_or(0);
            let j = if steps >= 0.0 {
                (i + 1) % n
            } else {
                (i + n - 1) % n
            };
            Some(spec.choices[j].clone())
        }
        _ => None,
    }
}

/// One replay, prepared for display.
#[derive(Debug, Clone, Default)]
pub struct ReplayModel {
    pub policy: String,
    pub budget: u64,
    pub budget_source: String,
    pub frames: Vec<FrameRow>,
    pub grid: Grid,
    /// Desired tier of a deferred change, by (episode, request).
    pub desired: BTreeMap<(usize, usize), Tier>,
    /// Per episode: its changes in request order.
    pub history: Vec<Vec<ChangeRow>>,
    /// Per episode: requests where it was held at its floor.
    pub holds_of: Vec<Vec<usize>>,
    pub change_requests: Vec<usize>,
    pub hold_requests: Vec<usize>,
    pub thrash_requests: Vec<usize>,
    /// Max over requests of tokens, budget and recorded prompt: the chart's y range.
    pub y_max: u64,
    pub cost_max: f64,
    /// The policy's `demote_at`, `promote_at` and `target` knobs, when it has them.
    pub demote_at: Option<f64>,
    pub promote_at: Option<f64>,
    pub target: Option<f64>,
    /// Summary line items.
    pub summary: Vec<(String, String)>,
    pub notes: Vec<String>,
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
    /// Every chunk's text, line by line, for the expanded view: (chunk index, line).
    pub lines: Vec<(usize, String)>,
    /// Index into `lines` of each chunk's first line.
    pub chunk_start: Vec<usize>,
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

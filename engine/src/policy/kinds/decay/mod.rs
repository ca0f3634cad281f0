//! `decay`: Magic Context's decay renderer (read from its source; docs/decay.md). Tiers change
//! only at a **fold**, when m[0] is materialized again: every closed episode is re-tiered from
//! scratch ([`fold`]: curve, budget guard, retry) against the history budget.
//! Between folds nothing changes: episodes closed since the last fold sit in m[1] at `full`.
//! With a Magic Context database only its compartments are history: the turns after the last
//! one are raw messages in Magic Context's live tail (the historian has not reached them), which
//! it renders into neither m[0] nor m[1], so the fold and the backstop leave them out.
//!
//! Folds happen where Magic Context's HARD triggers fire, in its order:
//! 1. `first_render`: the very first request (even with nothing to tier);
//! 2. `render_config`: the resolved history budget changed (a model with another limit);
//! 3. `model_change`: the request's model differs from the one at the fold (same request);
//! 4. `system_hash`: the system prompt (agent, model) differs from the one at the fold; Magic
//!    Context learns the prompt after the request, so this folds one request late;
//! 5. `ttl_idle`: more than `ttl_s` since the last response ended, once per idle gap;
//! 6. `mutation`: a row of its m[0] mutation log (compartments deleted, merged, re-bounded,
//!    upgraded) was queued since the fold;
//!
//! and on a cache-busting pass without a HARD trigger (usage ≥ the execute threshold unless
//! mid-turn, the cache expired, or usage ≥ the force band), its pressure backstop refolds when
//! m[1] exceeds 20 % of the history budget, or 15 % of m[0] when m[0] ≥ 500 tokens.
//!
//! The history budget is `floor(context_limit × execute_threshold × history_budget_percentage)`,
//! with Magic Context's context limit: the `context_limit` knob, else `--budget`, else the
//! model's usable window as Magic Context derives it (context − min(output, 25 %)); for a model
//! missing from the limits table, its default context limit of 128,000 once it has recorded
//! usage of that model (`last_usage_context_limit`), and before that its default budget of
//! 60,000 tokens. Usage is the previous request's input (its replayed size) ÷ that limit (128,000
//! for an unknown model). Sub-agent sessions get no history from Magic Context, so nothing is
//! decayed there.
//!
//! Counting (`tier_cost`): `magic-context` counts every rendered block, the joined body and the
//! wrappers with Magic Context's estimator (the Claude BPE when its vocabulary is installed,
//! else its own fallback, `ceil(UTF-16 length / 3.5)`; `policy.note` says which ran), with the
//! pressure from its constants. `constants` and `measured` count with the session's tokenizer
//! (each block's stored count; joins and wrappers not counted), the pressure from the constants
//! or from those counts.

use std::collections::BTreeMap;

use super::{Compacted, Decide, Floors, Kind, RequestView, Setup};
use crate::episode::{Episode, RetentionClass, Tier};
use crate::formats::magic_context::estimate::{chars_estimate_units, Estimator};
use crate::formats::magic_context::render::{self, utf16_len, RowText};
pub mod curve;
pub mod fold;

use crate::policy::knobs::{choice, common, flag, num, uint};
use crate::policy::{KnobSpec, Policy};
use crate::replay::limits;
use crate::replay::output::Reason;
use crate::replay::prepare::Prep;
use crate::replay::schedule::{Applied, BoundaryKind};
use crate::replay::state::State;
use curve::Curve;
use fold::{BlockTokens, Costs, FoldRow, ARCHIVED};

/// Magic Context's history budget when no context limit is known.
pub const DEFAULT_HISTORY_BUDGET: u64 = 60_000;
/// Magic Context's context limit for a model missing from its catalog (`DEFAULT_CONTEXT_LIMIT`
/// of `event-resolvers.ts`): the usage percentage is measured against it, and it is recorded
/// with that usage as the session's usage-reported limit.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 128_000;
/// Magic Context caps the execute threshold at 90 %.
const MAX_EXECUTE_SHARE: f64 = 0.9;

/// How blocks are counted (see the module docs).
#[derive(Debug, Clone, Copy)]
enum Counting {
    /// Magic Context's estimator on the rendered strings.
    MagicContext(Estimator),
    /// Each block's stored token count (the session's tokenizer).
    Stored,
}

/// How the history budget is resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
struct BudgetKnobs {
    /// The `context_limit` knob (0 = resolve).
    context_limit: u64,
    /// `--budget` was given: it is the context limit.
    budget_given: Option<u64>,
    /// `execute_threshold` as a share (percentage mode).
    execute_share: f64,
    /// `execute_threshold_tokens` (0 = percentage mode).
    execute_tokens: u64,
    history_share: f64,
}

/// A request's context limit as Magic Context resolves it (`resolveTrustedContextLimit`, then
/// the live-usage back-derivation of `resolveHistoryBudgetTokens`), with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ContextLimit {
    /// The `context_limit` knob.
    Knob(u64),
    /// `--budget`.
    Budget(u64),
    /// The usable window of a limits table entry (`model-limits:…`, `session-limits:…`).
    Catalog(u64, String),
    /// A model (key) missing from the table, after Magic Context recorded usage of it: its
    /// default context limit, trusted as the usage-reported limit of the same model.
    UsageReported(String),
    /// A model (key) missing from the table, before its first usage: no limit, the default
    /// history budget.
    Unknown(String),
}

impl ContextLimit {
    fn tokens(&self) -> Option<u64> {
        match self {
            ContextLimit::Knob(cl) | ContextLimit::Budget(cl) | ContextLimit::Catalog(cl, _) => {
                Some(*cl)
            }
            ContextLimit::UsageReported(_) => Some(DEFAULT_CONTEXT_LIMIT),
            ContextLimit::Unknown(_) => None,
        }
    }

    /// The denominator of the usage percentage (`resolveContextLimit`: 128,000 when unknown).
    fn usage_denominator(&self) -> u64 {
        self.tokens().unwrap_or(DEFAULT_CONTEXT_LIMIT)
    }

    /// The history budget `hb` resolved from this limit, and why, for the note.
    fn describe(&self, hb: u64) -> String {
        let cl = self.tokens().unwrap_or_default();
        match self {
            ContextLimit::Knob(_) => format!("{hb} (context limit {cl}: the context_limit knob)"),
            ContextLimit::Budget(_) => format!("{hb} (context limit {cl}: --budget)"),
            ContextLimit::Catalog(_, src) => {
                format!("{hb} (context limit {cl}: usable window of {src})")
            }
            ContextLimit::UsageReported(model) => format!(
                "{hb} (context limit {cl}: {model} is not in the limits table: Magic Context's default context limit, recorded with the model's usage)"
            ),
            ContextLimit::Unknown(model) if model.is_empty() => {
                format!("{hb} (Magic Context's default: no context limit known)")
            }
            ContextLimit::Unknown(model) => format!(
                "{hb} (Magic Context's default: {model} is not in the limits table and has reported no usage yet)"
            ),
        }
    }
}

/// One closed episode as a compartment: its fold row and its rendered blocks, counted lazily.
struct Row {
    fold: FoldRow,
    /// The episode is a Magic Context compartment (its representations are its blocks).
    compartment: bool,
    text: [Option<String>; 4],
    count: [Option<u64>; 4],
}

/// The fold's state between requests (what Magic Context persists with m[0]).
#[derive(Debug, Default)]
struct Folded {
    /// Episodes `0..k` were in m[0] at the fold.
    k: usize,
    /// Tokens of m[0] (its `<session-history>` slice).
    m0_tokens: u64,
    history_budget: u64,
    model: String,
    /// The system prompt (agent, model) known at the fold, once known.
    system: Option<u64>,
    at: i64,
    /// Mutations folded in.
    mutations: usize,
}

pub(crate) struct Decay {
    curve: Curve,
    counting: Counting,
    costs: Costs,
    budget: BudgetKnobs,
    backstop_m0_share: f64,
    backstop_budget_share: f64,
    ttl_ms: i64,
    /// Not a sub-agent session (Magic Context injects no history into those).
    enabled: bool,
    /// The compartments come from a Magic Context database: other episodes are not history.
    with_db: bool,
    rows: Vec<Row>,
    mutations: Vec<i64>,
    folded: Option<Folded>,
    /// The system prompt Magic Context last saw (written after each request).
    seen_system: Option<u64>,
    /// When the last response ended (0 = none yet).
    last_response: i64,
    /// The usage Magic Context last recorded: the input tokens of the last request whose
    /// response carried usage (its replayed size) and that request's model key
    /// (`last_observed_model_key`); `None` before any.
    usage: Option<(u64, String)>,
    /// Whether the previous request ended mid-turn (in tool calls).
    prev_tool_calls: bool,
    /// The limits table's usable window and its source per model key (read once per model);
    /// `None` for a model missing from the table.
    limits: BTreeMap<String, Option<(u64, String)>>,
    /// Folds by trigger, and the history budgets used (with their context limit), for the note.
    folds: BTreeMap<&'static str, u64>,
    budgets: Vec<(u64, ContextLimit)>,
    counter_note: String,
}

impl Kind for Decay {
    /// With `tier_cost = measured` the per-tier constants are not read.
    fn reads(p: &Policy, name: &str) -> bool {
        match name {
            "cost_full" | "cost_dense" | "cost_compact" | "cost_anchor" => {
                p.choice("tier_cost") != "measured"
            }
            _ => true,
        }
    }
    fn headline_knobs(_p: &Policy) -> &'static [&'static str] {
        &["h50", "d", "respect_floors"]
    }
    /// The decay curve's shape; then when and how much its compressor works.
    fn sweep_pairs(_p: &Policy) -> &'static [(&'static str, &'static str)] {
        &[
            ("h50", "d"),
            ("execute_threshold", "history_budget_percentage"),
        ]
    }
    const FLOORS: Floors = Floors::Knob("respect_floors");
    fn specs() -> Vec<KnobSpec> {
        let mut v = common(false);
        v.extend([
            flag("respect_floors", false,
                "keep episodes at or above their floors (Magic Context has no floors, so off by default)")
                .short("floors"),
            num("h50", 24.0, 1.0, 1000.0, 1.0, "half-life in episodes at importance 50 and pressure 1"),
            num("d", 25.0, 1.0, 200.0, 1.0, "importance points per doubling of the half-life"),
            num("z1", 0.201, 0.0, 10.0, 0.001, "z-boundary full → dense"),
            num("z2", 0.729, 0.0, 10.0, 0.001, "z-boundary dense → compact"),
            num("z3", 1.322, 0.0, 10.0, 0.001, "z-boundary compact → anchor"),
            num("z4", 2.587, 0.0, 20.0, 0.001, "z-boundary anchor → archived (dropped)"),
            num("p_floor", 0.1, 0.001, 1.0, 0.01, "pressure floor (caps relaxation at 1/p_floor)"),
            choice("tier_cost", "magic-context", &["magic-context", "constants", "measured"],
                "magic-context = count rendered blocks, joins and wrappers as Magic Context does (Claude BPE if installed, else its ceil(len/3.5) fallback), pressure from its constants; constants / measured = the session's token counts, pressure from the constants / from those counts"),
            num("cost_full", 322.0, 0.0, 100_000.0, 1.0, "constant tokens of a full (P1) episode"),
            num("cost_dense", 109.0, 0.0, 100_000.0, 1.0, "constant tokens of a dense (P2) episode"),
            num("cost_compact", 35.0, 0.0, 100_000.0, 1.0, "constant tokens of a compact (P3) episode"),
            num("cost_anchor", 20.0, 0.0, 100_000.0, 1.0, "constant tokens of an anchor (P4) episode"),
            num("context_limit", 0.0, 0.0, 10_000_000.0, 1000.0,
                "Magic Context's context limit for the history budget; 0 = --budget when given, else the model's usable window (context − min(output, 25 %)), else a 60,000-token history budget"),
            num("execute_threshold", 0.65, 0.2, 0.9, 0.05,
                "Magic Context's execute threshold as a share of the context limit (capped at 0.9)"),
            num("execute_threshold_tokens", 0.0, 0.0, 10_000_000.0, 1000.0,
                "the execute threshold in tokens instead (capped at 90 % of the context limit); 0 = use the share"),
            num("history_budget_percentage", 0.15, 0.05, 1.0, 0.05,
                "history budget = floor(context limit × execute threshold × this)"),
            num("backstop_m1_m0", 0.15, 0.0, 10.0, 0.01,
                "refold on a cache-busting pass when m[1] (closed since the fold) exceeds this share of m[0] (m[0] ≥ 500 tokens)"),
            num("backstop_m1_budget", 0.2, 0.0, 10.0, 0.01,
                "refold on a cache-busting pass when m[1] exceeds this share of the history budget"),
        ]);
        v
    }

    fn check(p: &Policy) -> Result<(), String> {
        let z = [p.num("z1"), p.num("z2"), p.num("z3"), p.num("z4")];
        if !(z[0] < z[1] && z[1] < z[2] && z[2] < z[3]) {
            return Err(format!("knobs must satisfy z1 < z2 < z3 < z4 (got {z:?})"));
        }
        Ok(())
    }

    fn build(p: &Policy, setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        let prep = setup.prep;
        let (counting, counter_note) = match p.choice("tier_cost") {
            "constants" | "measured" => (
                Counting::Stored,
                format!("tokens counted with the session's tokenizer ({}), joins and wrappers not counted", p.choice("tier_cost")),
            ),
            _ => {
                let (e, note) = Estimator::magic_context();
                (Counting::MagicContext(e), note)
            }
        };
        let costs = if p.choice("tier_cost") == "measured" {
            Costs::Measured
        } else {
            Costs::Constants([
                p.num("cost_full"),
                p.num("cost_dense"),
                p.num("cost_compact"),
                p.num("cost_anchor"),
            ])
        };
        let curve = Curve {
            h50: p.num("h50"),
            d: p.num("d"),
            z: [p.num("z1"), p.num("z2"), p.num("z3"), p.num("z4")],
            p_floor: p.num("p_floor"),
        };
        let n = prep.episodes.len();
        let mc = prep.magic_context;
        let rows = (0..n)
            .map(|e| {
                let c = mc.and_then(|m| m.episodes.get(e)).and_then(Option::as_ref);
                Row {
                    fold: FoldRow::new(
                        &curve,
                        c.and_then(|c| c.legacy_tier),
                        c.map_or_else(|| importance_of(&prep.episodes[e]), |c| c.importance),
                    ),
                    compartment: c.is_some(),
                    text: Default::default(),
                    count: [None; 4],
                }
            })
            .collect();
        Box::new(Decay {
            curve,
            counting,
            costs,
            budget: BudgetKnobs {
                context_limit: uint(p.num("context_limit")),
                budget_given: (setup.budget_source == "--budget").then_some(setup.budget),
                execute_share: p.num("execute_threshold").min(MAX_EXECUTE_SHARE),
                execute_tokens: uint(p.num("execute_threshold_tokens")),
                history_share: p.num("history_budget_percentage"),
            },
            backstop_m0_share: p.num("backstop_m1_m0"),
            backstop_budget_share: p.num("backstop_m1_budget"),
            ttl_ms: (p.num("ttl_s") * 1000.0) as i64,
            enabled: prep.trace.session.parent_id.is_none(),
            with_db: mc.is_some(),
            rows,
            mutations: mc.map(|m| m.mutations.clone()).unwrap_or_default(),
            folded: None,
            seen_system: None,
            last_response: 0,
            usage: None,
            prev_tool_calls: false,
            limits: BTreeMap::new(),
            folds: BTreeMap::new(),
            budgets: Vec::new(),
            counter_note,
        })
    }
}

/// Importance for the curve when the source has none: pins matter most, episodes whose floor
/// keeps a decision next, discardable ones least (a `*.tiers.json` importance in [0, 1] is
/// scaled to Magic Context's 1..100).
fn importance_of(e: &Episode) -> f64 {
    if let Some(i) = e.importance {
        return (i * 100.0).clamp(1.0, 100.0);
    }
    match e.class {
        RetentionClass::Pin => 100.0,
        RetentionClass::Discardable => 25.0,
        RetentionClass::Compressible if e.floor <= Tier::Compact => 75.0,
        RetentionClass::Compressible => 50.0,
    }
}

/// Magic Context's tier 1..=5 as a tierscope tier.
fn tier_of(mc: u8) -> Tier {
    Tier::from_depth(usize::from(mc.clamp(1, ARCHIVED)) - 1).unwrap_or(Tier::Dropped)
}

fn model_key(req: &crate::trace::Request) -> String {
    req.model
        .as_ref()
        .map(|m| format!("{}/{}", m.provider_id, m.model_id))
        .unwrap_or_default()
}

/// The rendered blocks of the closed episodes and their counts, for the fold.
struct Blocks<'x, 'p, 'a> {
    rows: &'x mut [Row],
    counting: Counting,
    st: &'x State<'p, 'a>,
    /// The episode behind each fold row (`BlockTokens` indexes are fold rows).
    eps: &'x [usize],
}

impl Blocks<'_, '_, '_> {
    /// The block of episode `e` at Magic Context tier 1..=4 (all four are rendered at once).
    fn text(&mut self, e: usize, tier: u8) -> &str {
        let i = usize::from(tier) - 1;
        if self.rows[e].text[i].is_none() {
            self.rows[e].text = render_blocks(self.st.p, e, self.rows[e].compartment).map(Some);
        }
        self.rows[e].text[i].as_deref().unwrap_or("")
    }

    fn units(&mut self, e: usize, tier: u8) -> u64 {
        utf16_len(self.text(e, tier)) as u64
    }

    /// The joined body of `tiers` (one per fold row): non-empty blocks joined by `\n\n`
    /// (archived blocks are empty).
    fn joined(&mut self, tiers: &[u8]) -> String {
        let mut out = String::new();
        for (i, &t) in tiers.iter().enumerate() {
            if t >= ARCHIVED {
                continue;
            }
            let text = self.text(self.eps[i], t);
            if text.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(text);
        }
        out
    }

    /// Σ UTF-16 units of the joined body of `tiers` ([`Blocks::joined`] without the text).
    fn joined_units(&mut self, tiers: &[u8]) -> u64 {
        let mut units = 0;
        let mut parts = 0u64;
        for (i, &t) in tiers.iter().enumerate() {
            let n = if t < ARCHIVED {
                self.units(self.eps[i], t)
            } else {
                0
            };
            if n > 0 {
                units += n;
                parts += 1;
            }
        }
        units + 2 * parts.saturating_sub(1)
    }

    /// Tokens of m[1]: the fold rows (compartments closed since the fold), at tier 1, in their
    /// wrappers.
    fn m1_tokens(&mut self) -> u64 {
        let n = self.eps.len();
        if n == 0 {
            return 0;
        }
        match self.counting {
            Counting::Stored => (0..n).map(|i| self.row(i, 1)).sum(),
            Counting::MagicContext(Estimator::Chars) => {
                let blocks: u64 = (0..n).map(|i| self.units(self.eps[i], 1)).sum();
                let seps = 2 * (n - 1) as u64;
                chars_estimate_units(m1_wrapper_units() + blocks + seps)
            }
            Counting::MagicContext(est) => {
                let blocks: Vec<String> = (0..n)
                    .map(|i| self.text(self.eps[i], 1).to_owned())
                    .collect();
                est.count(&render::session_history_since(&blocks))
            }
        }
    }
}

impl BlockTokens for Blocks<'_, '_, '_> {
    fn row(&mut self, i: usize, tier: u8) -> u64 {
        if tier >= ARCHIVED {
            return 0;
        }
        let e = self.eps[i];
        let i = usize::from(tier) - 1;
        if let Some(n) = self.rows[e].count[i] {
            return n;
        }
        let n = match self.counting {
            Counting::Stored => self.st.tokens_at(e, tier_of(tier), None),
            Counting::MagicContext(est) => est.count(self.text(e, tier)),
        };
        self.rows[e].count[i] = Some(n);
        n
    }

    fn body(&mut self, tiers: &[u8]) -> u64 {
        match self.counting {
            Counting::Stored => tiers.iter().enumerate().map(|(i, &t)| self.row(i, t)).sum(),
            Counting::MagicContext(Estimator::Chars) => {
                chars_estimate_units(self.joined_units(tiers))
            }
            Counting::MagicContext(est) => {
                let body = self.joined(tiers);
                est.count(&body)
            }
        }
    }

    fn slice(&mut self, tiers: &[u8]) -> u64 {
        match self.counting {
            Counting::Stored => self.body(tiers),
            Counting::MagicContext(Estimator::Chars) => {
                let units = self.joined_units(tiers);
                let wrapped = if units == 0 {
                    utf16_len(render::EMPTY_HISTORY) as u64
                } else {
                    // "<session-history>\n" + body + "\n</session-history>"
                    units + 37
                };
                chars_estimate_units(wrapped)
            }
            Counting::MagicContext(est) => {
                let body = self.joined(tiers);
                est.count(&render::session_history(&body))
            }
        }
    }
}

/// UTF-16 units of m[1]'s wrappers around one block (`<session-history-since>`,
/// `<new-compartments>`).
fn m1_wrapper_units() -> u64 {
    utf16_len(&render::session_history_since(&[String::new()])) as u64
}

/// The blocks of episode `e` at Magic Context tiers 1..=4: a compartment's own renderings (its
/// representations), or an episode rendered as Magic Context would render it as a compartment
/// (its tiers as p1..p4, a missing tier as NULL).
fn render_blocks(p: &Prep<'_>, e: usize, compartment: bool) -> [String; 4] {
    let ep = &p.episodes[e];
    if compartment {
        return Tier::TIERS.map(|t| ep.representation(t).map(|r| r.text()).unwrap_or_default());
    }
    let texts: Vec<Option<String>> = Tier::TIERS
        .iter()
        .map(|t| ep.representation(*t).map(|r| r.text()))
        .collect();
    let dates = (
        crate::formats::magic_context::date_of(ep.time_start, 0).unwrap_or_default(),
        crate::formats::magic_context::date_of(ep.time_end, 0).unwrap_or_default(),
    );
    let row = RowText {
        start_message: ep.first_message as i64 + 1,
        end_message: ep.last_message as i64 + 1,
        dates: Some((dates.0.as_str(), dates.1.as_str())),
        title: &ep.title,
        content: texts[0].as_deref().unwrap_or(""),
        p: [
            texts[0].as_deref(),
            texts[1].as_deref(),
            texts[2].as_deref(),
            texts[3].as_deref(),
        ],
        legacy: 0,
    };
    [1, 2, 3, 4].map(|t| render::render(&row, t))
}

/// The execute threshold as a share of `context_limit` (`resolveExecuteThreshold`): tokens mode
/// first (capped at 90 % of the limit), else the share (capped at 90 %).
fn execute_share(b: &BudgetKnobs, context_limit: u64) -> f64 {
    if b.execute_tokens > 0 && context_limit > 0 {
        let cl = context_limit as f64;
        let eff = (b.execute_tokens as f64).min(cl * MAX_EXECUTE_SHARE);
        (eff / cl * 100.0).min(MAX_EXECUTE_SHARE * 100.0) / 100.0
    } else {
        b.execute_share
    }
}

/// `resolveHistoryBudgetTokens`: `floor((context_limit × threshold) × percentage)`, in this
/// order (the float result matters: 14,999 for 100,000 tokens of 150,000), else 60,000.
fn history_budget(b: &BudgetKnobs, context_limit: Option<u64>) -> u64 {
    match context_limit {
        None => DEFAULT_HISTORY_BUDGET,
        Some(cl) => ((cl as f64 * execute_share(b, cl)) * b.history_share).floor() as u64,
    }
}

/// The pressure backstop: m[1] (not the placeholder) above `budget_share` of the history budget,
/// or above `m0_share` of m[0] once m[0] has 500 tokens.
fn backstop(m0: u64, m1: u64, hb: u64, m0_share: f64, budget_share: f64) -> bool {
    m1 > 0
        && (m1 as f64 > budget_share * hb as f64 || (m0 >= 500 && m1 as f64 > m0_share * m0 as f64))
}

impl Decay {
    /// Magic Context's context limit for a request (`resolveTrustedContextLimit`): the knob,
    /// `--budget`, the model's usable window from the limits table; for a model missing from
    /// the table, the limit Magic Context recorded with that model's last usage, which is its
    /// default 128,000 (a request without a model key back-derives the same limit from the
    /// live usage); else none (the 60,000 default history budget).
    fn context_limit(&mut self, p: &Prep<'_>, req: &crate::trace::Request) -> ContextLimit {
        if self.budget.context_limit > 0 {
            return ContextLimit::Knob(self.budget.context_limit);
        }
        if let Some(b) = self.budget.budget_given {
            return ContextLimit::Budget(b);
        }
        let model = model_key(req);
        let catalog = self
            .limits
            .entry(model.clone())
            .or_insert_with(|| {
                let l = limits::limits_for_model(p.trace, req.model.as_ref());
                l.known().then(|| (l.usable_soft(), l.source.clone()))
            })
            .clone();
        match catalog {
            Some((cl, source)) => ContextLimit::Catalog(cl, source),
            None if self.usage_of(&model).is_some() => ContextLimit::UsageReported(model),
            None => ContextLimit::Unknown(model),
        }
    }

    /// The input tokens of the last usage Magic Context recorded, if it was recorded for
    /// `model` (a model change clears it: `transform.ts` resets the usage on a switch).
    fn usage_of(&self, model: &str) -> Option<u64> {
        self.usage
            .as_ref()
            .filter(|(_, m)| m == model)
            .map(|&(tokens, _)| tokens)
    }

    fn execute_share(&self, context_limit: u64) -> f64 {
        execute_share(&self.budget, context_limit)
    }

    fn history_budget(&self, context_limit: Option<u64>) -> u64 {
        history_budget(&self.budget, context_limit)
    }

    /// The episodes of `from..to` that are history: with a Magic Context database its
    /// compartments only (the turns after them are its raw live tail), else every episode.
    fn history(&self, from: usize, to: usize) -> Vec<usize> {
        (from..to)
            .filter(|&e| !self.with_db || self.rows[e].compartment)
            .collect()
    }

    /// The HARD trigger that fires at this request, if any.
    fn hard_trigger(&self, rq: &RequestView<'_>, hb: u64) -> Option<&'static str> {
        let Some(f) = &self.folded else {
            return Some("first_render");
        };
        let now = rq.rq.time;
        let model = model_key(rq.req);
        if f.history_budget != hb {
            Some("render_config")
        } else if !model.is_empty() && model != f.model {
            Some("model_change")
        } else if f.system.is_some() && self.seen_system.is_some() && f.system != self.seen_system {
            Some("system_hash")
        } else if self.last_response > 0
            && now - self.last_response > self.ttl_ms
            && self.last_response > f.at
        {
            Some("ttl_idle")
        } else if self.mutations.iter().filter(|&&q| q <= now).count() > f.mutations {
            Some("mutation")
        } else {
            None
        }
    }

    /// Whether this pass busts the cache (Magic Context's `isCacheBustingPass` without a HARD
    /// trigger): the scheduler executes (usage at the execute threshold, or the cache expired;
    /// deferred while the model is mid-turn) or usage reaches the force band.
    fn cache_busting(&self, rq: &RequestView<'_>, context_limit: &ContextLimit) -> bool {
        let now = rq.rq.time;
        // The event handler measures usage against `resolveContextLimit` (128,000 for a model
        // missing from the catalog).
        let denominator = context_limit.usage_denominator();
        let usage = match self.usage_of(&model_key(rq.req)) {
            Some(tokens) if denominator > 0 => tokens as f64 / denominator as f64 * 100.0,
            _ => 0.0,
        };
        let threshold = self.execute_share(denominator) * 100.0;
        let force = usage >= 85f64.max(threshold.min(90.0) + 2.0);
        let expired = self.last_response > 0 && now - self.last_response > self.ttl_ms;
        let mut execute = usage >= threshold || expired;
        if usage == 0.0 && self.last_response == 0 {
            execute = false;
        }
        let mid_turn = self.prev_tool_calls && !rq.rq.user_turn;
        if mid_turn && !force {
            execute = false;
        }
        execute || force
    }

    /// Fold now: re-tier every closed episode, apply, and remember what m[0] holds.
    fn fold(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>, hb: u64, why: &'static str) {
        let k = st.closed_count();
        let eps = self.history(0, k);
        for &e in &eps {
            self.rows[e].fold.max_tier = if st.respect_floors() {
                match st.p.eps[e].legal.last() {
                    Some(Tier::Dropped) | None => ARCHIVED,
                    Some(t) => t.depth() as u8 + 1,
                }
            } else {
                ARCHIVED
            };
        }
        let fold_rows: Vec<FoldRow> = eps.iter().map(|&e| self.rows[e].fold).collect();
        let result = {
            let mut blocks = Blocks {
                rows: &mut self.rows,
                counting: self.counting,
                st,
                eps: &eps,
            };
            fold::fold(&self.curve, &fold_rows, hb as f64, self.costs, &mut blocks)
        };
        st.add_boundary(BoundaryKind::Fold);
        let how = Applied::Boundary(BoundaryKind::Fold);
        for (&e, &mc) in eps.iter().zip(&result.render.tiers) {
            let t = st.clamp(e, tier_of(mc));
            if t != st.applied(e) {
                st.set_now(e, t, Reason::Decay, how);
            } else {
                st.want(e, t, Reason::Decay);
            }
        }
        for &i in &result.render.held {
            st.hold(eps[i]);
        }
        let now = rq.rq.time;
        self.folded = Some(Folded {
            k,
            m0_tokens: result.slice_tokens,
            history_budget: hb,
            model: model_key(rq.req),
            system: self.seen_system,
            at: now,
            mutations: self.mutations.iter().filter(|&&q| q <= now).count(),
        });
        *self.folds.entry(why).or_default() += 1;
    }
}

impl Decide for Decay {
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        if !self.enabled {
            return None;
        }
        let cl = self.context_limit(st.p, rq.req);
        let hb = self.history_budget(cl.tokens());
        if !self.budgets.iter().any(|(h, c)| *h == hb && *c == cl) {
            self.budgets.push((hb, cl.clone()));
        }
        if let Some(f) = &mut self.folded {
            // A system prompt first seen after the fold is adopted, not a change.
            if f.system.is_none() {
                f.system = self.seen_system;
            }
        }
        if let Some(why) = self.hard_trigger(rq, hb) {
            self.fold(st, rq, hb, why);
            return None;
        }
        if !self.cache_busting(rq, &cl) {
            return None;
        }
        let Some(f) = &self.folded else {
            return None;
        };
        let (from, m0) = (f.k, f.m0_tokens);
        let eps = self.history(from, st.closed_count());
        let m1 = Blocks {
            rows: &mut self.rows,
            counting: self.counting,
            st,
            eps: &eps,
        }
        .m1_tokens();
        if backstop(
            m0,
            m1,
            hb,
            self.backstop_m0_share,
            self.backstop_budget_share,
        ) {
            self.fold(st, rq, hb, "backstop");
        }
        None
    }

    fn after(&mut self, _st: &State<'_, '_>, rq: &RequestView<'_>, tokens: u64) {
        if rq.req.synthetic_call {
            return;
        }
        self.seen_system = Some(rq.rq.sys_key);
        self.prev_tool_calls = rq.req.finish.as_deref() == Some("tool-calls");
        let u = &rq.req.usage;
        // A response with usage: Magic Context records its input (here the replayed size of
        // the request, what the provider would have counted) with its model and end time.
        if u.input + u.output + u.cache_read + u.cache_write > 0 {
            self.usage = Some((tokens, model_key(rq.req)));
            if let Some(end) = rq.req.time_completed {
                self.last_response = self.last_response.max(end);
            }
        }
    }

    fn reports_after_pass(&self) -> bool {
        true
    }
    fn note(&self) -> Option<String> {
        if !self.enabled {
            return Some(
                "sub-agent session: Magic Context injects no history here, so nothing is decayed"
                    .into(),
            );
        }
        let folds: Vec<String> = self
            .folds
            .iter()
            .map(|(why, n)| format!("{why} {n}"))
            .collect();
        let budgets: Vec<String> = self
            .budgets
            .iter()
            .map(|(hb, cl)| cl.describe(*hb))
            .collect();
        Some(format!(
            "{}; history budget {}; folds: {}",
            self.counter_note,
            budgets.join(", "),
            if folds.is_empty() {
                "none".to_owned()
            } else {
                folds.join(", ")
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(share: f64, tokens: u64) -> BudgetKnobs {
        BudgetKnobs {
            context_limit: 0,
            budget_given: None,
            execute_share: share,
            execute_tokens: tokens,
            history_share: 0.15,
        }
    }

    /// Spec E7.
    #[test]
    fn history_budget_as_magic_context_resolves_it() {
        assert_eq!(history_budget(&knobs(0.65, 0), Some(150_000)), 14_625);
        assert_eq!(history_budget(&knobs(0.65, 100_000), Some(150_000)), 14_999);
        assert_eq!(history_budget(&knobs(0.9, 0), Some(150_000)), 20_250);
        assert_eq!(
            history_budget(&knobs(0.65, 0), None),
            DEFAULT_HISTORY_BUDGET
        );
        // Tokens mode is capped at 90 % of the limit.
        assert_eq!(execute_share(&knobs(0.65, 1_000_000), 150_000), 0.9);
        // A model missing from the catalog, once it reported usage: Magic Context's default
        // context limit.
        assert_eq!(
            history_budget(&knobs(0.65, 0), Some(DEFAULT_CONTEXT_LIMIT)),
            12_480
        );
    }

    /// The note says which context limit was used and why.
    #[test]
    fn context_limits_explain_themselves() {
        use ContextLimit as L;
        assert_eq!(
            L::Unknown("p/m".into()).describe(60_000),
            "60000 (Magic Context's default: p/m is not in the limits table and has reported no usage yet)"
        );
        assert_eq!(
            L::Unknown(String::new()).describe(60_000),
            "60000 (Magic Context's default: no context limit known)"
        );
        assert_eq!(
            L::UsageReported("p/m".into()).describe(12_480),
            "12480 (context limit 128000: p/m is not in the limits table: Magic Context's default context limit, recorded with the model's usage)"
        );
        assert_eq!(
            L::Catalog(150_000, "model-limits:a/b".into()).describe(14_625),
            "14625 (context limit 150000: usable window of model-limits:a/b)"
        );
        assert_eq!(
            L::Budget(9_000).describe(877),
            "877 (context limit 9000: --budget)"
        );
        // Usage of an unknown model is measured against 128,000.
        assert_eq!(
            L::Unknown("p/m".into()).usage_denominator(),
            DEFAULT_CONTEXT_LIMIT
        );
        assert_eq!(L::Unknown("p/m".into()).tokens(), None);
    }

    /// Spec E8 (a cache-busting pass; a defer pass never gets here).
    #[test]
    fn backstop_arms() {
        assert!(backstop(4_000, 650, 14_625, 0.15, 0.2));
        assert!(!backstop(4_000, 600, 14_625, 0.15, 0.2));
        assert!(backstop(300, 2_926, 14_625, 0.15, 0.2));
        assert!(!backstop(300, 2_925, 14_625, 0.15, 0.2));
        assert!(
            !backstop(4_000, 0, 14_625, 0.15, 0.2),
            "the placeholder never refolds"
        );
    }

    /// m[1]'s length by arithmetic equals the rendered text's.
    #[test]
    fn m1_units_match_the_text() {
        let blocks = vec!["## 1-2 · a\nx".to_owned(), "## 3-4 · b".to_owned()];
        let text = render::session_history_since(&blocks);
        let units: u64 = blocks.iter().map(|b| utf16_len(b) as u64).sum();
        assert_eq!(m1_wrapper_units() + units + 2, utf16_len(&text) as u64);
    }

    #[test]
    fn tiers_map_both_ways() {
        assert_eq!(tier_of(1), Tier::Full);
        assert_eq!(tier_of(4), Tier::Anchor);
        assert_eq!(tier_of(5), Tier::Dropped);
    }
}

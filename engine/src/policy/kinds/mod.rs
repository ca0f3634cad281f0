//! The policy kinds (MODEL §4), one file (or folder) each, the one home of a kind: its typed
//! knobs and their declarations, its answers to what the engine and the explorer ask, its own
//! state, its decision. The pass ([`crate::replay`]) calls a kind through [`Decide`]; the
//! kind's file touches the replay only through the shared state's API
//! ([`crate::replay::state::State`]: want, apply, hold, the summary) and, for the kinds that
//! defer, the shared [`Schedule`].
//!
//! Adding a kind = a new file here, its built-in TOML(s) in `policy/builtin/`, and one line in
//! [`registry!`] below.

use serde::{Deserialize, Serialize};

use crate::policy::{KnobSpec, Policy};
use crate::replay::prepare::{Filter, Prep, ReqData};
use crate::replay::probes::ProbeIndex;
use crate::replay::schedule::{Schedule, Waiting};
use crate::replay::state::State;

pub mod decay;
mod flat;
mod full;
mod oracle;
mod progressive;
mod retention;
mod truncate;
mod victims;

/// What a kind's file provides besides its decision.
pub(crate) trait Kind {
    /// Its knobs, with the kind's defaults (the common ones included).
    fn specs() -> Vec<KnobSpec>;
    /// Constraints between its knobs; `Err` explains the first one violated.
    fn check(_p: &Policy) -> Result<(), String> {
        Ok(())
    }
    /// Which recorded chunks its renderings include (`explicit_budget`: the budget was given,
    /// not the model's default).
    fn filter(_p: &Policy, _explicit_budget: bool) -> Filter {
        Filter::NoArtefacts
    }
    /// Its decision for one pass.
    fn build(p: &Policy, setup: &Setup<'_, '_>) -> Box<dyn Decide>;
    /// Whether the replay reads knob `name` (one it declares) under `p`'s other settings: a
    /// choice that picks a driver leaves some knobs unread, and sliders and sweeps offer only
    /// the knobs read.
    fn reads(_p: &Policy, _name: &str) -> bool {
        true
    }
    /// The knobs a header shows for `p` after the overridden ones, most telling first.
    fn headline_knobs(_p: &Policy) -> &'static [&'static str] {
        &["boundary"]
    }
    /// The pressure thresholds `p` changes tiers at, when it is pressure-driven (the explorer
    /// draws them on its chart).
    fn thresholds(_p: &Policy) -> Option<Thresholds> {
        None
    }
    /// Pairs of its knobs worth sweeping first under `p`, most telling first (the sweep pane
    /// starts with the first pair whose knobs `p` reads).
    fn sweep_pairs(_p: &Policy) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// How long after a demotion an episode waits before it may be promoted again under `p`
    /// (the hysteresis in time), and the knob that says so; `None` when it never waits. The
    /// explorer explains a held promotion with it.
    fn promotion_wait(_p: &Policy) -> Option<PromotionWait> {
        None
    }
    /// Where its `respect_floors` comes from.
    const FLOORS: Floors = Floors::Declared;
    /// What the engine treats it as, beyond its decision.
    const ROLE: KindRole = KindRole::Schedule;
}

/// What a kind is to the rest of the engine, where that is more than its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindRole {
    /// A tier schedule: nothing else asks about it.
    Schedule,
    /// The never-forget baseline every other policy's `divergence_cost` is measured against.
    Baseline,
    /// One summary replacing the history (the compaction cliff): its summaries can be written
    /// by a model, and following the recording's own compactions it is the recording.
    Compaction,
    /// Knows which episodes the hidden probes need: without probes it has nothing to go by.
    Oracle,
}

/// Where a pressure-driven policy changes tiers: shares of the budget (MODEL §3.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Above it, victims are demoted.
    pub demote_at: f64,
    /// What demotion aims for, and what a promotion must not exceed.
    pub target: f64,
    /// Below it, episodes are promoted.
    pub promote_at: f64,
}

impl Thresholds {
    /// The knobs that hold them: shares of the budget.
    pub const KNOBS: [&'static str; 3] = ["demote_at", "target", "promote_at"];

    /// The thresholds `p`'s knobs set.
    pub fn of(p: &Policy) -> Thresholds {
        Thresholds {
            demote_at: p.num("demote_at"),
            target: p.num("target"),
            promote_at: p.num("promote_at"),
        }
    }
}

/// How long a demoted episode waits before it may be promoted again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromotionWait {
    /// Requests after the demotion during which it is not promoted.
    pub requests: usize,
    /// The knob that sets it.
    pub knob: &'static str,
}

/// Where a kind's `respect_floors` (MODEL §2 law 1) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floors {
    /// The policy file declares it (`respect_floors = true|false`).
    Declared,
    /// Always kept: the kind never shows an episode below full.
    Always,
    /// A knob of the kind, of this name (then the file must not declare it).
    Knob(&'static str),
}

/// What a kind may read when it builds its decision for one pass.
pub(crate) struct Setup<'s, 'a> {
    pub prep: &'s Prep<'a>,
    pub probes: &'s ProbeIndex,
    pub budget: u64,
    /// Where the budget came from (`--budget`, `model-limits:…`, `fallback`).
    pub budget_source: &'s str,
}

/// One request as a policy sees it.
pub(crate) struct RequestView<'s> {
    pub t: usize,
    pub rq: &'s ReqData,
    pub req: &'s crate::trace::Request,
    /// Tokens of the system chunk and of the active episode so far: the context besides the
    /// closed episodes and the summary.
    pub base: u64,
}

/// A compaction the policy made at one request: a summary call of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// History tokens of that call as the trace's release would have built it (the summary
    /// and what it covers, or everything in view; see `compaction_call::simulated_history`).
    pub history: u64,
    /// The recorded compaction whose summary text stands in for the new one (`None`: built
    /// from the covered episodes' compact tiers, or written by a model).
    pub text_from: Option<usize>,
    /// The entry of the replay's [`crate::replay::written::SummaryBook`] written for it.
    pub written: Option<usize>,
}

/// A kind's decision inside one pass.
pub(crate) trait Decide {
    /// Episode `e` closed at this request (it entered at `full`).
    fn on_close(&mut self, _st: &State<'_, '_>, _e: usize) {}
    /// Every request, before any decision (also summary calls the schedule is held through).
    fn observe(&mut self, _st: &State<'_, '_>, _t: usize) {}
    /// Decide and apply at one request: set desired tiers with `want` and apply them (itself or
    /// through its schedule). Returns the summary call when the policy compacted here.
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted>;
    /// After the request is measured: `tokens` is what it rendered.
    fn after(&mut self, _st: &State<'_, '_>, _rq: &RequestView<'_>, _tokens: u64) {}
    /// The shared schedule, for the kinds that defer (it classifies what still waits).
    fn schedule(&self) -> Option<Schedule> {
        None
    }
    /// Whether a recorded compaction's summary call holds the schedule: it is a side call with
    /// its own, atypically small context, and counterfactual policies would otherwise promote
    /// there what the next step demotes again.
    fn holds_through_summary_calls(&self) -> bool {
        true
    }
    /// A line for `policy.notes` in the output (e.g. which token counter ran).
    fn note(&self) -> Option<String> {
        None
    }
    /// How the policy compacted over the pass (`opencode`), for `policy.compaction`.
    fn compaction_run(&self) -> Option<crate::replay::output::CompactionRun> {
        None
    }
    /// Whether [`Decide::note`] or [`Decide::compaction_run`] say what the pass did (folds,
    /// compactions): known only once it ran, while a streamed document writes them before the
    /// frames.
    fn reports_after_pass(&self) -> bool {
        false
    }
    /// Whether the recording's own summary calls are left out (rendered as empty frames): a
    /// policy that compacts on its own does not make them.
    fn skips_recorded_summary_calls(&self) -> bool {
        false
    }
    /// Pending changes still waiting after this request, by cause.
    fn waiting(&self, st: &State<'_, '_>) -> Waiting {
        match self.schedule() {
            Some(s) => s.waiting(st),
            None => Waiting {
                deferred: st.pending_count() as u64,
                dwell_blocked: 0,
            },
        }
    }
}

macro_rules! registry {
    ($( $(#[$doc:meta])* $variant:ident = $word:literal => $module:ident :: $ty:ident, builtins [$($b:literal),* $(,)?] ;)*) => {
        /// What a policy does; picks the decision logic of the replay and the knobs it accepts.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum PolicyKind {
            $( $(#[$doc])* #[serde(rename = $word)] $variant, )*
        }

        impl PolicyKind {
            /// Every kind, in registry order.
            pub const ALL: &'static [PolicyKind] = &[$(PolicyKind::$variant),*];
            /// The name used in TOML files.
            pub fn as_str(&self) -> &'static str {
                match self { $(PolicyKind::$variant => $word,)* }
            }
            /// The built-in policies of this kind, in display order.
            pub fn builtins(&self) -> &'static [&'static str] {
                match self { $(PolicyKind::$variant => &[$($b),*],)* }
            }
        }

        /// The built-in policies' names and TOML texts, in display order.
        pub const BUILTIN_FILES: &[(&str, &str)] = &[
            $($( ($b, include_str!(concat!("../builtin/", $b, ".toml"))), )*)*
        ];

        pub(crate) fn specs(kind: PolicyKind) -> Vec<KnobSpec> {
            match kind { $(PolicyKind::$variant => <$module::$ty as Kind>::specs(),)* }
        }
        pub(crate) fn check(kind: PolicyKind, p: &Policy) -> Result<(), String> {
            match kind { $(PolicyKind::$variant => <$module::$ty as Kind>::check(p),)* }
        }
        pub(crate) fn filter(p: &Policy, explicit_budget: bool) -> Filter {
            match p.kind { $(PolicyKind::$variant => <$module::$ty as Kind>::filter(p, explicit_budget),)* }
        }
        pub(crate) fn build(p: &Policy, setup: &Setup<'_, '_>) -> Box<dyn Decide> {
            match p.kind { $(PolicyKind::$variant => <$module::$ty as Kind>::build(p, setup),)* }
        }
        pub(crate) fn reads(p: &Policy, name: &str) -> bool {
            match p.kind { $(PolicyKind::$variant => <$module::$ty as Kind>::reads(p, name),)* }
        }
        pub(crate) fn headline_knobs(p: &Policy) -> &'static [&'static str] {
            match p.kind { $(PolicyKind::$variant => <$module::$ty as Kind>::headline_knobs(p),)* }
        }
        pub(crate) fn thresholds(p: &Policy) -> Option<Thresholds> {
            match p.kind { $(PolicyKind::$variant => <$module::$ty as Kind>::thresholds(p),)* }
        }
        pub(crate) fn sweep_pairs(p: &Policy) -> &'static [(&'static str, &'static str)] {
            match p.kind { $(PolicyKind::$variant => <$module::$ty as Kind>::sweep_pairs(p),)* }
        }
        pub(crate) fn promotion_wait(p: &Policy) -> Option<PromotionWait> {
            match p.kind { $(PolicyKind::$variant => <$module::$ty as Kind>::promotion_wait(p),)* }
        }
        impl PolicyKind {
            /// Where this kind's `respect_floors` comes from.
            pub fn floors(&self) -> Floors {
                match self { $(PolicyKind::$variant => <$module::$ty as Kind>::FLOORS,)* }
            }
            /// What the engine treats this kind as, beyond its decision.
            pub fn role(&self) -> KindRole {
                match self { $(PolicyKind::$variant => <$module::$ty as Kind>::ROLE,)* }
            }
        }
    };
}

registry! {
    /// Every episode at `full`, forever (the never-forget baseline).
    Full = "full" => full::Full, builtins ["full"];
    /// Drop the oldest closed episodes whole until under budget.
    Truncate = "truncate" => truncate::Truncate, builtins ["truncate"];
    /// An agent's own flat compaction (recorded or simulated).
    Flat = "flat" => flat::Flat, builtins ["opencode", "claude-code", "codex"];
    /// Tiers from pressure (with hysteresis) or from age alone.
    Progressive = "progressive" => progressive::Progressive, builtins ["age", "retention"];
    /// Magic Context's decay curve, re-tiering at folds.
    Decay = "decay" => decay::Decay, builtins ["decay"];
    /// Knows the probes: the lowest tier that still holds every needle.
    Oracle = "oracle" => oracle::Oracle, builtins ["oracle", "oracle-legal"];
}

impl std::fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

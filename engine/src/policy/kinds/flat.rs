//! `flat`: an agent's own flat compaction (MODEL §4; built-ins `opencode`, `claude-code`,
//! `codex`). One summary replaces the closed episodes before a kept tail; recorded prunes are
//! applied.
//!
//! Which trigger runs (`trigger` knob, [`Mode`]):
//! - `auto` (the default): with an explicit budget (`--budget`, the knobs panel, `experiment`,
//!   `diff`, `sweep`) it simulates the agent's compaction with **that budget as the usable
//!   limit**, so the flat policy is compared with the tiers at the same budget; without one it
//!   follows the recording.
//! - `recorded` follows the recording: from the request after a recorded summary call, the
//!   context shows that compaction's summary (and message), then the kept tail from
//!   `tail_start_id` (what the agent sent).
//! - `simulate` decides for itself at the budget if one is given, else at the model's usable
//!   limit by the agent's rule (`context_limit` / `max_output` override the table).
//!
//! Whose compaction is simulated (`rules` knob): the trace's own agent's (`trace`), or a named
//! agent's, as its adapter states them ([`crate::trace::flat_rules`]; OpenCode's by release in
//! [`crate::formats::opencode::flat_rules`], Claude Code's in
//! [`crate::formats::claude_code::to_trace::flat_rules`]):
//! - **trigger**: what is measured (the previous request's prompt + output, or the request about
//!   to be sent) and how it compares with the usable limit; after the previous request, the
//!   request that crossed was sent as it was — the cliff.
//! - **kept tail**: none, whole human turns newest first within a cap (the current one included,
//!   then the first suffix of the next turn that fits: OpenCode's `splitTurn`), or the last step.
//!   The knobs override the turn rule (`tail_turns` ≥ 0, `preserve_recent_max` > 0). Turns are
//!   measured with the replay's token counts.
//! - **the summary**: the recorded text where the trace has one (its next compaction, else its
//!   last), else `summary_tokens` of the covered episodes' compact tiers (an upper bound on what
//!   a written summary keeps); with a book of model-written summaries
//!   ([`crate::replay::written`]), the model's, asked with the agent's compaction prompt; the
//!   replay says which.
//! - **the call**: its own request, sized as the trace's agent builds it
//!   ([`compaction_call::simulated_history`]) and billed in the frame of the request it
//!   precedes. The recording's own summary calls are not made.
//! - **prune** of old tool outputs: the recorded prunes are applied (`apply_recorded_prunes`);
//!   OpenCode's prune thresholds (40,000 protected, 20,000 minimum) do not depend on the budget,
//!   so a simulation does not add prunes of its own.

use super::{Compacted, Decide, Kind, KindRole, RequestView, Setup};
use crate::episode::Tier;
use crate::policy::knobs::{choice, common, num, uint};
use crate::policy::{KnobSpec, Policy};
use crate::replay::compaction_call;
use crate::replay::limits;
use crate::replay::output::{CompactionRun, CutBy, Reason, SummaryPiece};
use crate::replay::prepare::Filter;
use crate::replay::state::State;
use crate::replay::written_request;
use crate::trace::flat_rules::{FlatRules, KeptTail, TriggerCount};

/// The `trigger` knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// Simulate at an explicit budget, else follow the recording.
    Auto,
    /// Where the recording did.
    Recorded,
    /// At the budget if given, else at the model's usable limit.
    Simulate,
}

/// What one pass does: the resolved trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    Recorded {
        why: &'static str,
    },
    Simulate {
        usable: u64,
        source: String,
        why: String,
    },
}

/// The typed knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Knobs {
    trigger: Trigger,
    /// Model context window for simulate; 0 = the model-limits table.
    context_limit: u64,
    /// Model output limit for simulate; 0 = the model-limits table.
    max_output: u64,
    /// `None`: the release's rule.
    tail_turns: Option<i64>,
    preserve_share: f64,
    preserve_min: u64,
    /// 0: the release's cap.
    preserve_max: u64,
    summary_tokens: u64,
    /// Whose compaction rules: `None` the trace's agent, else an adapter id.
    rules: Option<&'static str>,
}

/// The choices of the `rules` knob: `trace` (the trace's own agent), then every registered
/// agent's id (the registry is the one list: a new adapter is a choice here too).
pub(crate) fn rules_choices() -> &'static [&'static str] {
    static CHOICES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    CHOICES.get_or_init(|| {
        std::iter::once("trace")
            .chain(crate::formats::ADAPTERS.iter().map(|a| a.id()))
            .collect()
    })
}

impl Knobs {
    fn from_policy(p: &Policy) -> Knobs {
        let tail = p.num("tail_turns");
        Knobs {
            trigger: match p.choice("trigger") {
                "recorded" => Trigger::Recorded,
                "simulate" => Trigger::Simulate,
                _ => Trigger::Auto,
            },
            context_limit: uint(p.num("context_limit")),
            max_output: uint(p.num("max_output")),
            tail_turns: (tail >= 0.0).then_some(tail as i64),
            preserve_share: p.num("preserve_recent_share"),
            preserve_min: uint(p.num("preserve_recent_min")),
            preserve_max: uint(p.num("preserve_recent_max")),
            summary_tokens: uint(p.num("summary_tokens")),
            rules: rules_choices()
                .iter()
                .copied()
                .find(|c| *c == p.choice("rules"))
                .filter(|c| *c != "trace"),
        }
    }

    /// The compaction rules to simulate on `trace`.
    fn flat_rules(&self, trace: &crate::trace::Trace) -> FlatRules {
        let agent = self.rules.unwrap_or(trace.origin.agent);
        crate::trace::adapter::adapter(agent)
            .map(|a| a.flat_rules(trace))
            .unwrap_or_else(|| FlatRules::generic("the agent"))
    }
    fn mode(&self, setup: &Setup<'_, '_>, rules: &FlatRules) -> Mode {
        let explicit = setup.budget_source == "--budget";
        match (self.trigger, explicit) {
            (Trigger::Recorded, _) => Mode::Recorded {
                why: "trigger = recorded",
            },
            (Trigger::Auto, false) => Mode::Recorded {
                why: "no budget given: follows the recording",
            },
            (Trigger::Auto | Trigger::Simulate, true) => Mode::Simulate {
                usable: setup.budget,
                source: "the budget".into(),
                why: if self.trigger == Trigger::Auto {
                    format!(
                        "a budget is given: {}'s compaction with the budget as its usable limit",
                        rules.agent
                    )
                } else {
                    "trigger = simulate, at the budget".into()
                },
            },
            (Trigger::Simulate, false) => {
                let table = limits::limits_for(setup.prep.trace);
                let (context, csrc) = if self.context_limit > 0 {
                    (self.context_limit, "context_limit")
                } else {
                    (table.context, table.source.as_str())
                };
                let (output, osrc) = if self.max_output > 0 {
                    (self.max_output, "max_output")
                } else {
                    (table.output, table.source.as_str())
                };
                let source = if csrc == osrc {
                    format!("model: {csrc}")
                } else {
                    format!("model: {csrc}, {osrc}")
                };
                Mode::Simulate {
                    usable: rules.usable(context, output),
                    source,
                    why: "trigger = simulate, no budget: at the model's usable limit".into(),
                }
            }
        }
    }
}

/// The kept-tail rule of one simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Whole human turns within a token budget.
    Turns {
        /// Human turns that may be kept (`None`: all of them).
        turns: Option<usize>,
        /// Tokens the kept tail may hold.
        budget: u64,
    },
    /// The response the request follows, with its tool results.
    LastStep,
}

/// The agent's kept tail at `usable`, with the knobs' overrides (`None`: no kept tail). A
/// `tail_turns` knob ≥ 0 replaces the agent's rule with whole turns.
fn tail_rule(base: KeptTail, k: &Knobs, usable: u64) -> Option<Tail> {
    let (turns, cap) = match base {
        KeptTail::None => (Some(0), 0),
        KeptTail::Turns { turns, cap } => (turns, cap),
        KeptTail::LastStep if k.tail_turns.is_none() => return Some(Tail::LastStep),
        KeptTail::LastStep => (Some(0), 0),
    };
    let turns = match k.tail_turns {
        Some(n) => Some(n.max(0) as usize),
        None => turns,
    };
    if turns == Some(0) {
        return None;
    }
    let cap = if k.preserve_max > 0 {
        k.preserve_max
    } else {
        cap
    };
    let budget =
        ((usable as f64 * k.preserve_share) as u64).clamp(k.preserve_min, cap.max(k.preserve_min));
    Some(Tail::Turns { turns, budget })
}

pub(crate) struct Flat {
    knobs: Knobs,
    mode: Mode,
    tail: Option<Tail>,
    /// The agent's own size of each message, where it sizes the kept tail by it.
    /// Whether that agent's estimate applies, and the estimate, read at the first compaction
    /// (a replay that never compacts never serialises the messages for it).
    own_estimate: bool,
    tail_estimate: std::cell::OnceCell<Option<crate::trace::adapter::TailEstimate>>,
    /// Simulate: where the last summary was put (the request's position) and the summaries
    /// it shows, its own and earlier ones its tail kept.
    last_summary: Option<((usize, u32), Texts)>,
    rules: FlatRules,
    /// `recorded`: the recorded compaction shown now.
    in_effect: Option<usize>,
    /// Simulate: prompt + output of the conversation's last request.
    last_total: u64,
    /// Simulate: where the conversation's last request stood.
    last_pos: Option<(usize, u32)>,
    /// Requests from which a new summary is shown.
    shown_from: Vec<usize>,
    /// Simulate: where each summary's text came from.
    texts: Vec<String>,
    skipped_calls: u64,
    /// With model-written summaries: the first compaction's request the book does not answer.
    pending: Option<crate::replay::written::SummaryRequest>,
}

/// Summary texts shown in a context: recorded ones (compaction indices) and model-written ones
/// (the book's entries).
#[derive(Debug, Clone, Default)]
struct Texts {
    recorded: Vec<usize>,
    written: Vec<usize>,
}

impl Kind for Flat {
    const ROLE: KindRole = KindRole::Compaction;
    /// `recorded` follows the recording and reads none of the simulation's knobs; the model's
    /// limits matter only to `simulate` (with `auto`, the budget is the limit).
    fn reads(p: &Policy, name: &str) -> bool {
        match name {
            "context_limit" | "max_output" => p.choice("trigger") == "simulate",
            "tail_turns"
            | "preserve_recent_share"
            | "preserve_recent_min"
            | "preserve_recent_max"
            | "summary_tokens" => p.choice("trigger") != "recorded",
            _ => true,
        }
    }
    fn headline_knobs(_p: &Policy) -> &'static [&'static str] {
        &["trigger"]
    }
    /// The compaction's kept tail.
    fn sweep_pairs(_p: &Policy) -> &'static [(&'static str, &'static str)] {
        &[("preserve_recent_share", "tail_turns")]
    }
    fn specs() -> Vec<KnobSpec> {
        let mut v = common(true);
        v.extend([
            choice("trigger", "auto", &["auto", "recorded", "simulate"],
                "auto = simulate the agent's compaction with an explicit budget as its usable limit, else follow the recording; recorded = compact where the agent did; simulate = compact at the budget, else at the model's usable limit")
                .short("trig"),
            choice("rules", "trace", rules_choices(),
                "whose compaction a simulation follows: trace = the agent that recorded the trace; or an agent by name (its release's rules: trigger, kept tail, usable limit)"),
            num("context_limit", 0.0, 0.0, 10_000_000.0, 1000.0,
                "model context window in tokens for simulate without a budget; 0 = the model-limits table"),
            num("max_output", 0.0, 0.0, 1_000_000.0, 1000.0,
                "model output limit in tokens for simulate without a budget; 0 = the model-limits table"),
            num("tail_turns", -1.0, -1.0, 100.0, 1.0,
                "simulate: keep at most the last N human turns after a compaction; 0 = no kept tail; -1 = the agent's rule (OpenCode: none before 1.14.19, 2 until 1.18.24, all after; Claude Code: the last step)"),
            num("preserve_recent_share", 0.25, 0.0, 1.0, 0.05,
                "simulate: the kept tail holds at most this share of the usable limit"),
            num("preserve_recent_min", 2000.0, 0.0, 1_000_000.0, 500.0,
                "simulate: lower clamp of the kept tail in tokens"),
            num("preserve_recent_max", 0.0, 0.0, 1_000_000.0, 500.0,
                "simulate: upper clamp of the kept tail in tokens; 0 = the agent's (OpenCode: 8,000 until 1.18.24, 15,000 after)"),
            num("summary_tokens", 2000.0, 0.0, 100_000.0, 100.0,
                "simulate, where the trace has no recorded summary: tokens of compact tiers that stand in for one"),
        ]);
        v
    }
    fn check(p: &Policy) -> Result<(), String> {
        let max = p.num("preserve_recent_max");
        if max > 0.0 && p.num("preserve_recent_min") > max {
            return Err("knobs must satisfy preserve_recent_min <= preserve_recent_max".into());
        }
        Ok(())
    }
    fn filter(p: &Policy, explicit_budget: bool) -> Filter {
        // A simulation renders the counterfactual: no recorded compaction artefact.
        match (Knobs::from_policy(p).trigger, explicit_budget) {
            (Trigger::Recorded, _) | (Trigger::Auto, false) => Filter::Recorded,
            (Trigger::Simulate, _) | (Trigger::Auto, true) => Filter::NoArtefacts,
        }
    }
    fn build(p: &Policy, setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        let knobs = Knobs::from_policy(p);
        let rules = knobs.flat_rules(setup.prep.trace);
        let mode = knobs.mode(setup, &rules);
        let tail = match &mode {
            Mode::Simulate { usable, .. } => tail_rule(rules.tail, &knobs, *usable),
            Mode::Recorded { .. } => None,
        };
        // The agent whose rules run sizes its kept tail by its own estimate, where it has one
        // (and the trace is that agent's: the estimate reads its messages).
        let own_estimate = tail.is_some()
            && crate::trace::adapter::adapter(setup.prep.trace.origin.agent)
                .is_some_and(|a| a.name() == rules.agent);
        Box::new(Flat {
            knobs,
            mode,
            tail,
            own_estimate,
            tail_estimate: std::cell::OnceCell::new(),
            last_summary: None,
            rules,
            in_effect: None,
            last_total: 0,
            last_pos: None,
            shown_from: Vec::new(),
            texts: Vec::new(),
            skipped_calls: 0,
            pending: None,
        })
    }
}

impl Decide for Flat {
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        match self.mode {
            Mode::Recorded { .. } => {
                self.follow_recording(st, rq.t);
                None
            }
            Mode::Simulate { usable, .. } => {
                if rq.req.synthetic_call {
                    self.skipped_calls += 1;
                    return None;
                }
                let count = match self.rules.count {
                    TriggerCount::PreviousTotal => self.last_total,
                    TriggerCount::PreviousTotalPlusEstimate { bytes_per_token } => {
                        let since = self.last_pos.unwrap_or((0, 0));
                        self.last_total
                            + bytes_between(st.p, since, rq.req.position()) / bytes_per_token.max(1)
                    }
                    // What the request would send before any compaction.
                    TriggerCount::NextRequest => rq.base + st.summary_tokens() + st.applied_sum(),
                };
                if !self.rules.fires(count, usable) || st.closed_count() == 0 {
                    return None;
                }
                let c = self.compact(st, rq)?;
                self.shown_from.push(rq.t);
                self.texts.push(compaction_call::text_source(st.p, &c));
                Some(c)
            }
        }
    }
    fn after(&mut self, _st: &State<'_, '_>, rq: &RequestView<'_>, tokens: u64) {
        if !rq.req.synthetic_call {
            self.last_total = tokens + rq.req.usage.output;
            self.last_pos = Some(rq.req.position());
        }
    }
    /// The agent's own summary calls are part of what it does, not a side call to hold through.
    fn holds_through_summary_calls(&self) -> bool {
        false
    }
    fn skips_recorded_summary_calls(&self) -> bool {
        matches!(self.mode, Mode::Simulate { .. })
    }
    fn reports_after_pass(&self) -> bool {
        true
    }
    fn note(&self) -> Option<String> {
        self.compaction_run().map(|r| r.describe())
    }
    fn compaction_run(&self) -> Option<CompactionRun> {
        Some(match &self.mode {
            Mode::Recorded { why } => CompactionRun {
                trigger: "recorded".into(),
                why: (*why).into(),
                usable_limit: None,
                limit_source: None,
                tail: None,
                compactions: self.shown_from.clone(),
                summary_text: Vec::new(),
                recorded_calls_skipped: 0,
                pending_summary: None,
            },
            Mode::Simulate {
                usable,
                source,
                why,
            } => CompactionRun {
                trigger: "simulate".into(),
                why: why.clone(),
                usable_limit: Some(*usable),
                limit_source: Some(source.clone()),
                tail: Some(match self.tail {
                    None => "none (everything before the request is summarised)".into(),
                    Some(Tail::Turns { turns, budget }) => format!(
                        "{} within {budget} tokens",
                        match turns {
                            Some(n) => format!("the last {n} human turns"),
                            None => "every turn".into(),
                        },
                    ),
                    Some(Tail::LastStep) => {
                        "the last step (the response the request follows, its tool results)".into()
                    }
                }),
                compactions: self.shown_from.clone(),
                summary_text: self.texts.clone(),
                recorded_calls_skipped: self.skipped_calls,
                pending_summary: self.pending.clone(),
            },
        })
    }
}

impl Flat {
    /// `trigger = recorded`: from the request after a recorded summary call, show its
    /// compaction message and summary, then the kept tail from `tail_start_id`.
    fn follow_recording(&mut self, st: &mut State<'_, '_>, t: usize) {
        let p = st.p;
        let Some(ci) = p
            .trace
            .compactions
            .iter()
            .rposition(|c| c.summary_request.is_some_and(|s| s < t))
        else {
            return;
        };
        if self.in_effect == Some(ci) {
            return;
        }
        self.in_effect = Some(ci);
        self.shown_from.push(t);
        let (start, msgs) = p.recorded_summary(ci);
        let text: String = msgs
            .iter()
            .flat_map(|&m| p.message_chunks(m).map(|c| c.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        let tokens = msgs.iter().map(|&m| p.message_tokens(m)).sum();
        st.set_summary(SummaryPiece::Recorded { compaction: ci }, tokens);
        replace_before(st, start, &text);
    }

    /// Where the kept tail starts: (episode, first included full-tier chunk), newest turn
    /// first, the current one included; `None`: nothing is kept before the request.
    fn tail_start(&self, st: &State<'_, '_>, rq: &RequestView<'_>) -> Option<(usize, usize)> {
        let (turns, budget) = match self.tail? {
            Tail::LastStep => return last_step_start(st, rq),
            Tail::Turns { turns, budget } => (turns, budget),
        };
        let p = st.p;
        let msg = rq.rq.msg;
        let turn_start = match turns {
            None => 0,
            Some(n) => {
                let humans: Vec<usize> = p
                    .trace
                    .messages
                    .iter()
                    .enumerate()
                    .filter(|(i, m)| *i < msg && m.user_kind == Some(crate::trace::UserKind::Human))
                    .map(|(i, _)| i)
                    .collect();
                humans.len().checked_sub(n).map_or(0, |i| humans[i])
            }
        };
        let active = rq.rq.active;
        let n = st.episode_count();
        let mut room = budget;
        let mut kept = None;
        // Newest first: the active episode's shown part, then the closed episodes.
        let mut e = if active < n {
            active
        } else {
            st.closed_count()
        };
        loop {
            let closed = e < st.closed_count();
            if closed && st.applied(e) == Tier::Dropped {
                break;
            }
            let Some(td) = p
                .tier_data_at(e, Tier::Full)
                .filter(|_| !closed || st.applied(e) == Tier::Full)
            else {
                break;
            };
            let from = st.cut(e);
            let end = if closed {
                td.len()
            } else {
                st.active_count(e, rq.rq.pos)
            };
            // Chunks `a..end` of this episode as the agent sizes them: its own estimate of the
            // messages they lie in, else the model's tokens.
            let estimate = self.tail_estimate.get_or_init(|| {
                self.own_estimate
                    .then(|| crate::trace::adapter::adapter(p.trace.origin.agent))
                    .flatten()
                    .and_then(|a| a.tail_estimate(p.trace))
            });
            let size = |a: usize| match estimate {
                Some(est) if a < end => {
                    let units: u64 = est
                        .message_units
                        .get(td.pos[a].0..=td.pos[end - 1].0)
                        .map_or(0, |u| u.iter().sum());
                    (est.to_tokens)(units)
                }
                Some(_) => 0,
                None => td.prefix[end] - td.prefix[a.min(end)],
            };
            if p.episodes[e].first_message >= turn_start || e == active {
                let whole = size(from.min(end));
                if whole <= room && p.episodes[e].first_message >= turn_start {
                    room -= whole;
                    kept = Some((e, from));
                } else {
                    // The first suffix of this turn that starts at a message and fits.
                    let split = (from + 1..end)
                        .find(|&i| td.pos[i].0 != td.pos[i - 1].0 && size(i) <= room);
                    if let Some(i) = split {
                        kept = Some((e, i));
                    }
                    break;
                }
            } else {
                break;
            }
            if e == 0 {
                break;
            }
            e -= 1;
        }
        kept
    }

    /// Compact now: one summary replaces everything before the kept tail. Returns the
    /// simulated summary call, if anything was compacted.
    fn compact(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        let p = st.p;
        let k = &self.knobs;
        let active = rq.rq.active;
        let n = st.episode_count();
        // (first kept episode, its first kept chunk); without a tail the request's own
        // position: everything before it goes.
        let (keep_e, keep_chunk) = match self.tail_start(st, rq) {
            Some(x) => x,
            None if active < n => (active, st.active_count(active, rq.rq.pos)),
            None => (st.closed_count(), 0),
        };
        let covers: Vec<usize> = (0..keep_e.min(st.closed_count())).collect();
        // The head of the first kept episode (a split turn) goes into the summary too.
        let split_head = if keep_chunk > st.cut(keep_e.min(n.saturating_sub(1))) && keep_e < n {
            p.tier_data_at(keep_e, Tier::Full).map_or(0, |td| {
                td.prefix[keep_chunk.min(td.len())] - td.prefix[st.cut(keep_e).min(td.len())]
            })
        } else {
            0
        };
        if split_head == 0 && covers.iter().all(|&e| st.applied(e) == Tier::Dropped) {
            return None;
        }
        // The summary call sees the history as this release built it, before the summary
        // replaces it.
        let view = rq.base - rq.rq.sys_tokens + st.summary_tokens() + st.applied_sum();
        let mut covered: Vec<(u64, f64)> = covers
            .iter()
            .map(|&e| (st.ep_tokens(e), p.compaction_keep[e]))
            .collect();
        if split_head > 0 {
            covered.push((split_head, p.compaction_keep[keep_e]));
        }
        let history = compaction_call::simulated_history(
            p.compaction.shape,
            view,
            st.summary_tokens(),
            &covered,
        );
        let trace = p.trace;
        // The n-th compaction takes the n-th recorded summary (at the recorded limits it
        // fires where the agent did, one request after its call); past the recorded ones, the
        // last recorded summary stands in for its size.
        let text_from = (self.shown_from.len() < trace.compactions.len())
            .then_some(self.shown_from.len())
            .or_else(|| trace.compactions.len().checked_sub(1));
        // The episodes the new summary stands for: the covered ones and a split turn's.
        let mut summarised = covers.clone();
        if split_head > 0 {
            summarised.push(keep_e);
        }
        // A model's summary where the replay has one for this request; the first request
        // it lacks is reported, and a stand-in takes its place in this pass.
        let written = p.summaries.and_then(|book| {
            let covered = written_request::Covered {
                episodes: &covers,
                split: (split_head > 0).then_some((keep_e, keep_chunk)),
            };
            let req = written_request::build(st, rq, book, self.shown_from.len() + 1, &covered);
            let found = book.find(&req.hash);
            if found.is_none() && self.pending.is_none() {
                self.pending = Some(req);
            }
            found.and_then(|w| Some((w, book.get(w)?)))
        });
        let text_from = text_from.filter(|_| written.is_none());
        let (mut tokens, text, shown) = match (written, text_from) {
            (Some((_, w)), _) => (w.tokens, w.text.clone(), Vec::new()),
            (None, Some(ci)) => {
                let c = &trace.compactions[ci];
                let ms = trace.compaction_message_indices(c);
                (
                    ms.iter().map(|&m| p.message_tokens(m)).sum::<u64>(),
                    c.summary_text.clone(),
                    Vec::new(),
                )
            }
            (None, None) => compact_tier_summary(st, &summarised, k.summary_tokens),
        };
        let written = written.map(|(w, _)| w);
        // Where the kept tail starts; an earlier summary after that point stays in it, sent in
        // place as the agent sends it (the piece puts it after the new one, as for recorded
        // compactions).
        let tail_from = if keep_e < n {
            p.tier_data_at(keep_e, Tier::Full)
                .and_then(|td| td.pos.get(keep_chunk).copied())
                .unwrap_or(rq.rq.pos)
        } else {
            rq.rq.pos
        };
        let kept = match &self.last_summary {
            Some((at, earlier)) if *at > tail_from => earlier.clone(),
            _ => Texts::default(),
        };
        tokens += kept
            .recorded
            .iter()
            .filter_map(|&ci| trace.compactions.get(ci))
            .flat_map(|c| trace.compaction_message_indices(c))
            .map(|m| p.message_tokens(m))
            .sum::<u64>();
        tokens += kept
            .written
            .iter()
            .filter_map(|&w| p.summaries.and_then(|b| b.get(w)))
            .map(|w| w.tokens)
            .sum::<u64>();
        let mut in_tail_later = kept.clone();
        in_tail_later.recorded.extend(text_from);
        in_tail_later.written.extend(written);
        self.last_summary = Some((rq.rq.pos, in_tail_later));
        st.set_summary(
            SummaryPiece::Simulated {
                number: self.shown_from.len() + 1,
                covers: covers.clone(),
                shown,
                text_from,
                kept_earlier: kept.recorded,
                written,
                kept_written: kept.written,
                tokens,
            },
            tokens,
        );
        for e in covers {
            st.summarise(e, missing_pins(st, e, &text), Reason::Compaction);
        }
        if keep_e < n && keep_chunk > st.cut(keep_e) {
            st.set_cut(keep_e, keep_chunk, CutBy::Summary);
        }
        Some(Compacted {
            history,
            text_from,
            written,
        })
    }
}

/// Bytes of the full-tier text between two positions (from included, to excluded): what an
/// agent adds to its estimate between two requests.
fn bytes_between(
    p: &crate::replay::prepare::Prep<'_>,
    from: (usize, u32),
    to: (usize, u32),
) -> u64 {
    let first = p.episodes.partition_point(|e| e.last_message < from.0);
    let mut sum = 0u64;
    for e in &p.episodes[first..] {
        if e.first_message > to.0 {
            break;
        }
        let Some(rep) = e.representation(Tier::Full) else {
            continue;
        };
        sum += rep
            .chunks
            .iter()
            .filter(|c| c.position() >= from && c.position() < to)
            .map(|c| c.text.len() as u64)
            .sum::<u64>();
    }
    sum
}

/// Where the last step starts: the response before the request (not a summary), as (episode,
/// first included full-tier chunk); `None` when it is not shown at full.
fn last_step_start(st: &State<'_, '_>, rq: &RequestView<'_>) -> Option<(usize, usize)> {
    let p = st.p;
    let m = (0..rq.rq.msg)
        .rev()
        .find(|&i| p.trace.messages[i].is_assistant() && !p.trace.messages[i].summary)?;
    let e = p.episodes.partition_point(|ep| ep.last_message < m);
    if e >= st.episode_count() || (e < st.closed_count() && st.applied(e) != Tier::Full) {
        return None;
    }
    let td = p.tier_data_at(e, Tier::Full)?;
    Some((e, td.pos.partition_point(|x| x.0 < m).max(st.cut(e))))
}

/// A summary built deterministically from compact tiers: the newest of `summarised` whose
/// compact tiers fit within `cap` tokens together (the newest one always): (tokens, text,
/// episodes shown, oldest first).
fn compact_tier_summary(
    st: &State<'_, '_>,
    summarised: &[usize],
    cap: u64,
) -> (u64, String, Vec<usize>) {
    let p = st.p;
    let mut shown = Vec::new();
    let mut tokens = 0u64;
    for &e in summarised.iter().rev() {
        let t = st.tokens_at(e, Tier::Compact, None);
        if !shown.is_empty() && tokens + t > cap {
            break;
        }
        tokens += t;
        shown.push(e);
    }
    shown.reverse();
    let text = shown
        .iter()
        .filter_map(|&e| p.episodes[e].representation(p.effective(e, Tier::Compact)))
        .map(|r| r.text())
        .collect::<Vec<_>>()
        .join("\n");
    (tokens, text, shown)
}

/// Pinned spans of `e` that `text` lacks.
fn missing_pins(st: &State<'_, '_>, e: usize, text: &str) -> u64 {
    st.p.episodes[e]
        .pins
        .iter()
        .filter(|p| !text.contains(p.text.as_str()))
        .count() as u64
}

/// Drop every episode wholly before message `start` (replaced by the summary `text`) and cut
/// the one that straddles it.
fn replace_before(st: &mut State<'_, '_>, start: usize, text: &str) {
    let p = st.p;
    let limit = (st.closed_count() + 1).min(st.episode_count());
    for e in 0..limit {
        let ep = &p.episodes[e];
        if ep.last_message < start {
            let missing = missing_pins(st, e, text);
            st.summarise(e, missing, Reason::Compaction);
            if e >= st.closed_count() {
                // The active episode lies wholly before the tail: nothing of it is shown.
                st.cut_before(e, start, CutBy::Summary);
            }
        } else {
            st.cut_before(e, start, CutBy::Summary);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(tail_turns: Option<i64>, preserve_max: u64) -> Knobs {
        Knobs {
            trigger: Trigger::Auto,
            context_limit: 0,
            max_output: 0,
            tail_turns,
            preserve_share: 0.25,
            preserve_min: 2000,
            preserve_max,
            summary_tokens: 2000,
            rules: None,
        }
    }

    const ANCHORED: KeptTail = KeptTail::Turns {
        turns: Some(2),
        cap: 8_000,
    };
    const TEXT: KeptTail = KeptTail::Turns {
        turns: None,
        cap: 15_000,
    };

    #[test]
    fn the_kept_tail_follows_the_agent_unless_a_knob_says_otherwise() {
        let k = knobs(None, 0);
        // No kept tail before 1.14.19.
        assert_eq!(tail_rule(KeptTail::None, &k, 100_000), None);
        // 1.14.19–1.18.24: 2 turns within min(8000, max(2000, usable/4)).
        assert_eq!(
            tail_rule(ANCHORED, &k, 100_000),
            Some(Tail::Turns {
                turns: Some(2),
                budget: 8_000
            })
        );
        assert_eq!(
            tail_rule(ANCHORED, &k, 4_000),
            Some(Tail::Turns {
                turns: Some(2),
                budget: 2_000
            })
        );
        // 1.18.25+: every turn within min(15000, …); E2's 11,000 usable → 2,750.
        assert_eq!(
            tail_rule(TEXT, &k, 11_000),
            Some(Tail::Turns {
                turns: None,
                budget: 2_750
            })
        );
        assert_eq!(
            tail_rule(TEXT, &k, 100_000),
            Some(Tail::Turns {
                turns: None,
                budget: 15_000
            })
        );
        // Knobs override: a tail where the release had none, no tail, another cap.
        assert_eq!(
            tail_rule(KeptTail::None, &knobs(Some(3), 5_000), 100_000),
            Some(Tail::Turns {
                turns: Some(3),
                budget: 5_000
            })
        );
        assert_eq!(tail_rule(TEXT, &knobs(Some(0), 0), 100_000), None);
        // The last step, unless a knob asks for turns.
        assert_eq!(
            tail_rule(KeptTail::LastStep, &k, 100_000),
            Some(Tail::LastStep)
        );
        assert_eq!(
            tail_rule(KeptTail::LastStep, &knobs(Some(1), 0), 100_000),
            Some(Tail::Turns {
                turns: Some(1),
                budget: 2_000
            })
        );
    }

    fn policy(set: &[(&str, &str)]) -> Policy {
        let kv: Vec<(String, String)> = set
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        crate::policy::load("opencode", &kv).expect("policy")
    }

    #[test]
    fn auto_simulates_only_under_an_explicit_budget() {
        let s = crate::replay::synth::generate(&crate::replay::synth::SynthSpec {
            requests: 120,
            episodes: 24,
            ..Default::default()
        });
        let input = s.input();
        let full = crate::replay::replay(&input, &crate::policy::load("full", &[]).unwrap(), None);
        let peak = full.frames.iter().map(|f| f.tokens).max().unwrap();
        let budget = peak / 2;
        let auto = crate::replay::replay(&input, &policy(&[]), Some(budget));
        let run = auto.policy.compaction.clone().expect("reported");
        assert_eq!(run.trigger, "simulate");
        assert_eq!(run.usable_limit, Some(budget));
        let at: Vec<usize> = auto
            .frames
            .iter()
            .filter(|f| f.compaction)
            .map(|f| f.request)
            .collect();
        assert!(!at.is_empty());
        assert_eq!(run.compactions, at);
        // Every compaction follows a request that reached the limit; every request that did
        // (and had something to compact) is followed by one.
        for &t in &at {
            let prev = &auto.frames[t - 1];
            assert!(prev.tokens + s.trace.requests[t - 1].usage.output >= budget);
        }
        // A compaction's call is billed in its frame: per session = Σ per request.
        let sum: f64 = auto.frames.iter().map(|f| f.cost).sum();
        assert!((auto.summary.cost - sum).abs() < 1e-12);
        for f in auto.frames.iter().filter(|f| f.compaction) {
            let c = f.compaction_call.as_ref().unwrap();
            assert_eq!(c.summary_text, "compact-tiers");
            assert!(c.output > 0 && c.output <= 2_000 + 1_000, "{c:?}");
        }
        // Without a budget it follows the recording (no compaction in a generated trace).
        let none = crate::replay::replay(&input, &policy(&[]), None);
        assert_eq!(none.policy.compaction.unwrap().trigger, "recorded");
        assert!(none.frames.iter().all(|f| !f.compaction));
        // Deterministic.
        assert_eq!(
            auto,
            crate::replay::replay(&input, &policy(&[]), Some(budget))
        );
    }
}

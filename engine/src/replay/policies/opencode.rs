//! `opencode`: OpenCode's flat compaction (MODEL §4). One summary replaces the closed episodes
//! before a kept tail; recorded prunes are applied.
//!
//! - `trigger = recorded` follows the recording: from the request after a recorded summary
//!   call, the context shows that compaction's message and summary, then the kept tail from
//!   `tail_start_id` (what OpenCode sent).
//! - `trigger = simulate` decides for itself: it compacts when the rendered context reaches the
//!   usable limit (context − min(output, 32,000)); the summary is the recorded text where the
//!   trace has one, else `summary_tokens` of compact tiers; the kept tail is the last
//!   `tail_turns` human turns within `preserve_recent_*`; at most one compaction per request.
//!   Each compaction is a summary call of its own, sized as the trace's release would have built
//!   it ([`compaction_call::simulated_history`]) and priced into the run's cost.
//!
//! The file is split so that a trigger is one function ([`OpenCode::due`]) and a compaction
//! another ([`OpenCode::compact`]): a trigger against an explicit budget is a new [`Trigger`]
//! arm, not a new pass.

use super::{Compacted, Decide, Kind, RequestView, Setup};
use crate::episode::Tier;
use crate::policy::kinds::{choice, common, num, uint};
use crate::policy::{KnobSpec, Policy};
use crate::replay::compaction_call;
use crate::replay::limits::{self, OUTPUT_TOKEN_MAX};
use crate::replay::prepare::Filter;
use crate::replay::state::State;
use crate::replay::types::{Reason, SummaryPiece};

/// When OpenCode compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// Where the recording did.
    Recorded,
    /// When the rendered context reaches the usable limit.
    Simulate,
}

/// The typed knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Knobs {
    trigger: Trigger,
    /// Model context window for simulate; 0 = the model-limits table.
    context_limit: u64,
    /// Model output limit for simulate; 0 = the model-limits table.
    max_output: u64,
    tail_turns: usize,
    preserve_share: f64,
    preserve_min: u64,
    preserve_max: u64,
    summary_tokens: u64,
}

impl Knobs {
    fn from_policy(p: &Policy) -> Knobs {
        Knobs {
            trigger: if p.choice("trigger") == "simulate" {
                Trigger::Simulate
            } else {
                Trigger::Recorded
            },
            context_limit: uint(p.num("context_limit")),
            max_output: uint(p.num("max_output")),
            tail_turns: uint(p.num("tail_turns")) as usize,
            preserve_share: p.num("preserve_recent_share"),
            preserve_min: uint(p.num("preserve_recent_min")),
            preserve_max: uint(p.num("preserve_recent_max")),
            summary_tokens: uint(p.num("summary_tokens")),
        }
    }
}

pub(crate) struct OpenCode {
    knobs: Knobs,
    /// The usable limit simulate compacts at.
    usable: u64,
    /// `trigger = recorded`: the recorded compaction shown now.
    in_effect: Option<usize>,
    /// `trigger = simulate`: compactions so far.
    simulated: usize,
}

impl Kind for OpenCode {
    fn specs() -> Vec<KnobSpec> {
        let mut v = common(true);
        v.extend([
            choice("trigger", "recorded", &["recorded", "simulate"],
                "recorded = compact where OpenCode did and render what it sent; simulate = compact when tokens reach the usable limit"),
            num("context_limit", 0.0, 0.0, 10_000_000.0, 1000.0,
                "model context window in tokens for simulate; 0 = the model-limits table"),
            num("max_output", 0.0, 0.0, 1_000_000.0, 1000.0,
                "model output limit in tokens for simulate; 0 = the model-limits table"),
            num("tail_turns", 2.0, 0.0, 100.0, 1.0,
                "simulate: keep at most the last N human turns verbatim after a compaction"),
            num("preserve_recent_share", 0.25, 0.0, 1.0, 0.05,
                "simulate: the kept tail holds at most this share of the usable limit"),
            num("preserve_recent_min", 2000.0, 0.0, 1_000_000.0, 500.0,
                "simulate: lower clamp of the kept tail in tokens"),
            num("preserve_recent_max", 8000.0, 0.0, 1_000_000.0, 500.0,
                "simulate: upper clamp of the kept tail in tokens"),
            num("summary_tokens", 2000.0, 0.0, 100_000.0, 100.0,
                "simulate, where the trace has no recorded summary: tokens of compact tiers that stand in for one"),
        ]);
        v
    }
    fn check(p: &Policy) -> Result<(), String> {
        if p.num("preserve_recent_min") > p.num("preserve_recent_max") {
            return Err("knobs must satisfy preserve_recent_min <= preserve_recent_max".into());
        }
        Ok(())
    }
    fn filter(p: &Policy) -> Filter {
        match Knobs::from_policy(p).trigger {
            Trigger::Recorded => Filter::Recorded,
            Trigger::Simulate => Filter::NoArtefacts,
        }
    }
    fn build(p: &Policy, setup: &Setup<'_, '_>) -> Box<dyn Decide> {
        let knobs = Knobs::from_policy(p);
        let table = limits::limits_for(setup.prep.trace);
        let context = if knobs.context_limit > 0 {
            knobs.context_limit
        } else {
            table.context
        };
        let output = if knobs.max_output > 0 {
            knobs.max_output
        } else {
            table.output
        };
        Box::new(OpenCode {
            knobs,
            usable: context.saturating_sub(output.min(OUTPUT_TOKEN_MAX)),
            in_effect: None,
            simulated: 0,
        })
    }
}

impl Decide for OpenCode {
    fn decide(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        match self.knobs.trigger {
            Trigger::Recorded => {
                self.follow_recording(st, rq.t);
                None
            }
            Trigger::Simulate => {
                if !self.due(st, rq) {
                    return None;
                }
                self.compact(st, rq)
            }
        }
    }
    /// OpenCode's own summary calls are part of what it does, not a side call to hold through.
    fn holds_through_summary_calls(&self) -> bool {
        false
    }
}

impl OpenCode {
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

    /// `trigger = simulate`: whether the rendered context has reached the usable limit.
    fn due(&self, st: &State<'_, '_>, rq: &RequestView<'_>) -> bool {
        rq.base + st.summary_tokens() + st.applied_sum() >= self.usable && st.k() > 0
    }

    /// Compact now: one summary replaces the closed episodes before the kept tail. Returns the
    /// simulated summary call, if anything was compacted.
    fn compact(&mut self, st: &mut State<'_, '_>, rq: &RequestView<'_>) -> Option<Compacted> {
        let p = st.p;
        let k = &self.knobs;
        let t = rq.t;
        let preserve = ((self.usable as f64 * k.preserve_share) as u64)
            .clamp(k.preserve_min, k.preserve_max.max(k.preserve_min));
        // The tail_turns-th last human turn before this request.
        let msg = rq.rq.msg;
        let humans: Vec<usize> = p
            .trace
            .messages
            .iter()
            .enumerate()
            .filter(|(i, m)| *i < msg && m.user_kind == Some(crate::trace::UserKind::Human))
            .map(|(i, _)| i)
            .collect();
        let turn_start = if k.tail_turns == 0 {
            msg
        } else {
            humans
                .len()
                .checked_sub(k.tail_turns)
                .map_or(0, |i| humans[i])
        };
        let mut keep_from = st.k();
        let mut cum = 0u64;
        while keep_from > 0 {
            let e = keep_from - 1;
            if st.applied(e) == Tier::Dropped
                || p.episodes[e].first_message < turn_start
                || cum + st.ep_tokens(e) > preserve
            {
                break;
            }
            cum += st.ep_tokens(e);
            keep_from -= 1;
        }
        let covers: Vec<usize> = (0..keep_from).collect();
        if covers.iter().all(|&e| st.applied(e) == Tier::Dropped) {
            return None;
        }
        // The summary call sees the history as this release built it, before the summary
        // replaces it.
        let view = rq.base - rq.rq.sys_tokens + st.summary_tokens() + st.applied_sum();
        let covered: Vec<(u64, f64)> = covers
            .iter()
            .map(|&e| (st.ep_tokens(e), p.compaction_keep[e]))
            .collect();
        let call = Compacted {
            history: compaction_call::simulated_history(
                p.compaction.shape,
                view,
                st.summary_tokens(),
                &covered,
            ),
        };
        let trace = p.trace;
        let text_from = trace
            .compactions
            .iter()
            .position(|c| c.summary_request.is_some_and(|s| s >= t))
            .or_else(|| trace.compactions.len().checked_sub(1));
        let (tokens, text) = match text_from {
            Some(ci) => {
                let c = &trace.compactions[ci];
                let ms = trace.compaction_message_indices(c);
                (
                    ms.iter().map(|&m| p.message_tokens(m)).sum::<u64>(),
                    c.summary_text.clone(),
                )
            }
            None => {
                let mut tok = 0u64;
                let mut text = String::new();
                for &e in &covers {
                    if tok >= k.summary_tokens {
                        break;
                    }
                    tok += st.tokens_at(e, Tier::Compact, None);
                    if let Some(r) = p.episodes[e].representation(p.effective(e, Tier::Compact)) {
                        text.push_str(&r.text());
                        text.push('\n');
                    }
                }
                (tok.min(k.summary_tokens), text)
            }
        };
        self.simulated += 1;
        st.set_summary(
            SummaryPiece::Simulated {
                number: self.simulated,
                covers: covers.clone(),
                text_from,
                tokens,
            },
            tokens,
        );
        for e in covers {
            st.summarise(e, missing_pins(st, e, &text), Reason::Compaction);
        }
        Some(call)
    }
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
    let limit = (st.k() + 1).min(st.n());
    for e in 0..limit {
        let ep = &p.episodes[e];
        if ep.last_message < start {
            let missing = missing_pins(st, e, text);
            st.summarise(e, missing, Reason::Compaction);
            if e >= st.k() {
                // The active episode lies wholly before the tail: nothing of it is shown.
                st.cut_before(e, start);
            }
        } else {
            st.cut_before(e, start);
        }
    }
}

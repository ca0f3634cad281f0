//! A compaction (summary) call in the replay: its own request as the agent built it (its adapter's
//! [`crate::trace::adapter::Adapter::summary_calls`]), not the conversation's context. OpenCode,
//! for one, sends the compaction agent its own system prompt, no tools and (by release) the
//! history clipped or as one text, so the call is sized from the builder's count plus the
//! compaction agent's system chunk, and priced like every request.

use super::cache_cost::{price_request, Price};
use super::output::{CompactionCallCost, TierStat, TierStats};
use super::prepare::Prep;
use crate::episode::{Episode, Tier};
use crate::policy::kinds::Compacted;
use crate::trace::model::CompactionShape;
use crate::trace::summary_call::CompactionCall;
use crate::trace::Trace;

/// What a recorded summary call sent in the replay, beside its system chunk: the one answer
/// both the pass (which sizes it) and `render` (which prints it) read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RecordedCall<'a> {
    /// The policy compacts on its own and does not make the recording's call: nothing sent.
    NotMade,
    /// Built by the agent's adapter as the agent sent it.
    Built(&'a CompactionCall),
    /// The conversation's own request with the instruction appended: the recorded history
    /// before `until` (message, step), then the fixed instruction.
    Continues { until: (usize, u32) },
}

impl RecordedCall<'_> {
    /// Tokens besides the system chunk (`call_tokens`: the prepared count of the call).
    pub(crate) fn tokens(&self, call_tokens: u64) -> u64 {
        match self {
            RecordedCall::NotMade => 0,
            RecordedCall::Built(_) | RecordedCall::Continues { .. } => call_tokens,
        }
    }
}

/// The recorded summary call at request `t`, if `t` is one the agent built or continued (a
/// call sized neither way is rendered like any request, from the conversation).
pub(crate) fn recorded_call<'a>(
    p: &Prep<'a>,
    t: usize,
    not_made: bool,
) -> Option<(RecordedCall<'a>, u64)> {
    let req = p.trace.requests.get(t)?;
    if !req.synthetic_call {
        return None;
    }
    if not_made {
        return Some((RecordedCall::NotMade, 0));
    }
    let call_tokens = p.reqs.get(t)?.call_tokens?;
    let call = match p.compaction.call(t) {
        Some(c) => RecordedCall::Built(c),
        None => RecordedCall::Continues {
            until: p.continued_history_end(t)?,
        },
    };
    Some((call, call_tokens))
}

/// Divergence of a built call from the previous call of its conversation (`prev`: its system
/// key and tokens): the shared system chunk. After the previous call as the agent built it, the
/// pass adds the text both calls begin with (`CompactionCall::shared_with_previous`).
pub(crate) fn divergence(prev: &Option<(u64, u64)>, sys_key: u64, sys: u64, tokens: u64) -> u64 {
    match prev {
        Some((key, prev_tokens)) if *key == sys_key => sys.min(*prev_tokens).min(tokens),
        _ => 0,
    }
}

/// What a summary call that continues the conversation shares with the conversation's previous
/// request (`prev`: its system key and tokens): the history they both sent, up to where the
/// call's instruction starts (`history`: the call's tokens before it).
pub(crate) fn shared_with_conversation(
    prev: &Option<(u64, u64)>,
    sys_key: u64,
    history: u64,
) -> u64 {
    match prev {
        Some((key, prev_tokens)) if *key == sys_key => (*prev_tokens).min(history),
        _ => 0,
    }
}

/// Tier figures of a built call: its history once, in full.
pub(crate) fn tiers(call_tokens: u64) -> TierStats {
    TierStats {
        full: TierStat {
            count: 1,
            tokens: call_tokens,
        },
        ..TierStats::default()
    }
}

/// Share of an episode's full-tier characters that a compaction call of the trace's release
/// shows: 1.0 where its calls send tool outputs whole; where they clip them
/// ([`crate::trace::model::WireRules::summary_clips_tool_outputs_at`]; OpenCode 1.14.21+ at
/// 2,000 characters) the share is (text − clipped characters) ÷ text. Sizes a simulated call from the episode's
/// counted tokens without counting again (characters stand in for tokens in proportion).
pub(crate) fn keep_share(trace: &Trace, e: &Episode) -> f64 {
    let Some(clip) = trace.wire.summary_clips_tool_outputs_at else {
        return 1.0;
    };
    let Some(full) = e.representation(Tier::Full) else {
        return 1.0;
    };
    let chars: usize = full.chunks.iter().map(|c| c.text.len()).sum();
    let mut cut = 0usize;
    for m in trace
        .messages
        .get(e.first_message..=e.last_message)
        .unwrap_or_default()
    {
        for (_, t) in m.tool_parts() {
            let n = t.output.as_deref().map_or(0, str::len);
            cut += n.saturating_sub(clip);
        }
    }
    if chars == 0 {
        1.0
    } else {
        (chars.saturating_sub(cut) as f64 / chars as f64).clamp(0.0, 1.0)
    }
}

/// History tokens of a compaction call simulated now: message-shaped releases send everything
/// in view (`view`: summary, closed episodes, active part); releases that keep a tail send the
/// summary and the covered episodes (tokens, kept share).
pub(crate) fn simulated_history(
    shape: CompactionShape,
    view: u64,
    summary: u64,
    covered: &[(u64, f64)],
) -> u64 {
    match shape {
        CompactionShape::Messages | CompactionShape::MessagesWithCompaction => view,
        CompactionShape::HeadClipped | CompactionShape::HeadAsText => {
            summary
                + covered
                    .iter()
                    .map(|&(t, keep)| (t as f64 * keep).round() as u64)
                    .sum::<u64>()
        }
    }
}

/// Price a simulated call like a recorded one: the compaction agent's system chunk, the
/// release's fixed prompt and the history, answered by the new summary (`output`). A call with
/// its own system prompt is uncached (its own conversation, whose previous call is a whole
/// compaction away); one that continues the conversation reads what it shares with the
/// conversation's previous request (`prev`: its system key and tokens; `sys_key`: this one's).
pub(crate) fn price_simulated(
    price: &Price,
    p: &Prep<'_>,
    call: Compacted,
    output: u64,
    prev: (&Option<(u64, u64)>, u64),
) -> CompactionCallCost {
    let tokens = p.compaction_system_tokens() + p.compaction.prompt_tokens + call.history;
    let shared = if p.trace.wire.summary_call_own_system {
        0
    } else {
        shared_with_conversation(
            prev.0,
            prev.1,
            tokens.saturating_sub(p.compaction.prompt_tokens),
        )
    };
    let cc = price_request(price, tokens, shared, shared > 0, output);
    CompactionCallCost {
        tokens,
        history: call.history,
        output,
        cache_read: cc.cache_read,
        cache_write: cc.cache_write,
        uncached: cc.uncached,
        cost: cc.cost,
        summary_text: text_source(p, &call),
    }
}

/// Where a simulated compaction's summary text comes from: `written:<call>` (a model wrote it),
/// `recorded:<compaction>` or `compact-tiers`.
pub(crate) fn text_source(p: &Prep<'_>, call: &Compacted) -> String {
    match (call.written, call.text_from) {
        (Some(w), _) => format!(
            "written:{}",
            p.summaries
                .and_then(|b| b.get(w))
                .map_or("?", |s| s.lineage.call.as_str())
        ),
        (None, Some(ci)) => format!("recorded:{ci}"),
        (None, None) => "compact-tiers".into(),
    }
}

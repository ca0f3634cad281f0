//! What consecutive recorded summaries share from their start. A request after a new summary
//! differs from the one before it first where the two summaries do, and a model's prefix cache
//! serves their common head too: an agent's summaries follow one template and restate the same
//! goal and findings, so the second begins as the first did (OpenCode 0.1.174: 1,003 and 1,561
//! characters, ~250 and ~380 tokens the model read from its cache).

use crate::episode::{Episode, Tier};
use crate::replay::cache_cost::CacheStyle;
use crate::tokens::Tokenizer;
use crate::trace::model::{CompactionEvent, Trace};
use crate::trace::summary_call::SummaryHead;

/// Each pair of consecutive recorded summaries whose texts begin alike: their first chunks and
/// the tokens of the common head. None where the model's cache keeps whole entries only
/// (Anthropic's breakpoints: a message that changed is written again from its start).
pub(super) fn count(
    trace: &Trace,
    episodes: &[Episode],
    tokenizer: &Tokenizer,
) -> Vec<SummaryHead> {
    if trace.compactions.len() < 2
        || crate::replay::cache_cost::pricing_of(trace).price.style != CacheStyle::Openai
    {
        return Vec::new();
    }
    let first_chunk = |c: &CompactionEvent| -> Option<u64> {
        let mi = trace.message_index(c.summary_message_id.as_deref()?)?;
        let e = episodes.partition_point(|e| e.last_message < mi);
        let rep = episodes.get(e)?.representation(Tier::Full)?;
        rep.chunks
            .iter()
            .find(|ch| ch.message_index == mi)
            .map(|ch| ch.hash)
    };
    let pairs: Vec<(u64, u64, &str)> = trace
        .compactions
        .windows(2)
        .filter_map(|w| {
            let head = crate::text::common_head(&w[0].summary_text, &w[1].summary_text);
            if head.is_empty() {
                return None;
            }
            let (before, after) = (first_chunk(&w[0])?, first_chunk(&w[1])?);
            (before != after).then_some((before, after, head))
        })
        .collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    let heads: Vec<&str> = pairs.iter().map(|p| p.2).collect();
    pairs
        .iter()
        .zip(tokenizer.count_many(&heads))
        .map(|(&(before, after, _), tokens)| SummaryHead {
            before,
            after,
            tokens: u64::from(tokens),
        })
        .collect()
}

//! A compaction (summary) call in the replay: its own request as OpenCode built it
//! ([`crate::trace::compaction_request`]), not the conversation's context. OpenCode sends the
//! compaction agent its own system prompt, no tools and (by release) the history clipped or as
//! one text, so the call is sized from the builder's count plus the compaction agent's system
//! chunk, and priced like every request.

use super::types::{TierStat, TierStats};

/// Divergence of a built call from the previous call of its conversation (`prev`: its system
/// key and tokens): the shared system chunk, nothing after it (each call's history differs).
pub(crate) fn divergence(prev: &Option<(u64, u64)>, sys_key: u64, sys: u64, tokens: u64) -> u64 {
    match prev {
        Some((key, prev_tokens)) if *key == sys_key => sys.min(*prev_tokens).min(tokens),
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

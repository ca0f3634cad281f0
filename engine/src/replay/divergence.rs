//! Divergence (MODEL §3.5): tokens of the longest common chunk prefix with the previous request
//! of the same conversation. Closing an episode at `full` only appends, so the prefix can only
//! break at the first episode changed since that request (or at the system chunk or the
//! summary): the pass remembers that episode per conversation and compares chunks from there on.

use super::prepare::Prep;
use super::state::State;
use crate::episode::Tier;

/// What a conversation's previous request rendered.
#[derive(Debug, Default, Clone)]
pub(crate) struct Conv {
    pub has_prev: bool,
    /// The previous request of this conversation.
    pub prev_request: usize,
    pub prev_tokens: u64,
    pub prev_time: i64,
    pub prev_sys: u64,
    pub prev_summary: u64,
    pub prev_k: usize,
    pub prev_active: usize,
    pub prev_active_count: usize,
    /// The first episode changed since then, with its tier and cut before the change.
    pub pending: Option<(usize, Tier, usize)>,
    /// The message of the previous request, and where its answer was in flight and later
    /// requests receive it otherwise, that request's tokens before the step that changes.
    pub prev_msg: usize,
    pub prev_resent_at: Option<u64>,
}

impl Conv {
    /// What a builder-sized request shares with this conversation's previous one: (system
    /// key, tokens) of that request.
    pub fn prefix(&self) -> Option<(u64, u64)> {
        self.has_prev.then_some((self.prev_sys, self.prev_tokens))
    }

    /// Episode `e` (shown at `tier` with `cut`) changes now.
    pub fn mark(&mut self, e: usize, tier: Tier, cut: usize) {
        match self.pending {
            Some((pe, _, _)) if pe <= e => {}
            _ => self.pending = Some((e, tier, cut)),
        }
    }
}

/// Where a request's own answer was in flight (a step after `resent_from` of its message, see
/// [`crate::trace::CompletedAnswer`]): its tokens before that step's chunk, the prefix a later
/// message's request can still share with it once the answer is rebuilt from storage.
pub(crate) fn resent_at(
    st: &State<'_, '_>,
    apply_prunes: bool,
    rq: &super::prepare::ReqData,
    active_n: usize,
    time: i64,
) -> Option<u64> {
    let (msg, step) = rq.pos;
    let from = rq.resent_from.filter(|&s| s < step)?;
    let e = rq.active;
    let rep = st.p.episodes.get(e)?.representation(Tier::Full)?;
    let within: u64 = chunk_list(
        st.p,
        apply_prunes,
        e,
        Tier::Full,
        st.cut(e),
        Some(active_n),
        time,
    )
    .into_iter()
    .take_while(|&(_, _, ci)| {
        rep.chunks
            .get(ci)
            .is_none_or(|c| c.message_index != msg || c.step < from)
    })
    .map(|(_, tokens, _)| tokens)
    .sum();
    Some(rq.sys_tokens + st.summary_tokens() + st.tokens_before(e) + within)
}

/// What a request whose stored system prompt changed still shares with the previous request of
/// its conversation (system key `prev_sys`), where the change is from that request's prompt.
pub(crate) fn shared_system(prev_sys: u64, changed_from: Option<(u64, u64)>) -> Option<u64> {
    changed_from
        .filter(|&(before, _)| before == prev_sys)
        .map(|(_, shared)| shared)
}

/// Where the previous request's own answer, in flight there, reaches a request of a later
/// message rebuilt from storage ([`resent_at`]): the shared prefix ends there at the latest.
pub(crate) fn rebuilt_answer_cap(
    prev_resent_at: Option<u64>,
    prev_msg: usize,
    msg: usize,
) -> Option<u64> {
    prev_resent_at.filter(|_| prev_msg != msg)
}

/// (hash, tokens, chunk index) of the chunks episode `e` renders at tier `t`, from included
/// chunk `from` (full tier only) up to `upto`, with the recorded prunes as of `time`.
pub(crate) fn chunk_list(
    p: &Prep<'_>,
    apply_prunes: bool,
    e: usize,
    t: Tier,
    from: usize,
    upto: Option<usize>,
    time: i64,
) -> Vec<(u64, u64, usize)> {
    let mut out = Vec::new();
    if t == Tier::Dropped {
        return out;
    }
    let eff = p.effective(e, t);
    let (Some(td), Some(rep)) = (p.tier_data_at(e, t), p.episodes[e].representation(eff)) else {
        return out;
    };
    let full = eff == Tier::Full;
    let end = upto.unwrap_or(td.len()).min(td.len());
    let from = if full { from.min(end) } else { 0 };
    for &ci in &td.idx[from..end] {
        let c = &rep.chunks[ci as usize];
        match &c.pruned {
            Some(pc) if full && apply_prunes && pc.time_compacted <= time => {
                out.push((pc.hash, u64::from(pc.tokens), ci as usize))
            }
            _ => out.push((c.hash, u64::from(c.tokens), ci as usize)),
        }
    }
    out
}

/// Tokens of the common prefix of two chunk lists.
pub(crate) fn common_prefix(old: &[(u64, u64, usize)], new: &[(u64, u64, usize)]) -> u64 {
    old.iter()
        .zip(new.iter())
        .take_while(|(a, b)| a.0 == b.0)
        .map(|(a, _)| a.1)
        .sum()
}

/// Tokens two summaries' chunk lists share from their start: the equal chunks, then, where
/// the first different pair are two consecutive recorded summaries, the text both begin with.
fn summaries_shared(p: &Prep<'_>, old: &[(u64, u64, usize)], new: &[(u64, u64, usize)]) -> u64 {
    let same = old.iter().zip(new).take_while(|(a, b)| a.0 == b.0).count();
    let head = match (old.get(same), new.get(same)) {
        (Some(a), Some(b)) => summary_head(p, (a.0, a.1), (b.0, b.1)),
        _ => 0,
    };
    common_prefix(old, new) + head
}

/// What chunk `new` (hash, tokens), first to differ from `old` where a request after a new
/// summary parts from the one before, still shares with it: the head two consecutive recorded
/// summaries begin with ([`crate::trace::summary_call::SummaryHead`]), else 0.
pub(crate) fn summary_head(p: &Prep<'_>, old: (u64, u64), new: (u64, u64)) -> u64 {
    p.compaction
        .summary_head(old.0, new.0)
        .min(old.1)
        .min(new.1)
}

/// What the current request renders, for [`divergence`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Current {
    pub conv: usize,
    pub sys_key: u64,
    pub sys: u64,
    /// [`crate::replay::prepare::ReqData::sys_changed_from`].
    pub sys_changed_from: Option<(u64, u64)>,
    pub active: usize,
    pub active_n: usize,
    pub tokens: u64,
    pub time: i64,
}

/// Tokens of the longest common chunk prefix with the conversation's previous request.
pub(crate) fn divergence(st: &State<'_, '_>, apply_prunes: bool, cur: &Current) -> u64 {
    let c = &st.conv[cur.conv];
    if !c.has_prev {
        return 0;
    }
    if c.prev_sys != cur.sys_key {
        return shared_system(c.prev_sys, cur.sys_changed_from)
            .map_or(0, |shared| shared.min(c.prev_tokens).min(cur.tokens));
    }
    if c.prev_summary != st.summary_id() {
        // A new summary: the two share the system chunk and what the summaries begin with
        // (the agent's compaction message reads the same each time, and its summaries often
        // begin alike).
        let shared = summaries_shared(
            st.p,
            st.summary_chunks(c.prev_summary),
            st.summary_chunks(st.summary_id()),
        );
        return (cur.sys + shared).min(c.prev_tokens).min(cur.tokens);
    }
    let d = match c.pending {
        None => c.prev_tokens,
        Some((e, _, _)) if e > c.prev_active => c.prev_tokens,
        Some((e, old_tier, old_cut)) => {
            let before = cur.sys + st.summary_tokens() + st.tokens_before(e);
            let list = |t, from, upto, time| chunk_list(st.p, apply_prunes, e, t, from, upto, time);
            let old = if e < c.prev_k {
                list(old_tier, old_cut, None, c.prev_time)
            } else {
                list(Tier::Full, old_cut, Some(c.prev_active_count), c.prev_time)
            };
            let new = if e < st.closed_count() {
                list(st.applied(e), st.cut(e), None, cur.time)
            } else if e == cur.active {
                list(Tier::Full, st.cut(e), Some(cur.active_n), cur.time)
            } else {
                Vec::new()
            };
            before + common_prefix(&old, &new)
        }
    };
    d.min(c.prev_tokens).min(cur.tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_change_marks_the_break() {
        let mut c = Conv::default();
        c.mark(5, Tier::Full, 0);
        c.mark(7, Tier::Dense, 0);
        assert_eq!(c.pending, Some((5, Tier::Full, 0)));
        c.mark(2, Tier::Compact, 3);
        assert_eq!(c.pending, Some((2, Tier::Compact, 3)));
    }

    #[test]
    fn common_prefix_stops_at_the_first_different_chunk() {
        let a = [(1, 10, 0), (2, 20, 1), (3, 30, 2)];
        let b = [(1, 10, 0), (2, 20, 1), (9, 5, 2), (3, 30, 3)];
        assert_eq!(common_prefix(&a, &b), 30);
        assert_eq!(common_prefix(&a, &a[..1]), 10);
        assert_eq!(common_prefix(&a, &[]), 0);
        assert_eq!(common_prefix(&[(7, 1, 0)], &a), 0);
    }
}

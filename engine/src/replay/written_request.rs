//! The request a model answers with the summary of one simulated compaction
//! ([`super::written::SummaryRequest`]): the agent's compaction prompt
//! ([`crate::trace::summary_call::CompactionPrompt`]) with the history its call sends in place.
//!
//! The history is the text of what the call shows, as `render` prints it: the covered
//! episodes (and the head of a split turn) for an agent that keeps a tail, everything in view
//! for one that sends the conversation; recorded prunes applied where the pass applies them.
//! An earlier summary goes where the agent quotes one, else it leads the history. Tool outputs
//! are sent whole: the replay sizes the call with the release's clipping, but a chunk does not
//! say which of its text is a tool's output.

use super::divergence::chunk_list;
use super::output::SummaryPiece;
use super::prepare::Prep;
use super::state::State;
use super::written::{SummaryBook, SummaryRequest};
use crate::episode::Tier;
use crate::policy::kinds::RequestView;
use crate::text::fill_placeholders as fill;
use crate::trace::model::CompactionShape;
use crate::trace::summary_call::{HISTORY, PREVIOUS_SUMMARY};

/// What a compaction simulated now covers: the episodes it replaces, and the head of the first
/// kept episode (episode, first kept chunk) when it splits a turn.
pub(crate) struct Covered<'c> {
    pub episodes: &'c [usize],
    pub split: Option<(usize, usize)>,
}

/// The request of the summary of compaction `number`, simulated before request `rq`.
pub(crate) fn build(
    st: &State<'_, '_>,
    rq: &RequestView<'_>,
    book: &SummaryBook,
    number: usize,
    covered: &Covered<'_>,
) -> SummaryRequest {
    let p = st.p;
    let mut parts: Vec<String> = Vec::new();
    let mut episode = |e: usize, from: usize, upto: Option<usize>, tier: Tier| {
        parts.extend(chunk_texts(p, e, tier, from, upto, rq.rq.time));
    };
    match p.compaction.shape {
        CompactionShape::Messages | CompactionShape::MessagesWithCompaction => {
            // Everything in view: the closed episodes as shown, then the active one so far.
            for e in 0..st.closed_count() {
                episode(e, st.cut(e), None, st.applied(e));
            }
            let active = rq.rq.active;
            if active < st.episode_count() {
                let upto = st.active_count(active, rq.rq.pos);
                episode(active, st.cut(active), Some(upto), Tier::Full);
            }
        }
        CompactionShape::HeadClipped | CompactionShape::HeadAsText => {
            for &e in covered.episodes {
                episode(e, st.cut(e), None, st.applied(e));
            }
            if let Some((e, to)) = covered.split {
                episode(e, st.cut(e), Some(to), Tier::Full);
            }
        }
    }
    let history = parts.join("\n\n");
    // The summary shown now is the earlier one the agent quotes (a written one alone: those
    // kept in its tail before it were quoted when it was written).
    let previous = st
        .summary()
        .as_ref()
        .map(|s| match s {
            SummaryPiece::Simulated {
                written: Some(w), ..
            } => p
                .summaries
                .and_then(|b| b.get(*w))
                .map_or_else(String::new, |w| w.text.clone()),
            other => summary_text(p, other),
        })
        .filter(|t| !t.trim().is_empty());
    let prompt = &book.prompt;
    let (h, ps) = (name(HISTORY), name(PREVIOUS_SUMMARY));
    let user = match (&previous, &prompt.update) {
        (Some(prev), Some(update)) => fill(update, &[(h, &history), (ps, prev)]),
        (Some(prev), None) => fill(&prompt.first, &[(h, &format!("{prev}\n\n{history}"))]),
        (None, _) => fill(&prompt.first, &[(h, &history)]),
    };
    SummaryRequest::new(number, rq.t, &book.model, prompt.system.clone(), user)
}

/// A placeholder's name (`history` of `{{history}}`), as [`fill`] takes it.
fn name(placeholder: &str) -> &str {
    placeholder.trim_start_matches("{{").trim_end_matches("}}")
}

/// The texts of episode `e`'s chunks shown at `tier` from chunk `from` (full tier) up to
/// `upto`, at time `time` (a pruned output as the agent sent it then).
fn chunk_texts(
    p: &Prep<'_>,
    e: usize,
    tier: Tier,
    from: usize,
    upto: Option<usize>,
    time: i64,
) -> Vec<String> {
    let Some(rep) = p.episodes[e].representation(p.effective(e, tier)) else {
        return Vec::new();
    };
    chunk_list(p, p.apply_prunes, e, tier, from, upto, time)
        .into_iter()
        .map(|(hash, _, ci)| {
            let c = &rep.chunks[ci];
            match &c.pruned {
                Some(pc) if pc.hash == hash && pc.hash != c.hash => pc.text.clone(),
                _ => c.text.clone(),
            }
        })
        .collect()
}

/// The text of a summary piece as the context shows it (without `render`'s header line).
pub(crate) fn summary_text(p: &Prep<'_>, piece: &SummaryPiece) -> String {
    let messages = |ms: Vec<usize>| -> Vec<String> {
        ms.into_iter()
            .flat_map(|m| p.message_chunks(m).map(|c| c.text.clone()))
            .collect()
    };
    let written = |w: &usize| p.summaries.and_then(|b| b.get(*w)).map(|s| s.text.clone());
    let parts: Vec<String> = match piece {
        SummaryPiece::Simulated {
            written: Some(w),
            kept_written,
            ..
        } => std::iter::once(w)
            .chain(kept_written)
            .filter_map(written)
            .collect(),
        SummaryPiece::Simulated {
            shown,
            text_from: None,
            ..
        } => shown
            .iter()
            .filter_map(|&e| p.episodes[e].representation(p.effective(e, Tier::Compact)))
            .map(|r| r.text())
            .collect(),
        other => messages(p.summary_messages(other).unwrap_or_default()),
    };
    parts.join("\n")
}

//! The rendered context of one request, chunk by chunk (what `tierscope render` prints): the
//! system chunk, the compaction summary if one is shown, each closed episode at its applied tier,
//! then the active episode so far. Texts are the representations' texts as stored; front ends
//! sanitize them for the terminal.

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use super::divergence::chunk_list;
use super::prepare::Prep;
use super::types::{Cell, CutBy, RenderState, SummaryPiece};
use super::{Input, Prepared};
use crate::episode::Tier;
use crate::policy::Policy;

/// One chunk of a rendered context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderedChunk {
    /// `system`, `summary`, `episode` (closed) or `active`.
    pub kind: String,
    /// Episode id, for episode and active chunks.
    pub episode: Option<String>,
    /// Tier shown, for episode and active chunks.
    pub tier: Option<Tier>,
    /// The message the chunk renders, where it renders one.
    pub message_id: Option<String>,
    pub tokens: u64,
    pub hash: u64,
    pub text: String,
    /// Not present at the same position in the previous request of the conversation.
    pub changed_since_prev: bool,
}

/// The context of one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RenderedContext {
    pub request: usize,
    pub tokens: u64,
    pub chunks: Vec<RenderedChunk>,
    /// The previous request of the same conversation (N−1 unless summary calls intervene).
    pub prev_request: Option<usize>,
    /// Index of the first chunk that differs from the previous request (its length when this
    /// one only appends); `None` without a previous request.
    pub divergence_index: Option<usize>,
    /// Tokens of the common prefix.
    pub divergence: u64,
    /// The previous request's chunks from the divergence point on (what changed there).
    pub replaced: Vec<RenderedChunk>,
}

/// Errors of [`render_at`].
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("request {request} is out of range: the trace has {count} requests (numbered from 0)")]
    OutOfRange { request: usize, count: usize },
}

/// Replay up to `request` under `policy` and return its rendered context, marked against the
/// previous request of the same conversation.
pub fn render_at(
    input: &Input<'_>,
    policy: &Policy,
    budget: Option<u64>,
    request: usize,
) -> Result<RenderedContext, RenderError> {
    let count = input.trace.requests.len();
    if request >= count {
        return Err(RenderError::OutOfRange { request, count });
    }
    let explicit = budget.is_some();
    let (budget, budget_source) = super::resolve_budget(input.trace, budget);
    let prepared = Prepared::new(input, policy, explicit);
    let pass = prepared.run(policy, budget, &budget_source, true);
    let prep = &prepared.prep;
    let prunes = prepared.common.apply_prunes;
    let chunks = materialize(
        prep,
        prunes,
        &pass.applied,
        &pass.render_states[request],
        request,
    );
    let conv = prep.reqs[request].conv;
    let prev_request = (0..request).rev().find(|&r| prep.reqs[r].conv == conv);
    let mut ctx = RenderedContext {
        request,
        tokens: chunks.iter().map(|c| c.tokens).sum(),
        chunks,
        prev_request,
        divergence_index: None,
        divergence: 0,
        replaced: Vec::new(),
    };
    if let Some(pr) = prev_request {
        let prev = materialize(prep, prunes, &pass.applied, &pass.render_states[pr], pr);
        let d = ctx
            .chunks
            .iter()
            .zip(prev.iter())
            .take_while(|(a, b)| a.hash == b.hash)
            .count();
        ctx.divergence_index = Some(d);
        ctx.divergence = ctx.chunks[..d].iter().map(|c| c.tokens).sum();
        for c in &mut ctx.chunks[d..] {
            c.changed_since_prev = true;
        }
        ctx.replaced = prev[d.min(prev.len())..].to_vec();
    }
    Ok(ctx)
}

fn materialize(
    p: &Prep<'_>,
    apply_prunes: bool,
    applied: &super::types::TierMatrix,
    rs: &RenderState,
    t: usize,
) -> Vec<RenderedChunk> {
    let rq = &p.reqs[t];
    let req = &p.trace.requests[t];
    let mut out = Vec::new();
    let agent = req.agent.clone().unwrap_or_default();
    let model = req
        .model
        .as_ref()
        .map(|m| format!("{}/{}", m.provider_id, m.model_id))
        .unwrap_or_default();
    out.push(RenderedChunk {
        kind: "system".into(),
        episode: None,
        tier: None,
        message_id: None,
        tokens: rq.sys_tokens,
        hash: rq.sys_key,
        text: format!(
            "[system prompt and tool schemas for agent {agent:?}, model {model:?}: {} tokens, not stored by {}]",
            rq.sys_tokens,
            crate::trace::adapter::adapter(p.trace.origin.agent).map_or("OpenCode", |a| a.name())
        ),
        changed_since_prev: false,
    });
    let trace = p.trace;
    let summary_msgs = |ci: usize| trace.compaction_message_indices(&trace.compactions[ci]);
    let push_msgs = |out: &mut Vec<RenderedChunk>, ms: Vec<usize>| {
        for m in ms {
            for c in p.message_chunks(m) {
                out.push(RenderedChunk {
                    kind: "summary".into(),
                    episode: None,
                    tier: None,
                    message_id: Some(c.message_id.clone()),
                    tokens: u64::from(c.tokens),
                    hash: c.hash,
                    text: c.text.clone(),
                    changed_since_prev: false,
                });
            }
        }
    };
    match &rs.summary {
        Some(SummaryPiece::Recorded { compaction }) => {
            push_msgs(&mut out, p.recorded_summary(*compaction).1)
        }
        Some(SummaryPiece::Simulated {
            text_from: Some(ci),
            ..
        }) => push_msgs(&mut out, summary_msgs(*ci)),
        Some(SummaryPiece::Simulated {
            covers,
            shown,
            tokens,
            number,
            ..
        }) => {
            // The heads of split episodes are in the summary too (their tails are shown).
            let heads: String = rs
                .cuts
                .iter()
                .filter(|c| {
                    c.by == CutBy::Summary
                        && c.from > 0
                        && applied.get(t, c.episode) != Cell::Tier(Tier::Dropped)
                })
                .map(|c| {
                    format!(
                        " and the first {}/{} chunks of {}",
                        c.from, c.chunks, p.episodes[c.episode].id
                    )
                })
                .collect();
            let mut text = format!(
                "[simulated compaction {number}: replaces {} closed episodes{heads}; compact tiers of {}]\n",
                covers.len(),
                shown
                    .iter()
                    .map(|&e| p.episodes[e].id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for &e in shown {
                if let Some(r) = p.episodes[e].representation(p.effective(e, Tier::Compact)) {
                    text.push_str(&r.text());
                    text.push('\n');
                }
            }
            out.push(RenderedChunk {
                kind: "summary".into(),
                episode: None,
                tier: None,
                message_id: None,
                tokens: *tokens,
                hash: xxh3_64(text.as_bytes()),
                text,
                changed_since_prev: false,
            });
        }
        None => {}
    }
    let cut = |e: usize| {
        rs.cuts
            .iter()
            .find(|c| c.episode == e)
            .map_or(0, |c| c.from)
    };
    for e in 0..p.episodes.len() {
        let (tier, upto, kind) = match applied.get(t, e) {
            Cell::Tier(tier) => (tier, None, "episode"),
            Cell::Active => {
                let n = p
                    .td(e, Tier::Full)
                    .map_or(0, |td| td.pos.partition_point(|p| *p < rq.pos));
                (Tier::Full, Some(n), "active")
            }
            Cell::Future => break,
        };
        let eff = p.effective(e, tier);
        let Some(rep) = p.episodes[e].representation(eff) else {
            continue;
        };
        for (hash, tokens, ci) in chunk_list(p, apply_prunes, e, tier, cut(e), upto, rq.time) {
            let c = &rep.chunks[ci];
            let text = match &c.pruned {
                Some(pc) if pc.hash == hash && pc.hash != c.hash => pc.text.clone(),
                _ => c.text.clone(),
            };
            out.push(RenderedChunk {
                kind: kind.into(),
                episode: Some(p.episodes[e].id.clone()),
                tier: Some(eff),
                message_id: Some(c.message_id.clone()),
                tokens,
                hash,
                text,
                changed_since_prev: false,
            });
        }
    }
    out
}

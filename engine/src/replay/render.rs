//! The rendered context of one request, chunk by chunk (what `tierscope render` prints): the
//! system chunk, the compaction summary if one is shown, each closed episode at its applied tier,
//! then the active episode so far. Texts are the representations' texts as stored; front ends
//! sanitize them for the terminal.

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use super::compaction_call::RecordedCall;
use super::divergence::{chunk_list, rebuilt_answer_cap, shared_system, summary_head};
use super::output::{Cell, CutBy, RenderState, SummaryPiece};
use super::prepare::Prep;
use super::{Input, Prepared};
use crate::episode::Tier;
use crate::policy::Policy;
use crate::text::{clip_chars, sanitize_line};
use crate::trace::RequestStatus;

/// One chunk of a rendered context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderedChunk {
    /// `system`, `summary`, `episode` (closed) or `active`; in a recorded summary call, `call`
    /// (the request the agent built) or `history` and `instruction` (the conversation as the
    /// agent sent it, then the summary instruction).
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
    /// What the request is besides its chunks, where that needs saying: a recorded summary
    /// call, or one the policy does not make; the policy's own summary call billed here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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
    let mut v = render_requests(input, policy, budget, &[request])?;
    v.pop().ok_or(RenderError::OutOfRange {
        request,
        count: input.trace.requests.len(),
    })
}

/// [`render_at`] for several requests from one pass.
pub fn render_requests(
    input: &Input<'_>,
    policy: &Policy,
    budget: Option<u64>,
    requests: &[usize],
) -> Result<Vec<RenderedContext>, RenderError> {
    in_range(input.trace.requests.len(), requests)?;
    let explicit = budget.is_some();
    let (budget, budget_source) = super::resolve_budget(input.trace, budget);
    let prepared = Prepared::new(input, policy, explicit);
    let pass = prepared.run(policy, budget, &budget_source, true);
    Ok(contexts(
        &prepared.prep,
        prepared.common.apply_prunes,
        Views {
            frames: &pass.frames,
            applied: &pass.applied,
            render_states: &pass.render_states,
        },
        requests,
    ))
}

/// [`render_requests`] from a finished replay of `policy` at `budget` (as given to
/// [`super::replay`]), without replaying again: the explorer renders its cursor's context from
/// the replay it shows.
pub fn render_replayed(
    input: &Input<'_>,
    policy: &Policy,
    budget: Option<u64>,
    replay: &super::output::Replay,
    requests: &[usize],
) -> Result<Vec<RenderedContext>, RenderError> {
    in_range(input.trace.requests.len(), requests)?;
    // A replay streamed without its views cannot be rendered from.
    in_range(
        replay.render_states.len().min(replay.frames.len()),
        requests,
    )?;
    let common = crate::policy::knobs::Common::from_policy(policy);
    let filter = crate::policy::kinds::filter(policy, budget.is_some());
    let prep = Prep::new(input, filter, common.apply_prunes, common.system_tokens);
    Ok(contexts(
        &prep,
        common.apply_prunes,
        Views {
            frames: &replay.frames,
            applied: &replay.applied,
            render_states: &replay.render_states,
        },
        requests,
    ))
}

fn in_range(count: usize, requests: &[usize]) -> Result<(), RenderError> {
    match requests.iter().find(|&&r| r >= count) {
        Some(&request) => Err(RenderError::OutOfRange { request, count }),
        None => Ok(()),
    }
}

/// What a pass leaves that rendering reads.
struct Views<'v> {
    frames: &'v [super::output::Frame],
    applied: &'v super::output::TierMatrix,
    render_states: &'v [RenderState],
}

fn contexts(
    prep: &Prep<'_>,
    prunes: bool,
    pass: Views<'_>,
    requests: &[usize],
) -> Vec<RenderedContext> {
    let context = |request: usize| {
        materialize(
            prep,
            prunes,
            pass.applied,
            &pass.render_states[request],
            request,
        )
    };
    let mut out = Vec::with_capacity(requests.len());
    for &request in requests {
        let chunks = context(request);
        let rs = &pass.render_states[request];
        let call = super::compaction_call::recorded_call(prep, request, rs.call_not_made);
        // A summary call that continues the conversation follows the conversation's last
        // request; one with its own system prompt, the previous call.
        let conv = match call {
            Some(_) if !prep.trace.wire.summary_call_own_system => 0,
            _ => prep.reqs[request].conv,
        };
        let prev_request = (0..request).rev().find(|&r| {
            prep.reqs[r].conv == conv
                && !(prep.trace.requests[r].synthetic_call && pass.render_states[r].call_not_made)
        });
        let mut ctx = RenderedContext {
            request,
            tokens: chunks.iter().map(|c| c.tokens).sum(),
            chunks,
            prev_request,
            divergence_index: None,
            divergence: 0,
            replaced: Vec::new(),
            note: note(prep, &pass.frames[request], &pass.render_states[request]),
        };
        if let Some(why) = failure_note(prep.trace, request) {
            add_note(&mut ctx.note, why);
        }
        if let Some(pr) = prev_request {
            let prev = context(pr);
            let d = if call.is_some() {
                // A call's prefix is the pass's figure ([`super::compaction_call`]): the chunks
                // it covers whole.
                ctx.divergence = pass.frames[request].divergence;
                chunks_within(&ctx.chunks, ctx.divergence)
            } else {
                let d = ctx
                    .chunks
                    .iter()
                    .zip(prev.iter())
                    .take_while(|(a, b)| a.hash == b.hash)
                    .count();
                ctx.divergence = ctx.chunks[..d].iter().map(|c| c.tokens).sum();
                // A new summary that begins as the previous one did shares that head
                // ([`crate::trace::summary_call::SummaryHead`]).
                if let (Some(old), Some(new)) = (prev.get(d), ctx.chunks.get(d)) {
                    let head = summary_head(prep, (old.hash, old.tokens), (new.hash, new.tokens));
                    if head > 0 {
                        ctx.divergence += head;
                        add_note(
                            &mut ctx.note,
                            format!(
                                "the new summary begins as the previous one did: its first \
                                 {head} tokens are still the cached prefix"
                            ),
                        );
                    }
                }
                // A stored system prompt that changed since the previous request's still
                // shares its beginning with it ([`super::prepare::ReqData::sys_changed_from`]).
                if let (0, Some(first)) = (d, prev.first()) {
                    if let Some(shared) =
                        shared_system(first.hash, prep.reqs[request].sys_changed_from)
                    {
                        let prev_tokens: u64 = prev.iter().map(|c| c.tokens).sum();
                        ctx.divergence = shared.min(prev_tokens).min(ctx.tokens);
                    }
                }
                // The previous request's own answer, in flight there, reaches this later
                // message rebuilt from storage ([`crate::trace::CompletedAnswer`]).
                let cap = rebuilt_answer_cap(
                    pass.render_states[pr].resent_at,
                    prep.reqs[pr].msg,
                    prep.reqs[request].msg,
                );
                match cap {
                    Some(at) if at < ctx.divergence => {
                        ctx.divergence = at;
                        add_note(&mut ctx.note, resent_note(prep, pr));
                        chunks_within(&ctx.chunks, at).min(d)
                    }
                    _ => d,
                }
            };
            ctx.divergence_index = Some(d);
            for c in &mut ctx.chunks[d..] {
                c.changed_since_prev = true;
            }
            ctx.replaced = prev[d.min(prev.len())..].to_vec();
        }
        out.push(ctx);
    }
    out
}

/// A request that failed, and the error its agent stored: no agent sends that text to the model,
/// so it is in no tier; the note is where it shows.
fn failure_note(trace: &crate::trace::Trace, request: usize) -> Option<String> {
    let rq = trace.requests.get(request)?;
    let how = match rq.status {
        RequestStatus::Error => "failed",
        RequestStatus::Aborted => "was interrupted",
        RequestStatus::Cut => "was cut off",
        RequestStatus::Ok | RequestStatus::Empty => return None,
    };
    let e = trace.messages.get(rq.message_index)?.error.as_ref()?;
    let first = e
        .message
        .as_deref()
        .and_then(|m| m.lines().find(|l| !l.trim().is_empty()))
        .map(|l| format!(": {}", clip_chars(&sanitize_line(l), 160)))
        .unwrap_or_default();
    Some(format!(
        "this request {how} ({}{first}); the agent stored the error with its message and never sent it",
        sanitize_line(&e.name)
    ))
}

/// A request's note, with `why` after what it said already.
fn add_note(note: &mut Option<String>, why: String) {
    *note = Some(match note.take() {
        Some(n) => format!("{n}; {why}"),
        None => why,
    });
}

/// How many chunks from the start lie whole within the first `tokens`.
fn chunks_within(chunks: &[RenderedChunk], tokens: u64) -> usize {
    let mut sum = 0;
    chunks
        .iter()
        .take_while(|c| {
            sum += c.tokens;
            sum <= tokens
        })
        .count()
}

/// Why the cached prefix ends inside the previous request's answer: it was in flight there, and
/// this request gets it rebuilt from storage.
fn resent_note(prep: &Prep<'_>, prev: usize) -> String {
    use crate::trace::CompletedAnswer;
    let how = match prep.trace.wire.completed_answer {
        CompletedAnswer::ToolCallsMerged => "with every step's tool calls in one message",
        CompletedAnswer::ErrorsPrefixed => "with its errored tool results as stored (\"Error: …\")",
        CompletedAnswer::AsSent => "as stored",
    };
    format!(
        "the answer of request {prev} was still running there; rebuilt from storage {how}, it \
         differs from its step {} on, so the cached prefix ends before that step",
        prep.reqs[prev].resent_from.unwrap_or(0) + 1
    )
}

/// The heads of split episodes a simulated summary stands for too (their tails are shown):
/// ` and the first 3/9 chunks of E4`.
fn split_heads(
    p: &Prep<'_>,
    rs: &RenderState,
    applied: &super::output::TierMatrix,
    t: usize,
) -> String {
    rs.cuts
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
        .collect()
}

fn note(p: &Prep<'_>, frame: &super::output::Frame, rs: &RenderState) -> Option<String> {
    let t = frame.request;
    if let Some(c) = &frame.compaction_call {
        let mut s = format!(
            "the policy compacted before this request: its summary call sent {} tokens ({} of history) and wrote a {}-token summary, billed in this request",
            c.tokens, c.history, c.output
        );
        if let Some(l) = written_lineage(p, rs) {
            s.push_str(&format!(
                "; the summary was written by model {}{} at {} with {} (prompt {}), call {}{}",
                l.model,
                l.response_model
                    .as_deref()
                    .filter(|m| *m != l.model)
                    .map_or_else(String::new, |m| format!(" (answered as {m})")),
                l.endpoint,
                l.prompt,
                l.prompt_hash,
                l.call,
                l.created
                    .as_deref()
                    .map_or_else(String::new, |d| format!(", {d}"))
            ));
        }
        return Some(s);
    }
    match super::compaction_call::recorded_call(p, t, rs.call_not_made)? {
        (RecordedCall::NotMade, _) => Some(
            "a recorded summary call this policy does not make (it compacts on its own): nothing sent".into(),
        ),
        (RecordedCall::Built(_), _) => Some(
            "a recorded summary call, as the agent built it: the compaction agent's system chunk, then its request".into(),
        ),
        (RecordedCall::Continues { .. }, _) => Some(
            "a recorded summary call: the conversation as the agent sent it, then its summary instruction".into(),
        ),
    }
}

/// The chunk of a simulated compaction's summary: one piece of `text`, `tokens` in all.
fn simulated_summary(text: String, tokens: u64) -> RenderedChunk {
    RenderedChunk {
        kind: "summary".into(),
        episode: None,
        tier: None,
        message_id: None,
        tokens,
        hash: xxh3_64(text.as_bytes()),
        text,
        changed_since_prev: false,
    }
}

/// The lineage of the model-written summary shown at a request, if it shows one.
fn written_lineage<'p>(
    p: &Prep<'p>,
    rs: &RenderState,
) -> Option<&'p super::written::SummaryLineage> {
    match &rs.summary {
        Some(SummaryPiece::Simulated {
            written: Some(w), ..
        }) => p.summaries?.get(*w).map(|s| &s.lineage),
        _ => None,
    }
}

fn materialize(
    p: &Prep<'_>,
    apply_prunes: bool,
    applied: &super::output::TierMatrix,
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
        text: match rq.sys_changed_from {
            // The agent stored this request's prompt, and it differs from the previous one's.
            Some((_, shared)) => format!(
                "[system prompt and tool schemas for agent {agent:?}, model {model:?}: {} tokens; \
                 the prompt stored with this answer differs from the previous answer's (the \
                 project tree or an instruction file changed): the first {shared} tokens are the \
                 same]",
                rq.sys_tokens
            ),
            None => format!(
                "[system prompt and tool schemas for agent {agent:?}, model {model:?}: {} tokens, not stored by {}]",
                rq.sys_tokens,
                crate::trace::adapter::adapter(p.trace.origin.agent)
                    .map_or("OpenCode", |a| a.name())
            ),
        },
        changed_since_prev: false,
    });
    match super::compaction_call::recorded_call(p, t, rs.call_not_made) {
        Some((RecordedCall::NotMade, _)) => return Vec::new(),
        Some((RecordedCall::Built(call), _)) => {
            out.push(RenderedChunk {
                kind: "call".into(),
                episode: None,
                tier: None,
                message_id: None,
                tokens: call.tokens,
                hash: xxh3_64(call.text.as_bytes()),
                text: call.text.clone(),
                changed_since_prev: false,
            });
            return out;
        }
        Some((RecordedCall::Continues { until }, _)) => {
            for piece in p.recorded_view_until(t, until) {
                let c = piece.chunk;
                let (text, hash) = match &c.pruned {
                    Some(pc) if piece.pruned => (pc.text.clone(), pc.hash),
                    _ => (c.text.clone(), c.hash),
                };
                out.push(RenderedChunk {
                    kind: if piece.summary { "summary" } else { "history" }.into(),
                    episode: None,
                    tier: None,
                    message_id: Some(c.message_id.clone()),
                    tokens: piece.tokens,
                    hash,
                    text,
                    changed_since_prev: false,
                });
            }
            let prompt = &p.compaction.prompt_text;
            let text = if prompt.is_empty() {
                format!(
                    "[the agent's summary instruction: {} tokens, not stored by it]",
                    p.compaction.prompt_tokens
                )
            } else {
                prompt.clone()
            };
            out.push(RenderedChunk {
                kind: "instruction".into(),
                episode: None,
                tier: None,
                message_id: None,
                tokens: p.compaction.prompt_tokens,
                hash: xxh3_64(text.as_bytes()),
                text,
                changed_since_prev: false,
            });
            return out;
        }
        None => {}
    }
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
    let shown_messages = rs.summary.as_ref().and_then(|s| p.summary_messages(s));
    match &rs.summary {
        Some(_) if shown_messages.is_some() => {
            push_msgs(&mut out, shown_messages.unwrap_or_default())
        }
        Some(SummaryPiece::Recorded { .. }) => {}
        Some(
            piece @ SummaryPiece::Simulated {
                covers,
                written: Some(w),
                tokens,
                number,
                ..
            },
        ) => {
            let by = p
                .summaries
                .and_then(|b| b.get(*w))
                .map_or_else(String::new, |s| {
                    format!(
                        "; written by {} ({}, call {})",
                        s.lineage.model,
                        s.lineage.endpoint,
                        s.lineage.call.get(..12).unwrap_or(&s.lineage.call)
                    )
                });
            let text = format!(
                "[simulated compaction {number}: replaces {} closed episodes{}{by}]\n{}\n",
                covers.len(),
                split_heads(p, rs, applied, t),
                super::written_request::summary_text(p, piece)
            );
            out.push(simulated_summary(text, *tokens));
        }
        Some(SummaryPiece::Simulated {
            covers,
            shown,
            tokens,
            number,
            ..
        }) => {
            let heads = split_heads(p, rs, applied, t);
            let mut text = format!(
                "[simulated compaction {number}: replaces {} closed episodes{heads}; compact tiers of {} (a stand-in for a written summary: an upper bound on what one keeps)]\n",
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
            out.push(simulated_summary(text, *tokens));
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
                    .tier_data_at(e, Tier::Full)
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

//! Tier generators (MODEL §5), run once at load. They produce texts ([`Draft`]s); the caller
//! counts all texts in one parallel batch and [`finalize`]s them into representations.
//!
//! **Full** is one chunk per message, the message as the model was sent it, in this stable
//! serialization (documented in `docs/episodes.md`):
//!
//! ```text
//! user:                                assistant:
//! <text parts, verbatim>               [reasoning] <reasoning text>
//! [file <name> <mime>]                 <text parts, verbatim>
//!                                      [tool <name>] <input as compact JSON>
//!                                      [result <name> <status>[, exit N]]
//!                                      <output, or the error>
//! ```
//!
//! A failed request's stored error is not in it: no agent
//! sends its stored error text back to the model (OpenCode 0.1.174 sent the errored message's
//! parts without its 2,419-token `AI_InvalidToolArgumentsError`). The failure stays on the
//! request: its status (`error`) in the replay, and a note saying what failed in `render` and the
//! explorer's context pane.
//!
//! The pruned variant replaces a pruned tool output by `[Old tool result content cleared]`.
//! **Dense** keeps texts verbatim, drops reasoning, clips long input strings and tool outputs to
//! head and tail, keeps errors whole. **Compact** is one chunk: a canonical record (objective,
//! outcome, constraints verbatim, decisions, rejected options with the error that killed them,
//! errors' first lines exact, files, commands, identifiers). **Anchor** is one line (episode id,
//! title, outcome, key identifiers). Pinned spans are in every tier: where a generator's text
//! lacks one, it is appended as `[pinned] <span>`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::classify::Classified;
use super::model::{Chunk, PrunedChunk, Representation, Strategy, Tier};
use super::rules::Rules;
use super::segment::Segment;
use crate::text::clip_chars;
use crate::trace::{Message, PartKind, ToolPart, ToolStatus, Trace};

pub use super::source::EpisodeSource;

pub const SOURCE_GENERATOR: &str = "tierscope-source/1";
pub const CASCADE_GENERATOR: &str = "tierscope-cascade/1";
pub const RECORD_GENERATOR: &str = "tierscope-record/1";
/// What OpenCode sends in place of a pruned tool output.
pub const PRUNED_OUTPUT: &str = "[Old tool result content cleared]";

/// The contract each tier promises.
pub fn contract(tier: Tier) -> &'static str {
    match tier {
        Tier::Full => "every message as sent; pinned spans verbatim",
        Tier::Dense => "texts verbatim, tool calls with inputs, outputs clipped head/tail, errors whole; pinned spans verbatim",
        Tier::Compact => "objective, outcome, decisions, rejected options with the error that killed them, errors' first lines exact, files, commands, identifiers; pinned spans verbatim",
        Tier::Anchor => "one line: episode id, title, outcome, what killed a rejected approach, key identifiers; pinned spans verbatim",
        Tier::Dropped => "nothing",
    }
}

/// A chunk before counting.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftChunk {
    pub message_id: String,
    pub message_index: usize,
    /// The step of a multi-step message (0 otherwise).
    pub step: u32,
    pub text: String,
    pub artefact: bool,
    /// `(time_compacted, text)` of the pruned variant.
    pub pruned: Option<(i64, String)>,
}

/// A representation before counting.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub tier: Tier,
    pub strategy: Strategy,
    pub generator: super::model::Text,
    pub contract: super::model::Text,
    pub source_message_ids: std::sync::Arc<[String]>,
    pub chunks: Vec<DraftChunk>,
}

impl Draft {
    /// Every text to count (chunks, then pruned variants).
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.chunks.iter().map(|c| c.text.as_str()).chain(
            self.chunks
                .iter()
                .filter_map(|c| c.pruned.as_ref().map(|(_, t)| t.as_str())),
        )
    }
}

/// Message ids that are compaction artefacts of the recording.
pub fn artefact_ids(trace: &Trace) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for c in &trace.compactions {
        s.extend(c.user_message_id.clone());
        s.extend(c.summary_message_id.clone());
        s.extend(c.continuation_message_id.clone());
    }
    s
}

/// Generate the four tiers of one episode by `strategy` (`Source` or `Cascade`).
pub fn generate(src: &EpisodeSource, strategy: Strategy) -> Vec<Draft> {
    let full = full_draft(src.trace, src.seg, strategy, src.artefacts);
    let text = joined(&full);
    let ids = super::needles::identifiers(&text);
    generate_below(src, strategy, full, &text, &ids)
}

/// A draft's text: its chunks joined by newlines (as [`Representation::text`]).
pub fn joined(d: &Draft) -> String {
    join(&d.chunks)
}

/// The generator name of a strategy's own tiers.
pub fn generator(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::Cascade => CASCADE_GENERATOR,
        Strategy::Record => RECORD_GENERATOR,
        _ => SOURCE_GENERATOR,
    }
}

/// The chunks of a per-message tier: one per message; a multi-step 0.x assistant message gives
/// one chunk per step (each step was a model request of its own, and a later step saw the
/// earlier ones). The full tier carries each chunk's pruned variant.
fn per_message_chunks(
    trace: &Trace,
    seg: &Segment,
    artefacts: &BTreeSet<String>,
    how: Fidelity,
) -> Vec<DraftChunk> {
    let msgs = &trace.messages[seg.first_message..=seg.last_message];
    let json_results = trace.wire.tool_results_as_json;
    let mut out = Vec::with_capacity(msgs.len());
    for (k, m) in msgs.iter().enumerate() {
        let dropped = dropped_after_own_turn(m);
        for (step, range) in step_ranges(m) {
            out.push(DraftChunk {
                message_id: m.id.clone(),
                message_index: seg.first_message + k,
                step,
                text: render(m, how, range.clone(), json_results),
                artefact: artefacts.contains(&m.id),
                pruned: match (how, dropped) {
                    (Fidelity::Full { .. }, Some(t)) => Some((t, String::new())),
                    (Fidelity::Full { .. }, None) => pruned_variant(m, range, json_results),
                    (Fidelity::Dense, _) => None,
                },
            });
        }
    }
    out
}

/// The full tier: one chunk per message (or step) as the model was sent it, with the pruned
/// variant.
pub fn full_draft(
    trace: &Trace,
    seg: &Segment,
    strategy: Strategy,
    artefacts: &BTreeSet<String>,
) -> Draft {
    let msgs = &trace.messages[seg.first_message..=seg.last_message];
    Draft {
        tier: Tier::Full,
        strategy,
        generator: generator(strategy).into(),
        contract: contract(Tier::Full).into(),
        source_message_ids: msgs.iter().map(|m| m.id.clone()).collect(),
        chunks: per_message_chunks(trace, seg, artefacts, Fidelity::Full { pruned: false }),
    }
}

/// A one-chunk representation of the whole episode (compact and anchor, the record's views),
/// on its first message; an artefact only when every message is one.
pub fn episode_chunk(full: &Draft, tier: Tier, text: String, contract: &'static str) -> Draft {
    let first = full.chunks.first();
    Draft {
        tier,
        strategy: full.strategy,
        generator: full.generator.clone(),
        contract: contract.into(),
        source_message_ids: full.source_message_ids.clone(),
        chunks: vec![DraftChunk {
            message_id: first.map(|c| c.message_id.clone()).unwrap_or_default(),
            message_index: first.map_or(0, |c| c.message_index),
            step: 0,
            text,
            artefact: !full.chunks.is_empty() && full.chunks.iter().all(|c| c.artefact),
            pruned: None,
        }],
    }
}

/// `full` and the tiers below it by `strategy` (`Source` or `Cascade`), made monotonic, with
/// the pins. `full_text` and `identifiers`: the full tier's text and its identifiers
/// ([`super::needles::identifiers`]).
pub fn generate_below(
    src: &EpisodeSource,
    strategy: Strategy,
    full: Draft,
    full_text: &str,
    identifiers: &BTreeSet<String>,
) -> Vec<Draft> {
    let EpisodeSource {
        trace,
        episode_id,
        seg,
        classified: cl,
        rules,
        artefacts,
    } = *src;
    let draft = |tier: Tier, chunks: Vec<DraftChunk>| Draft {
        tier,
        chunks,
        contract: contract(tier).into(),
        ..full.clone()
    };
    let one = |tier: Tier, text: String| episode_chunk(&full, tier, text, contract(tier));
    let mut out = match strategy {
        Strategy::Cascade => {
            let dense_chunks: Vec<DraftChunk> = full
                .chunks
                .iter()
                .map(|c| DraftChunk {
                    text: cascade_dense(&c.text),
                    pruned: None,
                    ..c.clone()
                })
                .collect();
            let dense_text = join(&dense_chunks);
            let compact_text = cascade_compact(episode_id, &cl.title, &dense_text, rules);
            let anchor_text = cascade_anchor(&compact_text);
            vec![
                draft(Tier::Dense, dense_chunks),
                one(Tier::Compact, compact_text),
                one(Tier::Anchor, anchor_text),
            ]
        }
        _ => vec![
            draft(
                Tier::Dense,
                per_message_chunks(trace, seg, artefacts, Fidelity::Dense),
            ),
            one(Tier::Compact, source_compact(episode_id, cl, full_text)),
            one(Tier::Anchor, source_anchor(episode_id, cl)),
        ],
    };
    out.insert(0, full);
    for d in &mut out {
        ensure_pins(d, &cl.pins);
    }
    let error_lines: Vec<&str> = cl
        .facts
        .failures
        .iter()
        .map(|f| f.failure.line.as_str())
        .collect();
    keep_lower_needles_of(&mut out, full_text, identifiers, &error_lines);
    out
}

/// Make the tiers monotonic by construction: every needle (an identifier of the full tier, or
/// one of `extra`, e.g. the episode's error lines) that a lower tier holds is appended as
/// `[kept] …` to each higher tier that lacks it, on the chunk of the message it comes from.
/// `drafts` are in tier order, full first; the full tier holds every needle by definition.
pub fn keep_lower_needles(drafts: &mut [Draft], full_text: &str, extra: &[&str]) {
    let ids = super::needles::identifiers(full_text);
    keep_lower_needles_of(drafts, full_text, &ids, extra);
}

/// [`keep_lower_needles`] with the full tier's identifiers already found.
pub fn keep_lower_needles_of(
    drafts: &mut [Draft],
    full_text: &str,
    identifiers: &BTreeSet<String>,
    extra: &[&str],
) {
    let needles: Vec<String> = identifiers
        .iter()
        .cloned()
        .chain(
            extra
                .iter()
                .filter(|e| !e.trim().is_empty() && full_text.contains(**e))
                .map(|e| (*e).to_owned()),
        )
        .collect();
    let Some((full, lower)) = drafts.split_first_mut() else {
        return;
    };
    // The first full chunk holding a needle names the message it belongs to.
    let home = |n: &str| {
        full.chunks
            .iter()
            .find(|c| c.text.contains(n))
            .map(|c| c.message_id.as_str())
    };
    // Bottom up, so a tier's kept needles are already in the tier below it when it is read.
    for hi in (0..lower.len().saturating_sub(1)).rev() {
        let (above, below) = lower.split_at_mut(hi + 1);
        let below_text = below
            .iter()
            .map(|d| join(&d.chunks))
            .collect::<Vec<_>>()
            .join("\n");
        let d = &mut above[hi];
        let text = join(&d.chunks);
        let mut missing: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
        for n in &needles {
            if below_text.contains(n.as_str()) && !text.contains(n.as_str()) {
                let k = home(n)
                    .and_then(|id| d.chunks.iter().position(|c| c.message_id == id))
                    .unwrap_or(0);
                missing.entry(k).or_default().push(n);
            }
        }
        for (k, ns) in missing {
            if let Some(c) = d.chunks.get_mut(k) {
                c.text.push_str("\n[kept] ");
                c.text.push_str(&ns.join(", "));
            }
        }
    }
}

/// Append `[pinned] <span>` for any pin a draft's text lacks (to its first chunk), so every
/// tier keeps its episode's pins (MODEL §2 law 2). Returns the pins it had to append.
pub fn ensure_pins(d: &mut Draft, pins: &[super::model::Pin]) -> Vec<String> {
    let text = join(&d.chunks);
    let missing: Vec<&str> = pins
        .iter()
        .map(|p| p.text.as_str())
        .filter(|p| !text.contains(p))
        .collect();
    let Some(first) = d.chunks.first_mut() else {
        return Vec::new();
    };
    for p in &missing {
        first.text.push_str("\n[pinned] ");
        first.text.push_str(p);
        if let Some((_, t)) = &mut first.pruned {
            t.push_str("\n[pinned] ");
            t.push_str(p);
        }
    }
    missing.into_iter().map(str::to_owned).collect()
}

fn join(chunks: &[DraftChunk]) -> String {
    chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------------
// Full
// ---------------------------------------------------------------------------------------------

/// One message as the model was sent it (see the module docs for the format).
pub fn render_full(m: &Message, pruned: bool) -> String {
    render(m, Fidelity::Full { pruned }, 0..m.parts.len(), false)
}

/// The parts of each chunk of a message: one range of all parts, or for an assistant message
/// holding several model requests (OpenCode ≤0.7) one range per step, from its `step-start`.
pub fn step_ranges(m: &Message) -> Vec<(u32, std::ops::Range<usize>)> {
    if !m.is_assistant() || m.summary || m.step_count() <= 1 {
        return vec![(0, 0..m.parts.len())];
    }
    let steps = m.part_steps();
    let mut out: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        match out.last_mut() {
            Some((cur, r)) if cur == s => r.end = i + 1,
            _ => out.push((*s, i..i + 1)),
        }
    }
    out
}

/// How [`render`] serializes a message: the full tier (as sent, optionally with the recorded
/// prunes) or the dense tier (no reasoning, agent marks, attached file text or subtask prompts;
/// long inputs and successful outputs clipped).
#[derive(Clone, Copy)]
enum Fidelity {
    Full { pruned: bool },
    Dense,
}

/// The one serializer of both per-message tiers, so dense is full with parts left out or
/// clipped, never a different rendering of the same part. `parts` is the range rendered (a step
/// of a multi-step message).
/// `json_results`: tool results as the JSON-encoded strings OpenCode 0.1.x sent.
fn render(m: &Message, how: Fidelity, parts: std::ops::Range<usize>, json_results: bool) -> String {
    let full = matches!(how, Fidelity::Full { .. });
    let mut out = String::from(if m.is_user() { "user:" } else { "assistant:" });
    for p in m.parts.get(parts).unwrap_or_default() {
        match &p.kind {
            PartKind::Text { text, ignored, .. } if !*ignored => line(&mut out, text),
            // Closed, so a text part after it is not taken for reasoning (cascade reads this).
            PartKind::Reasoning { text } if full => {
                line(&mut out, &format!("[reasoning] {text}"));
                line(&mut out, "[/reasoning]");
            }
            PartKind::File {
                mime,
                filename,
                url,
                source_text,
            } => {
                let name = filename.as_deref().unwrap_or(url);
                line(&mut out, &format!("[file {name} {mime}]"));
                if let Some(s) = source_text.as_ref().filter(|_| full) {
                    line(&mut out, s);
                }
            }
            PartKind::AgentMention { name } if full => line(&mut out, &format!("[agent {name}]")),
            PartKind::Subtask {
                prompt,
                description,
                agent,
            } => {
                line(&mut out, &format!("[subtask {agent}: {description}]"));
                if full {
                    out.push('\n');
                    out.push_str(prompt);
                }
            }
            PartKind::Compaction(_) => line(&mut out, "[compaction requested]"),
            PartKind::Tool(t) => {
                let input = if full {
                    compact_json(&t.input)
                } else {
                    compact_json(&clip_json(&t.input))
                };
                line(&mut out, &t.call_line(&input));
                line(&mut out, &t.result_header());
                let body = match how {
                    Fidelity::Full { pruned: true } if t.time_compacted.is_some() => {
                        PRUNED_OUTPUT.to_owned()
                    }
                    Fidelity::Dense if !t.failed() => {
                        clip_lines(&tool_body(t), DENSE_HEAD_LINES, DENSE_TAIL_LINES)
                    }
                    _ => tool_body(t),
                };
                if json_results && full {
                    line(&mut out, &serde_json::Value::String(body).to_string());
                } else if !body.is_empty() {
                    line(&mut out, &body);
                }
            }
            // Ignored text, and bookkeeping parts the model is not sent (or dense leaves out).
            _ => {}
        }
    }
    out
}

/// When the agent stopped sending an errored assistant message: from just after its own requests
/// (its later steps still saw it), if its release dropped such messages from the history
/// ([`Message::dropped_after_own_requests`]). Modelled as a prune of the whole message.
fn dropped_after_own_turn(m: &Message) -> Option<i64> {
    if !m.dropped_after_own_requests {
        return None;
    }
    let tools_end = m.tool_parts().filter_map(|(_, t)| t.time_end).max();
    let end = [Some(m.time_created), m.time_completed, tools_end]
        .into_iter()
        .flatten()
        .max()?;
    Some(end + 1)
}

fn pruned_variant(
    m: &Message,
    parts: std::ops::Range<usize>,
    json_results: bool,
) -> Option<(i64, String)> {
    let t = m
        .parts
        .get(parts.clone())?
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Tool(t) => t.time_compacted,
            _ => None,
        })
        .min()?;
    Some((
        t,
        render(m, Fidelity::Full { pruned: true }, parts, json_results),
    ))
}

fn line(out: &mut String, s: &str) {
    out.push('\n');
    out.push_str(s);
}

fn compact_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn tool_body(t: &ToolPart) -> String {
    match (&t.error, &t.output) {
        (Some(e), _) if t.status == ToolStatus::Error => e.clone(),
        (_, Some(o)) => o.clone(),
        (Some(e), None) => e.clone(),
        (None, None) => String::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Dense
// ---------------------------------------------------------------------------------------------

const DENSE_HEAD_LINES: usize = 6;
const DENSE_TAIL_LINES: usize = 3;
const DENSE_LINE_CHARS: usize = 200;
const DENSE_INPUT_CHARS: usize = 160;

/// Long string values of a tool input clipped to head and tail.
fn clip_json(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > DENSE_INPUT_CHARS => Value::String(clip_middle(
            s,
            DENSE_INPUT_CHARS * 2 / 3,
            DENSE_INPUT_CHARS / 3,
        )),
        Value::Array(a) => Value::Array(a.iter().map(clip_json).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), clip_json(v))).collect())
        }
        other => other.clone(),
    }
}

fn clip_middle(s: &str, head: usize, tail: usize) -> String {
    let n = s.chars().count();
    if n <= head + tail {
        return s.to_owned();
    }
    let h: String = s.chars().take(head).collect();
    let t: String = s.chars().skip(n - tail).collect();
    format!("{h}…[{} chars clipped]…{t}", n - head - tail)
}

/// Head and tail lines, each line clipped.
fn clip_lines(s: &str, head: usize, tail: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let fix = |l: &&str| clip_chars(l, DENSE_LINE_CHARS);
    if lines.len() <= head + tail + 1 {
        return lines.iter().map(fix).collect::<Vec<_>>().join("\n");
    }
    let mut v: Vec<String> = lines[..head].iter().map(fix).collect();
    v.push(format!("…[{} lines clipped]…", lines.len() - head - tail));
    v.extend(lines[lines.len() - tail..].iter().map(fix));
    v.join("\n")
}

// ---------------------------------------------------------------------------------------------
// Compact and anchor (source)
// ---------------------------------------------------------------------------------------------

/// `full_text` is what the model saw: files it never saw named are left out.
fn source_compact(id: &str, cl: &Classified, full_text: &str) -> String {
    let f = &cl.facts;
    let mut out = format!("[{id} compact] {}", cl.title);
    if !f.objective.text.is_empty() {
        line(&mut out, &format!("objective: {}", f.objective.text));
    }
    line(&mut out, &format!("outcome: {}", f.outcome.text));
    if !cl.pins.is_empty() {
        line(&mut out, "constraints (verbatim):");
        for p in &cl.pins {
            line(&mut out, &format!("- {}", p.text));
        }
    }
    if !f.decisions.is_empty() {
        line(&mut out, "decisions:");
        for d in &f.decisions {
            line(&mut out, &format!("- {d}"));
        }
    }
    if !f.rejections.is_empty() {
        line(&mut out, "rejected:");
        for r in &f.rejections {
            let x = &r.found;
            let approach =
                super::facts::approach_name(x.approach.as_ref().map(|a| a.text.as_str()), &x.files);
            let killed = r.quote().map_or_else(
                || "no failing command decided it".to_owned(),
                |q| format!("killed by {q}"),
            );
            line(
                &mut out,
                &format!("- {approach} — {killed}; then {}", r.evidence),
            );
        }
    }
    // A `grep` that found nothing or a `diff` that found differences is no error.
    let errors: Vec<_> = f
        .failures
        .iter()
        .filter(|e| e.failure.kind != super::evidence::FailureKind::NoMatch)
        .collect();
    if !errors.is_empty() {
        line(&mut out, "errors:");
        for e in errors {
            line(&mut out, &format!("- {}", e.quote()));
        }
    }
    if !f.todos.is_empty() {
        line(&mut out, "status:");
        for t in &f.todos {
            line(&mut out, &format!("- {t}"));
        }
    }
    let files: Vec<String> = f
        .files
        .iter()
        .filter(|p| full_text.contains(p.as_str()))
        .cloned()
        .collect();
    list_line(&mut out, "files", &files, 12);
    let cmds: Vec<String> = f.commands.iter().map(|c| format!("`{c}`")).collect();
    list_line(&mut out, "commands", &cmds, 10);
    list_line(&mut out, "identifiers", &f.identifiers, 16);
    out
}

fn list_line(out: &mut String, label: &str, items: &[String], max: usize) {
    if items.is_empty() {
        return;
    }
    let mut s = items
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        // No count: a number the source does not hold would read as a claim about it.
        s.push_str(", …");
    }
    line(out, &format!("{label}: {s}"));
}

fn source_anchor(id: &str, cl: &Classified) -> String {
    let mut s = format!(
        "[{id}] {} — {}",
        cl.title,
        clip_chars(&cl.facts.outcome.text, 80)
    );
    // The killing evidence, by the evidence rule: the command and its decisive line.
    if let Some(r) = cl.facts.rejections.first() {
        match &r.found.killed_by {
            Some(k) => s.push_str(&format!(
                "; rejected after `{}` ({}): \"{}\"",
                clip_chars(&k.command, 60),
                k.what(),
                clip_chars(&k.line, 100)
            )),
            None => s.push_str(&format!(
                "; rejected, no failing command: {}",
                clip_chars(&r.evidence, 80)
            )),
        }
    }
    // Short identifiers only: an anchor names things, it does not quote them.
    let ids: Vec<&str> = cl
        .facts
        .identifiers
        .iter()
        .filter(|i| i.chars().count() <= 32)
        .take(4)
        .map(String::as_str)
        .collect();
    if !ids.is_empty() {
        s.push_str(&format!(" [{}]", ids.join(", ")));
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Cascade: each tier from the text of the one above
// ---------------------------------------------------------------------------------------------

fn is_header(l: &str) -> bool {
    [
        "[reasoning]",
        "[/reasoning]",
        "[tool ",
        "[result ",
        "[file ",
        "[subtask ",
        "[agent ",
    ]
    .iter()
    .any(|h| l.starts_with(h))
}

/// A `[result …]` header of a failed call: status error, or a non-zero exit.
fn is_failed_result(l: &str) -> bool {
    l.starts_with("[result ")
        && (l.contains(" error") || (l.contains(", exit ") && !l.ends_with(", exit 0]")))
}

/// Dense from a full chunk: drop reasoning blocks, clip long inputs and successful results.
fn cascade_dense(full: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    let mut mode = 0u8; // 0 text, 1 reasoning (dropped), 2 result ok (clipped), 3 result failed (kept)
    let flush = |mode: u8, block: &mut Vec<&str>, out: &mut Vec<String>| {
        match mode {
            1 => {}
            2 => {
                let s = clip_lines(&block.join("\n"), DENSE_HEAD_LINES, DENSE_TAIL_LINES);
                if !s.is_empty() {
                    out.push(s);
                }
            }
            _ => out.extend(block.iter().map(|l| (*l).to_owned())),
        }
        block.clear();
    };
    for l in full.lines() {
        if is_header(l) || l == "user:" || l == "assistant:" {
            flush(mode, &mut block, &mut out);
            mode = if l.starts_with("[reasoning]") {
                1
            } else if l.starts_with("[result ") {
                if is_failed_result(l) {
                    3
                } else {
                    2
                }
            } else {
                0
            };
            if l == "[/reasoning]" {
                continue;
            }
            if mode != 1 {
                out.push(if l.starts_with("[tool ") {
                    clip_middle(l, 160, 60)
                } else {
                    l.to_owned()
                });
            }
        } else {
            block.push(l);
        }
    }
    flush(mode, &mut block, &mut out);
    out.join("\n")
}

/// Compact from dense text: commands, error lines after failed results, sentences that decide or
/// reject, identifiers.
fn cascade_compact(id: &str, title: &str, dense: &str, rules: &Rules) -> String {
    let mut out = format!("[{id} compact] {title}");
    let mut commands = Vec::new();
    let mut errors = Vec::new();
    let mut said = Vec::new();
    let lines: Vec<&str> = dense.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("[tool bash] ") {
            if let Ok(v) = serde_json::from_str::<Value>(rest) {
                if let Some(c) = v.get("command").and_then(Value::as_str) {
                    let c = format!("`{}`", clip_chars(c.lines().next().unwrap_or(""), 120));
                    if !commands.contains(&c) {
                        commands.push(c);
                    }
                }
            }
        } else if is_failed_result(l) {
            let body: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|x| !is_header(x))
                .copied()
                .collect();
            let first = body
                .iter()
                .find(|b| rules.is_error_line(b))
                .or(body.iter().find(|b| !b.trim().is_empty()));
            if let Some(f) = first {
                errors.push(format!("- {}: {}", &l[1..l.len() - 1], f.trim_end()));
            }
        } else if !is_header(l) {
            for s in super::reading::sentences(l) {
                if rules.is_decision_or_rejection(s) {
                    said.push(format!("- {}", super::prose::plain(s)));
                }
            }
        }
    }
    if !said.is_empty() {
        line(&mut out, "said:");
        for s in said {
            line(&mut out, &s);
        }
    }
    if !errors.is_empty() {
        line(&mut out, "errors:");
        for e in errors {
            line(&mut out, &e);
        }
    }
    list_line(&mut out, "commands", &commands, 10);
    let ids = super::reading::identifiers(dense);
    list_line(&mut out, "identifiers", &ids, 16);
    out
}

/// Anchor from compact: the title line, the first error, a few identifiers.
fn cascade_anchor(compact: &str) -> String {
    let mut lines = compact.lines();
    let head = lines.next().unwrap_or("").replacen(" compact]", "]", 1);
    let mut s = head;
    let rest: Vec<&str> = lines.collect();
    if let Some(i) = rest.iter().position(|l| *l == "errors:") {
        if let Some(e) = rest.get(i + 1) {
            s.push_str(&format!(
                " — {}",
                clip_chars(e.trim_start_matches("- "), 100)
            ));
        }
    }
    if let Some(ids) = rest.iter().find_map(|l| l.strip_prefix("identifiers: ")) {
        let few: Vec<&str> = ids.split(", ").take(4).collect();
        s.push_str(&format!(" [{}]", few.join(", ")));
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Counting and the legal chain
// ---------------------------------------------------------------------------------------------

/// Turn drafts into representations with the counts `counts` (in the order of
/// [`Draft::texts`], drafts in order). Tiers not smaller than the tier above are left out and
/// explained in the returned notes.
pub fn finalize(
    episode_id: &str,
    drafts: Vec<Draft>,
    counts: &mut impl Iterator<Item = u32>,
) -> (BTreeMap<Tier, Representation>, Vec<String>) {
    legal_chain(representations(episode_id, drafts, counts))
}

/// [`finalize`] keeping every draft, also a tier not smaller than the one above: for texts an
/// external renderer shows at that tier whatever their size (Magic Context's compartments).
/// Such a tier stays outside the legal range ([`super::Episode::legal_tiers`]); the notes say
/// which.
pub fn finalize_as_given(
    episode_id: &str,
    drafts: Vec<Draft>,
    counts: &mut impl Iterator<Item = u32>,
) -> (BTreeMap<Tier, Representation>, Vec<String>) {
    let reps = representations(episode_id, drafts, counts);
    let (_, notes) = legal_chain(reps.clone());
    let notes = notes
        .into_iter()
        .map(|n| n.replacen("not generated", "kept as given, outside the legal range", 1))
        .collect();
    (reps.into_iter().map(|r| (r.tier, r)).collect(), notes)
}

fn representations(
    episode_id: &str,
    drafts: Vec<Draft>,
    counts: &mut impl Iterator<Item = u32>,
) -> Vec<Representation> {
    let mut reps = Vec::new();
    for d in drafts {
        let main: Vec<u32> = d
            .chunks
            .iter()
            .map(|_| counts.next().unwrap_or(0))
            .collect();
        let pruned_n = d.chunks.iter().filter(|c| c.pruned.is_some()).count();
        let mut pruned_counts: Vec<u32> =
            (0..pruned_n).map(|_| counts.next().unwrap_or(0)).collect();
        pruned_counts.reverse();
        let chunks: Vec<Chunk> = d
            .chunks
            .into_iter()
            .zip(main)
            .map(|(c, tokens)| Chunk {
                hash: hash(&c.text),
                message_id: c.message_id,
                message_index: c.message_index,
                step: c.step,
                tokens,
                artefact: c.artefact,
                pruned: c.pruned.map(|(time_compacted, text)| PrunedChunk {
                    time_compacted,
                    hash: hash(&text),
                    tokens: pruned_counts.pop().unwrap_or(0),
                    text,
                }),
                text: c.text,
            })
            .collect();
        let tokens = chunks.iter().map(|c| c.tokens).sum();
        reps.push(Representation {
            episode_id: episode_id.to_owned(),
            tier: d.tier,
            strategy: d.strategy,
            generator: d.generator,
            source_message_ids: d.source_message_ids,
            contract: d.contract,
            chunks,
            tokens,
        });
    }
    reps
}

/// Keep tiers whose tokens are strictly below the last kept tier above them.
pub fn legal_chain(mut reps: Vec<Representation>) -> (BTreeMap<Tier, Representation>, Vec<String>) {
    reps.sort_by_key(|r| r.tier);
    let mut kept: BTreeMap<Tier, Representation> = BTreeMap::new();
    let mut notes = Vec::new();
    let mut above: Option<(Tier, u32)> = None;
    for r in reps {
        match above {
            Some((t, n)) if r.tokens >= n => notes.push(format!(
                "{} not generated: {} tokens, not smaller than {} ({} tokens)",
                r.tier, r.tokens, t, n
            )),
            _ => {
                above = Some((r.tier, r.tokens));
                kept.insert(r.tier, r);
            }
        }
    }
    (kept, notes)
}

pub fn hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(tier: Tier, texts: &[(&str, &str)]) -> Draft {
        Draft {
            tier,
            strategy: Strategy::Source,
            generator: SOURCE_GENERATOR.into(),
            contract: contract(tier).into(),
            source_message_ids: texts.iter().map(|(id, _)| (*id).to_owned()).collect(),
            chunks: texts
                .iter()
                .enumerate()
                .map(|(k, (id, t))| DraftChunk {
                    message_id: (*id).to_owned(),
                    message_index: k,
                    step: 0,
                    text: (*t).to_owned(),
                    artefact: false,
                    pruned: None,
                })
                .collect(),
        }
    }

    #[test]
    fn lower_needles_reach_every_higher_tier_on_their_message() {
        let full = draft(
            Tier::Full,
            &[
                ("m1", "user: go"),
                ("m2", "ls: vendor/a-0.2.3/Cargo.toml\nerror: boom"),
            ],
        );
        let full_text = join(&full.chunks);
        let mut d = vec![
            full,
            draft(Tier::Dense, &[("m1", "user: go"), ("m2", "ls: …")]),
            draft(Tier::Compact, &[("m1", "files: vendor/a-0.2.3/Cargo.toml")]),
            draft(Tier::Anchor, &[("m1", "[E0] go — error: boom")]),
        ];
        keep_lower_needles(&mut d, &full_text, &["error: boom"]);
        assert_eq!(d[1].chunks[0].text, "user: go");
        assert_eq!(
            d[1].chunks[1].text,
            "ls: …\n[kept] vendor/a-0.2.3/Cargo.toml, error: boom"
        );
        assert_eq!(
            d[2].chunks[0].text,
            "files: vendor/a-0.2.3/Cargo.toml\n[kept] error: boom"
        );
        assert_eq!(d[3].chunks[0].text, "[E0] go — error: boom");
    }
}

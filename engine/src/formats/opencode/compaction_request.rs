//! What OpenCode sent its compaction agent: a pure builder of the compaction (summary) call's
//! request from the stored session, by the release's rules ([`Dialect::compaction_shape`]).
//!
//! Every release sends the compaction call without tools and with its own system prompt, then
//! differs in what it shows of the history:
//!
//! * ≤1.0.68 ([`CompactionShape::Messages`]): every message since the previous summary (that
//!   summary first; errored messages included), tool outputs whole, then the instruction.
//! * 1.0.69–1.14.18 ([`CompactionShape::MessagesWithCompaction`]): what a normal request would
//!   see, ending with the compaction message ("What did we do so far?"), then the instruction.
//! * 1.14.19–1.18.24 ([`CompactionShape::HeadClipped`]): only the head before the kept tail,
//!   earlier compactions taken out and the last summary quoted in `<previous-summary>` (from
//!   1.14.21), tool outputs clipped to 2,000 characters.
//! * 1.18.25+ ([`CompactionShape::HeadAsText`]): the same head serialized into one user message
//!   (`[User]: …`, `[Assistant tool call]: …`, `[Tool result]: …`), the earlier summary in
//!   `<prior-summary>`, tool results clipped to 2,000 characters.
//!
//! The prompt texts (system prompt, instruction, template) come from a table of OpenCode's own
//! texts per release range (`data/compaction_prompts.json`). Message-shaped requests are written in
//! the serialization of the tiers' full text (`role:` then the content, a call as `[tool name]
//! arguments`, each result a message headed `[result name status]`), so a message costs the same
//! in a compaction call as in the requests around it. (A lighter `call name arguments` and
//! `tool:` left a 0.1.174 summary call of 110 messages and 104 calls 13 % short of what the model
//! counted: the markup is per message, and summary calls carry many.) The environment block that ≤1.0.68 also sent as
//! system is not stored; the replay's compaction system chunk carries it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dialect::{parse_version, CompactionShape, Dialect, Version};
use crate::trace::model::{
    CompactionStyle, CompletedAnswer, Message, PartKind, ToolPart, ToolStatus, Trace,
};

/// What OpenCode sends in place of an output it pruned.
pub const PRUNED_OUTPUT: &str = "[Old tool result content cleared]";
/// Tool outputs longer than this (UTF-16 code units, as JavaScript counts) are clipped in the
/// compaction call of 1.14.21+.
pub const CLIP_CHARS: usize = 2000;
/// The compaction message as sent (1.0.69+).
pub const COMPACTION_PROMPT: &str = "What did we do so far?";

/// One compaction call as OpenCode built it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionRequest {
    /// Index of the compaction in [`Trace::compactions`].
    pub compaction: usize,
    /// The summary call's request index.
    pub request: usize,
    pub shape: CompactionShape,
    /// Message indices of the history it showed, in the order sent.
    pub history: Vec<usize>,
    /// Tool outputs clipped for it.
    pub clipped_outputs: usize,
    /// An earlier summary quoted in the prompt (not sent as messages).
    pub previous_summary: bool,
    /// The request's text: system prompt, history, instruction.
    pub text: String,
}

/// The fixed part of a compaction call of this release: its system prompt and the instruction
/// (with the summary template where the release sends one), without any history.
pub fn fixed_prompt_text(d: &Dialect) -> String {
    let Some(p) = prompts_for(d.version) else {
        return String::new();
    };
    let shape = d.compaction_shape();
    let instruction = match shape {
        CompactionShape::HeadAsText => text_prompt(Some(&p), "", None),
        _ => message_prompt(Some(&p), shape, d, None),
    };
    let mut out = String::new();
    push_message(&mut out, "system", &p.system);
    push_message(&mut out, "user", &instruction);
    out
}

/// OpenCode's compaction prompt texts for one release range.
#[derive(Debug, Clone, Deserialize)]
pub struct PromptTexts {
    pub from: String,
    pub to: String,
    pub system: String,
    /// The final instruction of message-shaped requests (≤1.14.20).
    #[serde(default)]
    pub instruction: Option<String>,
    /// The first anchored summary's instruction (1.14.21+).
    #[serde(default)]
    pub first: Option<String>,
    /// The update instruction with `{PREVIOUS_SUMMARY}` (1.14.21–1.18.24).
    #[serde(default)]
    pub update: Option<String>,
    /// The rules added when a `<prior-summary>` is quoted (1.18.25+).
    #[serde(default)]
    pub update_rules: Option<String>,
    #[serde(default)]
    pub template: Option<String>,
}

#[derive(Deserialize)]
struct PromptTable {
    ranges: Vec<PromptTexts>,
}

const PROMPTS_JSON: &str = include_str!("data/compaction_prompts.json");

/// The prompt texts of `version` (the newest range for a newer or unknown release).
pub fn prompts_for(version: Option<Version>) -> Option<PromptTexts> {
    let table: PromptTable = serde_json::from_str(PROMPTS_JSON).ok()?;
    let v = version.unwrap_or((u64::MAX, 0, 0));
    let mut best: Option<PromptTexts> = None;
    for r in table.ranges {
        let (Some(from), Some(to)) = (parse_version(&r.from), parse_version(&r.to)) else {
            continue;
        };
        if v >= from && v <= to {
            return Some(r);
        }
        if from <= v {
            best = Some(r);
        }
    }
    best
}

/// Build every recorded compaction call of `trace` (those whose summary call is a request).
pub fn build_all(trace: &Trace) -> Vec<CompactionRequest> {
    (0..trace.compactions.len())
        .filter_map(|ci| build(trace, ci))
        .collect()
}

/// Build the request of compaction `ci`'s summary call.
pub fn build(trace: &Trace, ci: usize) -> Option<CompactionRequest> {
    let c = trace.compactions.get(ci)?;
    let request = c.summary_request?;
    let summary = trace.requests.get(request)?.message_index;
    let d = &Dialect::of(&trace.origin);
    let compaction_msg = c
        .user_message_id
        .as_deref()
        .and_then(|id| trace.message_index(id));
    // The v2 loop (1.18.33) sends the text form without any system prompt.
    let v2 = compaction_msg.is_some_and(|i| trace.messages[i].own_history);
    let shape = if v2 {
        CompactionShape::HeadAsText
    } else {
        d.compaction_shape()
    };
    let prompts = prompts_for(d.version);
    let at = trace.requests[request].time_created;
    // Where the history ends: the compaction message (or, for an old-style summary, the summary).
    let end = compaction_msg.unwrap_or(summary);
    let mut view = view_before(trace, end);
    let mut previous: Option<String> = None;
    match shape {
        CompactionShape::Messages => {}
        CompactionShape::MessagesWithCompaction => view.extend(compaction_msg),
        CompactionShape::HeadClipped | CompactionShape::HeadAsText => {
            let quote = shape == CompactionShape::HeadAsText || d.quotes_previous_summary();
            if quote {
                let pairs = completed_pairs(trace, &view);
                if let Some(&(_, s)) = pairs.last() {
                    previous = Some(summary_text(&trace.messages[s]));
                }
                let hidden: Vec<usize> = pairs.iter().flat_map(|&(u, s)| [u, s]).collect();
                view.retain(|m| !hidden.contains(m));
            }
            if let Some(ts) = c
                .tail_start_id
                .as_deref()
                .and_then(|id| trace.message_index(id))
            {
                if let Some(k) = view.iter().position(|&m| m == ts) {
                    view.truncate(k);
                }
            }
        }
    }
    let filter_errors = matches!(
        shape,
        CompactionShape::MessagesWithCompaction | CompactionShape::HeadClipped
    );
    view.retain(|&mi| !filter_errors || d.resends(&trace.messages[mi]));
    let mut clipped = 0usize;
    let text = match shape {
        CompactionShape::HeadAsText => {
            let history: Vec<String> = view
                .iter()
                .map(|&mi| serialize_text(&trace.messages[mi], at, &mut clipped))
                .filter(|s| !s.is_empty())
                .collect();
            let user = text_prompt(prompts.as_ref(), &history.join("\n\n"), previous.as_deref());
            let mut out = String::new();
            if let Some(p) = prompts.as_ref().filter(|_| !v2) {
                push_message(&mut out, "system", &p.system);
            }
            push_message(&mut out, "user", &user);
            out
        }
        _ => {
            let clip = shape == CompactionShape::HeadClipped && d.quotes_previous_summary();
            let mut out = String::new();
            if let Some(p) = &prompts {
                push_message(&mut out, "system", &p.system);
            }
            for &mi in &view {
                for w in wire_messages(d, &trace.messages[mi], at, clip, &mut clipped) {
                    out.push_str(&w);
                }
            }
            push_message(
                &mut out,
                "user",
                &message_prompt(prompts.as_ref(), shape, d, previous.as_deref()),
            );
            out
        }
    };
    Some(CompactionRequest {
        compaction: ci,
        request,
        shape,
        history: view,
        clipped_outputs: clipped,
        previous_summary: previous.is_some(),
        text,
    })
}

/// The messages OpenCode showed the model before message `end` (exclusive), in the order it
/// sent them: everything, or from the last compaction before `end` on (its compaction message
/// and summary, the kept tail, then what followed). Errored messages are not filtered here.
pub fn view_before(trace: &Trace, end: usize) -> Vec<usize> {
    let last = trace
        .compactions
        .iter()
        .filter_map(|c| {
            let s = c
                .summary_message_id
                .as_deref()
                .and_then(|id| trace.message_index(id))?;
            (s < end && summary_completed(trace, c.style, &trace.messages[s])).then_some((c, s))
        })
        .last();
    let start = trace.context_start(end.saturating_sub(1));
    let Some((c, s)) = last.filter(|(_, s)| *s >= start) else {
        return (start..end).collect();
    };
    match c.style {
        CompactionStyle::FromSummary => (s..end).collect(),
        CompactionStyle::BeforeTail => {
            let cu = c
                .user_message_id
                .as_deref()
                .and_then(|id| trace.message_index(id))
                .unwrap_or(s);
            let mut v = vec![cu, s];
            if let Some(ts) = c
                .tail_start_id
                .as_deref()
                .and_then(|id| trace.message_index(id))
            {
                // The v2 loop showed its tail inside the checkpoint but keeps it as history:
                // the next compaction call serializes it again.
                v.extend((ts..cu).filter(|m| *m != s));
            }
            v.extend((s + 1..end).filter(|m| *m != cu));
            v
        }
    }
}

/// A summary ends the history before it once it finished (1.0.69+: `finish` and, from 1.2.16,
/// no error; an old-style summary counts even when it failed, as 0.x did).
fn summary_completed(trace: &Trace, style: CompactionStyle, m: &Message) -> bool {
    match style {
        CompactionStyle::FromSummary => true,
        CompactionStyle::BeforeTail => {
            // A v2 compaction row is written once it has its summary.
            let finished = m.finish.is_some() || m.time_completed.is_some() || m.own_history;
            let errorless =
                m.error.is_none() || Dialect::of(&trace.origin).era < super::dialect::Era::Sqlite;
            finished && errorless
        }
    }
}

/// Completed earlier compactions inside `view`: (compaction message, summary) pairs.
fn completed_pairs(trace: &Trace, view: &[usize]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for c in &trace.compactions {
        let (Some(u), Some(s)) = (
            c.user_message_id
                .as_deref()
                .and_then(|id| trace.message_index(id)),
            c.summary_message_id
                .as_deref()
                .and_then(|id| trace.message_index(id)),
        ) else {
            continue;
        };
        let m = &trace.messages[s];
        let finished = m.finish.is_some() || m.own_history;
        if view.contains(&u) && view.contains(&s) && m.error.is_none() && finished {
            out.push((u, s));
        }
    }
    out
}

/// A summary's text as OpenCode quoted it: text parts trimmed, non-empty, joined by a blank line.
fn summary_text(m: &Message) -> String {
    let parts: Vec<&str> = m
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text {
                text,
                synthetic: false,
                ..
            } => Some(text.trim()),
            _ => None,
        })
        .filter(|t| !t.is_empty())
        .collect();
    parts.join("\n\n").trim().to_owned()
}

/// One message of `role` (`role:`, then its content).
fn push_message(out: &mut String, role: &str, content: &str) {
    push_headed(out, &format!("{role}:"), content);
}

/// One message under the line `head` (a role, or a tool result's `[result …]` line).
fn push_headed(out: &mut String, head: &str, content: &str) {
    out.push_str(head);
    out.push('\n');
    out.push_str(content);
    out.push('\n');
}

/// The final user message of a message-shaped compaction call.
pub(super) fn message_prompt(
    p: Option<&PromptTexts>,
    shape: CompactionShape,
    d: &Dialect,
    previous: Option<&str>,
) -> String {
    let Some(p) = p else {
        return String::new();
    };
    if shape == CompactionShape::HeadClipped && d.quotes_previous_summary() {
        let anchor = match (previous, &p.update) {
            (Some(prev), Some(u)) => u.replace("{PREVIOUS_SUMMARY}", prev),
            _ => p.first.clone().unwrap_or_default(),
        };
        return [Some(anchor), p.template.clone()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n\n");
    }
    p.instruction.clone().unwrap_or_default()
}

/// The one user message of a 1.18.25+ compaction call.
pub(super) fn text_prompt(
    p: Option<&PromptTexts>,
    history: &str,
    previous: Option<&str>,
) -> String {
    let conv =
        format!("Here is the conversation so far:\n\n<conversation>\n{history}\n</conversation>");
    let template = p.and_then(|p| p.template.clone()).unwrap_or_default();
    match previous {
        Some(prev) => [
            conv,
            format!(
                "Here is the summary of the conversation before the <conversation> above:\n\n\
                 <prior-summary>\n{prev}\n</prior-summary>"
            ),
            p.and_then(|p| p.update_rules.clone()).unwrap_or_default(),
            template,
        ]
        .join("\n\n"),
        None => [
            conv,
            p.and_then(|p| p.first.clone()).unwrap_or_default(),
            template,
        ]
        .join("\n\n"),
    }
}

/// The messages one stored message became on the wire (neutral serialization, see the module
/// docs): a user message, or per step an assistant message and one tool message per call.
fn wire_messages(
    d: &Dialect,
    m: &Message,
    at: i64,
    clip: bool,
    clipped: &mut usize,
) -> Vec<String> {
    let mut out = Vec::new();
    if m.is_user() {
        let mut lines: Vec<String> = Vec::new();
        for p in &m.parts {
            match &p.kind {
                PartKind::Text { text, ignored, .. } if !*ignored => lines.push(text.clone()),
                PartKind::File {
                    mime,
                    filename,
                    url,
                    ..
                } if mime != "text/plain" => lines.push(format!(
                    "[Attached {mime}: {}]",
                    filename.as_deref().unwrap_or(url)
                )),
                PartKind::Compaction(_) => lines.push(COMPACTION_PROMPT.to_owned()),
                PartKind::Subtask { .. } => {
                    lines.push("The following tool was executed by the user".to_owned())
                }
                _ => {}
            }
        }
        if !lines.is_empty() {
            let mut s = String::new();
            push_message(&mut s, "user", &lines.join("\n"));
            out.push(s);
        }
        return out;
    }
    // 0.1.x rebuilt a stored answer in the AI SDK's blocks; later releases sent it step by step.
    let groups: Vec<Vec<usize>> = if d.wire().completed_answer == CompletedAnswer::ToolCallsMerged {
        CompletedAnswer::rebuilt_blocks(m)
    } else {
        let steps = m.part_steps();
        let n_steps = steps.last().map_or(0, |s| s + 1) as usize;
        let mut by_step = vec![Vec::new(); n_steps.max(1)];
        for (i, &s) in steps.iter().enumerate() {
            by_step[s as usize].push(i);
        }
        by_step
    };
    for group in groups {
        let mut content = String::new();
        let mut calls: Vec<&ToolPart> = Vec::new();
        for p in group.iter().map(|&i| &m.parts[i]) {
            match &p.kind {
                PartKind::Text { text, ignored, .. } if !*ignored => content.push_str(text),
                PartKind::Reasoning { text } if d.sends_stored_reasoning() => {
                    content.push_str(text);
                    content.push('\n');
                }
                PartKind::Tool(t)
                    if !matches!(t.status, ToolStatus::Pending | ToolStatus::Running) =>
                {
                    calls.push(t)
                }
                _ => {}
            }
        }
        if content.is_empty() && calls.is_empty() {
            continue;
        }
        for t in &calls {
            content.push('\n');
            content.push_str(&t.call_line(&compact_json(&t.input)));
        }
        let mut s = String::new();
        push_message(&mut s, "assistant", &content);
        out.push(s);
        for t in calls {
            let mut r = String::new();
            push_headed(
                &mut r,
                &t.result_header(),
                &if d.json_encodes_tool_results() {
                    Value::String(tool_result(t, at, clip, clipped, ClipStyle::Marker)).to_string()
                } else {
                    tool_result(t, at, clip, clipped, ClipStyle::Marker)
                },
            );
            out.push(r);
        }
    }
    out
}

#[derive(Clone, Copy)]
enum ClipStyle {
    /// 1.14.21+: `\n[Tool output truncated for compaction: omitted N chars]`.
    Marker,
    /// 1.18.25+: `\n[truncated]`.
    Short,
}

fn tool_result(t: &ToolPart, at: i64, clip: bool, clipped: &mut usize, style: ClipStyle) -> String {
    if t.status == ToolStatus::Error {
        return t.error.clone().unwrap_or_default();
    }
    if t.time_compacted.is_some_and(|c| c <= at) {
        return PRUNED_OUTPUT.to_owned();
    }
    let out = t.output.clone().unwrap_or_default();
    if !clip {
        return out;
    }
    match clip_utf16(&out, CLIP_CHARS) {
        Some((head, omitted)) => {
            *clipped += 1;
            match style {
                ClipStyle::Marker => format!(
                    "{head}\n[Tool output truncated for compaction: omitted {omitted} chars]"
                ),
                ClipStyle::Short => format!("{head}\n[truncated]"),
            }
        }
        None => out,
    }
}

/// The first `max` UTF-16 code units of `s` and how many were left out, or `None` if `s` fits.
fn clip_utf16(s: &str, max: usize) -> Option<(&str, usize)> {
    let total: usize = s.chars().map(char::len_utf16).sum();
    if total <= max {
        return None;
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        if units + c.len_utf16() > max {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    Some((&s[..end], total - max))
}

/// One message in the 1.18.25+ text form; empty when it shows nothing.
pub fn serialize_text(m: &Message, at: i64, clipped: &mut usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    if m.is_user() {
        let texts: Vec<&str> = m
            .parts
            .iter()
            .filter_map(|p| match &p.kind {
                PartKind::Text { text, ignored, .. } if !*ignored && !text.is_empty() => {
                    Some(text.as_str())
                }
                _ => None,
            })
            .collect();
        if !texts.is_empty() {
            lines.push(format!("[User]: {}", texts.join("\n")));
        }
        for p in &m.parts {
            if let PartKind::File { mime, filename, .. } = &p.kind {
                lines.push(format!(
                    "[Attached {mime}: {}]",
                    filename.as_deref().unwrap_or("file")
                ));
            }
        }
        return lines.join("\n");
    }
    for p in &m.parts {
        match &p.kind {
            PartKind::Text { text, .. } if !text.is_empty() => {
                lines.push(format!("[Assistant]: {text}"))
            }
            PartKind::Reasoning { text } if !text.is_empty() => {
                lines.push(format!("[Assistant reasoning]: {text}"))
            }
            PartKind::Tool(t) => {
                lines.push(format!(
                    "[Assistant tool call]: {}({})",
                    t.tool,
                    compact_json(&t.input)
                ));
                // The v2 loop's text has no result for a tool answered in `structured`.
                let structured = t.metadata.structured_output;
                match t.status {
                    ToolStatus::Completed if structured => lines.push("[Tool result]: ".to_owned()),
                    ToolStatus::Completed => lines.push(format!(
                        "[Tool result]: {}",
                        tool_result(t, at, true, clipped, ClipStyle::Short)
                    )),
                    ToolStatus::Error => lines.push(format!(
                        "[Tool error]: {}",
                        t.error.as_deref().unwrap_or("")
                    )),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    lines.join("\n")
}

fn compact_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_has_its_prompt_texts() {
        for (v, has_template) in [
            ((0, 1, 174), false),
            ((0, 5, 29), false),
            ((1, 0, 61), false),
            ((1, 1, 65), false),
            ((1, 14, 21), true),
            ((1, 18, 3), true),
            ((1, 18, 33), true),
            ((9, 0, 0), true),
        ] {
            let p = prompts_for(Some(v)).expect("a range");
            assert!(!p.system.is_empty(), "{v:?}");
            assert_eq!(p.template.is_some(), has_template, "{v:?}");
        }
        assert!(prompts_for(Some((1, 18, 33)))
            .and_then(|p| p.update_rules)
            .is_some());
    }

    #[test]
    fn clipping_counts_utf16_units_like_javascript() {
        assert_eq!(clip_utf16("abc", 3), None);
        assert_eq!(clip_utf16("abcd", 3), Some(("abc", 1)));
        // "é" is one unit, "𝄞" two.
        assert_eq!(clip_utf16("é𝄞x", 2), Some(("é", 2)));
    }
}

//! The few fields a listing needs from one rollout, read without parsing the whole file.
//!
//! Users' rollouts reach hundreds of MB, nearly all of it tool outputs and Codex's own copies of
//! them (`item_completed`). Each line's `type` is read from its first bytes; only
//! `session_meta`, `turn_context`, `token_usage_record`, `compacted`, the `token_count`,
//! `error` and `turn_aborted` events and, until the title is found, user messages are parsed;
//! every other `response_item` is only told apart by its head (its payload type and role).
//! Requests and messages are counted by the rules of [`super::thread`] and [`super::to_trace`]:
//! one request per response (records where present, else the `token_count` events whose total
//! moved), per failed request and per compaction without a response of its own; one message per
//! user-role item and per request.

use std::path::Path;

use super::rollout::{self, Line, Record, ResponseItem};
use super::thread::{is_output, Thread, OUTPUT_KINDS};
use crate::trace::diagnostics::Diagnostics;
use crate::trace::error::LoadError;
use crate::trace::model::Usage;

/// What the listing shows of one thread, from its rollout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RolloutSummary {
    pub id: Option<String>,
    /// The first user message (Codex's title of a thread).
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub cli_version: Option<String>,
    pub model: Option<String>,
    pub parent_thread_id: Option<String>,
    /// `session_meta.timestamp` (else the first line's), Unix ms.
    pub created: Option<i64>,
    /// The last line's timestamp, Unix ms.
    pub updated: Option<i64>,
    pub requests: usize,
    /// Messages of the loaded trace: user-role items, and one assistant message per request.
    pub messages: usize,
    pub usage: Usage,
    /// Every response priced by its model ([`super::usage::cost`]), summed in file order.
    pub cost: f64,
    /// Codex's `total_tokens` summed over the responses (what `threads.tokens_used` holds).
    pub total_tokens: u64,
    pub diagnostics: Diagnostics,
}

/// The line types a listing parses.
const WANTED: &[&str] = &[
    "session_meta",
    "turn_context",
    "token_usage_record",
    "compacted",
];

/// The events a listing parses.
const WANTED_EVENTS: &[&str] = &["token_count", "error", "turn_aborted"];

/// Scan the rollout at `path` (see the module docs).
pub fn scan_path(path: &Path) -> Result<RolloutSummary, LoadError> {
    crate::trace::input::check_regular(path)?;
    let file = std::fs::File::open(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut diags = Diagnostics::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut title: Option<String> = None;
    let mut first_ts: Option<String> = None;
    let mut last_ts: Option<String> = None;
    let mut user_messages = 0usize;
    rollout::each_line(file, rollout::MAX_LINE, &mut diags, |line, diags| {
        let raw = line.bytes;
        if let Some(ts) = head_timestamp(raw) {
            if first_ts.is_none() {
                first_ts = Some(ts.clone());
            }
            last_ts = Some(ts);
        }
        let kind = head_type(raw);
        let wanted = match kind.as_deref() {
            Some(k) if WANTED.contains(&k) => true,
            Some("event_msg") => head_payload_type(raw)
                .as_deref()
                .is_some_and(|t| WANTED_EVENTS.contains(&t)),
            Some("response_item") => {
                let ptype = head_payload_type(raw);
                let role = head_payload_role(raw);
                let output = match (ptype.as_deref(), role.as_deref()) {
                    (Some("message"), Some(r)) => Some(r == "assistant"),
                    (Some("message"), None) | (None, _) => None,
                    (Some(t), _) => Some(
                        matches!(t, "reasoning" | "function_call" | "custom_tool_call")
                            || OUTPUT_KINDS.contains(&t),
                    ),
                };
                match output {
                    // Only whether the model's answer was under way matters.
                    Some(true) => {
                        lines.push(Line {
                            number: line.number,
                            timestamp: None,
                            record: Record::ResponseItem(rollout::ResponseLine {
                                item: ResponseItem::Reasoning {
                                    id: None,
                                    summary: String::new(),
                                    encrypted: false,
                                },
                                compaction_output: false,
                            }),
                        });
                        return;
                    }
                    Some(false) if ptype.as_deref() == Some("message") => {
                        if title.is_some() {
                            user_messages += 1;
                            return;
                        }
                        true
                    }
                    Some(false) => return,
                    // The head does not tell: read it whole.
                    None => true,
                }
            }
            Some(_) => false,
            // Keys in another order: read it whole.
            None => true,
        };
        if !wanted {
            return;
        }
        let Some(line) = rollout::parse_line(line, diags) else {
            return;
        };
        if let Record::ResponseItem(r) = &line.record {
            match &r.item {
                ResponseItem::Message { role, text, .. } if role != "assistant" => {
                    user_messages += 1;
                    if role == "user" && title.is_none() && is_user_text(text) {
                        title = Some(text.trim().to_owned());
                    }
                }
                item if is_output(item) => lines.push(line),
                _ => {}
            }
            return;
        }
        lines.push(line);
    })
    .map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    let thread = Thread::from_rollout(&mut rollout::Rollout {
        lines,
        diagnostics: Diagnostics::new(),
    });
    let meta = thread.meta.as_ref();
    let created = meta
        .and_then(|m| m.timestamp.as_deref())
        .or(first_ts.as_deref())
        .and_then(unix_ms);
    Ok(RolloutSummary {
        id: thread.id().map(str::to_owned),
        title,
        cwd: meta.map(|m| m.cwd.clone()).filter(|c| !c.is_empty()),
        cli_version: meta.and_then(|m| m.cli_version.clone()),
        model: thread
            .turns
            .iter()
            .flat_map(|t| &t.contexts)
            .find_map(|c| c.model.clone()),
        parent_thread_id: thread.parent_thread_id(),
        created,
        updated: last_ts.as_deref().and_then(unix_ms).or(created),
        requests: requests_of(&thread),
        messages: user_messages + requests_of(&thread),
        usage: thread.total_usage(),
        cost: thread.responses.iter().fold(0.0, |acc, r| {
            acc + super::usage::cost(
                &r.usage,
                meta.and_then(|m| m.model_provider.as_deref()),
                r.model.as_deref(),
            )
        }),
        total_tokens: thread
            .responses
            .iter()
            .map(|r| r.recorded.total_tokens)
            .fold(0u64, u64::saturating_add),
        diagnostics: diags,
    })
}

/// The requests of the trace a thread converts into: its responses, its failed requests, and
/// its compactions that have no response of their own.
pub fn requests_of(thread: &Thread) -> usize {
    thread.responses.len()
        + thread.failed_requests.len()
        + thread
            .compactions
            .iter()
            .filter(|c| c.request.is_none())
            .count()
}

/// Whether a user message is what the user typed rather than context Codex adds as a user
/// message (`<environment_context>`, `<user_instructions>`, an `AGENTS.md`, a compaction's
/// summary).
pub fn is_user_text(text: &str) -> bool {
    let t = text.trim_start();
    !(t.is_empty()
        || t.starts_with('<')
        || t.starts_with("# AGENTS.md")
        || t.starts_with("Another language model started to solve this problem"))
}

/// RFC 3339 → Unix ms.
pub fn unix_ms(ts: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|d| d.timestamp_millis())
}

/// How far into a line its top-level `type` and `timestamp` are looked for.
const HEAD: usize = 256;

/// The string value after the first `"key"` in the first bytes of a line.
fn head_value(raw: &[u8], key: &str) -> Option<String> {
    let head = &raw[..raw.len().min(HEAD)];
    let needle = format!("\"{key}\"");
    let at = head
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())?;
    let rest = &head[at + needle.len()..];
    let rest = rest
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
    std::str::from_utf8(&rest[..end]).ok().map(str::to_owned)
}

/// The line's top-level `type`, when it comes before `payload` (Codex writes `timestamp`,
/// `ordinal`, `type`, `payload` in that order).
fn head_type(raw: &[u8]) -> Option<String> {
    let head = &raw[..raw.len().min(HEAD)];
    let payload_at = head.windows(9).position(|w| w == b"\"payload\"");
    let type_at = head.windows(6).position(|w| w == b"\"type\"")?;
    if payload_at.is_some_and(|p| p < type_at) {
        return None;
    }
    head_value(raw, "type")
}

/// The payload's `type` (the first `"type"` after `"payload"`).
fn head_payload_type(raw: &[u8]) -> Option<String> {
    let head = &raw[..raw.len().min(HEAD)];
    let at = head.windows(9).position(|w| w == b"\"payload\"")?;
    head_value(&raw[at..], "type")
}

/// The payload's `role` (a message's), from the head of the payload.
fn head_payload_role(raw: &[u8]) -> Option<String> {
    let head = &raw[..raw.len().min(HEAD)];
    let at = head.windows(9).position(|w| w == b"\"payload\"")?;
    head_value(&raw[at..], "role")
}

fn head_timestamp(raw: &[u8]) -> Option<String> {
    head_value(raw, "timestamp")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_is_read_from_the_head_only_before_the_payload() {
        let l = br#"{"timestamp":"2026-12-02T05:58:56.258Z","ordinal":3,"type":"event_msg","payload":{"type":"token_count"}}"#;
        assert_eq!(head_type(l).as_deref(), Some("event_msg"));
        assert_eq!(head_payload_type(l).as_deref(), Some("token_count"));
        assert_eq!(
            head_timestamp(l).as_deref(),
            Some("2026-12-02T05:58:56.258Z")
        );
        let reordered = br#"{"payload":{"type":"message"},"type":"response_item"}"#;
        assert_eq!(head_type(reordered), None);
        assert!(!is_user_text(
            "<environment_context>\n</environment_context>"
        ));
        assert!(is_user_text("Fix the bug"));
    }
}

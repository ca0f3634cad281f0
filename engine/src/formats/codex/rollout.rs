//! A typed, lenient reader of Codex rollout files (`rollout-<time>-<thread id>.jsonl`).
//!
//! Each line is `{timestamp, [ordinal], type, payload, [metadata]}`. The types read here:
//! `session_meta`, `turn_context`, `response_item` (what the model saw or produced),
//! `event_msg` (what happened), `token_usage_record` (one per model response) and `compacted`.
//! Any other type (`world_state`, a type of a later release) is kept raw as [`Record::Other`],
//! and so is a known type whose payload does not have the expected shape (reported).
//!
//! Lines are read one at a time with a bounded length ([`MAX_LINE`]): a line longer than that,
//! one that is not JSON (garbage, a cut final line Codex was still writing), or one that is not
//! UTF-8 is reported in [`Diagnostics`] and skipped; the rest of the file loads.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::usage::TokenUsage;
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;

/// The longest line read (bytes, newline excluded). Codex caps what it stores of a tool output,
/// so a longer line is damage, not a record; skipping it bounds the memory one line can take.
pub const MAX_LINE: usize = 64 << 20;

/// One record of a rollout with where it was.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// 1-based line number in the file.
    pub number: usize,
    /// The line's `timestamp` (RFC 3339), when it has one.
    pub timestamp: Option<String>,
    pub record: Record,
}

/// What one rollout line holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    SessionMeta(Box<SessionMeta>),
    TurnContext(TurnContext),
    ResponseItem(ResponseLine),
    Event(Event),
    TokenUsageRecord(TokenUsageRecord),
    Compacted(Box<Compacted>),
    /// A type this reader does not know, or a known one whose payload it could not read.
    Other {
        kind: String,
        payload: Value,
    },
}

/// `session_meta`: who wrote the thread and where.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SessionMeta {
    pub id: String,
    pub timestamp: Option<String>,
    pub cwd: String,
    pub originator: Option<String>,
    pub cli_version: Option<String>,
    /// `"exec"`, `"cli"`, `"vscode"`, or for a sub-agent `{"subagent": {"thread_spawn":
    /// {"parent_thread_id": …}}}`: kept as written, read by [`SessionMeta::parent_thread_id`].
    pub source: Value,
    pub model_provider: Option<String>,
    pub base_instructions: Value,
    pub git: Value,
}

impl SessionMeta {
    /// The thread that spawned this one, for a sub-agent thread (`source` names it).
    pub fn parent_thread_id(&self) -> Option<String> {
        find_key(&self.source, "parent_thread_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }

    /// The base instructions' text (`base_instructions.text`, or a plain string).
    pub fn base_instructions_text(&self) -> Option<&str> {
        match &self.base_instructions {
            Value::String(s) => Some(s),
            v => v.get("text").and_then(Value::as_str),
        }
    }
}

/// The first value under `key` anywhere in `v` (depth-first, bounded).
fn find_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    fn go<'a>(v: &'a Value, key: &str, depth: usize) -> Option<&'a Value> {
        if depth > 8 {
            return None;
        }
        match v {
            Value::Object(m) => m
                .get(key)
                .or_else(|| m.values().find_map(|x| go(x, key, depth + 1))),
            Value::Array(a) => a.iter().find_map(|x| go(x, key, depth + 1)),
            _ => None,
        }
    }
    go(v, key, 0)
}

/// `turn_context`: the settings of a turn (written at its start and again after a compaction).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TurnContext {
    pub turn_id: Option<String>,
    pub cwd: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub approval_policy: Option<String>,
    pub sandbox_policy: Value,
    pub summary: Option<String>,
}

/// A `response_item` line: the item, and whether Codex marked it as a compaction's summary
/// (`metadata.compaction_output`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseLine {
    pub item: ResponseItem,
    pub compaction_output: bool,
}

/// One Responses API item as Codex stores it.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseItem {
    Message {
        id: Option<String>,
        role: String,
        /// The text parts joined by `\n`.
        text: String,
    },
    Reasoning {
        id: Option<String>,
        /// Summary texts joined by `\n`.
        summary: String,
        /// Whether the provider's encrypted reasoning is stored.
        encrypted: bool,
    },
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: String,
        output: String,
    },
    /// A freeform tool call (`apply_patch` takes the patch as its input).
    CustomToolCall {
        call_id: String,
        name: String,
        input: String,
    },
    CustomToolCallOutput {
        call_id: String,
        output: String,
    },
    /// Another item type (`local_shell_call`, `web_search_call`, …), raw.
    Other {
        kind: String,
        payload: Value,
    },
}

/// An `event_msg` line.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    TaskStarted {
        turn_id: Option<String>,
        model_context_window: Option<u64>,
    },
    /// Usage so far; `info` is absent on some releases' first event.
    TokenCount {
        last: Option<TokenUsage>,
        total: Option<TokenUsage>,
        model_context_window: Option<u64>,
    },
    TaskComplete {
        turn_id: Option<String>,
        last_agent_message: Option<String>,
    },
    TurnAborted {
        turn_id: Option<String>,
        reason: Option<String>,
    },
    /// A turn's fatal error (`error`).
    Error {
        message: String,
    },
    /// A transient error Codex retries (`stream_error`).
    StreamError {
        message: String,
    },
    /// `item_completed`: Codex's view of a finished item (`CommandExecution` with its exit code,
    /// `FileChange`, `ContextCompaction`, …), raw.
    ItemCompleted {
        turn_id: Option<String>,
        item: Value,
    },
    ContextCompacted,
    Other {
        kind: String,
        payload: Value,
    },
}

/// `token_usage_record`: one model response's usage, with the turn's and the thread's so far.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TokenUsageRecord {
    pub turn_id: Option<String>,
    pub response_id: Option<String>,
    pub usage: TokenUsage,
    pub turn_token_usage: Option<TokenUsage>,
    pub thread_token_usage: Option<TokenUsage>,
}

/// `compacted`: the summary and the history the next request starts from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compacted {
    /// The summary as Codex hands it on (with its "Another language model started…" prefix).
    pub message: String,
    /// The items the next request starts from (user messages, fresh context, the summary).
    pub replacement_history: Vec<ResponseItem>,
    pub window_number: Option<u64>,
    pub window_id: Option<String>,
    pub previous_window_id: Option<String>,
    /// The response that produced the summary (its `token_usage_record`).
    pub compaction_response_id: Option<String>,
}

#[derive(Deserialize)]
struct RawLine {
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    payload: Value,
    #[serde(default)]
    metadata: Value,
}

/// What reading a rollout gave: the records in file order, and what was skipped or repaired.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rollout {
    pub lines: Vec<Line>,
    pub diagnostics: Diagnostics,
}

/// Read a rollout file (see the module docs). Only a file that cannot be opened or read is an
/// error; damaged lines are diagnostics.
pub fn read_path(path: &Path) -> Result<Rollout, LoadError> {
    read_path_limited(path, MAX_LINE)
}

/// [`read_path`] with another line bound (tests make an over-long line without 64 MiB).
pub fn read_path_limited(path: &Path, max_line: usize) -> Result<Rollout, LoadError> {
    crate::trace::input::check_regular(path)?;
    let file = std::fs::File::open(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut out = Rollout::default();
    each_line(file, max_line, &mut out.diagnostics, |raw, diags| {
        if let Some(line) = parse_line(raw, diags) {
            out.lines.push(line);
        }
    })
    .map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(out)
}

/// [`read_path`] over bytes in memory (tests, a followed file's new lines).
pub fn read_bytes(bytes: &[u8]) -> Rollout {
    let mut out = Rollout::default();
    let read = each_line(bytes, MAX_LINE, &mut out.diagnostics, |raw, diags| {
        if let Some(line) = parse_line(raw, diags) {
            out.lines.push(line);
        }
    });
    debug_assert!(read.is_ok(), "reading a slice cannot fail");
    out
}

/// Feed every line of `r` that fits in `max_line` bytes to `f` (1-based number, bytes without the
/// newline); an over-long line is reported and skipped whole, without holding it in memory.
/// A final line without a newline is passed on, marked as such.
pub(crate) fn each_line<R: Read>(
    r: R,
    max_line: usize,
    diags: &mut Diagnostics,
    mut f: impl FnMut(RawBytes<'_>, &mut Diagnostics),
) -> std::io::Result<()> {
    let r = std::io::BufReader::with_capacity(1 << 16, r);
    crate::trace::jsonl::for_each_line(r, max_line, |line| match line {
        crate::trace::jsonl::Line::Oversized { number, .. } => diags.push(
            DiagnosticKind::OversizedLine,
            format!("line {number}: longer than {max_line} bytes, skipped"),
        ),
        crate::trace::jsonl::Line::Text {
            number,
            bytes,
            terminated,
        } => {
            if !bytes.iter().all(u8::is_ascii_whitespace) {
                f(
                    RawBytes {
                        number,
                        bytes,
                        terminated,
                    },
                    diags,
                );
            }
        }
    })
}

/// One line's bytes as read, before parsing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawBytes<'a> {
    /// 1-based.
    pub number: usize,
    /// Without the newline.
    pub bytes: &'a [u8],
    /// False for a final line with no newline after it (maybe still being written).
    pub terminated: bool,
}

/// One line as a record; `None` (reported) when it is not a JSON record.
pub(crate) fn parse_line(raw: RawBytes<'_>, diags: &mut Diagnostics) -> Option<Line> {
    let number = raw.number;
    let text = match std::str::from_utf8(raw.bytes) {
        Ok(t) => t,
        Err(_) => {
            diags.push(
                DiagnosticKind::NonUtf8,
                format!("line {number}: not UTF-8, skipped"),
            );
            return None;
        }
    };
    let line: RawLine = match serde_json::from_str(text) {
        Ok(l) => l,
        Err(e) => {
            // A final line that ends early was cut while Codex wrote it.
            let kind = if e.is_eof() && !raw.terminated {
                DiagnosticKind::PartialWrite
            } else {
                DiagnosticKind::CorruptJson
            };
            diags.push(kind, format!("line {number}: {e}, skipped"));
            return None;
        }
    };
    Some(Line {
        number,
        timestamp: line.timestamp,
        record: record_of(number, line.kind, line.payload, &line.metadata, diags),
    })
}

fn record_of(
    number: usize,
    kind: String,
    payload: Value,
    metadata: &Value,
    diags: &mut Diagnostics,
) -> Record {
    let typed = match kind.as_str() {
        "session_meta" => typed::<SessionMeta>(&payload).map(|m| Record::SessionMeta(Box::new(m))),
        "turn_context" => typed::<TurnContext>(&payload).map(Record::TurnContext),
        "token_usage_record" => typed::<TokenUsageRecord>(&payload).map(Record::TokenUsageRecord),
        "response_item" => response_item(&payload).map(|item| {
            Record::ResponseItem(ResponseLine {
                item,
                compaction_output: metadata
                    .get("compaction_output")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        }),
        "event_msg" => event(&payload).map(Record::Event),
        "compacted" => compacted(&payload).map(|c| Record::Compacted(Box::new(c))),
        _ => return Record::Other { kind, payload },
    };
    typed.unwrap_or_else(|why| {
        diags.push(
            DiagnosticKind::MissingField,
            format!("line {number}: {kind} {why}; kept raw"),
        );
        Record::Other { kind, payload }
    })
}

fn typed<T: for<'de> Deserialize<'de>>(payload: &Value) -> Result<T, String> {
    T::deserialize(payload).map_err(|e| format!("payload not read ({e})"))
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn required(v: &Value, key: &str) -> Result<String, String> {
    str_of(v, key).ok_or_else(|| format!("has no {key}"))
}

/// Text of a message's or an output's content: a string, or text parts joined by `\n`.
pub(crate) fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                p => p.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        // An older function output: `{content, success}`.
        Value::Object(m) => m.get("content").map(content_text).unwrap_or_default(),
        _ => String::new(),
    }
}

/// A `response_item` payload (also an item of a `compacted` replacement history).
pub fn response_item(p: &Value) -> Result<ResponseItem, String> {
    let kind = p.get("type").and_then(Value::as_str).unwrap_or_default();
    Ok(match kind {
        "message" => ResponseItem::Message {
            id: str_of(p, "id"),
            role: required(p, "role")?,
            text: p.get("content").map(content_text).unwrap_or_default(),
        },
        "reasoning" => ResponseItem::Reasoning {
            id: str_of(p, "id"),
            summary: p.get("summary").map(content_text).unwrap_or_default(),
            encrypted: p
                .get("encrypted_content")
                .is_some_and(|e| e.as_str().is_some_and(|s| !s.is_empty())),
        },
        "function_call" => ResponseItem::FunctionCall {
            call_id: required(p, "call_id")?,
            name: required(p, "name")?,
            arguments: str_of(p, "arguments").unwrap_or_default(),
        },
        "function_call_output" => ResponseItem::FunctionCallOutput {
            call_id: required(p, "call_id")?,
            output: p.get("output").map(content_text).unwrap_or_default(),
        },
        "custom_tool_call" => ResponseItem::CustomToolCall {
            call_id: required(p, "call_id")?,
            name: required(p, "name")?,
            input: str_of(p, "input").unwrap_or_default(),
        },
        "custom_tool_call_output" => ResponseItem::CustomToolCallOutput {
            call_id: required(p, "call_id")?,
            output: p.get("output").map(content_text).unwrap_or_default(),
        },
        _ => ResponseItem::Other {
            kind: kind.to_owned(),
            payload: p.clone(),
        },
    })
}

fn event(p: &Value) -> Result<Event, String> {
    let kind = p.get("type").and_then(Value::as_str).unwrap_or_default();
    let usage = |v: Option<&Value>| v.and_then(|u| TokenUsage::deserialize(u).ok());
    let window = |v: Option<&Value>| v.and_then(Value::as_u64);
    Ok(match kind {
        "task_started" => Event::TaskStarted {
            turn_id: str_of(p, "turn_id"),
            model_context_window: window(p.get("model_context_window")),
        },
        "token_count" => {
            let info = p.get("info").filter(|i| !i.is_null());
            Event::TokenCount {
                last: usage(info.and_then(|i| i.get("last_token_usage"))),
                total: usage(info.and_then(|i| i.get("total_token_usage"))),
                model_context_window: window(info.and_then(|i| i.get("model_context_window"))),
            }
        }
        "task_complete" => Event::TaskComplete {
            turn_id: str_of(p, "turn_id"),
            last_agent_message: str_of(p, "last_agent_message"),
        },
        "turn_aborted" => Event::TurnAborted {
            turn_id: str_of(p, "turn_id"),
            reason: str_of(p, "reason"),
        },
        "error" => Event::Error {
            message: str_of(p, "message").unwrap_or_default(),
        },
        "stream_error" => Event::StreamError {
            message: str_of(p, "message").unwrap_or_default(),
        },
        "item_completed" => Event::ItemCompleted {
            turn_id: str_of(p, "turn_id"),
            item: p.get("item").cloned().unwrap_or(Value::Null),
        },
        "context_compacted" => Event::ContextCompacted,
        _ => Event::Other {
            kind: kind.to_owned(),
            payload: p.clone(),
        },
    })
}

fn compacted(p: &Value) -> Result<Compacted, String> {
    let history = match p.get("replacement_history") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                response_item(i).unwrap_or_else(|_| ResponseItem::Other {
                    kind: "unreadable".into(),
                    payload: i.clone(),
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Compacted {
        message: required(p, "message")?,
        replacement_history: history,
        window_number: p.get("window_number").and_then(Value::as_u64),
        window_id: str_of(p, "window_id"),
        previous_window_id: str_of(p, "previous_window_id"),
        compaction_response_id: str_of(p, "compaction_response_id").or_else(|| {
            p.get("latest_token_usage_record")
                .and_then(|r| str_of(r, "response_id"))
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_types_are_kept_raw_and_known_ones_typed() {
        let r = read_bytes(
            br#"{"timestamp":"t","type":"world_state","payload":{"full":true}}
{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c1"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"something_new","x":1}}
"#,
        );
        assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
        assert!(matches!(&r.lines[0].record, Record::Other { kind, .. } if kind == "world_state"));
        assert!(matches!(
            &r.lines[1].record,
            Record::ResponseItem(ResponseLine { item: ResponseItem::FunctionCall { name, .. }, .. })
                if name == "exec_command"
        ));
        assert!(
            matches!(&r.lines[2].record, Record::Event(Event::Other { kind, .. }) if kind == "something_new")
        );
    }

    #[test]
    fn damaged_lines_are_reported_and_skipped() {
        let r = read_bytes(
            b"{\"type\":\"event_msg\",\"payload\":{\"type\":\"task_started\"}}\nnot json\n{\"type\":\n\xff\xfe\n\n{\"type\":\"response_item\",\"payload\":{\"type\":\"message\"}}\n{\"type\":\"event_msg\",\"payl",
        );
        assert_eq!(r.lines.len(), 2, "{:?}", r.lines);
        // Garbage, and a line ending early that is not the last one.
        assert_eq!(r.diagnostics.count(DiagnosticKind::CorruptJson), 2);
        assert_eq!(r.diagnostics.count(DiagnosticKind::NonUtf8), 1);
        assert_eq!(r.diagnostics.count(DiagnosticKind::PartialWrite), 1);
        // A message without a role is kept raw and said.
        assert_eq!(r.diagnostics.count(DiagnosticKind::MissingField), 1);
        assert_eq!(r.lines[1].number, 6);
    }

    #[test]
    fn a_sub_agent_names_its_parent() {
        let meta: SessionMeta = serde_json::from_str(
            r#"{"id":"c","cwd":"/p","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p1","depth":1}}}}"#,
        )
        .expect("meta");
        assert_eq!(meta.parent_thread_id().as_deref(), Some("p1"));
        let top: SessionMeta = serde_json::from_str(r#"{"id":"c","source":"exec"}"#).expect("meta");
        assert_eq!(top.parent_thread_id(), None);
    }
}

//! What a transcript says about the model calls: one request per unique API response, the API
//! errors and interrupts, and every tool call paired with its result.
//!
//! Claude Code writes an API response as **one `assistant` record per content block**; the
//! blocks of one response share `message.id` and `requestId` and each repeats the response's
//! `usage`. A request is therefore a unique (`message.id`, `requestId`), never a record: summing
//! records would count a three-block response three times. Its usage is taken once (the largest
//! count of each field over its records, see [`ClaudeUsage::max`]). Responses are counted on
//! every branch (a rewound request was still sent and billed) and carry whether they are on the
//! active one.
//!
//! Records the CLI made itself carry `model: "<synthetic>"`: an API error it turned into a
//! message (`isApiErrorMessage: true`) is an [`ApiError`], not a request; others ("No response
//! requested." after a `/compact` or an interrupt) are counted in [`Requests::synthetic`]. An
//! interrupt leaves a user text "[Request interrupted by user]" ("… for tool use]" when it cut a
//! tool call, whose result is then an error).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::record::{Block, KnownBlock, Record, SYNTHETIC_MODEL};
use super::transcript::Transcript;
use super::usage::ClaudeUsage;
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};

/// One API response: one request the model answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub message_id: String,
    pub request_id: Option<String>,
    pub model: Option<String>,
    pub usage: ClaudeUsage,
    pub stop_reason: Option<String>,
    /// The entries (indices into [`Transcript::entries`]) holding its blocks, in file order.
    pub entries: Vec<usize>,
    /// The timestamp of its first record, as written.
    pub timestamp: Option<String>,
    /// Its tool calls (indices into [`Requests::tool_calls`]).
    pub tool_calls: Vec<usize>,
    pub on_branch: bool,
}

/// An API error the CLI recorded as a synthetic assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub entry: usize,
    /// The failed request's id, when the CLI recorded it.
    pub request_id: Option<String>,
    /// The HTTP status, when recorded (`apiErrorStatus`).
    pub status: Option<u64>,
    /// The message shown (untrusted text).
    pub text: String,
    /// The recorded error kind, when there is one.
    pub error: Option<String>,
    pub timestamp: Option<String>,
}

/// A user interrupt: the user text the CLI writes when the user stops it. An interrupted tool
/// call also gets an error result ("The user doesn't want to proceed with this tool use…").
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupt {
    pub entry: usize,
    /// True when it cut a tool call ("[Request interrupted by user for tool use]").
    pub during_tool_use: bool,
}

/// A tool call and, when it came back, its result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// The assistant entry holding the `tool_use` block.
    pub entry: usize,
    /// The response it belongs to (index into [`Requests::responses`]).
    pub response: usize,
    pub result: Option<ToolResult>,
}

/// A tool's result as the model saw it (`tool_result` in the next user record) and as the tool
/// returned it (`toolUseResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub entry: usize,
    pub is_error: bool,
    /// The `tool_result` block's `content` (a string or content blocks).
    pub content: Value,
    /// The tool's structured result (`toolUseResult`), when recorded.
    pub structured: Option<Value>,
    /// The whole output the CLI saved instead of putting it in the context (the model saw a
    /// preview).
    pub persisted: Option<PersistedOutput>,
}

/// A tool output saved under `<session>/tool-results/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistedOutput {
    /// Where it is beside this session file (only the recorded path's file name is used: the
    /// recorded path is the recording machine's and is not followed).
    pub path: PathBuf,
    /// Its size as recorded, in bytes.
    pub size: Option<u64>,
}

/// Everything [`Requests::of`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Requests {
    /// In the order their first block was written.
    pub responses: Vec<Response>,
    pub api_errors: Vec<ApiError>,
    /// Synthetic messages that are not errors.
    pub synthetic: usize,
    pub interrupts: Vec<Interrupt>,
    pub tool_calls: Vec<ToolCall>,
    pub diagnostics: Diagnostics,
}

const INTERRUPT: &str = "[Request interrupted by user";
const INTERRUPT_TOOL_USE: &str = "[Request interrupted by user for tool use";

impl Requests {
    /// Read the requests of `t` (each result's content copied).
    pub fn of(t: &Transcript) -> Requests {
        Requests::read(t, true)
    }

    /// Read the requests of `t`, moving each result's content out of the transcript's record
    /// into its tool call (the record keeps `null`): a session's tool outputs are its bulk, and
    /// a load holds them once.
    pub fn take(t: &mut Transcript) -> Requests {
        let mut out = Requests::read(t, false);
        for call in &mut out.tool_calls {
            let Some(result) = call.result.as_mut() else {
                continue;
            };
            let Some(Record::User(u)) = t.entries.get_mut(result.entry).map(|e| &mut e.record)
            else {
                continue;
            };
            let super::record::Content::Blocks(blocks) = &mut u.message.content else {
                continue;
            };
            for b in blocks.iter_mut() {
                if let Block::Known(KnownBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                }) = b
                {
                    if *tool_use_id == call.id {
                        result.content = std::mem::take(content);
                        break;
                    }
                }
            }
        }
        out
    }

    fn read(t: &Transcript, copy_contents: bool) -> Requests {
        let mut out = Requests::default();
        let mut by_key: HashMap<(String, Option<String>), usize> = HashMap::new();
        let mut by_call: HashMap<String, usize> = HashMap::new();
        let mut bad_counts = 0usize;
        for (i, e) in t.entries.iter().enumerate() {
            match &e.record {
                Record::Assistant(a) => {
                    let synthetic = a.message.model.as_deref() == Some(SYNTHETIC_MODEL);
                    if a.is_api_error_message {
                        out.api_errors.push(ApiError {
                            entry: i,
                            request_id: a.request_id.clone(),
                            status: a.api_error_status,
                            text: a.message.content.text(),
                            error: a.error.as_ref().map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            }),
                            timestamp: a.common.timestamp.clone(),
                        });
                        continue;
                    }
                    if synthetic {
                        out.synthetic += 1;
                        continue;
                    }
                    let (usage, bad) = a
                        .message
                        .usage
                        .as_ref()
                        .map_or((ClaudeUsage::default(), false), ClaudeUsage::from_raw);
                    bad_counts += usize::from(bad);
                    let message_id = match &a.message.id {
                        Some(id) if !id.is_empty() => id.clone(),
                        _ => {
                            // No id to group by: the record is its own response.
                            out.diagnostics.push(
                                DiagnosticKind::MissingField,
                                format!(
                                    "line {}: an assistant record without message.id (counted as its own request)",
                                    e.line
                                ),
                            );
                            format!("line-{}", e.line)
                        }
                    };
                    let key = (message_id.clone(), a.request_id.clone());
                    let r = *by_key.entry(key).or_insert_with(|| {
                        out.responses.push(Response {
                            message_id,
                            request_id: a.request_id.clone(),
                            model: a.message.model.clone(),
                            usage,
                            stop_reason: None,
                            entries: Vec::new(),
                            timestamp: a.common.timestamp.clone(),
                            tool_calls: Vec::new(),
                            on_branch: false,
                        });
                        out.responses.len() - 1
                    });
                    let resp = &mut out.responses[r];
                    resp.usage = resp.usage.max(&usage);
                    resp.entries.push(i);
                    resp.on_branch |= t.on_branch[i];
                    if a.message.stop_reason.is_some() {
                        resp.stop_reason.clone_from(&a.message.stop_reason);
                    }
                    for b in a.message.content.blocks() {
                        if let Block::Known(KnownBlock::ToolUse { id, name, input }) = b {
                            by_call.insert(id.clone(), out.tool_calls.len());
                            resp.tool_calls.push(out.tool_calls.len());
                            out.tool_calls.push(ToolCall {
                                id: id.clone(),
                                name: name.clone(),
                                input: input.clone(),
                                entry: i,
                                response: r,
                                result: None,
                            });
                        }
                    }
                }
                Record::User(u) => {
                    let content = &u.message.content;
                    let text = content.text();
                    if text.starts_with(INTERRUPT) {
                        out.interrupts.push(Interrupt {
                            entry: i,
                            during_tool_use: text.starts_with(INTERRUPT_TOOL_USE),
                        });
                    }
                    for b in content.blocks() {
                        let Block::Known(KnownBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        }) = b
                        else {
                            continue;
                        };
                        let Some(&c) = by_call.get(tool_use_id) else {
                            out.diagnostics.push(
                                DiagnosticKind::OrphanPart,
                                format!(
                                    "line {}: a tool result for a call not in the file ({})",
                                    e.line,
                                    crate::text::clip_chars(tool_use_id, 40)
                                ),
                            );
                            continue;
                        };
                        let structured = u.tool_use_result.clone();
                        let persisted = persisted_output(&t.path, structured.as_ref(), content);
                        out.tool_calls[c].result = Some(ToolResult {
                            entry: i,
                            is_error: *is_error,
                            content: if copy_contents {
                                content.clone()
                            } else {
                                Value::Null
                            },
                            structured,
                            persisted,
                        });
                    }
                }
                _ => {}
            }
        }
        if bad_counts > 0 {
            out.diagnostics.push_n(
                DiagnosticKind::BadTokenCount,
                bad_counts,
                "a usage count that is not a non-negative integer (read as the nearest count)",
            );
        }
        let dangling = out.tool_calls.iter().filter(|c| c.result.is_none()).count();
        if let Some(c) = out.tool_calls.iter().find(|c| c.result.is_none()) {
            out.diagnostics.push_n(
                DiagnosticKind::DanglingTool,
                dangling,
                format!(
                    "a {} call without a result (line {})",
                    crate::text::clip_chars(&c.name, 40),
                    t.entries[c.entry].line
                ),
            );
        }
        out
    }

    /// The usage of every response, summed.
    pub fn total(&self) -> ClaudeUsage {
        let mut u = ClaudeUsage::default();
        for r in &self.responses {
            u.add(&r.usage);
        }
        u
    }
}

/// A `tool_result` content's text (a string, or its text blocks joined).
pub fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The saved output of a tool result, from `toolUseResult.persistedOutputPath`, else from the
/// preview's "Full output saved to: PATH" line.
fn persisted_output(
    session_file: &Path,
    structured: Option<&Value>,
    content: &Value,
) -> Option<PersistedOutput> {
    let recorded = structured
        .and_then(|s| s.get("persistedOutputPath"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            let text = result_text(content);
            if !text.trim_start().starts_with("<persisted-output>") {
                return None;
            }
            let (_, rest) = text.split_once("Full output saved to: ")?;
            Some(rest.lines().next()?.trim().to_owned())
        })?;
    let name = Path::new(&recorded).file_name()?;
    let stem = session_file.file_stem()?;
    Some(PersistedOutput {
        path: session_file
            .with_file_name(stem)
            .join("tool-results")
            .join(name),
        size: structured
            .and_then(|s| s.get("persistedOutputSize"))
            .and_then(Value::as_u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(lines: &[serde_json::Value]) -> (tempfile::TempDir, Transcript) {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("s.jsonl");
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        std::fs::write(&p, text.join("\n") + "\n").expect("write");
        let t = Transcript::read(&p).expect("read");
        (dir, t)
    }

    fn block_record(
        uuid: &str,
        parent: &str,
        id: &str,
        block: serde_json::Value,
    ) -> serde_json::Value {
        serde_json::json!({"type": "assistant", "uuid": uuid, "parentUuid": parent,
            "requestId": format!("req-{id}"), "message": {"id": id, "model": "claude-opus-4-8",
            "content": [block], "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 5, "output_tokens": 7}}})
    }

    #[test]
    fn blocks_of_one_response_are_one_request_and_results_pair_with_their_calls() {
        let (_d, t) = transcript(&[
            serde_json::json!({"type": "user", "uuid": "u1", "message": {"content": "go"}}),
            block_record(
                "a1",
                "u1",
                "m1",
                serde_json::json!({"type": "text", "text": "looking"}),
            ),
            block_record(
                "a2",
                "a1",
                "m1",
                serde_json::json!({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}),
            ),
            block_record(
                "a3",
                "a2",
                "m1",
                serde_json::json!({"type": "tool_use", "id": "t2", "name": "Read", "input": {}}),
            ),
            serde_json::json!({"type": "user", "uuid": "u2", "parentUuid": "a2", "toolUseResult": {"stdout": "x"},
                "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}}),
            serde_json::json!({"type": "user", "uuid": "u3", "parentUuid": "a3",
                "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "no such file", "is_error": true}]}}),
            serde_json::json!({"type": "assistant", "uuid": "e1", "parentUuid": "u3", "isApiErrorMessage": true,
                "message": {"id": "x", "model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 529 overloaded"}],
                "usage": {"input_tokens": 0, "output_tokens": 0}}}),
            serde_json::json!({"type": "user", "uuid": "u4", "parentUuid": "e1",
                "message": {"content": [{"type": "text", "text": "[Request interrupted by user]"}]}}),
        ]);
        let r = Requests::of(&t);
        assert_eq!(r.responses.len(), 1);
        assert_eq!(r.responses[0].entries.len(), 3);
        assert_eq!(r.total().prompt(), 115);
        assert_eq!(r.total().output, 7);
        assert_eq!(r.api_errors.len(), 1);
        assert_eq!(r.api_errors[0].text, "API Error: 529 overloaded");
        assert_eq!(r.interrupts.len(), 1);
        let calls: Vec<(&str, Option<bool>)> = r
            .tool_calls
            .iter()
            .map(|c| (c.name.as_str(), c.result.as_ref().map(|x| x.is_error)))
            .collect();
        assert_eq!(calls, [("Bash", Some(false)), ("Read", Some(true))]);
        assert_eq!(
            r.tool_calls[0]
                .result
                .as_ref()
                .and_then(|x| x.structured.clone()),
            Some(serde_json::json!({"stdout": "x"}))
        );
        assert!(t.on_branch.iter().all(|b| *b));
    }
}

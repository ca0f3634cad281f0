//! A rollout read as one thread: its model responses with their usage, its turns and how they
//! ended, its tool calls paired with their outputs, and its compactions.
//!
//! **One response, one figure.** Codex writes every response's usage twice: a
//! `token_usage_record` (`usage` = this response) and an `event_msg` `token_count`
//! (`last_token_usage` = this response, `total_token_usage` = the thread so far). The
//! `token_count` events also repeat (the same totals written again when a turn ends or resumes)
//! and follow a compaction with an estimate of the new history (all zeros but `total_tokens`),
//! so summing their `last_token_usage` overcounts. A response is therefore one
//! `token_usage_record`; a `token_count` whose `total_token_usage` moved with no record since the
//! previous such event (a release that writes no records, or the part of a resumed thread one
//! wrote) is one response too, taken once. On the 0.171.0 recording records and events give the
//! same 23 responses: each record's `usage` equals the `last_token_usage` of the `token_count`
//! after it, and the 4 other `token_count` events are 2 repeats and 2 compaction estimates.

use std::collections::HashMap;

use serde_json::Value;

use super::rollout::{
    Compacted, Event, Line, Record, ResponseItem, Rollout, SessionMeta, TurnContext,
};
use super::usage::TokenUsage;
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::model::Usage;

/// Where a response's usage was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageSource {
    /// A `token_usage_record`.
    Record,
    /// A `token_count` event whose thread total moved (no records in this rollout).
    TokenCount,
}

/// One model response (one request Codex sent and the model answered).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// 0-based, in file order.
    pub index: usize,
    /// The line its usage was read from.
    pub line: usize,
    pub timestamp: Option<String>,
    pub turn_id: Option<String>,
    pub response_id: Option<String>,
    /// As Codex recorded it (inclusive).
    pub recorded: TokenUsage,
    /// The neutral, disjoint form ([`TokenUsage::normalize`]).
    pub usage: Usage,
    pub source: UsageSource,
    /// The summary request of a compaction (no tools; its answer became a `compacted` summary).
    pub is_compaction: bool,
    /// The model of the `turn_context` in effect (`None` before the first one).
    pub model: Option<String>,
}

/// A request the model was sent that left no usage: a turn's `error` (the request failed), or a
/// turn interrupted (`turn_aborted`) after the model had streamed items of its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedRequest {
    /// The `error` / `turn_aborted` line.
    pub line: usize,
    pub timestamp: Option<String>,
    pub turn_id: Option<String>,
    pub kind: FailedKind,
    /// The model of the `turn_context` in effect.
    pub model: Option<String>,
}

/// How a [`FailedRequest`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailedKind {
    /// An `error` event: its message.
    Error(String),
    /// Interrupted: the `turn_aborted` reason.
    Aborted(Option<String>),
    /// The file ends in the answer before its usage (a running or killed Codex).
    Cut,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnStatus {
    Completed,
    /// Interrupted (`turn_aborted`, e.g. reason `interrupted`).
    Aborted {
        reason: Option<String>,
    },
    /// Ended by an error (`error` event, no `task_complete`).
    Failed {
        message: String,
    },
    /// Still open where the file ends (a running or killed Codex).
    Open,
}

/// One turn (`task_started` … `task_complete` / `turn_aborted`).
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub id: Option<String>,
    pub line: usize,
    pub status: TurnStatus,
    /// The `turn_context` lines of this turn: its start, and one after each compaction.
    pub contexts: Vec<TurnContext>,
    pub model_context_window: Option<u64>,
    /// Indices into [`Thread::responses`].
    pub responses: Vec<usize>,
}

/// Which kind of tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A JSON-argument function (`exec_command`, `update_plan`, `write_stdin`, …).
    Function,
    /// A freeform tool (`apply_patch`).
    Custom,
}

/// What an `apply_patch` call touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// `add`, `update`, `delete`.
    pub op: &'static str,
    pub path: String,
    /// For a move (`*** Move to:`), the new path.
    pub moved_to: Option<String>,
}

/// A tool call with its output, when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub call_id: String,
    pub name: String,
    pub kind: CallKind,
    /// The arguments (function) or the input (custom).
    pub input: String,
    pub line: usize,
    pub turn_id: Option<String>,
    pub output: Option<String>,
    pub output_line: Option<usize>,
    /// The process's exit code (`exec_command`: "Process exited with code N"; `apply_patch`:
    /// "Exit code: N"; else Codex's own `item_completed` record of the call).
    pub exit_code: Option<i64>,
    /// `apply_patch`: the files of the patch.
    pub patch_files: Vec<PatchFile>,
    /// A call whose output says it failed (non-zero exit, a patch not applied).
    pub failed: bool,
}

/// One compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The `compacted` line.
    pub line: usize,
    pub turn_id: Option<String>,
    pub compacted: Compacted,
    /// The summary request's index in [`Thread::responses`].
    pub request: Option<usize>,
    /// The `turn_context` Codex wrote after it (the line), if any before the next response.
    pub turn_context_after: Option<usize>,
}

/// A rollout read as a thread. See the module docs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Thread {
    pub meta: Option<SessionMeta>,
    pub responses: Vec<Response>,
    pub turns: Vec<Turn>,
    pub tool_calls: Vec<ToolCall>,
    pub compactions: Vec<Compaction>,
    /// Requests that left no usage (see [`FailedRequest`]), in file order.
    pub failed_requests: Vec<FailedRequest>,
    /// Transient errors Codex retried (`stream_error`): retried requests leave no other trace.
    pub stream_errors: usize,
    /// Calls left without an output (`dangling_tool`) and outputs of no call (`orphan_part`).
    pub diagnostics: Diagnostics,
}

impl Thread {
    /// The thread id (`session_meta.id`).
    pub fn id(&self) -> Option<&str> {
        self.meta
            .as_ref()
            .map(|m| m.id.as_str())
            .filter(|s| !s.is_empty())
    }

    /// The thread that spawned this one (sub-agent threads).
    pub fn parent_thread_id(&self) -> Option<String> {
        self.meta.as_ref().and_then(SessionMeta::parent_thread_id)
    }

    /// Every response's usage summed (neutral form).
    pub fn total_usage(&self) -> Usage {
        let mut u = Usage::default();
        for r in &self.responses {
            u.add(&r.usage);
        }
        u
    }

    /// Read `rollout` (see the module docs). The tool calls' inputs and outputs and the
    /// compactions move out of the rollout into the thread (they are the rollout's bulk, and a
    /// reader that holds both holds them twice); the rest of each line stays.
    pub fn from_rollout(rollout: &mut Rollout) -> Thread {
        Builder::default().run(&mut rollout.lines)
    }
}

#[derive(Default)]
struct Builder {
    t: Thread,
    calls: HashMap<String, usize>,
    current_turn: Option<usize>,
    last_total: Option<TokenUsage>,
    /// A `token_usage_record` was read since the last `token_count` whose total moved: that
    /// event repeats the record's response.
    record_pending: bool,
    /// Compactions waiting for the `turn_context` after them.
    awaiting_context: Option<usize>,
    /// The model of the last `turn_context`.
    model: Option<String>,
    /// Items of the model's answer (text, reasoning, a call) read since the last response: a
    /// request was under way.
    pending_output: bool,
}

impl Builder {
    fn run(mut self, lines: &mut [Line]) -> Thread {
        for line in lines.iter_mut() {
            self.line(line);
        }
        if self.pending_output {
            if let Some(last) = lines.last() {
                let line = Line {
                    number: last.number,
                    timestamp: None,
                    record: Record::Other {
                        kind: String::new(),
                        payload: Value::Null,
                    },
                };
                self.push_failed(&line, FailedKind::Cut);
            }
        }
        let dangling: Vec<String> = self
            .t
            .tool_calls
            .iter()
            .filter(|c| c.output.is_none())
            .map(|c| {
                format!(
                    "{} call {} (line {}) has no output",
                    c.name, c.call_id, c.line
                )
            })
            .collect();
        if let Some(first) = dangling.first() {
            self.t
                .diagnostics
                .push_n(DiagnosticKind::DanglingTool, dangling.len(), first.clone());
        }
        self.t
    }

    fn turn_id(&self) -> Option<String> {
        self.current_turn.and_then(|i| self.t.turns[i].id.clone())
    }

    fn push_response(
        &mut self,
        line: &Line,
        turn_id: Option<String>,
        response_id: Option<String>,
        recorded: TokenUsage,
        source: UsageSource,
    ) {
        let index = self.t.responses.len();
        self.t.responses.push(Response {
            index,
            line: line.number,
            timestamp: line.timestamp.clone(),
            turn_id,
            response_id,
            recorded,
            usage: recorded.normalize(),
            source,
            is_compaction: false,
            model: self.model.clone(),
        });
        if let Some(i) = self.current_turn {
            self.t.turns[i].responses.push(index);
        }
        self.awaiting_context = None;
        self.pending_output = false;
    }

    fn push_failed(&mut self, line: &Line, kind: FailedKind) {
        self.t.failed_requests.push(FailedRequest {
            line: line.number,
            timestamp: line.timestamp.clone(),
            turn_id: self.turn_id(),
            kind,
            model: self.model.clone(),
        });
        self.pending_output = false;
    }

    fn line(&mut self, line: &mut Line) {
        let taken = take_bulk(&mut line.record);
        let line = &*line;
        match &line.record {
            Record::SessionMeta(m) => {
                // `resume` may write it again: the first one is the thread's.
                if self.t.meta.is_none() {
                    self.t.meta = Some((**m).clone());
                }
            }
            Record::TurnContext(c) => {
                if let Some(i) = self.awaiting_context.take() {
                    self.t.compactions[i].turn_context_after = Some(line.number);
                }
                if let Some(i) = self.current_turn {
                    self.t.turns[i].contexts.push(c.clone());
                }
                if c.model.is_some() {
                    self.model = c.model.clone();
                }
            }
            Record::TokenUsageRecord(r) => {
                let turn = r.turn_id.clone().or_else(|| self.turn_id());
                self.push_response(
                    line,
                    turn,
                    r.response_id.clone(),
                    r.usage,
                    UsageSource::Record,
                );
                self.record_pending = true;
            }
            Record::Event(e) => self.event(line, e),
            Record::ResponseItem(r) => self.item(line, &r.item, taken),
            Record::Compacted(_) => self.compacted(line, taken.compacted.unwrap_or_default()),
            Record::Other { .. } => {}
        }
    }

    fn event(&mut self, line: &Line, e: &Event) {
        match e {
            Event::TaskStarted {
                turn_id,
                model_context_window,
            } => {
                self.t.turns.push(Turn {
                    id: turn_id.clone(),
                    line: line.number,
                    status: TurnStatus::Open,
                    contexts: Vec::new(),
                    model_context_window: *model_context_window,
                    responses: Vec::new(),
                });
                self.current_turn = Some(self.t.turns.len() - 1);
            }
            Event::TaskComplete { .. } => self.end_turn(TurnStatus::Completed),
            Event::TurnAborted { reason, .. } => {
                if self.pending_output {
                    self.push_failed(line, FailedKind::Aborted(reason.clone()));
                }
                self.end_turn(TurnStatus::Aborted {
                    reason: reason.clone(),
                })
            }
            Event::Error { message } => {
                self.push_failed(line, FailedKind::Error(message.clone()));
                if let Some(i) = self.current_turn {
                    self.t.turns[i].status = TurnStatus::Failed {
                        message: message.clone(),
                    };
                }
            }
            Event::StreamError { .. } => self.t.stream_errors += 1,
            Event::TokenCount { last, total, .. } => {
                let Some(total) = total else { return };
                let moved = self.last_total != Some(*total);
                self.last_total = Some(*total);
                if !moved {
                    return;
                }
                if std::mem::take(&mut self.record_pending) {
                    return;
                }
                if let Some(last) = last.filter(|l| !l.is_estimate_only()) {
                    let turn = self.turn_id();
                    self.push_response(line, turn, None, last, UsageSource::TokenCount);
                }
            }
            Event::ItemCompleted { item, .. } => self.item_completed(item),
            Event::ContextCompacted | Event::Other { .. } => {}
        }
    }

    fn end_turn(&mut self, status: TurnStatus) {
        if let Some(i) = self.current_turn.take() {
            let turn = &mut self.t.turns[i];
            // Codex ends a turn an error stopped with `task_complete` too: it stays failed.
            if !(status == TurnStatus::Completed
                && matches!(turn.status, TurnStatus::Failed { .. }))
            {
                turn.status = status;
            }
        }
    }

    fn item(&mut self, line: &Line, item: &ResponseItem, taken: Bulk) {
        if is_output(item) {
            self.pending_output = true;
        }
        // The older local shell tool: `{call_id, action: {command: [..]}}`, answered by a
        // `function_call_output`.
        let local;
        let (call_id, name, kind, input) = match item {
            ResponseItem::Other { kind, payload } if kind == "local_shell_call" => {
                let Some(id) = payload
                    .get("call_id")
                    .or_else(|| payload.get("id"))
                    .and_then(Value::as_str)
                else {
                    return;
                };
                local = (id.to_owned(), "local_shell".to_owned());
                let action = payload
                    .get("action")
                    .map(Value::to_string)
                    .unwrap_or_default();
                (&local.0, &local.1, CallKind::Function, action)
            }
            ResponseItem::FunctionCall { call_id, name, .. } => {
                (call_id, name, CallKind::Function, taken.text)
            }
            ResponseItem::CustomToolCall { call_id, name, .. } => {
                (call_id, name, CallKind::Custom, taken.text)
            }
            ResponseItem::FunctionCallOutput { call_id, .. }
            | ResponseItem::CustomToolCallOutput { call_id, .. } => {
                self.output(line, call_id, taken.text);
                return;
            }
            _ => return,
        };
        let patch_files = match (name.as_str(), kind) {
            ("apply_patch", CallKind::Custom) => patch_files(&input),
            // Releases that offer it as a JSON function: `{"input": "*** Begin Patch…"}`.
            ("apply_patch", CallKind::Function) => serde_json::from_str::<Value>(&input)
                .ok()
                .and_then(|v| v.get("input").and_then(Value::as_str).map(patch_files))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        self.calls.insert(call_id.clone(), self.t.tool_calls.len());
        self.t.tool_calls.push(ToolCall {
            call_id: call_id.clone(),
            name: name.clone(),
            kind,
            input,
            line: line.number,
            turn_id: self.turn_id(),
            output: None,
            output_line: None,
            exit_code: None,
            patch_files,
            failed: false,
        });
    }

    fn output(&mut self, line: &Line, call_id: &str, output: String) {
        let Some(&i) = self.calls.get(call_id) else {
            self.t.diagnostics.push(
                DiagnosticKind::OrphanPart,
                format!(
                    "line {}: output of call {call_id}, which is not in the rollout",
                    line.number
                ),
            );
            return;
        };
        let call = &mut self.t.tool_calls[i];
        call.output_line = Some(line.number);
        if let Some(code) = exit_code(&output) {
            call.exit_code = Some(code);
        }
        call.failed = match (call.name.as_str(), call.exit_code) {
            (_, Some(code)) => code != 0,
            // A patch Codex refused before running it says so without an exit code.
            ("apply_patch", None) => !output.contains("Success."),
            _ => call.failed,
        };
        call.output = Some(output);
    }

    /// Codex's own record of a finished call: the exit code where the output has none.
    fn item_completed(&mut self, item: &Value) {
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return;
        };
        let Some(&i) = self.calls.get(id) else { return };
        let call = &mut self.t.tool_calls[i];
        if call.exit_code.is_none() {
            if let Some(code) = item.get("exit_code").and_then(Value::as_i64) {
                call.exit_code = Some(code);
                call.failed = code != 0;
            }
        }
        if item.get("status").and_then(Value::as_str) == Some("failed") {
            call.failed = true;
        }
    }

    fn compacted(&mut self, line: &Line, c: Compacted) {
        // The summary request: the response `compaction_response_id` names, else the last one.
        let request = match &c.compaction_response_id {
            Some(id) => self
                .t
                .responses
                .iter()
                .rposition(|r| r.response_id.as_deref() == Some(id.as_str())),
            None => self.t.responses.len().checked_sub(1),
        };
        if let Some(r) = request {
            self.t.responses[r].is_compaction = true;
        }
        self.t.compactions.push(Compaction {
            line: line.number,
            turn_id: self.turn_id(),
            compacted: c,
            request,
            turn_context_after: None,
        });
        self.awaiting_context = Some(self.t.compactions.len() - 1);
    }
}

/// What a line gives up to the thread: a call's input or output, or a compaction.
#[derive(Default)]
struct Bulk {
    text: String,
    compacted: Option<Compacted>,
}

/// Move the bulk out of `record`, leaving an empty text (or compaction) behind.
fn take_bulk(record: &mut Record) -> Bulk {
    let mut bulk = Bulk::default();
    match record {
        Record::ResponseItem(r) => match &mut r.item {
            ResponseItem::FunctionCall { arguments: t, .. }
            | ResponseItem::CustomToolCall { input: t, .. }
            | ResponseItem::FunctionCallOutput { output: t, .. }
            | ResponseItem::CustomToolCallOutput { output: t, .. } => bulk.text = std::mem::take(t),
            _ => {}
        },
        Record::Compacted(c) => bulk.compacted = Some(std::mem::take(&mut **c)),
        _ => {}
    }
    bulk
}

/// Whether an item is part of the model's answer (what a response produces) rather than its
/// input.
pub fn is_output(item: &ResponseItem) -> bool {
    match item {
        ResponseItem::Message { role, .. } => role == "assistant",
        ResponseItem::Reasoning { .. }
        | ResponseItem::FunctionCall { .. }
        | ResponseItem::CustomToolCall { .. } => true,
        ResponseItem::FunctionCallOutput { .. } | ResponseItem::CustomToolCallOutput { .. } => {
            false
        }
        ResponseItem::Other { kind, .. } => OUTPUT_KINDS.contains(&kind.as_str()),
    }
}

/// Item types of the model's answer besides messages, reasoning and calls.
pub const OUTPUT_KINDS: &[&str] = &[
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
    "image_generation_call",
];

/// The exit code an output states: "Process exited with code N" (`exec_command`) or
/// "Exit code: N" (`apply_patch`, the older shell tool), in its first lines.
pub fn exit_code(output: &str) -> Option<i64> {
    // Older releases' shell tool: `{"output": …, "metadata": {"exit_code": N, …}}`.
    if output.trim_start().starts_with('{') {
        if let Some(code) = serde_json::from_str::<Value>(output)
            .ok()
            .and_then(|v| v.get("metadata")?.get("exit_code")?.as_i64())
        {
            return Some(code);
        }
    }
    output.lines().take(8).find_map(|l| {
        let l = l.trim();
        l.strip_prefix("Process exited with code ")
            .or_else(|| l.strip_prefix("Exit code: "))
            .and_then(|n| n.trim().parse().ok())
    })
}

/// The files an `apply_patch` input names (`*** Add File:`, `*** Update File:`, `*** Delete
/// File:`, with `*** Move to:` after an update).
pub fn patch_files(input: &str) -> Vec<PatchFile> {
    let mut files: Vec<PatchFile> = Vec::new();
    for l in input.lines() {
        let l = l.trim_end();
        let (op, path) = if let Some(p) = l.strip_prefix("*** Add File: ") {
            ("add", p)
        } else if let Some(p) = l.strip_prefix("*** Update File: ") {
            ("update", p)
        } else if let Some(p) = l.strip_prefix("*** Delete File: ") {
            ("delete", p)
        } else if let Some(p) = l.strip_prefix("*** Move to: ") {
            if let Some(last) = files.last_mut() {
                last.moved_to = Some(p.trim().to_owned());
            }
            continue;
        } else {
            continue;
        };
        files.push(PatchFile {
            op,
            path: path.trim().to_owned(),
            moved_to: None,
        });
    }
    files
}

/// Whether a request body is Codex's compaction request: no tools offered, and the last input
/// message asks for a checkpoint summary ("You are performing a CONTEXT CHECKPOINT
/// COMPACTION…", Codex's summary prompt).
pub fn is_compaction_request(tool_count: usize, last_message: &str) -> bool {
    tool_count == 0 && last_message.contains("CONTEXT CHECKPOINT COMPACTION")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::codex::rollout::read_bytes;

    #[test]
    fn exit_codes_and_patch_files_are_read() {
        assert_eq!(
            exit_code("Chunk ID: a\nWall time: 0 seconds\nProcess exited with code 2\nOutput:\n"),
            Some(2)
        );
        assert_eq!(exit_code("Exit code: 0\nWall time: 0 seconds\n"), Some(0));
        assert_eq!(exit_code("Process running with session ID 5"), None);
        let files = patch_files(
            "*** Begin Patch\n*** Add File: a.md\n+x\n*** Update File: b.rs\n*** Move to: c.rs\n@@\n*** Delete File: d\n*** End Patch",
        );
        assert_eq!(
            files
                .iter()
                .map(|f| (f.op, f.path.as_str(), f.moved_to.as_deref()))
                .collect::<Vec<_>>(),
            vec![
                ("add", "a.md", None),
                ("update", "b.rs", Some("c.rs")),
                ("delete", "d", None)
            ]
        );
    }

    #[test]
    fn turns_end_completed_aborted_failed_or_open() {
        let mut r = read_bytes(
            br#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}
{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1"}}
{"type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}}
{"type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t2","reason":"interrupted"}}
{"type":"event_msg","payload":{"type":"task_started","turn_id":"t3"}}
{"type":"event_msg","payload":{"type":"stream_error","message":"retrying 1/5"}}
{"type":"event_msg","payload":{"type":"error","message":"context window exceeded"}}
{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t3"}}
{"type":"event_msg","payload":{"type":"task_started","turn_id":"t4"}}
"#,
        );
        let t = Thread::from_rollout(&mut r);
        let st: Vec<_> = t.turns.iter().map(|t| t.status.clone()).collect();
        assert_eq!(
            st,
            vec![
                TurnStatus::Completed,
                TurnStatus::Aborted {
                    reason: Some("interrupted".into())
                },
                TurnStatus::Failed {
                    message: "context window exceeded".into()
                },
                TurnStatus::Open
            ]
        );
        assert_eq!(t.stream_errors, 1);
    }

    #[test]
    fn a_failed_patch_and_a_failing_command_are_failures() {
        let mut r = read_bytes(
            br#"{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"p","input":"*** Begin Patch\n*** Update File: x.rs\n@@\n-a\n+b\n*** End Patch"}}
{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"p","output":"apply_patch verification failed: Failed to find expected lines in x.rs"}}
{"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"e","arguments":"{\"cmd\":\"false\"}"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"e","output":"Chunk ID: 1\nProcess exited with code 1\nOutput:\n"}}
"#,
        );
        let t = Thread::from_rollout(&mut r);
        assert_eq!(t.tool_calls.len(), 2);
        assert!(t.tool_calls[0].failed && t.tool_calls[0].exit_code.is_none());
        assert_eq!(t.tool_calls[0].patch_files[0].path, "x.rs");
        assert_eq!(
            (t.tool_calls[1].exit_code, t.tool_calls[1].failed),
            (Some(1), true)
        );
        assert!(t.diagnostics.is_empty());
    }

    /// The rollout's bulk is held once: a call's input and output and a compaction move into
    /// the thread, and the lines keep nothing of them.
    #[test]
    fn calls_and_compactions_move_out_of_the_rollout() {
        let mut r = read_bytes(
            br#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"e","arguments":"{\"cmd\":\"ls\"}"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"e","output":"Process exited with code 0\nOutput:\na.rs\n"}}
{"type":"compacted","payload":{"message":"the summary","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}}
"#,
        );
        let t = Thread::from_rollout(&mut r);
        assert_eq!(t.tool_calls[0].input, r#"{"cmd":"ls"}"#);
        assert_eq!(
            t.tool_calls[0].output.as_deref(),
            Some("Process exited with code 0\nOutput:\na.rs\n")
        );
        assert_eq!(t.compactions[0].compacted.message, "the summary");
        assert_eq!(t.compactions[0].compacted.replacement_history.len(), 1);
        for line in &r.lines {
            match &line.record {
                Record::ResponseItem(ri) => match &ri.item {
                    ResponseItem::FunctionCall { arguments: t, .. }
                    | ResponseItem::FunctionCallOutput { output: t, .. } => {
                        assert!(t.is_empty(), "line {} kept {t:?}", line.number)
                    }
                    other => panic!("unexpected item {other:?}"),
                },
                Record::Compacted(c) => assert_eq!(**c, Compacted::default()),
                other => panic!("unexpected record {other:?}"),
            }
        }
    }

    #[test]
    fn a_call_without_output_and_an_output_without_call_are_reported() {
        let mut r = read_bytes(
            br#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"a","arguments":"{}"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"zz","output":"x"}}
"#,
        );
        let t = Thread::from_rollout(&mut r);
        assert_eq!(t.diagnostics.count(DiagnosticKind::DanglingTool), 1);
        assert_eq!(t.diagnostics.count(DiagnosticKind::OrphanPart), 1);
        assert_eq!(t.tool_calls[0].output, None);
    }

    #[test]
    fn older_json_tools_are_read_too() {
        assert_eq!(
            exit_code(r#"{"output":"boom\n","metadata":{"exit_code":127,"duration_seconds":0.1}}"#),
            Some(127)
        );
        let mut r = read_bytes(
            br#"{"type":"response_item","payload":{"type":"function_call","name":"apply_patch","call_id":"p","arguments":"{\"input\":\"*** Begin Patch\\n*** Delete File: old.txt\\n*** End Patch\"}"}}
"#,
        );
        let t = Thread::from_rollout(&mut r);
        assert_eq!(t.tool_calls[0].patch_files[0].path, "old.txt");
    }

    #[test]
    fn a_thread_resumed_by_a_release_with_records_keeps_its_earlier_responses() {
        let tc = |total: u64| {
            format!(
                r#"{{"type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total}}},"last_token_usage":{{"input_tokens":10}}}}}}}}"#
            )
        };
        let rec = r#"{"type":"token_usage_record","payload":{"response_id":"r","usage":{"input_tokens":10}}}"#;
        let text = [tc(10), tc(20), rec.to_owned(), tc(30), tc(30)].join("\n");
        let t = Thread::from_rollout(&mut read_bytes(text.as_bytes()));
        let sources: Vec<_> = t.responses.iter().map(|r| r.source).collect();
        assert_eq!(
            sources,
            vec![
                UsageSource::TokenCount,
                UsageSource::TokenCount,
                UsageSource::Record
            ]
        );
    }

    #[test]
    fn repeated_token_counts_are_one_response_without_records() {
        let tc = |total: u64, last: u64| {
            format!(
                r#"{{"type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total},"total_tokens":{total}}},"last_token_usage":{{"input_tokens":{last},"total_tokens":{last}}}}}}}}}"#
            )
        };
        let text = [tc(100, 100), tc(100, 100), tc(250, 150), tc(250, 0)].join("\n");
        let t = Thread::from_rollout(&mut read_bytes(text.as_bytes()));
        let inputs: Vec<u64> = t
            .responses
            .iter()
            .map(|r| r.recorded.input_tokens)
            .collect();
        assert_eq!(inputs, vec![100, 150]);
        assert!(t
            .responses
            .iter()
            .all(|r| r.source == UsageSource::TokenCount));
    }
}

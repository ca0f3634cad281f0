//! A rollout converted into the neutral [`Trace`]: what the model was sent and what it answered,
//! one request per model call, in file order.
//!
//! **Messages.** Every user-role item (`user`, `developer`, `system`) is a user message: what a
//! person typed is [`UserKind::Human`]; what Codex added on its own (its skills and permissions
//! developer messages, `<environment_context>`, an `AGENTS.md`, an interrupt notice, anything
//! that starts with `<`) is [`UserKind::Injected`], synthetic text in the turn it falls in. The
//! items of one model response (reasoning, text, tool calls) are one assistant message, closed by
//! the response's usage ([`super::thread`]: a `token_usage_record`, else a `token_count` whose
//! total moved). Tool outputs are paired with their calls by call id. The base instructions
//! (`session_meta.base_instructions`, sent as the first developer message of every request) and
//! the tool schemas are not messages: like every agent's system prompt they are the replay's
//! system chunk, estimated from the first request.
//!
//! **Tools.** A tool part keeps the name Codex gave it and says which core tool it behaves as
//! ([`alias_of`]): `exec_command`, `shell`, `local_shell` and `write_stdin` (its output is the
//! process's, with its exit code) are `bash`, with the exit code in `metadata.exit`;
//! `update_plan` is `todowrite`; `view_image` is `read`; `spawn_agent` is `task`. Function
//! arguments are kept as the JSON object they are; a freeform input (`apply_patch`) as the
//! string. A patch Codex did not apply is an error part; a call without output is `running` in a
//! turn still open, else an error.
//!
//! **Requests.** One per response, with its usage made disjoint ([`super::usage`]: `input` =
//! uncached input, `cache_read` = cached input, `cache_write` 0, `output` = output without
//! reasoning, `reasoning`; ccusage's `outputTokens` is `output + reasoning`), `prompt` = Codex's
//! `input_tokens` (the whole input, cached part included: what the model received), and the cost
//! by the replay's pricing table ([`super::usage::cost`]). A turn's `error` is a failed request
//! (status `error`), an interrupted turn whose answer was under way an `aborted` one, and an
//! answer the file ends in before its usage a `cut` one, each without usage.
//!
//! **Compactions.** Codex's compaction call is an ordinary request (no tools, the history, then
//! its checkpoint prompt as a user message): its answer is an assistant message with `summary:
//! true`, its request `synthetic_call`. The next request starts from the `compacted` record's
//! replacement history (the user messages kept verbatim, fresh developer and environment
//! messages, the summary with Codex's prefix), which this module puts into the summary message,
//! one text part per item in the order sent, so the replay's view after the compaction (the
//! summary message, then what follows) is what the model received. Releases whose `compacted`
//! has no replacement history rebuilt it from the initial context, the user messages (newest
//! kept, about 20,000 tokens) and the summary; that rebuild is approximated the same way and
//! said ([`DiagnosticKind::RuleCompaction`]).

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::rollout::{Compacted, Line, Record, ResponseItem, Rollout};
use super::scan::{is_user_text, unix_ms};
use super::thread::{CallKind, FailedKind, Thread, ToolCall, TurnStatus, OUTPUT_KINDS};
use super::usage;
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::flat_rules::{FlatRules, KeptTail, TriggerCount, TriggerRule};
use crate::trace::model::{
    ChildLink, CompactionEvent, CompactionShape, CompactionStyle, CompletedAnswer, Message,
    MessageError, ModelRef, Origin, Part, PartKind, Request, RequestStatus, Role, SessionInfo,
    SourceKind, ToolMetadata, ToolPart, ToolStatus, Trace, Usage, UserKind, WireRules,
};

/// The adapter's id, as a trace's origin names its agent.
pub const AGENT: &str = "codex";
/// The adapter's word for the format.
pub const FORMAT: &str = "rollout";
/// The rules of releases whose `compacted` records carry the replacement history.
pub const RULES_REPLACEMENT_HISTORY: &str = "replacement-history";
/// The rules of releases whose `compacted` records carry only the summary.
pub const RULES_REBUILT_HISTORY: &str = "rebuilt-history";

/// What Codex puts before a compaction's summary when it hands it on.
pub const SUMMARY_PREFIX: &str = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:";

/// Codex's compaction prompt: the last user message of its compaction call (0.171.0).
pub const COMPACTION_PROMPT: &str = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.\n\nInclude:\n- Current progress and key decisions made\n- Important context, constraints, or user preferences\n- What remains to be done (clear next steps)\n- Any critical data, examples, or references needed to continue\n\nBe concise, structured, and focused on helping the next LLM seamlessly continue the work.\n";

/// [`COMPACTION_PROMPT`] as the prompt a model writing a simulated compaction's summary is
/// asked with: the history as Codex sends it, then the prompt as its last user message.
pub fn compaction_prompt() -> crate::trace::summary_call::CompactionPrompt {
    crate::trace::summary_call::CompactionPrompt {
        system: None,
        first: format!(
            "{}\n\n{COMPACTION_PROMPT}",
            crate::trace::summary_call::HISTORY
        ),
        update: None,
        provenance: "Codex 0.171.0's compaction prompt, the last user message of its compaction \
                     call as recorded in tests/recordings/codex-0.171.0 (requests extract)"
            .to_owned(),
    }
}

/// How much of the user messages releases without a replacement history kept (Codex's
/// `COMPACT_USER_MESSAGE_MAX_TOKENS`, 20,000, at its own 4 bytes a token).
const REBUILT_USER_BYTES: usize = 80_000;

/// How wire-level sending worked for Codex: tool results as plain text, the compaction call the
/// history as messages then its prompt (the closest shape: [`CompactionShape::Messages`], the
/// earlier summary first inside the replacement history, no tools), nothing clipped.
pub const WIRE: WireRules = WireRules {
    tool_results_as_json: false,
    compaction_shape: CompactionShape::Messages,
    quotes_previous_summary: false,
    summary_clips_tool_outputs_at: None,
    // Codex's compaction call has its own instructions and no tools.
    summary_call_own_system: true,
    // One request per stored item: nothing is rebuilt differently.
    completed_answer: CompletedAnswer::AsSent,
};

/// Codex's auto-compact: before a request is sent, when the thread's total (the last response's
/// prompt and output) plus its estimate of the items added since (4 bytes a token) reaches
/// `model_auto_compact_token_limit`, the request is preceded by a compaction call; the history is
/// replaced by the summary and the earlier user messages (no kept tail of turns). Without a
/// configured limit, tierscope assumes 90 % of the model's window.
pub fn flat_rules() -> FlatRules {
    FlatRules {
        agent: "Codex CLI",
        rules: "auto-compact".to_owned(),
        count: TriggerCount::PreviousTotalPlusEstimate { bytes_per_token: 4 },
        trigger: TriggerRule::AtLeast,
        tail: KeptTail::None,
        context_share: 0.9,
        output_reserve_cap: 0,
        buffer: 0,
    }
}

/// The core tool a Codex tool behaves as (see the module docs); `None` for the others (and for
/// `apply_patch`, already the core's name).
pub fn alias_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "exec_command" | "shell" | "shell_command" | "local_shell" | "container.exec"
        | "write_stdin" => "bash",
        "update_plan" => "todowrite",
        "view_image" | "read_file" => "read",
        "grep_files" => "grep",
        "list_dir" => "list",
        "spawn_agent" => "task",
        "web_search" => "websearch",
        _ => return None,
    })
}

/// Convert a rollout read from `path` (see the module docs). The rollout is consumed: its
/// texts move into the trace, so the two are never held whole side by side.
pub fn to_trace(path: &Path, mut rollout: Rollout) -> Trace {
    let thread = Thread::from_rollout(&mut rollout);
    let mut b = Builder::new(path, thread);
    for line in rollout.lines {
        b.line(line);
    }
    b.finish(rollout.diagnostics)
}

/// A message part id: the item's line (and its position there).
fn part_id(line: usize, k: usize) -> String {
    if k == 0 {
        format!("p{line:07}")
    } else {
        format!("p{line:07}-{k}")
    }
}

fn message_id(line: usize) -> String {
    format!("m{line:07}")
}

fn text_part(id: String, text: String, synthetic: bool) -> Part {
    Part {
        id,
        kind: PartKind::Text {
            text,
            synthetic,
            ignored: false,
            compaction_continue: false,
        },
    }
}

struct Builder<'a> {
    path: &'a Path,
    /// Its calls' texts and compactions move into the trace as they are placed.
    thread: Thread,
    /// A compaction without replacement history (whose history is rebuilt) is in the thread.
    any_rebuilt: bool,
    provider: Option<String>,
    messages: Vec<Message>,
    requests: Vec<Request>,
    compactions: Vec<CompactionEvent>,
    children: Vec<ChildLink>,
    /// The assistant message of the answer under way.
    pending: Option<Message>,
    response_at: HashMap<usize, usize>,
    failed_at: HashMap<usize, usize>,
    compaction_at: HashMap<usize, usize>,
    call_at: HashMap<usize, usize>,
    /// Response index → index of its message.
    message_of_response: HashMap<usize, usize>,
    /// Line number → Unix ms of the lines that have a timestamp.
    time_of_line: HashMap<usize, i64>,
    last_time: i64,
    cwd: Option<String>,
    last_human: Option<String>,
    last_user: Option<String>,
    /// Injected texts before the first human message (a rebuilt compaction's initial context).
    initial_context: Vec<String>,
    human_texts: Vec<String>,
    human_lines: Vec<usize>,
    title: Option<String>,
    rebuilt_compactions: usize,
    skipped_history_items: usize,
}

impl<'a> Builder<'a> {
    fn new(path: &'a Path, thread: Thread) -> Builder<'a> {
        let index = |lines: Vec<usize>| -> HashMap<usize, usize> {
            lines.into_iter().enumerate().map(|(i, l)| (l, i)).collect()
        };
        Builder {
            path,
            any_rebuilt: thread
                .compactions
                .iter()
                .any(|c| c.compacted.replacement_history.is_empty()),
            provider: thread.meta.as_ref().and_then(|m| m.model_provider.clone()),
            messages: Vec::new(),
            requests: Vec::new(),
            compactions: Vec::new(),
            children: Vec::new(),
            pending: None,
            response_at: index(thread.responses.iter().map(|r| r.line).collect()),
            // A cut answer is closed at the end of the file.
            failed_at: thread
                .failed_requests
                .iter()
                .enumerate()
                .filter(|(_, f)| f.kind != FailedKind::Cut)
                .map(|(i, f)| (f.line, i))
                .collect(),
            compaction_at: index(thread.compactions.iter().map(|c| c.line).collect()),
            call_at: index(thread.tool_calls.iter().map(|c| c.line).collect()),
            message_of_response: HashMap::new(),
            time_of_line: HashMap::new(),
            last_time: 0,
            cwd: thread
                .meta
                .as_ref()
                .map(|m| m.cwd.clone())
                .filter(|c| !c.is_empty()),
            last_human: None,
            last_user: None,
            initial_context: Vec::new(),
            human_texts: Vec::new(),
            human_lines: Vec::new(),
            title: None,
            rebuilt_compactions: 0,
            skipped_history_items: 0,
            thread,
        }
    }

    fn model_ref(&self, model: Option<&str>) -> Option<ModelRef> {
        model.map(|m| ModelRef {
            provider_id: self.provider.clone().unwrap_or_default(),
            model_id: m.to_owned(),
        })
    }

    /// The time of a line: its own timestamp, else the last one before it.
    fn time(&self, line: &Line) -> i64 {
        line.timestamp
            .as_deref()
            .and_then(unix_ms)
            .unwrap_or(self.last_time)
    }

    fn line(&mut self, mut line: Line) {
        if let Some(t) = line.timestamp.as_deref().and_then(unix_ms) {
            self.last_time = self.last_time.max(t);
            self.time_of_line.insert(line.number, t);
        }
        let record = std::mem::replace(
            &mut line.record,
            Record::Other {
                kind: String::new(),
                payload: Value::Null,
            },
        );
        let line = &line;
        match record {
            Record::TurnContext(c) => {
                if let Some(cwd) = c.cwd.filter(|c| !c.is_empty()) {
                    self.cwd = Some(cwd);
                }
            }
            Record::ResponseItem(r) => self.item(line, r.item),
            Record::TokenUsageRecord(_) | Record::Event(_) => {
                if let Some(&ri) = self.response_at.get(&line.number) {
                    self.close_response(line, ri);
                } else if let Some(&fi) = self.failed_at.get(&line.number) {
                    self.close_failed(line, fi);
                }
            }
            Record::Compacted(_) => {
                if let Some(&ci) = self.compaction_at.get(&line.number) {
                    self.compaction(line, ci);
                }
            }
            Record::SessionMeta(_) | Record::Other { .. } => {}
        }
    }

    /// The assistant message of the answer under way, opened at `line`.
    fn pending(&mut self, line: &Line) -> &mut Message {
        let time = self.time(line);
        let cwd = self.cwd.clone();
        self.pending.get_or_insert_with(|| Message {
            id: message_id(line.number),
            session_id: String::new(),
            role: Role::Assistant,
            time_created: time,
            time_completed: None,
            agent: None,
            model: None,
            parent_id: None,
            finish: None,
            error: None,
            summary: false,
            tokens: None,
            cost: 0.0,
            parts: Vec::new(),
            user_kind: None,
            own_history: false,
            cwd,
            dropped_after_own_requests: false,
            system: None,
        })
    }

    fn item(&mut self, line: &Line, item: ResponseItem) {
        let n = line.number;
        match item {
            ResponseItem::Message { role, text, .. } if role == "assistant" => {
                let m = self.pending(line);
                m.parts.push(text_part(part_id(n, 0), text, false));
            }
            ResponseItem::Message { role, text, .. } => self.user_message(line, &role, text),
            ResponseItem::Reasoning { summary, .. } => {
                let m = self.pending(line);
                // Encrypted reasoning alone has no text to show; the answer is under way.
                if !summary.trim().is_empty() {
                    m.parts.push(Part {
                        id: part_id(n, 0),
                        kind: PartKind::Reasoning { text: summary },
                    });
                }
            }
            ResponseItem::FunctionCall { .. } | ResponseItem::CustomToolCall { .. } => {
                self.call(line)
            }
            ResponseItem::Other { kind, .. } if kind == "local_shell_call" => self.call(line),
            ResponseItem::Other { kind, payload } if kind == "web_search_call" => {
                let time = self.time(line);
                let part = ToolPart {
                    call_id: payload
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    tool: "web_search".to_owned(),
                    alias: alias_of("web_search"),
                    status: ToolStatus::Completed,
                    input: payload.get("action").cloned().unwrap_or(Value::Null),
                    output: None,
                    error: None,
                    title: None,
                    metadata: ToolMetadata::default(),
                    time_start: Some(time),
                    time_end: Some(time),
                    time_compacted: None,
                };
                self.pending(line).parts.push(Part {
                    id: part_id(n, 0),
                    kind: PartKind::Tool(Box::new(part)),
                });
            }
            ResponseItem::Other { kind, .. } if OUTPUT_KINDS.contains(&kind.as_str()) => {
                // An answer item this reader does not render (its payload can be an image).
                self.pending(line).parts.push(Part {
                    id: part_id(n, 0),
                    kind: PartKind::Unknown {
                        type_name: kind,
                        raw: Value::Null,
                    },
                });
            }
            // Outputs are paired with their calls; other items are not sent as messages.
            _ => {}
        }
    }

    fn user_message(&mut self, line: &Line, role: &str, text: String) {
        let human = role == "user" && is_user_text(&text);
        let id = message_id(line.number);
        if human {
            if self.title.is_none() {
                self.title = Some(text.trim().to_owned());
            }
            self.last_human = Some(id.clone());
            // Kept for a compaction whose history has to be rebuilt.
            self.human_texts.push(text.clone());
            self.human_lines.push(line.number);
        } else if self.last_human.is_none() {
            self.initial_context.push(text.clone());
        }
        self.last_user = Some(id.clone());
        self.messages.push(Message {
            id,
            session_id: String::new(),
            role: Role::User,
            time_created: self.time(line),
            time_completed: None,
            agent: None,
            model: None,
            parent_id: None,
            finish: None,
            error: None,
            summary: false,
            tokens: None,
            cost: 0.0,
            parts: vec![text_part(part_id(line.number, 0), text, !human)],
            user_kind: Some(if human {
                UserKind::Human
            } else {
                UserKind::Injected
            }),
            own_history: false,
            cwd: None,
            dropped_after_own_requests: false,
            system: None,
        });
    }

    fn call(&mut self, line: &Line) {
        let Some(&ci) = self.call_at.get(&line.number) else {
            return;
        };
        let start = self.time(line);
        let call = &mut self.thread.tool_calls[ci];
        let end = call
            .output_line
            .and_then(|l| self.time_of_line.get(&l).copied());
        let open = self
            .thread
            .turns
            .iter()
            .rev()
            .find(|t| t.id.is_some() && t.id == call.turn_id)
            .is_some_and(|t| t.status == TurnStatus::Open);
        let part = tool_part(call, start, end, open);
        if let Some(child) = part.metadata.session_id.clone() {
            self.children.push(ChildLink {
                session_id: child,
                message_id: String::new(),
                part_id: part_id(line.number, 0),
                call_id: call.call_id.clone(),
                description: part
                    .input
                    .get("message")
                    .and_then(Value::as_str)
                    .map(|s| crate::text::clip_chars(s, 200).to_string()),
            });
        }
        self.pending(line).parts.push(Part {
            id: part_id(line.number, 0),
            kind: PartKind::Tool(Box::new(part)),
        });
    }

    /// Close the answer under way (or an empty one opened at `line`) as a message with its
    /// request.
    fn close(
        &mut self,
        line: &Line,
        status: RequestStatus,
        usage: Usage,
        prompt: u64,
        model: Option<&str>,
        synthetic: bool,
    ) -> usize {
        let time = self.time(line);
        let model = self.model_ref(model);
        let cost = if status == RequestStatus::Ok && !usage.is_zero() {
            usage::cost(
                &usage,
                self.provider.as_deref(),
                model.as_ref().map(|m| m.model_id.as_str()),
            )
        } else {
            0.0
        };
        let user = self.last_human.clone().or_else(|| self.last_user.clone());
        self.pending(line);
        let Some(mut m) = self.pending.take() else {
            return self.messages.len();
        };
        let has_tools = m.tool_parts().next().is_some();
        let status = if status == RequestStatus::Ok && m.parts.is_empty() && !synthetic {
            RequestStatus::Empty
        } else {
            status
        };
        m.time_completed = Some(time.max(m.time_created));
        m.model = model.clone();
        m.parent_id = user.clone();
        m.tokens = Some(usage);
        m.cost = cost;
        m.summary = synthetic;
        m.finish = match status {
            RequestStatus::Ok if has_tools => Some("tool-calls".to_owned()),
            RequestStatus::Ok => Some("stop".to_owned()),
            _ => None,
        };
        let mi = self.messages.len();
        for c in self.children.iter_mut().filter(|c| c.message_id.is_empty()) {
            c.message_id = m.id.clone();
        }
        self.requests.push(Request {
            index: self.requests.len(),
            message_id: m.id.clone(),
            message_index: mi,
            status,
            time_created: m.time_created,
            time_completed: m.time_completed,
            agent: None,
            model,
            usage,
            cost,
            finish: m.finish.clone(),
            user_message_id: user,
            synthetic_call: synthetic,
            step: None,
            prompt,
            cache_ttl_s: None,
        });
        self.messages.push(m);
        mi
    }

    fn close_response(&mut self, line: &Line, ri: usize) {
        let r = &self.thread.responses[ri];
        let (usage, prompt, model, summary) = (
            r.usage,
            r.recorded.input_tokens,
            r.model.clone(),
            r.is_compaction,
        );
        let mi = self.close(
            line,
            RequestStatus::Ok,
            usage,
            prompt,
            model.as_deref(),
            summary,
        );
        self.message_of_response.insert(ri, mi);
    }

    fn close_failed(&mut self, line: &Line, fi: usize) {
        let f = &self.thread.failed_requests[fi];
        let (status, error) = match &f.kind {
            FailedKind::Error(msg) => (RequestStatus::Error, ("error", Some(msg.clone()))),
            FailedKind::Aborted(reason) => (RequestStatus::Aborted, ("aborted", reason.clone())),
            FailedKind::Cut => (RequestStatus::Cut, ("cut", None)),
        };
        let model = f.model.clone();
        let mi = self.close(line, status, Usage::default(), 0, model.as_deref(), false);
        if let Some(m) = self.messages.get_mut(mi) {
            m.error = Some(MessageError {
                name: error.0.to_owned(),
                message: error.1,
            });
        }
    }

    fn compaction(&mut self, line: &Line, ci: usize) {
        let request = self.thread.compactions[ci].request;
        let compacted = std::mem::take(&mut self.thread.compactions[ci].compacted);
        let mi = match request.and_then(|r| self.message_of_response.get(&r).copied()) {
            Some(mi) => mi,
            // No response of its own (a compaction done elsewhere): its summary stands alone,
            // with a request that has no usage.
            None => {
                let model = self.thread.responses.last().and_then(|r| r.model.clone());
                self.close(
                    line,
                    RequestStatus::Ok,
                    Usage::default(),
                    0,
                    model.as_deref(),
                    true,
                )
            }
        };
        let mut parts = Vec::new();
        let Compacted {
            message,
            replacement_history: history,
            ..
        } = compacted;
        if history.is_empty() {
            self.rebuilt_compactions += 1;
            let mut texts: Vec<String> = self.initial_context.clone();
            let mut kept: Vec<&String> = Vec::new();
            let mut room = REBUILT_USER_BYTES;
            for t in self.human_texts.iter().rev() {
                if t.len() > room {
                    break;
                }
                room -= t.len();
                kept.push(t);
            }
            texts.extend(kept.into_iter().rev().cloned());
            texts.push(if message.starts_with(SUMMARY_PREFIX) {
                message.clone()
            } else {
                format!("{SUMMARY_PREFIX}\n{message}")
            });
            for (k, t) in texts.into_iter().enumerate() {
                parts.push(text_part(part_id(line.number, k), t, true));
            }
        } else {
            for (k, item) in history.into_iter().enumerate() {
                match item {
                    ResponseItem::Message { text, .. } => {
                        parts.push(text_part(part_id(line.number, k), text, true))
                    }
                    _ => self.skipped_history_items += 1,
                }
            }
        }
        let summary_request = self.requests.iter().position(|r| r.message_index == mi);
        let manual = self.is_manual(ci);
        let Some(m) = self.messages.get_mut(mi) else {
            return;
        };
        m.summary = true;
        m.parts = parts;
        self.compactions.push(CompactionEvent {
            user_message_id: None,
            style: CompactionStyle::BeforeTail,
            summary_message_id: Some(m.id.clone()),
            summary_request,
            auto: !manual,
            overflow: false,
            tail_start_id: None,
            continuation_message_id: None,
            summary_text: message,
        });
    }

    /// A compaction asked for (`/compact`): its request is the only one of its turn, and no
    /// human message came in that turn before it.
    fn is_manual(&self, ci: usize) -> bool {
        let c = &self.thread.compactions[ci];
        let Some(r) = c.request else { return false };
        let Some(turn) = self.thread.turns.iter().find(|t| t.responses.contains(&r)) else {
            return false;
        };
        turn.responses.len() == 1
            && !self
                .human_lines
                .iter()
                .any(|&l| l > turn.line && l < c.line)
    }

    fn finish(mut self, read: Diagnostics) -> Trace {
        // An answer the file ends in before its usage.
        if self.pending.is_some() {
            if let Some(fi) = self
                .thread
                .failed_requests
                .iter()
                .rposition(|f| f.kind == FailedKind::Cut)
            {
                let line = Line {
                    number: self.thread.failed_requests[fi].line,
                    timestamp: None,
                    record: Record::Other {
                        kind: String::new(),
                        payload: Value::Null,
                    },
                };
                self.close_failed(&line, fi);
            }
        }
        let meta = self.thread.meta.as_ref();
        let id = self
            .thread
            .id()
            .map(str::to_owned)
            .or_else(|| super::home::thread_id_of(self.path))
            .unwrap_or_else(|| {
                self.path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
        for m in &mut self.messages {
            m.session_id = id.clone();
        }
        let version = meta.and_then(|m| m.cli_version.clone());
        let rules_version = version
            .as_deref()
            .and_then(crate::formats::opencode::dialect::parse_version);
        let created = meta
            .and_then(|m| m.timestamp.as_deref())
            .and_then(unix_ms)
            .or_else(|| self.time_of_line.values().min().copied())
            .unwrap_or(0);
        let model = self
            .thread
            .responses
            .iter()
            .find_map(|r| r.model.as_deref())
            .or_else(|| {
                self.thread
                    .turns
                    .iter()
                    .flat_map(|t| &t.contexts)
                    .find_map(|c| c.model.as_deref())
            })
            .map(str::to_owned);
        let session = SessionInfo {
            id: id.clone(),
            title: self.title.clone().unwrap_or_default(),
            slug: None,
            directory: meta.map(|m| m.cwd.clone()).unwrap_or_default(),
            project_id: None,
            parent_id: self.thread.parent_thread_id(),
            version: version.clone(),
            agent: None,
            model: self.model_ref(model.as_deref()),
            time_created: created,
            time_updated: self.last_time.max(created),
        };
        let mut diagnostics = read;
        diagnostics.extend(&self.thread.diagnostics);
        // One rule note (a kind keeps its first example): how usage was read and priced.
        let mut unpriced: Vec<String> = Vec::new();
        for r in self.requests.iter().filter(|r| !r.usage.is_zero()) {
            let info = usage::pricing(
                r.model.as_ref().map(|m| m.provider_id.as_str()),
                r.model.as_ref().map(|m| m.model_id.as_str()),
            );
            if let Some(note) = info.note {
                if !unpriced.contains(&note) {
                    unpriced.push(note);
                }
            }
        }
        if !self.requests.is_empty() {
            let mut note = "Codex records usage inclusive: input = input_tokens − \
                            cached_input_tokens, cache_read = cached_input_tokens, output = \
                            output_tokens − reasoning_output_tokens; the prompt is input_tokens"
                .to_owned();
            for u in &unpriced {
                note.push_str("; ");
                note.push_str(u);
            }
            diagnostics.push_n(
                DiagnosticKind::RuleTokenSemantics,
                self.requests.len(),
                note,
            );
        }
        if self.rebuilt_compactions > 0 {
            diagnostics.push_n(
                DiagnosticKind::RuleCompaction,
                self.rebuilt_compactions,
                "a compaction without replacement history: the history Codex rebuilt (initial \
                 context, user messages, summary) is approximated",
            );
        }
        if self.skipped_history_items > 0 {
            diagnostics.push_n(
                DiagnosticKind::RuleCompaction,
                self.skipped_history_items,
                "an item of a compaction's replacement history that is not a message (an \
                 encrypted compaction) is not sized",
            );
        }
        if self.requests.is_empty() && !self.messages.is_empty() {
            diagnostics.push(
                DiagnosticKind::NoRequests,
                format!("thread {id}: no model response recorded"),
            );
        }
        let rules = if self.any_rebuilt {
            RULES_REBUILT_HISTORY
        } else {
            RULES_REPLACEMENT_HISTORY
        };
        Trace {
            session,
            messages: self.messages,
            requests: self.requests,
            compactions: self.compactions,
            children: self.children,
            pruned: Vec::new(),
            origin: Origin {
                agent: AGENT,
                version,
                format: FORMAT,
                rules,
                rules_version,
            },
            wire: WIRE,
            source: SourceKind::SessionFile(self.path.display().to_string()),
            diagnostics,
            id_index: Default::default(),
        }
    }
}

/// A tool call as a neutral tool part (see the module docs); its input and output move into
/// the part.
fn tool_part(call: &mut ToolCall, start: i64, end: Option<i64>, turn_open: bool) -> ToolPart {
    let text = std::mem::take(&mut call.input);
    let input = match call.kind {
        CallKind::Function => {
            serde_json::from_str::<Value>(&text).unwrap_or_else(|_| Value::String(text))
        }
        CallKind::Custom => Value::String(text),
    };
    let alias = alias_of(&call.name);
    let bash = alias == Some("bash");
    let session_id = (call.name == "spawn_agent")
        .then(|| call.output.as_deref().and_then(spawned_thread))
        .flatten();
    let (status, output, error) = match call.output.take() {
        None if turn_open => (ToolStatus::Running, None, None),
        None => (
            ToolStatus::Error,
            None,
            Some("(no output recorded)".to_owned()),
        ),
        // A command's failure is its exit code; anything else that failed is an error part.
        Some(o) if call.failed && !(bash && call.exit_code.is_some()) => {
            (ToolStatus::Error, None, Some(o))
        }
        Some(o) => (ToolStatus::Completed, Some(o), None),
    };
    ToolPart {
        call_id: call.call_id.clone(),
        tool: call.name.clone(),
        alias,
        status,
        input,
        output,
        error,
        title: None,
        metadata: ToolMetadata {
            exit: call.exit_code.filter(|_| bash),
            session_id,
            structured_output: false,
        },
        time_start: Some(start),
        time_end: end.map(|e| e.max(start)),
        time_compacted: None,
    }
}

/// The thread a `spawn_agent` output names (`{"agent_id": …}`).
fn spawned_thread(output: &str) -> Option<String> {
    let v: Value = serde_json::from_str(output.trim()).ok()?;
    ["agent_id", "thread_id", "id"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

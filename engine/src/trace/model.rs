//! The neutral trace model: one recorded session, its messages and parts in time order, and the
//! requests (model calls) derived from them. Every loader (database, JSON storage, export) produces
//! this model; everything downstream (episodes, replay, TUI) reads only this.

use serde::Serialize;
use serde_json::Value;

use super::diagnostics::Diagnostics;

/// Session metadata. Every field but `id` is optional in the sources, so defaults are empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub title: String,
    pub slug: Option<String>,
    pub directory: String,
    pub project_id: Option<String>,
    pub parent_id: Option<String>,
    /// The agent's version that created the session (it picks the agent's rules).
    pub version: Option<String>,
    pub agent: Option<String>,
    pub model: Option<ModelRef>,
    pub time_created: i64,
    pub time_updated: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct ModelRef {
    pub provider_id: String,
    pub model_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// What a user message is, for segmentation (MODEL §1 "human turn").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UserKind {
    /// Typed by a person.
    Human,
    /// The agent's request for a compaction (OpenCode stores it as a message of its own, sent as
    /// "What did we do so far?").
    Compaction,
    /// The agent's own "continue" after it compacted (OpenCode's "Continue if you have next
    /// steps…").
    #[serde(rename = "synthetic_continue")]
    ContinueAfterCompaction,
    /// The last human prompt, sent again by the agent after a compaction it made because the
    /// request overflowed (OpenCode's overflow compaction).
    #[serde(rename = "overflow_replay")]
    PromptReplayed,
    /// Text the agent added on its own and sent as a user message (a reminder, a command's
    /// output, an interrupt notice): part of the turn it falls in, never a turn of its own.
    Injected,
}

/// Usage as recorded for one request. Zero where the recording has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Usage {
    /// Sums saturate: a damaged count must not wrap a session's total.
    pub fn add(&mut self, o: &Usage) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.reasoning = self.reasoning.saturating_add(o.reasoning);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
    }
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// An error recorded on an assistant message (`{name, data: {message, …}}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageError {
    pub name: String,
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub id: String,
    pub session_id: String,
    pub role: Role,
    pub time_created: i64,
    pub time_completed: Option<i64>,
    /// `agent`, else the deprecated `mode`.
    pub agent: Option<String>,
    pub model: Option<ModelRef>,
    /// Assistant: the user message it answers.
    pub parent_id: Option<String>,
    pub finish: Option<String>,
    pub error: Option<MessageError>,
    /// Assistant with `summary: true`: a compaction summary.
    pub summary: bool,
    /// Recorded usage of the message (`message.tokens`; the last step's usage).
    pub tokens: Option<Usage>,
    pub cost: f64,
    pub parts: Vec<Part>,
    /// Set by the adapter for user messages.
    pub user_kind: Option<UserKind>,
    /// Written by a loop of the agent's own whose requests have their own system prompt and
    /// tools and see only that loop's messages (OpenCode's experimental v2 loop, its
    /// `session_message` rows).
    #[serde(rename = "v2", skip_serializing_if = "std::ops::Not::not")]
    pub own_history: bool,
    /// The working directory the agent ran in (assistant messages; OpenCode's `path.cwd`). The message's
    /// other fields that this model does not name are not kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Requests after its own no longer sent it: an assistant message that ended in an error the
    /// agent's release drops from the history (set by the adapter).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dropped_after_own_requests: bool,
    /// The system prompt the agent stored with the message, where it stores one (OpenCode
    /// 0.1.x: `metadata.assistant.system`, built anew for every user turn; the project tree and
    /// the instruction files in it change as the session changes the project).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<StoredSystem>,
}

/// A system prompt stored with a message: its texts (one system message each) and their token
/// count once the load counted them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredSystem {
    #[serde(skip)]
    pub texts: Vec<String>,
    pub tokens: Option<u64>,
    /// Where the texts differ from those of the previous assistant message of the same agent and
    /// model: the tokens they share from their start (the texts before the first that differs
    /// and that text's common beginning). `None` where they are the same, or nothing came before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_with_previous: Option<u64>,
}

impl Message {
    pub fn is_user(&self) -> bool {
        self.role == Role::User
    }
    pub fn is_assistant(&self) -> bool {
        self.role == Role::Assistant
    }
    /// Concatenated text of the message's text parts (ignored ones left out).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if let PartKind::Text { text, ignored, .. } = &p.kind {
                if *ignored {
                    continue;
                }
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
    pub fn tool_parts(&self) -> impl Iterator<Item = (&Part, &ToolPart)> {
        self.parts.iter().filter_map(|p| match &p.kind {
            PartKind::Tool(t) => Some((p, &**t)),
            _ => None,
        })
    }
    pub fn compaction_part(&self) -> Option<&CompactionPart> {
        self.parts.iter().find_map(|p| match &p.kind {
            PartKind::Compaction(c) => Some(c),
            _ => None,
        })
    }
    /// Number of `step-start` parts (model calls an assistant message records; 0.x messages
    /// hold several, later ones one).
    pub fn step_count(&self) -> usize {
        self.parts
            .iter()
            .filter(|p| matches!(p.kind, PartKind::StepStart { .. }))
            .count()
    }
    /// The step (0-based) each part belongs to: a `step-start` opens the next one; parts before
    /// the first `step-start` belong to step 0.
    pub fn part_steps(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.parts.len());
        let mut step: Option<u32> = None;
        for p in &self.parts {
            if matches!(p.kind, PartKind::StepStart { .. }) {
                step = Some(step.map_or(0, |s| s + 1));
            }
            out.push(step.unwrap_or(0));
        }
        out
    }
    /// Holds something besides step bookkeeping and reasoning (what OpenCode ≥0.10 asks of an
    /// aborted message before it sends it again).
    pub fn has_content(&self) -> bool {
        self.parts.iter().any(|p| {
            !matches!(
                p.kind,
                PartKind::StepStart { .. }
                    | PartKind::StepFinish { .. }
                    | PartKind::Reasoning { .. }
            )
        })
    }
    /// The working directory the agent ran in for an assistant message.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Part {
    pub id: String,
    pub kind: PartKind,
}

impl Part {
    /// The part type's name (`text`, `tool`, `step-start`, …; the raw name for unknown types).
    pub fn type_name(&self) -> &str {
        self.kind.type_name()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionPart {
    pub auto: bool,
    pub overflow: bool,
    pub tail_start_id: Option<String>,
}

/// The parts of a message, and `Unknown`, which keeps the raw JSON of a type no reader knows.
/// Text, reasoning and tool calls are every agent's; the others are kinds one agent records
/// (OpenCode writes all twelve: step marks of a multi-request message, workspace snapshots and
/// the files a step changed, an agent mention, a sub-task, an API retry, a compaction marker).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum PartKind {
    Text {
        text: String,
        synthetic: bool,
        ignored: bool,
        /// `metadata.compaction_continue` (OpenCode ≥1.4.7 marks its auto-continue prompt).
        compaction_continue: bool,
    },
    Reasoning {
        text: String,
    },
    File {
        mime: String,
        filename: Option<String>,
        url: String,
        /// Inlined text of the source, if any.
        source_text: Option<String>,
    },
    /// A user's choice of the agent to answer (OpenCode's `@agent` mention).
    #[serde(rename = "agent")]
    AgentMention {
        name: String,
    },
    /// A compaction marker on the message that asked for one.
    Compaction(CompactionPart),
    /// A task handed to a sub-agent by the user.
    Subtask {
        prompt: String,
        description: String,
        agent: String,
    },
    /// An API call retried after an error.
    Retry {
        attempt: u64,
        error: Option<String>,
    },
    /// A message holding several model calls: where the next one starts (with the workspace
    /// snapshot taken then) and ends (with its usage).
    StepStart {
        snapshot: Option<String>,
    },
    StepFinish {
        reason: Option<String>,
        cost: f64,
        tokens: Option<Usage>,
    },
    /// A workspace snapshot the agent took.
    #[serde(rename = "snapshot")]
    WorkspaceSnapshot {
        snapshot: String,
    },
    /// The files a step changed (against a workspace snapshot).
    #[serde(rename = "patch")]
    FilesChanged {
        hash: String,
        files: Vec<String>,
    },
    /// Boxed: a tool part is several times larger than the others and most parts (step marks,
    /// text) are small; inline, every part would pay for the largest.
    Tool(Box<ToolPart>),
    Unknown {
        type_name: String,
        raw: Value,
    },
}

impl PartKind {
    pub fn type_name(&self) -> &str {
        match self {
            PartKind::Text { .. } => "text",
            PartKind::Reasoning { .. } => "reasoning",
            PartKind::File { .. } => "file",
            PartKind::AgentMention { .. } => "agent",
            PartKind::Compaction(_) => "compaction",
            PartKind::Subtask { .. } => "subtask",
            PartKind::Retry { .. } => "retry",
            PartKind::StepStart { .. } => "step-start",
            PartKind::StepFinish { .. } => "step-finish",
            PartKind::WorkspaceSnapshot { .. } => "snapshot",
            PartKind::FilesChanged { .. } => "patch",
            PartKind::Tool(_) => "tool",
            PartKind::Unknown { type_name, .. } => type_name,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Pending,
    Running,
    Completed,
    Error,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolPart {
    pub call_id: String,
    /// The tool's name as the agent called it.
    pub tool: String,
    /// The core tool this one behaves as (`bash`, `read`, `edit`, `write`, `grep`, `glob`,
    /// `task`, `todowrite`, …: the vocabulary of the classification rules), set by the adapter
    /// where the agent's own name differs; `None`: the name is already the core's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<&'static str>,
    pub status: ToolStatus,
    pub input: Value,
    pub output: Option<String>,
    pub error: Option<String>,
    pub title: Option<String>,
    pub metadata: ToolMetadata,
    pub time_start: Option<i64>,
    pub time_end: Option<i64>,
    /// Set when the agent pruned the output (OpenCode's `state.time.compacted`): the model was then sent
    /// "[Old tool result content cleared]" instead of the output.
    pub time_compacted: Option<i64>,
}

impl ToolPart {
    /// The core tool name it behaves as ([`ToolPart::alias`], else its own name): what the
    /// classification rules and the episode logic match.
    pub fn behaves_as(&self) -> &str {
        self.alias.unwrap_or(&self.tool)
    }
    /// `metadata.exit` of a bash call, if recorded.
    pub fn exit_code(&self) -> Option<i64> {
        self.metadata.exit
    }
    /// The line of the call in every serialization of a request (the tiers' full text, a
    /// compaction call's history): `[tool NAME] INPUT`, `input` as that serialization writes it.
    pub fn call_line(&self, input: &str) -> String {
        format!("[tool {}] {input}", self.tool)
    }
    /// The line that heads its result in every serialization of a request (the tiers' full
    /// text, a compaction call's history): `[result NAME STATUS[, exit N]]`. One header, so a
    /// call costs the same wherever the model was sent it.
    pub fn result_header(&self) -> String {
        let status = match self.status {
            ToolStatus::Pending => "pending",
            ToolStatus::Running => "running",
            ToolStatus::Completed => "completed",
            ToolStatus::Error => "error",
            ToolStatus::Unknown => "unknown",
        };
        match self.exit_code() {
            Some(c) => format!("[result {} {status}, exit {c}]", self.tool),
            None => format!("[result {} {status}]", self.tool),
        }
    }
    /// A failure: status error, or a non-zero exit code.
    pub fn failed(&self) -> bool {
        self.status == ToolStatus::Error || self.exit_code().is_some_and(|c| c != 0)
    }
    /// The child session a `task` call spawned (`state.metadata.sessionId`).
    pub fn child_session_id(&self) -> Option<&str> {
        if self.behaves_as() != "task" {
            return None;
        }
        self.metadata.session_id.as_deref()
    }
}

/// What is read of a tool call's `metadata`. The rest (a read's preview, an edit's diff, a copy of
/// a bash call's output) is often as large as the output itself and nothing uses it, so it is
/// checked as JSON but not kept, so a session's memory does not grow with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolMetadata {
    /// A shell call's exit code.
    pub exit: Option<i64>,
    /// The child session a sub-agent call spawned.
    pub session_id: Option<String>,
    /// The call answered with the agent's structured output (OpenCode's v2 loop).
    pub structured_output: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestStatus {
    Ok,
    Error,
    Aborted,
    Empty,
    Cut,
}

impl RequestStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            RequestStatus::Ok => "ok",
            RequestStatus::Error => "error",
            RequestStatus::Aborted => "aborted",
            RequestStatus::Empty => "empty",
            RequestStatus::Cut => "cut",
        }
    }
}

/// One model call: every assistant message, numbered from 0 in time order (MODEL §1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub index: usize,
    pub message_id: String,
    /// Index of the assistant message in `Trace::messages`.
    pub message_index: usize,
    pub status: RequestStatus,
    pub time_created: i64,
    pub time_completed: Option<i64>,
    pub agent: Option<String>,
    pub model: Option<ModelRef>,
    pub usage: Usage,
    pub cost: f64,
    pub finish: Option<String>,
    /// The user message this request answers (`parentID`, else the last user message before it).
    pub user_message_id: Option<String>,
    /// A compaction summary call (not a step of the conversation).
    pub synthetic_call: bool,
    /// Which step of a multi-step assistant message (OpenCode ≤0.7) this request is; `None` when
    /// the message is one request.
    pub step: Option<u32>,
    /// The prompt the model received by the recorded usage, read by the release's token
    /// semantics (see [`Request::recorded_prompt`]); 0 where the recording has no usage.
    pub prompt: u64,
    /// The lifetime (seconds) of the cache entries the request wrote, where the recording says
    /// (Anthropic's are 5 minutes or 1 hour); `None`: the replay's `ttl_s`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_ttl_s: Option<u64>,
}

impl Request {
    /// Recorded prompt size (MODEL §3.5): input + cache read + cache write, or input alone where
    /// the release stored input with the cache inside (OpenCode < 1.0.62 on OpenAI-style
    /// providers).
    pub fn recorded_prompt(&self) -> u64 {
        self.prompt
    }
    /// Position of the request in the conversation: its message and step. Everything before this
    /// position was the request's context.
    pub fn position(&self) -> (usize, u32) {
        (self.message_index, self.step.unwrap_or(0))
    }
}

/// What a recorded compaction's summary replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStyle {
    /// The summary (and the request message that asked for it, where the agent stores one)
    /// replaces the history before a kept tail (`tail_start_id`; none: everything before it).
    /// OpenCode ≥1.0.69, Claude Code (the records it kept verbatim), Codex (no tail).
    #[serde(rename = "compaction_message")]
    BeforeTail,
    /// The history is sent from the summary on, the summary first, the conversation
    /// continuing after it. OpenCode ≤1.0.68 (a `summary: true` assistant message).
    #[serde(rename = "summary_message")]
    FromSummary,
}

/// One recorded compaction: the compaction user message, the summary call, and what followed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionEvent {
    /// The compaction user message (none for [`CompactionStyle::FromSummary`]).
    pub user_message_id: Option<String>,
    pub style: CompactionStyle,
    pub summary_message_id: Option<String>,
    /// Request index of the summary call.
    pub summary_request: Option<usize>,
    pub auto: bool,
    pub overflow: bool,
    pub tail_start_id: Option<String>,
    /// The synthetic continue message, or the replayed user message after an overflow.
    pub continuation_message_id: Option<String>,
    /// The summary text as recorded.
    pub summary_text: String,
}

/// A sub-agent session spawned by a `task` call of this trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildLink {
    pub session_id: String,
    pub message_id: String,
    pub part_id: String,
    pub call_id: String,
    pub description: Option<String>,
}

/// A tool output the agent pruned (OpenCode's `state.time.compacted`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrunedOutput {
    pub message_id: String,
    pub part_id: String,
    pub time_compacted: i64,
}

/// How an agent built the request of its summary (compaction) call. The variants are the shapes
/// OpenCode's releases used; an agent whose call has one of these shapes says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionShape {
    /// The summarize prompt as system, every message since the previous summary (that summary
    /// first, errored messages included), then a "summarize" user message. No tools. (OpenCode
    /// ≤1.0.68.)
    Messages,
    /// The history as messages ending with a compaction message ("What did we do so far?"), then
    /// the instruction. No tools. (OpenCode 1.0.69–1.14.18.)
    MessagesWithCompaction,
    /// The head before the kept tail as messages, earlier compactions removed (the last summary
    /// quoted), tool outputs clipped. (OpenCode 1.14.19–1.18.24.)
    HeadClipped,
    /// One user message holding the conversation so far as text, tool results clipped, the
    /// earlier summary quoted. (OpenCode 1.18.25+.)
    HeadAsText,
}

/// What the neutral core needs to know of how the agent's release turned the session into
/// requests (set by the adapter from the agent's own rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WireRules {
    /// Tool results were sent as JSON-encoded strings (quotes and escapes included).
    pub tool_results_as_json: bool,
    /// How a summary (compaction) call was built.
    pub compaction_shape: CompactionShape,
    /// A [`CompactionShape::HeadClipped`] call quoted the last summary rather than sending the
    /// earlier compactions inside the head.
    pub quotes_previous_summary: bool,
    /// A summary call clipped each tool output to this many characters (UTF-16 code units).
    pub summary_clips_tool_outputs_at: Option<usize>,
    /// A summary call carried a system prompt of its own (and no tools); false: it carried the
    /// agent's own system prompt and tools, as the agent's other requests did.
    pub summary_call_own_system: bool,
    /// How an answer of several model requests (steps) reached the model once complete, where
    /// not as its own later steps had been sent it.
    pub completed_answer: CompletedAnswer,
}

/// How the requests after an answer of several steps received the answer's earlier steps. The
/// agent's own later steps were sent them as the model made them (in flight); once the answer is
/// stored, later requests rebuild it from storage, and some releases rebuild it differently:
/// there the cached prefix breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CompletedAnswer {
    /// As the steps sent it (and every release whose requests are one per stored message).
    AsSent,
    /// Rebuilt in blocks by the AI SDK v4 (OpenCode 0.1.x, whose tool calls carry no step): a
    /// text after a call closes a block, and so does every call after the first block, so the
    /// first block gathers every call before any text (all of an answer's calls when its steps
    /// have no text) and later steps split into their text, then their calls
    /// ([`CompletedAnswer::rebuilt_blocks`]).
    ToolCallsMerged,
    /// An errored tool's result as stored, `Error: ` before the message its steps were sent
    /// (OpenCode 0.2–0.7): from the first step with an errored tool, where a later step followed.
    ErrorsPrefixed,
}

impl CompletedAnswer {
    /// The first step of `m` that later requests received otherwise than its own later steps
    /// did, if any.
    pub fn resent_from(self, m: &Message) -> Option<u32> {
        if self == CompletedAnswer::AsSent || !m.is_assistant() || m.step_count() < 2 {
            return None;
        }
        let steps = m.part_steps();
        let last = steps.last().copied().unwrap_or(0);
        let step_of = |want: &dyn Fn(&ToolPart) -> bool| -> Vec<u32> {
            m.parts
                .iter()
                .zip(&steps)
                .filter_map(|(p, &s)| match &p.kind {
                    PartKind::Tool(t) if want(t) => Some(s),
                    _ => None,
                })
                .collect()
        };
        match self {
            CompletedAnswer::AsSent => None,
            CompletedAnswer::ToolCallsMerged => {
                // In flight, each step was one block: its texts, then its calls.
                let mut in_flight: Vec<(u32, Vec<usize>)> = Vec::new();
                for (i, (p, &s)) in m.parts.iter().zip(&steps).enumerate() {
                    if !is_block_part(&p.kind) {
                        continue;
                    }
                    match in_flight.last_mut() {
                        Some((k, b)) if *k == s => b.push(i),
                        _ => in_flight.push((s, vec![i])),
                    }
                }
                let rebuilt = Self::rebuilt_blocks(m);
                in_flight
                    .iter()
                    .zip(rebuilt.iter().map(Some).chain(std::iter::repeat(None)))
                    .find(|((_, sent), again)| *again != Some(sent))
                    .map(|((k, _), _)| *k)
                    .filter(|&k| k < last)
            }
            CompletedAnswer::ErrorsPrefixed => step_of(&|t| t.status == ToolStatus::Error)
                .into_iter()
                .find(|&s| s < last),
        }
    }
}

impl CompletedAnswer {
    /// The assistant messages (as lists of part indices: texts, then calls) a completed answer
    /// is rebuilt into by the AI SDK v4's `convertToCoreMessages` when its tool invocations carry
    /// no step, as OpenCode 0.1.x stores them: a text after a call closes the block, and a call
    /// closes it whenever a block was closed before (its step, 0, is not the SDK's block count).
    /// Each block is one assistant message, followed by the results of its calls.
    pub fn rebuilt_blocks(m: &Message) -> Vec<Vec<usize>> {
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        let mut block: Vec<usize> = Vec::new();
        let mut has_call = false;
        for (i, p) in m.parts.iter().enumerate() {
            match &p.kind {
                PartKind::Tool(_) => {
                    // The SDK's block count is past the call's step (0) once a block closed.
                    if !blocks.is_empty() {
                        blocks.push(std::mem::take(&mut block));
                    }
                    block.push(i);
                    has_call = true;
                }
                k if is_block_part(k) => {
                    if has_call {
                        blocks.push(std::mem::take(&mut block));
                        has_call = false;
                    }
                    block.push(i);
                }
                _ => {}
            }
        }
        if !block.is_empty() {
            blocks.push(block);
        }
        blocks
    }
}

/// A part the SDK puts in an assistant message's blocks (texts, calls).
fn is_block_part(k: &PartKind) -> bool {
    matches!(k, PartKind::Text { ignored: false, .. } | PartKind::Tool(_))
}

/// Which agent recorded a trace, which release of it, and in which of its formats: what an
/// adapter says about a trace it loaded, and the key to that agent's rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The adapter's id (`"opencode"`).
    pub agent: &'static str,
    /// The agent's version that wrote the session, when recorded.
    pub version: Option<String>,
    /// The adapter's word for the format ("database", "export", …).
    pub format: &'static str,
    /// The agent's name for the set of rules the session was read with (OpenCode: its release
    /// family, e.g. `1.18.25+`).
    pub rules: &'static str,
    /// The release those rules were picked by; `None` when the version was missing or unreadable
    /// and the rules were inferred from the data.
    pub rules_version: Option<(u64, u64, u64)>,
}

impl Origin {
    /// Human-readable: "0.5.29 (0.2-0.7)" or "inferred 0.2-0.7".
    pub fn describe_rules(&self) -> String {
        match self.rules_version {
            Some((a, b, c)) => format!("{a}.{b}.{c} ({})", self.rules),
            None => format!("inferred {}", self.rules),
        }
    }
}

/// Where a trace was loaded from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum SourceKind {
    /// A database file (OpenCode's `opencode.db`).
    Database(String),
    /// A tree of JSON files, one per record (OpenCode's storage dir).
    #[serde(rename = "storage")]
    FileTree(String),
    /// One file exported whole (`opencode export`).
    Export(String),
    /// A database and a tree of JSON files merged by id (a migration in between).
    #[serde(rename = "merged")]
    DatabaseAndFileTree(String),
    /// One file an agent appends a session to (a transcript, a rollout).
    SessionFile(String),
}

/// One recorded session, ready for segmentation and replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    pub session: SessionInfo,
    /// Messages ordered by `(time_created, id)`; parts by id.
    pub messages: Vec<Message>,
    pub requests: Vec<Request>,
    pub compactions: Vec<CompactionEvent>,
    pub children: Vec<ChildLink>,
    pub pruned: Vec<PrunedOutput>,
    /// The agent, release and format the trace came from.
    pub origin: Origin,
    /// How the agent's release sent the session.
    pub wire: WireRules,
    pub source: SourceKind,
    pub diagnostics: Diagnostics,
    /// Message id → index, built on first lookup (traces reach 100k+ messages).
    #[serde(skip)]
    pub id_index: MessageIdIndex,
}

/// A lazily built id → index map for [`Trace::messages`], keyed by the id's hash (a copy of
/// every id was 14 MB at 100k messages). An entry is checked against the message it names, so
/// a stale one (messages changed after the map was built) or two ids with one hash are
/// answered by a scan: lookups stay correct.
#[derive(Debug, Clone, Default)]
pub struct MessageIdIndex(std::sync::OnceLock<rustc_hash::FxHashMap<u64, u32>>);

impl MessageIdIndex {
    fn key(id: &str) -> u64 {
        xxhash_rust::xxh3::xxh3_64(id.as_bytes())
    }
}

impl PartialEq for MessageIdIndex {
    /// A cache, not data: two traces never differ by it.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl SourceKind {
    /// The format's name, as [`Origin::format`] gives it.
    pub fn format(&self) -> &'static str {
        match self {
            SourceKind::Database(_) => "database",
            SourceKind::FileTree(_) => "JSON storage",
            SourceKind::Export(_) => "export",
            SourceKind::DatabaseAndFileTree(_) => "database + JSON storage",
            SourceKind::SessionFile(_) => "session file",
        }
    }
}

impl Trace {
    pub fn message(&self, id: &str) -> Option<&Message> {
        self.message_index(id).map(|i| &self.messages[i])
    }
    pub fn message_index(&self, id: &str) -> Option<usize> {
        let map = self.id_index.0.get_or_init(|| {
            self.messages
                .iter()
                .enumerate()
                .filter_map(|(i, m)| Some((MessageIdIndex::key(&m.id), u32::try_from(i).ok()?)))
                .collect()
        });
        match map.get(&MessageIdIndex::key(id)).map(|&i| i as usize) {
            Some(i) if self.messages.get(i).is_some_and(|m| m.id == id) => Some(i),
            _ => self.messages.iter().position(|m| m.id == id),
        }
    }
    /// Message indices of a compaction's own messages: the compaction user message and, once it
    /// exists, the summary.
    pub fn compaction_message_indices(&self, c: &CompactionEvent) -> Vec<usize> {
        let mut ms: Vec<usize> = c
            .user_message_id
            .as_deref()
            .and_then(|id| self.message_index(id))
            .into_iter()
            .collect();
        ms.extend(
            c.summary_message_id
                .as_deref()
                .and_then(|id| self.message_index(id)),
        );
        ms
    }
    /// Whether the model saw a compaction's kept tail as the messages themselves rather than
    /// inside the summary (a loop with its own history, OpenCode's v2, serializes it into its
    /// checkpoint message).
    pub fn tail_as_messages(&self, c: &CompactionEvent) -> bool {
        !c.user_message_id
            .as_deref()
            .and_then(|id| self.message(id))
            .is_some_and(|m| m.own_history)
    }
    /// Where the model's view of the conversation can start for a request at message `mi`: a
    /// request of a loop with its own history sees only that loop's messages (OpenCode's v2
    /// prompt on a v1 session starts from an empty history), so its view starts at the loop's
    /// first message.
    pub fn context_start(&self, mi: usize) -> usize {
        if !self.messages.get(mi).is_some_and(|m| m.own_history) {
            return 0;
        }
        self.messages
            .iter()
            .position(|m| m.own_history)
            .unwrap_or(0)
    }
    /// Messages that are human turns (MODEL §1).
    pub fn human_turns(&self) -> impl Iterator<Item = &Message> {
        self.messages
            .iter()
            .filter(|m| m.user_kind == Some(UserKind::Human))
    }
    /// Recorded usage summed over requests.
    pub fn total_usage(&self) -> Usage {
        let mut u = Usage::default();
        for r in &self.requests {
            u.add(&r.usage);
        }
        u
    }
    pub fn total_cost(&self) -> f64 {
        // A fold from +0.0: `sum()` of no floats is -0.0, which prints as "-0".
        self.requests.iter().fold(0.0, |acc, r| acc + r.cost)
    }
}

#[cfg(test)]
mod tests {
    use crate::replay::synth::{generate, SynthSpec};

    /// Every id is found where it is; after the messages change under a built index (reversed)
    /// each is still found where it now is, and an unknown id is not found.
    #[test]
    fn message_index_answers_by_the_messages_even_when_stale() {
        let mut trace = generate(&SynthSpec {
            requests: 40,
            episodes: 5,
            ..Default::default()
        })
        .trace;
        assert!(trace.messages.len() > 40);
        for (i, m) in trace.messages.iter().enumerate() {
            assert_eq!(trace.message_index(&m.id), Some(i), "{}", m.id);
        }
        trace.messages.reverse();
        for (i, m) in trace.messages.iter().enumerate() {
            assert_eq!(
                trace.message_index(&m.id),
                Some(i),
                "{} after the change",
                m.id
            );
        }
        assert_eq!(trace.message_index("msg_not_there"), None);
    }
}

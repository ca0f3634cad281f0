//! A Claude Code transcript as the neutral [`Trace`].
//!
//! What the model was sent is rebuilt from the records in file order:
//! - a prompt the user typed is a human user message; text the CLI sent as a user message on
//!   its own (`isMeta` records, interrupt notices, local command output, and the attachments it
//!   turns into `<system-reminder>` blocks: agent and skill listings, files, reminders) is an
//!   injected user message, which stays in the turn it falls in;
//! - one API response (its records share `message.id`) is one assistant message and one request:
//!   its thinking, text and tool calls, each call paired with the `tool_result` of the user record
//!   that answered it; the response's usage taken once, normalized (disjoint, as Claude records
//!   it: `input` excludes cache read and cache write);
//! - an API error the CLI turned into a synthetic message is a failed request with no usage;
//! - a compaction (`compact_boundary`, then the `isCompactSummary` user record) is the summary
//!   call, which the transcript does not record, as a request with no recorded usage, and its
//!   summary as that call's answer; the next requests see the summary, then the records the CLI
//!   kept verbatim (`preservedSegment`), then what followed;
//! - responses on a dead branch of a rewind were sent and billed: they stay, marked as no longer
//!   sent after their own request.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::compaction::{Compaction, Trigger};
use super::listing::unix_ms;
use super::record::{Block, KnownBlock, Record, SYNTHETIC_MODEL};
use super::requests::{result_text, ToolCall};
use super::session::Thread;
use super::usage::ClaudeUsage;
use crate::replay::cache_cost::{Price, PricingTable};
use crate::trace::diagnostics::Diagnostics;
use crate::trace::flat_rules::{FlatRules, KeptTail, TriggerCount, TriggerRule};
use crate::trace::model::{
    CompactionEvent, CompactionShape, CompactionStyle, CompletedAnswer, Message, MessageError,
    ModelRef, Origin, Part, PartKind, Request, RequestStatus, Role, SessionInfo, SourceKind,
    ToolMetadata, ToolPart, ToolStatus, Trace, UserKind, WireRules,
};

/// The provider every Claude Code request went to (as a model's `provider_id`).
pub const PROVIDER: &str = "anthropic";

/// The name of the rules this reader applies (the transcript format of Claude Code 2.x).
pub const RULES: &str = "transcript 2.x";

/// What Claude Code sent that the core needs to know.
pub const WIRE: WireRules = WireRules {
    // Tool results go back as the tool's text, not as JSON strings.
    tool_results_as_json: false,
    // The compaction call sends the history as messages and appends its instruction.
    compaction_shape: CompactionShape::MessagesWithCompaction,
    quotes_previous_summary: false,
    summary_clips_tool_outputs_at: None,
    // The summary call is the conversation's own request (same system prompt and tools) with
    // the summary instruction appended.
    summary_call_own_system: false,
    // Each request is the transcript's messages as stored.
    completed_answer: CompletedAnswer::AsSent,
};

/// Tokens (o200k) of the instruction Claude Code appends to the history for its summary call
/// ("Respond with TEXT ONLY…" and the summary's outline). Measured, not shipped as text (it is
/// Anthropic's prompt): on the 2.1.197 recordings each of the three summary calls the model
/// received was the request before it plus 1,205, 1,219 and 1,205 tokens, the difference being
/// this one text block (1,219: the history had grown by the previous response).
pub const SUMMARY_INSTRUCTION_TOKENS: u64 = 1_205;

/// Claude Code's auto-compact: before a request is sent, when its estimate of the context (the
/// last response's usage, prompt and output, plus the new messages at 4 bytes a token) reaches
/// the threshold (the model's window less an output reserve of at most 20,000 and a 13,000
/// token buffer), the history is summarised by a call of its own; the last step (the response
/// and its tool results not yet sent) is kept verbatim after the summary (`preservedSegment`).
pub fn flat_rules() -> FlatRules {
    FlatRules {
        agent: "Claude Code",
        rules: RULES.to_owned(),
        count: TriggerCount::PreviousTotalPlusEstimate { bytes_per_token: 4 },
        trigger: TriggerRule::AtLeast,
        tail: KeptTail::LastStep,
        context_share: 1.0,
        output_reserve_cap: 20_000,
        buffer: 13_000,
    }
}

/// The core tool a Claude Code tool behaves as, where the names differ.
pub fn tool_alias(name: &str) -> Option<&'static str> {
    Some(match name {
        "Bash" | "BashOutput" => "bash",
        "Read" | "NotebookRead" => "read",
        "Edit" | "NotebookEdit" => "edit",
        "MultiEdit" => "multiedit",
        "Write" => "write",
        "Grep" => "grep",
        "Glob" | "LS" => "glob",
        "Agent" | "Task" => "task",
        "TodoWrite" | "TaskCreate" | "TaskUpdate" => "todowrite",
        "WebFetch" => "webfetch",
        "WebSearch" => "websearch",
        _ => return None,
    })
}

/// Who a thread is: the session itself or one of its sub-agents.
pub struct ThreadInfo<'a> {
    pub id: String,
    pub title: String,
    pub parent_id: Option<String>,
    /// The agent name its requests carry (`None`: the main agent).
    pub agent: Option<String>,
    pub path: &'a Path,
    /// Other sessions whose records a resumed file may copy (their responses counted there).
    pub resumed: super::resume::Origins,
}

/// Build the trace of one thread, moving its tool results' contents into the trace (the
/// thread keeps `null`s: a session's outputs are held once). `children` are the sub-agents it
/// spawned: (the index of the
/// spawning call in its tool calls, the child's session id, a description).
pub fn thread_trace(
    thread: &mut Thread,
    who: ThreadInfo<'_>,
    children: &[(usize, String, Option<String>)],
) -> Trace {
    let mut contents: Vec<Value> = thread
        .requests
        .tool_calls
        .iter_mut()
        .map(|c| {
            c.result
                .as_mut()
                .map_or(Value::Null, |r| std::mem::take(&mut r.content))
        })
        .collect();
    let thread = &*thread;
    let t = &thread.transcript;
    let rq = &thread.requests;
    let prices = PricingTable::bundled();
    let mut b = Builder::default();

    let resp_of_entry: HashMap<usize, usize> = rq
        .responses
        .iter()
        .enumerate()
        .flat_map(|(r, resp)| resp.entries.iter().map(move |&e| (e, r)))
        .collect();
    let api_error_of_entry: HashMap<usize, usize> = rq
        .api_errors
        .iter()
        .enumerate()
        .map(|(k, e)| (e.entry, k))
        .collect();
    let call_of_id: HashMap<&str, usize> = rq
        .tool_calls
        .iter()
        .enumerate()
        .map(|(k, c)| (c.id.as_str(), k))
        .collect();
    let compaction_at: HashMap<usize, &Compaction> =
        thread.compactions.iter().map(|c| (c.entry, c)).collect();
    let summary_entries: Vec<usize> = thread
        .compactions
        .iter()
        .filter_map(|c| c.summary)
        .collect();
    let child_of_call: HashMap<usize, &(usize, String, Option<String>)> =
        children.iter().map(|c| (c.0, c)).collect();
    // Message index of each response.
    let mut message_of_resp: HashMap<usize, usize> = HashMap::new();
    let mut copies = 0usize;

    for (i, e) in t.entries.iter().enumerate() {
        let on_branch = t.on_branch.get(i).copied().unwrap_or(true);
        let time = e
            .record
            .common()
            .and_then(|c| c.timestamp.as_deref())
            .and_then(unix_ms)
            .unwrap_or(b.last_time);
        b.last_time = b.last_time.max(time);
        let uuid = e.record.uuid().map(str::to_owned);
        match &e.record {
            Record::Assistant(a) => {
                if let Some(&k) = api_error_of_entry.get(&i) {
                    let err = &rq.api_errors[k];
                    let mi = b.push(Message {
                        error: Some(MessageError {
                            name: err.error.clone().unwrap_or_else(|| "api_error".to_owned()),
                            message: Some(err.text.clone()),
                        }),
                        finish: Some("error".to_owned()),
                        ..b.message(format!("api-error-{i}"), Role::Assistant, time, &who)
                    });
                    b.meta[mi].status = RequestStatus::Error;
                    b.uuid(uuid, mi);
                    continue;
                }
                if a.message.model.as_deref() == Some(SYNTHETIC_MODEL) {
                    continue;
                }
                let Some(&r) = resp_of_entry.get(&i) else {
                    continue;
                };
                let resp = &rq.responses[r];
                // A response copied from the session this file resumed was billed there.
                let copied = who.resumed.copied(
                    resp.entries
                        .first()
                        .and_then(|&e| t.entries[e].record.common())
                        .and_then(|c| c.session_id.as_deref()),
                );
                let mi = *message_of_resp.entry(r).or_insert_with(|| {
                    copies += usize::from(copied);
                    let model = resp.model.clone().map(|m| ModelRef {
                        provider_id: PROVIDER.to_owned(),
                        model_id: m,
                    });
                    let usage = if copied {
                        ClaudeUsage::default()
                    } else {
                        resp.usage
                    };
                    let mi = b.push(Message {
                        model,
                        tokens: Some(usage.to_usage()),
                        finish: resp.stop_reason.clone(),
                        dropped_after_own_requests: !resp.on_branch,
                        system: None,
                        ..b.message(resp.message_id.clone(), Role::Assistant, time, &who)
                    });
                    b.meta[mi].usage = usage;
                    mi
                });
                b.uuid(uuid, mi);
                for (k, block) in a.message.content.blocks().iter().enumerate() {
                    let part_id = format!("{}-{k}", b.messages[mi].parts.len());
                    let kind = match block {
                        Block::Known(KnownBlock::Text { text }) => text_part(text, false),
                        Block::Known(KnownBlock::Thinking { thinking }) => PartKind::Reasoning {
                            text: thinking.clone(),
                        },
                        Block::Known(KnownBlock::ToolUse { id, .. }) => {
                            let Some(&c) = call_of_id.get(id.as_str()) else {
                                continue;
                            };
                            let child = child_of_call.get(&c).map(|x| x.1.clone());
                            let content = std::mem::take(&mut contents[c]);
                            PartKind::Tool(Box::new(tool_part(
                                &rq.tool_calls[c],
                                content,
                                child,
                                time,
                            )))
                        }
                        Block::Known(KnownBlock::RedactedThinking {}) => PartKind::Reasoning {
                            text: String::new(),
                        },
                        Block::Known(KnownBlock::ToolResult { .. }) => continue,
                        Block::Other(v) => PartKind::Unknown {
                            type_name: v
                                .get("type")
                                .and_then(Value::as_str)
                                .unwrap_or("unknown")
                                .to_owned(),
                            raw: v.clone(),
                        },
                    };
                    b.messages[mi].parts.push(Part { id: part_id, kind });
                }
                if let Some(m) = b.messages.get_mut(mi) {
                    m.time_completed = Some(time);
                }
            }
            Record::User(u) => {
                if summary_entries.contains(&i) {
                    continue;
                }
                let blocks = u.message.content.blocks();
                let mut answered = None;
                for blk in blocks {
                    if let Block::Known(KnownBlock::ToolResult { tool_use_id, .. }) = blk {
                        answered = call_of_id
                            .get(tool_use_id.as_str())
                            .and_then(|&c| resp_of_entry.get(&rq.tool_calls[c].entry))
                            .and_then(|r| message_of_resp.get(r))
                            .copied()
                            .or(answered);
                    }
                }
                if let Some(mi) = answered {
                    b.uuid(uuid.clone(), mi);
                }
                let text = match &u.message.content {
                    super::record::Content::Text(s) => s.clone(),
                    c => c.text(),
                };
                if text.is_empty() || !on_branch {
                    continue;
                }
                let injected = u.common.is_meta
                    || answered.is_some()
                    || u.is_visible_in_transcript_only
                    || is_cli_text(&text);
                let kind = if injected {
                    UserKind::Injected
                } else {
                    UserKind::Human
                };
                let id = uuid.clone().unwrap_or_else(|| format!("user-{i}"));
                let mi = b.push(Message {
                    user_kind: Some(kind),
                    parts: vec![Part {
                        id: "0".to_owned(),
                        kind: text_part(&text, injected),
                    }],
                    ..b.message(id, Role::User, time, &who)
                });
                b.uuid(uuid, mi);
            }
            Record::Attachment(a) if on_branch => {
                let text = a
                    .attachment
                    .as_ref()
                    .map(attachment_text)
                    .unwrap_or_default();
                if text.is_empty() {
                    continue;
                }
                let id = uuid.clone().unwrap_or_else(|| format!("attachment-{i}"));
                let mi = b.push(Message {
                    user_kind: Some(UserKind::Injected),
                    parts: vec![Part {
                        id: "0".to_owned(),
                        kind: text_part(&text, true),
                    }],
                    ..b.message(id, Role::User, time, &who)
                });
                b.uuid(uuid, mi);
            }
            Record::System(_) => {
                let Some(c) = compaction_at.get(&i) else {
                    continue;
                };
                let summary = c.summary_text(t).unwrap_or_default();
                let id = uuid.clone().unwrap_or_else(|| format!("compaction-{i}"));
                // The records kept verbatim were not summarised: the summary call saw the
                // history before them (the replay sizes it so), and the requests after it see
                // the summary, then them.
                let head = c
                    .preserved_uuids
                    .first()
                    .or(c.preserved.as_ref().and_then(|p| p.head_uuid.as_ref()))
                    .and_then(|u| b.by_uuid.get(u))
                    .copied();
                let tail_start = head.map(|mi| b.messages[mi].id.clone());
                let mi = b.push(Message {
                    summary: true,
                    finish: Some("end_turn".to_owned()),
                    parts: vec![Part {
                        id: "0".to_owned(),
                        kind: text_part(&summary, false),
                    }],
                    ..b.message(id.clone(), Role::Assistant, time, &who)
                });
                b.meta[mi].synthetic = true;
                b.meta[mi].compaction = Some(b.compactions.len());
                b.uuid(uuid, mi);
                b.compactions.push(CompactionEvent {
                    user_message_id: None,
                    style: CompactionStyle::BeforeTail,
                    summary_message_id: Some(id),
                    summary_request: None,
                    auto: c.trigger == Trigger::Auto,
                    overflow: false,
                    tail_start_id: tail_start,
                    continuation_message_id: None,
                    summary_text: summary,
                });
            }
            _ => {}
        }
    }

    let model_default = b
        .messages
        .iter()
        .find_map(|m| m.model.clone())
        .unwrap_or_default();
    // The model of a request without one (an API error, a compaction) is the session's.
    for m in &mut b.messages {
        if m.is_assistant() && m.model.is_none() {
            m.model = Some(model_default.clone());
        }
    }
    let mut requests = Vec::new();
    let mut last_user: Option<String> = None;
    for (mi, m) in b.messages.iter().enumerate() {
        if m.user_kind == Some(UserKind::Human) {
            last_user = Some(m.id.clone());
        }
        if !m.is_assistant() {
            continue;
        }
        let meta = &b.meta[mi];
        let cu = meta.usage;
        let price = prices.lookup(m.model.as_ref()).price;
        let synthetic_call = meta.synthetic;
        if let Some(c) = meta.compaction.and_then(|c| b.compactions.get_mut(c)) {
            c.summary_request = Some(requests.len());
        }
        requests.push(Request {
            index: requests.len(),
            message_id: m.id.clone(),
            message_index: mi,
            status: meta.status,
            time_created: m.time_created,
            time_completed: m.time_completed,
            agent: m.agent.clone(),
            model: m.model.clone(),
            usage: cu.to_usage(),
            cost: cost(&cu, &price),
            finish: m.finish.clone(),
            user_message_id: last_user.clone(),
            synthetic_call,
            step: None,
            prompt: cu.prompt(),
            // Entries written for an hour outlive the default 5 minutes.
            cache_ttl_s: (cu.cache_write_1h > 0).then_some(3_600),
        });
    }
    let mut messages = b.messages;
    for r in &requests {
        if let Some(m) = messages.get_mut(r.message_index) {
            m.cost = r.cost;
        }
    }
    let child_links = children
        .iter()
        .filter_map(|(c, id, description)| {
            let call = rq.tool_calls.get(*c)?;
            let (m, part) = messages.iter().find_map(|m| {
                m.parts
                    .iter()
                    .find(|p| matches!(&p.kind, PartKind::Tool(tp) if tp.call_id == call.id))
                    .map(|p| (m, p))
            })?;
            Some(crate::trace::model::ChildLink {
                session_id: id.clone(),
                message_id: m.id.clone(),
                part_id: part.id.clone(),
                call_id: call.id.clone(),
                description: description.clone(),
            })
        })
        .collect();
    let times: Vec<i64> = messages.iter().map(|m| m.time_created).collect();
    let version = t.version().map(str::to_owned);
    let rules_version = version.as_deref().and_then(parse_version);
    let mut diagnostics = Diagnostics::new();
    diagnostics.extend(&thread.diagnostics());
    if copies > 0 {
        diagnostics.push_n(
            crate::trace::diagnostics::DiagnosticKind::RuleResumedCopy,
            copies,
            "responses copied from the session this file resumed: history here, counted there",
        );
    }
    Trace {
        session: SessionInfo {
            id: who.id.clone(),
            title: who.title.clone(),
            slug: None,
            directory: t.cwd().unwrap_or_default().to_owned(),
            project_id: None,
            parent_id: who.parent_id.clone(),
            version: version.clone(),
            agent: who.agent.clone(),
            model: messages.iter().find_map(|m| m.model.clone()),
            time_created: times.iter().copied().min().unwrap_or(0),
            time_updated: times.iter().copied().max().unwrap_or(0),
        },
        messages,
        requests,
        compactions: b.compactions,
        children: child_links,
        pruned: Vec::new(),
        origin: Origin {
            agent: "claude-code",
            version,
            format: "transcript",
            rules: RULES,
            rules_version,
        },
        wire: WIRE,
        source: SourceKind::SessionFile(who.path.display().to_string()),
        diagnostics,
        id_index: Default::default(),
    }
}

#[derive(Default)]
struct Builder {
    messages: Vec<Message>,
    /// Per message, what its request needs.
    meta: Vec<Meta>,
    by_uuid: HashMap<String, usize>,
    compactions: Vec<CompactionEvent>,
    last_time: i64,
}

/// What the request of a message needs beyond the message.
struct Meta {
    usage: ClaudeUsage,
    status: RequestStatus,
    /// A summary call.
    synthetic: bool,
    /// The compaction whose summary it is.
    compaction: Option<usize>,
}

impl Builder {
    fn message(&self, id: String, role: Role, time: i64, who: &ThreadInfo<'_>) -> Message {
        Message {
            id,
            session_id: who.id.clone(),
            role,
            time_created: time,
            time_completed: None,
            agent: who.agent.clone(),
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
            cwd: None,
            dropped_after_own_requests: false,
            system: None,
        }
    }
    fn push(&mut self, m: Message) -> usize {
        let i = self.messages.len();
        self.messages.push(m);
        self.meta.push(Meta {
            usage: ClaudeUsage::default(),
            status: RequestStatus::Ok,
            synthetic: false,
            compaction: None,
        });
        i
    }
    fn uuid(&mut self, uuid: Option<String>, mi: usize) {
        if let Some(u) = uuid {
            self.by_uuid.insert(u, mi);
        }
    }
}

fn text_part(text: &str, synthetic: bool) -> PartKind {
    PartKind::Text {
        text: text.to_owned(),
        synthetic,
        ignored: false,
        compaction_continue: false,
    }
}

/// Text the CLI writes as a user message itself: interrupt notices and local commands.
fn is_cli_text(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("[Request interrupted by user")
        || t.starts_with("<command-name>")
        || t.starts_with("<local-command-")
        || t.starts_with("<command-message>")
}

/// A tool call with its result (`content`: the result's, taken from the call), as the neutral
/// tool part.
fn tool_part(c: &ToolCall, content: Value, child: Option<String>, time: i64) -> ToolPart {
    let (status, output, error) = match &c.result {
        None => (ToolStatus::Running, None, None),
        Some(r) => {
            let text = match content {
                Value::String(s) => s,
                other => result_text(&other),
            };
            if r.is_error {
                (ToolStatus::Error, None, Some(text))
            } else {
                (ToolStatus::Completed, Some(text), None)
            }
        }
    };
    let exit = match (tool_alias(&c.name), &error) {
        // Bash reports a failing command as an error whose text starts "Exit code N".
        (Some("bash"), Some(e)) => e
            .strip_prefix("Exit code ")
            .and_then(|s| s.split(|ch: char| !ch.is_ascii_digit()).next())
            .and_then(|n| n.parse::<i64>().ok()),
        (Some("bash"), None) if status == ToolStatus::Completed => Some(0),
        _ => None,
    };
    ToolPart {
        call_id: c.id.clone(),
        tool: c.name.clone(),
        alias: tool_alias(&c.name),
        status,
        input: c.input.clone(),
        output,
        error,
        title: c
            .input
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        metadata: ToolMetadata {
            exit,
            session_id: child,
            structured_output: false,
        },
        time_start: Some(time),
        time_end: None,
        time_compacted: None,
    }
}

/// The text an attachment adds to the context: every string it holds but its `type`.
fn attachment_text(v: &Value) -> String {
    fn walk(v: &Value, key: Option<&str>, out: &mut Vec<String>) {
        match v {
            Value::String(s) if key != Some("type") && !s.is_empty() => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, None, out)),
            Value::Object(o) => o.iter().for_each(|(k, x)| walk(x, Some(k), out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, None, &mut out);
    out.join("\n")
}

/// Dollars of one response: uncached input, cache reads and cache writes (5-minute writes at
/// the table's write multiplier, 1-hour writes at twice the input price, Anthropic's rate),
/// output.
pub fn cost(u: &ClaudeUsage, p: &Price) -> f64 {
    let per = |n: u64, rate: f64| n as f64 * rate / 1_000_000.0;
    per(u.input, p.input)
        + per(u.cache_read, p.input * p.read_multiplier)
        + per(u.cache_write_5m, p.input * p.write_multiplier)
        + per(u.cache_write_1h, p.input * 2.0)
        + per(u.output, p.output)
}

fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v.trim().split('.').map(|x| x.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

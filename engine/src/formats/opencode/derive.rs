//! From parsed session + messages to a [`Trace`]: ordering, user-message kinds, requests,
//! compaction events, sub-agent links, pruned outputs. Shared by every loader so that the same
//! session loads to the same trace from any format.

use super::dialect::{Dialect, Era, InputSemantics, Markers};
use super::steps::{recorded_prompt, requests_of, semantics_for};
use crate::trace::adapter::Adapter;
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::model::*;

/// OpenCode's auto-continue prompt (before 1.4.7 it carried no metadata marker).
pub const CONTINUE_PREFIX: &str = "Continue if you have next steps";
/// The synthetic user message OpenCode 0.10–1.0.68 wrote after a summary.
pub const RESUME_PREFIX: &str = "Use the above summary generated from your last session";

/// Build a trace. `messages` may come in any order and carry their parts in any order.
pub fn build_trace(
    mut session: SessionInfo,
    mut messages: Vec<Message>,
    source: SourceKind,
    mut diagnostics: Diagnostics,
) -> Trace {
    {
        use rayon::prelude::*;
        messages
            .par_iter_mut()
            .for_each(|m| m.parts.sort_by(|a, b| a.id.cmp(&b.id)));
    }
    let dialect = Dialect::detect_with(session.version.as_deref(), || markers(&messages));
    if dialect.inferred {
        diagnostics.push(
            DiagnosticKind::RuleVersion,
            format!(
                "session {}: no OpenCode version recorded ({:?}); read with the rules of {}",
                session.id,
                session.version.as_deref().unwrap_or(""),
                dialect.describe()
            ),
        );
    }
    order_messages(&mut messages, &dialect, &source, &mut diagnostics);
    if session.directory.is_empty() {
        if let Some(cwd) = messages.iter().find_map(Message::cwd) {
            diagnostics.push(
                DiagnosticKind::RuleDirectory,
                format!(
                    "session {}: no directory stored (OpenCode {}); taken from the assistant's \
                     path.cwd {cwd}",
                    session.id,
                    dialect.describe()
                ),
            );
            session.directory = cwd.to_owned();
        }
    }
    classify_user_messages(&mut messages);

    let ids: std::collections::HashSet<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    let mut requests = Vec::new();
    let mut last_user: Option<String> = None;
    let mut rules = RuleCounts::default();
    for (mi, m) in messages.iter().enumerate() {
        match m.role {
            Role::User => last_user = Some(m.id.clone()),
            Role::Assistant => {
                let user = m
                    .parent_id
                    .clone()
                    .filter(|p| ids.contains(p.as_str()))
                    .or_else(|| last_user.clone());
                if dialect.era == Era::V01 && m.system.is_none() {
                    rules.without_system += 1;
                }
                let steps = requests_of(m, request_status(m));
                if steps.len() > 1 {
                    rules.split += 1;
                    rules.extra += steps.len() - 1;
                }
                let semantics = semantics_for(&dialect, m);
                for st in steps {
                    rules.failed_before += usize::from(st.failed_before_step);
                    if st.step.is_some() && !st.has_usage && !st.failed_before_step {
                        rules.without_usage += 1;
                    }
                    let (prompt, consistent) = recorded_prompt(&st.usage, semantics);
                    if semantics == InputSemantics::IncludesCache && st.usage.cache_read > 0 {
                        rules.inclusive += 1;
                    }
                    rules.contradicted += usize::from(!consistent);
                    requests.push(Request {
                        index: requests.len(),
                        message_id: m.id.clone(),
                        message_index: mi,
                        status: st.status,
                        time_created: st.time,
                        time_completed: m.time_completed,
                        agent: m.agent.clone(),
                        model: m.model.clone(),
                        usage: st.usage,
                        cost: st.cost,
                        finish: m.finish.clone(),
                        user_message_id: user.clone(),
                        synthetic_call: m.summary || m.agent.as_deref() == Some("compaction"),
                        step: st.step,
                        prompt,
                        cache_ttl_s: None,
                    });
                }
            }
        }
        for (p, t) in m.tool_parts() {
            if matches!(t.status, ToolStatus::Pending | ToolStatus::Running) {
                diagnostics.push(
                    DiagnosticKind::DanglingTool,
                    format!(
                        "tool part {} ({}) left {:?} in message {}",
                        p.id, t.tool, t.status, m.id
                    ),
                );
            }
        }
    }
    rules.report(&mut diagnostics, &dialect);

    if requests.is_empty() {
        diagnostics.push(
            DiagnosticKind::NoRequests,
            format!(
                "session {}: no assistant message, so no model requests to replay",
                session.id
            ),
        );
    }
    let compactions = compaction_events(&messages, &requests);
    if dialect.compaction_shape_uncertain() && !compactions.is_empty() {
        diagnostics.push_n(
            DiagnosticKind::RuleCompaction,
            compactions.len(),
            format!(
                "OpenCode {}: which compaction request form this release sent is not known (the \
                 history as one text arrived between 1.18.4 and 1.18.33); its {} compaction \
                 call(s) are sized as 1.18.3 sent them (the head as messages, tool outputs clipped)",
                dialect.describe(),
                compactions.len()
            ),
        );
    }
    let mut children: Vec<ChildLink> = Vec::new();
    let mut pruned = Vec::new();
    for m in &messages {
        for (p, t) in m.tool_parts() {
            if let Some(child) = t.child_session_id() {
                children.push(ChildLink {
                    session_id: child.to_owned(),
                    message_id: m.id.clone(),
                    part_id: p.id.clone(),
                    call_id: t.call_id.clone(),
                    description: t
                        .input
                        .get("description")
                        .and_then(|d| d.as_str())
                        .map(str::to_owned),
                });
            }
            if let (ToolStatus::Completed, Some(tc)) = (t.status, t.time_compacted) {
                pruned.push(PrunedOutput {
                    message_id: m.id.clone(),
                    part_id: p.id.clone(),
                    time_compacted: tc,
                });
            }
        }
    }
    for m in messages.iter_mut().filter(|m| m.error.is_some()) {
        m.dropped_after_own_requests = !dialect.resends(m);
    }
    // Grown by doubling and kept for the session's life.
    requests.shrink_to_fit();
    let session_version = session.version.clone();
    Trace {
        session,
        messages,
        requests,
        compactions,
        children,
        pruned,
        origin: Origin {
            agent: super::OpenCode.id(),
            version: session_version,
            format: source.format(),
            rules: dialect.era.as_str(),
            rules_version: dialect.version,
        },
        wire: dialect.wire(),
        source,
        diagnostics,
        id_index: Default::default(),
    }
}

/// How often each request rule applied, reported once per session.
#[derive(Default)]
struct RuleCounts {
    /// Assistant messages split into several requests, and the requests that adds.
    split: usize,
    extra: usize,
    /// 0.2–0.7 failed requests that wrote no step-start.
    failed_before: usize,
    /// Step requests without recorded usage (0.1.x).
    without_usage: usize,
    /// 0.1.x assistant messages without the system prompt that release stored with each turn
    /// (some later releases' migration of the storage dropped it).
    without_system: usize,
    /// Requests with a cache hit read with input-includes-cache semantics.
    inclusive: usize,
    /// Requests whose numbers contradict those semantics.
    contradicted: usize,
}

impl RuleCounts {
    fn report(&self, diags: &mut Diagnostics, dialect: &Dialect) {
        let v = dialect.describe();
        let (split, extra) = (self.split, self.extra);
        diags.push_n(
            DiagnosticKind::RuleStepRequests,
            split,
            format!(
                "OpenCode {v}: {split} assistant message(s) hold several model requests (one per \
                 step-start); counted as {extra} more request(s), each with its own step's usage"
            ),
        );
        let n = self.failed_before;
        diags.push_n(
            DiagnosticKind::RuleStepRequests,
            n,
            format!(
                "{n} assistant message(s) end in an error after a complete step: one more request \
                 that failed before it wrote a step-start (no usage)"
            ),
        );
        let n = self.without_usage;
        diags.push_n(
            DiagnosticKind::RuleStepUsage,
            n,
            format!(
                "OpenCode {v} stored no usage for {n} step request(s) (only each message's last \
                 step); the replay sizes them without a recorded prompt"
            ),
        );
        let n = self.without_system;
        diags.push_n(
            DiagnosticKind::RuleSystemPrompt,
            n,
            format!(
                "OpenCode {v} stored each turn's system prompt with its answer, but {n} assistant \
                 message(s) have none (a later release's migration of the storage dropped it): \
                 their requests are sized with the system prompt of the request it was estimated \
                 from, so a project tree or instruction file that changed since is not followed"
            ),
        );
        let n = self.inclusive;
        diags.push_n(
            DiagnosticKind::RuleTokenSemantics,
            n,
            format!(
                "OpenCode {v} stored tokens.input with the cached part inside: the recorded prompt \
                 of {n} request(s) with a cache hit is input alone (not input + cache read)"
            ),
        );
        let n = self.contradicted;
        diags.push_n(
            DiagnosticKind::RuleTokenSemantics,
            n,
            format!(
                "{n} request(s) have tokens.input below the cache read although OpenCode {v} \
                 counted the cache inside input; their prompt is input + cache read + cache write"
            ),
        );
    }
}

/// Shapes only some releases write, for a session without a version.
fn markers(messages: &[Message]) -> Markers {
    let mut mk = Markers::default();
    let by_id: std::collections::HashMap<&str, &Message> =
        messages.iter().map(|m| (m.id.as_str(), m)).collect();
    for m in messages {
        let prefix = format!("{}-p", m.id);
        mk.v1_messages |= m.parts.iter().any(|p| p.id.starts_with(&prefix));
        mk.multi_step |= m.is_assistant() && m.step_count() > 1;
        if let Some(c) = m.compaction_part() {
            mk.compaction_part = true;
            mk.tail_start |= c.tail_start_id.is_some();
        }
        if m.is_assistant() && m.summary {
            let parent_compaction = m
                .parent_id
                .as_deref()
                .and_then(|p| by_id.get(p))
                .is_some_and(|p| p.compaction_part().is_some());
            mk.summary_message |= !parent_compaction;
        }
    }
    mk
}

/// JSON releases (< 1.2) listed messages by file name, that is by id; the database orders by
/// `(time.created, id)`. A session read from a database was last read by a release ≥ 1.2.
fn order_messages(
    messages: &mut [Message],
    dialect: &Dialect,
    source: &SourceKind,
    diags: &mut Diagnostics,
) {
    messages.sort_by(|a, b| (a.time_created, &a.id).cmp(&(b.time_created, &b.id)));
    if !dialect.orders_by_id() || matches!(source, SourceKind::Database(_)) {
        return;
    }
    let by_time: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
    messages.sort_by(|a, b| a.id.cmp(&b.id));
    let moved = messages
        .iter()
        .zip(&by_time)
        .filter(|(m, id)| m.id != **id)
        .count();
    diags.push_n(
        DiagnosticKind::RuleMessageOrder,
        moved,
        format!(
            "OpenCode {} read its JSON storage in id order: {moved} message(s) sit elsewhere than \
             their time.created would put them (the order OpenCode sent them in is kept)",
            dialect.describe()
        ),
    );
}

fn request_status(m: &Message) -> RequestStatus {
    if let Some(e) = &m.error {
        return if e.name == "MessageAbortedError" {
            RequestStatus::Aborted
        } else {
            RequestStatus::Error
        };
    }
    if m.finish.as_deref() == Some("unknown") {
        return RequestStatus::Cut;
    }
    if m.parts.is_empty() {
        return RequestStatus::Empty;
    }
    RequestStatus::Ok
}

fn is_continue_message(m: &Message) -> bool {
    let texts: Vec<_> = m
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text {
                text,
                synthetic,
                compaction_continue,
                ..
            } => Some((text, *synthetic, *compaction_continue)),
            _ => None,
        })
        .collect();
    !texts.is_empty()
        && texts.iter().all(|(_, synthetic, _)| *synthetic)
        && texts
            .iter()
            .any(|(t, _, cc)| *cc || t.contains(CONTINUE_PREFIX) || t.contains(RESUME_PREFIX))
}

/// Mark each user message Human / Compaction / ContinueAfterCompaction / PromptReplayed (docs/opencode-eras.md, "Human turns").
fn classify_user_messages(messages: &mut [Message]) {
    let mut last_human_text: Option<String> = None;
    // Set after an overflow compaction's summary: the next user message is a replay.
    let mut expect_replay = false;
    let mut pending_overflow = false;
    for m in messages.iter_mut() {
        if m.role == Role::Assistant {
            if m.summary && pending_overflow {
                expect_replay = true;
                pending_overflow = false;
            }
            continue;
        }
        let kind = if let Some(c) = m.compaction_part() {
            pending_overflow = c.overflow;
            UserKind::Compaction
        } else if is_continue_message(m) {
            expect_replay = false;
            UserKind::ContinueAfterCompaction
        } else if expect_replay {
            expect_replay = false;
            let text = m.text();
            let dup = last_human_text
                .as_deref()
                .is_some_and(|h| h.trim() == text.trim() || text.contains(h.trim()));
            if dup {
                UserKind::PromptReplayed
            } else {
                UserKind::Human
            }
        } else {
            UserKind::Human
        };
        if kind == UserKind::Human {
            last_human_text = Some(m.text());
        }
        m.user_kind = Some(kind);
    }
}

fn compaction_events(messages: &[Message], requests: &[Request]) -> Vec<CompactionEvent> {
    let req_of = |id: &str| {
        requests
            .iter()
            .find(|r| r.message_id == id)
            .map(|r| r.index)
    };
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let compaction = m.compaction_part();
        let is_old_style_summary = m.role == Role::Assistant && m.summary && {
            // Summary without a compaction user message before it (< v1.0.69).
            let parent = m
                .parent_id
                .as_deref()
                .and_then(|p| messages.iter().find(|x| x.id == p));
            parent.is_none_or(|p| p.compaction_part().is_none())
        };
        if compaction.is_none() && !is_old_style_summary {
            continue;
        }
        // An old-style summary has no compaction message: its parent is the human turn.
        let (summary_idx, user_id) = if is_old_style_summary {
            (Some(i), None)
        } else {
            let idx = messages[i + 1..]
                .iter()
                .position(|a| {
                    a.role == Role::Assistant
                        && (a.parent_id.as_deref() == Some(m.id.as_str()) || a.summary)
                })
                .map(|p| p + i + 1);
            (idx, Some(m.id.clone()))
        };
        let summary = summary_idx.map(|s| &messages[s]);
        let continuation = summary_idx.and_then(|s| {
            messages[s + 1..]
                .iter()
                .find(|x| x.role == Role::User)
                .filter(|x| {
                    matches!(
                        x.user_kind,
                        Some(UserKind::ContinueAfterCompaction) | Some(UserKind::PromptReplayed)
                    )
                })
                .map(|x| x.id.clone())
        });
        out.push(CompactionEvent {
            user_message_id: user_id,
            style: if is_old_style_summary {
                CompactionStyle::FromSummary
            } else {
                CompactionStyle::BeforeTail
            },
            summary_message_id: summary.map(|s| s.id.clone()),
            summary_request: summary.and_then(|s| req_of(&s.id)),
            auto: compaction.is_some_and(|c| c.auto),
            overflow: compaction.is_some_and(|c| c.overflow),
            tail_start_id: compaction.and_then(|c| c.tail_start_id.clone()),
            continuation_message_id: continuation,
            summary_text: summary.map(Message::text).unwrap_or_default(),
        });
    }
    out
}

//! From parsed session + messages to a [`Trace`]: ordering, user-message kinds, requests,
//! compaction events, sub-agent links, pruned outputs. Shared by every loader so that the same
//! session loads to the same trace from any format.

use super::diagnostics::{DiagnosticKind, Diagnostics};
use super::model::*;

/// OpenCode's auto-continue prompt (before 1.4.7 it carried no metadata marker).
pub const CONTINUE_PREFIX: &str = "Continue if you have next steps";

/// Build a trace. `messages` may come in any order and carry their parts in any order.
pub fn build_trace(
    session: SessionInfo,
    mut messages: Vec<Message>,
    source: SourceKind,
    mut diagnostics: Diagnostics,
) -> Trace {
    // Order by (time.created, id), as OpenCode's SQL does; parts by id (step order).
    messages.sort_by(|a, b| (a.time_created, &a.id).cmp(&(b.time_created, &b.id)));
    for m in &mut messages {
        m.parts.sort_by(|a, b| a.id.cmp(&b.id));
    }
    classify_user_messages(&mut messages);

    let ids: std::collections::HashSet<&str> = messages.iter().map(|m| m.id.as_str()).collect();
    let mut requests = Vec::new();
    let mut last_user: Option<String> = None;
    for (mi, m) in messages.iter().enumerate() {
        match m.role {
            Role::User => last_user = Some(m.id.clone()),
            Role::Assistant => {
                let user = m
                    .parent_id
                    .clone()
                    .filter(|p| ids.contains(p.as_str()))
                    .or_else(|| last_user.clone());
                let (usage, cost) = request_usage(m);
                requests.push(Request {
                    index: requests.len(),
                    message_id: m.id.clone(),
                    message_index: mi,
                    status: request_status(m),
                    time_created: m.time_created,
                    time_completed: m.time_completed,
                    agent: m.agent.clone(),
                    model: m.model.clone(),
                    usage,
                    cost,
                    finish: m.finish.clone(),
                    user_message_id: user,
                    synthetic_call: m.summary || m.agent.as_deref() == Some("compaction"),
                });
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
    let mut children = Vec::new();
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
    let token_semantics = token_semantics(session.version.as_deref());
    Trace {
        session,
        messages,
        requests,
        compactions,
        children,
        pruned,
        token_semantics,
        source,
        diagnostics,
        id_index: Default::default(),
    }
}

/// Usage of one request: the sum of its step-finish parts, else `message.tokens`.
fn request_usage(m: &Message) -> (Usage, f64) {
    let mut usage = Usage::default();
    let mut cost = 0.0;
    let mut steps = 0;
    for p in &m.parts {
        if let PartKind::StepFinish {
            tokens, cost: c, ..
        } = &p.kind
        {
            steps += 1;
            cost += c;
            if let Some(t) = tokens {
                usage.add(t);
            }
        }
    }
    if steps == 0 {
        (m.tokens.unwrap_or_default(), m.cost)
    } else {
        (usage, cost)
    }
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
            .any(|(t, _, cc)| *cc || t.contains(CONTINUE_PREFIX))
}

/// Mark each user message Human / Compaction / SyntheticContinue / OverflowReplay (reference §8.9).
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
            UserKind::SyntheticContinue
        } else if expect_replay {
            expect_replay = false;
            let text = m.text();
            let dup = last_human_text
                .as_deref()
                .is_some_and(|h| h.trim() == text.trim() || text.contains(h.trim()));
            if dup {
                UserKind::OverflowReplay
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
        let (summary_idx, user_id) = if is_old_style_summary {
            (Some(i), m.parent_id.clone().unwrap_or_default())
        } else {
            let idx = messages[i + 1..]
                .iter()
                .position(|a| {
                    a.role == Role::Assistant
                        && (a.parent_id.as_deref() == Some(m.id.as_str()) || a.summary)
                })
                .map(|p| p + i + 1);
            (idx, m.id.clone())
        };
        let summary = summary_idx.map(|s| &messages[s]);
        let continuation = summary_idx.and_then(|s| {
            messages[s + 1..]
                .iter()
                .find(|x| x.role == Role::User)
                .filter(|x| {
                    matches!(
                        x.user_kind,
                        Some(UserKind::SyntheticContinue) | Some(UserKind::OverflowReplay)
                    )
                })
                .map(|x| x.id.clone())
        });
        out.push(CompactionEvent {
            user_message_id: user_id,
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

/// Parse "1.18.33" style versions; unknown versions get today's semantics.
pub fn token_semantics(version: Option<&str>) -> TokenSemantics {
    let v = version.and_then(parse_version);
    TokenSemantics {
        input_may_include_cache: v.is_some_and(|v| v < (1, 3, 6)),
        output_includes_reasoning: v.is_some_and(|v| v < (1, 3, 16)),
    }
}

fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().ok());
    Some((
        it.next()??,
        it.next().flatten().unwrap_or(0),
        it.next().flatten().unwrap_or(0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pick_token_semantics() {
        assert!(token_semantics(Some("1.3.5")).input_may_include_cache);
        assert!(!token_semantics(Some("1.3.6")).input_may_include_cache);
        assert!(token_semantics(Some("1.3.15")).output_includes_reasoning);
        assert!(!token_semantics(Some("1.18.33")).output_includes_reasoning);
        assert!(!token_semantics(None).input_may_include_cache);
    }
}

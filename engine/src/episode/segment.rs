//! Segmentation: split a trace's messages into episodes (contiguous, non-overlapping, covering
//! every message, in time order). Every strategy computes the set of message indices that start
//! an episode; the episodes are the runs between consecutive starts.
//!
//! - `user-turn` (default): each user message starts an episode (a human turn, a compaction
//!   request, or the synthetic continue / replayed prompt after a compaction). A long turn is also
//!   split after an assistant message whose `todowrite` changes a todo's status (a milestone), and
//!   after every `max_requests` requests.
//! - `request`: each request (assistant message) is its own episode, with the user message(s) right
//!   before it.
//! - `annotations`: the starts listed in the annotations sidecar (plus the first message).
//! - `magic-context`: the compartments' ranges; messages after the last compartment are segmented
//!   by `user-turn`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::trace::{Message, Trace, UserKind};

/// How episodes are bounded (`--episodes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Segmentation {
    #[default]
    UserTurn,
    Request,
    Annotations,
    MagicContext,
}

impl Segmentation {
    pub fn as_str(&self) -> &'static str {
        match self {
            Segmentation::UserTurn => "user-turn",
            Segmentation::Request => "request",
            Segmentation::Annotations => "annotations",
            Segmentation::MagicContext => "magic-context",
        }
    }
}

impl std::str::FromStr for Segmentation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "user-turn" | "turn" => Ok(Segmentation::UserTurn),
            "request" => Ok(Segmentation::Request),
            "annotations" => Ok(Segmentation::Annotations),
            "magic-context" => Ok(Segmentation::MagicContext),
            other => Err(format!(
                "unknown segmentation {other:?} (expected user-turn, request, annotations or magic-context)"
            )),
        }
    }
}

/// One episode's message range before classification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Inclusive range of message indices.
    pub first_message: usize,
    pub last_message: usize,
    /// Why it starts where it does (e.g. "human turn", "milestone: todo … → completed").
    pub start_reason: String,
}

/// A todo status change found in one assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TodoChange {
    pub message_index: usize,
    /// The step of the message whose `todowrite` made the change (0.x messages hold several).
    pub step: u32,
    pub content: String,
    pub from: String,
    pub to: String,
}

/// Every todo status change of the trace, in order. A todo seen for the first time is not a
/// change; a later `todowrite` that gives it another status is.
pub fn todo_changes(trace: &Trace) -> Vec<TodoChange> {
    let mut known: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (mi, m) in trace.messages.iter().enumerate() {
        let steps = m.part_steps();
        for (p, step) in m.parts.iter().zip(steps) {
            let crate::trace::PartKind::Tool(t) = &p.kind else {
                continue;
            };
            if t.behaves_as() != "todowrite" {
                continue;
            }
            // Codex's `update_plan`: `plan: [{step, status}]`.
            let Some(todos) = t
                .input
                .get("todos")
                .or_else(|| t.input.get("plan"))
                .and_then(Value::as_array)
            else {
                continue;
            };
            for todo in todos {
                let content = todo
                    .get("content")
                    .or_else(|| todo.get("step"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let status = todo.get("status").and_then(Value::as_str).unwrap_or("");
                if content.is_empty() {
                    continue;
                }
                if let Some(prev) = known.insert(content.to_owned(), status.to_owned()) {
                    if prev != status {
                        out.push(TodoChange {
                            message_index: mi,
                            step,
                            content: content.to_owned(),
                            from: prev,
                            to: status.to_owned(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Episode starts by strategy. `explicit` holds the message indices that start an episode for
/// `annotations` / `magic-context` (ignored by the others); `covered_until` is the last message
/// index those explicit ranges cover (after it, `user-turn` applies).
pub fn segment(
    trace: &Trace,
    strategy: Segmentation,
    max_requests: Option<usize>,
    explicit: &BTreeSet<usize>,
    covered_until: Option<usize>,
) -> Vec<Segment> {
    let n = trace.messages.len();
    if n == 0 {
        return Vec::new();
    }
    let mut starts: BTreeMap<usize, String> = BTreeMap::new();
    match strategy {
        Segmentation::UserTurn => user_turn_starts(trace, 0, max_requests, &mut starts),
        Segmentation::Request => {
            for (i, m) in trace.messages.iter().enumerate() {
                let prev_assistant = i > 0 && trace.messages[i - 1].is_assistant();
                if m.user_kind == Some(UserKind::Injected) {
                    continue;
                }
                if m.is_user() && !prev_assistant_is_user(trace, i) {
                    starts.insert(i, user_reason(m).to_owned());
                } else if m.is_assistant() && prev_assistant {
                    starts.insert(i, "request".to_owned());
                }
            }
        }
        Segmentation::Annotations | Segmentation::MagicContext => {
            let label = if strategy == Segmentation::Annotations {
                "annotation"
            } else {
                "compartment"
            };
            for &i in explicit.iter().filter(|&&i| i < n) {
                starts.insert(i, label.to_owned());
            }
            if let Some(end) = covered_until.filter(|&e| e + 1 < n) {
                let mut tail = BTreeMap::new();
                user_turn_starts(trace, end + 1, max_requests, &mut tail);
                tail.entry(end + 1)
                    .or_insert_with(|| "after the last compartment".to_owned());
                starts.extend(tail);
            }
        }
    }
    // Text the agent injected before the first prompt (instructions, environment) belongs to
    // the first turn.
    if let Some((&first, _)) = starts.iter().find(|(&i, _)| i > 0) {
        if !starts.contains_key(&0)
            && trace.messages[..first]
                .iter()
                .all(|m| m.user_kind == Some(UserKind::Injected))
        {
            if let Some(reason) = starts.remove(&first) {
                starts.insert(0, reason);
            }
        }
    }
    starts
        .entry(0)
        .or_insert_with(|| "first message".to_owned());
    let list: Vec<(usize, String)> = starts.into_iter().collect();
    list.iter()
        .enumerate()
        .map(|(k, (first, reason))| Segment {
            first_message: *first,
            last_message: list.get(k + 1).map_or(n - 1, |(next, _)| next - 1),
            start_reason: reason.clone(),
        })
        .collect()
}

/// In `request` mode consecutive user messages share the episode of the request that follows.
fn prev_assistant_is_user(trace: &Trace, i: usize) -> bool {
    i > 0 && trace.messages[i - 1].is_user()
}

fn user_reason(m: &Message) -> &'static str {
    match m.user_kind {
        Some(UserKind::Compaction) => "compaction",
        Some(UserKind::ContinueAfterCompaction) => "synthetic continue after compaction",
        Some(UserKind::PromptReplayed) => "prompt replayed after overflow compaction",
        Some(UserKind::Injected) => "text the agent injected",
        Some(UserKind::Human) | None => "human turn",
    }
}

/// A turn is split only if at least this many of its requests follow the split point.
pub const MIN_REQUESTS_AFTER_SPLIT: usize = 2;

fn user_turn_starts(
    trace: &Trace,
    from: usize,
    max_requests: Option<usize>,
    starts: &mut BTreeMap<usize, String>,
) {
    let changes = todo_changes(trace);
    let mut requests_in_episode = 0usize;
    let msgs = &trace.messages;
    for i in from..msgs.len() {
        let m = &msgs[i];
        // Text the agent injected belongs to the turn it falls in.
        if m.user_kind == Some(UserKind::Injected) {
            continue;
        }
        if m.is_user() {
            starts.insert(i, user_reason(m).to_owned());
            requests_in_episode = 0;
            continue;
        }
        requests_in_episode += 1;
        // A milestone splits only where at least two more requests of the same turn follow: a
        // milestone right before the turn's closing answer keeps that answer with the work it
        // reports. `max_requests` is a hard cap.
        let rest_of_turn = msgs[i + 1..]
            .iter()
            .take_while(|m| m.is_assistant())
            .count();
        if rest_of_turn == 0 {
            continue;
        }
        // `changes` is in message order: the ones at `i` are one contiguous run.
        let lo = changes.partition_point(|c| c.message_index < i);
        let hi = changes.partition_point(|c| c.message_index <= i);
        let milestone: Vec<&TodoChange> = changes[lo..hi].iter().collect();
        if !milestone.is_empty() && rest_of_turn >= MIN_REQUESTS_AFTER_SPLIT {
            let what = milestone
                .iter()
                .map(|c| format!("\"{}\" {} → {}", c.content, c.from, c.to))
                .collect::<Vec<_>>()
                .join("; ");
            starts.insert(i + 1, format!("milestone: {what}"));
            requests_in_episode = 0;
        } else if max_requests.is_some_and(|k| k > 0 && requests_in_episode >= k) {
            starts.insert(i + 1, format!("max_requests ({requests_in_episode})"));
            requests_in_episode = 0;
        }
    }
}

//! Lenient JSON → model conversion shared by every OpenCode format (database `data` columns with
//! ids re-injected, JSON storage files, export files). Every field is optional except ids and
//! `type`; unknown part types keep their raw JSON; anything skipped becomes a diagnostic.

use serde_json::Value;

use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::model::*;

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}
fn i(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(|x| {
        x.as_i64()
            .or_else(|| x.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
    })
}
fn u(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(|x| {
            x.as_u64().or_else(|| {
                x.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            })
        })
        .unwrap_or(0)
}
fn f(v: &Value, key: &str) -> f64 {
    v.get(key)
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite())
        .unwrap_or(0.0)
}
fn b(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}
fn short(v: &Value) -> String {
    let t = v.to_string();
    crate::text::clip_chars(&t, 160)
}

/// The largest token count believed: no model reads a trillion tokens in one request, and
/// capping here keeps every sum over a session far from `u64` overflow.
pub const MAX_TOKEN_COUNT: u64 = 1_000_000_000_000;

/// One token count of `v[key]`. A missing key is 0 (older versions omit `reasoning`); anything
/// but a non-negative integer is read as the nearest count — a numeric string as its number,
/// a fraction rounded down, a negative number, `null` or another type as 0, a count above
/// [`MAX_TOKEN_COUNT`] as that — with a `bad_token_count` diagnostic naming `what` and the key.
fn token_count(v: &Value, key: &str, what: &str, diags: &mut Diagnostics) -> u64 {
    let Some(x) = v.get(key) else {
        return 0;
    };
    let saturated = |n: u64| n.min(MAX_TOKEN_COUNT);
    let (n, problem) = match x {
        Value::Number(num) => match (num.as_u64(), num.as_i64(), num.as_f64()) {
            (Some(n), _, _) if n <= MAX_TOKEN_COUNT => return n,
            (Some(n), _, _) => (saturated(n), "out of range"),
            (None, Some(_), _) => (0, "negative"),
            (_, _, Some(f)) if f < 0.0 => (0, "negative"),
            (_, _, Some(f)) if f > MAX_TOKEN_COUNT as f64 => (MAX_TOKEN_COUNT, "out of range"),
            (_, _, Some(f)) if f.fract() == 0.0 => return f as u64,
            (_, _, Some(f)) => (f as u64, "not a whole number"),
            _ => (0, "not a number"),
        },
        Value::String(t) => match t.trim().parse::<u64>() {
            Ok(n) => (saturated(n), "a string"),
            Err(_) => (0, "a string that is not a count"),
        },
        Value::Null => (0, "null"),
        _ => (0, "not a number"),
    };
    diags.push(
        DiagnosticKind::BadTokenCount,
        format!(
            "{what}: token count {key} = {} is {problem}; read as {n}",
            crate::text::clip_chars(&x.to_string(), 40)
        ),
    );
    n
}

/// `{input, output, reasoning, cache: {read, write}}` → [`Usage`]; `what` names the message or
/// part in diagnostics (see [`token_count`]).
pub fn parse_usage(v: &Value, what: &str, diags: &mut Diagnostics) -> Usage {
    let null = Value::Null;
    let cache = v.get("cache").unwrap_or(&null);
    let what_cache = format!("{what} (cache)");
    Usage {
        input: token_count(v, "input", what, diags),
        output: token_count(v, "output", what, diags),
        reasoning: token_count(v, "reasoning", what, diags),
        cache_read: token_count(cache, "read", &what_cache, diags),
        cache_write: token_count(cache, "write", &what_cache, diags),
    }
}

/// A message's `error` (`null`: none).
pub(crate) fn message_error(e: Option<&Value>) -> Option<MessageError> {
    e.filter(|e| !e.is_null()).map(|e| MessageError {
        name: s(e, "name").unwrap_or_else(|| "UnknownError".into()),
        message: e
            .get("data")
            .and_then(|d| s(d, "message"))
            .or_else(|| s(e, "message")),
    })
}

pub(crate) fn parse_model_ref(v: Option<&Value>) -> Option<ModelRef> {
    let v = v?;
    let provider_id = s(v, "providerID")?;
    let model_id = s(v, "modelID").or_else(|| s(v, "id"))?;
    Some(ModelRef {
        provider_id,
        model_id,
    })
}

/// Session info (`Session.Info`). `None` when there is no id.
pub fn parse_session(v: &Value) -> Option<SessionInfo> {
    let id = s(v, "id")?;
    let time = v.get("time").cloned().unwrap_or(Value::Null);
    Some(SessionInfo {
        id,
        title: s(v, "title").unwrap_or_default(),
        slug: s(v, "slug"),
        directory: s(v, "directory").unwrap_or_default(),
        project_id: s(v, "projectID"),
        parent_id: s(v, "parentID"),
        version: s(v, "version"),
        agent: s(v, "agent"),
        model: parse_model_ref(v.get("model")),
        time_created: i(&time, "created").unwrap_or(0),
        time_updated: i(&time, "updated").or(i(&time, "created")).unwrap_or(0),
    })
}

/// `path.cwd` of a message (the working directory OpenCode ran in), when a non-empty string.
pub(crate) fn path_cwd(path: Option<&Value>) -> Option<String> {
    path.and_then(|p| p.get("cwd"))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
}

/// A stored message object with the parts it carries inline: the 0.1.x "v1" format (`metadata`
/// and inline parts without ids, rewritten by [`crate::formats::opencode::message_v1`]) or a
/// MessageV2 object (whose parts live elsewhere; an inline `parts` array is read too).
pub fn parse_message_with_inline_parts(v: &Value, diags: &mut Diagnostics) -> Option<Message> {
    use crate::formats::opencode::message_v1;
    if message_v1::is_v1(v) {
        let (info, parts) = message_v1::to_v2(v);
        let mut m = parse_message(&info, diags)?;
        let made = parts
            .iter()
            .filter(|p| {
                p.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|i| i.starts_with(&format!("{}-p", m.id)))
            })
            .count();
        diags.push_n(
            DiagnosticKind::RuleInlinePartIds,
            made,
            format!(
                "message {}: OpenCode 0.1.x stored its parts inline without ids; ids made from the \
                 message id and position ({}-p0000…)",
                m.id, m.id
            ),
        );
        for p in &parts {
            if let Some(p) = parse_part(p, diags) {
                m.parts.push(p);
            }
        }
        return Some(m);
    }
    let mut m = parse_message(v, diags)?;
    for p in v
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(p) = parse_part(p, diags) {
            m.parts.push(p);
        }
    }
    Some(m)
}

/// A message without its parts. `None` (and a diagnostic) when id or role is missing.
pub fn parse_message(v: &Value, diags: &mut Diagnostics) -> Option<Message> {
    let Some(id) = s(v, "id") else {
        diags.push(
            DiagnosticKind::MissingField,
            format!("message without id: {}", short(v)),
        );
        return None;
    };
    let role = match v.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        other => {
            diags.push(
                DiagnosticKind::MissingField,
                format!("message {id}: unknown role {other:?}"),
            );
            return None;
        }
    };
    let time = v.get("time").cloned().unwrap_or(Value::Null);
    let model = parse_model_ref(v.get("model")).or_else(|| {
        Some(ModelRef {
            provider_id: s(v, "providerID")?,
            model_id: s(v, "modelID")?,
        })
    });
    let error = message_error(v.get("error"));
    // `summary` is a bool on assistants; on users it is an object of diffs (not a compaction).
    let summary = role == Role::Assistant && b(v, "summary");
    let cwd = path_cwd(v.get("path"));
    Some(Message {
        session_id: s(v, "sessionID").unwrap_or_default(),
        role,
        time_created: i(&time, "created").unwrap_or(0),
        time_completed: i(&time, "completed"),
        agent: s(v, "agent").or_else(|| s(v, "mode")),
        model,
        parent_id: s(v, "parentID"),
        finish: s(v, "finish"),
        error,
        summary,
        tokens: v
            .get("tokens")
            .filter(|t| t.is_object())
            .map(|t| parse_usage(t, &format!("message {id}"), diags)),
        cost: f(v, "cost"),
        parts: Vec::new(),
        user_kind: None,
        v2: false,
        cwd,
        id,
        dropped_after_own_requests: false,
    })
}

fn parse_tool(v: &Value, diags: &mut Diagnostics, part_id: &str) -> ToolPart {
    let null = Value::Null;
    let state = v.get("state").unwrap_or(&null);
    let time = state.get("time").unwrap_or(&null);
    let metadata = state
        .get("metadata")
        .filter(|m| !m.is_null())
        .or_else(|| v.get("metadata"))
        .map(ToolMetadata::of)
        .unwrap_or_default();
    tool_part(
        ToolFields {
            tool: s(v, "tool"),
            call_id: s(v, "callID"),
            status: state.get("status").and_then(Value::as_str),
            input: state.get("input").cloned().unwrap_or(Value::Null),
            output: s(state, "output"),
            error: s(state, "error"),
            title: s(state, "title"),
            metadata,
            time_start: i(time, "start"),
            time_end: i(time, "end"),
            time_compacted: i(time, "compacted"),
        },
        part_id,
        diags,
    )
}

/// The fields of a tool part as read from its JSON (by [`parse_part`] or the typed row reader).
pub(crate) struct ToolFields<'a> {
    pub tool: Option<String>,
    pub call_id: Option<String>,
    pub status: Option<&'a str>,
    pub input: Value,
    pub output: Option<String>,
    pub error: Option<String>,
    pub title: Option<String>,
    /// `state.metadata`, else the part's `metadata`.
    pub metadata: ToolMetadata,
    pub time_start: Option<i64>,
    pub time_end: Option<i64>,
    pub time_compacted: Option<i64>,
}

/// A tool part from its fields, with the diagnostics of an unknown status or a missing output.
pub(crate) fn tool_part(f: ToolFields<'_>, part_id: &str, diags: &mut Diagnostics) -> ToolPart {
    let status = match f.status {
        Some("pending") => ToolStatus::Pending,
        Some("running") => ToolStatus::Running,
        Some("completed") => ToolStatus::Completed,
        Some("error") => ToolStatus::Error,
        other => {
            diags.push(
                DiagnosticKind::UnknownToolStatus,
                format!("tool part {part_id}: status {other:?}"),
            );
            ToolStatus::Unknown
        }
    };
    let tool = f.tool.unwrap_or_else(|| "unknown".into());
    match (status, &f.output, &f.error) {
        (ToolStatus::Completed, None, _) => diags.push(
            DiagnosticKind::MissingField,
            format!("tool part {part_id} ({tool}): completed without output"),
        ),
        (ToolStatus::Error, _, None) => diags.push(
            DiagnosticKind::MissingField,
            format!("tool part {part_id} ({tool}): error without an error message"),
        ),
        _ => {}
    }
    ToolPart {
        call_id: f.call_id.unwrap_or_default(),
        alias: None,
        tool,
        status,
        input: f.input,
        output: f.output,
        error: f.error,
        title: f.title,
        metadata: f.metadata,
        time_start: f.time_start,
        time_end: f.time_end,
        time_compacted: f.time_compacted,
    }
}

/// A part (its message is the one it is read with).
/// `None` (and a diagnostic) when id or type is missing.
pub fn parse_part(v: &Value, diags: &mut Diagnostics) -> Option<Part> {
    let Some(id) = s(v, "id") else {
        diags.push(
            DiagnosticKind::MissingField,
            format!("part without id: {}", short(v)),
        );
        return None;
    };
    let Some(ty) = v.get("type").and_then(Value::as_str) else {
        diags.push(
            DiagnosticKind::MissingField,
            format!("part {id} without type"),
        );
        return None;
    };
    let kind = match ty {
        "text" => PartKind::Text {
            text: s(v, "text").unwrap_or_default(),
            synthetic: b(v, "synthetic"),
            ignored: b(v, "ignored"),
            compaction_continue: v
                .get("metadata")
                .map(|m| b(m, "compaction_continue"))
                .unwrap_or(false),
        },
        "reasoning" => PartKind::Reasoning {
            text: s(v, "text").unwrap_or_default(),
        },
        "file" => PartKind::File {
            mime: s(v, "mime").unwrap_or_default(),
            filename: s(v, "filename"),
            url: s(v, "url").unwrap_or_default(),
            source_text: v
                .get("source")
                .and_then(|src| src.get("text"))
                .and_then(|t| t.as_str().map(str::to_owned).or_else(|| s(t, "value"))),
        },
        "agent" => PartKind::Agent {
            name: s(v, "name").unwrap_or_default(),
        },
        "compaction" => PartKind::Compaction(CompactionPart {
            auto: b(v, "auto"),
            overflow: b(v, "overflow"),
            tail_start_id: s(v, "tail_start_id"),
        }),
        "subtask" => PartKind::Subtask {
            prompt: s(v, "prompt").unwrap_or_default(),
            description: s(v, "description").unwrap_or_default(),
            agent: s(v, "agent").unwrap_or_default(),
        },
        "retry" => PartKind::Retry {
            attempt: u(v, "attempt"),
            error: v.get("error").map(|e| {
                e.get("data")
                    .and_then(|d| s(d, "message"))
                    .unwrap_or_else(|| short(e))
            }),
        },
        "step-start" => PartKind::StepStart {
            snapshot: s(v, "snapshot"),
        },
        "step-finish" => PartKind::StepFinish {
            reason: s(v, "reason"),
            cost: f(v, "cost"),
            tokens: v
                .get("tokens")
                .filter(|t| t.is_object())
                .map(|t| parse_usage(t, &format!("part {id}"), diags)),
        },
        "snapshot" => PartKind::Snapshot {
            snapshot: s(v, "snapshot").unwrap_or_default(),
        },
        "patch" => PartKind::Patch {
            hash: s(v, "hash").unwrap_or_default(),
            files: string_array(v.get("files")),
        },
        "tool" => PartKind::Tool(Box::new(parse_tool(v, diags, &id))),
        other => {
            diags.push(
                DiagnosticKind::UnknownPartType,
                format!("part {id}: unknown type {other:?} (kept as raw JSON)"),
            );
            PartKind::Unknown {
                type_name: other.to_owned(),
                raw: v.clone(),
            }
        }
    };
    Some(Part { id, kind })
}

/// The strings of a JSON array (other elements skipped); empty when it is not an array.
pub(crate) fn string_array(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

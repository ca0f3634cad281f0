//! OpenCode 2.x `session_message` rows (reference §1.5) mapped onto the v1-shaped model: `user` and
//! `synthetic` rows become user messages, `assistant` rows assistant messages whose `content`
//! items become parts, and a `compaction` row a compaction user message plus its summary
//! assistant. Bookkeeping rows (`agent-switched`, `model-switched`, `idle`, …) carry no
//! conversation and are not messages.
//!
//! No real 2.x recording was available when this was written; the shapes follow the schema quoted
//! in the reference and every field is optional.

use serde_json::{json, Map, Value};

use crate::trace::diagnostics::Diagnostics;
use crate::trace::model::Message;
use crate::trace::parse::parse_message;

use super::db::part_from_object;

/// One `session_message` row (`data` already parsed).
#[derive(Debug, Clone)]
pub struct Row {
    pub id: String,
    pub kind: String,
    pub time_created: Option<i64>,
    pub data: Map<String, Value>,
}

/// Convert rows (in `seq` order) to messages with parts.
pub fn messages_from_rows(
    session_id: &str,
    rows: Vec<Row>,
    diags: &mut Diagnostics,
) -> Vec<Message> {
    let mut out = Vec::new();
    for row in rows {
        let created = row
            .data
            .get("time")
            .and_then(|t| t.get("created"))
            .and_then(Value::as_i64)
            .or(row.time_created)
            .unwrap_or(0);
        match row.kind.as_str() {
            "user" | "synthetic" => {
                let mut info = base(&row, session_id, "user", created);
                info.remove("summary");
                let Some(mut m) = parse_message(&Value::Object(info), diags) else {
                    continue;
                };
                let synthetic = row.kind == "synthetic";
                for (n, text) in texts(&row.data).into_iter().enumerate() {
                    let obj = json!({"type": "text", "text": text, "synthetic": synthetic});
                    push_part(&mut m, obj, n, diags);
                }
                out.push(m);
            }
            "assistant" => {
                let info = base(&row, session_id, "assistant", created);
                let Some(mut m) = parse_message(&Value::Object(info), diags) else {
                    continue;
                };
                let content = row.data.get("content").and_then(Value::as_array);
                for (n, item) in content.into_iter().flatten().enumerate() {
                    if let Some(obj) = content_part(item) {
                        push_part(&mut m, obj, n, diags);
                    }
                }
                out.push(m);
            }
            "compaction" => {
                let reason = row.data.get("reason").and_then(Value::as_str);
                let mut user = Map::new();
                user.insert("id".into(), Value::String(row.id.clone()));
                user.insert("sessionID".into(), Value::String(session_id.to_owned()));
                user.insert("role".into(), "user".into());
                user.insert("time".into(), json!({"created": created}));
                let Some(mut m) = parse_message(&Value::Object(user), diags) else {
                    continue;
                };
                let part = json!({"type": "compaction", "auto": reason == Some("auto")});
                push_part(&mut m, part, 0, diags);
                out.push(m);
                if let Some(summary) = row.data.get("summary").and_then(Value::as_str) {
                    let mut a = base(&row, session_id, "assistant", created);
                    a.insert("id".into(), Value::String(format!("{}~summary", row.id)));
                    a.insert("parentID".into(), Value::String(row.id.clone()));
                    a.insert("summary".into(), Value::Bool(true));
                    a.insert("agent".into(), "compaction".into());
                    let Some(mut s) = parse_message(&Value::Object(a), diags) else {
                        continue;
                    };
                    push_part(&mut s, json!({"type": "text", "text": summary}), 0, diags);
                    out.push(s);
                }
            }
            _ => {}
        }
    }
    out
}

/// The row's data as a v1 message info: role from the column, ids injected, the v2 `model`
/// object given v1 names.
fn base(row: &Row, session_id: &str, role: &str, created: i64) -> Map<String, Value> {
    let mut info = row.data.clone();
    // The content becomes parts; keeping it in the message too would store it twice.
    info.remove("content");
    info.remove("text");
    info.insert("id".into(), Value::String(row.id.clone()));
    info.insert("sessionID".into(), Value::String(session_id.to_owned()));
    info.insert("role".into(), role.into());
    let time = info
        .entry("time")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(t) = time.as_object_mut() {
        t.entry("created").or_insert(Value::from(created));
    }
    if let Some(model) = row.data.get("model") {
        if let (Some(id), Some(p)) = (model.get("id"), model.get("providerID")) {
            info.insert("modelID".into(), id.clone());
            info.insert("providerID".into(), p.clone());
        }
    }
    info
}

fn texts(data: &Map<String, Value>) -> Vec<String> {
    if let Some(t) = data.get("text").and_then(Value::as_str) {
        return vec![t.to_owned()];
    }
    data.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

fn content_part(item: &Value) -> Option<Value> {
    match item.get("type").and_then(Value::as_str)? {
        "text" | "reasoning" => Some(item.clone()),
        "tool" => {
            let state = item.get("state").cloned().unwrap_or(Value::Null);
            let status = match state.get("status").and_then(Value::as_str) {
                Some("streaming") => "pending",
                Some(s) => s,
                None => "pending",
            };
            let output: Vec<&str> = state
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect();
            let time = item.get("time").cloned().unwrap_or(Value::Null);
            let mut st = json!({
                "status": status,
                "input": state.get("input").cloned().unwrap_or(Value::Null),
                "metadata": state.get("metadata").cloned().unwrap_or(Value::Null),
                "time": {
                    "start": time.get("ran").or_else(|| time.get("created")).cloned().unwrap_or(Value::Null),
                    "end": time.get("completed").cloned().unwrap_or(Value::Null),
                },
            });
            if status == "completed" {
                st["output"] = Value::String(output.join("\n"));
            }
            if let Some(e) = state.get("error") {
                st["error"] = e
                    .as_str()
                    .map_or_else(|| Value::String(e.to_string()), |s| s.into());
            }
            Some(json!({
                "type": "tool",
                "callID": item.get("id").cloned().unwrap_or(Value::Null),
                "tool": item.get("name").cloned().unwrap_or(Value::Null),
                "state": st,
            }))
        }
        _ => Some(item.clone()),
    }
}

fn push_part(m: &mut Message, obj: Value, n: usize, diags: &mut Diagnostics) {
    let Value::Object(obj) = obj else { return };
    // Zero-padded so that ordering parts by id keeps content order.
    let id = format!("{}~{n:05}", m.id);
    let mid = m.id.clone();
    if let Some(p) = part_from_object(obj, &id, &mid, diags) {
        m.parts.push(p);
    }
}

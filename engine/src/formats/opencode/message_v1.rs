//! OpenCode 0.1.x "v1" message files: `{id, role, parts: [...], metadata: {...}}`, the parts
//! inline and without ids, usage, summary flag, error and times under `metadata`
//! (`metadata.assistant`, `metadata.error`, `metadata.time`), tool metadata and times under
//! `metadata.tool[<callID>]`. Rewritten here into the MessageV2 shape every other release uses
//! (as OpenCode's own `MessageV2.fromV1` did), so one parser serves all.
//!
//! Part ids are made from the message id and the part's position (`<message id>-p0003`): they
//! sort in the stored order, which is the order the parts were written.

use serde_json::{json, Map, Value};

/// True when `v` is a v1 message (inline `parts` and a `metadata` object).
pub fn is_v1(v: &Value) -> bool {
    v.get("metadata").is_some_and(Value::is_object) && v.get("parts").is_some_and(Value::is_array)
}

/// The id given to the `n`-th inline part of message `message_id`.
pub fn part_id(message_id: &str, n: usize) -> String {
    format!("{message_id}-p{n:04}")
}

/// A v1 message rewritten as MessageV2 `(info, parts)`. Parts keep their order.
pub fn to_v2(v: &Value) -> (Value, Vec<Value>) {
    let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
    let meta = v.get("metadata").cloned().unwrap_or(Value::Null);
    let mut info = Map::new();
    for k in ["id", "role", "sessionID"] {
        if let Some(x) = v.get(k).or_else(|| meta.get(k)) {
            info.insert(k.to_owned(), x.clone());
        }
    }
    if let Some(t) = meta.get("time") {
        info.insert("time".into(), t.clone());
    }
    if let Some(e) = meta.get("error").filter(|e| !e.is_null()) {
        info.insert("error".into(), e.clone());
    }
    if let Some(a) = meta.get("assistant").and_then(Value::as_object) {
        for (k, x) in a {
            info.insert(k.clone(), x.clone());
        }
    }
    let tools = meta.get("tool").cloned().unwrap_or(Value::Null);
    let parts = v
        .get("parts")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .enumerate()
                .map(|(n, p)| part(p, &tools, id, n))
                .collect()
        })
        .unwrap_or_default();
    (Value::Object(info), parts)
}

/// One inline part as a MessageV2 part. `tool-invocation` becomes a `tool` part whose state comes
/// from the invocation (`call`/`partial-call` → running, `result` → completed, or error when the
/// tool's metadata says so) and whose times and metadata come from `metadata.tool[callID]`.
fn part(p: &Value, tools: &Value, message_id: &str, n: usize) -> Value {
    let mut out = match p.get("type").and_then(Value::as_str) {
        Some("tool-invocation") => {
            let inv = p.get("toolInvocation").cloned().unwrap_or(Value::Null);
            let call = inv.get("toolCallId").and_then(Value::as_str).unwrap_or("");
            let meta = tools.get(call).cloned().unwrap_or(Value::Null);
            let failed = meta.get("error").and_then(Value::as_bool) == Some(true);
            let result = inv.get("result").cloned();
            let mut state = Map::new();
            state.insert(
                "input".into(),
                inv.get("args").cloned().unwrap_or(Value::Null),
            );
            let status = match inv.get("state").and_then(Value::as_str) {
                Some("result") if failed => {
                    let msg = meta
                        .get("message")
                        .cloned()
                        .or(result)
                        .unwrap_or(Value::Null);
                    state.insert("error".into(), msg);
                    "error"
                }
                Some("result") => {
                    state.insert("output".into(), result.unwrap_or(Value::Null));
                    "completed"
                }
                _ => "running",
            };
            state.insert("status".into(), status.into());
            if let Some(t) = meta.get("title") {
                state.insert("title".into(), t.clone());
            }
            if let Some(t) = meta.get("time") {
                state.insert("time".into(), t.clone());
            }
            state.insert("metadata".into(), meta);
            json!({
                "type": "tool",
                "tool": inv.get("toolName").cloned().unwrap_or(Value::Null),
                "callID": call,
                "state": Value::Object(state),
            })
        }
        _ => p.clone(),
    };
    if let Some(o) = out.as_object_mut() {
        o.entry("id")
            .or_insert_with(|| Value::String(part_id(message_id, n)));
        o.insert("messageID".into(), Value::String(message_id.to_owned()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_assistant_becomes_message_v2() {
        let v = json!({
            "id": "msg_1", "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "Reading."},
                {"type": "tool-invocation", "toolInvocation": {"args": {"command": "ls"},
                    "toolCallId": "c1", "toolName": "bash", "state": "result", "result": "a\nb"}},
                {"type": "tool-invocation", "toolInvocation": {"args": {"filePath": "x.py"},
                    "toolCallId": "c2", "toolName": "edit", "state": "result", "result": "Error: no ruff"}}
            ],
            "metadata": {
                "time": {"created": 5, "completed": 9}, "sessionID": "ses_1",
                "tool": {"c1": {"exit": 0, "title": "ls", "time": {"start": 6, "end": 7}},
                         "c2": {"error": true, "message": "Error: no ruff", "time": {"start": 7, "end": 8}}},
                "assistant": {"modelID": "m", "providerID": "p", "summary": false,
                    "tokens": {"input": 10, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                    "path": {"cwd": "/w", "root": "/w"}, "system": ["s"], "cost": 0}
            }
        });
        assert!(is_v1(&v));
        let (info, parts) = to_v2(&v);
        assert_eq!(info["role"], "assistant");
        assert_eq!(info["time"]["created"], 5);
        assert_eq!(info["tokens"]["input"], 10);
        assert_eq!(info["path"]["cwd"], "/w");
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0]["id"], "msg_1-p0000");
        assert_eq!(parts[2]["type"], "tool");
        assert_eq!(parts[2]["state"]["status"], "completed");
        assert_eq!(parts[2]["state"]["output"], "a\nb");
        assert_eq!(parts[2]["state"]["time"]["start"], 6);
        assert_eq!(parts[3]["state"]["status"], "error");
        assert_eq!(parts[3]["state"]["error"], "Error: no ruff");
    }
}

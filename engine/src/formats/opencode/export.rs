//! `opencode export` files: `{info, messages: [{info, parts}]}`, pretty-printed (and the share
//! feed's flat `[{type, data}]` array, regrouped into the same shape). Anything before
//! the first `{` (a stray "Exporting session:" line) is ignored. A file cut in the middle loads
//! every message that is complete and reports the cut. A damaged message (a raw NUL, a lone
//! surrogate escape, `NaN`, a value nested too deep, …) is repaired or, failing that, loaded
//! part by part; what cannot be read is reported and skipped, every other message loads.

use std::path::Path;

use serde_json::Value;

use crate::formats::opencode::derive::build_trace;
use crate::formats::opencode::parse::{parse_message, parse_part, parse_session};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;
use crate::trace::lenient;
use crate::trace::model::{SourceKind, Trace};

/// The largest export read (a 100k-request session is about 0.4 GB).
pub const MAX_EXPORT_BYTES: u64 = 4 << 30;

/// Read an export file into a trace (a regular file of at most [`MAX_EXPORT_BYTES`]).
pub fn load_export(path: &Path) -> Result<Trace, LoadError> {
    let bytes = crate::trace::input::read_bounded(path, MAX_EXPORT_BYTES)?;
    parse_export(&bytes, path)
}

/// Parse export bytes (see [`load_export`]); `path` is only used in messages.
pub fn parse_export(bytes: &[u8], path: &Path) -> Result<Trace, LoadError> {
    let mut diags = Diagnostics::new();
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(e) => {
            diags.push(
                DiagnosticKind::NonUtf8,
                format!(
                    "{}: invalid UTF-8 at byte {}; replaced",
                    path.display(),
                    e.valid_up_to()
                ),
            );
            String::from_utf8_lossy(bytes)
        }
    };
    // A share feed (`[{type, data}]`) is the same session as a flat array.
    if let Some(bracket) = text.find('[') {
        if text.find('{').is_none_or(|brace| bracket < brace) {
            if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&text[bracket..]) {
                if let Some((info, messages)) = regroup_share(&items) {
                    return to_trace(&info, &messages, path, diags);
                }
            }
        }
    }
    let Some(start) = text.find('{') else {
        return Err(LoadError::NotAnExport {
            path: path.to_owned(),
            reason: "no JSON object in the file".into(),
        });
    };
    let body = &text[start..];
    let (info, messages) = match serde_json::from_str::<Value>(body) {
        Ok(v) => {
            let info = v.get("info").cloned();
            let msgs = v
                .get("messages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            (info, msgs)
        }
        // Damaged somewhere: walk it value by value so only the damage is lost.
        Err(e) => {
            let w = walk(body, &mut diags);
            if w.cut {
                diags.push(
                    DiagnosticKind::TruncatedExport,
                    format!(
                        "{}: {e}; loaded the {} complete messages before it",
                        path.display(),
                        w.messages.len()
                    ),
                );
            }
            (w.info, w.messages)
        }
    };
    to_trace(
        info.as_ref().unwrap_or(&Value::Null),
        &messages,
        path,
        diags,
    )
}

/// `{info, messages: [{info, parts}]}` pieces → trace.
fn to_trace(
    info: &Value,
    messages: &[Value],
    path: &Path,
    mut diags: Diagnostics,
) -> Result<Trace, LoadError> {
    let Some(session) = parse_session(info) else {
        return Err(LoadError::NotAnExport {
            path: path.to_owned(),
            reason: "no `info` with a session id".into(),
        });
    };
    let mut out = Vec::with_capacity(messages.len());
    for entry in messages {
        let Some(info) = entry.get("info") else {
            diags.push(
                DiagnosticKind::MissingField,
                "export message without `info`",
            );
            continue;
        };
        let Some(mut msg) = parse_message(info, &mut diags) else {
            continue;
        };
        if msg.session_id.is_empty() {
            msg.session_id = session.id.clone();
        }
        for p in entry
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(part) = parse_part(p, &mut diags) {
                msg.parts.push(part);
            }
        }
        out.push(msg);
    }
    Ok(build_trace(
        session,
        out,
        SourceKind::Export(path.display().to_string()),
        diags,
    ))
}

/// Regroup a share feed (`{type: "session"|"message"|"part"|…, data}` items, later items updating
/// earlier ones with the same id) into export pieces. `None` when it holds no session item.
fn regroup_share(items: &[Value]) -> Option<(Value, Vec<Value>)> {
    let mut info = None;
    let mut order: Vec<String> = Vec::new();
    let mut msgs: std::collections::HashMap<String, Value> = Default::default();
    let mut parts: std::collections::HashMap<String, Vec<Value>> = Default::default();
    for item in items {
        let data = item.get("data").cloned().unwrap_or(Value::Null);
        match item.get("type").and_then(Value::as_str) {
            Some("session") => info = Some(data),
            Some("message") => {
                let Some(id) = data.get("id").and_then(Value::as_str).map(str::to_owned) else {
                    continue;
                };
                if !msgs.contains_key(&id) {
                    order.push(id.clone());
                }
                msgs.insert(id, data);
            }
            Some("part") => {
                let Some(mid) = data.get("messageID").and_then(Value::as_str) else {
                    continue;
                };
                let list = parts.entry(mid.to_owned()).or_default();
                let pid = data.get("id").cloned();
                match list.iter_mut().find(|p| p.get("id") == pid.as_ref()) {
                    Some(old) => *old = data,
                    None => list.push(data),
                }
            }
            _ => {}
        }
    }
    let info = info?;
    let messages = order
        .into_iter()
        .filter_map(|id| {
            let m = msgs.remove(&id)?;
            let p = parts.remove(&id).unwrap_or_default();
            Some(serde_json::json!({"info": m, "parts": p}))
        })
        .collect();
    Some((info, messages))
}

/// What [`walk`] salvaged.
struct Walked {
    info: Option<Value>,
    messages: Vec<Value>,
    /// The text ended inside a value.
    cut: bool,
}

/// Salvage `info` and every readable message of a damaged export: walk the top-level object key
/// by key and the `messages` array element by element ([`lenient::value_end`] finds each
/// element's end without parsing it); each element is parsed on its own ([`message_entry`]), so
/// a damaged one costs at most itself.
fn walk(body: &str, diags: &mut Diagnostics) -> Walked {
    let mut w = Walked {
        info: None,
        messages: Vec::new(),
        cut: false,
    };
    let mut pos = lenient::skip_ws(body, 0);
    if !body[pos..].starts_with('{') {
        return w;
    }
    pos += 1;
    loop {
        pos = lenient::skip_ws(body, pos);
        if body[pos..].starts_with('}') {
            break;
        }
        let Some(key_end) = lenient::value_end(body, pos) else {
            w.cut = true;
            break;
        };
        let key = serde_json::from_str::<String>(&body[pos..key_end]).unwrap_or_default();
        pos = lenient::skip_ws(body, key_end);
        if !body[pos..].starts_with(':') {
            break;
        }
        pos = lenient::skip_ws(body, pos + 1);
        if key == "messages" && body[pos..].starts_with('[') {
            let (end, cut) = walk_array(body, pos, |n, text| {
                if let Some(m) = message_entry(n, text, diags) {
                    w.messages.push(m);
                }
            });
            if cut {
                w.cut = true;
                break;
            }
            pos = end;
        } else {
            let Some(end) = lenient::value_end(body, pos) else {
                w.cut = true;
                break;
            };
            if key == "info" {
                match lenient::parse(&body[pos..end]) {
                    Ok((v, repairs)) => {
                        if !repairs.is_empty() {
                            diags.push(
                                DiagnosticKind::RepairedJson,
                                format!("session info: {}", lenient::describe(&repairs)),
                            );
                        }
                        w.info = Some(v);
                    }
                    Err(e) => diags.push(
                        DiagnosticKind::CorruptJson,
                        format!("session info is not JSON ({e})"),
                    ),
                }
            }
            pos = end;
        }
        pos = lenient::skip_ws(body, pos);
        if body[pos..].starts_with(',') {
            pos += 1;
        } else {
            break;
        }
    }
    w
}

/// Call `each(index, text)` for every element of the array starting at `pos` (its `[`).
/// Returns the index after the array and whether the text ended inside it.
fn walk_array(body: &str, pos: usize, mut each: impl FnMut(usize, &str)) -> (usize, bool) {
    let mut pos = pos + 1;
    let mut n = 0;
    loop {
        pos = lenient::skip_ws(body, pos);
        if body[pos..].starts_with(']') {
            return (pos + 1, false);
        }
        let Some(end) = lenient::value_end(body, pos) else {
            return (body.len(), true);
        };
        each(n, &body[pos..end]);
        n += 1;
        pos = lenient::skip_ws(body, end);
        if body[pos..].starts_with(',') {
            pos += 1;
        } else if body[pos..].starts_with(']') {
            return (pos + 1, false);
        } else if pos >= body.len() {
            return (pos, true);
        }
        // Anything else (a missing comma): go on with the next value.
    }
}

/// One `{info, parts}` element of `messages` (number `n`, from 0). Parsed whole when it can be
/// (repaired if need be); else its `info` and each of its parts on their own, so a damaged part
/// costs only itself. `None` (and a diagnostic) when not even its `info` can be read.
fn message_entry(n: usize, text: &str, diags: &mut Diagnostics) -> Option<Value> {
    let id_of = |v: &Value| {
        v.get("info")
            .and_then(|i| i.get("id"))
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{n}"), str::to_owned)
    };
    match lenient::parse(text) {
        Ok((v, repairs)) => {
            if !repairs.is_empty() {
                diags.push(
                    DiagnosticKind::RepairedJson,
                    format!("message {}: {}", id_of(&v), lenient::describe(&repairs)),
                );
            }
            return Some(v);
        }
        Err(e) if !text.starts_with('{') => {
            diags.push(
                DiagnosticKind::CorruptJson,
                format!("message #{n}: not a JSON object ({e}); skipped"),
            );
            return None;
        }
        Err(_) => {}
    }
    // Key by key: `info`, then `parts` element by element.
    let mut info = None;
    let mut parts = Vec::new();
    let mut pos = 1;
    loop {
        pos = lenient::skip_ws(text, pos);
        let Some(key_end) = lenient::value_end(text, pos) else {
            break;
        };
        let key = serde_json::from_str::<String>(&text[pos..key_end]).unwrap_or_default();
        pos = lenient::skip_ws(text, key_end);
        if !text[pos..].starts_with(':') {
            break;
        }
        pos = lenient::skip_ws(text, pos + 1);
        let Some(end) = lenient::value_end(text, pos) else {
            break;
        };
        match key.as_str() {
            "info" => match lenient::parse(&text[pos..end]) {
                Ok((v, _)) => info = Some(v),
                Err(e) => {
                    diags.push(
                        DiagnosticKind::CorruptJson,
                        format!("message #{n}: its info is not JSON ({e}); skipped"),
                    );
                    return None;
                }
            },
            "parts" if text[pos..].starts_with('[') => {
                walk_array(text, pos, |k, part| match lenient::parse(part) {
                    Ok((v, _)) => parts.push(v),
                    Err(e) => diags.push(
                        DiagnosticKind::CorruptJson,
                        format!("message #{n}: part #{k} is not JSON ({e}); skipped"),
                    ),
                });
            }
            _ => {}
        }
        pos = lenient::skip_ws(text, end);
        if text[pos..].starts_with(',') {
            pos += 1;
        } else {
            break;
        }
    }
    let Some(info) = info else {
        diags.push(
            DiagnosticKind::CorruptJson,
            format!("message #{n}: no readable info; skipped"),
        );
        return None;
    };
    let v = serde_json::json!({ "info": info, "parts": parts });
    diags.push(
        DiagnosticKind::RepairedJson,
        format!(
            "message {}: read part by part ({} parts kept)",
            id_of(&v),
            v["parts"].as_array().map_or(0, Vec::len)
        ),
    );
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"Exporting session: ses_1
{"info": {"id": "ses_1", "title": "t", "version": "1.18.33", "time": {"created": 1, "updated": 2}},
 "messages": [
  {"info": {"id": "msg_b", "role": "user", "time": {"created": 10}}, "parts": [{"id": "prt_1", "type": "text", "text": "hi"}]},
  {"info": {"id": "msg_c", "role": "assistant", "parentID": "msg_b", "time": {"created": 11}, "finish": "stop",
            "tokens": {"input": 5, "output": 2, "reasoning": 0, "cache": {"read": 3, "write": 0}}},
   "parts": [{"id": "prt_2", "type": "step-start"}, {"id": "prt_3", "type": "text", "text": "yo"},
             {"id": "prt_4", "type": "step-finish", "reason": "stop", "cost": 0.5, "tokens": {"input": 5, "output": 2, "reasoning": 0, "cache": {"read": 3, "write": 0}}},
             {"id": "prt_5", "type": "hologram", "beam": 7}]}
 ]}"#;

    #[test]
    fn loads_a_small_export_with_a_prefix_and_keeps_unknown_parts() {
        let t = parse_export(MINI.as_bytes(), Path::new("mini.json")).unwrap();
        assert_eq!(t.session.id, "ses_1");
        assert_eq!(t.messages.len(), 2);
        assert_eq!(t.requests.len(), 1);
        assert_eq!(t.requests[0].usage.cache_read, 3);
        assert_eq!(t.requests[0].recorded_prompt(), 8);
        let unknown = &t.messages[1].parts[3];
        match &unknown.kind {
            crate::trace::model::PartKind::Unknown { type_name, raw } => {
                assert_eq!(type_name, "hologram");
                assert_eq!(raw["beam"], 7);
            }
            other => panic!("expected unknown, got {other:?}"),
        }
        assert_eq!(t.diagnostics.count(DiagnosticKind::UnknownPartType), 1);
    }

    #[test]
    fn a_cut_export_keeps_complete_messages() {
        let cut = &MINI[..MINI.find("\"prt_3\"").unwrap()];
        let t = parse_export(cut.as_bytes(), Path::new("cut.json")).unwrap();
        assert_eq!(t.messages.len(), 1);
        assert_eq!(t.diagnostics.count(DiagnosticKind::TruncatedExport), 1);
    }
}

//! `opencode export` files: `{info, messages: [{info, parts}]}`, pretty-printed (and the share
//! feed's flat `[{type, data}]` array, regrouped into the same shape). Anything before
//! the first `{` (a stray "Exporting session:" line) is ignored. A file cut in the middle loads
//! every message that is complete and reports the cut. A damaged message (a raw NUL, a lone
//! surrogate escape, `NaN`, a value nested too deep, …) is repaired or, failing that, loaded
//! part by part; a damaged span (a flipped quote, a stray bracket) is skipped up to the next
//! message or part ([`super::export_salvage`]). What cannot be read is reported with where it
//! is, every other message loads.

use std::path::Path;

use serde_json::Value;

use super::{export_salvage, export_stream, export_window};
use crate::formats::opencode::derive::build_trace;
use crate::formats::opencode::parse::{parse_message, parse_part, parse_session};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;
use crate::trace::model::{Message, SourceKind, Trace};

/// The largest export read (a 100k-request session is about 0.4 GB).
pub const MAX_EXPORT_BYTES: u64 = 4 << 30;

/// Read an export file into a trace (a regular file of at most [`MAX_EXPORT_BYTES`]).
pub fn load_export(path: &Path) -> Result<Trace, LoadError> {
    let meta = crate::trace::input::check_regular(path)?;
    if meta.len() > MAX_EXPORT_BYTES {
        return Err(LoadError::TooLarge {
            path: path.to_owned(),
            size: meta.len(),
            cap: MAX_EXPORT_BYTES,
        });
    }
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    // An intact export is read a window at a time; anything else is read whole, where the
    // salvaging reader can go back and forth over it (a file that grew past the cap meanwhile
    // is cut here, so it is read whole and refused there).
    let file = std::fs::File::open(path).map_err(io)?;
    if let Some(read) =
        export_window::read(std::io::Read::take(file, MAX_EXPORT_BYTES)).map_err(io)?
    {
        let info = read.info.unwrap_or(Value::Null);
        return finish(&info, read.messages, path, read.diags);
    }
    let bytes = crate::trace::input::read_bounded(path, MAX_EXPORT_BYTES)?;
    parse_export(&bytes, path)
}

/// Parse export bytes (see [`load_export`]); `path` is only used in messages.
pub fn parse_export(bytes: &[u8], path: &Path) -> Result<Trace, LoadError> {
    let mut diags = Diagnostics::new();
    let text = crate::trace::input::lossy_utf8(bytes, &path.display(), &mut diags);
    // A share feed (`[{type, data}]`) is the same session as a flat array.
    if let Some(bracket) = text.find('[') {
        if text.find('{').is_none_or(|brace| bracket < brace) {
            if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&text[bracket..]) {
                if let Some((info, messages)) = regroup_share(&items) {
                    return to_trace(&info, messages, path, diags);
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
    let (info, messages) = match export_stream::read(body, &diags) {
        Ok(read) => {
            diags = read.diags;
            (read.info, read.messages)
        }
        // Damaged somewhere: walk it element by element so only the damage is lost.
        Err(e) => {
            let before = diags.clone();
            let w = export_salvage::salvage(&text, start, &mut diags);
            if w.cut {
                diags.push(
                    DiagnosticKind::TruncatedExport,
                    format!(
                        "{}: {e}; loaded the {} complete messages before it",
                        path.display(),
                        w.messages.len()
                    ),
                );
            } else if diags == before {
                // Damage outside every message (after the array): nothing was lost.
                diags.push(
                    DiagnosticKind::DamagedSpan,
                    format!("{}: {e}, outside the messages; ignored", path.display()),
                );
            }
            let info = w
                .info
                .or_else(|| session_from_messages(&w.messages, &mut diags));
            let messages = w
                .messages
                .into_iter()
                .filter_map(|m| read_entry(m, &mut diags))
                .collect();
            (info, messages)
        }
    };
    finish(info.as_ref().unwrap_or(&Value::Null), messages, path, diags)
}

/// A session info made of the messages' `sessionID` when the export's own is damaged.
fn session_from_messages(messages: &[Value], diags: &mut Diagnostics) -> Option<Value> {
    let sid = messages
        .iter()
        .find_map(|m| m.get("info")?.get("sessionID")?.as_str())?;
    diags.push(
        DiagnosticKind::DamagedSpan,
        format!("session {sid}: its info is damaged; id taken from its messages, no title"),
    );
    Some(serde_json::json!({ "id": sid }))
}

/// `{info, messages: [{info, parts}]}` pieces → trace.
fn to_trace(
    info: &Value,
    messages: Vec<Value>,
    path: &Path,
    mut diags: Diagnostics,
) -> Result<Trace, LoadError> {
    let messages = messages
        .into_iter()
        .filter_map(|m| read_entry(m, &mut diags))
        .collect();
    finish(info, messages, path, diags)
}

/// One `{info, parts}` entry of an export → a message (its session id filled in later when it
/// has none); its document is dropped once read.
pub(super) fn read_entry(entry: Value, diags: &mut Diagnostics) -> Option<Message> {
    let Some(info) = entry.get("info") else {
        diags.push(
            DiagnosticKind::MissingField,
            "export message without `info`",
        );
        return None;
    };
    let mut msg = parse_message(info, diags)?;
    for p in entry
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(part) = parse_part(p, diags) {
            msg.parts.push(part);
        }
    }
    Some(msg)
}

/// The session's info and its messages → trace.
fn finish(
    info: &Value,
    mut messages: Vec<Message>,
    path: &Path,
    diags: Diagnostics,
) -> Result<Trace, LoadError> {
    let Some(session) = parse_session(info) else {
        return Err(LoadError::NotAnExport {
            path: path.to_owned(),
            reason: "no `info` with a session id".into(),
        });
    };
    for msg in &mut messages {
        if msg.session_id.is_empty() {
            msg.session_id = session.id.clone();
        }
    }
    Ok(build_trace(
        session,
        messages,
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
    fn a_damaged_session_info_keeps_every_message_under_the_messages_session_id() {
        let bad = MINI
            .replacen("\"title\": \"t\"", "'title\": \"t\"", 1)
            .replace(
                "\"role\": \"user\",",
                "\"role\": \"user\", \"sessionID\": \"ses_1\",",
            );
        let t = parse_export(bad.as_bytes(), Path::new("bad.json")).unwrap();
        assert_eq!(t.session.id, "ses_1");
        assert_eq!(t.messages.len(), 2);
        assert!(t.diagnostics.count(DiagnosticKind::DamagedSpan) >= 1);
        assert_eq!(t.diagnostics.count(DiagnosticKind::TruncatedExport), 0);
    }

    #[test]
    fn a_cut_export_keeps_complete_messages() {
        let cut = &MINI[..MINI.find("\"prt_3\"").unwrap()];
        let t = parse_export(cut.as_bytes(), Path::new("cut.json")).unwrap();
        assert_eq!(t.messages.len(), 1);
        assert_eq!(t.diagnostics.count(DiagnosticKind::TruncatedExport), 1);
    }
}

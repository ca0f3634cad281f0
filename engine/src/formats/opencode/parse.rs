//! OpenCode's JSON as the model: sessions here; messages and parts by the one reader of their
//! JSON ([`super::json`]), from a parsed `Value` (storage files, exports, the v2 rows).

use serde_json::Value;

use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::model::*;

pub use super::json::MAX_TOKEN_COUNT;

fn s(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}
fn i(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(|x| {
        x.as_i64()
            .or_else(|| x.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
    })
}

/// `{input, output, reasoning, cache: {read, write}}` → [`Usage`]; `what` names the message or
/// part in diagnostics (an odd count is read as the nearest and reported).
pub fn parse_usage(v: &Value, what: &str, diags: &mut Diagnostics) -> Usage {
    super::json::usage_from_value(v, what, diags)
}

/// A model reference (`{providerID, modelID}`); `None` unless both are strings.
pub(crate) fn parse_model_ref(v: Option<&Value>) -> Option<ModelRef> {
    super::json::model_ref_from_value(v)
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

/// A stored message object with the parts it carries inline: the 0.1.x "v1" format (`metadata`
/// and inline parts without ids, rewritten by [`crate::formats::opencode::message_v1`]) or a
/// MessageV2 object (whose parts live elsewhere; an inline `parts` array is read too).
pub fn parse_message_with_inline_parts(v: &Value, diags: &mut Diagnostics) -> Option<Message> {
    use crate::formats::opencode::message_v1;
    if message_v1::is_v1(v) {
        let (info, parts) = message_v1::to_v2(v);
        // The stored system prompt (`metadata.assistant.system`) is `system` of the rewritten info.
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
    super::json::message_from_value(v, None, diags)
}

/// A part (its message is the one it is read with).
/// `None` (and a diagnostic) when id or type is missing.
pub fn parse_part(v: &Value, diags: &mut Diagnostics) -> Option<Part> {
    super::json::part_from_value(v, None, diags)
}

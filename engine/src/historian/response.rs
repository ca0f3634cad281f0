//! A chat completion's answer: its content and `usage`, and the strict parse of the tiers the
//! content must hold, `{"tiers": {"dense": "…", "compact": "…", "anchor": "…"}}`.
//!
//! Strict means: exactly the requested tiers, each a non-empty string, and nothing else. Two
//! wrappers that models without a JSON mode commonly add are taken off first, and only when they
//! wrap the whole answer: a single markdown code fence, and a leading `<think>…</think>` block
//! (reasoning models served by vLLM, llama.cpp or Ollama).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::episode::Tier;
use crate::text::clip_chars;

/// Token usage of one call, from the response's `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// `prompt_tokens`.
    pub input_tokens: u64,
    /// `completion_tokens`.
    pub output_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`, when the provider reports it (priced at its
    /// cache-read rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
}

/// What a successful completion says.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub usage: Option<Usage>,
    /// The model that answered (`model`), e.g. a dated snapshot of the one asked for.
    pub model: Option<String>,
    pub finish_reason: Option<String>,
}

/// Why an answer could not be used. Each message names what was wrong and quotes the start of
/// what came back, so a user can tell a refusal from a truncation from a broken server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResponseError {
    #[error("the response is not a chat completion ({reason}); it starts: {start:?}")]
    NotACompletion { reason: String, start: String },
    #[error("the model refused: {0:?}")]
    Refusal(String),
    #[error("the answer was cut off at the token limit (finish_reason \"length\"); raise --max-tokens or use a model with a larger output limit")]
    Truncated,
    #[error("the answer is not JSON ({reason}); it starts: {start:?}")]
    NotJson { reason: String, start: String },
    #[error("the answer is not of the form {shape}: {reason}")]
    WrongShape { shape: String, reason: String },
}

const QUOTE_CHARS: usize = 120;

/// Parse a `/v1/chat/completions` response body.
pub fn parse_completion(body: &str) -> Result<Completion, ResponseError> {
    let bad = |reason: &str| ResponseError::NotACompletion {
        reason: reason.to_owned(),
        start: clip_chars(body.trim(), QUOTE_CHARS),
    };
    let v: Value = serde_json::from_str(body).map_err(|e| bad(&e.to_string()))?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| bad("no choices"))?;
    let message = choice.get("message").ok_or_else(|| bad("no message"))?;
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(r) = message.get("refusal").and_then(Value::as_str) {
        if !r.is_empty() {
            return Err(ResponseError::Refusal(clip_chars(r, QUOTE_CHARS)));
        }
    }
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if finish_reason.as_deref() == Some("length") {
        return Err(ResponseError::Truncated);
    }
    if content.trim().is_empty() {
        return Err(bad("the message has no content"));
    }
    let usage = v.get("usage").and_then(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        Some(Usage {
            input_tokens: n("prompt_tokens")?,
            output_tokens: n("completion_tokens")?,
            cached_input_tokens: u
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens"))
                .and_then(Value::as_u64),
        })
    });
    Ok(Completion {
        content,
        usage,
        model: v.get("model").and_then(Value::as_str).map(str::to_owned),
        finish_reason,
    })
}

/// Take off a leading `<think>…</think>` block and a code fence around the whole answer.
fn unwrap_answer(content: &str) -> &str {
    let mut s = content.trim();
    if let Some(rest) = s.strip_prefix("<think>") {
        if let Some(end) = rest.find("</think>") {
            s = rest[end + "</think>".len()..].trim();
        }
    }
    if let Some(rest) = s.strip_prefix("```") {
        // The info string (`json`) ends the first line; the fence must close the answer.
        if let (Some(nl), Some(inner)) = (rest.find('\n'), rest.strip_suffix("```")) {
            if nl < inner.len() && !rest[..nl].contains('`') {
                return inner[nl + 1..].trim();
            }
        }
    }
    s
}

/// A summary from a model's answer: its text, a leading `<think>…</think>` block taken off
/// (reasoning models), and not empty.
pub fn parse_summary(content: &str) -> Result<String, ResponseError> {
    let mut s = content.trim();
    if let Some(rest) = s.strip_prefix("<think>") {
        if let Some(end) = rest.find("</think>") {
            s = rest[end + "</think>".len()..].trim();
        }
    }
    if s.is_empty() {
        return Err(ResponseError::WrongShape {
            shape: "a summary".to_owned(),
            reason: "the answer is empty".to_owned(),
        });
    }
    Ok(s.to_owned())
}

/// The requested tiers from a model's answer, strictly.
pub fn parse_tiers(content: &str, want: &[Tier]) -> Result<BTreeMap<Tier, String>, ResponseError> {
    let shape = super::prompt::answer_shape(want);
    let wrong = |reason: String| ResponseError::WrongShape {
        shape: shape.clone(),
        reason,
    };
    let answer = unwrap_answer(content);
    let v: Value = serde_json::from_str(answer).map_err(|e| ResponseError::NotJson {
        reason: e.to_string(),
        start: clip_chars(answer, QUOTE_CHARS),
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| wrong(format!("the answer is {}, not an object", kind(&v))))?;
    if let Some(k) = obj.keys().find(|k| *k != "tiers") {
        return Err(wrong(format!("unexpected key {k:?}")));
    }
    let tiers = obj
        .get("tiers")
        .ok_or_else(|| wrong("no \"tiers\" key".to_owned()))?;
    let tiers = tiers
        .as_object()
        .ok_or_else(|| wrong(format!("\"tiers\" is {}, not an object", kind(tiers))))?;
    let mut out = BTreeMap::new();
    for (name, text) in tiers {
        let tier = name
            .parse::<Tier>()
            .ok()
            .filter(|t| want.contains(t) && name == t.as_str())
            .ok_or_else(|| wrong(format!("unexpected tier {name:?}")))?;
        let text = text
            .as_str()
            .ok_or_else(|| wrong(format!("tier {name:?} is {}, not a string", kind(text))))?;
        if text.trim().is_empty() {
            return Err(wrong(format!("tier {name:?} is empty")));
        }
        out.insert(tier, text.to_owned());
    }
    let missing: Vec<&str> = want
        .iter()
        .filter(|t| !out.contains_key(t))
        .map(Tier::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(wrong(format!("missing {}", missing.join(", "))));
    }
    Ok(out)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Tier; 3] = [Tier::Dense, Tier::Compact, Tier::Anchor];

    fn completion(content: &str, extra: &str) -> String {
        serde_json::json!({
            "id": "x", "model": "m-2026", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": extra}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 64}}
        })
        .to_string()
    }

    #[test]
    fn a_completion_gives_content_usage_and_model() {
        let c = parse_completion(&completion("{}", "stop")).unwrap();
        assert_eq!(c.content, "{}");
        assert_eq!(
            c.usage,
            Some(Usage {
                input_tokens: 120,
                output_tokens: 30,
                cached_input_tokens: Some(64)
            })
        );
        assert_eq!(c.model.as_deref(), Some("m-2026"));
        let no_usage = r#"{"choices":[{"message":{"content":"hi"}}]}"#;
        assert_eq!(parse_completion(no_usage).unwrap().usage, None);
    }

    #[test]
    fn broken_completions_say_what_is_wrong() {
        assert!(matches!(
            parse_completion("<html>502 Bad Gateway</html>"),
            Err(ResponseError::NotACompletion { .. })
        ));
        assert_eq!(
            parse_completion(&completion("{\"tiers\": {\"dense\": \"a", "length")),
            Err(ResponseError::Truncated)
        );
        let refusal = r#"{"choices":[{"message":{"content":null,"refusal":"I can't help"}}]}"#;
        assert_eq!(
            parse_completion(refusal),
            Err(ResponseError::Refusal("I can't help".into()))
        );
        let e = parse_completion(r#"{"choices":[]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no choices"), "{e}");
    }

    #[test]
    fn tiers_parse_strictly() {
        let ok = r#"{"tiers": {"dense": "d", "compact": "c", "anchor": "a"}}"#;
        let t = parse_tiers(ok, &ALL).unwrap();
        assert_eq!(t[&Tier::Anchor], "a");
        for (bad, why) in [
            (
                r#"{"tiers": {"dense": "d", "compact": "c"}}"#,
                "missing anchor",
            ),
            (
                r#"{"tiers": {"dense": "d", "compact": "c", "anchor": ""}}"#,
                "is empty",
            ),
            (
                r#"{"tiers": {"dense": "d", "compact": "c", "anchor": 3}}"#,
                "a number",
            ),
            (
                r#"{"tiers": {"dense": "d", "compact": "c", "anchor": "a", "p2": "x"}}"#,
                "unexpected tier \"p2\"",
            ),
            (
                r#"{"tiers": {"dense": "d", "compact": "c", "anchor": "a"}, "notes": 1}"#,
                "unexpected key \"notes\"",
            ),
            (r#"["d", "c", "a"]"#, "an array"),
            (r#"{"dense": "d"}"#, "unexpected key"),
        ] {
            let e = parse_tiers(bad, &ALL).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let e = parse_tiers("Sure! Here are the tiers: {", &ALL).unwrap_err();
        assert!(
            matches!(&e, ResponseError::NotJson { start, .. } if start.starts_with("Sure!")),
            "{e}"
        );
        // Only the requested tiers: a cascade step asks for one.
        let one = parse_tiers(r#"{"tiers": {"compact": "c"}}"#, &[Tier::Compact]).unwrap();
        assert_eq!(one.len(), 1);
        assert!(parse_tiers(ok, &[Tier::Compact]).is_err());
    }

    #[test]
    fn a_fence_or_think_block_around_the_whole_answer_is_taken_off() {
        let inner = r#"{"tiers": {"compact": "c"}}"#;
        for wrapped in [
            format!("```json\n{inner}\n```"),
            format!("```\n{inner}\n```"),
            format!("<think>\nthe user wants JSON\n</think>\n\n{inner}"),
            format!("<think>x</think>```json\n{inner}\n```"),
        ] {
            assert!(parse_tiers(&wrapped, &[Tier::Compact]).is_ok(), "{wrapped}");
        }
        // Prose around a fence is not an answer of the asked form.
        let prose = format!("Here you go:\n```json\n{inner}\n```");
        assert!(parse_tiers(&prose, &[Tier::Compact]).is_err());
    }
}

//! How OpenCode sizes a kept tail (1.14.19+): not in the model's tokens but by its own estimate,
//! the characters of the messages as it hands them to the model (`toModelMessages`, serialised
//! as JSON) divided by four. Tool outputs it pruned count as the placeholder that replaces them.
//! The JSON wrapping is approximated per message and part; the texts count as JSON escapes them.

use crate::trace::model::{Message, PartKind};
use crate::trace::Trace;

/// OpenCode's `Token.estimate`: characters per token.
const CHARS_PER_TOKEN: u64 = 4;
/// `{"role":"assistant","content":[]}` and the separators around a message.
const MESSAGE_WRAP: u64 = 36;
/// `{"type":"text","text":}` and the like, around one part's text.
const PART_WRAP: u64 = 26;
/// `{"type":"tool-call","toolCallId":,"toolName":,"input":}` around a call.
const CALL_WRAP: u64 = 58;
/// `{"role":"tool","content":[{"type":"tool-result","toolCallId":,"toolName":,"output":{"type":"text","value":}}]}`.
const RESULT_WRAP: u64 = 110;
/// What OpenCode sends for a pruned tool output.
const PRUNED_OUTPUT: &str = "[Old tool result content cleared]";

/// Characters of `s` as a JSON string (quotes and escapes included).
fn json_len(s: &str) -> u64 {
    serde_json::to_string(s).map_or(s.len() as u64 + 2, |j| j.len() as u64)
}

/// Characters one message adds to the serialised model messages.
pub fn message_chars(m: &Message) -> u64 {
    let mut n = MESSAGE_WRAP;
    for p in &m.parts {
        n += match &p.kind {
            PartKind::Text {
                text,
                ignored: false,
                ..
            } => PART_WRAP + json_len(text),
            PartKind::Reasoning { text } => PART_WRAP + json_len(text),
            PartKind::Tool(t) => {
                let id = json_len(&t.call_id) + json_len(&t.tool);
                let input = serde_json::to_string(&t.input).map_or(0, |s| s.len() as u64);
                let output = if t.time_compacted.is_some() {
                    PRUNED_OUTPUT
                } else {
                    t.output.as_deref().or(t.error.as_deref()).unwrap_or("")
                };
                CALL_WRAP + RESULT_WRAP + 2 * id + input + json_len(output)
            }
            _ => 0,
        };
    }
    n
}

/// Per message of the trace, its size in OpenCode's estimate (characters ÷ 4, unrounded sum
/// kept in characters until the end by the caller: see [`to_tokens`]).
pub fn message_sizes(trace: &Trace) -> Vec<u64> {
    trace.messages.iter().map(message_chars).collect()
}

/// Characters to OpenCode's estimated tokens.
pub fn to_tokens(chars: u64) -> u64 {
    (chars + CHARS_PER_TOKEN / 2) / CHARS_PER_TOKEN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_count_as_json_writes_them() {
        assert_eq!(json_len("ab"), 4);
        assert_eq!(json_len("a\nb"), 6);
        assert_eq!(to_tokens(4000), 1000);
    }
}

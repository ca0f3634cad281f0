//! The typed read of a `part.data` column: the hot row of a load (parts are most of a session's
//! rows and most of its bytes). Instead of a `serde_json::Value` document (a map and an owned key
//! per object, an owned string per value, then copies into the model), the fields the model keeps
//! are read straight from the text, strings borrowed where they have no escapes, and everything
//! else is only checked.
//!
//! It takes a row only where it gives exactly what [`crate::formats::opencode::parse::parse_part`] gives:
//! the common part types, each field of the type the JSON normally has. Anything else — another
//! part type, a field of an odd type (a count as a string, `null` where the lenient reading
//! differs), text serde_json rejects (which the lenient parser repairs and reports) — is
//! [`NotTaken`], and the caller reads the row the lenient way. Unknown keys are read as strictly
//! as a `Value` would read them (numbers out of `f64` range, bad escapes and nesting fail the same
//! way), so a row is taken only where the lenient path would not have repaired it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use crate::formats::opencode::parse::{parse_usage, tool_part, ToolFields};
use crate::trace::diagnostics::Diagnostics;
use crate::trace::model::{Part, PartKind, ToolMetadata};

/// The row was not read here; read it the lenient way.
#[derive(Debug)]
pub struct NotTaken;

/// Read `data` as the part `id` of `message_id`. Diagnostics are pushed only for a taken row.
pub fn read(data: &str, id: &str, diags: &mut Diagnostics) -> Result<Part, NotTaken> {
    let raw: RawPart<'_> = serde_json::from_str(data).map_err(|_| NotTaken)?;
    let text = |t: Option<Text<'_>>| t.map_or_else(String::new, Text::into_string);
    let opt = |t: Option<Text<'_>>| t.map(Text::into_string);
    let b = |x: Option<bool>| x.unwrap_or(false);
    let kind = match raw.ty.as_ref().map(|t| t.0.as_ref()) {
        Some("text") => PartKind::Text {
            text: text(raw.text),
            synthetic: b(raw.synthetic),
            ignored: b(raw.ignored),
            compaction_continue: raw
                .metadata
                .as_ref()
                .and_then(|m| m.compaction_continue.as_ref())
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        Some("reasoning") => PartKind::Reasoning {
            text: text(raw.text),
        },
        Some("file") => PartKind::File {
            mime: text(raw.mime),
            filename: opt(raw.filename),
            url: text(raw.url),
            source_text: raw
                .source
                .as_ref()
                .and_then(|s| s.get("text"))
                .and_then(|t| {
                    t.as_str()
                        .or_else(|| t.get("value").and_then(Value::as_str))
                        .map(str::to_owned)
                }),
        },
        Some("step-start") => PartKind::StepStart {
            snapshot: opt(raw.snapshot),
        },
        Some("step-finish") => PartKind::StepFinish {
            reason: opt(raw.reason),
            cost: raw
                .cost
                .and_then(|c| c.as_f64())
                .filter(|c| c.is_finite())
                .unwrap_or(0.0),
            tokens: raw
                .tokens
                .as_ref()
                .filter(|t| t.is_object())
                .map(|t| parse_usage(t, &format!("part {id}"), diags)),
        },
        Some("snapshot") => PartKind::Snapshot {
            snapshot: text(raw.snapshot),
        },
        Some("patch") => PartKind::Patch {
            hash: text(raw.hash),
            files: crate::formats::opencode::parse::string_array(raw.files.as_ref()),
        },
        Some("tool") => {
            let state = raw.state.unwrap_or_default();
            let time = state.time.unwrap_or_default();
            let metadata = state
                .metadata
                .or(raw.metadata)
                .map(RawMeta::kept)
                .unwrap_or_default();
            PartKind::Tool(Box::new(tool_part(
                ToolFields {
                    tool: opt(raw.tool),
                    call_id: opt(raw.call_id),
                    status: state.status.as_ref().map(|s| s.0.as_ref()),
                    input: state.input.unwrap_or(Value::Null),
                    output: opt(state.output),
                    error: opt(state.error),
                    title: opt(state.title),
                    metadata,
                    time_start: time.start.as_ref().and_then(int),
                    time_end: time.end.as_ref().and_then(int),
                    time_compacted: time.compacted.as_ref().and_then(int),
                },
                id,
                diags,
            )))
        }
        // Rare types (and a missing type, which the lenient path reports) go the lenient way.
        _ => return Err(NotTaken),
    };
    Ok(Part {
        id: id.to_owned(),
        kind,
    })
}

/// `i()` of the lenient parser: an integer, or a finite number truncated.
pub(crate) fn int(n: &Number) -> Option<i64> {
    n.as_i64()
        .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

/// A JSON string, borrowed from the row when it has no escapes. Anything but a string fails.
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl Text<'_> {
    pub(crate) fn into_string(self) -> String {
        self.0.into_owned()
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A value that is only checked, as strictly as a `Value` would be built from it (numbers are
/// converted, so one out of `f64` range fails as it does there), but not kept.
pub(crate) struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Checked;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Checked, A::Error> {
                while a.next_element::<Checked>()?.is_some() {}
                Ok(Checked)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Checked, A::Error> {
                while a.next_entry::<Checked, Checked>()?.is_some() {}
                Ok(Checked)
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads a JSON object field by field: `$field` arms name the keys kept (a repeated key: the last
/// wins, as in a `Value`), every other key is [`Checked`].
macro_rules! object_visitor {
    ($ty:ident, $what:literal, { $($key:literal => $field:ident),* $(,)? }) => {
        impl<'de> Deserialize<'de> for $ty<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty<'de>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$ty<'de>, A::Error> {
                        let mut out = $ty::default();
                        while let Some(key) = map.next_key::<Text<'de>>()? {
                            match key.0.as_ref() {
                                $($key => out.$field = map.next_value()?,)*
                                _ => {
                                    map.next_value::<Checked>()?;
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

#[derive(Default)]
struct RawPart<'a> {
    ty: Option<Text<'a>>,
    text: Option<Text<'a>>,
    synthetic: Option<bool>,
    ignored: Option<bool>,
    metadata: Option<RawMeta<'a>>,
    mime: Option<Text<'a>>,
    filename: Option<Text<'a>>,
    url: Option<Text<'a>>,
    source: Option<Value>,
    snapshot: Option<Text<'a>>,
    reason: Option<Text<'a>>,
    cost: Option<Number>,
    tokens: Option<Value>,
    hash: Option<Text<'a>>,
    files: Option<Value>,
    tool: Option<Text<'a>>,
    call_id: Option<Text<'a>>,
    state: Option<RawState<'a>>,
}

object_visitor!(RawPart, "a part object", {
    "type" => ty, "text" => text, "synthetic" => synthetic, "ignored" => ignored,
    "metadata" => metadata, "mime" => mime, "filename" => filename, "url" => url,
    "source" => source, "snapshot" => snapshot, "reason" => reason, "cost" => cost,
    "tokens" => tokens, "hash" => hash, "files" => files, "tool" => tool, "callID" => call_id,
    "state" => state,
});

#[derive(Default)]
struct RawState<'a> {
    status: Option<Text<'a>>,
    input: Option<Value>,
    output: Option<Text<'a>>,
    error: Option<Text<'a>>,
    title: Option<Text<'a>>,
    metadata: Option<RawMeta<'a>>,
    time: Option<RawTime<'a>>,
}

object_visitor!(RawState, "a tool state object", {
    "status" => status, "input" => input, "output" => output, "error" => error,
    "title" => title, "metadata" => metadata, "time" => time,
});

/// The keys of a `metadata` object that are read (see [`ToolMetadata`]); the rest is only checked.
#[derive(Default)]
struct RawMeta<'a> {
    compaction_continue: Option<Value>,
    exit: Option<Value>,
    session_id: Option<Value>,
    structured_output: Option<Value>,
    _row: std::marker::PhantomData<&'a ()>,
}

object_visitor!(RawMeta, "a metadata object", {
    "compaction_continue" => compaction_continue, "exit" => exit, "sessionId" => session_id,
    "v2_structured_output" => structured_output,
});

impl RawMeta<'_> {
    fn kept(self) -> ToolMetadata {
        ToolMetadata::from_fields(
            self.exit.as_ref(),
            self.session_id.as_ref(),
            self.structured_output.as_ref(),
        )
    }
}

#[derive(Default)]
struct RawTime<'a> {
    start: Option<Number>,
    end: Option<Number>,
    compacted: Option<Number>,
    _row: std::marker::PhantomData<&'a ()>,
}

object_visitor!(RawTime, "a time object", {
    "start" => start, "end" => end, "compacted" => compacted,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structured_output_key_read_is_the_one_the_v2_loader_writes() {
        let data = format!(
            r#"{{"type":"tool","tool":"read","callID":"c","state":{{"status":"completed","output":"",
            "metadata":{{"{}":true,"exit":3,"sessionId":"ses_x","preview":"dropped"}}}}}}"#,
            crate::formats::opencode::v2::STRUCTURED_OUTPUT
        );
        let mut diags = Diagnostics::default();
        let part = read(&data, "prt_1", &mut diags).expect("taken");
        let PartKind::Tool(t) = part.kind else {
            panic!("a tool part")
        };
        assert_eq!(
            t.metadata,
            ToolMetadata {
                exit: Some(3),
                session_id: Some("ses_x".into()),
                structured_output: true
            }
        );
    }
}

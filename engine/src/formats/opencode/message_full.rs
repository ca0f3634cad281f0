//! The load's typed read of a `message.data` column. A `serde_json::Value` document per message
//! (an ordered map, a hashed owned key per field, then copies into the model) costs far more than
//! the few fields the model keeps are worth; here the fields
//! the model keeps are read straight from the text and only the keys it does not name are kept
//! as `Value`s (its `extra`).
//!
//! It takes a row only where it gives exactly what [`super::db::message_from_row`]'s lenient
//! reading gives, diagnostics included: a field of another type than OpenCode writes (a count as
//! a string, a `null` time, an unknown role) or text serde_json rejects is [`NotTaken`], and the
//! caller reads the row the lenient way. `tests/it/typed_rows.rs` holds the two readings equal on
//! every message row of every recording and on rows shaped to trip them.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Number, Value};

use super::message_row::{Num, Tokens};
use super::part_row::{int, Checked, NotTaken, Text};
use crate::formats::opencode::parse::{message_error, parse_model_ref};
use crate::trace::model::{Message, ModelRef, Role};

/// Read `data` as the message `id` of `session_id`; `time_column` is the row's `time_created`
/// column, which fills in a missing `time.created` as the lenient reading does.
pub fn read(
    data: &str,
    id: &str,
    session_id: &str,
    time_column: Option<i64>,
) -> Result<Message, NotTaken> {
    let raw: RawMessage<'_> = serde_json::from_str(data).map_err(|_| NotTaken)?;
    let role = match raw.role.as_ref().map(|r| r.0.as_ref()) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        // No role or an unknown one: the lenient reading skips the row with a diagnostic.
        _ => return Err(NotTaken),
    };
    let (created, completed) = match raw.time {
        None => (None, None),
        Some(t) => (t.created, t.completed),
    };
    let time_created = match created {
        Some(n) => int(&n).unwrap_or(0),
        None => time_column.unwrap_or(0),
    };
    let opt = |t: Option<Text<'_>>| t.map(Text::into_string);
    let model = parse_model_ref(raw.model.as_ref()).or_else(|| {
        Some(ModelRef {
            provider_id: opt(raw.provider_id)?,
            model_id: opt(raw.model_id)?,
        })
    });
    Ok(Message {
        id: id.to_owned(),
        session_id: session_id.to_owned(),
        role,
        time_created,
        time_completed: completed.as_ref().and_then(int),
        agent: opt(raw.agent).or_else(|| opt(raw.mode)),
        model,
        parent_id: opt(raw.parent_id),
        finish: opt(raw.finish),
        error: message_error(raw.error.as_ref()),
        summary: role == Role::Assistant && raw.summary,
        tokens: raw.tokens.map(|t| t.0),
        cost: raw
            .cost
            .and_then(|c| c.0.as_f64())
            .filter(|c| c.is_finite())
            .unwrap_or(0.0),
        parts: Vec::new(),
        user_kind: None,
        v2: false,
        cwd: crate::formats::opencode::parse::path_cwd(raw.path.as_ref()),
        dropped_after_own_requests: false,
    })
}

/// The message object. A string field read as `Option<Text>` reads `null` as none (as the lenient
/// `as_str` does) and fails on any other type; `time` must be an object when present, because
/// the lenient reading fills in the column's time only then.
#[derive(Default)]
struct RawMessage<'a> {
    role: Option<Text<'a>>,
    time: Option<RawTime>,
    agent: Option<Text<'a>>,
    mode: Option<Text<'a>>,
    model: Option<Value>,
    model_id: Option<Text<'a>>,
    provider_id: Option<Text<'a>>,
    parent_id: Option<Text<'a>>,
    finish: Option<Text<'a>>,
    error: Option<Value>,
    summary: bool,
    tokens: Option<Tokens>,
    cost: Option<Num>,
    path: Option<Value>,
}

impl<'de> Deserialize<'de> for RawMessage<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMessage<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawMessage<'de>, A::Error> {
                let mut out = RawMessage::default();
                // A repeated key: the last value wins, at the first one's place (as in a `Value`).
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "role" => out.role = Some(map.next_value()?),
                        "time" => out.time = Some(map.next_value()?),
                        "agent" => out.agent = map.next_value()?,
                        "mode" => out.mode = map.next_value()?,
                        "model" => out.model = map.next_value()?,
                        "modelID" => out.model_id = map.next_value()?,
                        "providerID" => out.provider_id = map.next_value()?,
                        "parentID" => out.parent_id = map.next_value()?,
                        "finish" => out.finish = map.next_value()?,
                        "error" => out.error = map.next_value()?,
                        "summary" => out.summary = map.next_value::<Flag>()?.0,
                        "tokens" => out.tokens = map.next_value()?,
                        "cost" => out.cost = map.next_value()?,
                        "path" => out.path = Some(map.next_value()?),
                        // `id` and `sessionID` (the row's columns give them) and every key this
                        // model does not name: only checked.
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

/// `time`: `created` a number when present (a `null` there stops the column filling it in, so
/// it is not taken), `completed` a number or `null`; other keys checked.
struct RawTime {
    created: Option<Number>,
    completed: Option<Number>,
}

impl<'de> Deserialize<'de> for RawTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawTime;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a time object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawTime, A::Error> {
                let mut out = RawTime {
                    created: None,
                    completed: None,
                };
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "created" => out.created = Some(map.next_value::<Num>()?.0),
                        "completed" => {
                            out.completed = map.next_value::<Option<Num>>()?.map(|n| n.0)
                        }
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

/// `summary`: a bool on an assistant (a compaction summary); a user's is an object of diffs,
/// read as `false` and only checked, as the lenient `as_bool` reads anything but a bool.
struct Flag(bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Flag, E> {
                Ok(Flag(b))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_seq<S: de::SeqAccess<'de>>(self, mut s: S) -> Result<Flag, S::Error> {
                while s.next_element::<Checked>()?.is_some() {}
                Ok(Flag(false))
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Flag, M::Error> {
                while m.next_entry::<Checked, Checked>()?.is_some() {}
                Ok(Flag(false))
            }
        }
        d.deserialize_any(V)
    }
}

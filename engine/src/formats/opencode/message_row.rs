//! The listing's read of a `message.data` column ([`crate::formats::opencode::listing`]): the role, the
//! summary flag, the recorded tokens and cost, `time.created` and `path.cwd`, straight from the
//! text, nothing allocated but the working directory. Every other key is checked as strictly as a
//! `serde_json::Value` would be built from it, so a row is taken only where the loader's lenient
//! reading ([`super::db::message_from_row`]) would read it as it is; and a field of another type
//! than OpenCode writes (a count as a string, a `null` time) is [`NotTaken`] rather than read by
//! rules of its own, so the caller loads that session in full.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Number;

use super::part_row::{Checked, NotTaken, Text};
use crate::formats::opencode::parse::MAX_TOKEN_COUNT;
use crate::trace::model::Usage;

/// What the listing reads of one message.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedMessage {
    pub id: String,
    pub assistant: bool,
    /// `time.created`, else the row's `time_created` column (as the loader fills it in).
    pub time_created: i64,
    /// `tokens` (an assistant's usage; zero when it has none).
    pub tokens: Usage,
    pub cost: f64,
    /// `path.cwd` when it is a non-empty string.
    pub cwd: Option<String>,
}

/// Read one message row. `Ok(None)`: a message the loader skips too (no known role).
pub fn read(
    data: &str,
    id: &str,
    time_column: Option<i64>,
) -> Result<Option<ListedMessage>, NotTaken> {
    let raw: RawMessage<'_> = serde_json::from_str(data).map_err(|_| NotTaken)?;
    let assistant = match raw.role.as_ref().map(|r| r.0.as_ref()) {
        Some("assistant") => true,
        Some("user") => false,
        _ => return Ok(None),
    };
    let time_created = match raw.time {
        None => time_column.unwrap_or(0),
        Some(t) => match t.created {
            None => time_column.unwrap_or(0),
            Some(n) => n.as_i64().ok_or(NotTaken)?,
        },
    };
    Ok(Some(ListedMessage {
        id: id.to_owned(),
        assistant,
        time_created,
        tokens: raw.tokens.map(|t| t.0).unwrap_or_default(),
        cost: raw.cost.and_then(|c| c.as_f64()).unwrap_or(0.0),
        cwd: raw.cwd,
    }))
}

#[derive(Default)]
struct RawMessage<'a> {
    role: Option<Text<'a>>,
    time: Option<RawTime>,
    tokens: Option<Tokens>,
    cost: Option<Number>,
    cwd: Option<String>,
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
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    // Each kept field must have the type OpenCode writes; `null` included, so a
                    // reading that differs from the lenient one fails instead.
                    match key.0.as_ref() {
                        "role" => out.role = Some(map.next_value()?),
                        "time" => out.time = Some(map.next_value()?),
                        "tokens" => out.tokens = Some(map.next_value()?),
                        "cost" => out.cost = Some(map.next_value::<Num>()?.0),
                        "path" => out.cwd = map.next_value::<Cwd>()?.0,
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

/// A number (not `null`).
pub(crate) struct Num(pub(crate) Number);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Num, E> {
                Ok(Num(n.into()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Num, E> {
                Ok(Num(n.into()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Num, E> {
                Number::from_f64(x)
                    .map(Num)
                    .ok_or_else(|| E::custom("not finite"))
            }
        }
        d.deserialize_any(V)
    }
}

/// A token count as the loader reads it without a diagnostic: a whole number up to
/// [`MAX_TOKEN_COUNT`].
fn count<E: de::Error>(n: Num) -> Result<u64, E> {
    n.0.as_u64()
        .filter(|n| *n <= MAX_TOKEN_COUNT)
        .ok_or_else(|| E::custom("not a plain token count"))
}

/// `{created}` of `time` (other keys checked).
struct RawTime {
    created: Option<Number>,
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
                let mut out = RawTime { created: None };
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if key.0 == "created" {
                        out.created = Some(map.next_value::<Num>()?.0);
                    } else {
                        map.next_value::<Checked>()?;
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// `{input, output, reasoning, cache: {read, write}}`, each a plain count (missing: 0).
pub(crate) struct Tokens(pub(crate) Usage);

impl<'de> Deserialize<'de> for Tokens {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tokens;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tokens object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tokens, A::Error> {
                let mut u = Usage::default();
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "input" => u.input = count(map.next_value()?)?,
                        "output" => u.output = count(map.next_value()?)?,
                        "reasoning" => u.reasoning = count(map.next_value()?)?,
                        "cache" => {
                            let c = map.next_value::<Cache>()?;
                            (u.cache_read, u.cache_write) = (c.read, c.write);
                        }
                        _ => {
                            map.next_value::<Checked>()?;
                        }
                    }
                }
                Ok(Tokens(u))
            }
        }
        d.deserialize_map(V)
    }
}

struct Cache {
    read: u64,
    write: u64,
}

impl<'de> Deserialize<'de> for Cache {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cache;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a cache object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cache, A::Error> {
                let mut c = Cache { read: 0, write: 0 };
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "read" => c.read = count(map.next_value()?)?,
                        "write" => c.write = count(map.next_value()?)?,
                        _ => {
                            map.next_value::<Checked>()?;
                        }
                    }
                }
                Ok(c)
            }
        }
        d.deserialize_map(V)
    }
}

/// `path.cwd` when `path` is an object whose `cwd` is a non-empty string (anything else: none,
/// as the loader reads it), every value checked.
struct Cwd(Option<String>);

impl<'de> Deserialize<'de> for Cwd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Cwd;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Cwd, A::Error> {
                let mut cwd = None;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if key.0 == "cwd" {
                        cwd = map.next_value::<CwdValue>()?.0;
                    } else {
                        map.next_value::<Checked>()?;
                    }
                }
                Ok(Cwd(cwd.filter(|c: &String| !c.is_empty())))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Cwd, E> {
                Ok(Cwd(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Cwd, E> {
                Ok(Cwd(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Cwd, E> {
                Ok(Cwd(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Cwd, E> {
                Ok(Cwd(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Cwd, E> {
                Ok(Cwd(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Cwd, E> {
                Ok(Cwd(None))
            }
            fn visit_seq<S: de::SeqAccess<'de>>(self, mut s: S) -> Result<Cwd, S::Error> {
                while s.next_element::<Checked>()?.is_some() {}
                Ok(Cwd(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// The value of `cwd`: kept when a string, else only checked.
struct CwdValue(Option<String>);

impl<'de> Deserialize<'de> for CwdValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CwdValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<CwdValue, E> {
                Ok(CwdValue(Some(s.to_owned())))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<CwdValue, E> {
                Ok(CwdValue(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<CwdValue, E> {
                Ok(CwdValue(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<CwdValue, E> {
                Ok(CwdValue(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<CwdValue, E> {
                Ok(CwdValue(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<CwdValue, E> {
                Ok(CwdValue(None))
            }
            fn visit_seq<S: de::SeqAccess<'de>>(self, mut s: S) -> Result<CwdValue, S::Error> {
                while s.next_element::<Checked>()?.is_some() {}
                Ok(CwdValue(None))
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<CwdValue, M::Error> {
                while m.next_entry::<Checked, Checked>()?.is_some() {}
                Ok(CwdValue(None))
            }
        }
        d.deserialize_any(V)
    }
}

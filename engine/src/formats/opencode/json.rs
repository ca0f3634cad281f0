//! The one reader of OpenCode's message and part JSON: database rows (from their text, on the
//! load's worker threads), JSON storage files and exports (from a parsed `Value`), and the
//! listing's read of a message row all go through [`RawMessage`] and [`RawPart`].
//!
//! Every field is read leniently, as OpenCode's own types are not always what it wrote: a field
//! of another type than expected is read by the nearest rule (a string field holding a number:
//! none; a token count written as a string: its number, reported), an unknown part type is kept
//! as [`PartKind::Unknown`] with its raw JSON, and a missing id or type is reported. Values the
//! model does not keep are only checked, as strictly as a `Value` would be built from them, so
//! text serde_json rejects fails the read from text; the caller then repairs it
//! ([`crate::trace::lenient`], reported) and reads the repaired `Value` here, by the same rules.
//!
//! From text, strings are borrowed where they have no escapes and nothing is built but what the
//! model keeps: a `Value` document per row costs far more than the few fields the model keeps.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::model::*;

/// The largest token count believed: no model reads a trillion tokens in one request, and
/// capping here keeps every sum over a session far from `u64` overflow.
pub const MAX_TOKEN_COUNT: u64 = 1_000_000_000_000;

/// The text was not read: it is not JSON serde_json accepts, or (for the listing) a field has
/// another type than OpenCode writes. The caller reads it another way.
#[derive(Debug)]
pub struct NotTaken;

/// The columns a database row gives beside its `data`: they win over the JSON's own.
pub(crate) struct MessageRow<'r> {
    pub id: &'r str,
    pub session_id: &'r str,
    /// The row's `time_created`: fills in a missing `time.created`.
    pub time_created: Option<i64>,
}

/// The columns of a `part` row; an unknown part type's raw JSON keeps them.
pub(crate) struct PartRow<'r> {
    pub id: &'r str,
    pub message_id: &'r str,
    pub session_id: &'r str,
}

// ---------------------------------------------------------------------------------------------
// Reading: from text, from a `Value`.

/// A message row's `data` read from its text; `Err` when serde_json rejects the text (then
/// repair it and use [`message_from_value`]). `Ok(None)`: skipped, with a diagnostic.
pub(crate) fn message_from_text(
    data: &str,
    row: &MessageRow<'_>,
    diags: &mut Diagnostics,
) -> Result<Option<Message>, NotTaken> {
    let raw: RawMessage<'_> = serde_json::from_str(data).map_err(|_| NotTaken)?;
    // A row always has its id, so the whole JSON is never asked for.
    Ok(message(raw, Some(row), &|| Value::Null, diags))
}

/// A message object (a storage file, an export's `info`, a repaired row); `row` (a database
/// row's columns) wins over the ids in the object. `None` (reported) without id or known role.
pub(crate) fn message_from_value(
    v: &Value,
    row: Option<&MessageRow<'_>>,
    diags: &mut Diagnostics,
) -> Option<Message> {
    let raw = object::<RawMessage<'_>>(v);
    message(raw, row, &|| v.clone(), diags)
}

/// A part row's `data` read from its text; `Err` when serde_json rejects the text (then repair
/// it and use [`part_from_value`]).
pub(crate) fn part_from_text(
    data: &str,
    row: &PartRow<'_>,
    diags: &mut Diagnostics,
) -> Result<Option<Part>, NotTaken> {
    let raw: RawPart<'_> = serde_json::from_str(data).map_err(|_| NotTaken)?;
    // Only an unknown part type keeps its JSON: built then, from the text (which parses, as the
    // typed read of it did), with the row's columns.
    let whole = || match serde_json::from_str::<Value>(data) {
        Ok(Value::Object(o)) => with_row_ids(o, row),
        _ => Value::Null,
    };
    Ok(part(raw, Some(row.id), &whole, diags))
}

/// A part object (a storage file, an export's part, a repaired row: `row` gives its columns).
/// `None` (reported) without id or type.
pub(crate) fn part_from_value(
    v: &Value,
    row: Option<&PartRow<'_>>,
    diags: &mut Diagnostics,
) -> Option<Part> {
    let raw = object::<RawPart<'_>>(v);
    let whole = || match (v, row) {
        (Value::Object(o), Some(row)) => with_row_ids(o.clone(), row),
        _ => v.clone(),
    };
    part(raw, row.map(|r| r.id), &whole, diags)
}

/// A part's JSON with its row's columns, in the order the database reading adds them.
fn with_row_ids(mut o: Map<String, Value>, row: &PartRow<'_>) -> Value {
    o.insert("sessionID".into(), Value::String(row.session_id.to_owned()));
    o.insert("id".into(), Value::String(row.id.to_owned()));
    o.insert("messageID".into(), Value::String(row.message_id.to_owned()));
    Value::Object(o)
}

/// `v` read as the object `T`; anything but an object reads as one without keys (its id is then
/// missing, which is reported).
fn object<'v, T: Deserialize<'v> + Default>(v: &'v Value) -> T {
    match Json::<T>::deserialize(v) {
        Ok(Json::Obj(t)) => t,
        _ => T::default(),
    }
}

/// `tokens` of a message or a step (`{input, output, reasoning, cache: {read, write}}`) from a
/// `Value`; `what` names the message or part in diagnostics. Anything but an object: no counts.
pub fn usage_from_value(v: &Value, what: &str, diags: &mut Diagnostics) -> Usage {
    usage(&object::<RawTokens<'_>>(v), what, diags)
}

/// A model reference (`{providerID, modelID}`, `id` for an older `modelID`); `None` unless both
/// are strings.
pub(crate) fn model_ref_from_value(v: Option<&Value>) -> Option<ModelRef> {
    match Json::<RawModel<'_>>::deserialize(v?) {
        Ok(Json::Obj(m)) => model_ref(&m),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// From the raw objects to the model, by the lenient rules.

fn short(v: &Value) -> String {
    crate::text::clip_chars(&v.to_string(), 160)
}

fn message(
    mut raw: RawMessage<'_>,
    row: Option<&MessageRow<'_>>,
    whole: &dyn Fn() -> Value,
    diags: &mut Diagnostics,
) -> Option<Message> {
    let id = match row {
        Some(r) => r.id.to_owned(),
        None => match s(raw.id.take()) {
            Some(id) => id,
            None => {
                diags.push(
                    DiagnosticKind::MissingField,
                    format!("message without id: {}", short(&whole())),
                );
                return None;
            }
        },
    };
    let role = match raw.role() {
        Ok(r) => r,
        Err(other) => {
            diags.push(
                DiagnosticKind::MissingField,
                format!("message {id}: unknown role {other:?}"),
            );
            return None;
        }
    };
    let time_created = match raw.created(row.and_then(|r| r.time_created)) {
        Created::Column(c) => c,
        Created::Json(c) => int_of(c),
        Created::NotAnObject => None,
    }
    .unwrap_or(0);
    let cwd = raw.cwd().map(str::to_owned);
    let time_completed = match &raw.time {
        Some(Json::Obj(t)) => int(&t.completed),
        _ => None,
    };
    let model = obj(&raw.model).and_then(model_ref).or_else(|| {
        Some(ModelRef {
            provider_id: s(raw.provider_id)?,
            model_id: s(raw.model_id)?,
        })
    });
    let error = match raw.error {
        None | Some(Json::Null) => None,
        Some(Json::Obj(e)) => Some(MessageError {
            name: s(e.name).unwrap_or_else(|| "UnknownError".into()),
            message: match e.data {
                Some(Json::Obj(d)) => s(d.message),
                _ => None,
            }
            .or_else(|| s(e.message)),
        }),
        Some(_) => Some(MessageError {
            name: "UnknownError".into(),
            message: None,
        }),
    };
    // `summary` is a bool on assistants; on users it is an object of diffs (not a compaction).
    let summary = role == Role::Assistant && flag(&raw.summary);
    let tokens = obj(&raw.tokens).map(|t| usage(t, &format!("message {id}"), diags));
    Some(Message {
        session_id: match row {
            Some(r) => r.session_id.to_owned(),
            None => s(raw.session_id).unwrap_or_default(),
        },
        role,
        time_created,
        time_completed,
        agent: s(raw.agent).or_else(|| s(raw.mode)),
        model,
        parent_id: s(raw.parent_id),
        finish: s(raw.finish),
        error,
        summary,
        tokens,
        cost: float(&raw.cost),
        parts: Vec::new(),
        user_kind: None,
        own_history: false,
        cwd,
        id,
        dropped_after_own_requests: false,
        system: stored_system(role, raw.system),
    })
}

/// The system prompt an assistant message was sent with, where the release stored it: 0.1.x in
/// `metadata.assistant.system`, 0.2–0.5 (and a 0.1.x session those releases migrated) as
/// `system`, one string per system message. A user's `system` (a custom prompt, 1.x) is not it.
fn stored_system(role: Role, system: Option<Any<'_>>) -> Option<StoredSystem> {
    match system {
        Some(Json::Seq(texts)) if role == Role::Assistant && !texts.is_empty() => {
            Some(StoredSystem {
                texts: texts.into_iter().map(Cow::into_owned).collect(),
                tokens: None,
                shared_with_previous: None,
            })
        }
        _ => None,
    }
}

/// See [`RawMessage::created`].
enum Created<'f, 'a> {
    Column(Option<i64>),
    Json(&'f Any<'a>),
    /// `time` is not an object: no time.
    NotAnObject,
}

impl<'a> RawMessage<'a> {
    fn role(&self) -> Result<Role, Option<&str>> {
        role_of(&self.role)
    }
    fn created(&self, column: Option<i64>) -> Created<'_, 'a> {
        created_of(&self.time, column)
    }
    fn cwd(&self) -> Option<&str> {
        cwd_of(&self.path)
    }
}

/// `user` or `assistant`; else the role found (a string, or none).
fn role_of<'f>(role: &'f Option<Any<'_>>) -> Result<Role, Option<&'f str>> {
    match str_of(role) {
        Some("user") => Ok(Role::User),
        Some("assistant") => Ok(Role::Assistant),
        other => Err(other),
    }
}

/// Where `time.created` comes from: the row's `time_created` column when `time` is missing or
/// an object without `created` (the column mirrors it), else the JSON.
fn created_of<'f, 'a>(
    time: &'f Option<Json<'a, RawMessageTime<'a>>>,
    column: Option<i64>,
) -> Created<'f, 'a> {
    match time {
        None => Created::Column(column),
        Some(Json::Obj(t)) => match &t.created {
            None => Created::Column(column),
            Some(c) => Created::Json(c),
        },
        Some(_) => Created::NotAnObject,
    }
}

/// `path.cwd` when a non-empty string.
fn cwd_of<'f>(path: &'f Option<Json<'_, RawPath<'_>>>) -> Option<&'f str> {
    obj(path)
        .and_then(|p| str_of(&p.cwd))
        .filter(|c| !c.is_empty())
}

/// What the listing reads of one message row ([`super::listing`]): taken only where every field
/// it reads has the type OpenCode writes, so the line equals a full load's; any other row
/// ([`NotTaken`]) has its session loaded in full. `Ok(None)`: a message the loader skips too
/// (no known role).
pub fn listed_from_text(
    data: &str,
    id: &str,
    time_column: Option<i64>,
) -> Result<Option<super::listing::ListedMessage>, NotTaken> {
    let raw: RawListed<'_> = serde_json::from_str(data).map_err(|_| NotTaken)?;
    if matches!(raw.role, Some(ref r) if !matches!(r, Json::Str(_))) {
        return Err(NotTaken);
    }
    let time_created = match created_of(&raw.time, time_column) {
        Created::Column(c) => c.unwrap_or(0),
        Created::Json(Json::Num(n)) => n.as_i64().ok_or(NotTaken)?,
        Created::Json(_) | Created::NotAnObject => return Err(NotTaken),
    };
    let plain = |c: &Option<Count>| match c {
        None => Ok(0),
        Some(Count::Plain(n)) => Ok(*n),
        Some(Count::Odd(_)) => Err(NotTaken),
    };
    let tokens = match &raw.tokens {
        None => Usage::default(),
        Some(Json::Obj(t)) => {
            let (cache_read, cache_write) = match &t.cache {
                None => (0, 0),
                Some(Json::Obj(c)) => (plain(&c.read)?, plain(&c.write)?),
                Some(_) => return Err(NotTaken),
            };
            Usage {
                input: plain(&t.input)?,
                output: plain(&t.output)?,
                reasoning: plain(&t.reasoning)?,
                cache_read,
                cache_write,
            }
        }
        Some(_) => return Err(NotTaken),
    };
    let cost = match &raw.cost {
        None => 0.0,
        Some(Json::Num(_)) => float(&raw.cost),
        Some(_) => return Err(NotTaken),
    };
    let assistant = match role_of(&raw.role) {
        Ok(r) => r == Role::Assistant,
        Err(_) => return Ok(None),
    };
    Ok(Some(super::listing::ListedMessage {
        id: id.to_owned(),
        assistant,
        time_created,
        tokens,
        cost,
        cwd: cwd_of(&raw.path).map(str::to_owned),
    }))
}

fn model_ref(m: &RawModel<'_>) -> Option<ModelRef> {
    Some(ModelRef {
        provider_id: str_of(&m.provider_id)?.to_owned(),
        model_id: str_of(&m.model_id).or_else(|| str_of(&m.id))?.to_owned(),
    })
}

/// One token count. A missing key is 0 (older versions omit `reasoning`); anything but a
/// non-negative integer is read as the nearest count — a numeric string as its number, a
/// fraction rounded down, a negative number, `null` or another type as 0, a count above
/// [`MAX_TOKEN_COUNT`] as that — with a `bad_token_count` diagnostic naming `what` and the key.
fn token_count(
    x: Option<&Count>,
    key: &str,
    what: &dyn Fn() -> String,
    diags: &mut Diagnostics,
) -> u64 {
    let x = match x {
        None => return 0,
        Some(Count::Plain(n)) => return *n,
        Some(Count::Odd(x)) => x,
    };
    let saturated = |n: u64| n.min(MAX_TOKEN_COUNT);
    let (n, problem) = match x {
        Value::Number(num) => match (num.as_u64(), num.as_i64(), num.as_f64()) {
            (Some(n), _, _) if n <= MAX_TOKEN_COUNT => return n,
            (Some(n), _, _) => (saturated(n), "out of range"),
            (None, Some(_), _) => (0, "negative"),
            (_, _, Some(f)) if f < 0.0 => (0, "negative"),
            (_, _, Some(f)) if f > MAX_TOKEN_COUNT as f64 => (MAX_TOKEN_COUNT, "out of range"),
            (_, _, Some(f)) if f.fract() == 0.0 => return f as u64,
            (_, _, Some(f)) => (f as u64, "not a whole number"),
            _ => (0, "not a number"),
        },
        Value::String(t) => match t.trim().parse::<u64>() {
            Ok(n) => (saturated(n), "a string"),
            Err(_) => (0, "a string that is not a count"),
        },
        Value::Null => (0, "null"),
        _ => (0, "not a number"),
    };
    diags.push(
        DiagnosticKind::BadTokenCount,
        format!(
            "{}: token count {key} = {} is {problem}; read as {n}",
            what(),
            crate::text::clip_chars(&x.to_string(), 40)
        ),
    );
    n
}

/// `{input, output, reasoning, cache: {read, write}}` → [`Usage`] (see [`token_count`]).
fn usage(t: &RawTokens<'_>, what: &str, diags: &mut Diagnostics) -> Usage {
    let plain = &|| what.to_owned();
    let cached = &|| format!("{what} (cache)");
    let cache = obj(&t.cache);
    Usage {
        input: token_count(t.input.as_ref(), "input", plain, diags),
        output: token_count(t.output.as_ref(), "output", plain, diags),
        reasoning: token_count(t.reasoning.as_ref(), "reasoning", plain, diags),
        cache_read: token_count(cache.and_then(|c| c.read.as_ref()), "read", cached, diags),
        cache_write: token_count(cache.and_then(|c| c.write.as_ref()), "write", cached, diags),
    }
}

fn part(
    mut raw: RawPart<'_>,
    row_id: Option<&str>,
    whole: &dyn Fn() -> Value,
    diags: &mut Diagnostics,
) -> Option<Part> {
    let id = match row_id {
        Some(id) => id.to_owned(),
        None => match s(raw.id.take()) {
            Some(id) => id,
            None => {
                diags.push(
                    DiagnosticKind::MissingField,
                    format!("part without id: {}", short(&whole())),
                );
                return None;
            }
        },
    };
    let ty = raw.ty.take();
    let Some(ty) = str_of(&ty) else {
        diags.push(
            DiagnosticKind::MissingField,
            format!("part {id} without type"),
        );
        return None;
    };
    let kind = match ty {
        "text" => PartKind::Text {
            text: s(raw.text).unwrap_or_default(),
            synthetic: flag(&raw.synthetic),
            ignored: flag(&raw.ignored),
            compaction_continue: obj(&raw.metadata).is_some_and(|m| flag(&m.compaction_continue)),
        },
        "reasoning" => PartKind::Reasoning {
            text: s(raw.text).unwrap_or_default(),
        },
        "file" => PartKind::File {
            mime: s(raw.mime).unwrap_or_default(),
            filename: s(raw.filename),
            url: s(raw.url).unwrap_or_default(),
            source_text: match raw.source {
                Some(Json::Obj(src)) => match src.text {
                    Some(Json::Str(t)) => Some(t.into_owned()),
                    Some(Json::Obj(t)) => s(t.value),
                    _ => None,
                },
                _ => None,
            },
        },
        "agent" => PartKind::AgentMention {
            name: s(raw.name).unwrap_or_default(),
        },
        "compaction" => PartKind::Compaction(CompactionPart {
            auto: flag(&raw.auto),
            overflow: flag(&raw.overflow),
            tail_start_id: s(raw.tail_start_id),
        }),
        "subtask" => PartKind::Subtask {
            prompt: s(raw.prompt).unwrap_or_default(),
            description: s(raw.description).unwrap_or_default(),
            agent: s(raw.agent).unwrap_or_default(),
        },
        "retry" => PartKind::Retry {
            attempt: count(&raw.attempt),
            error: raw.error.as_ref().map(|e| {
                e.get("data")
                    .and_then(|d| d.get("message"))
                    .and_then(Value::as_str)
                    .map_or_else(|| short(e), str::to_owned)
            }),
        },
        "step-start" => PartKind::StepStart {
            snapshot: s(raw.snapshot),
        },
        "step-finish" => PartKind::StepFinish {
            reason: s(raw.reason),
            cost: float(&raw.cost),
            tokens: obj(&raw.tokens).map(|t| usage(t, &format!("part {id}"), diags)),
        },
        "snapshot" => PartKind::WorkspaceSnapshot {
            snapshot: s(raw.snapshot).unwrap_or_default(),
        },
        "patch" => PartKind::FilesChanged {
            hash: s(raw.hash).unwrap_or_default(),
            files: match raw.files {
                Some(Json::Seq(files)) => files.into_iter().map(Cow::into_owned).collect(),
                _ => Vec::new(),
            },
        },
        "tool" => PartKind::Tool(Box::new(tool(raw, &id, diags))),
        other => {
            diags.push(
                DiagnosticKind::UnknownPartType,
                format!("part {id}: unknown type {other:?} (kept as raw JSON)"),
            );
            PartKind::Unknown {
                type_name: other.to_owned(),
                raw: whole(),
            }
        }
    };
    Some(Part { id, kind })
}

/// A tool part, with the diagnostics of an unknown status or a missing output.
fn tool(raw: RawPart<'_>, part_id: &str, diags: &mut Diagnostics) -> ToolPart {
    let mut state = match raw.state {
        Some(Json::Obj(st)) => st,
        _ => RawState::default(),
    };
    // `state.metadata` unless missing or `null`, else the part's own `metadata`.
    let metadata = match state.metadata.take() {
        None | Some(Json::Null) => raw.metadata,
        m => m,
    };
    let metadata = match metadata {
        Some(Json::Obj(m)) => ToolMetadata {
            exit: num(&m.exit).and_then(Number::as_i64),
            session_id: s(m.session_id),
            structured_output: flag(&m.structured_output),
        },
        _ => ToolMetadata::default(),
    };
    let time = obj(&state.time);
    let status = match str_of(&state.status) {
        Some("pending") => ToolStatus::Pending,
        Some("running") => ToolStatus::Running,
        Some("completed") => ToolStatus::Completed,
        Some("error") => ToolStatus::Error,
        other => {
            diags.push(
                DiagnosticKind::UnknownToolStatus,
                format!("tool part {part_id}: status {other:?}"),
            );
            ToolStatus::Unknown
        }
    };
    let tool = s(raw.tool).unwrap_or_else(|| "unknown".into());
    let (output, error) = (s(state.output), s(state.error));
    match (status, &output, &error) {
        (ToolStatus::Completed, None, _) => diags.push(
            DiagnosticKind::MissingField,
            format!("tool part {part_id} ({tool}): completed without output"),
        ),
        (ToolStatus::Error, _, None) => diags.push(
            DiagnosticKind::MissingField,
            format!("tool part {part_id} ({tool}): error without an error message"),
        ),
        _ => {}
    }
    ToolPart {
        call_id: s(raw.call_id).unwrap_or_default(),
        alias: None,
        tool,
        status,
        input: state.input.unwrap_or(Value::Null),
        output,
        error,
        title: s(state.title),
        metadata,
        time_start: time.and_then(|t| int(&t.start)),
        time_end: time.and_then(|t| int(&t.end)),
        time_compacted: time.and_then(|t| int(&t.compacted)),
    }
}

// ---------------------------------------------------------------------------------------------
// The lenient rules of one field (a missing key reads as a value of another type).

/// A string field: the string, else none.
fn s<T>(f: Option<Json<'_, T>>) -> Option<String> {
    match f {
        Some(Json::Str(s)) => Some(s.into_owned()),
        _ => None,
    }
}

fn str_of<'f, T>(f: &'f Option<Json<'_, T>>) -> Option<&'f str> {
    match f {
        Some(Json::Str(s)) => Some(s),
        _ => None,
    }
}

fn num<'f, T>(f: &'f Option<Json<'_, T>>) -> Option<&'f Number> {
    match f {
        Some(Json::Num(n)) => Some(n),
        _ => None,
    }
}

fn obj<'f, T>(f: &'f Option<Json<'_, T>>) -> Option<&'f T> {
    match f {
        Some(Json::Obj(o)) => Some(o),
        _ => None,
    }
}

/// A bool field: `true` only when `true`.
fn flag<T>(f: &Option<Json<'_, T>>) -> bool {
    matches!(f, Some(Json::Bool(true)))
}

/// A time: an integer, or a finite number truncated; else none.
fn int<T>(f: &Option<Json<'_, T>>) -> Option<i64> {
    f.as_ref().and_then(int_of)
}

fn int_of<T>(f: &Json<'_, T>) -> Option<i64> {
    let Json::Num(n) = f else { return None };
    n.as_i64()
        .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

/// A count: a non-negative integer, or a finite non-negative number truncated; else 0.
fn count<T>(f: &Option<Json<'_, T>>) -> u64 {
    num(f)
        .and_then(|n| {
            n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            })
        })
        .unwrap_or(0)
}

/// A cost: a finite number, else 0.
fn float<T>(f: &Option<Json<'_, T>>) -> f64 {
    num(f)
        .and_then(Number::as_f64)
        .filter(|x| x.is_finite())
        .unwrap_or(0.0)
}

// ---------------------------------------------------------------------------------------------
// The JSON shapes. Each field is `None` when its key is missing; a repeated key: the last wins,
// as in a `Value`.

/// Any JSON value, kept as far as a lenient field needs it: an object as `T`, an array as its
/// string elements (the rest checked), a string borrowed from the text where it has no escapes.
pub(crate) enum Json<'a, T> {
    Null,
    Bool(bool),
    Num(Number),
    Str(Cow<'a, str>),
    Seq(Vec<Cow<'a, str>>),
    Obj(T),
}

/// A field whose objects are only checked.
type Any<'a> = Json<'a, Checked>;

/// A token count: a plain one (a whole number up to [`MAX_TOKEN_COUNT`]), or any other value
/// kept as its JSON, to be read as the nearest count and reported.
pub(crate) enum Count {
    Plain(u64),
    Odd(Value),
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Count, E> {
                Ok(if n <= MAX_TOKEN_COUNT {
                    Count::Plain(n)
                } else {
                    Count::Odd(n.into())
                })
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Count, E> {
                Ok(Count::Odd(n.into()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Count, E> {
                Number::from_f64(x)
                    .map(|n| Count::Odd(Value::Number(n)))
                    .ok_or_else(|| E::custom("not finite"))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Count, E> {
                Ok(Count::Odd(Value::Bool(b)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Count, E> {
                Ok(Count::Odd(Value::String(s.to_owned())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count::Odd(Value::Null))
            }
            fn visit_none<E: de::Error>(self) -> Result<Count, E> {
                Ok(Count::Odd(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Count, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(a)).map(Count::Odd)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Count, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(a)).map(Count::Odd)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Json<'de, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Json<'de, T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Self::Value, E> {
                // serde_json gives only finite numbers; a `Value` would refuse another.
                Number::from_f64(x)
                    .map(Json::Num)
                    .ok_or_else(|| E::custom("not finite"))
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Json::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Json::Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Json::Str(Cow::Owned(s)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Json::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Json::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut strings = Vec::new();
                while let Some(x) = a.next_element::<Any<'de>>()? {
                    if let Json::Str(s) = x {
                        strings.push(s);
                    }
                }
                Ok(Json::Seq(strings))
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(a)).map(Json::Obj)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A JSON string (a key). Anything but a string fails.
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

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
            fn visit_none<E: de::Error>(self) -> Result<Checked, E> {
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

/// Reads a JSON object field by field: each key named sets its field (`Some`, whatever the
/// value's type), every other key is [`Checked`].
macro_rules! object {
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
                                $($key => out.$field = Some(map.next_value()?),)*
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

/// A message (`MessageV2.Info`).
#[derive(Default)]
pub(crate) struct RawMessage<'a> {
    id: Option<Any<'a>>,
    session_id: Option<Any<'a>>,
    role: Option<Any<'a>>,
    time: Option<Json<'a, RawMessageTime<'a>>>,
    agent: Option<Any<'a>>,
    mode: Option<Any<'a>>,
    model: Option<Json<'a, RawModel<'a>>>,
    model_id: Option<Any<'a>>,
    provider_id: Option<Any<'a>>,
    parent_id: Option<Any<'a>>,
    finish: Option<Any<'a>>,
    error: Option<Json<'a, RawError<'a>>>,
    summary: Option<Any<'a>>,
    tokens: Option<Json<'a, RawTokens<'a>>>,
    cost: Option<Any<'a>>,
    path: Option<Json<'a, RawPath<'a>>>,
    system: Option<Any<'a>>,
}

object!(RawMessage, "a message object", {
    "id" => id, "sessionID" => session_id, "role" => role, "time" => time, "agent" => agent,
    "mode" => mode, "model" => model, "modelID" => model_id, "providerID" => provider_id,
    "parentID" => parent_id, "finish" => finish, "error" => error, "summary" => summary,
    "tokens" => tokens, "cost" => cost, "path" => path, "system" => system,
});

/// The keys of a message the listing reads ([`listed_from_text`]), read as [`RawMessage`] reads
/// them; the others only checked (a listing reads tens of thousands of rows).
#[derive(Default)]
pub(crate) struct RawListed<'a> {
    role: Option<Any<'a>>,
    time: Option<Json<'a, RawMessageTime<'a>>>,
    tokens: Option<Json<'a, RawTokens<'a>>>,
    cost: Option<Any<'a>>,
    path: Option<Json<'a, RawPath<'a>>>,
}

object!(RawListed, "a message object", {
    "role" => role, "time" => time, "tokens" => tokens, "cost" => cost, "path" => path,
});

#[derive(Default)]
pub(crate) struct RawMessageTime<'a> {
    created: Option<Any<'a>>,
    completed: Option<Any<'a>>,
}

object!(RawMessageTime, "a time object", { "created" => created, "completed" => completed });

#[derive(Default)]
pub(crate) struct RawModel<'a> {
    provider_id: Option<Any<'a>>,
    model_id: Option<Any<'a>>,
    id: Option<Any<'a>>,
}

object!(RawModel, "a model object", {
    "providerID" => provider_id, "modelID" => model_id, "id" => id,
});

#[derive(Default)]
pub(crate) struct RawError<'a> {
    name: Option<Any<'a>>,
    data: Option<Json<'a, RawErrorData<'a>>>,
    message: Option<Any<'a>>,
}

object!(RawError, "an error object", { "name" => name, "data" => data, "message" => message });

#[derive(Default)]
pub(crate) struct RawErrorData<'a> {
    message: Option<Any<'a>>,
}

object!(RawErrorData, "an error's data", { "message" => message });

/// Token counts: see [`Count`].
#[derive(Default)]
pub(crate) struct RawTokens<'a> {
    input: Option<Count>,
    output: Option<Count>,
    reasoning: Option<Count>,
    cache: Option<Json<'a, RawCache<'a>>>,
}

object!(RawTokens, "a tokens object", {
    "input" => input, "output" => output, "reasoning" => reasoning, "cache" => cache,
});

#[derive(Default)]
pub(crate) struct RawCache<'a> {
    read: Option<Count>,
    write: Option<Count>,
    _text: PhantomData<&'a ()>,
}

object!(RawCache, "a cache object", { "read" => read, "write" => write });

#[derive(Default)]
pub(crate) struct RawPath<'a> {
    cwd: Option<Any<'a>>,
}

object!(RawPath, "a path object", { "cwd" => cwd });

/// A part (`MessageV2.Part`): the fields of every part type.
#[derive(Default)]
pub(crate) struct RawPart<'a> {
    id: Option<Any<'a>>,
    ty: Option<Any<'a>>,
    text: Option<Any<'a>>,
    synthetic: Option<Any<'a>>,
    ignored: Option<Any<'a>>,
    metadata: Option<Json<'a, RawMeta<'a>>>,
    mime: Option<Any<'a>>,
    filename: Option<Any<'a>>,
    url: Option<Any<'a>>,
    source: Option<Json<'a, RawSource<'a>>>,
    name: Option<Any<'a>>,
    auto: Option<Any<'a>>,
    overflow: Option<Any<'a>>,
    tail_start_id: Option<Any<'a>>,
    prompt: Option<Any<'a>>,
    description: Option<Any<'a>>,
    agent: Option<Any<'a>>,
    attempt: Option<Any<'a>>,
    /// A retry's error: reported as its JSON when it has no message.
    error: Option<Value>,
    snapshot: Option<Any<'a>>,
    reason: Option<Any<'a>>,
    cost: Option<Any<'a>>,
    tokens: Option<Json<'a, RawTokens<'a>>>,
    hash: Option<Any<'a>>,
    files: Option<Any<'a>>,
    tool: Option<Any<'a>>,
    call_id: Option<Any<'a>>,
    state: Option<Json<'a, RawState<'a>>>,
}

object!(RawPart, "a part object", {
    "id" => id, "type" => ty, "text" => text, "synthetic" => synthetic, "ignored" => ignored,
    "metadata" => metadata, "mime" => mime, "filename" => filename, "url" => url,
    "source" => source, "name" => name, "auto" => auto, "overflow" => overflow,
    "tail_start_id" => tail_start_id, "prompt" => prompt, "description" => description,
    "agent" => agent, "attempt" => attempt, "error" => error, "snapshot" => snapshot,
    "reason" => reason, "cost" => cost, "tokens" => tokens, "hash" => hash, "files" => files,
    "tool" => tool, "callID" => call_id, "state" => state,
});

/// A part's or a tool state's `metadata`: the keys read (see [`ToolMetadata`]).
#[derive(Default)]
pub(crate) struct RawMeta<'a> {
    compaction_continue: Option<Any<'a>>,
    exit: Option<Any<'a>>,
    session_id: Option<Any<'a>>,
    structured_output: Option<Any<'a>>,
}

object!(RawMeta, "a metadata object", {
    "compaction_continue" => compaction_continue, "exit" => exit, "sessionId" => session_id,
    "v2_structured_output" => structured_output,
});

/// A file part's `source`: its `text` a string or `{value}`.
#[derive(Default)]
pub(crate) struct RawSource<'a> {
    text: Option<Json<'a, RawSourceText<'a>>>,
}

object!(RawSource, "a source object", { "text" => text });

#[derive(Default)]
pub(crate) struct RawSourceText<'a> {
    value: Option<Any<'a>>,
}

object!(RawSourceText, "a source text object", { "value" => value });

#[derive(Default)]
pub(crate) struct RawState<'a> {
    status: Option<Any<'a>>,
    input: Option<Value>,
    output: Option<Any<'a>>,
    error: Option<Any<'a>>,
    title: Option<Any<'a>>,
    metadata: Option<Json<'a, RawMeta<'a>>>,
    time: Option<Json<'a, RawToolTime<'a>>>,
}

object!(RawState, "a tool state object", {
    "status" => status, "input" => input, "output" => output, "error" => error,
    "title" => title, "metadata" => metadata, "time" => time,
});

#[derive(Default)]
pub(crate) struct RawToolTime<'a> {
    start: Option<Any<'a>>,
    end: Option<Any<'a>>,
    compacted: Option<Any<'a>>,
}

object!(RawToolTime, "a time object", {
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
            super::super::v2::STRUCTURED_OUTPUT
        );
        let row = PartRow {
            id: "prt_1",
            message_id: "msg_1",
            session_id: "ses_1",
        };
        let mut diags = Diagnostics::default();
        let part = part_from_text(&data, &row, &mut diags)
            .ok()
            .flatten()
            .expect("read");
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

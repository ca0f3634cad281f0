//! The records of a Claude Code session file, typed: one JSON object per line, its kind in
//! `type`. Only the fields tierscope reads are named; every field is optional or defaulted, so a
//! release that adds or drops a field still loads. A kind this reader does not know
//! (`queue-operation`, `last-prompt`, `mode`, `file-history-snapshot`, …, or one a later
//! release adds) is kept as [`Record::Other`] with its raw value.

use serde::de::Deserializer;
use serde::Deserialize;
use serde_json::Value;

/// One line of a session file.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    User(UserRecord),
    Assistant(AssistantRecord),
    System(SystemRecord),
    Attachment(AttachmentRecord),
    /// `{"type": "summary", "summary", "leafUuid"}`: a title for the conversation ending at
    /// `leafUuid` (which may be another session's).
    Summary(SummaryRecord),
    /// `{"type": "ai-title", "aiTitle"}`: the title the CLI had the model write.
    AiTitle(AiTitleRecord),
    /// Any other kind, as written (`kind` is its `type`, empty when it has none).
    Other {
        kind: String,
        raw: Value,
    },
}

/// The kinds [`Record`] types; a line of one of them that does not fit its type is damage, not
/// an unknown kind.
pub const TYPED_KINDS: &[&str] = &[
    "user",
    "assistant",
    "system",
    "attachment",
    "summary",
    "ai-title",
];

impl Record {
    /// Read one parsed line. `Err` (with serde's reason) when its `type` is one of
    /// [`TYPED_KINDS`] but the record does not have that kind's shape.
    pub fn from_value(v: Value) -> Result<Record, (String, serde_json::Error)> {
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let typed = |r: Result<Record, serde_json::Error>| r.map_err(|e| (kind.clone(), e));
        match kind.as_str() {
            "user" => typed(serde_json::from_value(v).map(Record::User)),
            "assistant" => typed(serde_json::from_value(v).map(Record::Assistant)),
            "system" => typed(serde_json::from_value(v).map(Record::System)),
            "attachment" => typed(serde_json::from_value(v).map(Record::Attachment)),
            "summary" => typed(serde_json::from_value(v).map(Record::Summary)),
            "ai-title" => typed(serde_json::from_value(v).map(Record::AiTitle)),
            _ => Ok(Record::Other { kind, raw: v }),
        }
    }

    /// The fields every conversation record carries (none for summaries, titles and
    /// bookkeeping records).
    pub fn common(&self) -> Option<&Common> {
        match self {
            Record::User(r) => Some(&r.common),
            Record::Assistant(r) => Some(&r.common),
            Record::System(r) => Some(&r.common),
            Record::Attachment(r) => Some(&r.common),
            Record::Summary(_) | Record::AiTitle(_) | Record::Other { .. } => None,
        }
    }

    /// The record's `uuid`, when it is a node of the conversation DAG.
    pub fn uuid(&self) -> Option<&str> {
        self.common()
            .and_then(|c| c.uuid.as_deref())
            .filter(|u| !u.is_empty())
    }

    /// The kind, as written in `type`.
    pub fn kind(&self) -> &str {
        match self {
            Record::User(_) => "user",
            Record::Assistant(_) => "assistant",
            Record::System(_) => "system",
            Record::Attachment(_) => "attachment",
            Record::Summary(_) => "summary",
            Record::AiTitle(_) => "ai-title",
            Record::Other { kind, .. } => kind,
        }
    }
}

/// The envelope of a conversation record.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Common {
    pub uuid: Option<String>,
    pub parent_uuid: Option<String>,
    /// A compaction boundary's link to the record before it (its `parentUuid` is null).
    pub logical_parent_uuid: Option<String>,
    pub session_id: Option<String>,
    /// ISO 8601, as written.
    pub timestamp: Option<String>,
    pub cwd: Option<String>,
    /// The Claude Code release that wrote the record.
    pub version: Option<String>,
    pub git_branch: Option<String>,
    /// True in a sub-agent's transcript.
    pub is_sidechain: bool,
    /// The sub-agent that wrote the record (sidechains).
    pub agent_id: Option<String>,
    /// Context the CLI adds that the user did not type (caveats, reminders).
    pub is_meta: bool,
}

/// A message's `content`: a plain string or content blocks.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Blocks(Vec::new())
    }
}

impl Content {
    pub fn blocks(&self) -> &[Block] {
        match self {
            Content::Text(_) => &[],
            Content::Blocks(b) => b,
        }
    }

    /// The text the message holds (string content, or its text blocks joined by newlines).
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Blocks(b) => b
                .iter()
                .filter_map(|b| match b {
                    Block::Known(KnownBlock::Text { text }) => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// One content block, in the Anthropic Messages API's form.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Block {
    Known(KnownBlock),
    /// A block type this reader does not know (`image`, `document`, server tools, …).
    Other(Value),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum KnownBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {},
    ToolUse {
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        /// A string or content blocks.
        #[serde(default)]
        content: Value,
        #[serde(default, deserialize_with = "lenient_bool")]
        is_error: bool,
    },
}

/// A `user` record: a prompt, tool results, a compaction summary, or context the CLI added.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UserRecord {
    #[serde(flatten)]
    pub common: Common,
    pub message: UserMessage,
    /// The summary that opens the context after a compaction.
    pub is_compact_summary: bool,
    pub is_visible_in_transcript_only: bool,
    /// The tool's own structured result, beside the API form in `message.content`, with its
    /// long texts left out ([`slim`]: a command's stdout or a file read is also in the
    /// `tool_result` the model saw, and kept there).
    #[serde(deserialize_with = "slim_value")]
    pub tool_use_result: Option<Value>,
    /// The assistant record whose tool call this answers.
    #[serde(rename = "sourceToolAssistantUUID")]
    pub source_tool_assistant_uuid: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct UserMessage {
    pub content: Content,
}

/// An `assistant` record: one content block of an API response (a response of three blocks is
/// three records sharing `message.id`, `requestId` and `usage`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AssistantRecord {
    #[serde(flatten)]
    pub common: Common,
    pub message: AssistantMessage,
    pub request_id: Option<String>,
    /// An API error the CLI turned into a message (`model: "<synthetic>"`).
    #[serde(deserialize_with = "lenient_bool")]
    pub is_api_error_message: bool,
    /// The error's kind, when the CLI recorded one (`"rate_limit"`, `"unknown"`, …).
    pub error: Option<Value>,
    /// The HTTP status of an API error.
    #[serde(deserialize_with = "lenient_u64")]
    pub api_error_status: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct AssistantMessage {
    pub id: Option<String>,
    pub model: Option<String>,
    pub content: Content,
    pub stop_reason: Option<String>,
    pub usage: Option<RawUsage>,
}

/// The model the CLI writes on messages it made itself (API errors, "No response requested.").
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// `usage` as Claude Code stores it (the Anthropic API's): counts are read leniently (see
/// [`Count`]); normalized in [`super::usage`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RawUsage {
    pub input_tokens: Count,
    pub cache_creation_input_tokens: Count,
    pub cache_read_input_tokens: Count,
    pub output_tokens: Count,
    pub cache_creation: Option<RawCacheCreation>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RawCacheCreation {
    pub ephemeral_5m_input_tokens: Count,
    pub ephemeral_1h_input_tokens: Count,
}

/// A token count read from any JSON value: a non-negative integer is taken as it is; anything
/// else (a string holding a number, a float, a negative number, `null`, …) is read as the
/// nearest count and marked, so the reader can report it. Absent is zero and not marked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub value: u64,
    /// The written value was not a non-negative integer.
    pub bad: bool,
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match &v {
            Value::Number(n) => match (n.as_u64(), n.as_f64()) {
                (Some(u), _) => Count {
                    value: u,
                    bad: false,
                },
                (None, Some(f)) => Count {
                    value: nearest_count(f),
                    bad: true,
                },
                (None, None) => Count {
                    value: 0,
                    bad: true,
                },
            },
            Value::String(s) => Count {
                value: s.trim().parse::<f64>().map_or(0, nearest_count),
                bad: true,
            },
            _ => Count {
                value: 0,
                bad: true,
            },
        })
    }
}

/// The count nearest to `f`: negative and non-finite values are 0, values beyond `u64` the
/// largest count.
fn nearest_count(f: f64) -> u64 {
    if f.is_finite() && f > 0.0 {
        // `as` saturates at u64::MAX.
        f.round() as u64
    } else {
        0
    }
}

/// A non-negative integer, else `None` (a status written as anything else is not read).
fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Value::deserialize(d)?.as_u64())
}

/// Strings longer than this in a structured tool result are left out.
pub const SLIM_CHARS: usize = 1024;

/// `v` with every string longer than [`SLIM_CHARS`] bytes replaced by a note of its length: a
/// tool's structured result repeats the outputs the model saw (a session file's largest part),
/// and only its small fields (ids, paths, sizes, flags) are read.
pub fn slim(v: Value) -> Value {
    match v {
        Value::String(s) if s.len() > SLIM_CHARS => {
            Value::String(format!("[{} bytes not kept]", s.len()))
        }
        Value::Array(a) => Value::Array(a.into_iter().map(slim).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, slim(v))).collect()),
        other => other,
    }
}

fn slim_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?.map(slim))
}

/// `true` only for JSON `true`; anything else (absent, `null`, a string) is false.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(matches!(Value::deserialize(d)?, Value::Bool(true)))
}

/// A `system` record. `compact_boundary` opens a compacted context; other subtypes (`api_error`,
/// `informational`, `local_command`, `turn_duration`, …) are kept with their content.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SystemRecord {
    #[serde(flatten)]
    pub common: Common,
    pub subtype: Option<String>,
    pub content: Option<Value>,
    pub level: Option<String>,
    pub compact_metadata: Option<CompactMetadata>,
}

/// What a `compact_boundary` says about its compaction.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactMetadata {
    /// `auto` or `manual`.
    pub trigger: Option<String>,
    /// The CLI's estimate of the context before (its last usage plus what was added since).
    pub pre_tokens: Option<Count>,
    /// Its estimate after (summary and kept tail); absent in older releases.
    pub post_tokens: Option<Count>,
    pub cumulative_dropped_tokens: Option<Count>,
    pub duration_ms: Option<Count>,
    /// The records kept verbatim after the summary: `headUuid` … `tailUuid`, relinked after
    /// `anchorUuid`.
    pub preserved_segment: Option<PreservedSegment>,
    pub preserved_messages: Option<PreservedMessages>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PreservedSegment {
    pub head_uuid: Option<String>,
    pub anchor_uuid: Option<String>,
    pub tail_uuid: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PreservedMessages {
    pub anchor_uuid: Option<String>,
    pub uuids: Vec<String>,
}

/// An `attachment` record: context the CLI attached (files, listings, reminders, hooks).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AttachmentRecord {
    #[serde(flatten)]
    pub common: Common,
    pub attachment: Option<Value>,
}

impl AttachmentRecord {
    /// `attachment.type` (`file`, `skill_listing`, `compact_file_reference`, …).
    pub fn attachment_type(&self) -> Option<&str> {
        self.attachment.as_ref()?.get("type")?.as_str()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SummaryRecord {
    pub summary: String,
    pub leaf_uuid: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AiTitleRecord {
    pub ai_title: Option<String>,
    pub session_id: Option<String>,
}

//! A session's line in a listing, without reading whole records: users' session files reach
//! hundreds of MB, almost all of it tool inputs and outputs the listing does not need. Each line
//! is walked key by key ([`fields`]: strings and brackets only, nothing allocated for the values
//! skipped), and only the few small values a listing shows are parsed: the record's kind, ids,
//! timestamp and `cwd`, an assistant's `message.id`, `model` and `usage`, the title records, and
//! the first prompt.
//!
//! The figures equal a full read's ([`super::session::Session`]): one request per unique
//! (`message.id`, `requestId`), synthetic messages left out, usage taken once per response.

use std::collections::{HashMap, HashSet};
use std::io::BufReader;
use std::path::Path;

use serde::Deserialize;

use super::record::{Content, RawUsage, SYNTHETIC_MODEL};
use super::subagents::agent_files;
use super::usage::ClaudeUsage;
use crate::trace::error::LoadError;
use crate::trace::jsonl::{for_each_line, Line, DEFAULT_MAX_LINE};
use crate::trace::lenient::{skip_ws, value_end};
use crate::trace::load::SessionSummary;

/// The longest title kept, in characters.
const TITLE_CHARS: usize = 200;

/// What a listing shows of one session file.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// Cost priced by the bundled pricing table.
    pub summary: SessionSummary,
    /// The session's own usage with the 5 m / 1 h split (sub-agents not included).
    pub usage: ClaudeUsage,
    /// Lines that could not be read (damaged, oversized, cut).
    pub unreadable_lines: usize,
}

/// The top-level members of the JSON object `line` whose keys are in `wanted`, as raw text
/// slices, in the order written; `None` when the line is not a JSON object. Values of other
/// keys are skipped without being parsed.
pub fn fields<'a>(line: &'a str, wanted: &[&str]) -> Option<Vec<(&'a str, &'a str)>> {
    let mut out = Vec::new();
    let mut pos = skip_ws(line, 0);
    if line.as_bytes().get(pos) != Some(&b'{') {
        return None;
    }
    pos = skip_ws(line, pos + 1);
    if line.as_bytes().get(pos) == Some(&b'}') {
        return Some(out);
    }
    loop {
        let key_end = value_end(line, pos)?;
        let key = line.get(pos + 1..key_end - 1)?;
        pos = skip_ws(line, key_end);
        if line.as_bytes().get(pos) != Some(&b':') {
            return None;
        }
        pos = skip_ws(line, pos + 1);
        let end = value_end(line, pos)?;
        if wanted.contains(&key) {
            out.push((key, &line[pos..end]));
        }
        pos = skip_ws(line, end);
        match line.as_bytes().get(pos) {
            Some(b',') => pos = skip_ws(line, pos + 1),
            Some(b'}') => return Some(out),
            _ => return None,
        }
    }
}

fn get<'a>(f: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    f.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn string(raw: Option<&str>) -> Option<String> {
    serde_json::from_str::<String>(raw?).ok()
}

/// Unix ms of an ISO 8601 timestamp.
pub fn unix_ms(ts: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[derive(Deserialize)]
struct UserMessage {
    #[serde(default)]
    content: Content,
}

/// The text of a prompt a person typed: not a tool result, not context the CLI added, not a
/// slash command's echo.
fn prompt_text(message: &UserMessage) -> Option<String> {
    let text = match &message.content {
        Content::Text(s) => s.clone(),
        Content::Blocks(b) if b.iter().all(|b| !is_tool_result(b)) => message.content.text(),
        Content::Blocks(_) => return None,
    };
    let t = text.trim();
    if t.is_empty()
        || t.starts_with('<')
        || t.starts_with("[Request interrupted")
        || t.starts_with("Caveat:")
    {
        return None;
    }
    Some(crate::text::clip_chars(
        crate::text::first_line(t),
        TITLE_CHARS,
    ))
}

fn is_tool_result(b: &super::record::Block) -> bool {
    matches!(
        b,
        super::record::Block::Known(super::record::KnownBlock::ToolResult { .. })
    )
}

/// The line of the session file at `path` (its sub-agents listed as children, by agent id).
pub fn summarize(path: &Path) -> Result<Listing, LoadError> {
    summarize_with(path, DEFAULT_MAX_LINE)
}

pub fn summarize_with(path: &Path, max_line: usize) -> Result<Listing, LoadError> {
    crate::trace::input::check_regular(path)?;
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut s = Scan::default();
    for_each_line(BufReader::new(file), max_line, |line| match line {
        Line::Text { bytes, .. } => {
            if !s.line(bytes) && !bytes.iter().all(u8::is_ascii_whitespace) {
                s.unreadable += 1;
            }
        }
        Line::Oversized { .. } => s.unreadable += 1,
    })
    .map_err(io)?;
    // The file's name is the session's id: a session resumed into a new file carries the old
    // `sessionId` on the records it copied, so the records' id is not unique to a file.
    let id = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .or_else(|| s.session_id.clone())
        .unwrap_or_default();
    // A summary record may be another session's: only one whose leaf is in this file counts.
    let summary = s
        .summaries
        .iter()
        .rev()
        .find(|(leaf, _)| s.messages.contains(leaf))
        .map(|(_, t)| t.clone());
    let title = s
        .custom_title
        .or(s.ai_title)
        .or(summary)
        .or(s.first_prompt)
        .unwrap_or_default();
    let mut usage = ClaudeUsage::default();
    let mut cost = 0.0;
    let prices = crate::replay::cache_cost::PricingTable::bundled();
    // Responses copied from another session's file (a resume) are counted there. Only a file
    // holding another session's records looks at its neighbours (a project dir of thousands of
    // sessions is not read once per file).
    let foreign = s
        .responses
        .values()
        .any(|r| r.2.as_deref().is_some_and(|sid| sid != id));
    let origins = if foreign {
        super::resume::Origins::of(path)
    } else {
        super::resume::Origins::default()
    };
    let mut requests = 0usize;
    for (u, model, _) in s
        .order
        .iter()
        .filter_map(|k| s.responses.get(k))
        .filter(|r| !origins.copied(r.2.as_deref()))
    {
        requests += 1;
        usage.add(u);
        let model = model.clone().map(|m| crate::trace::model::ModelRef {
            provider_id: super::to_trace::PROVIDER.to_owned(),
            model_id: m,
        });
        cost += super::to_trace::cost(u, &prices.lookup(model.as_ref()).price);
    }
    let children = agent_files(path)
        .into_iter()
        .map(|f| format!("agent-{}", f.agent_id))
        .collect();
    Ok(Listing {
        summary: SessionSummary {
            agent: "claude-code",
            id,
            title,
            directory: s.cwd.unwrap_or_default(),
            parent_id: None,
            created: s.first_ms.unwrap_or(0),
            updated: s.last_ms.unwrap_or(0),
            messages: s.messages.len(),
            requests,
            tokens: usage.to_usage(),
            cost,
            children,
        },
        usage,
        unreadable_lines: s.unreadable,
    })
}

/// A response: (`message.id`, `requestId`).
type ResponseKey = (String, Option<String>);

#[derive(Default)]
struct Scan {
    session_id: Option<String>,
    cwd: Option<String>,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
    custom_title: Option<String>,
    ai_title: Option<String>,
    first_prompt: Option<String>,
    /// `summary` records: (leafUuid, summary).
    summaries: Vec<(String, String)>,
    /// Uuids of user and assistant records (a rewritten record counts once).
    messages: HashSet<String>,
    /// Per response: its usage, model and the session id its first record carries.
    responses: HashMap<ResponseKey, (ClaudeUsage, Option<String>, Option<String>)>,
    /// Responses in the order first written (sums in file order, as a full read's).
    order: Vec<ResponseKey>,
    unreadable: usize,
}

const KEYS: &[&str] = &[
    "type",
    "uuid",
    "sessionId",
    "timestamp",
    "cwd",
    "message",
    "requestId",
    "isApiErrorMessage",
    "isMeta",
    "isCompactSummary",
    "aiTitle",
    "customTitle",
    "summary",
    "leafUuid",
];

impl Scan {
    /// Take what a listing needs from one line; false when it is not a JSON object.
    fn line(&mut self, bytes: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return false;
        };
        let Some(f) = fields(text, KEYS) else {
            return false;
        };
        let kind = string(get(&f, "type")).unwrap_or_default();
        if self.session_id.is_none() {
            self.session_id = string(get(&f, "sessionId")).filter(|s| !s.is_empty());
        }
        if self.cwd.is_none() {
            self.cwd = string(get(&f, "cwd")).filter(|s| !s.is_empty());
        }
        if let Some(ms) = string(get(&f, "timestamp")).as_deref().and_then(unix_ms) {
            self.first_ms = Some(self.first_ms.map_or(ms, |m| m.min(ms)));
            self.last_ms = Some(self.last_ms.map_or(ms, |m| m.max(ms)));
        }
        let flag = |k: &str| get(&f, k) == Some("true");
        match kind.as_str() {
            "ai-title" => {
                if let Some(t) = string(get(&f, "aiTitle")).filter(|t| !t.trim().is_empty()) {
                    self.ai_title = Some(crate::text::clip_chars(t.trim(), TITLE_CHARS));
                }
            }
            "custom-title" => {
                if let Some(t) = string(get(&f, "customTitle")).filter(|t| !t.trim().is_empty()) {
                    self.custom_title = Some(crate::text::clip_chars(t.trim(), TITLE_CHARS));
                }
            }
            "summary" => {
                if let (Some(leaf), Some(t)) = (
                    string(get(&f, "leafUuid")),
                    string(get(&f, "summary")).filter(|t| !t.trim().is_empty()),
                ) {
                    self.summaries
                        .push((leaf, crate::text::clip_chars(t.trim(), TITLE_CHARS)));
                }
            }
            "user" => {
                self.messages
                    .extend(string(get(&f, "uuid")).filter(|u| !u.is_empty()));
                if self.first_prompt.is_none() && !flag("isMeta") && !flag("isCompactSummary") {
                    self.first_prompt = get(&f, "message")
                        .and_then(|m| serde_json::from_str::<UserMessage>(m).ok())
                        .as_ref()
                        .and_then(prompt_text);
                }
            }
            "assistant" => {
                self.messages
                    .extend(string(get(&f, "uuid")).filter(|u| !u.is_empty()));
                if flag("isApiErrorMessage") {
                    return true;
                }
                let Some(message) = get(&f, "message") else {
                    return true;
                };
                let Some(m) = fields(message, &["id", "model", "usage"]) else {
                    return true;
                };
                if string(get(&m, "model")).as_deref() == Some(SYNTHETIC_MODEL) {
                    return true;
                }
                let id = string(get(&m, "id"))
                    .filter(|i| !i.is_empty())
                    .or_else(|| string(get(&f, "uuid")).map(|u| format!("uuid-{u}")));
                let Some(id) = id else {
                    return true;
                };
                let usage = get(&m, "usage")
                    .and_then(|u| serde_json::from_str::<RawUsage>(u).ok())
                    .map(|raw| ClaudeUsage::from_raw(&raw).0)
                    .unwrap_or_default();
                let key = (id, string(get(&f, "requestId")));
                if !self.responses.contains_key(&key) {
                    self.order.push(key.clone());
                }
                let slot = self.responses.entry(key).or_default();
                slot.0 = slot.0.max(&usage);
                if slot.1.is_none() {
                    slot.1 = string(get(&m, "model"));
                    slot.2 = string(get(&f, "sessionId"));
                }
            }
            _ => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_takes_the_wanted_members_and_skips_the_rest_unparsed() {
        let line = r#"{"a": {"x": "}"}, "type":"user" , "n": 12, "s": "q\"}", "t": [1, {"b": 2}]}"#;
        let f = fields(line, &["type", "n", "t", "s"]).expect("object");
        assert_eq!(
            f,
            [
                ("type", r#""user""#),
                ("n", "12"),
                ("s", r#""q\"}""#),
                ("t", r#"[1, {"b": 2}]"#)
            ]
        );
        assert_eq!(fields("{}", &["a"]), Some(vec![]));
        assert_eq!(fields("[1]", &["a"]), None);
        assert_eq!(fields(r#"{"a": 1"#, &["a"]), None);
        assert_eq!(fields(r#"{"a" 1}"#, &["a"]), None);
    }

    proptest::proptest! {
        /// Any text: no panic. Any JSON object: its members, as serde_json reads them.
        #[test]
        fn fields_never_panics_and_agrees_with_serde(text in "\\PC{0,80}", keys in proptest::collection::vec("[a-z\"\\\\ ]{0,6}", 0..5), n in 0u64..1000) {
            let _ = fields(&text, &["a", "type"]);
            let mut obj = serde_json::Map::new();
            for (i, k) in keys.iter().enumerate() {
                obj.insert(k.clone(), serde_json::json!([n, {"k": k}, i, "}\"]"]));
            }
            let line = serde_json::Value::Object(obj.clone()).to_string();
            let wanted: Vec<&str> = vec!["a", "b"];
            let got = fields(&line, &wanted).expect("an object");
            let present = wanted.iter().filter(|k| obj.contains_key(**k)).count();
            proptest::prop_assert_eq!(got.len(), present);
            for (k, v) in got {
                let parsed: serde_json::Value = serde_json::from_str(v).expect("a value");
                proptest::prop_assert_eq!(Some(&parsed), obj.get(k));
            }
        }
    }

    #[test]
    fn the_title_is_a_custom_title_then_an_ai_title_then_the_first_prompt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("s.jsonl");
        let prompt = r#"{"type":"user","uuid":"u1","sessionId":"s1","cwd":"/p","timestamp":"2026-01-01T00:00:00Z","message":{"content":"<command-name>/x</command-name>"}}
{"type":"user","uuid":"u2","message":{"content":[{"type":"text","text":"Fix the bug\nplease"}]}}
"#;
        std::fs::write(&p, prompt).expect("write");
        let l = summarize(&p).expect("listing");
        assert_eq!(l.summary.title, "Fix the bug");
        // The file's name is the id (a resumed copy carries its origin's `sessionId`).
        assert_eq!(l.summary.id, "s");
        assert_eq!(l.summary.directory, "/p");
        assert_eq!(l.summary.created, 1_767_225_600_000);
        // Another session's summary is not this one's title; one of this file's is.
        let other = r#"{"type":"summary","summary":"Elsewhere","leafUuid":"x9"}"#;
        std::fs::write(&p, format!("{other}\n{prompt}")).expect("write");
        assert_eq!(summarize(&p).expect("listing").summary.title, "Fix the bug");
        let own = r#"{"type":"summary","summary":"Bug hunt","leafUuid":"u2"}"#;
        std::fs::write(&p, format!("{own}\n{prompt}")).expect("write");
        assert_eq!(summarize(&p).expect("listing").summary.title, "Bug hunt");
        std::fs::write(
            &p,
            format!("{own}\n{prompt}{{\"type\":\"ai-title\",\"aiTitle\":\"Bug fix\"}}\n"),
        )
        .expect("write");
        assert_eq!(summarize(&p).expect("listing").summary.title, "Bug fix");
    }
}

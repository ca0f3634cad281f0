//! Classification: for each segment its kinds, retention class, floor, the reasons for both
//! (quoting the evidence), pinned spans, relevance keys, and the facts the tier generators use.
//! Driven by `rules.toml` (embedded; `--rules FILE` replaces it). Deterministic: the same trace
//! and rules give the same result.

use std::collections::BTreeSet;
use std::path::Path;

use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::Value;

use super::model::{EpisodeKind, Pin, RetentionClass, Tier};
use super::segment::Segment;
use crate::text::clip_chars;
use crate::trace::{Message, PartKind, ToolPart, Trace, UserKind};

/// The embedded default rules.
pub const DEFAULT_RULES: &str = include_str!("rules.toml");

#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("cannot read rules {path}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid rules {origin}: {reason}")]
    Invalid { origin: String, reason: String },
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Vote {
    #[serde(default)]
    class: Option<RetentionClass>,
    #[serde(default)]
    floor: Option<Tier>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[allow(dead_code)] // checked for presence only
    version: u32,
    defaults: Defaults,
    pins: PinsIn,
    kinds: KindsIn,
    keys: KeysIn,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    class: RetentionClass,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinsIn {
    patterns: Vec<String>,
    max_chars: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolKindIn {
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    commands: Vec<String>,
    #[serde(flatten)]
    vote: Vote,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FailureIn {
    #[serde(default)]
    error_lines: Vec<String>,
    #[serde(flatten)]
    vote: Vote,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RejectedIn {
    within_requests: usize,
    #[serde(default)]
    revert_commands: Vec<String>,
    #[serde(default)]
    phrases: Vec<String>,
    #[serde(flatten)]
    vote: Vote,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PhrasesIn {
    #[serde(default)]
    phrases: Vec<String>,
    #[serde(flatten)]
    vote: Vote,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatterIn {
    max_chars: usize,
    #[serde(flatten)]
    vote: Vote,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindsIn {
    #[serde(default)]
    turn: Vote,
    investigation: ToolKindIn,
    edit: ToolKindIn,
    failure: FailureIn,
    rejected: RejectedIn,
    decision: PhrasesIn,
    #[serde(default)]
    constraint: Vote,
    #[serde(default)]
    compaction: Vote,
    #[serde(default)]
    continuation: Vote,
    #[serde(default)]
    subagent: Vote,
    chatter: ChatterIn,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysIn {
    max: usize,
}

/// Compiled classification rules.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Where they came from ("embedded" or a path).
    pub origin: String,
    default_class: RetentionClass,
    pin_patterns: Vec<Regex>,
    pin_max_chars: usize,
    votes: Vec<(EpisodeKind, Vote)>,
    investigation_tools: Vec<String>,
    investigation_commands: Vec<Regex>,
    edit_tools: Vec<String>,
    error_lines: Vec<Regex>,
    revert_commands: Vec<Regex>,
    rejected_phrases: Vec<Regex>,
    rejected_within_requests: usize,
    decision_phrases: Vec<Regex>,
    chatter_max_chars: usize,
    max_keys: usize,
}

impl Rules {
    /// The embedded default rules.
    pub fn embedded() -> Result<Rules, RulesError> {
        Rules::parse(DEFAULT_RULES, "embedded")
    }

    pub fn from_file(path: &Path) -> Result<Rules, RulesError> {
        let text =
            crate::trace::input::read_to_string_capped(path, crate::trace::input::MAX_CONFIG_BYTES)
                .map_err(|source| RulesError::Io {
                    path: path.to_owned(),
                    source,
                })?;
        Rules::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, origin: &str) -> Result<Rules, RulesError> {
        let bad = |reason: String| RulesError::Invalid {
            origin: origin.to_owned(),
            reason,
        };
        let f: RulesFile = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let re = |v: &[String]| -> Result<Vec<Regex>, RulesError> {
            v.iter()
                .map(|p| {
                    RegexBuilder::new(p)
                        .case_insensitive(true)
                        .build()
                        .map_err(|e| bad(format!("pattern {p:?}: {e}")))
                })
                .collect()
        };
        let k = &f.kinds;
        Ok(Rules {
            origin: origin.to_owned(),
            default_class: f.defaults.class,
            pin_patterns: re(&f.pins.patterns)?,
            pin_max_chars: f.pins.max_chars,
            votes: vec![
                (EpisodeKind::Turn, k.turn.clone()),
                (EpisodeKind::Investigation, k.investigation.vote.clone()),
                (EpisodeKind::Edit, k.edit.vote.clone()),
                (EpisodeKind::Failure, k.failure.vote.clone()),
                (EpisodeKind::Rejected, k.rejected.vote.clone()),
                (EpisodeKind::Decision, k.decision.vote.clone()),
                (EpisodeKind::Constraint, k.constraint.clone()),
                (EpisodeKind::Compaction, k.compaction.clone()),
                (EpisodeKind::Continuation, k.continuation.clone()),
                (EpisodeKind::Subagent, k.subagent.clone()),
                (EpisodeKind::Chatter, k.chatter.vote.clone()),
            ],
            investigation_tools: k.investigation.tools.clone(),
            investigation_commands: re(&k.investigation.commands)?,
            edit_tools: k.edit.tools.clone(),
            error_lines: re(&k.failure.error_lines)?,
            revert_commands: re(&k.rejected.revert_commands)?,
            rejected_phrases: re(&k.rejected.phrases)?,
            rejected_within_requests: k.rejected.within_requests,
            decision_phrases: re(&k.decision.phrases)?,
            chatter_max_chars: k.chatter.max_chars,
            max_keys: f.keys.max,
        })
    }

    /// Whether a line looks like an error (the failure rule's `error_lines`).
    pub fn is_error_line(&self, l: &str) -> bool {
        self.error_lines.iter().any(|r| r.is_match(l))
    }

    /// Whether a sentence decides or gives up an approach.
    pub fn is_decision_or_rejection(&self, s: &str) -> bool {
        self.decision_phrases.iter().any(|r| r.is_match(s))
            || self.rejected_phrases.iter().any(|r| r.is_match(s))
    }

    fn vote(&self, kind: EpisodeKind) -> Option<&Vote> {
        self.votes.iter().find(|(k, _)| *k == kind).map(|(_, v)| v)
    }
}

/// A failed tool call, with the line that quotes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub message_index: usize,
    pub request: Option<usize>,
    pub tool: String,
    /// The bash command (first line) or the tool's main input.
    pub command: String,
    pub exit: Option<i64>,
    /// The error line, exactly as recorded.
    pub line: String,
}

impl Failure {
    /// e.g. `bash exit 1 in request 3: "…"` (for reasons).
    pub fn describe(&self) -> String {
        let at = self
            .request
            .map_or_else(String::new, |r| format!(" in request {r}"));
        format!("{}{at}: \"{}\"", self.what(), self.line)
    }

    /// e.g. `bash exit 1: "…"`: what the model saw, without our request numbering (for tiers).
    pub fn quote(&self) -> String {
        format!("{}: \"{}\"", self.what(), self.line)
    }

    fn what(&self) -> String {
        match self.exit {
            Some(c) if c != 0 => format!("{} exit {c}", self.tool),
            _ => format!("{} error", self.tool),
        }
    }
}

/// An approach that failed and was given up.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub failure: Failure,
    /// The revert command or the assistant's sentence that gives it up.
    pub evidence: String,
}

/// What classification found, for reasons and for the tier generators.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub objective: String,
    pub outcome: String,
    pub failures: Vec<Failure>,
    pub rejections: Vec<Rejection>,
    pub decisions: Vec<String>,
    pub files: Vec<String>,
    pub commands: Vec<String>,
    pub identifiers: Vec<String>,
    /// Todo status changes inside the episode ("<todo>: pending → completed").
    pub todos: Vec<String>,
}

/// The classification of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    pub title: String,
    pub kinds: Vec<EpisodeKind>,
    pub class: RetentionClass,
    pub floor: Tier,
    pub class_reasons: Vec<String>,
    pub floor_reasons: Vec<String>,
    pub pins: Vec<Pin>,
    pub keys: Vec<String>,
    pub children: Vec<String>,
    pub facts: Facts,
}

/// Request index of each message (assistant messages only).
pub fn request_of_message(trace: &Trace) -> Vec<Option<usize>> {
    let mut v = vec![None; trace.messages.len()];
    for r in &trace.requests {
        if let Some(slot) = v.get_mut(r.message_index) {
            *slot = Some(r.index);
        }
    }
    v
}

/// Classify one segment by the rules (annotations are applied afterwards by the caller), with
/// the session's todo changes computed once by the caller (they cover the whole trace;
/// recomputing them per episode made classification quadratic).
pub fn classify_with_todos(
    trace: &Trace,
    seg: &Segment,
    rules: &Rules,
    req_of: &[Option<usize>],
    todos: &[super::segment::TodoChange],
) -> Classified {
    let msgs = &trace.messages[seg.first_message..=seg.last_message];
    let mut kinds: BTreeSet<EpisodeKind> = BTreeSet::new();
    let mut facts = Facts::default();

    // Structure.
    let first = &msgs[0];
    match first.user_kind {
        Some(UserKind::Human) => {
            kinds.insert(EpisodeKind::Turn);
        }
        Some(UserKind::SyntheticContinue) | Some(UserKind::OverflowReplay) => {
            kinds.insert(EpisodeKind::Continuation);
        }
        _ => {}
    }
    let compaction_msg = msgs.iter().find(|m| m.compaction_part().is_some());
    if compaction_msg.is_some() {
        kinds.insert(EpisodeKind::Compaction);
    }
    let children: Vec<String> = trace
        .children
        .iter()
        .filter(|c| {
            trace
                .message_index(&c.message_id)
                .is_some_and(|i| i >= seg.first_message && i <= seg.last_message)
        })
        .map(|c| c.session_id.clone())
        .collect();
    let has_task = msgs
        .iter()
        .any(|m| m.tool_parts().any(|(_, t)| t.tool == "task"));
    if has_task || !children.is_empty() {
        kinds.insert(EpisodeKind::Subagent);
    }

    // Pins: sentences of human text that state a constraint.
    let mut pins = Vec::new();
    for m in msgs.iter().filter(|m| m.user_kind == Some(UserKind::Human)) {
        for p in &m.parts {
            if let PartKind::Text {
                text,
                ignored: false,
                synthetic: false,
                ..
            } = &p.kind
            {
                // Adjacent pinned sentences of one line form one span, so a constraint stated
                // in two sentences stays one verbatim piece.
                let mut spans: Vec<(usize, usize, usize, String)> = Vec::new(); // start, end, sentence no., rule
                for (k, (a, b)) in sentence_spans(text).into_iter().enumerate() {
                    let sent = &text[a..b];
                    if sent.chars().count() > rules.pin_max_chars {
                        continue;
                    }
                    let Some(re) = rules.pin_patterns.iter().find(|r| r.is_match(sent)) else {
                        continue;
                    };
                    match spans.last_mut() {
                        Some(last) if last.2 + 1 == k && !text[last.1..a].contains('\n') => {
                            last.1 = b;
                            last.2 = k;
                        }
                        _ => spans.push((a, b, k, re.as_str().to_owned())),
                    }
                }
                for (a, b, _, re) in spans {
                    let span = &text[a..b];
                    if span.chars().count() <= rules.pin_max_chars * 2 {
                        pins.push(Pin {
                            message_id: m.id.clone(),
                            text: span.to_owned(),
                            reason: format!("rule pins: matches /{re}/"),
                        });
                    }
                }
            }
        }
    }
    if !pins.is_empty() {
        kinds.insert(EpisodeKind::Constraint);
    }

    // Tools: investigation, edit, failures, files, commands.
    let mut tool_calls = 0usize;
    let mut keys = KeySet::new(rules.max_keys);
    for (off, m) in msgs.iter().enumerate() {
        let mi = seg.first_message + off;
        for p in &m.parts {
            // OpenCode does not send patch parts to the model: name their files the way the
            // model saw them, relative to the session directory.
            if let PartKind::Patch { files, .. } = &p.kind {
                for f in files {
                    push_unique(&mut facts.files, relative_to(f, &trace.session.directory));
                }
            }
        }
        for (_, t) in m.tool_parts() {
            tool_calls += 1;
            let command = tool_command(t);
            if t.tool == "bash" {
                push_unique(
                    &mut facts.commands,
                    &clip_chars(first_line_of(&command), 160),
                );
                for tok in path_like_tokens(&command) {
                    keys.push(&tok);
                }
            }
            for f in tool_files(t) {
                keys.push(&f);
                if let Some(base) = Path::new(&f).file_name().and_then(|b| b.to_str()) {
                    if base != f {
                        keys.push(base);
                    }
                }
                push_unique(&mut facts.files, &f);
            }
            if rules.investigation_tools.iter().any(|x| x == &t.tool)
                || (t.tool == "bash"
                    && rules
                        .investigation_commands
                        .iter()
                        .any(|r| r.is_match(&command)))
            {
                kinds.insert(EpisodeKind::Investigation);
            }
            if rules.edit_tools.iter().any(|x| x == &t.tool) {
                kinds.insert(EpisodeKind::Edit);
            }
            if t.failed() {
                facts.failures.push(Failure {
                    message_index: mi,
                    request: req_of.get(mi).copied().flatten(),
                    tool: t.tool.clone(),
                    command: clip_chars(first_line_of(&command), 160),
                    exit: t.exit_code(),
                    line: error_line(t, rules),
                });
            }
        }
    }
    if !facts.failures.is_empty() {
        kinds.insert(EpisodeKind::Failure);
    }

    // Rejections. A rejection event is an assistant message that reverts (a revert command) or
    // gives an approach up (a rejected phrase, in text or reasoning). It rejects the latest
    // failure before it that no earlier event claimed, if that failure is at most
    // `within_requests` requests back: the approach that failure killed. The evidence prefers
    // what the assistant said (text over reasoning), plus the revert command.
    let mut claimed_until: Option<usize> = None; // failures at or before this index are spoken for
    for (off, m) in msgs.iter().enumerate() {
        let mi = seg.first_message + off;
        if !m.is_assistant() {
            continue;
        }
        let revert = m.tool_parts().find_map(|(_, t)| {
            let c = tool_command(t);
            (t.tool == "bash" && rules.revert_commands.iter().any(|r| r.is_match(&c)))
                .then(|| format!("reverted with `{}`", first_line_of(&c)))
        });
        let phrase = |with_text: bool| {
            m.parts.iter().find_map(|p| {
                let text = match &p.kind {
                    PartKind::Text {
                        text,
                        ignored: false,
                        ..
                    } if with_text => text,
                    PartKind::Reasoning { text } if !with_text => text,
                    _ => return None,
                };
                sentences(text)
                    .into_iter()
                    .find(|s| rules.rejected_phrases.iter().any(|r| r.is_match(s)))
                    .map(|s| format!("\"{}\"", clip_chars(s, 200)))
            })
        };
        let words = phrase(true).or_else(|| phrase(false));
        if revert.is_none() && words.is_none() {
            continue;
        }
        let here = req_of.get(mi).copied().flatten();
        let killed = facts.failures.iter().rev().find(|f| {
            f.message_index <= mi
                && claimed_until.is_none_or(|c| f.message_index > c)
                && match (f.request, here) {
                    (Some(a), Some(b)) => b.saturating_sub(a) <= rules.rejected_within_requests,
                    _ => true,
                }
        });
        let Some(f) = killed else { continue };
        claimed_until = Some(mi);
        let evidence = match (words, revert) {
            (Some(w), Some(r)) => format!("{w}; {r}"),
            (Some(w), None) => w,
            (None, Some(r)) => r,
            (None, None) => continue,
        };
        facts.rejections.push(Rejection {
            failure: f.clone(),
            evidence,
        });
    }
    if !facts.rejections.is_empty() {
        kinds.insert(EpisodeKind::Rejected);
    }

    // Decisions: sentences of assistant text that state a choice (a compaction summary only
    // restates earlier ones).
    for m in msgs.iter().filter(|m| m.is_assistant() && !m.summary) {
        for text in assistant_texts(m, false) {
            for s in sentences(text) {
                if rules.decision_phrases.iter().any(|r| r.is_match(s)) {
                    push_unique(&mut facts.decisions, &clip_chars(s, 300));
                }
            }
        }
    }
    if !facts.decisions.is_empty() {
        kinds.insert(EpisodeKind::Decision);
    }

    // Chatter: talk only, short.
    let text_chars: usize = msgs.iter().map(|m| m.text().chars().count()).sum();
    if tool_calls == 0
        && pins.is_empty()
        && facts.failures.is_empty()
        && compaction_msg.is_none()
        && !kinds.contains(&EpisodeKind::Continuation)
        && text_chars <= rules.chatter_max_chars
    {
        kinds.insert(EpisodeKind::Chatter);
    }

    // Keys and identifiers from human text.
    for m in msgs.iter().filter(|m| m.user_kind == Some(UserKind::Human)) {
        for id in identifiers(&m.text()) {
            keys.push(&id);
        }
    }
    let mut ids = Vec::new();
    for m in msgs {
        let t = if m.is_user() && m.user_kind != Some(UserKind::Human) {
            String::new()
        } else {
            m.text()
        };
        for id in identifiers(&t) {
            push_unique(&mut ids, &id);
        }
    }
    for f in &facts.failures {
        for id in identifiers(&f.line) {
            push_unique(&mut ids, &id);
        }
    }
    ids.truncate(24);
    facts.identifiers = ids;

    facts.todos = todos
        .iter()
        .filter(|c| c.message_index >= seg.first_message && c.message_index <= seg.last_message)
        .map(|c| format!("{}: {} → {}", c.content, c.from, c.to))
        .collect();
    facts.objective = objective(msgs, compaction_msg.is_some());
    facts.outcome = outcome(msgs, &facts);
    let title = title(seg, msgs, compaction_msg, todos);

    let kinds: Vec<EpisodeKind> = kinds.into_iter().collect();
    let failed_request = msgs.iter().find_map(|m| {
        let e = m.error.as_ref()?;
        let r = req_of.get(trace.message_index(&m.id)?).copied().flatten()?;
        Some(format!("request {r} failed ({})", e.name))
    });
    let ev = Evidence {
        facts: &facts,
        pins: &pins,
        children: &children,
        compaction: compaction_msg,
        text_chars,
        failed_request,
    };
    let (class, floor, class_reasons, floor_reasons) = class_and_floor(&kinds, rules, &ev);

    Classified {
        title,
        kinds,
        class,
        floor,
        class_reasons,
        floor_reasons,
        pins,
        keys: keys.into_vec(),
        children,
        facts,
    }
}

/// Votes → class, floor and their reasons.
/// What the reasons quote.
struct Evidence<'a> {
    facts: &'a Facts,
    pins: &'a [Pin],
    children: &'a [String],
    compaction: Option<&'a Message>,
    text_chars: usize,
    /// "request 9 failed (APIError)" for the first request with a recorded error.
    failed_request: Option<String>,
}

fn class_and_floor(
    kinds: &[EpisodeKind],
    rules: &Rules,
    ev: &Evidence<'_>,
) -> (RetentionClass, Tier, Vec<String>, Vec<String>) {
    let mut class: Option<RetentionClass> = None;
    let mut floor: Option<Tier> = None;
    let mut class_reasons = Vec::new();
    let mut floor_reasons = Vec::new();
    for k in kinds {
        let Some(v) = rules.vote(*k) else { continue };
        let ev = evidence(*k, ev);
        if let Some(c) = v.class {
            class_reasons.push(format!("class {}: {} — {ev}", c.as_str(), k.as_str()));
            // Most protective wins: pin < compressible < discardable in the enum order.
            class = Some(class.map_or(c, |x| x.min(c)));
        }
        if let Some(f) = v.floor {
            floor_reasons.push(format!("floor {}: {} — {ev}", f.as_str(), k.as_str()));
            floor = Some(floor.map_or(f, |x| x.min(f)));
        }
    }
    // A floor above `dropped` means the content is worth keeping: not discardable.
    if class == Some(RetentionClass::Discardable) {
        if let Some(f) = floor.filter(|f| *f < Tier::Dropped) {
            class_reasons.push(format!(
                "class compressible: a floor of {} outranks the discardable vote",
                f.as_str()
            ));
            class = Some(RetentionClass::Compressible);
        }
    }
    let class = class.unwrap_or_else(|| {
        class_reasons.push(format!(
            "class {}: default (no rule voted)",
            rules.default_class.as_str()
        ));
        rules.default_class
    });
    let class_floor = match class {
        RetentionClass::Pin => Tier::Full,
        RetentionClass::Compressible => Tier::Anchor,
        RetentionClass::Discardable => Tier::Dropped,
    };
    let floor = match floor {
        // A class-based floor above the votes (pin) wins; a vote never reaches `dropped` unless
        // the class is discardable.
        Some(f) => {
            if class_floor < f {
                floor_reasons.push(format!(
                    "floor {}: class {} allows nothing lower",
                    class_floor.as_str(),
                    class.as_str()
                ));
                class_floor
            } else if f == Tier::Dropped && class != RetentionClass::Discardable {
                floor_reasons.push(format!(
                    "floor anchor: class {} may not be dropped",
                    class.as_str()
                ));
                Tier::Anchor
            } else {
                f
            }
        }
        None => {
            floor_reasons.push(format!(
                "floor {}: default for class {}",
                class_floor.as_str(),
                class.as_str()
            ));
            class_floor
        }
    };
    (class, floor, class_reasons, floor_reasons)
}

fn evidence(k: EpisodeKind, ev: &Evidence<'_>) -> String {
    let Evidence {
        facts,
        pins,
        children,
        compaction,
        text_chars,
        ref failed_request,
    } = *ev;
    match k {
        EpisodeKind::Failure => facts
            .failures
            .first()
            .map(|f| {
                let more = facts.failures.len() - 1;
                if more > 0 {
                    format!("{} (+{more} more)", f.describe())
                } else {
                    f.describe()
                }
            })
            .unwrap_or_default(),
        EpisodeKind::Rejected => facts
            .rejections
            .first()
            .map(|r| format!("{}; then {}", r.failure.describe(), r.evidence))
            .unwrap_or_default(),
        EpisodeKind::Decision => facts
            .decisions
            .first()
            .map(|d| format!("\"{}\"", clip_chars(d, 200)))
            .unwrap_or_default(),
        EpisodeKind::Constraint => pins
            .first()
            .map(|p| format!("pinned \"{}\"", clip_chars(&p.text, 200)))
            .unwrap_or_default(),
        EpisodeKind::Compaction => compaction
            .and_then(|m| m.compaction_part())
            .map(|c| {
                format!(
                    "compaction request {}{}",
                    if c.auto { "(auto" } else { "(manual" },
                    if c.overflow { ", overflow)" } else { ")" }
                )
            })
            .unwrap_or_else(|| "compaction".to_owned()),
        EpisodeKind::Subagent => {
            if children.is_empty() {
                "task call".to_owned()
            } else {
                format!("task call spawned {}", children.join(", "))
            }
        }
        EpisodeKind::Chatter => {
            let mut s = format!("no tool calls, {text_chars} chars of text");
            if let Some(f) = failed_request {
                s.push_str(&format!("; {f}"));
            }
            s
        }
        other => other.as_str().to_owned(),
    }
}

/// Split text into sentences (at `.`, `!`, `?` followed by whitespace, and at line breaks),
/// trimmed, each an exact substring of `text`.
pub fn sentences(text: &str) -> Vec<&str> {
    sentence_spans(text)
        .into_iter()
        .map(|(a, b)| &text[a..b])
        .collect()
}

/// Byte ranges of [`sentences`] in `text`.
pub fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut push = |a: usize, b: usize| {
        let s = &text[a..b];
        // Leading list and quote markers are not part of the sentence.
        let t0 = s.trim_start();
        let t1 = t0.trim_start_matches(['-', '*', '•', '>', ' ']);
        let lead = s.len() - t1.len();
        let t = t1.trim_end();
        if !t.is_empty() {
            out.push((a + lead, a + lead + t.len()));
        }
    };
    let b = text.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            push(start, i);
            start = i + 1;
        } else if matches!(c, b'.' | b'!' | b'?')
            && b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace())
        {
            push(start, i + 1);
            start = i + 1;
        }
    }
    push(start, b.len());
    out
}

/// Text and (optionally) reasoning parts of an assistant message.
fn assistant_texts(m: &Message, with_reasoning: bool) -> Vec<&str> {
    m.parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text {
                text,
                ignored: false,
                ..
            } => Some(text.as_str()),
            PartKind::Reasoning { text } if with_reasoning => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The main input of a tool call as one string (bash: the command).
pub fn tool_command(t: &ToolPart) -> String {
    for k in [
        "command",
        "filePath",
        "path",
        "pattern",
        "url",
        "query",
        "description",
    ] {
        if let Some(s) = t.input.get(k).and_then(Value::as_str) {
            return s.to_owned();
        }
    }
    String::new()
}

/// Files named by a tool's input.
pub fn tool_files(t: &ToolPart) -> Vec<String> {
    let mut v = Vec::new();
    for k in ["filePath", "file_path", "path", "include", "glob"] {
        if let Some(s) = t.input.get(k).and_then(Value::as_str) {
            if !s.is_empty() {
                v.push(s.to_owned());
            }
        }
    }
    if t.tool != "bash" {
        if let Some(s) = t.input.get("pattern").and_then(Value::as_str) {
            v.push(s.to_owned());
        }
    }
    v
}

/// The line that quotes a failure, from the tool's error, else its output: the first line that
/// matches the first error pattern that matches any line, else the last non-empty line. Exact,
/// trailing whitespace trimmed.
pub fn error_line(t: &ToolPart, rules: &Rules) -> String {
    let src = t
        .error
        .as_deref()
        .filter(|e| !e.trim().is_empty())
        .or(t.output.as_deref())
        .unwrap_or("");
    let lines: Vec<&str> = src
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    // The patterns are in priority order: the first pattern that matches any line wins.
    rules
        .error_lines
        .iter()
        .find_map(|r| lines.iter().find(|l| r.is_match(l)))
        // No error-like line: a failing program's last line is usually its verdict.
        .or(lines.last())
        .map_or_else(|| "(no output)".to_owned(), |l| (*l).to_owned())
}

/// `path` relative to `dir` when it lies under it, else unchanged.
fn relative_to<'a>(path: &'a str, dir: &str) -> &'a str {
    let dir = dir.trim_end_matches('/');
    match path.strip_prefix(dir) {
        Some(rest) if !dir.is_empty() && rest.starts_with('/') && rest.len() > 1 => &rest[1..],
        _ => path,
    }
}

fn first_line_of(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !s.is_empty() && !v.iter().any(|x| x == s) {
        v.push(s.to_owned());
    }
}

/// Ordered, deduplicated, capped.
struct KeySet {
    v: Vec<String>,
    max: usize,
}

impl KeySet {
    fn new(max: usize) -> Self {
        KeySet { v: Vec::new(), max }
    }
    fn push(&mut self, s: &str) {
        let s = s.trim_matches(|c: char| "`'\",;:()[]{}".contains(c));
        if s.len() >= 3 && self.v.len() < self.max && !self.v.iter().any(|x| x == s) {
            self.v.push(s.to_owned());
        }
    }
    fn into_vec(self) -> Vec<String> {
        self.v
    }
}

static PATH_RE: once_cell::sync::Lazy<Regex> = once_cell::sync::Lazy::new(|| {
    // Tokens with a slash, or a file name with an extension of 1–5 letters.
    Regex::new(r"(?:[\w.~-]*/[\w./~-]+|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b)")
        .unwrap_or_else(|_| unreachable_regex())
});

static ID_RE: once_cell::sync::Lazy<Regex> = once_cell::sync::Lazy::new(|| {
    Regex::new(concat!(
        r"`([^`\n]{1,60})`",                           // backticked spans
        r"|(--[a-z][a-z0-9-]+)",                       // long flags
        r"|\b(v?\d+\.\d+(?:\.\d+)+(?:-[\w.]+)?)\b",    // versions with at least two dots
        r"|\b([0-9a-f]{7,40})\b",                      // hashes (filtered below)
        r"|\b([A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+)\b", // snake_case
    ))
    .unwrap_or_else(|_| unreachable_regex())
});

/// The fixed patterns above are tested; this keeps a typo from panicking at run time.
fn unreachable_regex() -> Regex {
    Regex::new("$^").unwrap_or_else(|_| unreachable!("the empty regex compiles"))
}

/// File-path-like tokens of a shell command.
fn path_like_tokens(cmd: &str) -> Vec<String> {
    PATH_RE
        .find_iter(cmd)
        .map(|m| m.as_str().trim_end_matches(['.', ',', ':', ';']).to_owned())
        .filter(|s| !s.starts_with('-') && !s.contains("://") && !s.is_empty())
        .collect()
}

/// Identifiers in text: backticked spans, long flags, versions, hashes, snake_case names, paths.
pub fn identifiers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in ID_RE.captures_iter(text) {
        let s = (1..=5).find_map(|i| c.get(i)).map(|m| m.as_str());
        if let Some(s) = s {
            let is_hash = c.get(4).is_some();
            if is_hash
                && !(s.chars().any(|ch| ch.is_ascii_digit())
                    && s.chars().any(|ch| ch.is_ascii_alphabetic()))
            {
                continue;
            }
            let is_backticked = c.get(1).is_some();
            let s = s.trim();
            if s.chars().count() < 2 {
                continue;
            }
            if is_backticked
                && s.contains(char::is_whitespace)
                && !s.contains(|ch: char| "-[](){}$=|<>".contains(ch))
            {
                continue;
            }
            push_unique(&mut out, s);
        }
    }
    for p in path_like_tokens(text) {
        if p.contains('/') {
            push_unique(&mut out, &p);
        }
    }
    out
}

fn objective(msgs: &[Message], is_compaction: bool) -> String {
    if is_compaction {
        return "summarize the conversation so far (compaction)".to_owned();
    }
    msgs.iter()
        .find(|m| m.user_kind == Some(UserKind::Human))
        .map(|m| clip_chars(&m.text().replace('\n', " "), 300))
        .unwrap_or_default()
}

fn outcome(msgs: &[Message], facts: &Facts) -> String {
    let last_text = msgs
        .iter()
        .rev()
        .filter(|m| m.is_assistant())
        .map(|m| m.text())
        .find(|t| !t.trim().is_empty());
    match last_text {
        // The first real sentence: not a markdown heading, at least three words if there is one.
        Some(t) => {
            let ss: Vec<&str> = sentences(&t)
                .into_iter()
                .filter(|s| !s.starts_with('#'))
                .collect();
            let s = ss
                .iter()
                .find(|s| s.split_whitespace().count() >= 3)
                .or(ss.first())
                .copied()
                .unwrap_or("");
            clip_chars(s, 200)
        }
        None => match (
            facts.failures.last(),
            msgs.iter().rev().find(|m| m.is_assistant()),
        ) {
            (Some(f), _) => format!("failed: {}", f.line),
            (None, Some(m)) => match &m.error {
                Some(e) => format!("error: {}", e.name),
                None => "no answer text".to_owned(),
            },
            (None, None) => "no answer".to_owned(),
        },
    }
}

/// The first sentence of at least three words ("Good." is not a title), else the first two
/// sentences together; clipped.
fn title_sentence(text: &str) -> Option<String> {
    let ss = sentences(text);
    let t = ss
        .iter()
        .find(|s| s.split_whitespace().count() >= 3)
        .map(|s| (*s).to_owned())
        .or_else(|| {
            (!ss.is_empty()).then(|| ss.iter().take(2).copied().collect::<Vec<_>>().join(" "))
        })?;
    Some(clip_chars(&t, 72))
}

fn title(
    seg: &Segment,
    msgs: &[Message],
    compaction: Option<&Message>,
    todos: &[super::segment::TodoChange],
) -> String {
    if let Some(c) = compaction.and_then(|m| m.compaction_part()) {
        return format!(
            "compaction ({}{})",
            if c.auto { "auto" } else { "manual" },
            if c.overflow { ", overflow" } else { "" }
        );
    }
    let first = &msgs[0];
    match first.user_kind {
        Some(UserKind::SyntheticContinue) => return "continue after compaction".to_owned(),
        Some(UserKind::OverflowReplay) => {
            return format!(
                "replayed after overflow: {}",
                clip_chars(sentences(&first.text()).first().copied().unwrap_or(""), 60)
            )
        }
        Some(UserKind::Human) => {
            if let Some(s) = title_sentence(&first.text()) {
                return s;
            }
        }
        _ => {}
    }
    // A split inside a turn: the todo that started, else the first words of the episode.
    let started = todos
        .iter()
        .filter(|c| c.message_index + 1 == seg.first_message && c.to == "in_progress")
        .map(|c| c.content.clone())
        .next();
    if let Some(s) = started {
        return clip_chars(&s, 72);
    }
    for m in msgs {
        if let Some(s) = title_sentence(&m.text()) {
            return s;
        }
    }
    // No text at all: the first tool call.
    msgs.iter()
        .flat_map(|m| m.tool_parts())
        .next()
        .map(|(_, t)| {
            let c = first_line_of(&tool_command(t)).to_owned();
            let s = match t.tool.as_str() {
                "bash" => format!("$ {c}"),
                _ if c.is_empty() => t.tool.clone(),
                _ => format!("{} {c}", t.tool),
            };
            clip_chars(&s, 72)
        })
        .unwrap_or_else(|| "(no text)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rules_parse() {
        let r = Rules::embedded().unwrap();
        assert!(r
            .pin_patterns
            .iter()
            .any(|p| p.is_match("it must keep running")));
        let pinned = |s: &str| r.pin_patterns.iter().any(|p| p.is_match(s));
        assert!(!pinned("add a --keep-monthly option"));
        assert!(pinned(
            "Hard rule: do not change the public API of src/lib.rs."
        ));
        assert!(pinned("Don't commit, I'll review first."));
        assert!(pinned("Keep the rest as it is."));
        assert!(pinned(
            "Fix it, but keep it streaming: the feeds are getting big."
        ));
        assert!(!pinned(
            "Accounting says a lot of invoices don't match their ledger."
        ));
        assert!(!pinned("0.3 silently keeps the last value."));
    }

    #[test]
    fn sentences_are_substrings() {
        let t =
            "Please split it. Hard constraint, never to be broken: it must run under /bin/sh.\nok";
        let s = sentences(t);
        assert_eq!(
            s[1],
            "Hard constraint, never to be broken: it must run under /bin/sh."
        );
        assert!(s.iter().all(|x| t.contains(x)));
    }

    #[test]
    fn patch_paths_relative_to_the_session_directory() {
        assert_eq!(relative_to("/home/d/p/src/a.rs", "/home/d/p"), "src/a.rs");
        assert_eq!(relative_to("/home/d/p/src/a.rs", "/home/d/p/"), "src/a.rs");
        assert_eq!(
            relative_to("/home/d/pq/a.rs", "/home/d/p"),
            "/home/d/pq/a.rs"
        );
        assert_eq!(relative_to("/home/d/p/a.rs", ""), "/home/d/p/a.rs");
    }

    #[test]
    fn identifiers_found() {
        let ids =
            identifiers("bump `tomlette` to 0.4.2 at aeb1821, see --keep-monthly and src/a.rs");
        for want in ["tomlette", "0.4.2", "aeb1821", "--keep-monthly", "src/a.rs"] {
            assert!(ids.iter().any(|i| i == want), "{want} in {ids:?}");
        }
    }
}

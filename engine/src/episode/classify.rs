//! Classification: for each segment its kinds, retention class, floor, the reasons for both
//! (quoting the evidence), pinned spans, relevance keys, and the facts the tier generators use.
//! Driven by `rules.toml` (embedded; `--rules FILE` replaces it). Deterministic: the same trace
//! and rules give the same result.

use std::collections::BTreeSet;
use std::path::Path;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;
use serde_json::Value;

use super::evidence::{self, FailureKind, Killing};
use super::model::{EpisodeKind, Pin, RetentionClass, Tier};
use super::prose::plain;
use super::segment::Segment;
use crate::text::clip_chars;
use crate::trace::{Message, Part, PartKind, ToolPart, Trace, UserKind};

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
    /// Added after version 1 files were written: a file without it takes the embedded one.
    #[serde(default)]
    record: Option<RecordIn>,
}

/// Phrases the canonical record reads (rationale, uncertainty); not votes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordIn {
    rationale: Vec<String>,
    open: Vec<String>,
    uncertain: Vec<String>,
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
    // The four below came after version 1 files were written: missing = the embedded ones.
    #[serde(default)]
    wrapper_lines: Option<Vec<String>>,
    #[serde(default)]
    passing_lines: Option<Vec<String>>,
    #[serde(default)]
    query_commands: Option<Vec<String>>,
    #[serde(default)]
    operational_tools: Option<Vec<String>>,
    #[serde(default)]
    reason_lines: Option<Vec<String>>,
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

/// A rule's patterns as one alternation: whether any matches, and where the leftmost match of
/// any starts, is one search instead of one per pattern (these run on every sentence and line of
/// a session). The patterns are compiled one by one only where a question needs the rule order
/// (which pin pattern, an error line's rank), or when the alternation cannot be built.
#[derive(Debug, Clone)]
struct Patterns {
    /// The patterns, each compiled: for the rule-order questions, else empty.
    each: Vec<Regex>,
    /// `None` when there are no patterns, or their alternation could not be built (then `each`
    /// holds them all).
    any: Option<Regex>,
    /// The patterns as written (their count is an error line's lowest rank).
    sources: Vec<String>,
}

impl Patterns {
    /// `in_order`: keep each pattern compiled for [`Patterns::first_matching`] and the ranks.
    /// A pattern that does not parse on its own is an error (`bad`), so that the alternation
    /// means what its patterns mean one by one.
    fn new(
        sources: &[String],
        in_order: bool,
        bad: &dyn Fn(String) -> RulesError,
    ) -> Result<Patterns, RulesError> {
        for p in sources {
            // Parsing is cheap; compiling each pattern as well as the alternation would make
            // building the embedded rules slower, and a small session waits for them.
            regex_syntax::ParserBuilder::new()
                .case_insensitive(true)
                .build()
                .parse(p)
                .map_err(|e| bad(format!("pattern {p:?}: {e}")))?;
        }
        let any = (!sources.is_empty())
            .then(|| {
                let alternation = sources
                    .iter()
                    .map(|p| format!("(?:{p})"))
                    .collect::<Vec<_>>()
                    .join("|");
                RegexBuilder::new(&alternation)
                    .case_insensitive(true)
                    .build()
                    .ok()
            })
            .flatten();
        let each = if in_order || (any.is_none() && !sources.is_empty()) {
            sources
                .iter()
                .map(|p| {
                    RegexBuilder::new(p)
                        .case_insensitive(true)
                        .build()
                        .map_err(|e| bad(format!("pattern {p:?}: {e}")))
                })
                .collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        Ok(Patterns {
            each,
            any,
            sources: sources.to_vec(),
        })
    }

    fn is_match(&self, s: &str) -> bool {
        match &self.any {
            Some(r) => r.is_match(s),
            None => self.each.iter().any(|r| r.is_match(s)),
        }
    }

    /// Where the leftmost match of any pattern starts (the least of each pattern's first match).
    fn leftmost(&self, s: &str) -> Option<usize> {
        match &self.any {
            Some(r) => r.find(s).map(|m| m.start()),
            None => self
                .each
                .iter()
                .filter_map(|r| r.find(s).map(|m| m.start()))
                .min(),
        }
    }

    /// The first pattern, in rule order, that matches `s` (for patterns kept in order).
    fn first_matching(&self, s: &str) -> Option<&Regex> {
        if !self.is_match(s) {
            return None;
        }
        self.each.iter().find(|r| r.is_match(s))
    }
}

/// Compiled classification rules.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Where they came from ("embedded" or a path).
    pub origin: String,
    default_class: RetentionClass,
    pin_patterns: Patterns,
    pin_max_chars: usize,
    votes: Vec<(EpisodeKind, Vote)>,
    investigation_tools: Vec<String>,
    investigation_commands: Vec<Regex>,
    edit_tools: Vec<String>,
    error_lines: Patterns,
    wrapper_lines: Patterns,
    passing_lines: Patterns,
    query_commands: Vec<Regex>,
    operational_tools: Vec<String>,
    reason_lines: Patterns,
    rationale: Patterns,
    open: RegexSet,
    uncertain: RegexSet,
    revert_commands: Vec<Regex>,
    rejected_phrases: Patterns,
    rejected_within_requests: usize,
    decision_phrases: Patterns,
    chatter_max_chars: usize,
    max_keys: usize,
}

/// The embedded rules, parsed once per process: compiling their patterns is not free, and a
/// command builds a session, its sub-agent sessions and (following) every reload with them.
static EMBEDDED: std::sync::LazyLock<Result<Rules, RulesError>> =
    std::sync::LazyLock::new(|| Rules::parse(DEFAULT_RULES, "embedded"));

impl Rules {
    /// The embedded default rules.
    pub fn embedded() -> Result<Rules, RulesError> {
        match &*EMBEDDED {
            Ok(r) => Ok(r.clone()),
            // Only a broken build gets here (the embedded file is tested).
            Err(e) => Err(RulesError::Invalid {
                origin: "embedded".to_owned(),
                reason: e.to_string(),
            }),
        }
    }

    /// Start compiling the embedded rules on a thread of their own, so that a load that reads
    /// its session meanwhile finds them ready.
    pub fn prepare_embedded() {
        // A thread that cannot be spawned only means the first use compiles them.
        let _ = std::thread::Builder::new()
            .name("rules-prepare".to_owned())
            .spawn(|| {
                std::sync::LazyLock::force(&EMBEDDED);
            });
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
        // One pass per sentence for the lists read on every sentence of assistant text.
        let set = |v: &[String]| -> Result<RegexSet, RulesError> {
            RegexSetBuilder::new(v)
                .case_insensitive(true)
                .build()
                .map_err(|e| bad(format!("patterns {v:?}: {e}")))
        };
        let k = &f.kinds;
        // Sections and keys newer than a user's file come from the embedded rules.
        let embedded = || -> Result<RulesFile, RulesError> {
            toml::from_str(DEFAULT_RULES).map_err(|e| RulesError::Invalid {
                origin: "embedded".to_owned(),
                reason: e.to_string(),
            })
        };
        let newer =
            |pick: fn(&FailureIn) -> &Option<Vec<String>>| -> Result<Vec<String>, RulesError> {
                match pick(&k.failure) {
                    Some(v) => Ok(v.clone()),
                    None => Ok(pick(&embedded()?.kinds.failure).clone().unwrap_or_default()),
                }
            };
        let record = match &f.record {
            Some(r) => r.clone(),
            None => embedded()?.record.ok_or_else(|| RulesError::Invalid {
                origin: "embedded".to_owned(),
                reason: "no [record] section".to_owned(),
            })?,
        };
        Ok(Rules {
            origin: origin.to_owned(),
            default_class: f.defaults.class,
            pin_patterns: Patterns::new(&f.pins.patterns, true, &bad)?,
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
            error_lines: Patterns::new(&k.failure.error_lines, true, &bad)?,
            wrapper_lines: Patterns::new(&newer(|f| &f.wrapper_lines)?, false, &bad)?,
            passing_lines: Patterns::new(&newer(|f| &f.passing_lines)?, false, &bad)?,
            query_commands: re(&newer(|f| &f.query_commands)?)?,
            operational_tools: newer(|f| &f.operational_tools)?,
            reason_lines: Patterns::new(&newer(|f| &f.reason_lines)?, false, &bad)?,
            rationale: Patterns::new(&record.rationale, false, &bad)?,
            open: set(&record.open)?,
            uncertain: set(&record.uncertain)?,
            revert_commands: re(&k.rejected.revert_commands)?,
            rejected_phrases: Patterns::new(&k.rejected.phrases, false, &bad)?,
            rejected_within_requests: k.rejected.within_requests,
            decision_phrases: Patterns::new(&k.decision.phrases, false, &bad)?,
            chatter_max_chars: k.chatter.max_chars,
            max_keys: f.keys.max,
        })
    }

    /// Whether a line looks like an error (the failure rule's `error_lines`).
    pub fn is_error_line(&self, l: &str) -> bool {
        self.error_lines.is_match(l)
    }

    /// The first line of `lines` matching the first error pattern that matches any of them, with
    /// that pattern's rank (its index; lower is stronger).
    pub fn first_error_line<'a>(&self, lines: &[&'a str]) -> Option<(usize, &'a str)> {
        self.error_lines
            .each
            .iter()
            .enumerate()
            .find_map(|(k, r)| lines.iter().find(|l| r.is_match(l)).map(|l| (k, *l)))
    }

    /// The rank of a line no error pattern matched.
    pub fn error_line_count(&self) -> usize {
        self.error_lines.sources.len()
    }

    /// An editing tool (`[kinds.edit] tools`).
    pub fn is_edit_tool(&self, tool: &str) -> bool {
        self.edit_tools.iter().any(|t| t == tool)
    }

    /// A line after an error that states why (`versions that meet the requirements …`,
    /// `previously selected package …`): the failure rule's `reason_lines`.
    pub fn is_reason_line(&self, l: &str) -> bool {
        self.reason_lines.is_match(l)
    }

    /// A runner's summary of a failure reported above it (`error: test failed, …`).
    pub fn is_wrapper_line(&self, l: &str) -> bool {
        self.wrapper_lines.is_match(l)
    }

    /// A line that reports success (`test result: ok. … 0 failed`).
    pub fn is_passing_line(&self, l: &str) -> bool {
        self.passing_lines.is_match(l)
    }

    /// A command whose exit 1 answers a question (`grep`, `diff`, …).
    pub fn is_query_command(&self, stage: &str) -> bool {
        self.query_commands.iter().any(|r| r.is_match(stage))
    }

    /// A tool whose error is the harness refusing the call (`read`, `edit`, …).
    pub fn is_operational_tool(&self, tool: &str) -> bool {
        self.operational_tools.iter().any(|t| t == tool)
    }

    /// Where in `s` a decision's rationale starts (a causal connective), if it has one.
    pub fn rationale_start(&self, s: &str) -> Option<usize> {
        self.rationale.leftmost(s)
    }

    /// A sentence that leaves something open (a question to settle, "still open").
    pub fn is_open(&self, s: &str) -> bool {
        self.open.is_match(s)
    }

    /// A sentence that hedges its claim ("probably", "hypothesis (unconfirmed)").
    pub fn is_uncertain(&self, s: &str) -> bool {
        self.uncertain.is_match(s)
    }

    /// Whether a sentence gives an approach up (`[kinds.rejected] phrases`).
    pub fn is_rejection(&self, s: &str) -> bool {
        self.rejected_phrases.is_match(s)
    }

    /// Whether a sentence decides or gives up an approach.
    pub fn is_decision_or_rejection(&self, s: &str) -> bool {
        self.decision_phrases.is_match(s) || self.rejected_phrases.is_match(s)
    }

    fn vote(&self, kind: EpisodeKind) -> Option<&Vote> {
        self.votes.iter().find(|(k, _)| *k == kind).map(|(_, v)| v)
    }
}

/// A failed tool call, with the line that quotes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub message_index: usize,
    /// Index of the tool part in its message's parts.
    pub part_index: usize,
    pub request: Option<usize>,
    pub part_id: String,
    pub call_id: String,
    pub tool: String,
    /// The bash command (first line) or the tool's main input.
    pub command: String,
    pub exit: Option<i64>,
    /// The decisive line ([`super::evidence::decisive_line`]), exactly as recorded.
    pub line: String,
    /// The rank of the error pattern that chose `line` (lower = stronger).
    pub rank: usize,
    /// Lines after `line` that state its reason ([`super::evidence::Decisive::reasons`]).
    pub reasons: Vec<String>,
    pub kind: FailureKind,
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
    /// The failure that makes the message a rejection (the latest unclaimed one within
    /// `within_requests`): detection, not evidence.
    pub failure: Failure,
    /// What killed the approach, by the evidence rule; `None` when no failing command decided it.
    pub killed_by: Option<Killing>,
    /// The revert command or the assistant's sentence that gives it up.
    pub evidence: String,
    /// The rejecting message, and its step among the episode's ([`evidence::steps_of`]).
    pub message_index: usize,
    pub step: usize,
    /// The sentence that gives the approach up (text over reasoning) and its part id.
    pub words: Option<(String, String)>,
    /// The rejecting step's prose (its text, not its reasoning) and its first text part id.
    pub reason: Option<(String, String)>,
    /// The revert command (first line) and its call id.
    pub revert: Option<(String, String)>,
    /// The attempt: the latest step up to the evidence's that edited a file (else the latest with
    /// text), its prose and the files edited since the previous rejection.
    pub attempt: Option<Attempt>,
}

impl Rejection {
    /// e.g. `` `cargo build --offline`: bash exit 101 in request 3: "error: …" `` (for reasons),
    /// or what it came after when no failing command decided it.
    pub fn describe(&self, req_of: impl Fn(usize) -> Option<usize>) -> String {
        match &self.killed_by {
            Some(k) => {
                let at = req_of(k.message_index)
                    .map_or_else(String::new, |r| format!(" in request {r}"));
                format!("`{}`: {}{at}: \"{}\"", k.command, k.what(), k.line)
            }
            None => format!(
                "no failing command decided it (after {})",
                self.failure.describe()
            ),
        }
    }

    /// The same without our request numbering (for tiers).
    pub fn quote(&self) -> Option<String> {
        self.killed_by
            .as_ref()
            .map(|k| format!("`{}` ({}): {}", k.command, k.what(), k.quoted()))
    }
}

/// What was tried before a rejection.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub message_index: usize,
    /// The text part holding `text`.
    pub part_id: Option<String>,
    /// The message's prose, markdown emphasis removed, clipped at a sentence.
    pub text: Option<String>,
    /// Files edited from the previous rejection (or the episode start) to the rejecting message.
    pub files: Vec<String>,
}

/// How a rejected approach is named: what the assistant said it tried, else the files it
/// changed for it, else (nothing recorded names it) "an approach".
pub fn approach_name(text: Option<&str>, files: &[String]) -> String {
    match text {
        Some(t) if !t.trim().is_empty() => t.to_owned(),
        _ if !files.is_empty() => format!("the change to {}", files.join(", ")),
        _ => "an approach".to_owned(),
    }
}

/// A sentence of assistant text that states a choice.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The sentence, markdown emphasis removed.
    pub text: String,
    pub message_index: usize,
    pub part_id: String,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What classification found, for reasons and for the tier generators.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub objective: String,
    pub outcome: String,
    pub failures: Vec<Failure>,
    pub rejections: Vec<Rejection>,
    pub decisions: Vec<Decision>,
    pub files: Vec<String>,
    pub commands: Vec<String>,
    pub identifiers: Vec<String>,
    /// Todo status changes inside the episode ("<todo>: pending → completed").
    pub todos: Vec<String>,
    /// Where `objective` and `outcome` come from: (message index, text part id).
    pub objective_at: Option<(usize, String)>,
    pub outcome_at: Option<(usize, String)>,
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
    let first = opening_message(msgs);
    match first.user_kind {
        Some(UserKind::Human) => {
            kinds.insert(EpisodeKind::Turn);
        }
        Some(UserKind::ContinueAfterCompaction) | Some(UserKind::PromptReplayed) => {
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
        .any(|m| m.tool_parts().any(|(_, t)| t.behaves_as() == "task"));
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
                    let Some(re) = rules.pin_patterns.first_matching(sent) else {
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
            if let PartKind::FilesChanged { files, .. } = &p.kind {
                for f in files {
                    push_unique(&mut facts.files, relative_to(f, &trace.session.directory));
                }
            }
        }
        for (part_index, p, t) in m
            .parts
            .iter()
            .enumerate()
            .filter_map(|(k, p)| match &p.kind {
                PartKind::Tool(t) => Some((k, p, t)),
                _ => None,
            })
        {
            tool_calls += 1;
            let command = tool_command(t);
            if t.behaves_as() == "bash" {
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
            if rules
                .investigation_tools
                .iter()
                .any(|x| x == t.behaves_as())
                || (t.behaves_as() == "bash"
                    && rules
                        .investigation_commands
                        .iter()
                        .any(|r| r.is_match(&command)))
            {
                kinds.insert(EpisodeKind::Investigation);
            }
            if rules.edit_tools.iter().any(|x| x == t.behaves_as()) {
                kinds.insert(EpisodeKind::Edit);
            }
            if t.failed() {
                let d = evidence::decisive_line(evidence::result_text(t), rules);
                facts.failures.push(Failure {
                    message_index: mi,
                    part_index,
                    request: req_of.get(mi).copied().flatten(),
                    part_id: p.id.clone(),
                    call_id: t.call_id.clone(),
                    tool: t.tool.clone(),
                    command: clip_chars(first_line_of(&command), 160),
                    exit: t.exit_code(),
                    line: d.line,
                    rank: d.rank,
                    reasons: d.reasons,
                    kind: evidence::failure_kind(t, rules),
                });
            }
        }
    }
    if !facts.failures.is_empty() {
        kinds.insert(EpisodeKind::Failure);
    }

    // Rejections. A rejection event is an assistant step that reverts (a revert command) or
    // gives an approach up (a rejected phrase, in text or reasoning). It rejects the latest
    // failure before it that no earlier event claimed, if that failure is at most
    // `within_requests` requests back: that is detection. What killed the approach is chosen
    // among the results since the previous event by the evidence rule (`evidence`). The words
    // prefer what the assistant said (text over reasoning), plus the revert command.
    let steps = evidence::steps_of(msgs);
    let step_of =
        |f: &Failure| evidence::step_of(&steps, f.message_index - seg.first_message, f.part_index);
    let mut claimed: Option<usize> = None; // failures in steps up to this one are spoken for
    for (si, st) in steps.iter().enumerate() {
        let m = &msgs[st.off];
        // A compaction summary restates earlier turns; its words give up nothing here.
        if m.summary {
            continue;
        }
        let mi = seg.first_message + st.off;
        let parts = &m.parts[st.parts.clone()];
        let revert = parts.iter().find_map(|p| {
            let PartKind::Tool(t) = &p.kind else {
                return None;
            };
            let c = tool_command(t);
            (t.behaves_as() == "bash" && rules.revert_commands.iter().any(|r| r.is_match(&c)))
                .then(|| (first_line_of(&c).to_owned(), t.call_id.clone()))
        });
        let phrase = |with_text: bool| {
            parts.iter().find_map(|p| {
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
                    .find(|s| rules.rejected_phrases.is_match(s))
                    .map(|s| (clip_chars(&plain(s), 200), p.id.clone()))
            })
        };
        let words = phrase(true).or_else(|| phrase(false));
        if revert.is_none() && words.is_none() {
            continue;
        }
        let here = req_of.get(mi).copied().flatten();
        let unclaimed =
            |f: &&Failure| step_of(f).is_some_and(|fs| fs < si && claimed.is_none_or(|c| fs > c));
        let killed =
            facts
                .failures
                .iter()
                .rev()
                .filter(unclaimed)
                .find(|f| match (f.request, here) {
                    (Some(a), Some(b)) => b.saturating_sub(a) <= rules.rejected_within_requests,
                    _ => true,
                });
        let Some(f) = killed.cloned() else { continue };
        let from = claimed.map_or(0, |c| c + 1);
        let candidates: Vec<&Failure> = facts.failures.iter().filter(unclaimed).collect();
        let killed_by = evidence::killing_evidence(
            msgs,
            seg.first_message,
            &steps,
            from,
            si,
            &candidates,
            rules,
        );
        let evidence_step = killed_by
            .as_ref()
            .and_then(|k| {
                let off = k.message_index - seg.first_message;
                let part = msgs[off].parts.iter().position(|p| p.id == k.part_id)?;
                evidence::step_of(&steps, off, part)
            })
            .or_else(|| step_of(&f))
            .unwrap_or(si);
        let attempt = attempt(
            msgs,
            seg.first_message,
            &steps,
            (from, si, evidence_step),
            rules,
            &trace.session.directory,
        );
        let (reason_text, reason_part) = evidence::step_text(msgs, st);
        let reason = Some(super::prose::prose(&reason_text, 300))
            .filter(|r| !r.is_empty())
            .map(|r| (r, reason_part.unwrap_or_default().to_owned()));
        claimed = Some(si);
        let evidence = match (&words, &revert) {
            (Some((w, _)), Some((r, _))) => format!("\"{w}\"; reverted with `{r}`"),
            (Some((w, _)), None) => format!("\"{w}\""),
            (None, Some((r, _))) => format!("reverted with `{r}`"),
            (None, None) => continue,
        };
        facts.rejections.push(Rejection {
            failure: f,
            killed_by,
            evidence,
            message_index: mi,
            step: si,
            words,
            reason,
            revert,
            attempt,
        });
    }
    if !facts.rejections.is_empty() {
        kinds.insert(EpisodeKind::Rejected);
    }

    // Decisions: sentences of assistant text that state a choice (a compaction summary only
    // restates earlier ones).
    for (off, p, text) in assistant_prose(msgs) {
        for s in sentences(text) {
            if rules.decision_phrases.is_match(s) {
                let text = clip_chars(&plain(s), 300);
                if !facts.decisions.iter().any(|d| d.text == text) {
                    facts.decisions.push(Decision {
                        text,
                        message_index: seg.first_message + off,
                        part_id: p.id.clone(),
                    });
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
    (facts.objective, facts.objective_at) =
        objective(msgs, seg.first_message, compaction_msg.is_some());
    (facts.outcome, facts.outcome_at) = outcome(msgs, seg.first_message, &facts);
    let title = title(seg, msgs, compaction_msg, todos);

    let kinds: Vec<EpisodeKind> = kinds.into_iter().collect();
    let failed_request = msgs.iter().find_map(|m| {
        let e = m.error.as_ref()?;
        let r = req_of.get(trace.message_index(&m.id)?).copied().flatten()?;
        Some(format!("request {r} failed ({})", e.name))
    });
    let ev = Evidence {
        facts: &facts,
        req_of,
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
    req_of: &'a [Option<usize>],
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
        req_of,
        pins,
        children,
        compaction,
        text_chars,
        ref failed_request,
    } = *ev;
    match k {
        EpisodeKind::Failure => {
            // Every failure is named: the first few quoted, the rest by where they are.
            const QUOTED: usize = 3;
            let mut s = facts
                .failures
                .iter()
                .take(QUOTED)
                .map(Failure::describe)
                .collect::<Vec<_>>()
                .join("; ");
            let rest = &facts.failures[QUOTED.min(facts.failures.len())..];
            if !rest.is_empty() {
                let at: Vec<String> = rest
                    .iter()
                    .map(|f| {
                        f.request
                            .map_or_else(|| f.what(), |r| format!("{} in request {r}", f.what()))
                    })
                    .collect();
                s.push_str(&format!("; and {} more: {}", rest.len(), at.join(", ")));
            }
            s
        }
        EpisodeKind::Rejected => facts
            .rejections
            .first()
            .map(|r| {
                let req = |mi: usize| req_of.get(mi).copied().flatten();
                format!("{}; then {}", r.describe(req), r.evidence)
            })
            .unwrap_or_default(),
        EpisodeKind::Decision => facts
            .decisions
            .first()
            .map(|d| format!("\"{}\"", clip_chars(&d.text, 200)))
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

/// The assistant's own prose in `msgs`: (offset in `msgs`, part, text) of every text part the
/// model was shown, leaving out compaction summaries (they only restate earlier turns).
pub fn assistant_prose(msgs: &[Message]) -> impl Iterator<Item = (usize, &Part, &str)> {
    msgs.iter()
        .enumerate()
        .filter(|(_, m)| m.is_assistant() && !m.summary)
        .flat_map(|(off, m)| {
            m.parts.iter().filter_map(move |p| match &p.kind {
                PartKind::Text {
                    text,
                    ignored: false,
                    ..
                } => Some((off, p, text.as_str())),
                _ => None,
            })
        })
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
        // Leading list and quote markers (a marker and a space) are not part of the sentence;
        // `**` opening bold text is, so emphasis stays paired for `prose::plain`.
        let mut t1 = s.trim_start();
        while let Some(rest) = ["- ", "* ", "• ", "> ", ">"]
            .iter()
            .find_map(|m| t1.strip_prefix(m))
        {
            t1 = rest.trim_start();
        }
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

/// The message an episode opens with, text the agent injected ahead of it skipped (a turn's
/// kind and title are its prompt's).
fn opening_message(msgs: &[Message]) -> &Message {
    msgs.iter()
        .find(|m| m.user_kind != Some(UserKind::Injected))
        .unwrap_or(&msgs[0])
}

/// The main input of a tool call as one string (bash: the command; Codex's `exec_command` names
/// it `cmd`, its older `shell` gives it as an argv, `["bash", "-lc", script]`).
pub fn tool_command(t: &ToolPart) -> String {
    if let Some(argv) = t.input.get("command").and_then(Value::as_array) {
        let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
        return match words.as_slice() {
            [shell, flag, script] if is_shell(shell) && flag.starts_with('-') => {
                (*script).to_owned()
            }
            _ => words.join(" "),
        };
    }
    for k in [
        "command",
        "cmd",
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
    if t.behaves_as() != "bash" {
        if let Some(s) = t.input.get("pattern").and_then(Value::as_str) {
            v.push(s.to_owned());
        }
    }
    if t.behaves_as() == "apply_patch" {
        for f in patch_files(patch_text(&t.input)) {
            if !v.contains(&f) {
                v.push(f);
            }
        }
    }
    v
}

/// A shell that runs its script argument (`bash -lc script`).
fn is_shell(word: &str) -> bool {
    let name = word.rsplit('/').next().unwrap_or(word);
    matches!(
        name,
        "bash" | "sh" | "zsh" | "dash" | "fish" | "pwsh" | "powershell"
    )
}

/// The patch of an `apply_patch` call: its freeform input (a string), or the string under
/// `input` / `patchText` / `patch`.
fn patch_text(input: &Value) -> &str {
    if let Some(s) = input.as_str() {
        return s;
    }
    ["input", "patchText", "patch"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .unwrap_or("")
}

/// The files a patch in the `*** Begin Patch` format names: added, updated, deleted, and the
/// target of a move.
fn patch_files(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in patch.lines() {
        let l = l.trim_end();
        let f = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|p| l.strip_prefix(p))
        .map(str::trim);
        if let Some(f) = f.filter(|f| !f.is_empty()) {
            if !out.iter().any(|x| x == f) {
                out.push(f.to_owned());
            }
        }
    }
    out
}

/// The line that quotes a failure: the decisive line of the tool's error, else its output
/// ([`evidence::decisive_line`]). Exact, trailing whitespace trimmed.
pub fn error_line(t: &ToolPart, rules: &Rules) -> String {
    evidence::decisive_line(evidence::result_text(t), rules).line
}

/// `path` relative to `dir` when it lies under it, else unchanged.
pub(super) fn relative_to<'a>(path: &'a str, dir: &str) -> &'a str {
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

/// The human ask (clipped), and where it is: (message index, first text part id).
fn objective(
    msgs: &[Message],
    first: usize,
    is_compaction: bool,
) -> (String, Option<(usize, String)>) {
    if is_compaction {
        return (
            "summarize the conversation so far (compaction)".to_owned(),
            None,
        );
    }
    let Some((off, m)) = msgs
        .iter()
        .enumerate()
        .find(|(_, m)| m.user_kind == Some(UserKind::Human))
    else {
        return (String::new(), None);
    };
    let part = m.parts.iter().find_map(|p| match &p.kind {
        PartKind::Text { ignored: false, .. } => Some(p.id.clone()),
        _ => None,
    });
    (
        clip_chars(&m.text().replace('\n', " "), 300),
        part.map(|p| (first + off, p)),
    )
}

/// The first real sentence of the episode's last assistant text (not a markdown heading, at
/// least three words if there is one, emphasis removed), else the last failure or error; and
/// where it is.
fn outcome(msgs: &[Message], first: usize, facts: &Facts) -> (String, Option<(usize, String)>) {
    let last_text = msgs
        .iter()
        .enumerate()
        .rev()
        // A compaction summary restates earlier turns: not this episode's outcome.
        .filter(|(_, m)| m.is_assistant() && !m.summary)
        .find(|(_, m)| !m.text().trim().is_empty());
    match last_text {
        Some((off, m)) => {
            let ss: Vec<(&str, &str)> = m
                .parts
                .iter()
                .filter_map(|p| match &p.kind {
                    PartKind::Text {
                        text,
                        ignored: false,
                        ..
                    } => Some((p.id.as_str(), text.as_str())),
                    _ => None,
                })
                .flat_map(|(id, t)| sentences(t).into_iter().map(move |s| (id, s)))
                .filter(|(_, s)| !s.starts_with('#'))
                .collect();
            let pick = ss
                .iter()
                .find(|(_, s)| s.split_whitespace().count() >= 3)
                .or(ss.first());
            match pick {
                Some((id, s)) => (
                    clip_chars(&plain(s), 200),
                    Some((first + off, (*id).to_owned())),
                ),
                None => (String::new(), None),
            }
        }
        None => match (
            facts.failures.last(),
            msgs.iter().rev().find(|m| m.is_assistant()),
        ) {
            (Some(f), _) => (
                format!("failed: {}", f.line),
                Some((f.message_index, f.part_id.clone())),
            ),
            (None, Some(m)) => match &m.error {
                Some(e) => (format!("error: {}", e.name), None),
                None => ("no answer text".to_owned(), None),
            },
            (None, None) => ("no answer".to_owned(), None),
        },
    }
}

/// What was tried before a rejection: `(from, at, evidence)` are step indices (the window
/// start, the rejecting step, the evidence's step). The latest step in `from..=evidence` (before
/// `at`) that edits a file, else the latest with text; its prose (emphasis removed, at most 240
/// chars, cut at a sentence), or the latest text before it when it says nothing; and every file
/// edited in `from..at`.
fn attempt(
    msgs: &[Message],
    first: usize,
    steps: &[evidence::Step],
    (from, at, evidence_step): (usize, usize, usize),
    rules: &Rules,
    dir: &str,
) -> Option<Attempt> {
    let upto = evidence_step.min(at.saturating_sub(1));
    let tools = |st: &evidence::Step| {
        msgs[st.off].parts[st.parts.clone()]
            .iter()
            .filter_map(|p| match &p.kind {
                PartKind::Tool(t) => Some(t),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let edits = |st: &evidence::Step| tools(st).iter().any(|t| rules.is_edit_tool(t.behaves_as()));
    let has_text = |st: &evidence::Step| !evidence::step_text(msgs, st).0.trim().is_empty();
    let window = || steps.iter().enumerate().take(upto + 1).skip(from).rev();
    let (k, _) = window()
        .find(|(_, st)| edits(st))
        .or_else(|| window().find(|(_, st)| has_text(st)))?;
    // The step that edited may say nothing: then the latest text before it.
    let (_, said) = steps
        .iter()
        .enumerate()
        .take(k + 1)
        .skip(from)
        .rev()
        .find(|(_, st)| has_text(st))
        .unwrap_or((k, &steps[k]));
    let (text, part) = evidence::step_text(msgs, said);
    let text = Some(super::prose::prose(&text, 240)).filter(|t| !t.is_empty());
    let mut files = Vec::new();
    for st in steps.iter().take(at).skip(from) {
        for t in tools(st) {
            if rules.is_edit_tool(t.behaves_as()) {
                for f in tool_files(t) {
                    push_unique(&mut files, relative_to(&f, dir));
                }
            }
        }
    }
    Some(Attempt {
        message_index: first + said.off,
        part_id: part.map(str::to_owned),
        text,
        files,
    })
}

/// Whether `m` shows `s` to the model: in a text, a tool input or a tool output.
fn shows(m: &Message, s: &str) -> bool {
    m.parts.iter().any(|p| match &p.kind {
        PartKind::Text { text, .. } => text.contains(s),
        PartKind::Tool(t) => {
            t.output.as_deref().is_some_and(|o| o.contains(s)) || json_has_string(&t.input, s)
        }
        _ => false,
    })
}

fn json_has_string(v: &Value, s: &str) -> bool {
    match v {
        Value::String(x) => x.contains(s),
        Value::Array(a) => a.iter().any(|x| json_has_string(x, s)),
        Value::Object(o) => o.values().any(|x| json_has_string(x, s)),
        _ => false,
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
    Some(clip_chars(&plain(&t), 72))
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
    let first = opening_message(msgs);
    match first.user_kind {
        Some(UserKind::ContinueAfterCompaction) => return "continue after compaction".to_owned(),
        Some(UserKind::PromptReplayed) => {
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
    // A split inside a turn: the todo that started, else the first words of the episode. The
    // todowrite that started it ends the episode before, so its words name this one only if
    // this one shows them too (a later todowrite, a text): tiers quote the title, and a tier
    // holds nothing its episode does not.
    let started = todos
        .iter()
        .filter(|c| c.message_index + 1 == seg.first_message && c.to == "in_progress")
        .map(|c| c.content.clone())
        .find(|c| msgs.iter().any(|m| shows(m, c)));
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
            let s = match t.behaves_as() {
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

    /// Each rule's alternation answers as its patterns one by one do, on every line and
    /// sentence of the bundled recordings.
    #[test]
    fn an_alternation_answers_as_its_patterns_do() {
        let r = Rules::embedded().unwrap();
        // Each list with its patterns compiled one by one, as they were tried before.
        let lists: Vec<(&Patterns, Vec<Regex>)> = [
            &r.pin_patterns,
            &r.error_lines,
            &r.wrapper_lines,
            &r.passing_lines,
            &r.rationale,
            &r.rejected_phrases,
            &r.decision_phrases,
        ]
        .into_iter()
        .map(|p| {
            let each = p
                .sources
                .iter()
                .map(|x| RegexBuilder::new(x).case_insensitive(true).build().unwrap())
                .collect();
            (p, each)
        })
        .collect();
        let mut checked = 0;
        for name in ["M1.json", "B1.json", "C1.json"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../sample-traces")
                .join(name);
            let trace = crate::trace::load::open(Some(&path))
                .unwrap()
                .load_session(None)
                .unwrap();
            for m in &trace.messages {
                let text = m.text();
                let tool_text: String = m
                    .tool_parts()
                    .filter_map(|(_, t)| t.output.clone())
                    .collect::<Vec<_>>()
                    .join("\n");
                for l in text.lines().chain(tool_text.lines()) {
                    for s in std::iter::once(l).chain(sentences(l)) {
                        for (p, each) in &lists {
                            assert_eq!(p.is_match(s), each.iter().any(|x| x.is_match(s)), "{s:?}");
                            let min = each
                                .iter()
                                .filter_map(|x| x.find(s).map(|m| m.start()))
                                .min();
                            assert_eq!(p.leftmost(s), min, "{s:?}");
                            if !p.each.is_empty() {
                                assert_eq!(
                                    p.first_matching(s).map(Regex::as_str),
                                    each.iter().find(|x| x.is_match(s)).map(Regex::as_str)
                                );
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
        for (p, _) in &lists {
            assert!(p.any.is_some(), "every embedded list has its alternation");
        }
    }

    #[test]
    fn a_pattern_that_does_not_parse_alone_is_refused() {
        // `a)|(?:b` is valid inside `(?:…)`, not on its own: the alternation must not take it.
        let bad = |reason: String| RulesError::Invalid {
            origin: "test".to_owned(),
            reason,
        };
        let e = Patterns::new(&["a)|(?:b".to_owned()], false, &bad).unwrap_err();
        assert!(e.to_string().contains("pattern \"a)|(?:b\""), "{e}");
        assert!(Patterns::new(&["a".to_owned(), "b(c)".to_owned()], false, &bad).is_ok());
    }

    #[test]
    fn embedded_rules_parse() {
        let r = Rules::embedded().unwrap();
        assert!(r.pin_patterns.is_match("it must keep running"));
        let pinned = |s: &str| r.pin_patterns.is_match(s);
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

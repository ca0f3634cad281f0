//! What extraction finds, in one model for classification and the canonical record: a finding
//! is cited by where it is while an episode is classified ([`At`]: the message's index in the
//! trace, its part and call ids) and by stable ids in the record (`record::Cite`), so the
//! record's types are these with the citation mapped ([`Evidence::cite_as`]), not a second set.

use serde::{Deserialize, Serialize};

/// Where a finding is while an episode is classified.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct At {
    /// The message's index in the trace's messages.
    pub message_index: usize,
    pub part_id: String,
    pub call_id: String,
}

/// What a failed tool call says about the approach it tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// The command ran and failed: a verdict.
    Verdict,
    /// Exit 1 of a query: "no match", "files differ".
    NoMatch,
    /// A file tool refused the call or its target is missing.
    Refused,
}

impl FailureKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            FailureKind::Verdict => "verdict",
            FailureKind::NoMatch => "no-match",
            FailureKind::Refused => "refused",
        }
    }
}

/// How the killing evidence of a rejection was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KillRule {
    /// The rejecting message quotes a line of this result.
    Quoted,
    /// The strongest conclusive failure since the previous rejection.
    Strongest,
}

impl KillRule {
    pub fn as_str(&self) -> &'static str {
        match self {
            KillRule::Quoted => "quoted",
            KillRule::Strongest => "strongest",
        }
    }
}

/// A decisive line quoted, then its reason lines: `"…" — "…"; "…"` (source tiers and record
/// views quote a killing error the same way).
pub fn quote_with_reasons(line: &str, reasons: &[String]) -> String {
    let mut s = format!("\"{line}\"");
    if !reasons.is_empty() {
        let r: Vec<String> = reasons.iter().map(|r| format!("\"{r}\"")).collect();
        s.push_str(&format!(" — {}", r.join("; ")));
    }
    s
}

/// The tool result that killed a rejected approach, and its decisive line (see
/// [`super::evidence`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence<C> {
    pub tool: String,
    /// The bash command (first line) or the tool's main input.
    pub command: String,
    pub exit: Option<i64>,
    /// Whether the call failed (a quoted passing output can be the evidence).
    pub failed: bool,
    /// The decisive line, exactly as recorded (trailing whitespace trimmed).
    pub line: String,
    /// Lines after it that state why it failed (a resolver's conflicting requirements): the line
    /// alone can drop its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    pub rule: KillRule,
    pub cite: C,
}

impl<C> Evidence<C> {
    /// The decisive line quoted, then its reasons: `"…" — "…"; "…"`.
    pub fn quoted(&self) -> String {
        quote_with_reasons(&self.line, &self.reasons)
    }

    /// e.g. `bash exit 101` or `bash exit 0` (a quoted passing result) or `edit error`.
    pub fn what(&self) -> String {
        match self.exit {
            Some(c) => format!("{} exit {c}", self.tool),
            None if self.failed => format!("{} error", self.tool),
            None => self.tool.clone(),
        }
    }

    /// The same evidence cited another way.
    pub fn cite_as<D>(&self, cite: impl FnOnce(&C) -> D) -> Evidence<D> {
        Evidence {
            tool: self.tool.clone(),
            command: self.command.clone(),
            exit: self.exit,
            failed: self.failed,
            line: self.line.clone(),
            reasons: self.reasons.clone(),
            rule: self.rule,
            cite: cite(&self.cite),
        }
    }
}

/// A failed tool call and its decisive line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure<C> {
    pub tool: String,
    /// The bash command (first line) or the tool's main input.
    pub command: String,
    pub exit: Option<i64>,
    pub kind: FailureKind,
    /// The decisive line (`evidence::decisive_line`), exactly as recorded.
    pub line: String,
    pub cite: C,
}

impl<C> Failure<C> {
    /// e.g. `bash exit 1: "…"`: what the model saw, without our request numbering (for tiers).
    pub fn quote(&self) -> String {
        format!("{}: \"{}\"", self.what(), self.line)
    }

    /// e.g. `bash exit 1` or `edit error`.
    pub fn what(&self) -> String {
        match self.exit {
            Some(c) if c != 0 => format!("{} exit {c}", self.tool),
            _ => format!("{} error", self.tool),
        }
    }

    /// The same failure cited another way.
    pub fn cite_as<D>(&self, cite: impl FnOnce(&C) -> D) -> Failure<D> {
        Failure {
            tool: self.tool.clone(),
            command: self.command.clone(),
            exit: self.exit,
            kind: self.kind,
            line: self.line.clone(),
            cite: cite(&self.cite),
        }
    }
}

/// A piece of text and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Sourced<C> {
    pub text: String,
    pub cite: C,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionRule {
    /// A sentence with a decision phrase (`rules.toml` `[kinds.decision]`).
    Phrase,
    /// The attempt made right after a rejected alternative and not rejected itself.
    FollowsRejection,
}

/// A choice stated in the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision<C> {
    /// The sentence, markdown emphasis removed.
    pub text: String,
    /// From a causal connective (`[record] rationale`) in the decision, else the next sentence
    /// when it starts with one (the record works it out; classification leaves it `None`).
    pub rationale: Option<Sourced<C>>,
    pub rule: DecisionRule,
    pub cite: C,
}

impl<C> std::fmt::Display for Decision<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RejectionRule {
    /// A step that gave up an approach after a failure (classification's `rejected` kind).
    AfterFailure,
    /// A sentence that rejects an alternative in words, with no failure behind it ("Rejected: a
    /// trait object per backend, since …"): the sentence is the approach and its reason.
    Stated,
}

/// An approach that was given up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejected<C> {
    pub rule: RejectionRule,
    /// What was tried: the prose of the attempt (the sentence, when stated).
    pub approach: Option<Sourced<C>>,
    /// Files the attempt edited (the record keeps those its full tier shows).
    pub files: Vec<String>,
    /// `None`: no failing command decided it (the reason is the assistant's alone).
    pub killed_by: Option<Evidence<C>>,
    /// The rejecting message's prose.
    pub reason: Option<Sourced<C>>,
    pub revert: Option<Sourced<C>>,
    /// The rejecting message.
    pub cite: C,
}

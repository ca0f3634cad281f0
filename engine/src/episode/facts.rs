//! What classification finds in an episode beside its class and floor: the rejected approaches
//! (with what killed them), the attempts before them, the decisions stated, and the facts the
//! reasons and the tier generators quote.

use super::evidence::FailedCall;
use super::found::{At, Rejected, Sourced};

/// An approach that failed and was given up: what the record holds of it ([`Rejected`], cited
/// where classification found it), and what detection read beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub found: Rejected<At>,
    /// The failure that makes the message a rejection (the latest unclaimed one within
    /// `within_requests`): detection, not evidence.
    pub failure: FailedCall,
    /// The revert command or the assistant's sentence that gives it up.
    pub evidence: String,
    /// The rejecting step among the episode's ([`super::evidence::steps_of`]).
    pub step: usize,
    /// The sentence that gives the approach up (text over reasoning) and its part id.
    pub words: Option<(String, String)>,
}

impl Rejection {
    /// e.g. `` `cargo build --offline`: bash exit 101 in request 3: "error: …" `` (for reasons),
    /// or what it came after when no failing command decided it.
    pub fn describe(&self, req_of: impl Fn(usize) -> Option<usize>) -> String {
        match &self.found.killed_by {
            Some(k) => {
                let at = req_of(k.cite.message_index)
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
        self.found
            .killed_by
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

/// A sentence of assistant text that states a choice, where classification found it.
pub type Decision = super::found::Decision<super::found::At>;

/// What classification found, for reasons and for the tier generators.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The human ask, and where it is (a text part; none for a compaction's).
    pub objective: Sourced<Option<At>>,
    /// How the episode ended, and where it is (none for an outcome no part says, such as an
    /// API error's name).
    pub outcome: Sourced<Option<At>>,
    pub failures: Vec<FailedCall>,
    pub rejections: Vec<Rejection>,
    pub decisions: Vec<Decision>,
    pub files: Vec<String>,
    pub commands: Vec<String>,
    pub identifiers: Vec<String>,
    /// Todo status changes inside the episode ("<todo>: pending → completed").
    pub todos: Vec<String>,
}

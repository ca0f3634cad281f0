//! The classification rules: `rules.toml` (embedded; `--rules FILE` replaces it) parsed once
//! into compiled patterns and votes. What the rules say is data; this module only reads it.

use std::path::Path;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;

use super::model::{EpisodeKind, RetentionClass, Tier};

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
pub(super) struct Vote {
    #[serde(default)]
    pub(super) class: Option<RetentionClass>,
    #[serde(default)]
    pub(super) floor: Option<Tier>,
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
pub(super) struct Patterns {
    /// The patterns, each compiled: for the rule-order questions, else empty.
    pub(super) each: Vec<Regex>,
    /// `None` when there are no patterns, or their alternation could not be built (then `each`
    /// holds them all).
    pub(super) any: Option<Regex>,
    /// The patterns as written (their count is an error line's lowest rank).
    pub(super) sources: Vec<String>,
}

impl Patterns {
    /// `in_order`: keep each pattern compiled for [`Patterns::first_matching`] and the ranks.
    /// A pattern that does not parse on its own is an error (`bad`), so that the alternation
    /// means what its patterns mean one by one.
    pub(super) fn new(
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

    pub(super) fn is_match(&self, s: &str) -> bool {
        match &self.any {
            Some(r) => r.is_match(s),
            None => self.each.iter().any(|r| r.is_match(s)),
        }
    }

    /// Where the leftmost match of any pattern starts (the least of each pattern's first match).
    pub(super) fn leftmost(&self, s: &str) -> Option<usize> {
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
    pub(super) fn first_matching(&self, s: &str) -> Option<&Regex> {
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
    pub(super) default_class: RetentionClass,
    pub(super) pin_patterns: Patterns,
    pub(super) pin_max_chars: usize,
    pub(super) votes: Vec<(EpisodeKind, Vote)>,
    pub(super) investigation_tools: Vec<String>,
    pub(super) investigation_commands: Vec<Regex>,
    pub(super) edit_tools: Vec<String>,
    pub(super) error_lines: Patterns,
    pub(super) wrapper_lines: Patterns,
    pub(super) passing_lines: Patterns,
    pub(super) query_commands: Vec<Regex>,
    pub(super) operational_tools: Vec<String>,
    pub(super) reason_lines: Patterns,
    pub(super) rationale: Patterns,
    pub(super) open: RegexSet,
    pub(super) uncertain: RegexSet,
    pub(super) revert_commands: Vec<Regex>,
    pub(super) rejected_phrases: Patterns,
    pub(super) rejected_within_requests: usize,
    pub(super) decision_phrases: Patterns,
    pub(super) chatter_max_chars: usize,
    pub(super) max_keys: usize,
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

    pub(super) fn vote(&self, kind: EpisodeKind) -> Option<&Vote> {
        self.votes.iter().find(|(k, _)| *k == kind).map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episode::reading::sentences;

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
}

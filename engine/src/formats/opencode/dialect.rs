//! What each OpenCode release stored and sent, in one place: the loader and the compaction-request
//! builder ask a [`Dialect`] instead of comparing versions themselves.
//!
//! Boundaries (read from OpenCode's tagged sources and checked on recordings of 0.1.174, 0.5.29,
//! 1.0.0, 1.0.61, 1.1.65 and 1.18.33; see `docs/opencode-eras.md`):
//!
//! | family | storage | requests | compaction | `tokens.input` |
//! |---|---|---|---|---|
//! | 0.1.x | "v1" messages: `metadata` + inline parts without ids | one per `step-start`, only the last step's usage | `metadata.assistant.summary` | includes cache |
//! | 0.2–0.7 | MessageV2, parts in files, per-project tree | one per `step-start`, usage in each `step-finish` | `summary: true` assistant | includes cache |
//! | 0.8–1.0.68 | global JSON tree | one per assistant message | `summary: true` + "Use the above summary…" (0.10+) | includes cache until 1.0.61 |
//! | 1.0.69–1.1.x | global JSON tree | one per assistant message | `compaction` part, "What did we do so far?" | excludes cache |
//! | 1.2–1.14.18 | SQLite | one per assistant message | same, history as messages | excludes cache |
//! | 1.14.19–1.18.24 | SQLite | one per assistant message | kept tail; compaction sees the head, tool outputs clipped, earlier summary as text | excludes cache |
//! | 1.18.25+ | SQLite | one per assistant message | the head serialized into one user message | excludes cache |

use serde::Serialize;

/// An OpenCode version `(major, minor, patch)`.
pub type Version = (u64, u64, u64);

/// Parse "1.18.33", "v0.5.29", "1.0.0-beta.3" (the numeric prefix); `None` when there is none.
pub fn parse_version(v: &str) -> Option<Version> {
    let mut it = v
        .trim()
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit())
        .map(|s| s.parse::<u64>().ok());
    Some((
        it.next()??,
        it.next().flatten().unwrap_or(0),
        it.next().flatten().unwrap_or(0),
    ))
}

/// The release families whose stored data or requests differ (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// 0.1.x: "v1" messages with `metadata` and inline parts.
    V01,
    /// 0.2–0.7: several model requests (steps) per assistant message.
    MultiStep,
    /// 0.8–1.0.68: one request per assistant message; compaction is a `summary: true` assistant.
    SummaryMessage,
    /// 1.0.69–1.1.x: `compaction` part, JSON storage.
    CompactionPart,
    /// 1.2–1.14.18: SQLite.
    Sqlite,
    /// 1.14.19–1.18.24: kept tail, anchored summaries, clipped tool outputs for the compaction call.
    AnchoredSummary,
    /// 1.18.25+: the compaction call gets the history as one text.
    TextSummary,
}

impl Era {
    pub fn of(v: Version) -> Era {
        match v {
            v if v < (0, 2, 0) => Era::V01,
            v if v < (0, 8, 0) => Era::MultiStep,
            v if v < (1, 0, 69) => Era::SummaryMessage,
            v if v < (1, 2, 0) => Era::CompactionPart,
            v if v < (1, 14, 19) => Era::Sqlite,
            v if v < TEXT_SUMMARY_FROM => Era::AnchoredSummary,
            _ => Era::TextSummary,
        }
    }
    const ALL: [Era; 7] = [
        Era::V01,
        Era::MultiStep,
        Era::SummaryMessage,
        Era::CompactionPart,
        Era::Sqlite,
        Era::AnchoredSummary,
        Era::TextSummary,
    ];
    /// The era [`Era::as_str`] names.
    pub fn named(name: &str) -> Option<Era> {
        Era::ALL.into_iter().find(|e| e.as_str() == name)
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            Era::V01 => "0.1.x",
            Era::MultiStep => "0.2-0.7",
            Era::SummaryMessage => "0.8-1.0.68",
            Era::CompactionPart => "1.0.69-1.1.x",
            Era::Sqlite => "1.2-1.14.18",
            Era::AnchoredSummary => "1.14.19-1.18.24",
            Era::TextSummary => "1.18.25+",
        }
    }
}

/// The first release whose compaction call serializes the head into one user message. Between
/// v1.18.3 (the last tag read) and 1.18.33 (the binary read) the exact release is not known;
/// 1.18.25 is a third-party date. Sessions of 1.18.4–1.18.24 get a diagnostic when they compact.
pub const TEXT_SUMMARY_FROM: Version = (1, 18, 25);
/// The releases whose compaction form is uncertain (see [`TEXT_SUMMARY_FROM`]).
pub const TEXT_SUMMARY_UNCERTAIN: (Version, Version) = ((1, 18, 4), (1, 18, 24));

/// Whether `tokens.input` counts the cached part of the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputSemantics {
    /// prompt = input (OpenAI-style providers before 1.0.62).
    IncludesCache,
    /// prompt = input + cache read + cache write.
    ExcludesCache,
}

pub use crate::trace::model::CompactionShape;

/// The rules of one session's OpenCode release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dialect {
    pub era: Era,
    /// The version the rules come from (the session's, else inferred from the data).
    pub version: Option<Version>,
    /// The version was not recorded and the era was inferred from the data's shape.
    pub inferred: bool,
}

impl Default for Dialect {
    /// The newest rules (a session without a version and without older markers).
    fn default() -> Self {
        Dialect {
            era: Era::TextSummary,
            version: None,
            inferred: true,
        }
    }
}

/// Shapes of the data that only some releases write (for sessions without a version).
#[derive(Debug, Clone, Copy, Default)]
pub struct Markers {
    /// "v1" messages (`metadata` with inline parts).
    pub v1_messages: bool,
    /// An assistant message with more than one `step-start`.
    pub multi_step: bool,
    /// A `compaction` part.
    pub compaction_part: bool,
    /// A `tail_start_id` on a compaction part.
    pub tail_start: bool,
    /// A `summary: true` assistant without a compaction message before it.
    pub summary_message: bool,
}

impl Dialect {
    /// The rules a trace was read with, from what its origin recorded of them.
    pub fn of(origin: &crate::trace::model::Origin) -> Dialect {
        match Era::named(origin.rules) {
            Some(era) => Dialect {
                era,
                version: origin.rules_version,
                inferred: origin.rules_version.is_none(),
            },
            None => Dialect::default(),
        }
    }

    /// What the neutral core needs of these rules.
    pub fn wire(&self) -> crate::trace::model::WireRules {
        crate::trace::model::WireRules {
            tool_results_as_json: self.json_encodes_tool_results(),
            compaction_shape: self.compaction_shape(),
            quotes_previous_summary: self.quotes_previous_summary(),
            summary_clips_tool_outputs_at: self
                .clips_summary_tool_outputs()
                .then_some(super::compaction_request::CLIP_CHARS),
            summary_call_own_system: true,
            completed_answer: match self.era {
                Era::V01 => crate::trace::model::CompletedAnswer::ToolCallsMerged,
                Era::MultiStep => crate::trace::model::CompletedAnswer::ErrorsPrefixed,
                _ => crate::trace::model::CompletedAnswer::AsSent,
            },
        }
    }

    /// The rules for a session created by `version`, or inferred from `markers` when the version is
    /// missing or unreadable.
    pub fn detect(version: Option<&str>, markers: &Markers) -> Dialect {
        Dialect::detect_with(version, || *markers)
    }

    /// [`Dialect::detect`] with the markers found only when they are needed (a scan of every
    /// message and part, for a session that has no readable version).
    pub fn detect_with(version: Option<&str>, markers: impl FnOnce() -> Markers) -> Dialect {
        if let Some(v) = version.and_then(parse_version) {
            return Dialect {
                era: Era::of(v),
                version: Some(v),
                inferred: false,
            };
        }
        let markers = &markers();
        let era = if markers.v1_messages {
            Era::V01
        } else if markers.multi_step {
            Era::MultiStep
        } else if markers.summary_message && !markers.compaction_part {
            Era::SummaryMessage
        } else if markers.tail_start {
            Era::TextSummary
        } else if markers.compaction_part {
            Era::Sqlite
        } else {
            Era::TextSummary
        };
        Dialect {
            era,
            version: None,
            inferred: true,
        }
    }

    fn at_least(&self, v: Version) -> bool {
        match self.version {
            Some(mine) => mine >= v,
            None => self.era >= Era::of(v),
        }
    }

    /// Messages in id order (the JSON releases list files by name), not `(time.created, id)`.
    pub fn orders_by_id(&self) -> bool {
        self.era < Era::Sqlite
    }

    /// One assistant message holds several model requests, one per `step-start`.
    pub fn multi_step(&self) -> bool {
        self.era <= Era::MultiStep
    }

    /// Only the last step's usage is stored (no `step-finish` parts).
    pub fn last_step_usage_only(&self) -> bool {
        self.era == Era::V01
    }

    /// Compaction is a `summary: true` assistant with no compaction message before it.
    pub fn summary_message_compaction(&self) -> bool {
        self.era <= Era::SummaryMessage
    }

    /// `tokens.input` semantics for a provider (`providerID`).
    pub fn input_semantics(&self, provider: &str) -> InputSemantics {
        // Before 1.0.62 only the Anthropic SDK packages reported input without the cache.
        let anthropic = matches!(
            provider,
            "anthropic" | "amazon-bedrock" | "google-vertex-anthropic"
        );
        if self.at_least((1, 0, 62)) || anthropic {
            InputSemantics::ExcludesCache
        } else {
            InputSemantics::IncludesCache
        }
    }

    /// Stored reasoning is sent back to the model (from 0.9; before, only the in-flight steps
    /// of one call carried it).
    pub fn sends_stored_reasoning(&self) -> bool {
        self.at_least((0, 9, 0))
    }

    /// Whether later requests still send an assistant message that ended in an error. 0.4.43–0.7
    /// dropped every errored message, 0.8–0.9 kept aborted ones, from 0.10 only aborted ones with
    /// content beyond `step-start`/reasoning are kept. (Its own later steps saw it in any case.)
    pub fn resends_errored(&self, error_name: &str, has_content: bool) -> bool {
        let aborted = error_name == "MessageAbortedError";
        if !self.at_least((0, 4, 43)) {
            true
        } else if !self.at_least((0, 8, 0)) {
            false
        } else if !self.at_least((0, 10, 0)) {
            aborted
        } else {
            aborted && has_content
        }
    }

    /// 0.1.x sent every tool result as a JSON-encoded string (quotes and escapes included).
    pub fn json_encodes_tool_results(&self) -> bool {
        self.era == Era::V01
    }

    /// Whether later requests sent assistant message `m` (false only for an errored one this
    /// release dropped).
    pub fn resends(&self, m: &crate::trace::model::Message) -> bool {
        match m.error.as_ref().filter(|_| m.is_assistant()) {
            Some(e) => self.resends_errored(&e.name, m.has_content()),
            None => true,
        }
    }

    /// The compaction call's request shape.
    pub fn compaction_shape(&self) -> CompactionShape {
        match self.era {
            Era::V01 | Era::MultiStep | Era::SummaryMessage => CompactionShape::Messages,
            Era::CompactionPart | Era::Sqlite => CompactionShape::MessagesWithCompaction,
            Era::AnchoredSummary => CompactionShape::HeadClipped,
            Era::TextSummary => CompactionShape::HeadAsText,
        }
    }

    /// 1.14.19–1.14.20 still sent earlier compaction pairs inside the head; from 1.14.21 they are
    /// removed and the last summary is quoted.
    pub fn quotes_previous_summary(&self) -> bool {
        self.at_least((1, 14, 21))
    }

    /// The compaction call clips tool outputs (1.14.21+: the head as text, or clipped with the
    /// last summary quoted).
    pub fn clips_summary_tool_outputs(&self) -> bool {
        let shape = self.compaction_shape();
        shape == CompactionShape::HeadAsText
            || (shape == CompactionShape::HeadClipped && self.quotes_previous_summary())
    }

    /// The compaction call's form for this release is uncertain (see [`TEXT_SUMMARY_FROM`]).
    pub fn compaction_shape_uncertain(&self) -> bool {
        let (lo, hi) = TEXT_SUMMARY_UNCERTAIN;
        self.version.is_some_and(|v| v >= lo && v <= hi)
    }

    /// Human-readable: "0.5.29 (0.2-0.7)" or "inferred 0.2-0.7".
    pub fn describe(&self) -> String {
        match self.version {
            Some((a, b, c)) => format!("{a}.{b}.{c} ({})", self.era.as_str()),
            None => format!("inferred {}", self.era.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pick_their_era() {
        for (v, want) in [
            ("0.1.174", Era::V01),
            ("0.5.29", Era::MultiStep),
            ("v0.7.9", Era::MultiStep),
            ("0.8.0", Era::SummaryMessage),
            ("1.0.61", Era::SummaryMessage),
            ("1.0.0-beta.2", Era::SummaryMessage),
            ("1.0.69", Era::CompactionPart),
            ("1.1.65", Era::CompactionPart),
            ("1.2.0", Era::Sqlite),
            ("1.14.18", Era::Sqlite),
            ("1.14.19", Era::AnchoredSummary),
            ("1.18.3", Era::AnchoredSummary),
            ("1.18.33", Era::TextSummary),
        ] {
            assert_eq!(parse_version(v).map(Era::of), Some(want), "{v}");
        }
    }

    #[test]
    fn token_semantics_follow_the_release_and_provider() {
        use InputSemantics::*;
        for (version, provider, want) in [
            ("0.5.29", "openai", IncludesCache),
            ("0.5.29", "anthropic", ExcludesCache),
            ("1.0.61", "mock", IncludesCache),
            ("1.0.62", "mock", ExcludesCache),
            ("1.1.65", "mock", ExcludesCache),
        ] {
            let d = Dialect::detect(Some(version), &Markers::default());
            assert_eq!(d.input_semantics(provider), want, "{version} {provider}");
        }
    }

    #[test]
    fn markers_stand_in_for_a_missing_version() {
        let m = Markers {
            multi_step: true,
            ..Markers::default()
        };
        let d = Dialect::detect(None, &m);
        assert!(d.inferred && d.multi_step() && d.orders_by_id());
        let d = Dialect::detect(Some("garbage"), &Markers::default());
        assert_eq!(d.era, Era::TextSummary);
        assert!(!d.orders_by_id());
    }
}

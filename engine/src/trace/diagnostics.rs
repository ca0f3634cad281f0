//! Everything a loader skipped or repaired, with its reason and a count. The rest of the data loads.

use serde::Serialize;

/// What kind of trouble a loader met. `kind` strings are stable (they appear in `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    CorruptJson,
    MissingField,
    UnknownPartType,
    UnknownToolStatus,
    OrphanPart,
    OrphanMessage,
    DanglingTool,
    TruncatedExport,
    UnreadableFile,
    DuplicateId,
    CyclicParent,
    NonUtf8,
    PartialWrite,
    MergedFromStorage,
    NoRequests,
    /// Release rules applied where the stored format leaves a choice (each says which rule and
    /// how often): part ids made for 0.1.x inline parts, one request per step of a multi-step
    /// message, usage missing for earlier steps, id order of JSON releases, the directory taken
    /// from `path.cwd`, the token semantics of `tokens.input`, a version inferred from the data,
    /// an uncertain compaction form.
    RuleInlinePartIds,
    RuleStepRequests,
    RuleStepUsage,
    /// A release that stored each turn's system prompt, read without it (a migration dropped it).
    RuleSystemPrompt,
    RuleMessageOrder,
    RuleDirectory,
    RuleTokenSemantics,
    RuleVersion,
    RuleCompaction,
    /// A line of a JSON-lines file (a transcript, a rollout) longer than the reader's bound:
    /// skipped unread.
    OversizedLine,
    /// Records of a branching transcript left off the active branch (a rewind or an edited
    /// prompt; the newest leaf's branch is the conversation).
    RuleActiveBranch,
    /// A transcript record written again with the same id: the last version is kept.
    RuleRewrittenRecord,
    /// Responses a resumed session file copied from the session it resumed: history there,
    /// counted (billed) in the session they came from.
    RuleResumedCopy,
    /// Damaged JSON that was repaired (see [`crate::trace::lenient`]) or read piece by piece.
    RepairedJson,
    /// A token count that is not a non-negative integer (a string, negative, null, fractional
    /// or absurdly large): read as the nearest count and reported.
    BadTokenCount,
    /// A database table or page that could not be read (missing, corrupt, unreadable).
    DatabaseDamage,
    /// An id that is not a plain file name (`../…`, a separator, a control character) where the
    /// id names a file: that session, message or part is skipped (see [`crate::trace::plain_name`]).
    UnsafeId,
    /// A damaged span of an export (a flipped byte, a stray bracket, a syntax error) in a file
    /// that goes on after it: what it covered is skipped, reading resumes at the next message or
    /// part. (A file that ends inside a value is [`DiagnosticKind::TruncatedExport`].)
    DamagedSpan,
    Other,
}

impl DiagnosticKind {
    /// A release rule applied (not damage): the data loaded whole, this says how it was read.
    pub fn is_rule(&self) -> bool {
        matches!(
            self,
            DiagnosticKind::RuleInlinePartIds
                | DiagnosticKind::RuleStepRequests
                | DiagnosticKind::RuleStepUsage
                | DiagnosticKind::RuleSystemPrompt
                | DiagnosticKind::RuleMessageOrder
                | DiagnosticKind::RuleDirectory
                | DiagnosticKind::RuleTokenSemantics
                | DiagnosticKind::RuleVersion
                | DiagnosticKind::RuleCompaction
                | DiagnosticKind::RuleActiveBranch
                | DiagnosticKind::RuleRewrittenRecord
                | DiagnosticKind::RuleResumedCopy
        )
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            DiagnosticKind::CorruptJson => "corrupt_json",
            DiagnosticKind::MissingField => "missing_field",
            DiagnosticKind::UnknownPartType => "unknown_part_type",
            DiagnosticKind::UnknownToolStatus => "unknown_tool_status",
            DiagnosticKind::OrphanPart => "orphan_part",
            DiagnosticKind::OrphanMessage => "orphan_message",
            DiagnosticKind::DanglingTool => "dangling_tool",
            DiagnosticKind::TruncatedExport => "truncated_export",
            DiagnosticKind::UnreadableFile => "unreadable_file",
            DiagnosticKind::DuplicateId => "duplicate_id",
            DiagnosticKind::CyclicParent => "cyclic_parent",
            DiagnosticKind::NonUtf8 => "non_utf8",
            DiagnosticKind::PartialWrite => "partial_write",
            DiagnosticKind::MergedFromStorage => "merged_from_storage",
            DiagnosticKind::NoRequests => "no_requests",
            DiagnosticKind::RuleInlinePartIds => "rule_inline_part_ids",
            DiagnosticKind::RuleStepRequests => "rule_step_requests",
            DiagnosticKind::RuleStepUsage => "rule_step_usage",
            DiagnosticKind::RuleSystemPrompt => "rule_system_prompt",
            DiagnosticKind::RuleMessageOrder => "rule_message_order",
            DiagnosticKind::RuleDirectory => "rule_directory",
            DiagnosticKind::RuleTokenSemantics => "rule_token_semantics",
            DiagnosticKind::RuleVersion => "rule_version",
            DiagnosticKind::RuleCompaction => "rule_compaction",
            DiagnosticKind::OversizedLine => "oversized_line",
            DiagnosticKind::RuleActiveBranch => "rule_active_branch",
            DiagnosticKind::RuleRewrittenRecord => "rule_rewritten_record",
            DiagnosticKind::RuleResumedCopy => "rule_resumed_copy",
            DiagnosticKind::RepairedJson => "repaired_json",
            DiagnosticKind::BadTokenCount => "bad_token_count",
            DiagnosticKind::DatabaseDamage => "database_damage",
            DiagnosticKind::UnsafeId => "unsafe_id",
            DiagnosticKind::DamagedSpan => "damaged_span",
            DiagnosticKind::Other => "other",
        }
    }
}

/// One kind of diagnostic with how often it happened and the first example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub count: usize,
    pub example: String,
}

/// Diagnostics grouped by kind, in first-seen order (deterministic for a given input).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }
    /// Record one occurrence; the first example of a kind is kept.
    pub fn push(&mut self, kind: DiagnosticKind, example: impl Into<String>) {
        if let Some(d) = self.items.iter_mut().find(|d| d.kind == kind) {
            d.count += 1;
        } else {
            self.items.push(Diagnostic {
                kind,
                count: 1,
                example: example.into(),
            });
        }
    }
    /// Record `n` occurrences at once (nothing when `n` is 0).
    pub fn push_n(&mut self, kind: DiagnosticKind, n: usize, example: impl Into<String>) {
        if n == 0 {
            return;
        }
        self.push(kind, example);
        if let Some(d) = self.items.iter_mut().find(|d| d.kind == kind) {
            d.count += n - 1;
        }
    }
    pub fn extend(&mut self, other: &Diagnostics) {
        for d in &other.items {
            if let Some(mine) = self.items.iter_mut().find(|m| m.kind == d.kind) {
                mine.count += d.count;
            } else {
                self.items.push(d.clone());
            }
        }
    }
    pub fn items(&self) -> &[Diagnostic] {
        &self.items
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn count(&self, kind: DiagnosticKind) -> usize {
        self.items
            .iter()
            .find(|d| d.kind == kind)
            .map_or(0, |d| d.count)
    }
    /// Diagnostics that report damage or skipped data (release rules left out).
    pub fn problems(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| !d.kind.is_rule())
    }
    pub fn total(&self) -> usize {
        self.items.iter().map(|d| d.count).sum()
    }
}

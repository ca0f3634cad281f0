//! Episodes, retention classes, floors, tiers and their representations (MODEL §1, §5).
//! Types only; segmentation, classification and generation live beside this file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A fidelity level, ordered from most to least faithful. The first four are tiers with
/// representations; `Dropped` is not a tier but pruning, legal only for `discardable` episodes.
/// `Ord` follows depth: `Full < Dense < Compact < Anchor < Dropped` ("lower tier" = greater).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    #[default]
    Full,
    Dense,
    Compact,
    Anchor,
    Dropped,
}

impl Tier {
    /// The four tiers that have representations, most faithful first.
    pub const TIERS: [Tier; 4] = [Tier::Full, Tier::Dense, Tier::Compact, Tier::Anchor];
    /// Every level, including `Dropped`.
    pub const ALL: [Tier; 5] = [
        Tier::Full,
        Tier::Dense,
        Tier::Compact,
        Tier::Anchor,
        Tier::Dropped,
    ];
    pub fn as_str(&self) -> &'static str {
        match self {
            Tier::Full => "full",
            Tier::Dense => "dense",
            Tier::Compact => "compact",
            Tier::Anchor => "anchor",
            Tier::Dropped => "dropped",
        }
    }
    /// 0 for full … 4 for dropped.
    pub fn depth(&self) -> usize {
        *self as usize
    }
    pub fn from_depth(d: usize) -> Option<Tier> {
        Tier::ALL.get(d).copied()
    }
    /// One level less faithful (`None` below dropped).
    pub fn lower(&self) -> Option<Tier> {
        Tier::from_depth(self.depth() + 1)
    }
    /// One level more faithful (`None` above full).
    pub fn higher(&self) -> Option<Tier> {
        self.depth().checked_sub(1).and_then(Tier::from_depth)
    }
    /// Whether the level has a representation (one of [`Tier::TIERS`]; not `Dropped`).
    pub fn is_representation(&self) -> bool {
        *self != Tier::Dropped
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Tier {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "full" | "p1" => Ok(Tier::Full),
            "dense" | "p2" => Ok(Tier::Dense),
            "compact" | "p3" => Ok(Tier::Compact),
            "anchor" | "p4" => Ok(Tier::Anchor),
            "dropped" | "drop" => Ok(Tier::Dropped),
            other => Err(format!(
                "unknown tier {other:?} (expected full, dense, compact, anchor or dropped)"
            )),
        }
    }
}

/// What transformations an episode permits. Never changed by pressure (law 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RetentionClass {
    /// Exact only: the floor is `full`.
    Pin,
    /// Any legal tier down to the floor.
    Compressible,
    /// May also be dropped.
    Discardable,
}

impl RetentionClass {
    pub fn as_str(&self) -> &'static str {
        match self {
            RetentionClass::Pin => "pin",
            RetentionClass::Compressible => "compressible",
            RetentionClass::Discardable => "discardable",
        }
    }
}

/// Kinds of work an episode holds (an episode may have several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EpisodeKind {
    Turn,
    Investigation,
    Edit,
    Failure,
    Decision,
    Constraint,
    Rejected,
    Compaction,
    Continuation,
    Subagent,
    Chatter,
}

impl EpisodeKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            EpisodeKind::Turn => "turn",
            EpisodeKind::Investigation => "investigation",
            EpisodeKind::Edit => "edit",
            EpisodeKind::Failure => "failure",
            EpisodeKind::Decision => "decision",
            EpisodeKind::Constraint => "constraint",
            EpisodeKind::Rejected => "rejected",
            EpisodeKind::Compaction => "compaction",
            EpisodeKind::Continuation => "continuation",
            EpisodeKind::Subagent => "subagent",
            EpisodeKind::Chatter => "chatter",
        }
    }
}

/// How a representation was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Each tier built independently from the raw parts.
    Source,
    /// Each tier built from the one above.
    Cascade,
    /// Views rendered from the episode's canonical record (`episode::record`).
    Record,
    /// Written by someone else (`*.tiers.json`, Magic Context compartments).
    External,
}

impl Strategy {
    pub fn as_str(&self) -> &'static str {
        match self {
            Strategy::Source => "source",
            Strategy::Cascade => "cascade",
            Strategy::Record => "record",
            Strategy::External => "external",
        }
    }

    /// Whether a tier below `full` is generated from the tier above it (its generation reads
    /// that tier), rather than from the raw messages.
    pub fn reads_tier_above(&self) -> bool {
        matches!(self, Strategy::Cascade)
    }
}

/// One message's contribution to a rendered context at one tier (MODEL §1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chunk {
    /// The message this chunk renders (for tiers below full: the first source message).
    pub message_id: String,
    /// Index of that message in `Trace::messages` (the replay renders the active episode's
    /// chunks whose message comes before the request's own message).
    pub message_index: usize,
    /// The step of a multi-step assistant message (OpenCode ≤0.7: one model request per step)
    /// this chunk renders; 0 for every other message.
    #[serde(skip_serializing_if = "is_zero")]
    pub step: u32,
    /// Content hash (xxh3 of the text); equal hashes mean an unchanged chunk for divergence.
    pub hash: u64,
    pub tokens: u32,
    pub text: String,
    /// A compaction artefact of the recording (compaction message, summary, synthetic continue,
    /// replayed user message): left out by the `full` counterfactual.
    pub artefact: bool,
    /// The same chunk with the recorded prunes applied (tool outputs replaced by
    /// "[Old tool result content cleared]"), from `time_compacted` on. Only on full-tier chunks
    /// of messages that have a pruned tool output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned: Option<PrunedChunk>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Chunk {
    /// Where the chunk sits in the conversation: its message and step (compare with
    /// [`crate::trace::Request::position`]).
    pub fn position(&self) -> (usize, u32) {
        (self.message_index, self.step)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrunedChunk {
    pub time_compacted: i64,
    pub hash: u64,
    pub tokens: u32,
    pub text: String,
}

/// A generator name or a contract: most are constants, named by every representation of a
/// session (several per episode), so they are not copied per representation.
pub type Text = std::borrow::Cow<'static, str>;

/// One generated text of an episode at one tier, with its lineage (MODEL §1, the chapter's
/// "representation object"). Generated once at load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Representation {
    pub episode_id: String,
    pub tier: Tier,
    pub strategy: Strategy,
    /// Generator name and version, e.g. `tierscope-source/1`.
    pub generator: Text,
    /// Shared by the tiers of one episode (they render the same messages).
    pub source_message_ids: std::sync::Arc<[String]>,
    /// What this tier promises to keep (e.g. "pinned spans verbatim; errors' first lines exact").
    pub contract: Text,
    pub chunks: Vec<Chunk>,
    /// Sum of the chunks' tokens.
    pub tokens: u32,
}

impl Representation {
    /// Empty every chunk's text (and its pruned variant's); hashes and token counts stay. Only
    /// for a load that will never show or replay the texts (see
    /// `EpisodeOptions::drop_tier_texts`).
    pub fn drop_texts(&mut self) {
        for c in &mut self.chunks {
            c.text = String::new();
            if let Some(p) = &mut c.pruned {
                p.text = String::new();
            }
        }
    }

    pub fn text(&self) -> String {
        self.chunks
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A span that must survive verbatim in every tier (MODEL §1 "item / pin").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pin {
    pub message_id: String,
    pub text: String,
    /// Why it is pinned (rule name or "annotation").
    pub reason: String,
}

/// A contiguous run of messages forming one arc of work; the unit that gets tiers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    /// `E0`, `E1`, … in time order.
    pub id: String,
    pub index: usize,
    /// Inclusive range of indices into `Trace::messages`.
    pub first_message: usize,
    pub last_message: usize,
    /// Requests (assistant messages) inside the episode; `None` when it has none.
    pub first_request: Option<usize>,
    pub last_request: Option<usize>,
    pub time_start: i64,
    pub time_end: i64,
    pub title: String,
    pub kinds: Vec<EpisodeKind>,
    pub class: RetentionClass,
    /// The lowest level the episode may reach (`Dropped` only for discardable episodes).
    pub floor: Tier,
    /// Human-readable reasons naming the rule and quoting the evidence.
    pub class_reasons: Vec<String>,
    pub floor_reasons: Vec<String>,
    pub pins: Vec<Pin>,
    /// Relevance keys: file paths and patterns from tool inputs, identifiers from user text.
    pub keys: Vec<String>,
    /// For a continuation: the episode it continues.
    pub continues: Option<String>,
    /// Sub-agent sessions spawned from this episode.
    pub children: Vec<String>,
    /// Generated representations by tier. A tier missing here was not generated (see `tier_notes`).
    pub tiers: BTreeMap<Tier, Representation>,
    pub tier_notes: Vec<String>,
    /// Importance in [0, 1] when the source has one (Magic Context), for the decay policy.
    pub importance: Option<f64>,
}

impl Episode {
    pub fn representation(&self, tier: Tier) -> Option<&Representation> {
        self.tiers.get(&tier)
    }
    pub fn tokens(&self, tier: Tier) -> u32 {
        self.tiers.get(&tier).map_or(0, |r| r.tokens)
    }
    /// The legal range: tiers at or above the floor that have a representation smaller than the
    /// legal tier above it, most faithful first, plus `Dropped` for discardable episodes.
    pub fn legal_tiers(&self) -> Vec<Tier> {
        let mut v: Vec<Tier> = Vec::new();
        let mut above: Option<u32> = None;
        for t in Tier::TIERS.into_iter().filter(|t| *t <= self.floor) {
            let Some(r) = self.tiers.get(&t) else {
                continue;
            };
            if above.is_none_or(|n| r.tokens < n) {
                above = Some(r.tokens);
                v.push(t);
            }
        }
        if self.class == RetentionClass::Discardable && self.floor == Tier::Dropped {
            v.push(Tier::Dropped);
        }
        v
    }
    pub fn contains_request(&self, r: usize) -> bool {
        matches!((self.first_request, self.last_request), (Some(a), Some(b)) if a <= r && r <= b)
    }
    pub fn has_kind(&self, k: EpisodeKind) -> bool {
        self.kinds.contains(&k)
    }
}

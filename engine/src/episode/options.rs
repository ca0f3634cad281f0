//! What a load asks of the episode stage: segmentation, tier source, tokenizer, rules, sidecars.

use std::path::PathBuf;

use super::rules::Rules;
use super::segment::Segmentation;
use crate::tokens::TokenizerKind;

/// Where tiers come from (`--tiers`, MODEL §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TierSource {
    /// Each tier built independently from the raw parts (default).
    #[default]
    Source,
    /// Each tier built from the one above.
    Cascade,
    /// Views rendered deterministically from a canonical record of the episode.
    Record,
    /// Written by someone else: `*.tiers.json` or Magic Context's compartments. Episodes without
    /// an external representation keep the `source` tiers.
    External,
}

impl TierSource {
    pub fn as_str(&self) -> &'static str {
        match self {
            TierSource::Source => "source",
            TierSource::Cascade => "cascade",
            TierSource::Record => "record",
            TierSource::External => "external",
        }
    }

    /// The strategies tierscope generates itself, in the order research tables list them
    /// (`external` needs someone else's tiers). A model-written strategy joins this list.
    pub const GENERATED: [TierSource; 3] =
        [TierSource::Source, TierSource::Cascade, TierSource::Record];

    /// The representation strategy of the tiers this source generates.
    pub fn strategy(&self) -> super::model::Strategy {
        match self {
            TierSource::Source => super::model::Strategy::Source,
            TierSource::Cascade => super::model::Strategy::Cascade,
            TierSource::Record => super::model::Strategy::Record,
            TierSource::External => super::model::Strategy::External,
        }
    }
}

impl std::str::FromStr for TierSource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "source" => Ok(TierSource::Source),
            "cascade" => Ok(TierSource::Cascade),
            "record" => Ok(TierSource::Record),
            "external" => Ok(TierSource::External),
            other => Err(format!(
                "unknown tier source {other:?} (expected source, cascade, record or external)"
            )),
        }
    }
}

/// Everything [`crate::session::from_trace`] needs besides the trace.
#[derive(Debug, Clone, Default)]
pub struct EpisodeOptions {
    pub segmentation: Segmentation,
    pub tiers: TierSource,
    pub tokenizer: TokenizerKind,
    /// `None` = the embedded default rules.
    pub rules: Option<Rules>,
    /// Split a turn after this many requests (user-turn segmentation).
    pub max_requests: Option<usize>,
    /// Sidecars already found and parsed (annotations, tiers, probes).
    pub sidecars: super::sidecar::Sidecars,
    /// Magic Context compartments for this session, already read.
    pub compartments: Vec<crate::formats::magic_context::Compartment>,
    /// Where the Magic Context rows came from (for lineage and messages).
    pub magic_context_db: Option<PathBuf>,
    /// What else was read with them (schema version, m[0] mutations, notes).
    pub magic_context_meta: crate::formats::magic_context::SessionMeta,
    /// The dates in Magic Context's compartment headings.
    pub magic_context_dates: crate::formats::magic_context::HeadingDates,
    /// Keep the canonical records (`LoadedSession::records`); `Record` tiers keep them anyway.
    pub keep_records: bool,
    /// Drop every chunk's text once it is counted and hashed ([`Representation::drop_texts`]):
    /// for a caller that prints counts and never a tier's text (`episodes` without `--show`),
    /// so the peak holds one window's texts rather than the session's.
    pub drop_tier_texts: bool,
    /// Where the load reports how far it has got.
    pub progress: crate::session::progress::ProgressSink,
}

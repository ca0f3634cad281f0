//! What a load asks of the episode stage: segmentation, tier source, tokenizer, rules,
//! sidecars, Magic Context's rows, what to keep, and where to report progress.

use std::path::PathBuf;

use crate::episode::options::TierSource;
use crate::episode::rules::Rules;
use crate::episode::segment::Segmentation;
use crate::episode::sidecar::Sidecars;
use crate::tokens::TokenizerKind;

/// Everything [`super::from_trace`] needs besides the trace.
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
    pub sidecars: Sidecars,
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
    /// Drop every chunk's text once it is counted and hashed
    /// ([`crate::episode::Representation::drop_texts`]): for a caller that prints counts and
    /// never a tier's text (`episodes` without `--show`), so the peak holds one window's texts
    /// rather than the session's.
    pub drop_tier_texts: bool,
    /// Where the load reports how far it has got.
    pub progress: super::progress::ProgressSink,
}

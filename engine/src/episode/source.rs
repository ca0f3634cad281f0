//! The episode a set of tiers (or its canonical record) is generated from, and what generation
//! reads beside it: the one input the tier generators and the record share.

use std::collections::BTreeSet;

use super::classify::Classified;
use super::rules::Rules;
use super::segment::Segment;
use crate::trace::Trace;

/// The episode a set of tiers is generated from, and what generation reads beside it.
pub struct EpisodeSource<'a> {
    pub trace: &'a Trace,
    pub episode_id: &'a str,
    pub seg: &'a Segment,
    pub classified: &'a Classified,
    pub rules: &'a Rules,
    /// The compaction artefacts of the trace (`tiers::artefact_ids`).
    pub artefacts: &'a BTreeSet<String>,
}

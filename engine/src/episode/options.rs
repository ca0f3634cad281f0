//! Where an episode's tiers come from (`--tiers`). What a whole load asks of the episode stage
//! is the session's `EpisodeOptions`.

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

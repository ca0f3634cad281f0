//! What a loaded external tier says about how it was made: the lineage fields of its
//! `*.tiers.json` entry, kept on the loaded session so the audit and the experiment can name the
//! model and strategy behind a set of tiers and bill their creation.

use serde::Serialize;

use crate::episode::sidecar::{ExternalEpisode, TierUsage};
use crate::episode::Tier;

/// One external tier's lineage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierLineage {
    /// The episode of this load it belongs to (`E3`).
    pub episode: String,
    pub tier: Tier,
    pub generator: Option<String>,
    pub model: Option<String>,
    pub prompt_version: Option<String>,
    pub strategy: Option<String>,
    pub from_tier: Option<Tier>,
    pub usage: Option<TierUsage>,
}

/// The lineage of every tier of a sidecar entry (unknown tier names are left out, as the loader
/// leaves them out).
pub fn of_entry(episode: &str, e: &ExternalEpisode) -> Vec<TierLineage> {
    e.tiers
        .iter()
        .filter_map(|(name, t)| {
            let tier = name.parse::<Tier>().ok().filter(Tier::is_representation)?;
            Some(TierLineage {
                episode: episode.to_owned(),
                tier,
                generator: t.generator.clone(),
                model: t.model.clone(),
                prompt_version: t.prompt_version.clone(),
                strategy: t.strategy.clone(),
                from_tier: t.from_tier,
                usage: t.usage.clone(),
            })
        })
        .collect()
}

/// A short name for a set of model-written tiers: `model:gpt-4.1/source` when one model and one
/// strategy wrote them all, `model:mixed` for several, `None` when no tier names a model.
pub fn label(lineage: &[TierLineage]) -> Option<String> {
    let mut kinds: Vec<(Option<&str>, Option<&str>)> = lineage
        .iter()
        .filter(|l| l.model.is_some())
        .map(|l| (l.model.as_deref(), l.strategy.as_deref()))
        .collect();
    kinds.sort();
    kinds.dedup();
    match kinds.as_slice() {
        [] => None,
        [(Some(m), Some(s))] => Some(format!("model:{m}/{s}")),
        [(Some(m), None)] => Some(format!("model:{m}")),
        _ => Some("model:mixed".to_owned()),
    }
}

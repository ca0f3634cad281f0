//! External tiers (MODEL §5): representations written by someone else, from a `*.tiers.json`
//! sidecar or Magic Context's compartments, turned into drafts for the common counting step.

use super::model::{Strategy, Tier};
use super::sidecar::ExternalEpisode;
use super::tiers::{contract, Draft, DraftChunk};
use crate::formats::magic_context::{render, Compartment};

/// Drafts for one episode from a `*.tiers.json` entry. Unknown tier names are reported.
pub fn from_tiers_file(
    e: &ExternalEpisode,
    source_ids: &[String],
    first_message: usize,
) -> (Vec<Draft>, Vec<String>) {
    let mut drafts = Vec::new();
    let mut notes = Vec::new();
    for (name, t) in &e.tiers {
        let Ok(tier) = name.parse::<Tier>() else {
            notes.push(format!("tiers.json: unknown tier {name:?} ignored"));
            continue;
        };
        if tier == Tier::Dropped {
            notes.push("tiers.json: `dropped` is not a tier; ignored".to_owned());
            continue;
        }
        let mut generator = t
            .generator
            .clone()
            .unwrap_or_else(|| "tiers.json".to_owned());
        if let Some(m) = &t.model {
            generator.push_str(&format!(" model={m}"));
        }
        if let Some(p) = &t.prompt_version {
            generator.push_str(&format!(" prompt={p}"));
        }
        if let Some(s) = &t.strategy {
            generator.push_str(&format!(" strategy={s}"));
        }
        drafts.push(one(tier, generator, &t.text, source_ids, first_message));
    }
    (drafts, notes)
}

/// Drafts for one episode from a Magic Context compartment: its block at tiers 1..4 exactly
/// as Magic Context renders it into `<session-history>` (heading with `dates`, escaped and
/// guarded body; legacy and pseudo-v2 rows from their flat content; NULL tiers falling back,
/// empty ones as the heading alone). Every tier is kept, whatever its size: Magic Context
/// renders it (see [`super::tiers::finalize_as_given`]).
pub fn from_compartment(
    c: &Compartment,
    source_ids: &[String],
    first_message: usize,
    dates: Option<(&str, &str)>,
) -> Vec<Draft> {
    let row = c.row_text(dates);
    let kind = if c.is_curve_legacy() {
        " (legacy)"
    } else if render::is_flat(&row) {
        " (no tiers: flat content)"
    } else {
        ""
    };
    let generator = format!("magic-context compartment {}{kind}", c.sequence);
    Tier::TIERS
        .into_iter()
        .zip(1u8..)
        .map(|(tier, mc)| {
            one(
                tier,
                generator.clone(),
                &render::render(&row, mc),
                source_ids,
                first_message,
            )
        })
        .collect()
}

fn one(tier: Tier, generator: String, text: &str, ids: &[String], first: usize) -> Draft {
    Draft {
        tier,
        strategy: Strategy::External,
        generator: generator.into(),
        contract: format!("external: {}", contract(tier)).into(),
        source_message_ids: ids.into(),
        chunks: vec![DraftChunk {
            message_id: ids.first().cloned().unwrap_or_default(),
            message_index: first,
            step: 0,
            text: text.to_owned(),
            artefact: false,
            pruned: None,
        }],
    }
}

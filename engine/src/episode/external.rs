//! External tiers (MODEL §5): representations written by someone else, from a `*.tiers.json`
//! sidecar or Magic Context's compartments, turned into drafts for the common counting step.

use super::magic_context::Compartment;
use super::model::{Strategy, Tier};
use super::sidecar::ExternalEpisode;
use super::tiers::{contract, Draft, DraftChunk};

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

/// Drafts for one episode from a Magic Context compartment: p1..p4 → full..anchor. An empty
/// p4 (`<p4/>`: "the title is enough") becomes the title.
pub fn from_compartment(
    c: &Compartment,
    source_ids: &[String],
    first_message: usize,
) -> Vec<Draft> {
    let generator = format!(
        "magic-context compartment {}{}",
        c.sequence,
        if c.legacy { " (legacy)" } else { "" }
    );
    if !c.is_tiered() {
        // A legacy row: its flat body is the only representation.
        return vec![one(
            Tier::Full,
            generator,
            &c.content,
            source_ids,
            first_message,
        )];
    }
    let mut out = Vec::new();
    for (k, tier) in Tier::TIERS.into_iter().enumerate() {
        let text = c.p[k].as_deref().unwrap_or("");
        let text = if text.is_empty() && tier == Tier::Anchor {
            c.title.as_str()
        } else {
            text
        };
        if text.is_empty() {
            continue;
        }
        out.push(one(
            tier,
            generator.clone(),
            text,
            source_ids,
            first_message,
        ));
    }
    out
}

fn one(tier: Tier, generator: String, text: &str, ids: &[String], first: usize) -> Draft {
    Draft {
        tier,
        strategy: Strategy::External,
        generator,
        contract: format!("external: {}", contract(tier)),
        source_message_ids: ids.to_vec(),
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

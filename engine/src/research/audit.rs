//! The tier audit (the chapter's first experiment, static tier quality): for every episode and
//! tier, which needles survive (the probes planted in the episode, its pinned spans, the
//! identifiers of its source) and the survival per token; flags for non-monotonic tiers (a needle
//! in a lower tier but absent from a higher one), unsupported additions (an identifier or number
//! in a tier that is not in the episode's source), cross-tier contradictions (one key with a value
//! the source never gives it) and tiers dominated by their lower neighbour (no more survival for
//! more tokens); the generation cost of each strategy.
//!
//! "Source" here is the episode's `full` tier: the messages as the model was sent them.

use std::collections::{BTreeMap, BTreeSet};

use once_cell::sync::Lazy;
use regex::Regex;
use serde::Serialize;

use crate::episode::sidecar::Probe;
use crate::episode::{Episode, Tier};
use crate::session::LoadedSession;

/// A generator's own clipping marker (`…[152 chars clipped]…`): its number is not a claim.
static CLIP_MARKER: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"\[\d+ [a-z ]*clipped\]").expect("static marker pattern"));
/// A record view's citations, `[@msg_… @call_…]`: lineage, not content (see
/// `episode::record_view`). Each id must name a message, part or call of the episode.
static CITATION: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"\[@[^\]\n]*\]").expect("static citation pattern"));
/// Numbers of two digits or more (for unsupported additions).
static NUMBER: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"\b\d{2,}(?:\.\d+)*\b").expect("static number pattern"));
/// `name 1.2.3`, `name = "1.2.3"`, `name@1.2.3`, `name v1.2.3` and `KEY=value`.
static KEY_VALUE: Lazy<Regex> = Lazy::new(|| {
    Regex::new(concat!(
        r#"\b(?P<k>[A-Za-z_][\w-]*)(?:\s*=\s*"?=?|\s+v?|@)(?P<v>\d+\.\d+\.\d+)\b"#,
        r"|\b(?P<k2>[A-Z][A-Z0-9_]{2,})=(?P<v2>[\w.]+)",
    ))
    .expect("static key-value pattern")
});

/// The identifiers in `text` (one definition, shared with the tier generators).
pub use crate::episode::needles::identifiers;

fn key_values(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in KEY_VALUE.captures_iter(text) {
        let (k, v) = match (c.name("k"), c.name("v"), c.name("k2"), c.name("v2")) {
            (Some(k), Some(v), _, _) => (k.as_str(), v.as_str()),
            (_, _, Some(k), Some(v)) => (k.as_str(), v.as_str()),
            _ => continue,
        };
        out.entry(k.to_owned()).or_default().insert(v.to_owned());
    }
    out
}

/// One tier of one episode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierAudit {
    pub tier: Tier,
    pub tokens: u32,
    pub probes_ok: usize,
    pub probes: usize,
    pub pins_ok: usize,
    pub pins: usize,
    pub identifiers_ok: usize,
    pub identifiers: usize,
    /// Share of every needle (probes, pins, identifiers) present; 1 when there is none.
    pub survival: f64,
    /// Survival per 1,000 tokens.
    pub survival_per_1k: f64,
    /// Needles absent here but present in a lower tier.
    pub non_monotonic: Vec<String>,
    /// Identifiers and numbers here that the source does not contain.
    pub unsupported: Vec<String>,
    /// `key: value here vs values in the source`.
    pub contradictions: Vec<String>,
    /// The lower neighbour that keeps as much for fewer tokens.
    pub dominated_by: Option<Tier>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeAudit {
    pub episode: String,
    pub title: String,
    pub class: String,
    pub floor: Tier,
    pub tiers: Vec<TierAudit>,
}

/// Totals per tier over the episodes that have it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierTotals {
    pub tier: Tier,
    pub episodes: usize,
    pub tokens: u64,
    pub needles_ok: usize,
    pub needles: usize,
    pub probes_ok: usize,
    pub probes: usize,
    /// needles_ok ÷ needles.
    pub survival: f64,
    pub survival_per_1k: f64,
    pub non_monotonic: usize,
    pub unsupported: usize,
    pub contradictions: usize,
    pub dominated: usize,
}

/// What generating the tiers read and wrote, in tokens (tiers below `full`), and what it cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GenerationCost {
    pub representations: usize,
    /// Tokens read: the tier above for `cascade`, the full tier otherwise (`source` and
    /// `record` read the raw messages); for a model, the prompt tokens it reported.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model calls that wrote the tiers (0 for a deterministic generator).
    pub calls: u64,
    /// Where the token counts come from: `tokenizer` (our count of what a deterministic
    /// generator read and wrote) or `usage` (as the model's endpoint reported it).
    pub basis: String,
    pub cached_input_tokens: u64,
    /// Calls whose response reported no usage (their tokens are not in the counts).
    pub calls_without_usage: u64,
    /// The models that wrote the tiers.
    pub models: Vec<String>,
    /// Dollars: 0 without a model; `None` when the model is not in the pricing table.
    pub dollars: Option<f64>,
    /// How the dollars were priced, or why they were not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrategyAudit {
    pub strategy: String,
    pub generation: GenerationCost,
    pub totals: Vec<TierTotals>,
    pub episodes: Vec<EpisodeAudit>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Audit {
    pub session: String,
    pub title: String,
    pub probes: usize,
    pub strategies: Vec<StrategyAudit>,
}

enum NeedleRef<'a> {
    Probe(&'a Probe),
    Text(String),
}

impl NeedleRef<'_> {
    fn found_in(&self, text: &str) -> bool {
        match self {
            NeedleRef::Probe(p) => p.is_answered_by(text),
            NeedleRef::Text(t) => text.contains(t.as_str()),
        }
    }
    fn label(&self) -> String {
        match self {
            NeedleRef::Probe(p) => format!("probe {}", p.id),
            NeedleRef::Text(t) => crate::text::clip_chars(t, 60),
        }
    }
}

/// The ids a tier may cite: the episode's messages, their parts and tool calls.
pub fn episode_ids(trace: &crate::trace::Trace, e: &Episode) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for m in trace
        .messages
        .get(e.first_message..=e.last_message)
        .unwrap_or(&[])
    {
        ids.insert(m.id.clone());
        for p in &m.parts {
            ids.insert(p.id.clone());
            if let crate::trace::PartKind::Tool(t) = &p.kind {
                ids.insert(t.call_id.clone());
            }
        }
    }
    ids
}

/// Citations in `text` that name none of `known`, as `@id`; and the text without citations.
fn check_citations(text: &str, known: &BTreeSet<String>) -> (Vec<String>, String) {
    let mut bad = Vec::new();
    for m in CITATION.find_iter(text) {
        let inner = &m.as_str()[1..m.as_str().len() - 1];
        for tok in inner.split_whitespace() {
            match tok.strip_prefix('@') {
                Some(id) if known.contains(id) => {}
                _ => bad.push(tok.to_owned()),
            }
        }
    }
    (bad, CITATION.replace_all(text, "").into_owned())
}

/// Audit one episode's generated tiers. `known_ids`: what its tiers may cite
/// ([`episode_ids`]).
pub fn audit_episode(e: &Episode, probes: &[&Probe], known_ids: &BTreeSet<String>) -> EpisodeAudit {
    let tiers: Vec<(Tier, String, u32)> = Tier::TIERS
        .into_iter()
        .filter_map(|t| e.representation(t).map(|r| (t, r.text(), r.tokens)))
        .collect();
    let source = tiers
        .iter()
        .find(|(t, _, _)| *t == Tier::Full)
        .map(|(_, s, _)| s.clone())
        .unwrap_or_default();
    let ids = identifiers(&source);
    let source_numbers: BTreeSet<String> = NUMBER
        .find_iter(&source)
        .map(|m| m.as_str().to_owned())
        .collect();
    let source_kv = key_values(&source);
    let needles: Vec<(usize, NeedleRef<'_>)> = probes
        .iter()
        .map(|p| (0, NeedleRef::Probe(p)))
        .chain(e.pins.iter().map(|p| (1, NeedleRef::Text(p.text.clone()))))
        .chain(ids.iter().map(|i| (2, NeedleRef::Text(i.clone()))))
        .collect();
    // presence[needle][tier]
    let presence: Vec<Vec<bool>> = needles
        .iter()
        .map(|(_, n)| tiers.iter().map(|(_, text, _)| n.found_in(text)).collect())
        .collect();
    let mut out: Vec<TierAudit> = Vec::new();
    for (ti, (tier, text, tokens)) in tiers.iter().enumerate() {
        let count = |kind: usize| {
            let total = needles.iter().filter(|(k, _)| *k == kind).count();
            let ok = needles
                .iter()
                .zip(&presence)
                .filter(|((k, _), p)| *k == kind && p[ti])
                .count();
            (ok, total)
        };
        let (probes_ok, probes_n) = count(0);
        let (pins_ok, pins_n) = count(1);
        let (ids_ok, ids_n) = count(2);
        let all = probes_n + pins_n + ids_n;
        let ok = probes_ok + pins_ok + ids_ok;
        let survival = if all == 0 {
            1.0
        } else {
            ok as f64 / all as f64
        };
        let non_monotonic: Vec<String> = needles
            .iter()
            .zip(&presence)
            .filter(|(_, p)| !p[ti] && p[ti + 1..].iter().any(|x| *x))
            .map(|((_, n), _)| n.label())
            .collect();
        let mut unsupported: BTreeSet<String> = BTreeSet::new();
        if *tier != Tier::Full {
            let (bad, text) = check_citations(text, known_ids);
            unsupported.extend(bad);
            let text = CLIP_MARKER.replace_all(&text, "");
            for i in identifiers(&text) {
                if !source.contains(i.as_str()) {
                    unsupported.insert(i);
                }
            }
            for m in NUMBER.find_iter(&text) {
                let n = m.as_str();
                if !source_numbers.contains(n) && !source.contains(n) {
                    unsupported.insert(n.to_owned());
                }
            }
        }
        let mut contradictions = Vec::new();
        if *tier != Tier::Full {
            for (k, vals) in key_values(text) {
                if let Some(src) = source_kv.get(&k) {
                    for v in vals.difference(src) {
                        contradictions.push(format!(
                            "{k}: {v} here, {} in the source",
                            src.iter().cloned().collect::<Vec<_>>().join(" / ")
                        ));
                    }
                }
            }
        }
        out.push(TierAudit {
            tier: *tier,
            tokens: *tokens,
            probes_ok,
            probes: probes_n,
            pins_ok,
            pins: pins_n,
            identifiers_ok: ids_ok,
            identifiers: ids_n,
            survival,
            survival_per_1k: if *tokens > 0 {
                survival * 1000.0 / f64::from(*tokens)
            } else {
                0.0
            },
            non_monotonic,
            unsupported: unsupported.into_iter().collect(),
            contradictions,
            dominated_by: None,
        });
    }
    // A tier is dominated when the next lower tier keeps at least as much for fewer tokens.
    for i in 0..out.len().saturating_sub(1) {
        let (hi, lo) = (&out[i], &out[i + 1]);
        if lo.tokens < hi.tokens && lo.survival >= hi.survival {
            let by = lo.tier;
            out[i].dominated_by = Some(by);
        }
    }
    EpisodeAudit {
        episode: e.id.clone(),
        title: e.title.clone(),
        class: e.class.as_str().to_owned(),
        floor: e.floor,
        tiers: out,
    }
}

/// Audit every episode of a loaded session (its tiers as loaded: `source`, `cascade`, `record`
/// or `external`).
pub fn audit_session(s: &LoadedSession) -> StrategyAudit {
    let mut by_episode: Vec<Vec<&Probe>> = vec![Vec::new(); s.episodes.len()];
    for p in &s.probes {
        if let Some(mi) = s.trace.message_index(&p.source_message_id) {
            let k = s.episodes.partition_point(|e| e.last_message < mi);
            if let Some(v) = by_episode.get_mut(k) {
                v.push(p);
            }
        }
    }
    let episodes: Vec<EpisodeAudit> = s
        .episodes
        .iter()
        .zip(&by_episode)
        .map(|(e, p)| audit_episode(e, p, &episode_ids(&s.trace, e)))
        .collect();
    let strategy = super::tier_sources::label(s);
    let gen = super::tier_sources::generation_cost(s);
    let totals = Tier::TIERS
        .into_iter()
        .map(|t| {
            let rows: Vec<(&EpisodeAudit, &TierAudit)> = episodes
                .iter()
                .filter_map(|e| e.tiers.iter().find(|x| x.tier == t).map(|x| (e, x)))
                .collect();
            let needles: usize = rows
                .iter()
                .map(|(_, x)| x.probes + x.pins + x.identifiers)
                .sum();
            let ok: usize = rows
                .iter()
                .map(|(_, x)| x.probes_ok + x.pins_ok + x.identifiers_ok)
                .sum();
            let tokens: u64 = rows.iter().map(|(_, x)| u64::from(x.tokens)).sum();
            let survival = if needles == 0 {
                1.0
            } else {
                ok as f64 / needles as f64
            };
            TierTotals {
                tier: t,
                episodes: rows.len(),
                tokens,
                needles_ok: ok,
                needles,
                probes_ok: rows.iter().map(|(_, x)| x.probes_ok).sum(),
                probes: rows.iter().map(|(_, x)| x.probes).sum(),
                survival,
                survival_per_1k: if tokens > 0 {
                    survival * 1000.0 * rows.len() as f64 / tokens as f64
                } else {
                    0.0
                },
                non_monotonic: rows.iter().map(|(_, x)| x.non_monotonic.len()).sum(),
                unsupported: rows.iter().map(|(_, x)| x.unsupported.len()).sum(),
                contradictions: rows.iter().map(|(_, x)| x.contradictions.len()).sum(),
                dominated: rows
                    .iter()
                    .filter(|(_, x)| x.dominated_by.is_some())
                    .count(),
            }
        })
        .collect();
    StrategyAudit {
        strategy,
        generation: gen,
        totals,
        episodes,
    }
}

/// What a deterministic generator read and wrote for the tiers below `full`, by our tokenizer:
/// the tier above for `cascade`, the full tier per representation otherwise.
pub fn tokenizer_generation(s: &LoadedSession) -> GenerationCost {
    let cascade = s.tier_source.strategy().reads_tier_above();
    let mut gen = GenerationCost {
        basis: "tokenizer".to_owned(),
        dollars: Some(0.0),
        ..GenerationCost::default()
    };
    for e in &s.episodes {
        let mut above: Option<u32> = None;
        for t in Tier::TIERS {
            let Some(r) = e.representation(t) else {
                continue;
            };
            if t != Tier::Full {
                gen.representations += 1;
                gen.output_tokens += u64::from(r.tokens);
                gen.input_tokens += u64::from(if cascade {
                    above.unwrap_or(0)
                } else {
                    e.tokens(Tier::Full)
                });
            }
            above = Some(r.tokens);
        }
    }
    gen
}

/// Audit several loads of the same session (e.g. `source`, `cascade` and `record` tiers).
pub fn audit(loads: &[&LoadedSession]) -> Audit {
    let first = loads.first();
    Audit {
        session: first
            .map(|s| s.trace.session.id.clone())
            .unwrap_or_default(),
        title: first
            .map(|s| s.trace.session.title.clone())
            .unwrap_or_default(),
        probes: first.map_or(0, |s| s.probes.len()),
        strategies: loads.iter().map(|s| audit_session(s)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_key_values_are_found() {
        let ids = identifiers("pin tomlette 0.4.1 at a3f9c21 in crates/x/src/lib.rs:42, see RUSTSEC-2026-0412 and E0277");
        for want in [
            "0.4.1",
            "a3f9c21",
            "crates/x/src/lib.rs:42",
            "RUSTSEC-2026-0412",
            "E0277",
        ] {
            assert!(ids.contains(want), "{want} in {ids:?}");
        }
        assert!(!identifiers("1234567 deadbee").contains("1234567"));
        let kv = key_values("tomlette = \"0.4.1\" and BATCH_ROWS=250, serde v1.0.200");
        assert_eq!(
            kv["tomlette"].iter().next().map(String::as_str),
            Some("0.4.1")
        );
        assert_eq!(
            kv["BATCH_ROWS"].iter().next().map(String::as_str),
            Some("250")
        );
        assert!(kv.contains_key("serde"));
    }

    fn rep(tier: Tier, text: &str, tokens: u32) -> crate::episode::Representation {
        crate::episode::Representation {
            episode_id: "E0".into(),
            tier,
            strategy: crate::episode::Strategy::Source,
            generator: "test".into(),
            source_message_ids: Default::default(),
            contract: Default::default(),
            chunks: vec![crate::episode::Chunk {
                message_id: "m".into(),
                message_index: 0,
                step: 0,
                hash: 0,
                tokens,
                text: text.into(),
                artefact: false,
                pruned: None,
            }],
            tokens,
        }
    }

    #[test]
    fn flags_by_hand() {
        let mut tiers = BTreeMap::new();
        tiers.insert(
            Tier::Full,
            rep(
                Tier::Full,
                "tomlette 0.4.1 at crates/a/src/lib.rs:42 for RUSTSEC-2026-0001",
                40,
            ),
        );
        tiers.insert(Tier::Dense, rep(Tier::Dense, "tomlette work", 30));
        tiers.insert(
            Tier::Compact,
            rep(
                Tier::Compact,
                "tomlette 0.4.0 for RUSTSEC-2026-0001, 9999 rows",
                20,
            ),
        );
        tiers.insert(Tier::Anchor, rep(Tier::Anchor, "E0", 5));
        let e = Episode {
            id: "E0".into(),
            index: 0,
            first_message: 0,
            last_message: 0,
            first_request: None,
            last_request: None,
            time_start: 0,
            time_end: 0,
            title: "t".into(),
            kinds: vec![],
            class: crate::episode::RetentionClass::Compressible,
            floor: Tier::Anchor,
            class_reasons: vec![],
            floor_reasons: vec![],
            pins: vec![],
            keys: vec![],
            continues: None,
            children: vec![],
            tiers,
            tier_notes: vec![],
            importance: None,
        };
        let a = audit_episode(&e, &[], &BTreeSet::new());
        let t = |x: Tier| a.tiers.iter().find(|r| r.tier == x).unwrap();
        assert_eq!(t(Tier::Full).identifiers, 3);
        assert_eq!(t(Tier::Full).identifiers_ok, 3);
        assert_eq!(t(Tier::Dense).identifiers_ok, 0);
        // The advisory is absent from dense but present in compact.
        assert_eq!(
            t(Tier::Dense).non_monotonic,
            vec!["RUSTSEC-2026-0001".to_string()]
        );
        // Dense keeps nothing compact does not, for more tokens.
        assert_eq!(t(Tier::Dense).dominated_by, Some(Tier::Compact));
        assert_eq!(t(Tier::Full).dominated_by, None);
        assert_eq!(
            t(Tier::Compact).unsupported,
            vec!["0.4.0".to_string(), "9999".to_string()]
        );
        assert_eq!(t(Tier::Compact).contradictions.len(), 1);
        assert!(t(Tier::Compact).contradictions[0].starts_with("tomlette: 0.4.0 here, 0.4.1"));
    }
}

//! `tierscope audit`: per episode and tier, which needles survive and the survival per token;
//! non-monotonic tiers, unsupported additions, cross-tier contradictions, dominated tiers; the
//! strategies (`source`, `cascade`, `record`) side by side with their generation cost.

use anyhow::Context;
use clap::Args;

use super::output::{out, outln, print_json, print_jsonl, Format};
use super::LoadArgs;
use tierscope_engine::episode::options::TierSource;
use tierscope_engine::research::audit::{audit, Audit};
use tierscope_engine::research::report::{csv, table, thousands};

#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Tier strategies to audit and compare (repeatable; default: source, cascade and record).
    #[arg(long = "strategy", value_name = "SOURCE")]
    pub strategies: Vec<TierSource>,
    /// Also list, per episode and tier, the needles lost non-monotonically, the unsupported
    /// additions and the contradictions.
    #[arg(long)]
    pub details: bool,
    /// Output: table, json (one document), csv (one row per episode and tier) or jsonl (one line per episode and strategy).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: &AuditArgs) -> anyhow::Result<()> {
    let strategies = if a.strategies.is_empty() {
        TierSource::GENERATED.to_vec()
    } else {
        a.strategies.clone()
    };
    let mut loads = Vec::new();
    for s in &strategies {
        let args = tierscope_engine::loaded::LoadOptions {
            tiers: *s,
            ..a.load.options()
        };
        let l = tierscope_engine::loaded::load(&args)
            .with_context(|| format!("loading the session with {} tiers", s.as_str()))?;
        for w in &l.warnings {
            eprintln!("warning: {w}");
        }
        // Without a tiers sidecar or Magic Context every episode falls back to source tiers;
        // auditing those under the name "external" would report someone else's numbers.
        if *s == TierSource::External && !has_external_tiers(&l) {
            eprintln!(
                "warning: --strategy external: no external tiers found (no `*.tiers.json` sidecar \
                 or Magic Context compartments for this session); skipped"
            );
            continue;
        }
        loads.push(l);
    }
    if loads.is_empty() {
        anyhow::bail!("nothing to audit: no tier strategy could be loaded");
    }
    let refs: Vec<_> = loads.iter().collect();
    let au = audit(&refs);
    match a.format {
        Format::Json => print_json(&au),
        Format::Jsonl => {
            for s in &au.strategies {
                print_jsonl(
                    &s.episodes,
                    &[
                        ("session", au.session.clone().into()),
                        ("strategy", s.strategy.clone().into()),
                    ],
                )?;
            }
            Ok(())
        }
        Format::Csv => {
            let (h, rows) = episode_rows(&au, false);
            out!("{}", csv(&h, &rows));
            Ok(())
        }
        Format::Table => {
            outln!(
                "{} — {} ({} probes)",
                au.session,
                tierscope_engine::text::sanitize_for_terminal(&au.title),
                au.probes
            );
            let h = [
                "strategy",
                "tier",
                "episodes",
                "tokens",
                "survival",
                "per_1k",
                "probes",
                "non_monotonic",
                "unsupported",
                "contradictions",
                "dominated",
            ];
            let mut rows = Vec::new();
            for s in &au.strategies {
                for t in s.totals.iter().filter(|t| t.episodes > 0) {
                    rows.push(vec![
                        s.strategy.clone(),
                        t.tier.to_string(),
                        t.episodes.to_string(),
                        thousands(t.tokens as i64),
                        format!("{:.1}%", t.survival * 100.0),
                        format!("{:.2}", t.survival_per_1k),
                        format!("{}/{}", t.probes_ok, t.probes),
                        t.non_monotonic.to_string(),
                        t.unsupported.to_string(),
                        t.contradictions.to_string(),
                        t.dominated.to_string(),
                    ]);
                }
            }
            out!("{}", table(&h, &rows));
            for s in &au.strategies {
                outln!(
                    "generation cost ({}): {} representations, read {} tokens, wrote {} tokens",
                    s.strategy,
                    s.generation.representations,
                    thousands(s.generation.input_tokens as i64),
                    thousands(s.generation.output_tokens as i64)
                );
            }
            outln!();
            let (h, rows) = episode_rows(&au, true);
            out!("{}", table(&h, &rows));
            if a.details {
                print_details(&au)?;
            }
            Ok(())
        }
    }
}

fn episode_rows(au: &Audit, pretty: bool) -> ([&'static str; 14], Vec<Vec<String>>) {
    let h = [
        "strategy",
        "episode",
        "tier",
        "tokens",
        "probes",
        "pins",
        "identifiers",
        "survival",
        "per_1k",
        "non_monotonic",
        "unsupported",
        "contradictions",
        "dominated_by",
        "floor",
    ];
    let mut rows = Vec::new();
    for s in &au.strategies {
        for e in &s.episodes {
            for t in &e.tiers {
                rows.push(vec![
                    s.strategy.clone(),
                    e.episode.clone(),
                    t.tier.to_string(),
                    if pretty {
                        thousands(i64::from(t.tokens))
                    } else {
                        t.tokens.to_string()
                    },
                    format!("{}/{}", t.probes_ok, t.probes),
                    format!("{}/{}", t.pins_ok, t.pins),
                    format!("{}/{}", t.identifiers_ok, t.identifiers),
                    if pretty {
                        format!("{:.1}%", t.survival * 100.0)
                    } else {
                        format!("{:.4}", t.survival)
                    },
                    format!("{:.2}", t.survival_per_1k),
                    t.non_monotonic.len().to_string(),
                    t.unsupported.len().to_string(),
                    t.contradictions.len().to_string(),
                    t.dominated_by.map_or_else(
                        || if pretty { String::new() } else { "-".into() },
                        |d| d.to_string(),
                    ),
                    e.floor.to_string(),
                ]);
            }
        }
    }
    (h, rows)
}

fn print_details(au: &Audit) -> anyhow::Result<()> {
    for s in &au.strategies {
        for e in &s.episodes {
            for t in &e.tiers {
                let mut lines = Vec::new();
                if !t.non_monotonic.is_empty() {
                    lines.push(format!(
                        "  lost here, kept lower: {}",
                        t.non_monotonic.join("; ")
                    ));
                }
                if !t.unsupported.is_empty() {
                    lines.push(format!("  unsupported: {}", t.unsupported.join(", ")));
                }
                if !t.contradictions.is_empty() {
                    lines.push(format!("  contradictions: {}", t.contradictions.join("; ")));
                }
                if !lines.is_empty() {
                    outln!("{} {} {}:", s.strategy, e.episode, t.tier);
                    for l in lines {
                        outln!("{}", tierscope_engine::text::sanitize_for_terminal(&l));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether any episode has a tier written by someone else.
fn has_external_tiers(l: &tierscope_engine::loaded::LoadedSession) -> bool {
    l.episodes.iter().any(|e| {
        e.tiers
            .values()
            .any(|r| r.strategy == tierscope_engine::episode::Strategy::External)
    })
}

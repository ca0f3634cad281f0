//! `tierscope audit`: per episode and tier, which needles survive and the survival per token;
//! non-monotonic tiers, unsupported additions, cross-tier contradictions, dominated tiers; the
//! strategies (`source`, `cascade`, `record`, tiers a model wrote with `--tiers-dir DIR`) side by
//! side with their generation cost: the chapter's first experiment.

use anyhow::Context;
use clap::Args;

use super::report::{self, Cell, Format, JsonLines, Table, Text};
use super::LoadArgs;
use tierscope_engine::episode::options::TierSource;
use tierscope_engine::research::audit::{audit, Audit, GenerationCost};

#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Tier strategies to audit and compare (repeatable; default: source, cascade and record).
    #[arg(long = "strategy", value_name = "SOURCE")]
    pub strategies: Vec<TierSource>,
    /// Also audit the tiers sidecar in DIR (e.g. written by `tiers generate --out DIR`) as one
    /// more strategy, named after the model that wrote it (repeatable).
    #[arg(long = "tiers-dir", value_name = "DIR")]
    pub tiers_dirs: Vec<std::path::PathBuf>,
    /// Also list, per episode and tier, the needles lost non-monotonically, the unsupported
    /// additions and the contradictions.
    #[arg(long)]
    pub details: bool,
    /// Output: table, json (one document), csv (one row per episode and tier) or jsonl (one line per episode and strategy).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: &AuditArgs) -> anyhow::Result<()> {
    let loads = load_tier_sources(&a.load, &a.strategies, &a.tiers_dirs)?;
    if loads.is_empty() {
        anyhow::bail!("nothing to audit: no tier strategy could be loaded");
    }
    let refs: Vec<_> = loads.iter().collect();
    let au = audit(&refs);
    report::emit(
        a.format,
        &AuditReport {
            audit: &au,
            details: a.details,
        },
    )
}

/// The output of `audit`: the audit (JSON), one line per episode and strategy (JSON Lines), one
/// row per episode and tier (CSV), or the totals, generation costs and episode rows (table).
pub struct AuditReport<'a> {
    pub audit: &'a Audit,
    /// Also list the needles lost non-monotonically, the unsupported additions, the
    /// contradictions (table only).
    pub details: bool,
}

impl report::Report for AuditReport<'_> {
    fn name(&self) -> &'static str {
        "audit"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.audit
    }
    fn records(&self, out: &mut JsonLines<'_>) -> anyhow::Result<()> {
        for s in &self.audit.strategies {
            out.with_context(vec![
                ("session", self.audit.session.clone().into()),
                ("strategy", s.strategy.clone().into()),
            ])
            .records(&s.episodes)?;
        }
        Ok(())
    }
    fn rows(&self) -> Option<Table> {
        Some(episode_rows(self.audit))
    }
    fn text(&self) -> Text {
        let au = self.audit;
        let mut out = Text::new();
        out.line(format!(
            "{} — {} ({} probes)",
            au.session, au.title, au.probes
        ));
        let mut totals = Table::aligned(&[
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
        ]);
        for s in &au.strategies {
            for t in s.totals.iter().filter(|t| t.episodes > 0) {
                totals.push(vec![
                    Cell::text(s.strategy.clone()),
                    Cell::text(t.tier.to_string()),
                    Cell::Int(t.episodes as u64),
                    Cell::Tokens(t.tokens as i64),
                    Cell::Share(Some(t.survival)),
                    Cell::Fixed(t.survival_per_1k, 2),
                    Cell::text(format!("{}/{}", t.probes_ok, t.probes)),
                    Cell::Int(t.non_monotonic as u64),
                    Cell::Int(t.unsupported as u64),
                    Cell::Int(t.contradictions as u64),
                    Cell::Int(t.dominated as u64),
                ]);
            }
        }
        out.table(totals);
        out.blank();
        out.line("generation cost (tier changes also bill their creation):");
        let gens: Vec<_> = au
            .strategies
            .iter()
            .map(|s| (s.strategy.as_str(), &s.generation))
            .collect();
        out.append(generation_text(&gens));
        out.blank();
        out.table(episode_rows(au));
        if self.details {
            details(au, &mut out);
        }
        out
    }
}

/// One row per strategy, episode and tier.
fn episode_rows(au: &Audit) -> Table {
    let mut t = Table::aligned(&[
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
    ]);
    for s in &au.strategies {
        for e in &s.episodes {
            for tier in &e.tiers {
                t.push(vec![
                    Cell::text(s.strategy.clone()),
                    Cell::text(e.episode.clone()),
                    Cell::text(tier.tier.to_string()),
                    Cell::Tokens(i64::from(tier.tokens)),
                    Cell::text(format!("{}/{}", tier.probes_ok, tier.probes)),
                    Cell::text(format!("{}/{}", tier.pins_ok, tier.pins)),
                    Cell::text(format!("{}/{}", tier.identifiers_ok, tier.identifiers)),
                    Cell::Share(Some(tier.survival)),
                    Cell::Fixed(tier.survival_per_1k, 2),
                    Cell::Int(tier.non_monotonic.len() as u64),
                    Cell::Int(tier.unsupported.len() as u64),
                    Cell::Int(tier.contradictions.len() as u64),
                    tier.dominated_by
                        .map_or(Cell::Absent, |d| Cell::text(d.to_string())),
                    Cell::text(e.floor.to_string()),
                ]);
            }
        }
    }
    t
}

/// `--details`: per episode and tier, what was lost, unsupported or contradicted.
fn details(au: &Audit, out: &mut Text) {
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
                    out.line(format!("{} {} {}:", s.strategy, e.episode, t.tier));
                    for l in lines {
                        out.line(l);
                    }
                }
            }
        }
    }
}

/// One load per tier strategy (default: source and cascade) and per tiers dir, each under its
/// own name; a strategy with nothing to show (external tiers that are not there) is skipped with
/// a warning. Shared by `audit` and `experiment`.
pub fn load_tier_sources(
    load: &super::LoadArgs,
    strategies: &[TierSource],
    tiers_dirs: &[std::path::PathBuf],
) -> anyhow::Result<Vec<tierscope_engine::session::LoadedSession>> {
    let strategies = if strategies.is_empty() {
        TierSource::GENERATED.to_vec()
    } else {
        strategies.to_vec()
    };
    let runs = strategies
        .iter()
        .map(|s| (*s, None))
        .chain(tiers_dirs.iter().map(|d| (TierSource::External, Some(d))));
    // The session is read once; each tier source builds its own episodes from it.
    let base = load.options();
    let source =
        tierscope_engine::trace::open(base.path.as_deref()).context("loading the session")?;
    let trace = source
        .load_session(base.session.as_deref())
        .context("loading the session")?;
    let mut loads = Vec::new();
    for (s, dir) in runs {
        let mut args = tierscope_engine::session::LoadOptions {
            tiers: s,
            ..base.clone()
        };
        if let Some(d) = dir {
            args.sidecars = Some(d.clone());
        }
        let what = match dir {
            Some(d) => format!("the tiers in {}", d.display()),
            None => format!("{} tiers", s.as_str()),
        };
        let l = tierscope_engine::session::Loader::new(&args)
            .and_then(|loader| {
                tierscope_engine::session::load_from(&loader, &source, trace.clone())
            })
            .with_context(|| format!("loading the session with {what}"))?;
        for w in &l.warnings {
            report::stderr::warn(w);
        }
        // Without a tiers sidecar or Magic Context every episode falls back to source tiers;
        // auditing those under the name "external" would report someone else's numbers.
        if s == TierSource::External && !has_external_tiers(&l) {
            report::stderr::warn(&format!(
                "{}: no external tiers found (no `*.tiers.json` sidecar or Magic Context \
                 compartments for this session); skipped",
                match dir {
                    Some(d) => format!("--tiers-dir {}", d.display()),
                    None => "--strategy external".to_owned(),
                }
            ));
            continue;
        }
        loads.push(l);
    }
    Ok(loads)
}

/// Calls, tokens and dollars per strategy (a table), then the pricing each strategy's dollars
/// came from (one line per priced strategy).
pub fn generation_text(gens: &[(&str, &GenerationCost)]) -> Text {
    let mut t = Table::aligned(&[
        "strategy",
        "tiers",
        "calls",
        "read",
        "wrote",
        "counted_by",
        "cost",
    ]);
    for (name, g) in gens {
        t.push(vec![
            Cell::text(*name),
            Cell::Int(g.representations as u64),
            Cell::Int(g.calls),
            // Saturated, not wrapped: a total past i64 must not print negative.
            Cell::Tokens(i64::try_from(g.input_tokens).unwrap_or(i64::MAX)),
            Cell::Tokens(i64::try_from(g.output_tokens).unwrap_or(i64::MAX)),
            Cell::text(g.basis.clone()),
            Cell::text(match (g.dollars, g.calls) {
                (Some(0.0), 0) => "$0 (no model)".to_owned(),
                (Some(d), _) => format!("${d:.4}"),
                (None, _) => "not priced".to_owned(),
            }),
        ]);
    }
    let mut out = Text::from(t);
    for (name, g) in gens {
        if let Some(p) = &g.pricing {
            out.line(format!("{name}: {p}"));
        }
    }
    out
}

/// Whether any episode has a tier written by someone else.
fn has_external_tiers(l: &tierscope_engine::session::LoadedSession) -> bool {
    l.episodes.iter().any(|e| {
        e.tiers
            .values()
            .any(|r| r.strategy == tierscope_engine::episode::Strategy::External)
    })
}

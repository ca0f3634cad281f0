//! `tierscope experiment`: every built-in policy (or `--policy …`) on one trace at one budget or
//! at budgets tuned so that mean tokens match: the chapter's second experiment as one table, once
//! per tier source (`source`, `cascade`, `record` by default; `--strategy`, `--tiers-dir`), with
//! what each source's tiers cost to create (the first experiment's generation cost carried into
//! the schedule's bill).

use anyhow::Context;
use clap::Args;

use super::flat_summaries::Summaries;
use super::report::{self, Cell, Format, JsonLines, Table, Text};
use super::LoadArgs;
use tierscope_engine::policy;
use tierscope_engine::research::experiment::{BudgetMode, Row};
use tierscope_engine::research::flat_summaries::{self, SummarySource};
use tierscope_engine::research::report::thousands;
use tierscope_engine::research::tier_sources::{
    compare, compare_with_summaries, TierSourceComparison,
};
use tierscope_engine::session::LoadedSession;

#[derive(Debug, Clone, Args)]
pub struct ExperimentArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Policies to compare (built-in names or TOML files; repeatable). Default: every built-in.
    #[arg(long = "policy", short = 'p', value_name = "POLICY")]
    pub policies: Vec<String>,
    /// One token budget for every policy (default: the usable input limit of the recorded model).
    #[arg(long, conflicts_with = "match_mean_tokens", value_parser = super::report::budget_value)]
    pub budget: Option<u64>,
    /// Tune each policy's budget so its mean tokens match TOKENS (default: a mean that puts the
    /// session under pressure: per request, the irreducible part plus half of the rest of
    /// `full`'s rendering, averaged).
    #[arg(long, value_name = "TOKENS", num_args = 0..=1, default_missing_value = "auto")]
    pub match_mean_tokens: Option<String>,
    /// Run the table on each of these tier strategies, side by side with what their tiers cost
    /// to create (repeatable; default: source, cascade and record).
    #[arg(long = "strategy", value_name = "SOURCE")]
    pub strategies: Vec<tierscope_engine::episode::options::TierSource>,
    /// Also run it on the tiers sidecar in DIR (e.g. from `tiers generate --out DIR`; repeatable).
    #[arg(long = "tiers-dir", value_name = "DIR")]
    pub tiers_dirs: Vec<std::path::PathBuf>,
    /// Output: table, json (one document), csv or jsonl (one line per tier source and policy).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub summaries: super::flat_summaries::SummaryArgs,
}

pub fn run_cli(a: &ExperimentArgs) -> anyhow::Result<()> {
    // None given: the built-ins, the flat baseline being the session's own agent's (known once
    // it is loaded).
    let policies = a
        .policies
        .iter()
        .map(|p| policy::load(p, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    let mode = match a.match_mean_tokens.as_deref() {
        None => BudgetMode::Fixed(a.budget),
        Some("auto") => BudgetMode::MatchMeanTokens(None),
        Some(t) => BudgetMode::MatchMeanTokens(Some(
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .with_context(|| {
                    format!("--match-mean-tokens: expected a positive number, got {t:?}")
                })?,
        )),
    };
    run_tier_sources(a, &policies, mode)
}

/// The policy table's columns, one per [`policy_cells`] value.
const POLICY_COLUMNS: [&str; 24] = [
    "policy",
    "budget",
    "mean",
    "p50",
    "p95",
    "max",
    "max_overflow",
    "irreducible",
    "avoidable",
    "full",
    "dense",
    "compact",
    "anchor",
    "dropped",
    "floor_viol",
    "pin_viol",
    "holds",
    "thrash",
    "switch/100",
    "div_tokens",
    "div_$",
    "cost_$",
    "survival",
    "matched",
];

/// One policy's row of the table ([`POLICY_COLUMNS`]).
fn policy_cells(r: &Row) -> Vec<Cell> {
    let tokens = |v: u64| Cell::Tokens(v as i64);
    let share = |v: f64| Cell::Share(Some(v));
    vec![
        Cell::text(r.policy.clone()),
        tokens(r.budget),
        tokens(r.mean_tokens.round() as u64),
        tokens(r.p50_tokens),
        tokens(r.p95_tokens),
        tokens(r.max_tokens),
        tokens(r.max_overflow),
        tokens(r.irreducible_max),
        tokens(r.avoidable_overflow),
        share(r.tiers.full),
        share(r.tiers.dense),
        share(r.tiers.compact),
        share(r.tiers.anchor),
        share(r.tiers.dropped),
        Cell::Int(r.floor_violations),
        Cell::Int(r.pin_violations),
        Cell::Int(r.holds),
        Cell::Int(r.thrash),
        Cell::Fixed(r.switches_per_100, 1),
        Cell::Tokens(r.divergence_tokens),
        Cell::Fixed(r.divergence_dollars, 4),
        Cell::Fixed(r.cost, 4),
        Cell::Share(r.probe_survival),
        Cell::text(r.matched.map_or("-", |m| if m { "yes" } else { "no" })),
    ]
}

/// The policy table on several tier sources at the same budgets, with each source's generation
/// cost and the replay cost plus that (`total_$`): "tier changes also bill their creation".
fn run_tier_sources(
    a: &ExperimentArgs,
    policies: &[policy::Policy],
    mode: BudgetMode,
) -> anyhow::Result<()> {
    let names: Vec<&str> = a.policies.iter().map(String::as_str).collect();
    let summaries = a.summaries.open(&super::outputs::guard(&a.load, &names))?;
    let loads = super::audit::load_tier_sources(&a.load, &a.strategies, &a.tiers_dirs)?;
    if loads.is_empty() {
        anyhow::bail!("nothing to compare: no tier strategy could be loaded");
    }
    if loads[0].probes.is_empty() {
        report::stderr::note(
            "no probes sidecar found; probe survival and the oracles' yardsticks are empty",
        );
    }
    let chosen = policies_for(
        policies,
        loads[0].trace.origin.agent,
        !loads[0].probes.is_empty(),
    )?;
    let policies = &chosen;
    let refs: Vec<_> = loads.iter().collect();
    let c = match &summaries {
        None => compare(&refs, policies, mode),
        Some(sm) => with_summaries(sm, &refs, policies, mode)?,
    };
    report::emit(
        a.format,
        &TierSourcesReport {
            comparison: &c,
            policies: policies.len(),
        },
    )
}

/// The comparison with the flat baseline's summaries written by `sm`'s model, and what they
/// cost (on stderr too when a summary could not be written: what was spent, and that a rerun
/// resumes from the cache).
fn with_summaries(
    sm: &Summaries,
    refs: &[&LoadedSession],
    policies: &[policy::Policy],
    mode: BudgetMode,
) -> anyhow::Result<TierSourceComparison> {
    let writer = sm.writer();
    let src = SummarySource {
        writer: &writer,
        prompt: sm.prompt.clone(),
    };
    let first = refs
        .first()
        .context("nothing to compare: no tier strategy could be loaded")?;
    let done = compare_with_summaries(refs, policies, mode, &src);
    let bill = flat_summaries::report(&src, first, sm.price.clone());
    match done {
        Ok(mut c) => {
            c.flat_summaries = Some(bill);
            Ok(c)
        }
        Err(e) => {
            super::flat_summaries::report_to_stderr(&bill);
            Err(anyhow::Error::new(e).context(super::flat_summaries::RESUME))
        }
    }
}

/// The policies to run: those given, else the built-ins for the session's agent. The oracles
/// choose by the probes; without any they keep nothing, so they are left out of the default set
/// and, asked for by name, marked in their row.
fn policies_for(
    given: &[policy::Policy],
    agent: &str,
    have_probes: bool,
) -> anyhow::Result<Vec<policy::Policy>> {
    let is_oracle = |p: &policy::Policy| p.role() == policy::KindRole::Oracle;
    if given.is_empty() {
        let mut all = policy::builtins_for_agent(agent)?;
        if !have_probes {
            let left: Vec<String> = all
                .iter()
                .filter(|p| is_oracle(p))
                .map(|p| p.name.clone())
                .collect();
            if !left.is_empty() {
                report::stderr::note(&format!(
                    "{} left out: an oracle chooses by the probes, and this session has none",
                    left.join(", ")
                ));
            }
            all.retain(|p| !is_oracle(p));
        }
        return Ok(all);
    }
    Ok(given
        .iter()
        .cloned()
        .map(|mut p| {
            if is_oracle(&p) && !have_probes {
                p.name = format!("{} (no probes: keeps nothing)", p.name);
            }
            p
        })
        .collect())
}

/// The output of `experiment`: the comparison (JSON), one line per tier source and policy (JSON
/// Lines, CSV), or a header line, the table and the generation costs.
pub struct TierSourcesReport<'a> {
    pub comparison: &'a TierSourceComparison,
    /// How many policies each source ran (the header line).
    pub policies: usize,
}

impl report::Report for TierSourcesReport<'_> {
    fn name(&self) -> &'static str {
        "experiment"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.comparison
    }
    fn records(&self, out: &mut JsonLines<'_>) -> anyhow::Result<()> {
        let c = self.comparison;
        for run in &c.runs {
            out.with_context(vec![
                ("session", c.session.clone().into()),
                ("strategy", run.strategy.clone().into()),
                ("generation_dollars", run.generation.dollars.into()),
            ])
            .records(&run.experiment.rows)?;
        }
        Ok(())
    }
    fn rows(&self) -> Option<Table> {
        Some(tier_source_rows(self.comparison))
    }
    fn text(&self) -> Text {
        let c = self.comparison;
        let mut out = Text::new();
        let head = c.runs.first().map(|r| &r.experiment);
        out.line(format!(
            "{} — {} requests, {} episodes, {} probes; {} tier sources × {} policies; {}",
            c.session,
            head.map_or(0, |e| e.requests),
            head.map_or(0, |e| e.episodes),
            head.map_or(0, |e| e.probes),
            c.runs.len(),
            self.policies,
            match (c.target_mean_tokens, &c.target_rule) {
                (Some(t), Some(rule)) => format!(
                    "budgets tuned to mean {} tokens ({rule})",
                    thousands(t.round() as i64)
                ),
                (Some(t), None) => format!(
                    "budgets tuned to mean {} tokens",
                    thousands(t.round() as i64)
                ),
                (None, _) => "one budget for every policy".to_string(),
            }
        ));
        out.table(tier_source_rows(c));
        out.line(
            "irreducible = the largest system chunk + active episode of a request (no schedule can shed it); \
             avoidable = the largest overflow above it",
        );
        for run in &c.runs {
            for r in &run.experiment.rows {
                if let Some(cr) = &r.compaction {
                    out.line(format!(
                        "{} ({}): {}",
                        r.policy,
                        run.strategy,
                        cr.describe()
                    ));
                }
            }
        }
        if let Some(run) = c.runs.first() {
            out.blank();
            out.append(overflow_text(&run.strategy, &run.experiment));
        }
        if let Some(fs) = &c.flat_summaries {
            out.blank();
            out.append(super::flat_summaries::report_text(fs));
        }
        out.blank();
        out.line("generation cost (tier changes also bill their creation):");
        let gens: Vec<_> = c
            .runs
            .iter()
            .map(|r| (r.strategy.as_str(), &r.generation))
            .collect();
        out.append(super::audit::generation_text(&gens));
        out
    }
}

/// Per request with an overflow under some policy: the irreducible part beside each policy's
/// overflow (tier source `strategy`).
fn overflow_text(strategy: &str, e: &tierscope_engine::research::experiment::Experiment) -> Text {
    let mut out = Text::new();
    let mut headers = vec!["req".to_owned(), "irreducible".to_owned()];
    headers.extend(e.rows.iter().map(|r| format!("{}_over", r.policy)));
    let hs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::aligned(&hs);
    let mut shown = 0;
    for (i, irr) in e.irreducible.iter().enumerate() {
        if e.rows
            .iter()
            .all(|r| r.overflow.get(i).copied().unwrap_or(0) == 0)
        {
            continue;
        }
        shown += 1;
        let mut row = vec![Cell::Int(i as u64), Cell::Tokens(*irr as i64)];
        row.extend(
            e.rows
                .iter()
                .map(|r| Cell::Tokens(r.overflow.get(i).copied().unwrap_or(0) as i64)),
        );
        t.push(row);
    }
    if shown == 0 {
        out.line(format!(
            "per request ({strategy}): no policy overflows its budget"
        ));
        return out;
    }
    out.line(format!(
        "per request ({strategy}): irreducible part (system chunk + active episode) beside each policy's overflow; {shown} of {} requests overflow under some policy",
        e.irreducible.len()
    ));
    out.table(t);
    out
}

/// One row per tier source and policy: the source, the policy's row, what the source's tiers
/// cost to create and the replay cost plus that.
fn tier_source_rows(c: &TierSourceComparison) -> Table {
    let mut headers = vec!["strategy"];
    headers.extend(POLICY_COLUMNS);
    headers.extend(["gen_calls", "gen_$", "total_$"]);
    let mut t = Table::aligned(&headers);
    for run in &c.runs {
        let gen = run.generation.dollars;
        for r in &run.experiment.rows {
            let mut row = vec![Cell::text(run.strategy.clone())];
            row.extend(policy_cells(r));
            row.push(Cell::Int(run.generation.calls));
            row.push(gen.map_or(Cell::text("-"), |d| Cell::Fixed(d, 4)));
            row.push(gen.map_or(Cell::text("-"), |d| Cell::Fixed(r.cost + d, 4)));
            t.push(row);
        }
    }
    t
}

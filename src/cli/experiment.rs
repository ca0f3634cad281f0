//! `tierscope experiment`: every built-in policy (or `--policy …`) on one trace at one budget or
//! at budgets tuned so that mean tokens match: the chapter's second experiment as one table.

use anyhow::Context;
use clap::Args;

use super::report::{self, Cell, Format, JsonLines, Table, Text};
use super::LoadArgs;
use tierscope_engine::policy;
use tierscope_engine::research::experiment::{run, BudgetMode, Experiment};
use tierscope_engine::research::report::thousands;

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
    /// Tune each policy's budget so its mean tokens match TOKENS (default: the mean tokens of
    /// `retention` at the default budget).
    #[arg(long, value_name = "TOKENS", num_args = 0..=1, default_missing_value = "auto")]
    pub match_mean_tokens: Option<String>,
    /// Output: table, json (one document), csv or jsonl (one line per policy).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run_cli(a: &ExperimentArgs) -> anyhow::Result<()> {
    let policies = if a.policies.is_empty() {
        policy::builtins()?
    } else {
        a.policies
            .iter()
            .map(|p| policy::load(p, &[]))
            .collect::<Result<Vec<_>, _>>()?
    };
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
    let session =
        tierscope_engine::loaded::load(&a.load.options()).context("loading the session")?;
    for w in &session.warnings {
        report::stderr::warn(w);
    }
    if session.probes.is_empty() {
        report::stderr::note(
            "no probes sidecar found; probe survival and the oracles' yardsticks are empty",
        );
    }
    let e = run(&session, &policies, mode);
    report::emit(a.format, &ExperimentReport(&e))
}

/// The output of `experiment`: the experiment (JSON), one line per policy (JSON Lines, CSV),
/// or a header line and the policy table.
pub struct ExperimentReport<'a>(pub &'a Experiment);

impl report::Report for ExperimentReport<'_> {
    fn name(&self) -> &'static str {
        "experiment"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.0
    }
    fn records(&self, out: &mut JsonLines<'_>) -> anyhow::Result<()> {
        out.with_context(vec![("session", self.0.session.clone().into())])
            .records(&self.0.rows)
    }
    fn rows(&self) -> Option<Table> {
        Some(rows(self.0))
    }
    fn text(&self) -> Text {
        let e = self.0;
        let mut out = Text::new();
        out.line(format!(
            "{} — {} requests, {} episodes, {} probes; {}",
            e.session,
            e.requests,
            e.episodes,
            e.probes,
            match e.target_mean_tokens {
                Some(t) => format!(
                    "budgets tuned to mean {} tokens",
                    thousands(t.round() as i64)
                ),
                None => "one budget for every policy".to_string(),
            }
        ));
        out.table(rows(e));
        out
    }
}

/// One row per policy.
fn rows(e: &Experiment) -> Table {
    let mut t = Table::aligned(&[
        "policy",
        "budget",
        "mean",
        "p50",
        "p95",
        "max",
        "max_overflow",
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
    ]);
    let tokens = |v: u64| Cell::Tokens(v as i64);
    let share = |v: f64| Cell::Share(Some(v));
    for r in &e.rows {
        t.push(vec![
            Cell::text(r.policy.clone()),
            tokens(r.budget),
            tokens(r.mean_tokens.round() as u64),
            tokens(r.p50_tokens),
            tokens(r.p95_tokens),
            tokens(r.max_tokens),
            tokens(r.max_overflow),
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
        ]);
    }
    t
}

//! `tierscope experiment`: every built-in policy (or `--policy …`) on one trace at one budget or
//! at budgets tuned so that mean tokens match: the chapter's second experiment as one table. With
//! `--strategy` / `--tiers-dir`, the table per tier source, with what each source's tiers cost to
//! create (the first experiment's generation cost carried into the schedule's bill).

use anyhow::Context;
use clap::Args;

use super::output::{out, outln, print_json, print_jsonl, Format};
use super::LoadArgs;
use tierscope_engine::policy;
use tierscope_engine::research::experiment::{run, BudgetMode, Experiment};
use tierscope_engine::research::report::{csv, pct, table, thousands};

#[derive(Debug, Clone, Args)]
pub struct ExperimentArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Policies to compare (built-in names or TOML files; repeatable). Default: every built-in.
    #[arg(long = "policy", short = 'p', value_name = "POLICY")]
    pub policies: Vec<String>,
    /// One token budget for every policy (default: the usable input limit of the recorded model).
    #[arg(long, conflicts_with = "match_mean_tokens", value_parser = super::output::budget_value)]
    pub budget: Option<u64>,
    /// Tune each policy's budget so its mean tokens match TOKENS (default: the mean tokens of
    /// `retention` at the default budget).
    #[arg(long, value_name = "TOKENS", num_args = 0..=1, default_missing_value = "auto")]
    pub match_mean_tokens: Option<String>,
    /// Run the table on each of these tier strategies, side by side with what their tiers cost
    /// to create (repeatable; with `--tiers-dir` alone: source and cascade).
    #[arg(long = "strategy", value_name = "SOURCE")]
    pub strategies: Vec<tierscope_engine::episode::options::TierSource>,
    /// Also run it on the tiers sidecar in DIR (e.g. from `tiers generate --out DIR`; repeatable).
    #[arg(long = "tiers-dir", value_name = "DIR")]
    pub tiers_dirs: Vec<std::path::PathBuf>,
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
    if !a.strategies.is_empty() || !a.tiers_dirs.is_empty() {
        return run_tier_sources(a, &policies, mode);
    }
    let session =
        tierscope_engine::loaded::load(&a.load.options()).context("loading the session")?;
    for w in &session.warnings {
        eprintln!("warning: {w}");
    }
    if session.probes.is_empty() {
        eprintln!(
            "note: no probes sidecar found; probe survival and the oracles' yardsticks are empty"
        );
    }
    let e = run(&session, &policies, mode);
    match a.format {
        Format::Json => print_json(&e),
        Format::Jsonl => print_jsonl(&e.rows, &[("session", e.session.clone().into())]),
        Format::Csv => {
            out!("{}", csv(&HEADERS, &cells(&e, false)));
            Ok(())
        }
        Format::Table => {
            outln!(
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
            );
            out!("{}", table(&HEADERS, &cells(&e, true)));
            Ok(())
        }
    }
}

const HEADERS: [&str; 22] = [
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
];

fn cells(e: &Experiment, pretty: bool) -> Vec<Vec<String>> {
    let n = |v: u64| {
        if pretty {
            thousands(v as i64)
        } else {
            v.to_string()
        }
    };
    let share = |v: f64| {
        if pretty {
            pct(Some(v))
        } else {
            format!("{v:.4}")
        }
    };
    e.rows
        .iter()
        .map(|r| {
            vec![
                r.policy.clone(),
                n(r.budget),
                n(r.mean_tokens.round() as u64),
                n(r.p50_tokens),
                n(r.p95_tokens),
                n(r.max_tokens),
                n(r.max_overflow),
                share(r.tiers.full),
                share(r.tiers.dense),
                share(r.tiers.compact),
                share(r.tiers.anchor),
                share(r.tiers.dropped),
                r.floor_violations.to_string(),
                r.pin_violations.to_string(),
                r.holds.to_string(),
                r.thrash.to_string(),
                format!("{:.1}", r.switches_per_100),
                if pretty {
                    thousands(r.divergence_tokens)
                } else {
                    r.divergence_tokens.to_string()
                },
                format!("{:.4}", r.divergence_dollars),
                format!("{:.4}", r.cost),
                match r.probe_survival {
                    Some(s) if pretty => pct(Some(s)),
                    Some(s) => format!("{s:.4}"),
                    None => "-".into(),
                },
                r.matched
                    .map_or("-".into(), |m| if m { "yes".into() } else { "no".into() }),
            ]
        })
        .collect()
}

/// The policy table on several tier sources at the same budgets, with each source's generation
/// cost and the replay cost plus that (`total_$`): "tier changes also bill their creation".
fn run_tier_sources(
    a: &ExperimentArgs,
    policies: &[policy::Policy],
    mode: BudgetMode,
) -> anyhow::Result<()> {
    use tierscope_engine::research::tier_sources::compare;
    let loads = super::audit::load_tier_sources(&a.load, &a.strategies, &a.tiers_dirs)?;
    if loads.is_empty() {
        anyhow::bail!("nothing to compare: no tier strategy could be loaded");
    }
    if loads[0].probes.is_empty() {
        eprintln!("note: no probes sidecar found; probe survival is empty");
    }
    let refs: Vec<_> = loads.iter().collect();
    let c = compare(&refs, policies, mode);
    match a.format {
        Format::Json => print_json(&c),
        Format::Jsonl => {
            for run in &c.runs {
                print_jsonl(
                    &run.experiment.rows,
                    &[
                        ("session", c.session.clone().into()),
                        ("strategy", run.strategy.clone().into()),
                        ("generation_dollars", run.generation.dollars.into()),
                    ],
                )?;
            }
            Ok(())
        }
        Format::Csv | Format::Table => {
            let pretty = a.format == Format::Table;
            let mut h = vec!["strategy"];
            h.extend(HEADERS);
            h.extend(["gen_calls", "gen_$", "total_$"]);
            let mut body: Vec<Vec<String>> = Vec::new();
            for run in &c.runs {
                let gen = run.generation.dollars;
                for (mut row, r) in cells(&run.experiment, pretty)
                    .into_iter()
                    .zip(&run.experiment.rows)
                {
                    row.insert(0, run.strategy.clone());
                    row.push(run.generation.calls.to_string());
                    row.push(gen.map_or("-".into(), |d| format!("{d:.4}")));
                    row.push(gen.map_or("-".into(), |d| format!("{:.4}", r.cost + d)));
                    body.push(row);
                }
            }
            if pretty {
                outln!(
                    "{} — {} tier sources × {} policies; {}",
                    c.session,
                    c.runs.len(),
                    policies.len(),
                    match c.target_mean_tokens {
                        Some(t) => format!(
                            "budgets tuned to mean {} tokens",
                            thousands(t.round() as i64)
                        ),
                        None => "one budget for every policy".to_string(),
                    }
                );
                out!("{}", table(&h, &body));
                let gens: Vec<_> = c
                    .runs
                    .iter()
                    .map(|r| (r.strategy.as_str(), &r.generation))
                    .collect();
                outln!();
                outln!("generation cost (tier changes also bill their creation):");
                out!("{}", super::audit::generation_table(&gens));
            } else {
                out!("{}", csv(&h, &body));
            }
            Ok(())
        }
    }
}

//! `tierscope experiment`: every built-in policy (or `--policy …`) on one trace at one budget or
//! at budgets tuned so that mean tokens match: the chapter's second experiment as one table, once
//! per tier strategy (`source`, `cascade`, `record` by default).

use anyhow::Context;
use clap::Args;

use super::output::{out, outln, print_json, print_jsonl, Format};
use super::LoadArgs;
use tierscope_engine::episode::options::TierSource;
use tierscope_engine::policy;
use tierscope_engine::research::experiment::{run_strategies, BudgetMode, Experiment};
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
    /// Tier strategies whose representations the policies schedule (repeatable; default:
    /// source, cascade and record; `--tiers` is ignored when given).
    #[arg(long = "strategy", value_name = "SOURCE")]
    pub strategies: Vec<TierSource>,
    /// Output: table, json (one document), csv or jsonl (one line per policy and strategy).
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
    let strategies = if a.strategies.is_empty() {
        TierSource::GENERATED.to_vec()
    } else {
        a.strategies.clone()
    };
    let mut loads = Vec::new();
    for s in &strategies {
        let opts = tierscope_engine::loaded::LoadOptions {
            tiers: *s,
            ..a.load.options()
        };
        let l = tierscope_engine::loaded::load(&opts)
            .with_context(|| format!("loading the session with {} tiers", s.as_str()))?;
        // Warnings are the same for every strategy: said once.
        if loads.is_empty() {
            for w in &l.warnings {
                eprintln!("warning: {w}");
            }
            if l.probes.is_empty() {
                eprintln!(
                    "note: no probes sidecar found; probe survival and the oracles' yardsticks are empty"
                );
            }
        }
        loads.push(l);
    }
    let refs: Vec<_> = loads.iter().collect();
    let e = run_strategies(&refs, &policies, mode);
    match a.format {
        Format::Json => print_json(&e),
        Format::Jsonl => print_jsonl(&e.rows, &[("session", e.session.clone().into())]),
        Format::Csv => {
            out!("{}", csv(&HEADERS, &cells(&e, false)));
            Ok(())
        }
        Format::Table => {
            outln!(
                "{} — {} requests, {} episodes, {} probes; tiers {}; {}",
                e.session,
                e.requests,
                e.episodes,
                e.probes,
                e.strategies.join(", "),
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

const HEADERS: [&str; 23] = [
    "strategy",
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
                r.strategy.clone(),
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

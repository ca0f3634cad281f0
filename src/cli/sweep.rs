//! `tierscope sweep`: one policy over a grid of knob values, in parallel with a progress bar on
//! stderr; per point cost, divergence cost, mean tokens, overflow, thrash, holds, violations and
//! probe survival; invalid points listed and skipped; the Pareto front marked.

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::output::{out, outln, plural, print_json, print_jsonl, Format};
use super::LoadArgs;
use tierscope_engine::policy;
use tierscope_engine::research::report::{csv, pct, table, thousands};
use tierscope_engine::sweep::{self, format_value, Axis, SweepResult};

#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// A built-in policy name or a policy TOML file.
    #[arg(long, short = 'p', default_value = "retention")]
    pub policy: String,
    /// A knob and its inclusive range: KEY=FROM:TO:STEP (repeatable; the grid is every combination).
    #[arg(long = "vary", value_name = "KEY=FROM:TO:STEP", required = true)]
    pub vary: Vec<String>,
    /// Override a knob for every point: KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Token budget (default: the usable input limit of the recorded model).
    #[arg(long, value_parser = super::output::budget_value)]
    pub budget: Option<u64>,
    /// Output: table, json (one document), csv or jsonl (one line per grid point).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: &SweepArgs) -> anyhow::Result<()> {
    let overrides = policy::parse_overrides(&a.set)?;
    let policy = policy::load(&a.policy, &overrides)?;
    let axes = a
        .vary
        .iter()
        .map(|v| Axis::parse(v))
        .collect::<Result<Vec<_>, _>>()?;
    // A knob both fixed and varied: the grid would silently override the --set.
    if let Some((k, _)) = overrides
        .iter()
        .find(|(k, _)| axes.iter().any(|ax| &ax.key == k))
    {
        anyhow::bail!("{k} is both set (--set) and varied (--vary); give it once");
    }
    let n = sweep::validate(&policy, &axes)?;
    let session =
        tierscope_engine::loaded::load(&a.load.options()).context("loading the session")?;
    for w in &session.warnings {
        eprintln!("warning: {w}");
    }
    let bar = ProgressBar::new(n as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} sweep {pos}/{len} points [{bar:30}] {elapsed_precise} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let started = std::time::Instant::now();
    let result = sweep::run_with(&session, &policy, &axes, a.budget, &|| bar.inc(1))?;
    bar.finish_and_clear();
    eprintln!(
        "{} ({} invalid) in {:.1}s",
        plural(result.points.len(), "point"),
        result.points.len() - result.valid(),
        started.elapsed().as_secs_f64()
    );
    match a.format {
        Format::Json => print_json(&result),
        Format::Jsonl => print_jsonl(
            &result.points,
            &[
                ("policy", result.policy.clone().into()),
                ("budget", result.budget.into()),
            ],
        ),
        Format::Csv => {
            let (h, rows) = cells(&result, false);
            let h: Vec<&str> = h.iter().map(String::as_str).collect();
            out!("{}", csv(&h, &rows));
            Ok(())
        }
        Format::Table => {
            outln!(
                "sweep of {} at budget {} ({}); * = Pareto front (lower cost and thrash, higher survival)",
                result.policy,
                thousands(result.budget as i64),
                result.budget_source
            );
            let (h, rows) = cells(&result, true);
            let h: Vec<&str> = h.iter().map(String::as_str).collect();
            out!("{}", table(&h, &rows));
            // Each distinct reason once, with how many points it ruled out.
            let mut reasons: Vec<(String, usize)> = Vec::new();
            for r in result.points.iter().filter_map(|p| p.reason.as_ref()) {
                match reasons.iter_mut().find(|(x, _)| x == r) {
                    Some((_, n)) => *n += 1,
                    None => reasons.push((r.clone(), 1)),
                }
            }
            for (r, n) in reasons {
                outln!("invalid ({}): {r}", plural(n, "point"));
            }
            Ok(())
        }
    }
}

fn cells(r: &SweepResult, pretty: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let mut headers: Vec<String> = r.axes.iter().map(|a| a.key.clone()).collect();
    for h in [
        "status",
        "cost_$",
        "div_tokens",
        "div_$",
        "mean",
        "max_overflow",
        "overflow_reqs",
        "thrash",
        "holds",
        "violations",
        "survival",
        "pareto",
    ] {
        headers.push(h.to_string());
    }
    if !pretty {
        headers.push("reason".into());
    }
    let rows = r
        .points
        .iter()
        .map(|p| {
            let mut row: Vec<String> = p.knobs.iter().map(|(_, v)| format_value(*v)).collect();
            match &p.metrics {
                None => {
                    row.push("invalid".into());
                    row.extend(std::iter::repeat_n("-".to_string(), 10));
                    row.push(if pretty {
                        String::new()
                    } else {
                        "false".into()
                    });
                    if !pretty {
                        row.push(p.reason.clone().unwrap_or_default());
                    }
                }
                Some(m) => {
                    let n = |v: u64| {
                        if pretty {
                            thousands(v as i64)
                        } else {
                            v.to_string()
                        }
                    };
                    row.push("ok".into());
                    row.push(format!("{:.4}", m.cost));
                    row.push(if pretty {
                        thousands(m.divergence_tokens)
                    } else {
                        m.divergence_tokens.to_string()
                    });
                    row.push(format!("{:.4}", m.divergence_dollars));
                    row.push(n(m.mean_tokens.round() as u64));
                    row.push(n(m.max_overflow));
                    row.push(m.overflow_requests.to_string());
                    row.push(m.thrash.to_string());
                    row.push(m.holds.to_string());
                    row.push(m.violations.to_string());
                    row.push(match m.probe_survival {
                        Some(s) if pretty => pct(Some(s)),
                        Some(s) => format!("{s:.4}"),
                        None => "-".into(),
                    });
                    row.push(match (p.pareto, pretty) {
                        (true, true) => "*".into(),
                        (false, true) => String::new(),
                        (on, false) => on.to_string(),
                    });
                    if !pretty {
                        row.push(String::new());
                    }
                }
            }
            row
        })
        .collect();
    (headers, rows)
}

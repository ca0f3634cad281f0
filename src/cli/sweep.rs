//! `tierscope sweep`: one policy over a grid of knob values, in parallel with a progress bar on
//! stderr; per point cost, divergence cost, mean tokens, overflow, thrash, holds, violations and
//! probe survival; invalid points listed and skipped; the Pareto front marked.

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::report::{self, plural, Cell, Column, Format, JsonLines, Table, Text};
use super::LoadArgs;
use tierscope_engine::policy;
use tierscope_engine::research::report::thousands;
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
    /// Token budget (default: the usable input limit of the recorded model). Given, `opencode`
    /// (`trigger = auto`) simulates its compaction with it as the usable limit.
    #[arg(long, value_parser = super::report::budget_value)]
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
        tierscope_engine::session::load(&a.load.options()).context("loading the session")?;
    for w in &session.warnings {
        report::stderr::warn(w);
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
    report::stderr::line(&format!(
        "{} ({} invalid) in {:.1}s",
        plural(result.points.len(), "point"),
        result.points.len() - result.valid(),
        started.elapsed().as_secs_f64()
    ));
    report::emit(a.format, &SweepReport(&result))
}

/// The output of `sweep`: the result (JSON), one line per grid point (JSON Lines, CSV), or a
/// header, the points with the Pareto front marked, and the reasons points were invalid.
pub struct SweepReport<'a>(pub &'a SweepResult);

impl report::Report for SweepReport<'_> {
    fn name(&self) -> &'static str {
        "sweep"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.0
    }
    fn records(&self, out: &mut JsonLines<'_>) -> anyhow::Result<()> {
        out.with_context(vec![
            ("policy", self.0.policy.clone().into()),
            ("budget", self.0.budget.into()),
        ])
        .records(&self.0.points)
    }
    fn rows(&self) -> Option<Table> {
        Some(points(self.0))
    }
    fn text(&self) -> Text {
        let result = self.0;
        let mut out = Text::new();
        out.line(format!(
            "sweep of {} at budget {} ({}); * = Pareto front (within the budget first; lower cost, thrash and overflow, higher survival)",
            result.policy,
            thousands(result.budget as i64),
            result.budget_source
        ));
        if let Some(t) = &result.trigger {
            out.line(format!("{}: {t}", result.policy));
        }
        out.table(points(result));
        // Each distinct reason once, with how many points it ruled out.
        let mut reasons: Vec<(String, usize)> = Vec::new();
        for r in result.points.iter().filter_map(|p| p.reason.as_ref()) {
            match reasons.iter_mut().find(|(x, _)| x == r) {
                Some((_, n)) => *n += 1,
                None => reasons.push((r.clone(), 1)),
            }
        }
        for (r, n) in reasons {
            out.line(format!("invalid ({}): {r}", plural(n, "point")));
        }
        out
    }
}

/// One row per grid point: its knob values, then its metrics (`-` where it is invalid).
fn points(r: &SweepResult) -> Table {
    let mut headers: Vec<String> = r.axes.iter().map(|a| a.key.clone()).collect();
    headers.extend(
        [
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
        ]
        .map(String::from),
    );
    let mut t = Table::aligned(&headers);
    // Why a point is invalid: the table lists the reasons below it instead.
    t.columns.push(Column::right("reason").sep("  ").csv_only());
    for p in &r.points {
        let mut row: Vec<Cell> = p
            .knobs
            .iter()
            .map(|(_, v)| Cell::Text(format_value(*v)))
            .collect();
        match &p.metrics {
            None => {
                row.push(Cell::text("invalid"));
                row.extend(std::iter::repeat_n(Cell::text("-"), 10));
                row.push(Cell::Mark(false));
                row.push(Cell::Text(p.reason.clone().unwrap_or_default()));
            }
            Some(m) => {
                row.extend([
                    Cell::text("ok"),
                    Cell::Fixed(m.cost, 4),
                    Cell::Tokens(m.divergence_tokens),
                    Cell::Fixed(m.divergence_dollars, 4),
                    Cell::Tokens(m.mean_tokens.round() as i64),
                    Cell::Tokens(m.max_overflow as i64),
                    Cell::Int(m.overflow_requests),
                    Cell::Int(m.thrash),
                    Cell::Int(m.holds),
                    Cell::Int(m.violations),
                    Cell::Share(m.probe_survival),
                    Cell::Mark(p.pareto),
                    Cell::text(""),
                ]);
            }
        }
        t.push(row);
    }
    t
}

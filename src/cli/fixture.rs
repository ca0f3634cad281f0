//! `tierscope fixture`: write a deterministic synthetic session (an `opencode export` file) and
//! its hidden probes (`<name>.probes.json`) for experiments and benchmarks.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use crate::cli::report::{self, Format, Text};
use tierscope_engine::fixture::{write_fixture, FixtureConfig, FixtureReport};

#[derive(Debug, Args)]
pub struct FixtureArgs {
    /// Seed: the same seed and knobs give byte-identical files.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Requests (assistant messages) in the session, 1..=1,000,000.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub requests: u64,
    /// Directory to write `<name>.json` and `<name>.probes.json` into (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Episodes (human turns); default one per seven requests.
    #[arg(long)]
    pub episodes: Option<usize>,
    /// Mean characters of a tool output (each varies 0.25×–1.75×).
    #[arg(long, default_value_t = 1200)]
    pub output_size: usize,
    /// Share of planted facts that get a hidden probe, 0..=1 (every dimension gets one).
    #[arg(long, default_value_t = 0.6)]
    pub probe_density: f64,
    /// File stem; default `fixture-<seed>-<requests>`.
    #[arg(long)]
    pub name: Option<String>,
    /// `table` prints a summary; `json` the full report (`jsonl`: on one line; no `csv`).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(a: &FixtureArgs) -> anyhow::Result<()> {
    // Checked before anything is written: a report is one record, not a table of rows.
    if a.format == Format::Csv {
        anyhow::bail!("fixture has no CSV form (use --format table, json or jsonl)");
    }
    let cfg = FixtureConfig {
        seed: a.seed,
        requests: a.requests as usize,
        episodes: a.episodes,
        output_size: a.output_size,
        probe_density: a.probe_density,
        name: a.name.clone(),
    };
    let started = Instant::now();
    let report = write_fixture(&cfg, &a.out)
        .with_context(|| format!("writing fixture into {}", a.out.display()))?;
    let secs = started.elapsed().as_secs_f64();
    report::emit(a.format, &FixtureOutput(&report))?;
    if a.format == Format::Table {
        report::stderr::line(&format!("generated in {secs:.2}s"));
    }
    Ok(())
}

/// The output of `fixture`: the report (JSON; on one line for JSON Lines) or a summary.
pub struct FixtureOutput<'a>(pub &'a FixtureReport);

impl report::Report for FixtureOutput<'_> {
    fn name(&self) -> &'static str {
        "fixture"
    }
    fn document(&self) -> impl serde::Serialize + '_ {
        self.0
    }
    fn text(&self) -> Text {
        let report = self.0;
        let path = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let mut out = Text::new();
        out.line(format!("export   {}", path(&report.export_path)));
        out.line(format!("probes   {}", path(&report.probes_path)));
        out.line(format!("session  {}", report.session_id));
        out.line(format!(
            "{} requests, {} messages, {} episodes ({} revisits), {} probes, {:.1} MB",
            report.requests,
            report.messages,
            report.episodes,
            report.revisits,
            report.probes,
            report.bytes as f64 / 1e6
        ));
        let dims: Vec<String> = report
            .probes_by_dimension
            .iter()
            .map(|(d, n)| format!("{d} {n}"))
            .collect();
        out.line(format!("probes by dimension: {}", dims.join(", ")));
        out
    }
}

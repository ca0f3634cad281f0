//! `tierscope plot`: figures as SVG — the tier heatmap with the pressure chart of one replay, or
//! with `--sweep` the sweep map of one or two knobs coloured by a metric.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::LoadArgs;
use tierscope_engine::output_guard::write_file;
use tierscope_engine::policy;
use tierscope_engine::replay;
use tierscope_engine::research::plot::{replay_figure, sweep_figure, SweepMetric};
use tierscope_engine::sweep::{self, Axis};

#[derive(Debug, Clone, Args)]
pub struct PlotArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// A built-in policy name or a policy TOML file.
    #[arg(long, short = 'p', default_value = "retention")]
    pub policy: String,
    /// Override a knob: KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Token budget (default: the usable input limit of the recorded model).
    #[arg(long, value_parser = super::report::budget_value)]
    pub budget: Option<u64>,
    /// The SVG file to write.
    #[arg(long, value_name = "FILE.svg")]
    pub out: PathBuf,
    /// Draw the sweep map instead: KEY=FROM:TO:STEP (one or two).
    #[arg(long = "sweep", value_name = "KEY=FROM:TO:STEP")]
    pub sweep: Vec<String>,
    /// The sweep map's colour: cost, survival, thrash, mean_tokens, divergence_tokens or holds.
    #[arg(long, default_value = "cost")]
    pub metric: String,
    /// Figure size in pixels.
    #[arg(long, default_value_t = 1400)]
    pub width: u32,
    #[arg(long, default_value_t = 900)]
    pub height: u32,
}

pub fn run(a: &PlotArgs) -> anyhow::Result<()> {
    let overrides = policy::parse_overrides(&a.set)?;
    let policy = policy::load(&a.policy, &overrides)?;
    let size = (a.width.max(300), a.height.max(200));
    let mut guard = super::outputs::guard(&a.load, &[&a.policy]);
    guard.check(&a.out)?;
    let svg = if a.sweep.is_empty() {
        let session =
            tierscope_engine::session::load(&a.load.options()).context("loading the session")?;
        guard.loaded(&session);
        let r = replay::replay_session(&session, &policy, a.budget);
        replay_figure(&r, size)?
    } else {
        let metric = SweepMetric::parse(&a.metric).with_context(|| {
            format!("--metric {:?}: expected cost, survival, thrash, mean_tokens, divergence_tokens or holds", a.metric)
        })?;
        let axes = a
            .sweep
            .iter()
            .map(|s| Axis::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        if axes.len() > 2 {
            anyhow::bail!(
                "--sweep: the map shows one or two knobs, got {}",
                axes.len()
            );
        }
        sweep::validate(&policy, &axes)?;
        let session =
            tierscope_engine::session::load(&a.load.options()).context("loading the session")?;
        guard.loaded(&session);
        let res = sweep::run_with(&session, &policy, &axes, a.budget, &|| {})?;
        sweep_figure(&res, metric, size)?
    };
    write_file(&a.out, &guard, svg.as_bytes())?;
    super::report::stderr::line(&format!("wrote {}", a.out.display()));
    Ok(())
}

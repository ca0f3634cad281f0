//! Command-line front end: one file per subcommand. The CLI never touches TUI code except to
//! start the explorer (the default command). Output leaves only through [`report`] (which
//! sanitizes it); the lints below keep it that way.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use clap::{Parser, Subcommand};

pub mod audit;
pub mod diff;
pub mod episodes;
pub mod experiment;
pub mod explore;
pub mod fixture;
pub mod flat_summaries;
pub mod follow;
pub mod inspect;
pub mod load_args;
pub mod output_cache;
pub mod outputs;
pub mod plot;
pub mod policies;
pub mod render;
pub mod replay;
pub mod report;
pub mod sessions;
pub mod survey;
pub mod sweep;
pub mod tiers;

pub use load_args::LoadArgs;

#[derive(Debug, Parser)]
#[command(
    name = "tierscope",
    version,
    about = "Explore recorded AI coding-agent sessions (OpenCode, Claude Code, Codex CLI) and the tier schedules that decide how much of an old episode an agent still sees",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// With no subcommand: open the explorer (see `explore::ExploreArgs`).
    #[command(flatten)]
    pub explore: explore::ExploreArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every session found: id, title, directory, parent, times, messages, requests, tokens, cost.
    Sessions(sessions::SessionsArgs),
    /// Summarise one session: counts, recorded usage, compactions, diagnostics.
    Inspect(inspect::InspectArgs),
    /// Episodes with kinds, retention class, floor, pins and tokens per tier (--explain, --show, --records).
    Episodes(episodes::EpisodesArgs),
    /// Write a deterministic synthetic session (export format) with a hidden-probes sidecar.
    Fixture(fixture::FixtureArgs),
    /// Compare policies on one trace at matched budgets: size, tiers, violations, thrash, cost, probe survival.
    Experiment(experiment::ExperimentArgs),
    /// Replay one policy over a grid of knob values; mark the Pareto front (within the budget; cost, thrash, overflow, survival).
    Sweep(sweep::SweepArgs),
    /// Audit tiers: needle survival per token, non-monotonic, unsupported, contradictory and dominated tiers.
    Audit(audit::AuditArgs),
    /// Write figures as SVG: the tier heatmap and pressure chart, or with --sweep the sweep map.
    Plot(plot::PlotArgs),
    /// Survey every session of a data dir: old context, aged classes and kinds, tier use, savings, switches.
    Survey(survey::SurveyArgs),
    /// Replay a session under a policy: per-request tokens, tiers, divergence, cache, cost, changes.
    Replay(replay::ReplayArgs),
    /// The rendered context at one request, chunk by chunk (--diff-prev marks the divergence).
    Render(render::RenderArgs),
    /// List the built-in policies and their knobs (--json for sliders and sweeps).
    Policies(policies::PoliciesArgs),
    /// Compare two policies (or two knob sets) on one session: tier differences and deltas per request, summary deltas, --context --at N for the rendered-context diff.
    Diff(diff::DiffArgs),
    /// Tiers written by a model: `tiers generate` (once, cached, billed) into a `*.tiers.json` sidecar.
    Tiers(tiers::TiersArgs),
}

/// Leave `loaded` (a loaded session, its trace, a replay) to the operating system instead of
/// freeing it: the command is done with it and the process exits next, so freeing hundreds of
/// thousands of small allocations one by one is pure cost. Only the commands' `run` functions
/// call this, each once, on its way out.
pub(crate) fn keep_until_exit<T>(loaded: T) {
    std::mem::forget(loaded);
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        None => explore::run_explorer(&cli.explore),
        Some(c) => match c {
            Command::Sessions(a) => sessions::run(&a),
            Command::Inspect(a) => inspect::run(&a),
            Command::Episodes(a) => episodes::run(&a),
            Command::Fixture(a) => fixture::run(&a),
            Command::Experiment(a) => experiment::run_cli(&a),
            Command::Sweep(a) => sweep::run(&a),
            Command::Audit(a) => audit::run(&a),
            Command::Plot(a) => plot::run(&a),
            Command::Survey(a) => survey::run(&a),
            Command::Replay(a) => replay::run(&a),
            Command::Render(a) => render::run(&a),
            Command::Policies(a) => policies::run(&a),
            Command::Diff(a) => diff::run(&a),
            Command::Tiers(a) => tiers::run(&a),
        },
    }
}

//! Command-line front end: one file per subcommand. The CLI never touches TUI code except to
//! start the explorer (the default command).

use clap::{Parser, Subcommand};

pub mod load_args;
pub mod output;

pub use load_args::LoadArgs;

#[derive(Debug, Parser)]
#[command(
    name = "tierscope",
    version,
    about = "Explore recorded OpenCode sessions and the tier schedules that decide how much of an old episode an agent still sees",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        None => anyhow::bail!("the explorer is not built yet; see `tierscope --help`"),
        Some(c) => match c {},
    }
}

//! Loading flags shared by every command that loads a trace (episodes, replay, render, diff,
//! sweep, the explorer).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Clone, Default, Args)]
pub struct LoadArgs {
    /// An opencode.db file, an OpenCode data dir, a storage dir or an export file
    /// (default: the OpenCode data dir, else the bundled sample session).
    pub path: Option<PathBuf>,
    /// Session id (default: the most recently updated main session).
    #[arg(long)]
    pub session: Option<String>,
}

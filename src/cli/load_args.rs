//! Loading flags shared by every command that loads a trace (episodes, replay, render, diff,
//! sweep, the explorer).

use std::path::PathBuf;

use clap::Args;
use tierscope_engine::session::LoadOptions;

#[derive(Debug, Clone, Default, Args)]
pub struct LoadArgs {
    /// A session's data: OpenCode's opencode.db, data dir, storage dir or export file; Claude
    /// Code's data dir, project dir or session file; Codex's home, sessions dir or rollout file
    /// (default: every agent's data dir found, else the bundled sample session).
    pub path: Option<PathBuf>,
    /// Session id (default: the most recently updated main session).
    #[arg(long)]
    pub session: Option<String>,
    /// Episode segmentation: user-turn, request, annotations (starts from the annotations
    /// sidecar) or magic-context (compartment ranges).
    #[arg(long, value_name = "STRATEGY", default_value = "user-turn")]
    pub episodes: tierscope_engine::episode::segment::Segmentation,
    /// Where tiers come from: source (each tier from the raw parts), cascade (each from the tier
    /// above), record (views of a canonical record of the episode) or external (`*.tiers.json`,
    /// Magic Context).
    #[arg(long, value_name = "SOURCE", default_value = "source")]
    pub tiers: tierscope_engine::episode::options::TierSource,
    /// Tokenizer for every count: o200k or cl100k.
    #[arg(long, value_name = "NAME", default_value = "o200k")]
    pub tokenizer: tierscope_engine::tokens::TokenizerKind,
    /// Classification rules (TOML) replacing the embedded defaults.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Directory to look in first for `*.annotations.json`, `*.tiers.json`, `*.probes.json`.
    #[arg(long, value_name = "DIR")]
    pub sidecars: Option<PathBuf>,
    /// Split a long turn into episodes of at most N requests.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub max_requests: Option<usize>,
    /// Magic Context database (default: $XDG_DATA_HOME/cortexkit/magic-context/context.db).
    #[arg(long, value_name = "FILE")]
    pub magic_context: Option<PathBuf>,
}

impl LoadArgs {
    /// The engine's loading options these flags name.
    pub fn options(&self) -> LoadOptions {
        LoadOptions {
            path: self.path.clone(),
            session: self.session.clone(),
            episodes: self.episodes,
            tiers: self.tiers,
            tokenizer: self.tokenizer,
            rules: self.rules.clone(),
            sidecars: self.sidecars.clone(),
            max_requests: self.max_requests,
            magic_context: self.magic_context.clone(),
            token_cache_dir: None,
            records: false,
            drop_tier_texts: false,
            progress: Default::default(),
        }
    }

    /// Open the source these flags name (see [`tierscope_engine::trace::load::open`]).
    pub fn open(&self) -> anyhow::Result<tierscope_engine::trace::Source> {
        Ok(self.options().open()?)
    }

    /// Open the source and load the chosen session (`--session`, default: the most recently
    /// updated main session) with its sub-agents' ids, giving the source up (an export is then
    /// held once). Also: what was opened.
    pub fn load(&self) -> anyhow::Result<(String, tierscope_engine::trace::adapter::SessionParts)> {
        let source = self.open()?;
        let describe = source.describe();
        Ok((
            describe,
            source.into_session(self.session.as_deref(), false)?,
        ))
    }
}

/// `--max-requests 0` would be an episode of no requests: refused rather than ignored.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

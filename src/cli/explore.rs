//! The default command: open the explorer (the TUI) on a recording.
//!
//! `tierscope [PATH] [loading flags] [--policy P] [--budget N] [--set K=V]… [--at N]
//! [--episode ID] [--play] [--theme NAME]`. With no PATH the session picker opens over every
//! agent's data dir found (or the bundled sample session when there is none); so it does for a
//! database or data dir PATH holding several sessions, unless `--session` names one.

use anyhow::Context;
use clap::Args;

use crate::cli::LoadArgs;
use crate::tui::app::{Effect, StartOptions, State};
use crate::tui::run::{run, RunOptions};
use crate::tui::theme::{config_dir, Theme};

#[derive(Debug, Clone, Default, Args)]
pub struct ExploreArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Policy: a built-in name (full, truncate, opencode, age, retention, decay, oracle,
    /// oracle-legal) or a policy TOML file.
    #[arg(long, value_name = "P", default_value = "retention")]
    pub policy: String,
    /// Token budget (default: the recorded model's usable input limit). Given, `opencode`
    /// (`trigger = auto`) simulates its compaction with it as the usable limit.
    #[arg(long, value_name = "N")]
    pub budget: Option<u64>,
    /// Override a knob of the policy (repeatable), e.g. `--set demote_at=0.8`.
    #[arg(long = "set", value_name = "K=V")]
    pub set: Vec<String>,
    /// Start with the cursor at request N.
    #[arg(long, value_name = "N")]
    pub at: Option<usize>,
    /// Start with this episode selected (e.g. E3).
    #[arg(long, value_name = "ID")]
    pub episode: Option<String>,
    /// Start playing (auto-advance) at once.
    #[arg(long)]
    pub play: bool,
    /// Theme: dark (default), light, high-contrast, mono, a name in <config>/tierscope/themes/,
    /// or a .toml path. NO_COLOR selects mono.
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
    /// Leave the mouse to the terminal (native text selection).
    #[arg(long)]
    pub no_mouse: bool,
    /// Follow the session while its agent writes it (key W pauses and resumes).
    #[arg(long)]
    pub follow: bool,
}

pub fn run_explorer(a: &ExploreArgs) -> anyhow::Result<()> {
    let overrides = tierscope_engine::policy::parse_overrides(&a.set)?;
    let policy = tierscope_engine::policy::load(&a.policy, &overrides)?;
    let theme = Theme::load(a.theme.as_deref(), config_dir().as_deref())?;
    if a.budget == Some(0) {
        anyhow::bail!("--budget must be above 0");
    }
    // The picker opens over a data dir or database (several sessions) unless --session names
    // one; an export file holds one session (plus its sub-agents) and opens directly.
    let is_export = a
        .load
        .path
        .as_ref()
        .is_some_and(|p| p.extension().is_some_and(|e| e == "json"));
    let picker = a.load.session.is_none() && !is_export;
    let start = StartOptions {
        at: a.at,
        episode: a.episode.clone(),
        play: a.play,
        session: a.load.session.clone(),
        picker,
    };
    let initial = if picker {
        vec![Effect::ListSessions]
    } else {
        vec![Effect::LoadSession {
            id: a.load.session.clone(),
        }]
    };
    let mut state = State::new(theme, policy, a.budget, start);
    // C-t cycles the built-ins as the user's theme files patch them.
    let dir = config_dir();
    state.themes = builtin_themes(dir.as_deref());
    state.follow.enabled = a.follow;
    if let Some(p) = &a.load.path {
        state.source = p.display().to_string();
    }
    run(
        state,
        RunOptions {
            load: a.load.options(),
            mouse: !a.no_mouse,
            initial,
        },
    )
    .context("explorer")
}

/// The built-in themes, each patched by the user's file of that name when it loads.
fn builtin_themes(dir: Option<&std::path::Path>) -> Vec<Theme> {
    crate::tui::theme::BUILTIN
        .iter()
        .filter_map(|(name, _)| Theme::load(Some(name), dir).ok())
        .collect()
}

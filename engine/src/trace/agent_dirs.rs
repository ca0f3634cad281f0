//! Where each coding agent keeps its own data: the directories tierscope reads and never writes
//! into (see [`crate::output_guard`]). A registered agent's dirs come from its adapter
//! ([`crate::trace::adapter::Adapter::data_dirs`]); the agents not registered yet give theirs
//! through their own modules, and Magic Context (OpenCode's plugin) is listed here.

use std::path::PathBuf;

use super::adapter::{Adapter, Env};

/// One agent's data dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDir {
    /// The agent, as named in messages ("OpenCode", "Claude Code", "Codex CLI", "Magic Context").
    pub agent: &'static str,
    pub dir: PathBuf,
}

/// Every dir where an agent (or Magic Context, OpenCode's plugin) keeps its data, whether or not
/// it exists. Both the dir the environment selects and the default one are listed: data left
/// under the default after the variable was set is still the agent's.
///
/// - every registered adapter's [`data_dirs`](crate::trace::adapter::Adapter::data_dirs)
///   (OpenCode: `$XDG_DATA_HOME/opencode`, `~/.local/share/opencode`, and the dir of
///   `$OPENCODE_DB`);
/// - Magic Context: `$XDG_DATA_HOME/cortexkit/magic-context`, `~/.local/share/cortexkit/magic-context`;
/// - Claude Code: `~/.claude`, every dir in `$CLAUDE_CONFIG_DIR` (a comma-separated list),
///   `$XDG_CONFIG_HOME/claude`, `~/.config/claude`;
/// - Codex CLI (registered): `$CODEX_HOME`, `~/.codex`.
pub fn agent_data_dirs(env: &Env) -> Vec<AgentDir> {
    let mut out = Vec::new();
    let mut add = |agent: &'static str, dir: PathBuf| {
        // A relative value names no fixed place; the dirs under $HOME still apply.
        if dir.is_absolute() && !out.iter().any(|d: &AgentDir| d.dir == dir) {
            out.push(AgentDir { agent, dir });
        }
    };
    for adapter in crate::formats::ADAPTERS {
        for d in adapter.data_dirs(env) {
            add(adapter.name(), d);
        }
    }
    let home = env.home.clone();
    let xdg_data = env.xdg_data_home.clone().filter(|x| x.is_absolute());
    let local_share = home.as_ref().map(|h| h.join(".local").join("share"));
    for base in xdg_data.iter().chain(local_share.iter()) {
        add(
            "Magic Context",
            base.join("cortexkit").join("magic-context"),
        );
    }

    // Not registered yet, but its data is its already: its adapter's own list.
    let claude = crate::formats::claude_code::ClaudeCode;
    for d in claude.data_dirs(env) {
        add(claude.name(), d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agent_and_every_listed_claude_dir_is_there() {
        let env = Env {
            xdg_data_home: Some("/x/data".into()),
            home: Some("/h".into()),
            ..Env::default()
        }
        .with_var("OPENCODE_DB", "/db/here/opencode.db")
        .with_var("CLAUDE_CONFIG_DIR", "/c1, /c2,,relative")
        .with_var("CODEX_HOME", "/cx");
        let dirs: Vec<(&str, String)> = agent_data_dirs(&env)
            .into_iter()
            .map(|d| (d.agent, d.dir.display().to_string()))
            .collect();
        let has = |a: &str, d: &str| dirs.contains(&(a, d.to_owned()));
        assert!(has("OpenCode", "/x/data/opencode"), "{dirs:?}");
        assert!(has("OpenCode", "/h/.local/share/opencode"));
        assert!(has("OpenCode", "/db/here"));
        assert!(has("Magic Context", "/x/data/cortexkit/magic-context"));
        assert!(has("Claude Code", "/h/.claude"));
        assert!(has("Claude Code", "/c1"));
        assert!(has("Claude Code", "/c2"));
        assert!(has("Claude Code", "/h/.config/claude"));
        assert!(has("Codex CLI", "/cx"));
        assert!(has("Codex CLI", "/h/.codex"));
        assert!(!dirs.iter().any(|(_, d)| d == "relative"));
    }
}

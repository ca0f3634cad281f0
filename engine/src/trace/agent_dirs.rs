//! Where each coding agent keeps its own data: the directories tierscope reads and never writes
//! into (see [`crate::output_guard`]). One function, [`agent_data_dirs`], so that the adapter of
//! each agent can own its entry when the adapters arrive.

use std::ffi::OsString;
use std::path::PathBuf;

use super::discover::{self, Env};

/// The environment the agents' data dirs depend on (explicit, so tests need not touch the
/// process environment).
#[derive(Debug, Clone, Default)]
pub struct AgentEnv {
    /// `XDG_DATA_HOME`, `HOME` and `OPENCODE_DB`.
    pub opencode: Env,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`: one dir, or several separated by commas.
    pub claude_config_dir: Option<OsString>,
    /// `CODEX_HOME`.
    pub codex_home: Option<PathBuf>,
}

impl AgentEnv {
    pub fn from_process() -> AgentEnv {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        AgentEnv {
            opencode: Env::from_process(),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME").map(PathBuf::from),
        }
    }
}

/// One agent's data dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDir {
    /// The agent, as named in messages ("OpenCode", "Claude Code", "Codex", "Magic Context").
    pub agent: &'static str,
    pub dir: PathBuf,
}

/// Every dir where an agent (or Magic Context, OpenCode's plugin) keeps its data, whether or not
/// it exists. Both the dir the environment selects and the default one are listed: data left
/// under the default after the variable was set is still the agent's.
///
/// - OpenCode: `$XDG_DATA_HOME/opencode`, `~/.local/share/opencode`, and the dir of
///   `$OPENCODE_DB`;
/// - Magic Context: `$XDG_DATA_HOME/cortexkit/magic-context`, `~/.local/share/cortexkit/magic-context`;
/// - Claude Code: `~/.claude`, every dir in `$CLAUDE_CONFIG_DIR` (a comma-separated list),
///   `$XDG_CONFIG_HOME/claude`, `~/.config/claude`;
/// - Codex: `$CODEX_HOME`, `~/.codex`.
pub fn agent_data_dirs(env: &AgentEnv) -> Vec<AgentDir> {
    let mut out = Vec::new();
    let mut add = |agent: &'static str, dir: PathBuf| {
        // A relative value names no fixed place; the dirs under $HOME still apply.
        if dir.is_absolute() && !out.iter().any(|d: &AgentDir| d.dir == dir) {
            out.push(AgentDir { agent, dir });
        }
    };
    let home = env.opencode.home.clone();
    let xdg_data = env
        .opencode
        .xdg_data_home
        .clone()
        .filter(|x| x.is_absolute());
    let local_share = home.as_ref().map(|h| h.join(".local").join("share"));

    if let Some(d) = discover::default_data_dir(&env.opencode) {
        add("OpenCode", d);
    }
    if let Some(s) = &local_share {
        add("OpenCode", s.join("opencode"));
    }
    if let Some(db) = &env.opencode.opencode_db {
        let db = PathBuf::from(db);
        let db = if db.is_absolute() {
            Some(db)
        } else {
            discover::default_data_dir(&env.opencode).map(|d| d.join(db))
        };
        if let Some(parent) = db.as_deref().and_then(|d| d.parent()) {
            add("OpenCode", parent.to_path_buf());
        }
    }
    for base in xdg_data.iter().chain(local_share.iter()) {
        add(
            "Magic Context",
            base.join("cortexkit").join("magic-context"),
        );
    }

    if let Some(h) = &home {
        add("Claude Code", h.join(".claude"));
    }
    if let Some(list) = &env.claude_config_dir {
        for d in list.to_string_lossy().split(',') {
            let d = d.trim();
            if !d.is_empty() {
                add("Claude Code", PathBuf::from(d));
            }
        }
    }
    if let Some(x) = &env.xdg_config_home {
        add("Claude Code", x.join("claude"));
    }
    if let Some(h) = &home {
        add("Claude Code", h.join(".config").join("claude"));
    }

    if let Some(c) = &env.codex_home {
        add("Codex", c.clone());
    }
    if let Some(h) = &home {
        add("Codex", h.join(".codex"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agent_and_every_listed_claude_dir_is_there() {
        let env = AgentEnv {
            opencode: Env {
                xdg_data_home: Some("/x/data".into()),
                home: Some("/h".into()),
                opencode_db: Some("/db/here/opencode.db".to_owned()),
            },
            xdg_config_home: None,
            claude_config_dir: Some("/c1, /c2,,relative".into()),
            codex_home: Some("/cx".into()),
        };
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
        assert!(has("Codex", "/cx"));
        assert!(has("Codex", "/h/.codex"));
        assert!(!dirs.iter().any(|(_, d)| d == "relative"));
    }
}

//! Sub-agents: each run of the Agent (Task) tool writes its own transcript,
//! `<session>/subagents/agent-<agentId>.jsonl` (every record `isSidechain: true` with
//! `agentId`; the first is the Agent prompt as a user message), and
//! `agent-<agentId>.meta.json` (`agentType`, `description`, `toolUseId`: the spawning call).
//! The parent's tool result for that call has `toolUseResult.agentId` too, which links a
//! sub-agent whose meta file is missing. A sub-agent's requests are its own: its usage belongs
//! to it, not to the session that spawned it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `agent-<id>.meta.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentMeta {
    pub agent_type: Option<String>,
    pub description: Option<String>,
    /// The `tool_use` id of the Agent call that spawned it.
    pub tool_use_id: Option<String>,
    pub spawn_depth: Option<u32>,
}

/// A sub-agent transcript file found beside a session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    pub agent_id: String,
    pub path: PathBuf,
    pub meta_path: PathBuf,
}

/// The largest meta file read (they are a few hundred bytes).
const META_CAP: u64 = 1 << 20;

/// The directory holding a session file's sub-agent transcripts.
pub fn subagents_dir(session_file: &Path) -> Option<PathBuf> {
    let stem = session_file.file_stem()?;
    Some(session_file.with_file_name(stem).join("subagents"))
}

/// The sub-agent files of a session file, by agent id (none when there is no such dir).
pub fn agent_files(session_file: &Path) -> Vec<AgentFile> {
    let Some(dir) = subagents_dir(session_file) else {
        return Vec::new();
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<AgentFile> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let id = name.strip_prefix("agent-")?.strip_suffix(".jsonl")?;
            if id.is_empty() || !e.file_type().ok()?.is_file() {
                return None;
            }
            Some(AgentFile {
                agent_id: id.to_owned(),
                path: e.path(),
                meta_path: dir.join(format!("agent-{id}.meta.json")),
            })
        })
        .collect();
    out.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
    out
}

/// Read a meta file; `Err` says why it could not be (missing, not JSON, too large).
pub fn read_meta(path: &Path) -> Result<AgentMeta, String> {
    let text = crate::trace::input::read_text_bounded(path, META_CAP).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

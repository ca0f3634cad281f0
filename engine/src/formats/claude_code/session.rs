//! A Claude Code session read whole: its transcript, requests and compactions, and its
//! sub-agents each read the same way and linked to the tool call that spawned them.

use std::path::Path;

use super::compaction::{compactions, Compaction};
use super::requests::Requests;
use super::subagents::{agent_files, read_meta, AgentFile, AgentMeta};
use super::transcript::{ReadOptions, Transcript};
use super::usage::ClaudeUsage;
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::error::LoadError;

/// One transcript (a session's or a sub-agent's) with what was read from it.
#[derive(Debug, Clone)]
pub struct Thread {
    pub transcript: Transcript,
    pub requests: Requests,
    pub compactions: Vec<Compaction>,
}

impl Thread {
    pub fn read(path: &Path, opts: ReadOptions) -> Result<Thread, LoadError> {
        let mut transcript = Transcript::read_with(path, opts)?;
        // The results' contents move into the requests: held once.
        let requests = Requests::take(&mut transcript);
        let compactions = compactions(&transcript);
        Ok(Thread {
            transcript,
            requests,
            compactions,
        })
    }

    /// What went wrong or which rule applied, reading the file and its requests.
    pub fn diagnostics(&self) -> Diagnostics {
        let mut d = self.transcript.diagnostics.clone();
        d.extend(&self.requests.diagnostics);
        d
    }
}

/// Where a sub-agent was spawned: which thread (`None`: the session itself, else the spawning
/// sub-agent's id) and which of its tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn {
    pub agent: Option<String>,
    /// Index into that thread's [`Requests::tool_calls`].
    pub call: usize,
}

/// A sub-agent run.
#[derive(Debug, Clone)]
pub struct SubAgent {
    pub file: AgentFile,
    /// Its meta file, when it could be read.
    pub meta: Option<AgentMeta>,
    pub thread: Thread,
    /// The tool call that spawned it, when found.
    pub spawned_by: Option<Spawn>,
}

/// A session file and its sub-agents.
#[derive(Debug, Clone)]
pub struct Session {
    pub main: Thread,
    /// By agent id.
    pub subagents: Vec<SubAgent>,
    /// Trouble with the sub-agent files (each sub-agent's own is in its thread).
    pub diagnostics: Diagnostics,
}

impl Session {
    pub fn read(path: &Path) -> Result<Session, LoadError> {
        Session::read_with(path, ReadOptions::default())
    }

    /// Read a session file and its sub-agents. Only the session file itself failing is an
    /// error; a sub-agent file or meta file that cannot be read is a diagnostic.
    pub fn read_with(path: &Path, opts: ReadOptions) -> Result<Session, LoadError> {
        let main = Thread::read(path, opts)?;
        let mut diagnostics = Diagnostics::new();
        let mut subagents = Vec::new();
        for file in agent_files(path) {
            let thread = match Thread::read(&file.path, opts) {
                Ok(t) => t,
                Err(e) => {
                    diagnostics.push(DiagnosticKind::UnreadableFile, e.to_string());
                    continue;
                }
            };
            let meta = match read_meta(&file.meta_path) {
                Ok(m) => Some(m),
                Err(e) => {
                    diagnostics.push(
                        DiagnosticKind::UnreadableFile,
                        format!("sub-agent meta: {e}"),
                    );
                    None
                }
            };
            subagents.push(SubAgent {
                file,
                meta,
                thread,
                spawned_by: None,
            });
        }
        let links: Vec<Option<Spawn>> = subagents
            .iter()
            .map(|s| find_spawn(&main, &subagents, s))
            .collect();
        for (s, link) in subagents.iter_mut().zip(links) {
            if link.is_none() {
                diagnostics.push(
                    DiagnosticKind::OrphanMessage,
                    format!(
                        "sub-agent {}: no Agent call in the session spawned it",
                        crate::text::clip_chars(&s.file.agent_id, 40)
                    ),
                );
            }
            s.spawned_by = link;
        }
        Ok(Session {
            main,
            subagents,
            diagnostics,
        })
    }

    /// The session's own usage (sub-agents not included).
    pub fn own_usage(&self) -> ClaudeUsage {
        self.main.requests.total()
    }

    /// The session's usage with every sub-agent's.
    pub fn total_usage(&self) -> ClaudeUsage {
        let mut u = self.own_usage();
        for s in &self.subagents {
            u.add(&s.thread.requests.total());
        }
        u
    }

    /// Requests of the session and every sub-agent.
    pub fn total_requests(&self) -> usize {
        self.main.requests.responses.len()
            + self
                .subagents
                .iter()
                .map(|s| s.thread.requests.responses.len())
                .sum::<usize>()
    }
}

/// The call that spawned `sub`: the call named by its meta's `toolUseId`, else the Agent call
/// whose result names its agent id; searched in the session, then in the other sub-agents.
fn find_spawn(main: &Thread, subs: &[SubAgent], sub: &SubAgent) -> Option<Spawn> {
    let tool_use_id = sub.meta.as_ref().and_then(|m| m.tool_use_id.as_deref());
    let id = sub.file.agent_id.as_str();
    let find = |t: &Thread| {
        t.requests.tool_calls.iter().position(|c| {
            tool_use_id == Some(c.id.as_str())
                || c.result
                    .as_ref()
                    .and_then(|r| r.structured.as_ref())
                    .and_then(|s| s.get("agentId"))
                    .and_then(serde_json::Value::as_str)
                    == Some(id)
        })
    };
    if let Some(call) = find(main) {
        return Some(Spawn { agent: None, call });
    }
    subs.iter().filter(|s| s.file.agent_id != id).find_map(|s| {
        find(&s.thread).map(|call| Spawn {
            agent: Some(s.file.agent_id.clone()),
            call,
        })
    })
}

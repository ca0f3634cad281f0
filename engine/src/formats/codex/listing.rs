//! The threads under a Codex home, one line each: from the thread index where there is one,
//! completed (requests, usage) by a line scan of each rollout ([`super::scan`]), and from the
//! rollouts alone for threads the index does not have (or with no index).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::home::{resolve_rollout, rollout_files};
use super::scan::{scan_path, RolloutSummary};
use super::state_db::{StateDb, FILE};
use crate::trace::diagnostics::{DiagnosticKind, Diagnostics};
use crate::trace::load::SessionSummary;
use crate::trace::model::Usage;

/// How much of each thread a listing reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The index only where there is one: no requests, no usage split (`tokens_used` only).
    Index,
    /// Every rollout scanned too: requests and usage.
    Scan,
}

/// One thread of a Codex home.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadSummary {
    pub id: String,
    pub title: String,
    pub cwd: String,
    /// Unix ms.
    pub created: i64,
    pub updated: i64,
    pub parent_id: Option<String>,
    pub rollout: Option<PathBuf>,
    pub archived: bool,
    pub model: Option<String>,
    pub cli_version: Option<String>,
    /// Model responses; `None` when not scanned.
    pub requests: Option<usize>,
    /// Usage (neutral form); `None` when not scanned.
    pub usage: Option<Usage>,
    /// Messages of the loaded trace; `None` when not scanned.
    pub messages: Option<usize>,
    /// Cost by the pricing table ([`super::usage::cost`]); `None` when not scanned.
    pub cost: Option<f64>,
    /// Codex's thread `total_tokens` (the index's `tokens_used`, else summed by the scan).
    pub total_tokens: u64,
    /// Listed from the index.
    pub indexed: bool,
}

impl ThreadSummary {
    /// The neutral listing line; messages, requests, tokens and cost 0 when not scanned.
    pub fn to_session_summary(&self, children: Vec<String>) -> SessionSummary {
        SessionSummary {
            agent: "codex",
            id: self.id.clone(),
            title: self.title.clone(),
            directory: self.cwd.clone(),
            parent_id: self.parent_id.clone(),
            created: self.created,
            updated: self.updated,
            messages: self.messages.unwrap_or(0),
            requests: self.requests.unwrap_or(0),
            tokens: self.usage.unwrap_or_default(),
            cost: self.cost.unwrap_or(0.0),
            children,
        }
    }
}

/// Every thread under `home` (see the module docs), newest update first; trouble with the index
/// or a rollout is a diagnostic and the rest is listed.
pub fn list(home: &Path, depth: Depth, diags: &mut Diagnostics) -> Vec<ThreadSummary> {
    let files = rollout_files(home);
    let mut by_id: HashMap<String, ThreadSummary> = HashMap::new();
    let index = home.join(FILE);
    if index.is_file() {
        match StateDb::open(&index).and_then(|db| db.threads()) {
            Ok(rows) => {
                for r in rows {
                    let rollout = r
                        .rollout_path
                        .as_deref()
                        .and_then(|p| resolve_rollout(home, p));
                    by_id.insert(
                        r.id.clone(),
                        ThreadSummary {
                            title: r.title.unwrap_or_default(),
                            cwd: r.cwd.unwrap_or_default(),
                            created: r.created.unwrap_or(0),
                            updated: r.updated.or(r.created).unwrap_or(0),
                            parent_id: r.parent_id,
                            rollout,
                            archived: r.archived,
                            model: r.model,
                            cli_version: r.cli_version,
                            total_tokens: r.tokens_used.unwrap_or(0),
                            indexed: true,
                            id: r.id,
                            ..ThreadSummary::default()
                        },
                    );
                }
            }
            Err(e) => diags.push(
                DiagnosticKind::DatabaseDamage,
                format!(
                    "{}: {e}; threads listed from their rollouts",
                    index.display()
                ),
            ),
        }
    }
    // The active rollout wins over the path the index recorded (an archived copy).
    for f in &files {
        let t = by_id
            .entry(f.thread_id.clone())
            .or_insert_with(|| ThreadSummary {
                id: f.thread_id.clone(),
                ..ThreadSummary::default()
            });
        if t.rollout.is_none() || !f.archived {
            t.rollout = Some(f.path.clone());
            t.archived = f.archived;
        }
    }
    let mut out: Vec<ThreadSummary> = by_id.into_values().collect();
    for t in &mut out {
        if depth == Depth::Index && t.indexed {
            continue;
        }
        let Some(path) = t.rollout.clone() else {
            diags.push(
                DiagnosticKind::UnreadableFile,
                format!("thread {}: its rollout file is not here", t.id),
            );
            continue;
        };
        match scan_path(&path) {
            Ok(s) => {
                diags.extend(&s.diagnostics);
                fill(t, s);
            }
            Err(e) => diags.push(
                DiagnosticKind::UnreadableFile,
                format!("{}: {e}", path.display()),
            ),
        }
    }
    out.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| a.id.cmp(&b.id)));
    out
}

/// What the scan adds to a thread: its counts, and every field the index left empty.
pub fn fill(t: &mut ThreadSummary, s: RolloutSummary) {
    t.requests = Some(s.requests);
    t.messages = Some(s.messages);
    t.usage = Some(s.usage);
    t.cost = Some(s.cost);
    if !t.indexed {
        t.total_tokens = s.total_tokens;
    }
    if t.title.is_empty() {
        t.title = s.title.unwrap_or_default();
    }
    if t.cwd.is_empty() {
        t.cwd = s.cwd.unwrap_or_default();
    }
    if t.created == 0 {
        t.created = s.created.unwrap_or(0);
    }
    t.updated = t.updated.max(s.updated.unwrap_or(0));
    if t.parent_id.is_none() {
        t.parent_id = s.parent_thread_id;
    }
    if t.model.is_none() {
        t.model = s.model;
    }
    if t.cli_version.is_none() {
        t.cli_version = s.cli_version;
    }
}

/// The listing as neutral lines, each parent naming its sub-agent threads.
pub fn session_summaries(threads: &[ThreadSummary]) -> Vec<SessionSummary> {
    threads
        .iter()
        .map(|t| {
            let children = threads
                .iter()
                .filter(|c| c.parent_id.as_deref() == Some(t.id.as_str()))
                .map(|c| c.id.clone())
                .collect();
            t.to_session_summary(children)
        })
        .collect()
}

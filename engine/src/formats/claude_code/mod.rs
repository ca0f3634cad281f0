//! Claude Code (Anthropic's CLI): its session files, read as they are written.
//!
//! Not registered in [`crate::formats::ADAPTERS`] yet: these modules read everything a session
//! file holds, but a Claude Code session is not converted into the neutral
//! [`crate::trace::model::Trace`] until that model stops carrying OpenCode's part kinds, and a
//! half-read agent must not reach users.
//!
//! Where the files are: `~/.claude/projects/<cwd, every non-alphanumeric character as ->/
//! <session uuid>.jsonl` (also under each dir of `$CLAUDE_CONFIG_DIR`, a comma-separated list,
//! and `~/.config/claude/projects`), append-only JSON lines linked by `uuid` / `parentUuid`.
//! Beside a session file, `<session uuid>/subagents/agent-<agentId>.jsonl` (+ `.meta.json`) holds
//! each sub-agent's transcript and `<session uuid>/tool-results/<id>.txt` the tool outputs the
//! CLI saved instead of putting them in the context.
//!
//! - [`crate::trace::jsonl`] (shared with Codex): the file line by line, a line's length bounded;
//! - [`record`]: the record kinds, typed and lenient;
//! - [`transcript`]: a session file read whole (damaged lines reported, rewritten records kept
//!   once, the active branch of the DAG);
//! - [`usage`]: Claude's usage, normalized;
//! - [`requests`]: API responses as requests, API errors, interrupts, tool calls and results;
//! - [`compaction`]: compaction boundaries and their summaries;
//! - [`subagents`]: sub-agent transcripts linked to the calls that spawned them;
//! - [`session`]: a session file with all of the above;
//! - [`listing`]: a session's line in a listing, without reading whole records;
//! - [`discover`], [`watch`], [`adapter`]: what a path is, what to follow, and the adapter
//!   (unregistered, see above).
pub mod adapter;
pub mod compaction;
pub mod discover;

pub mod listing;
pub mod record;
pub mod requests;
pub mod resume;
pub mod session;
pub mod subagents;
pub mod to_trace;
pub mod transcript;
pub mod usage;
pub mod watch;

pub use adapter::ClaudeCode;

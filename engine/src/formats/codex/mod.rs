//! Codex CLI (openai/codex): its rollout files, its thread index, and how its usage reads.
//!
//! Behind the adapter seam as [`Codex`] ([`adapter`]), registered in
//! [`crate::formats::ADAPTERS`]: a typed reader of the rollout files ([`rollout`]), the thread
//! they make ([`thread`]: responses, turns, tool calls, compactions), its conversion into the
//! neutral [`crate::trace::model::Trace`] ([`to_trace`]), a cheap listing ([`listing`],
//! [`scan`]), input detection, data dirs and discovery ([`input`]) and what `--follow` watches
//! ([`watch`]).
//!
//! Where Codex keeps its data: `$CODEX_HOME` (default `~/.codex`), one rollout file per thread
//! under `sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl` (`codex exec resume`
//! appends to it), archived threads under `archived_sessions/` (the active copy wins), and the
//! thread index `state_5.sqlite` (read-only, never creating a side file beside it).
//!
//! **Usage** is recorded inclusive (`cached_input_tokens` ⊂ `input_tokens`, reasoning ⊂
//! output) and converted here into the neutral disjoint form ([`usage`]): uncached input, cache
//! read, cache write 0, output without reasoning, reasoning. One figure per model response
//! ([`thread`] says why `token_count` events are not summed).

pub mod adapter;
pub mod home;
pub mod input;
pub mod listing;
pub mod rollout;
pub mod scan;
pub mod state_db;
pub mod thread;
pub mod to_trace;
pub mod usage;
pub mod watch;

pub use adapter::{Codex, CodexStore};

//! OpenCode: its storage formats (SQLite database, JSON storage tree, `opencode export` files),
//! its releases' rules (eras), the listing cache, and how it builds what a request sent.
pub mod adapter;
pub mod agent_prompt;
pub mod compaction_request;
pub mod db;
pub mod derive;
pub mod dialect;
pub mod discover;
pub mod export;
mod export_salvage;
mod export_stream;
mod export_window;
pub mod flat_rules;
pub mod json;
pub mod listing;
pub mod listing_cache;
pub mod listing_scan;
pub mod message_v1;
pub mod parse;
pub(crate) mod row_pipeline;
pub mod steps;
pub mod storage;
pub mod store;
pub mod tail_estimate;
pub mod v2;
pub mod watch;

pub use adapter::OpenCode;
pub use dialect::{Dialect, Era};

//! OpenCode's storage formats.
pub mod db;
pub mod export;
mod export_salvage;
pub mod message_full;
pub mod message_row;
pub mod message_v1;
pub mod part_row;
pub(crate) mod row_pipeline;
pub mod storage;
pub mod v2;

//! OpenCode's storage formats.
pub mod db;
pub mod export;
pub mod message_v1;
pub mod storage;
pub mod v2;

//! OpenCode's storage formats.
pub mod db;
pub mod export;
pub mod storage;
pub mod v2;

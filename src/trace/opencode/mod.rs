//! OpenCode's storage formats.
pub mod export;

//! One folder per agent whose recordings tierscope reads.
pub mod opencode;

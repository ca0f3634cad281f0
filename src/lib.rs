//! tierscope: explore recorded OpenCode sessions and the tier schedules that decide how much of an
//! old episode an agent still sees.
//!
//! Data flows one way: [`trace`] (formats → neutral model) → episodes + tiers → replay →
//! compare / sweep → reporters (CLI) and the TUI. Everything but the front ends is pure.

pub mod cli;
pub mod compare;
pub mod episode;
pub mod fixture;
pub mod follow;
pub mod loaded;
pub mod policy;
pub mod replay;
pub mod research;
pub mod sweep;
pub mod text;
pub mod tokens;
pub mod trace;
pub mod tui;
pub mod watch;

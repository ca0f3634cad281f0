//! tierscope: explore recorded OpenCode sessions and the tier schedules that decide how much of an
//! old episode an agent still sees.
//!
//! Data flows one way: [`trace`] (formats → neutral model) → episodes + tiers → replay →
//! compare / sweep → reporters (CLI) and the TUI. Everything but the front ends is pure.

pub mod text;
pub mod cli;
pub mod episode;
pub mod trace;

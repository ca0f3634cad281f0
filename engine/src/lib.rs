//! tierscope's engine: OpenCode formats → the neutral [`trace`] model → episodes and tiers
//! ([`episode`], [`tokens`], [`session`]) → the schedule [`replay`] under a [`policy`] →
//! [`compare`], [`sweep`] and [`research`].
//!
//! Everything here is plain data and pure functions: no terminal and no argument parsing. The
//! `tierscope` crate (the CLI reporters and the explorer) is the only front end, and data flows
//! one way, from this crate to it. Every file either writes goes through [`output_guard`].

pub mod cache_file;
pub mod compare;
pub mod episode;
pub mod fixture;
pub mod follow;
pub mod formats;
pub mod historian;
pub mod output_guard;
pub mod policy;
pub mod replay;
pub mod research;
pub mod rng;
pub mod session;
pub mod sweep;
pub mod text;
pub mod tokens;
pub mod trace;
pub mod watch;

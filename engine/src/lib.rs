//! tierscope's engine: OpenCode formats → the neutral [`trace`] model → episodes and tiers
//! ([`episode`], [`tokens`], [`session`]) → the schedule [`replay`] under a [`policy`] →
//! [`compare`], [`sweep`] and [`research`].
//!
//! Two layers. The core ([`trace`], [`formats`], [`episode`], [`tokens`], [`session`],
//! [`policy`], [`replay`], [`text`], [`output_guard`], [`cache_file`], [`rng`], [`watch`]) reads
//! traces, builds episodes and tiers, counts tokens and replays schedules: plain data and pure
//! functions over files it reads. Above it, the integrations call models or run studies
//! ([`historian`], [`research`], [`compare`], [`sweep`], [`fixture`]) and follow a live session
//! ([`follow`]); no core module names them outside its tests (`tests/it/layers.rs`). No terminal
//! and no argument parsing anywhere: the `tierscope` crate (the CLI reporters and the explorer)
//! is the only front end, and data flows one way, from this crate to it. Every file either
//! writes goes through [`output_guard`].

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

//! Research tools over loaded sessions: the policy comparison table ([`experiment`]).
//! Threshold sweeps live in [`crate::sweep`]; fixtures in [`crate::fixture`].

pub mod experiment;
pub mod report;

//! Research tools over loaded sessions: the policy comparison table ([`experiment`]), the tier
//! audit ([`audit`]).
//! Threshold sweeps live in [`crate::sweep`]; fixtures in [`crate::fixture`].

pub mod audit;
pub mod experiment;
pub mod plot;
pub mod report;

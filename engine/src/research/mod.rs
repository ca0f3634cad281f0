//! Research tools over loaded sessions: the policy comparison table ([`experiment`]; the flat
//! baseline's summaries written by a model, [`flat_summaries`]), the tier
//! audit ([`audit`]) and tier sources side by side with their generation cost
//! ([`tier_sources`]), the survey of real sessions ([`survey`]), SVG figures ([`plot`]).
//! Threshold sweeps live in [`crate::sweep`]; fixtures in [`crate::fixture`].

pub mod audit;
pub mod experiment;
pub mod flat_summaries;
pub mod plot;
pub mod report;
pub mod survey;
pub mod tier_sources;

//! The neutral trace model and the loaders that produce it.
pub mod adapter;
pub mod agent_dirs;
pub mod diagnostics;
pub mod error;
pub mod flat_rules;
pub mod input;
pub mod jsonl;
pub mod lenient;
pub mod load;
pub mod model;
pub mod plain_name;
pub mod sqlite;
pub mod summary_call;

pub use adapter::{Adapter, Env, ListingCache};
pub use diagnostics::{Diagnostic, DiagnosticKind, Diagnostics};
pub use error::LoadError;
pub use load::{open, SessionSummary, Source};
pub use model::*;

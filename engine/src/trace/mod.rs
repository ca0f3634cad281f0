//! The neutral trace model and the loaders that produce it.
pub mod compaction_request;
pub mod derive;
pub mod diagnostics;
pub mod dialect;
pub mod discover;
pub mod error;
pub mod file_id;
pub mod input;
pub mod lenient;
pub mod listing;
pub mod listing_cache;
pub mod listing_scan;
pub mod load;
pub mod model;
pub mod opencode;
pub mod parse;
pub mod steps;

pub use diagnostics::{Diagnostic, DiagnosticKind, Diagnostics};
pub use dialect::{Dialect, Era};
pub use error::LoadError;
pub use load::{open, SessionSummary, Source};
pub use model::*;

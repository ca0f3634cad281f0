//! Episodes, by responsibility: the rules (`rules`), reading the text (`reading`, `prose`),
//! segmentation (`segment`), classification (`classify` with `evidence` and `facts`: class,
//! floor, reasons, pins), tiers (`tiers`, `external`, `needles`), the canonical record
//! (`record`, `record_view`), and the data they share (`model`, `options`, `lineage`,
//! `sidecar`, `source`: the episode tiers and the record are generated from). Magic Context's
//! compartments come from its reader in [`crate::formats::magic_context`]; the only files read
//! here are a `--rules` file and the sidecars. The modules depend on each other without a cycle,
//! and on nothing above the trace (`tests/it/layers.rs`).
pub mod classify;
pub mod evidence;
pub mod external;
pub mod facts;
pub mod found;
pub mod lineage;
pub mod model;
pub mod needles;
pub mod options;
pub mod prose;
pub mod reading;
pub mod record;
pub mod record_view;
pub mod rules;
pub mod segment;
pub mod sidecar;
pub mod source;
pub mod tiers;

pub use model::*;

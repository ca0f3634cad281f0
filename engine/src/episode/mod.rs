//! Episodes, by responsibility: the rules (`rules`), reading the text (`reading`, `prose`),
//! segmentation (`segment`), classification (`classify` with `evidence` and `facts`: class,
//! floor, reasons, pins), tiers (`tiers`, `external`, `needles`), the canonical record
//! (`record`, `record_view`), and the data they share (`model`, `options`, `lineage`,
//! `sidecar`). Magic Context's reader (`magic_context`) turns its compartments into episodes.
pub mod classify;
pub mod evidence;
pub mod external;
pub mod facts;
pub mod lineage;
pub mod magic_context;
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
pub mod tiers;

pub use model::*;

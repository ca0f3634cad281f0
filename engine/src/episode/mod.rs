//! Episodes: segmentation, classification (class, floor, reasons, pins), tier generation.
pub mod classify;
pub mod evidence;
pub mod external;
pub mod lineage;
pub mod magic_context;
pub mod model;
pub mod needles;
pub mod options;
pub mod prose;
pub mod record;
pub mod record_view;
pub mod segment;
pub mod sidecar;
pub mod tiers;

pub use model::*;

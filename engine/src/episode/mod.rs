//! Episodes: segmentation, classification (class, floor, reasons, pins), tier generation.
pub mod classify;
pub mod external;
pub mod historian;
pub mod magic_context;
pub mod model;
pub mod needles;
pub mod options;
pub mod segment;
pub mod sidecar;
pub mod tiers;

pub use model::*;

//! Episodes: segmentation, classification (class, floor, reasons, pins), tier generation.
pub mod model;

pub use model::*;

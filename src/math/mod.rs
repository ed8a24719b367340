//! Shared maths: one-pass summary statistics and dense linear algebra, used by observables and the health checks alike.

pub mod downsample;
pub mod linalg;
pub mod stats;

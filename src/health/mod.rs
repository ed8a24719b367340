//! Health: measuring nodes for the verdict, thresholds as JSON, and the verdict's JSON shapes.
//!
//! The rules themselves live in the dependency-free `somatize_verdict` crate; this module
//! computes the metrics they read from tensors and carries JSON in and out.

pub mod cka;
pub mod forward;
pub mod json;
pub mod measure;
pub mod rank;
pub mod thresholds;

pub use cka::linear_cka;
pub use forward::{measure_forward, nodes_from_keys, Step};
pub use json::{about_json, AboutJson, BoundJson, ForwardJson, Seen, SeenNode, VerdictJson};
pub use measure::{measure, measure_loss, MeasureError, Metrics, NodeTensors};
pub use rank::{rank_metrics, RankOf};
pub use thresholds::ThresholdsError;

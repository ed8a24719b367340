//! Health: measuring nodes for the verdict, what a record carries for it, the verdict over a
//! store, thresholds as JSON, and the verdict's JSON shapes.
//!
//! The rules themselves live in the dependency-free `somatize_verdict` crate; this module
//! computes the metrics they read from tensors, writes them into forwards' records, reads
//! them back from a store, and carries JSON in and out.

pub mod cka;
pub mod compare;
pub mod error;
pub mod forward;
pub mod graph;
pub mod json;
pub mod keys;
pub mod layout;
pub mod measure;
pub mod metrics;
pub mod rank;
pub mod record;
pub mod store;
pub mod summary;
pub mod thresholds;

pub use cka::linear_cka;
pub use forward::{measure_forward, measure_nodes, nodes_from_keys, Step};
pub use json::{about_json, AboutJson, BoundJson, ForwardJson, Seen, SeenNode, VerdictJson};
pub use layout::UnitRule;
pub use measure::{measure, measure_loss, summarise, MeasureError, NodeTensors};
pub use metrics::{node_metrics, step_metrics, NodeSums};
pub use rank::{rank_metrics, RankOf};
pub use record::{step_facts, step_record, step_stats, Graph, GraphNode, GRAPH_FILE};
pub use store::{
    alerts, diagnose, history, seen, where_, within, Alert, Diagnosis, HealthCache, HealthError,
    RunHealth,
};
pub use summary::{StepSummary, SummaryError, WireSummary};
pub use thresholds::ThresholdsError;

/// A node's metrics by name.
pub type Metrics = std::collections::BTreeMap<String, f64>;

/// The most entries a CKA intermediate matrix may have (32 MiB of f64).
pub const CKA_MAX_ENTRIES: usize = 1 << 22;

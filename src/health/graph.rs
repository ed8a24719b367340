//! A run's graph (`runs/<run>/graph.json`): its nodes in declaration order, their kinds and layouts, and pairs declared apart.

use serde::{Deserialize, Serialize};

pub use crate::store::format::GRAPH_FILE;

/// The path of run `run`'s graph in a store.
pub fn graph_path(run: &str) -> String {
    format!("{}/{GRAPH_FILE}", crate::store::format::run_dir(run))
}

/// One node of a graph: its name, kind (`Linear`, `ReLU`, …; empty when unknown) and,
/// optionally, the layout of its output (`NCHW`, `NTD`, `ND`, …: one letter per axis, the
/// units at `C`, else `D`; without one the kind decides, see [`super::layout`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    pub name: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

/// A run's graph: nodes in declaration order, and pairs of nodes declared apart (two groups
/// meant to carry different information; LEAKAGE compares their outputs). This is the
/// `graph.json` of the dump convention and of a store's run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    /// `[a, b]` pairs: the CKA of `act.a` and `act.b` is written as `cka` on node `b`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apart: Vec<[String; 2]>,
}

/// The most bytes a `graph.json` may have (it names nodes; 16 MiB is thousands of them).
pub const GRAPH_MAX_BYTES: usize = 16 << 20;

impl Graph {
    /// A graph of `(name, kind)` nodes in declaration order.
    pub fn of<N: Into<String>, K: Into<String>>(nodes: impl IntoIterator<Item = (N, K)>) -> Self {
        Graph {
            nodes: nodes
                .into_iter()
                .map(|(n, k)| GraphNode {
                    name: n.into(),
                    kind: k.into(),
                    layout: None,
                })
                .collect(),
            apart: Vec::new(),
        }
    }

    /// Parse a `graph.json`; `source` names it in the error.
    pub fn parse(bytes: &[u8], source: &str) -> Result<Self, String> {
        if bytes.len() > GRAPH_MAX_BYTES {
            return Err(format!(
                "{source}: {} bytes is over the {GRAPH_MAX_BYTES}-byte cap for a graph",
                bytes.len()
            ));
        }
        let graph: Graph = serde_json::from_slice(bytes).map_err(|e| {
            format!("{source}: not a graph {{\"nodes\": [{{\"name\", \"kind\"}}, …]}}: {e}")
        })?;
        for node in &graph.nodes {
            if let Some(layout) = &node.layout {
                super::layout::check_layout(layout)
                    .map_err(|e| format!("{source}: node {:?}: {e}", node.name))?;
            }
        }
        Ok(graph)
    }

    /// The nodes as `(name, kind)` pairs.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.nodes
            .iter()
            .map(|n| (n.name.clone(), n.kind.clone()))
            .collect()
    }

    /// The kind of node `name`, if the graph has it.
    pub fn kind_of(&self, name: &str) -> Option<&str> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.kind.as_str())
    }
}

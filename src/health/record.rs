//! What a forward's record carries for the verdict: the run's graph (`runs/<run>/graph.json`)
//! and, per forward, the per-node health metrics (`stats.json`) and facts, computed from one
//! step's tensors, the step before and the graph. Every way in (import, the companion, the
//! demo, wasm's `stepStats`) goes through [`step_stats`]; a dump's step files are read by
//! [`read_step_file`], natively (import) and in wasm alike.

use super::forward::{nodes_from_keys, summarise_step, Step};
use super::measure::{measure_loss, MeasureError};
use super::metrics::step_metrics;
use super::summary::StepSummary;
use crate::store::{Fact, ForwardRecord, NodeStats, Num, TensorBytes};
use crate::tensor::bytes::Source;
use crate::tensor::{TensorError, TensorFile};
use somatize_verdict::metrics as m;
use somatize_verdict::NodeSeen;

pub use super::graph::{graph_path, Graph, GraphNode, GRAPH_FILE, GRAPH_MAX_BYTES};

/// Every tensor of one step file (a dump's `step_<n>.npz`), each read once.
pub fn read_step_file<S: Source>(mut file: TensorFile<S>) -> Result<Step, TensorError> {
    let mut step = Step::new();
    for entry in file.entries() {
        let t = file.read(&entry.key)?;
        step.insert(entry.key, t);
    }
    Ok(step)
}

/// Only the parameters of a step: all that [`step_stats`] reads of the step before (the
/// update is taken against them), so the rest need not be kept.
pub fn params_only(step: Step) -> Step {
    step.into_iter()
        .filter(|(k, _)| k.starts_with("param."))
        .collect()
}

/// Every node's health metrics at one step, as `node -> metric -> number` (`stats.json`):
/// the nodes of `graph` (or, with an empty graph, those the keys name), their tensors
/// summarised by [`summarise_step`] with `previous` (the step before) giving the applied
/// update and the CKA sums of each pair declared apart, the metrics derived by
/// [`step_metrics`] (`cka` on the second node of a pair); and the `loss` node with `loss`,
/// `nan`, `inf`.
pub fn step_stats(
    graph: &Graph,
    step: &Step,
    previous: Option<&Step>,
) -> Result<NodeStats, MeasureError> {
    let keyed;
    let nodes = if graph.nodes.is_empty() {
        keyed = Graph::of(nodes_from_keys(step)).nodes;
        &keyed
    } else {
        &graph.nodes
    };
    let summary = summarise_step(nodes, step, previous, &graph.apart)?;
    let mut seen = step_metrics(nodes, &summary);
    if let Some(loss) = step.get("loss") {
        seen.push(NodeSeen {
            name: "loss".into(),
            kind: String::new(),
            metrics: measure_loss(loss),
        });
    }
    Ok(to_stats(&seen))
}

/// Every node's health metrics from a step's summary (torch's, sent in a frame): the nodes of
/// `graph` by [`step_metrics`], the same derivation [`step_stats`] makes of whole tensors.
pub fn summary_stats(graph: &Graph, summary: &StepSummary) -> NodeStats {
    to_stats(&step_metrics(&graph.nodes, summary))
}

/// Measured nodes as a `stats.json` table.
pub fn to_stats(seen: &[NodeSeen]) -> NodeStats {
    seen.iter()
        .filter(|n| !n.metrics.is_empty())
        .map(|n| {
            let row = n
                .metrics
                .iter()
                .map(|(k, v)| (k.clone(), Num(*v)))
                .collect();
            (n.name.clone(), row)
        })
        .collect()
}

/// The facts of a step with no timings: one per graph node (kind from the graph), and the
/// loss as a fact of kind `loss` with its `value` when the step has a `loss`.
pub fn step_facts(graph: &Graph, step: &Step) -> Vec<Fact> {
    let mut facts: Vec<Fact> = if graph.nodes.is_empty() {
        nodes_from_keys(step)
            .into_iter()
            .map(|(n, k)| Fact::new(n, k))
            .collect()
    } else {
        graph
            .nodes
            .iter()
            .map(|n| Fact::new(&n.name, &n.kind))
            .collect()
    };
    if let Some(loss) = step.get("loss") {
        let value = measure_loss(loss).get(m::LOSS).copied().unwrap_or(f64::NAN);
        facts.push(Fact::loss(value));
    }
    facts
}

/// One step as a forward record: facts, the node metrics as `stats.json`, and (when
/// `keep_tensors`) every tensor of the step.
pub fn step_record(
    forward: u64,
    graph: &Graph,
    step: &Step,
    previous: Option<&Step>,
    keep_tensors: bool,
) -> Result<ForwardRecord<'static>, MeasureError> {
    let tensors = if keep_tensors {
        step.iter()
            .map(|(k, t)| TensorBytes::from_typed(k, t))
            .collect()
    } else {
        Vec::new()
    };
    Ok(ForwardRecord {
        forward,
        facts: step_facts(graph, step),
        stats: step_stats(graph, step, previous)?,
        tensors,
        ..Default::default()
    })
}

/// Write run `run`'s `graph.json` into the store folder `root` unless it already has one
/// (the first writer writes it; the graph is the same for every writer): to a temporary
/// name, synced, then renamed. Returns whether it wrote it.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_graph(
    root: &std::path::Path,
    run: &str,
    graph: &Graph,
) -> Result<bool, crate::store::StoreError> {
    use crate::store::StoreError;
    use std::io::Write;
    crate::store::names::run(run)?;
    if let Some(url) = root.to_str().filter(|s| crate::store::object::is_url(s)) {
        let text = serde_json::to_vec_pretty(graph).unwrap_or_default();
        return crate::store::object::put_run_file_once(url, run, GRAPH_FILE, text);
    }
    let path = root.join(graph_path(run));
    if path.exists() {
        return Ok(false);
    }
    let dir = root.join(crate::store::format::run_dir(run));
    let io = |op: &'static str| {
        let name = path.display().to_string();
        move |e: std::io::Error| StoreError::io(name, op, e)
    };
    std::fs::create_dir_all(&dir).map_err(io("create the run folder"))?;
    let tmp = dir.join(format!("{GRAPH_FILE}.{}.tmp", std::process::id()));
    let text = serde_json::to_vec_pretty(graph).unwrap_or_default();
    let mut f = std::fs::File::create(&tmp).map_err(io("create"))?;
    f.write_all(&text).map_err(io("write"))?;
    f.sync_all().map_err(io("sync"))?;
    std::fs::rename(&tmp, &path).map_err(io("rename"))?;
    Ok(true)
}

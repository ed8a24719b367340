//! Measuring a whole forward from a per-step dump: every node's metrics, by the DESIGN keys
//! `param.<node>.<leaf>`, `grad.<node>.<leaf>`, `act.<node>` and `loss`.

use super::measure::{measure, measure_loss, MeasureError, NodeTensors};
use crate::tensor::TypedTensor;
use somatize_verdict::NodeSeen;
use std::collections::{BTreeMap, HashMap, HashSet};

/// One step's tensors by key.
pub type Step = BTreeMap<String, TypedTensor>;

/// The node and leaf of a `<prefix>.<node>.<leaf>` key: the leaf is the last dotted part,
/// so `param.layer1.0.weight` is node `layer1.0`, leaf `weight`.
fn owner<'a>(key: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = key.strip_prefix(prefix)?.strip_prefix('.')?;
    rest.rsplit_once('.').map(|(node, _)| node)
}

/// The graph node a `<prefix>.<path>.<leaf>` key belongs to: the longest node name that is a
/// dotted prefix of its path, so `param.layer1.0.conv1.weight` belongs to `layer1.0.conv1` if
/// the graph has it, else to `layer1.0`, else to `layer1`.
fn belongs_to<'a>(key: &str, prefix: &str, names: &HashSet<&'a str>) -> Option<&'a str> {
    let mut path = owner(key, prefix)?;
    loop {
        if let Some(name) = names.get(path) {
            return Some(name);
        }
        path = path.rsplit_once('.')?.0;
    }
}

/// The tensors under `prefix` (`param` or `grad`) grouped by the node they belong to, each
/// group in key order.
fn group<'a, 'n>(
    step: &'a Step,
    prefix: &str,
    names: &HashSet<&'n str>,
) -> HashMap<&'n str, Vec<&'a TypedTensor>> {
    let mut out: HashMap<&str, Vec<&TypedTensor>> = HashMap::new();
    for (key, t) in step {
        if let Some(node) = belongs_to(key, prefix, names) {
            out.entry(node).or_default().push(t);
        }
    }
    out
}

/// For each node, the `weight` of the next node in declaration order that has one (one
/// backward pass over the graph).
fn next_weights<'a>(graph: &[(String, String)], step: &'a Step) -> Vec<Option<&'a TypedTensor>> {
    let mut out = vec![None; graph.len()];
    let mut next = None;
    for (i, (name, _)) in graph.iter().enumerate().rev() {
        out[i] = next;
        if let Some(w) = step.get(&format!("param.{name}.weight")) {
            next = Some(w);
        }
    }
    out
}

/// The nodes of a step with no graph: every node a `param.`, `grad.` or `act.` key names,
/// in key order, with no kind (so no kind-dependent rule applies to them).
pub fn nodes_from_keys(step: &Step) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for key in step.keys() {
        let node = owner(key, "param")
            .or_else(|| owner(key, "grad"))
            .or_else(|| key.strip_prefix("act."));
        if let Some(node) = node {
            if !out.iter().any(|(n, _)| n == node) {
                out.push((node.to_string(), String::new()));
            }
        }
    }
    out
}

/// Every node's metrics at one step, in the order of `graph` (`(name, kind)` in declaration
/// order), then the `loss` node when the step has a `loss`. A parameter or gradient belongs to
/// the graph node with the longest name its path starts with (a coarse node owns its
/// submodules' parameters). `previous` is the step before, for the update metrics (a node
/// whose parameter count changed gets none); a node's `next_weight` is the `weight` of the
/// next node in declaration order that has one.
pub fn measure_forward(
    graph: &[(String, String)],
    step: &Step,
    previous: Option<&Step>,
) -> Result<Vec<NodeSeen>, MeasureError> {
    let names: HashSet<&str> = graph.iter().map(|(n, _)| n.as_str()).collect();
    let params = group(step, "param", &names);
    let grads = group(step, "grad", &names);
    let before = previous
        .map(|p| group(p, "param", &names))
        .unwrap_or_default();
    let none = Vec::new();
    let next_weights = next_weights(graph, step);
    let mut out = Vec::with_capacity(graph.len() + 1);
    for (i, (name, kind)) in graph.iter().enumerate() {
        let params = params.get(name.as_str()).unwrap_or(&none);
        let previous = before
            .get(name.as_str())
            .filter(|b| b.len() == params.len())
            .unwrap_or(&none);
        let next_weight = next_weights.get(i).copied().flatten();
        let metrics = measure(&NodeTensors {
            kind,
            params,
            grads: grads.get(name.as_str()).unwrap_or(&none),
            previous,
            activation: step.get(&format!("act.{name}")),
            next_weight,
        })?;
        out.push(NodeSeen {
            name: name.clone(),
            kind: kind.clone(),
            metrics,
        });
    }
    if let Some(loss) = step.get("loss") {
        out.push(NodeSeen {
            name: "loss".into(),
            kind: String::new(),
            metrics: measure_loss(loss),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(key: &str, v: Vec<f32>, shape: &[usize]) -> (String, TypedTensor) {
        (
            key.into(),
            TypedTensor::from_f32(key, v, shape.to_vec()).unwrap(),
        )
    }

    #[test]
    fn nested_names_own_only_their_own_leaves() {
        for (key, want) in [
            ("param.layer1.weight", Some("layer1")),
            ("param.layer1.0.weight", Some("layer1.0")),
            ("param.w", None),
            ("params.x.w", None),
        ] {
            assert_eq!(owner(key, "param"), want, "owner({key:?})");
        }
        let step: Step = [
            t("param.layer1.weight", vec![3.0, 4.0], &[1, 2]),
            t("param.layer1.0.weight", vec![1.0], &[1]),
            t("act.layer1.0", vec![1.0, -1.0], &[1, 2]),
            t("loss", vec![0.5], &[]),
        ]
        .into_iter()
        .collect();
        let graph = nodes_from_keys(&step);
        let names: Vec<&str> = graph.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["layer1.0", "layer1"]);
        let seen = measure_forward(&graph, &step, None).unwrap();
        assert_eq!(
            seen[1].get("param_norm"),
            Some(5.0),
            "layer1 is its own weight only"
        );
        assert_eq!(seen[0].get("param_norm"), Some(1.0));
        assert_eq!(seen[0].get("units"), Some(2.0));
        assert_eq!(seen[2].name, "loss");
        assert_eq!(seen[2].get("loss"), Some(0.5));
        // A coarse graph owns its submodules' parameters.
        let coarse = vec![("layer1".to_string(), "Sequential".to_string())];
        let seen = measure_forward(&coarse, &step, None).unwrap();
        let both = (9.0f64 + 16.0 + 1.0).sqrt();
        assert_eq!(
            seen[0].get("param_norm"),
            Some(both),
            "layer1 owns layer1.0's weight"
        );
    }
}

//! Measuring a whole forward from a per-step dump: every node's metrics, by the DESIGN keys
//! `param.<node>.<leaf>`, `grad.<node>.<leaf>`, `act.<node>` and `loss`.

use super::graph::GraphNode;
use super::layout::{is_channel_first, is_consumer, is_elementwise, is_transparent, UnitRule};
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
    keyed(step, prefix, names)
        .into_iter()
        .map(|(n, v)| (n, v.into_iter().map(|(_, t)| t).collect()))
        .collect()
}

/// [`group`] with each tensor's key.
fn keyed<'a, 'n>(
    step: &'a Step,
    prefix: &str,
    names: &HashSet<&'n str>,
) -> HashMap<&'n str, Vec<(&'a str, &'a TypedTensor)>> {
    let mut out: HashMap<&str, Vec<(&str, &TypedTensor)>> = HashMap::new();
    for (key, t) in step {
        if let Some(node) = belongs_to(key, prefix, names) {
            out.entry(node).or_default().push((key, t));
        }
    }
    out
}

/// A node's applied updates, one per parameter in the order of `params` (`update.<path>` for
/// each `param.<path>`), when the step has one of the same length for every parameter; else
/// none (a partial or malformed update is not used, and the difference against the step
/// before applies instead).
fn updates_of<'a>(step: &'a Step, params: &[(&str, &TypedTensor)]) -> Vec<&'a TypedTensor> {
    let mut out = Vec::with_capacity(params.len());
    for (key, p) in params {
        let Some(path) = key.strip_prefix("param.") else {
            return Vec::new();
        };
        match step.get(&format!("update.{path}")) {
            Some(u) if u.len() == p.len() => out.push(u),
            _ => return Vec::new(),
        }
    }
    out
}

/// A node's `weight` when it reads the units of the node before it as a linear map: a
/// [`is_consumer`] kind (Linear, Conv, …; not a norm, an embedding or an element-wise kind)
/// with a `param.<node>.weight` of two or more axes.
fn consumer_weight<'a>(node: &GraphNode, step: &'a Step) -> Option<&'a TypedTensor> {
    let w = step.get(&format!("param.{}.weight", node.name))?;
    (w.shape.len() >= 2 && is_consumer(&node.kind)).then_some(w)
}

/// For each node, the weight of the consumer that reads its units (for ignored units): the
/// weight of the first node after it, skipping [`is_transparent`] ones (dropout, identity,
/// flatten, which get none themselves), when that node is a consumer. So the units are judged
/// once, on the node that feeds the consumer: in `Linear → ReLU → Linear` on the ReLU, not on the first Linear; in
/// `Linear → Linear` on the first Linear; and in `Linear → LayerNorm → …` on neither the first
/// Linear nor across the norm (a norm re-scales every unit, so the consumer's weight says
/// nothing about the Linear's units; the norm's own output is judged if a consumer reads it).
fn next_weights<'a>(graph: &[GraphNode], step: &'a Step) -> Vec<Option<&'a TypedTensor>> {
    let mut out = vec![None; graph.len()];
    let mut next = None;
    for (i, node) in graph.iter().enumerate().rev() {
        // A transparent node passes the units on: they are judged on the node before it.
        if !is_transparent(&node.kind) {
            out[i] = next;
            next = consumer_weight(node, step);
        }
    }
    out
}

/// For each node, the rule its unit axis is chosen by: its declared layout; else, for an
/// element-wise kind, the rule of the nearest node before it with an output, when that
/// output has the same rank (a ReLU after a `Conv2d` is channel-first too); else its kind's.
fn unit_rules<'a>(graph: &'a [GraphNode], step: &Step) -> Vec<UnitRule<'a>> {
    let mut out = Vec::with_capacity(graph.len());
    let mut before: Option<(usize, UnitRule)> = None;
    for node in graph {
        let act = step.get(&format!("act.{}", node.name));
        let rank = act.map(|a| a.shape.len());
        let own = match &node.layout {
            Some(l) => UnitRule::Layout(l),
            None if is_elementwise(&node.kind) || is_transparent(&node.kind) => match before {
                Some((r, rule)) if Some(r) == rank => rule,
                _ => UnitRule::Last,
            },
            None if is_channel_first(&node.kind) => UnitRule::ChannelFirst,
            None => UnitRule::Last,
        };
        if let Some(r) = rank {
            before = Some((r, own));
        }
        out.push(own);
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
/// order): [`measure_nodes`] with no declared layouts.
pub fn measure_forward(
    graph: &[(String, String)],
    step: &Step,
    previous: Option<&Step>,
) -> Result<Vec<NodeSeen>, MeasureError> {
    let nodes: Vec<GraphNode> = graph
        .iter()
        .map(|(n, k)| GraphNode {
            name: n.clone(),
            kind: k.clone(),
            layout: None,
        })
        .collect();
    measure_nodes(&nodes, step, previous)
}

/// Every node's metrics at one step, in the order of `graph` (declaration order), then the
/// `loss` node when the step has a `loss`. A parameter or gradient belongs to the graph node
/// with the longest name its path starts with (a coarse node owns its submodules'
/// parameters). A node's update metrics come from its `update.<node>.<leaf>` tensors (the
/// applied update of one optimiser step; `param.*` are then the weights the forward used)
/// when the step has them for every parameter of the node, else from `previous`, which must
/// be the step just before (the caller checks; a node whose parameter count changed gets none). A node's unit axis follows its layout (see [`unit_rules`]); its
/// ignored units are judged by the consumer that reads them (see [`next_weights`]).
pub fn measure_nodes(
    graph: &[GraphNode],
    step: &Step,
    previous: Option<&Step>,
) -> Result<Vec<NodeSeen>, MeasureError> {
    let names: HashSet<&str> = graph.iter().map(|n| n.name.as_str()).collect();
    let keyed_params = keyed(step, "param", &names);
    let params = group(step, "param", &names);
    let grads = group(step, "grad", &names);
    let before = previous
        .map(|p| group(p, "param", &names))
        .unwrap_or_default();
    let none = Vec::new();
    let next_weights = next_weights(graph, step);
    let rules = unit_rules(graph, step);
    let mut out = Vec::with_capacity(graph.len() + 1);
    for (i, node) in graph.iter().enumerate() {
        let (name, kind) = (&node.name, &node.kind);
        let params = params.get(name.as_str()).unwrap_or(&none);
        // A node's own applied update wins; else the difference against the step before.
        let given = keyed_params
            .get(name.as_str())
            .map(|k| updates_of(step, k))
            .unwrap_or_default();
        let previous = before
            .get(name.as_str())
            .filter(|b| b.len() == params.len() && given.is_empty())
            .unwrap_or(&none);
        let next_weight = next_weights.get(i).copied().flatten();
        let metrics = measure(&NodeTensors {
            kind,
            params,
            grads: grads.get(name.as_str()).unwrap_or(&none),
            previous,
            updates: &given,
            activation: step.get(&format!("act.{name}")),
            units: rules.get(i).copied().unwrap_or_default(),
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

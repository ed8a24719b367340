//! Measuring a whole forward from a per-step dump: every node's tensors summarised (by the
//! DESIGN keys `param.<node>.<leaf>`, `grad.<node>.<leaf>`, `update.<node>.<leaf>`,
//! `act.<node>` and `loss`) into a [`StepSummary`], then its metrics by
//! [`step_metrics`], as torch's summaries are.

use super::cka::cka_sums;
use super::graph::GraphNode;
use super::keys::{keyed, owner, readers};
use super::layout::{is_channel_first, is_elementwise, is_transparent, UnitRule};
use super::measure::{measure_loss, summarise, summarise_columns, MeasureError, NodeTensors};
use super::metrics::step_metrics;
use super::summary::StepSummary;
use crate::tensor::TypedTensor;
use somatize_verdict::NodeSeen;
use std::collections::{BTreeMap, HashMap, HashSet};

/// One step's tensors by key.
pub type Step = BTreeMap<String, TypedTensor>;

/// The tensors under `prefix` (`param` or `grad`) grouped by the node they belong to, each
/// group in key order.
fn group<'a, 'n>(
    step: &'a Step,
    prefix: &str,
    names: &HashSet<&'n str>,
) -> HashMap<&'n str, Vec<(&'a str, &'a TypedTensor)>> {
    keyed(step, prefix, names)
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
/// `loss` node when the step has a `loss`: [`summarise_step`], then [`step_metrics`].
pub fn measure_nodes(
    graph: &[GraphNode],
    step: &Step,
    previous: Option<&Step>,
) -> Result<Vec<NodeSeen>, MeasureError> {
    let summary = summarise_step(graph, step, previous, &[])?;
    let mut out = step_metrics(graph, &summary);
    if let Some(loss) = step.get("loss") {
        out.push(NodeSeen {
            name: "loss".into(),
            kind: String::new(),
            metrics: measure_loss(loss),
        });
    }
    Ok(out)
}

/// One step's tensors summarised, each read once: every parameter and gradient that belongs
/// to a node of `graph` (a parameter or gradient belongs to the graph node with the longest
/// name its path starts with: a coarse node owns its submodules' parameters), with column
/// sums for each weight that reads a node's units; each node's update, from its
/// `update.<node>.<leaf>` tensors (the applied update of one optimiser step; `param.*` are
/// then the weights the forward used) when the step has them for every parameter of the node,
/// else against `previous`, which must be the step just before (the caller checks; a node
/// whose parameter count changed gets none); each node's output along its unit axis (see
/// [`unit_rules`]); the spectra; and the CKA sums of each pair in `apart` (on its second node).
pub fn summarise_step(
    graph: &[GraphNode],
    step: &Step,
    previous: Option<&Step>,
    apart: &[[String; 2]],
) -> Result<StepSummary, MeasureError> {
    let names: HashSet<&str> = graph.iter().map(|n| n.name.as_str()).collect();
    let params = group(step, "param", &names);
    let grads = group(step, "grad", &names);
    let before = previous
        .map(|p| group(p, "param", &names))
        .unwrap_or_default();
    let weight = |name: &str| {
        step.get(&format!("param.{name}.weight"))
            .filter(|w| w.shape.len() >= 2)
    };
    let reading: HashSet<usize> = readers(graph, |name| weight(name).is_some())
        .into_iter()
        .flatten()
        .collect();
    let rules = unit_rules(graph, step);
    let none = Vec::new();
    let mut out = StepSummary::default();
    for (i, node) in graph.iter().enumerate() {
        let name = node.name.as_str();
        let keyed = params.get(name).unwrap_or(&none);
        let ps: Vec<&TypedTensor> = keyed.iter().map(|(_, t)| *t).collect();
        // A node's own applied update wins; else the difference against the step before.
        let given = updates_of(step, keyed);
        let previous: Vec<&TypedTensor> = before
            .get(name)
            .filter(|b| b.len() == keyed.len() && given.is_empty())
            .map(|b| b.iter().map(|(_, t)| *t).collect())
            .unwrap_or_default();
        let gs: Vec<&TypedTensor> = grads
            .get(name)
            .map(|g| g.iter().map(|(_, t)| *t).collect())
            .unwrap_or_default();
        let activation = step.get(&format!("act.{name}"));
        let s = summarise(&NodeTensors {
            kind: &node.kind,
            params: &ps,
            grads: &gs,
            previous: &previous,
            updates: &given,
            activation,
            units: rules.get(i).copied().unwrap_or_default(),
            next_weight: None,
        })?;
        let updates = s.updates.len() == keyed.len();
        for (j, ((key, _), mut sums)) in keyed.iter().zip(s.params).enumerate() {
            if reading.contains(&i) && *key == format!("param.{name}.weight") {
                sums.columns = summarise_columns(ps[j]);
            }
            if updates {
                if let Some(path) = key.strip_prefix("param.") {
                    out.updates.insert(format!("update.{path}"), s.updates[j]);
                }
            }
            out.tensors.insert(key.to_string(), sums);
        }
        if let Some(g) = grads.get(name) {
            for ((key, _), sums) in g.iter().zip(s.grads) {
                out.tensors.insert(key.to_string(), sums);
            }
        }
        if let Some((o, _)) = s.output {
            out.outputs.insert(node.name.clone(), o);
        }
        if s.spectra != Default::default() {
            out.spectra.insert(node.name.clone(), s.spectra);
        }
    }
    for [a, b] in apart {
        let (Some(x), Some(y)) = (step.get(&format!("act.{a}")), step.get(&format!("act.{b}")))
        else {
            continue;
        };
        if let Some(c) = cka_sums(x, y)? {
            out.cka.insert(b.clone(), c);
        }
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

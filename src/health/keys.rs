//! Whose a key is: the node a `param.<node>.<leaf>`-style key belongs to, and the node whose
//! weight reads another node's units; the same for whole tensors and for their summaries.

use super::graph::GraphNode;
use super::layout::{is_consumer, is_transparent};
use std::collections::{HashMap, HashSet};

/// The node and leaf of a `<prefix>.<node>.<leaf>` key: the leaf is the last dotted part,
/// so `param.layer1.0.weight` is node `layer1.0`, leaf `weight`.
pub fn owner<'a>(key: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = key.strip_prefix(prefix)?.strip_prefix('.')?;
    rest.rsplit_once('.').map(|(node, _)| node)
}

/// The graph node a `<prefix>.<path>.<leaf>` key belongs to: the longest node name that is a
/// dotted prefix of its path, so `param.layer1.0.conv1.weight` belongs to `layer1.0.conv1` if
/// the graph has it, else to `layer1.0`, else to `layer1`.
pub fn belongs_to<'n>(key: &str, prefix: &str, names: &HashSet<&'n str>) -> Option<&'n str> {
    let mut path = owner(key, prefix)?;
    loop {
        if let Some(name) = names.get(path) {
            return Some(name);
        }
        path = path.rsplit_once('.')?.0;
    }
}

/// The entries under `prefix` (`param`, `grad`) grouped by the node they belong to, each
/// group in the order given (key order for a sorted map).
pub fn keyed<'a, 'n, T: 'a>(
    entries: impl IntoIterator<Item = (&'a String, &'a T)>,
    prefix: &str,
    names: &HashSet<&'n str>,
) -> HashMap<&'n str, Vec<(&'a str, &'a T)>> {
    let mut out: HashMap<&str, Vec<(&str, &T)>> = HashMap::new();
    for (key, t) in entries {
        if let Some(node) = belongs_to(key, prefix, names) {
            out.entry(node).or_default().push((key.as_str(), t));
        }
    }
    out
}

/// For each node, the node whose weight reads its units (for ignored units): the first node
/// after it, skipping [`is_transparent`] ones (dropout, identity, flatten, which get none
/// themselves), when that node is a consumer ([`is_consumer`]: Linear, Conv, …; not a norm,
/// an embedding or an element-wise kind) with a weight of two or more axes (`has_weight`).
/// So the units are judged once, on the node that feeds the consumer: in
/// `Linear → ReLU → Linear` on the ReLU, not on the first Linear; in `Linear → Linear` on the
/// first Linear; and in `Linear → LayerNorm → …` on neither the first Linear nor across the
/// norm (a norm re-scales every unit, so the consumer's weight says nothing about the
/// Linear's units; the norm's own output is judged if a consumer reads it).
pub fn readers(graph: &[GraphNode], has_weight: impl Fn(&str) -> bool) -> Vec<Option<usize>> {
    let mut out = vec![None; graph.len()];
    let mut next = None;
    for (i, node) in graph.iter().enumerate().rev() {
        // A transparent node passes the units on: they are judged on the node before it.
        if !is_transparent(&node.kind) {
            out[i] = next;
            next = (is_consumer(&node.kind) && has_weight(&node.name)).then_some(i);
        }
    }
    out
}

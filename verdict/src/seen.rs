//! What the rules are given: each node's name, kind and metrics, per forward and latest-of-each.

use std::collections::{BTreeMap, HashMap};

/// One node as measured: its name, its kind (`ReLU`, `Linear`, … or empty when unknown) and
/// its metrics by the names of [`crate::metrics::VOCABULARY`]. A list of these is given in
/// declaration order, which for a chain is the order the signal travelled forwards.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeSeen {
    pub name: String,
    pub kind: String,
    pub metrics: BTreeMap<String, f64>,
}

impl NodeSeen {
    /// A node with these metrics.
    pub fn new<'a>(
        name: &str,
        kind: &str,
        metrics: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Self {
        NodeSeen {
            name: name.into(),
            kind: kind.into(),
            metrics: metrics
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }

    /// A metric, if it was measured.
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.metrics.get(metric).copied()
    }
}

/// Every node measured at one forward (a training step), in declaration order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Forward {
    /// The forward's number in the run.
    pub number: u64,
    pub nodes: Vec<NodeSeen>,
}

/// The latest value of each metric of each node over `forwards` (taken in the order given),
/// nodes in the order they first appear. A kind given later replaces an empty one.
pub fn latest(forwards: &[Forward]) -> Vec<NodeSeen> {
    let mut out: Vec<NodeSeen> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for forward in forwards {
        for node in &forward.nodes {
            let i = *index.entry(node.name.as_str()).or_insert_with(|| {
                out.push(NodeSeen {
                    name: node.name.clone(),
                    ..NodeSeen::default()
                });
                out.len() - 1
            });
            let seen = &mut out[i];
            if !node.kind.is_empty() {
                seen.kind.clone_from(&node.kind);
            }
            for (k, v) in &node.metrics {
                seen.metrics.insert(k.clone(), *v);
            }
        }
    }
    out
}

/// One node's values of one metric over `forwards`, as `(forward, value)` in the order given.
pub fn series(forwards: &[Forward], node: &str, metric: &str) -> Vec<(u64, f64)> {
    forwards
        .iter()
        .filter_map(|f| {
            let n = f.nodes.iter().find(|n| n.name == node)?;
            Some((f.number, n.get(metric)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_keeps_the_last_value_of_each_metric_and_first_order_of_nodes() {
        let forwards = [
            Forward {
                number: 1,
                nodes: vec![
                    NodeSeen::new("a", "Linear", [("grad_norm", 1.0), ("nan", 0.0)]),
                    NodeSeen::new("b", "", [("act_var", 2.0)]),
                ],
            },
            Forward {
                number: 2,
                nodes: vec![
                    NodeSeen::new("b", "ReLU", [("act_var", 3.0)]),
                    NodeSeen::new("a", "", [("grad_norm", 5.0)]),
                ],
            },
        ];
        let got = latest(&forwards);
        let want = vec![
            NodeSeen::new("a", "Linear", [("grad_norm", 5.0), ("nan", 0.0)]),
            NodeSeen::new("b", "ReLU", [("act_var", 3.0)]),
        ];
        assert_eq!(got, want);
        assert_eq!(
            series(&forwards, "a", "grad_norm"),
            vec![(1, 1.0), (2, 5.0)]
        );
        assert_eq!(series(&forwards, "a", "nan"), vec![(1, 0.0)]);
    }
}

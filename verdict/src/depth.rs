//! Shape-over-depth rules: VANISHING and EXPLODING against the last node's gradient, and
//! MISSING_NORMALISATION along stretches with no normalisation node, in declaration order.

use crate::flags::{Flag, FlagKind, Verdict};
use crate::kinds::{classify, KindClass};
use crate::metrics as m;
use crate::seen::NodeSeen;
use crate::thresholds::Thresholds;

/// Raise VANISHING and EXPLODING by each node's gradient norm over the last node's.
///
/// The last node is the last one in declaration order with a finite, positive `grad_norm`
/// (in a chain, where the gradient starts). A node vanishes when its ratio is below
/// `vanishing_ratio` and its own norm below `vanishing_floor` (AutoTrainer's test, asked of
/// every node instead of the first only); it explodes when the ratio is above `exploding_ratio`.
pub fn gradient_shape(nodes: &[NodeSeen], t: &Thresholds, verdict: &mut Verdict) {
    let last = nodes
        .iter()
        .rev()
        .filter_map(|n| n.get(m::GRAD_NORM))
        .find(|g| g.is_finite() && *g > 0.0);
    let Some(last) = last else { return };
    for node in nodes {
        let Some(g) = node.get(m::GRAD_NORM).filter(|g| g.is_finite()) else {
            continue;
        };
        let r = g / last;
        if r < t.vanishing_ratio && g < t.vanishing_floor {
            verdict.raise(&node.name, Flag::plain(FlagKind::Vanishing));
        }
        if r > t.exploding_ratio {
            verdict.raise(&node.name, Flag::plain(FlagKind::Exploding));
        }
    }
}

/// Raise MISSING_NORMALISATION where `act_var` first grows past `missing_norm_var_growth`
/// times the smallest positive `act_var` before it in the same stretch. A stretch starts at
/// the first node and at every normalisation node (whose own output starts the new stretch);
/// nodes with no `act_var` neither start nor end one. One flag per stretch at most.
pub fn missing_normalisation(nodes: &[NodeSeen], t: &Thresholds, verdict: &mut Verdict) {
    let growth = t.missing_norm_var_growth;
    // The head (the last node with an output variance) is the network's answer, not a signal
    // passed on: a classifier's logits grow as it learns.
    let head = nodes.iter().rposition(|n| n.get(m::ACT_VAR).is_some());
    // The smallest variance so far in the stretch, per kind: a ReLU halves its input's
    // variance and a pool shrinks it, so only outputs of the same kind are compared.
    let mut smallest: Vec<(String, f64, usize)> = Vec::new();
    let mut flagged = false;
    for (i, node) in nodes.iter().enumerate() {
        if classify(&node.kind) == KindClass::Norm {
            smallest.clear();
            flagged = false;
        }
        if Some(i) == head {
            break;
        }
        let Some(v) = node.get(m::ACT_VAR).filter(|v| v.is_finite()) else {
            continue;
        };
        let kind = node.kind.to_ascii_lowercase();
        let at = smallest.iter().position(|(k, _, _)| *k == kind);
        if let Some(j) = at {
            // A stretch: growth over at least two layers of the kind, not one layer's.
            if !flagged && smallest[j].2 >= 2 && v / smallest[j].1 > growth {
                verdict.raise(&node.name, Flag::plain(FlagKind::MissingNormalisation));
                flagged = true;
            }
        }
        if v > 0.0 {
            match at {
                Some(j) => {
                    smallest[j].1 = smallest[j].1.min(v);
                    smallest[j].2 += 1;
                }
                None => smallest.push((kind, v, 1)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes by kind and one metric's value, and a verdict by names.
    type Chain = &'static [(&'static str, Option<f64>)];
    type Named = Vec<(String, Vec<String>)>;

    /// Nodes `n0, n1, …` of the given kinds, each with one metric (`None`: not measured).
    fn chain(metric: &str, nodes: &[(&str, Option<f64>)]) -> Vec<NodeSeen> {
        nodes
            .iter()
            .enumerate()
            .map(|(i, (kind, v))| NodeSeen::new(&format!("n{i}"), kind, v.map(|v| (metric, v))))
            .collect()
    }

    /// The chain with a head (the network's output, last) after it.
    fn headed(metric: &str, nodes: &[(&str, Option<f64>)]) -> Vec<NodeSeen> {
        let mut out = chain(metric, nodes);
        out.push(NodeSeen::new("head", "Linear", [(metric, 1e6)]));
        out
    }

    fn names(v: &Verdict) -> Vec<(String, Vec<String>)> {
        v.to_names()
    }

    fn at(node: &str, flag: &str) -> Vec<(String, Vec<String>)> {
        vec![(node.to_string(), vec![flag.to_string()])]
    }

    #[test]
    fn gradient_ratios_raise_vanishing_and_exploding_on_one_side_only() {
        let t = Thresholds::default();
        let none = Vec::new();
        let cases: &[(Chain, Named)] = &[
            // ratio 0.9e-3 and norm 0.9e-4: vanishing.
            (
                &[
                    ("Linear", Some(0.9e-4)),
                    ("Linear", Some(0.1)),
                    ("Linear", Some(0.1)),
                ],
                at("n0", "VANISHING"),
            ),
            // ratio exactly 1e-3: not below it.
            (
                &[("Linear", Some(1e-4 * 0.99)), ("Linear", Some(0.099))],
                none.clone(),
            ),
            // ratio tiny but the norm itself at the floor: not vanishing.
            (
                &[("Linear", Some(1e-4)), ("Linear", Some(1e3))],
                none.clone(),
            ),
            // the last node with a gradient is the reference, whatever follows it.
            (
                &[
                    ("Linear", Some(1e-5)),
                    ("Linear", Some(0.1)),
                    ("ReLU", None),
                ],
                at("n0", "VANISHING"),
            ),
            // a zero gradient is no reference: n0 is, and n1's zero gradient vanished.
            (
                &[("Linear", Some(1e-5)), ("Linear", Some(0.0))],
                at("n1", "VANISHING"),
            ),
            (
                &[("Linear", Some(7.1)), ("Linear", Some(0.1))],
                at("n0", "EXPLODING"),
            ),
            (
                &[("Linear", Some(7.0)), ("Linear", Some(0.1))],
                none.clone(),
            ),
            (&[("Linear", Some(7.1))], none.clone()),
        ];
        for (nodes, want) in cases {
            let mut v = Verdict::new();
            gradient_shape(&chain("grad_norm", nodes), &t, &mut v);
            assert_eq!(&names(&v), want, "grad norms {nodes:?}");
        }
    }

    #[test]
    fn variance_growth_without_normalisation_raises_once_per_stretch() {
        let t = Thresholds::default();
        let none = Vec::new();
        let cases: &[(Chain, Named)] = &[
            (
                &[
                    ("Linear", Some(1.0)),
                    ("ReLU", Some(4.0)),
                    ("Linear", Some(10.1)),
                    ("Linear", Some(50.0)),
                ],
                // n2 is 10.1x n0, but over one Linear only: a stretch is two or more.
                at("n3", "MISSING_NORMALISATION"),
            ),
            (
                &[
                    ("Linear", Some(1.0)),
                    ("ReLU", Some(4.0)),
                    ("Linear", Some(10.0)),
                ],
                none.clone(),
            ),
            // outputs of different kinds are not compared: a ReLU halves its input's variance.
            (
                &[
                    ("Linear", Some(4.0)),
                    ("ReLU", Some(0.1)),
                    ("Linear", Some(5.0)),
                    ("ReLU", Some(0.5)),
                ],
                none.clone(),
            ),
            // shrinking is not growth.
            (
                &[("Linear", Some(100.0)), ("Linear", Some(1.0))],
                none.clone(),
            ),
            // a normalisation node in between resets the stretch.
            (
                &[
                    ("Linear", Some(1.0)),
                    ("LayerNorm", Some(1.0)),
                    ("Linear", Some(5.0)),
                    ("BatchNorm1d", None),
                    ("Linear", Some(20.0)),
                ],
                none.clone(),
            ),
            (
                &[
                    ("Linear", Some(1.0)),
                    ("LayerNorm", Some(1.0)),
                    ("Linear", Some(2.0)),
                    ("Linear", Some(3.0)),
                    ("Linear", Some(22.0)),
                ],
                at("n4", "MISSING_NORMALISATION"),
            ),
            // one layer's growth is not a stretch's.
            (
                &[
                    ("Linear", Some(1.0)),
                    ("LayerNorm", Some(1.0)),
                    ("Linear", Some(2.0)),
                    ("Linear", Some(22.0)),
                ],
                none.clone(),
            ),
            // unmeasured nodes do not break a stretch; zero variance is no base.
            (
                &[
                    ("Linear", Some(0.0)),
                    ("Linear", Some(1.0)),
                    ("Conv2d", None),
                    ("Linear", Some(2.0)),
                    ("Linear", Some(12.0)),
                ],
                at("n4", "MISSING_NORMALISATION"),
            ),
        ];
        for (nodes, want) in cases {
            let mut v = Verdict::new();
            missing_normalisation(&headed("act_var", nodes), &t, &mut v);
            assert_eq!(&names(&v), want, "act_var {nodes:?}");
        }
        // The head alone growing (a classifier's logits as it learns) is not a stretch.
        let mut v = Verdict::new();
        let logits = chain("act_var", &[("Linear", Some(1.0)), ("Linear", Some(50.0))]);
        missing_normalisation(&logits, &t, &mut v);
        assert!(v.is_empty(), "the head raised {:?}", names(&v));
    }

    #[test]
    fn changing_one_depth_threshold_changes_the_answer() {
        let grads = chain("grad_norm", &[("Linear", Some(0.5)), ("Linear", Some(0.1))]);
        let vars = headed(
            "act_var",
            &[
                ("Linear", Some(1.0)),
                ("Linear", Some(2.0)),
                ("Linear", Some(5.0)),
            ],
        );
        let small = chain(
            "grad_norm",
            &[("Linear", Some(2e-5)), ("Linear", Some(0.01))],
        );
        let floor = chain(
            "grad_norm",
            &[("Linear", Some(1e-3)), ("Linear", Some(10.0))],
        );
        // Each row: the bound changed, its new value, the nodes, and where the flag lands.
        let cases: &[(&str, f64, &[NodeSeen], &str, &str)] = &[
            ("exploding_ratio", 4.0, &grads, "n0", "EXPLODING"),
            (
                "missing_norm_var_growth",
                4.0,
                &vars,
                "n2",
                "MISSING_NORMALISATION",
            ),
            ("vanishing_floor", 1.0, &floor, "n0", "VANISHING"),
            ("vanishing_ratio", 1.0, &small, "n0", "VANISHING"),
        ];
        let run = |nodes: &[NodeSeen], t: &Thresholds| {
            let mut v = Verdict::new();
            gradient_shape(nodes, t, &mut v);
            missing_normalisation(nodes, t, &mut v);
            names(&v)
        };
        for (bound, value, nodes, node, flag) in cases {
            let before = run(nodes, &Thresholds::default());
            assert_eq!(before, Vec::new(), "{bound}: the defaults raise nothing");
            let after = run(nodes, &Thresholds::with([(*bound, *value)]).unwrap());
            assert_eq!(after, at(node, flag), "{bound} = {value}");
        }
    }
}

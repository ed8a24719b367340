//! Rules over time: LOSING_PLASTICITY, from a node's history over the forwards looked at, or
//! the network's (Dohare et al. measure the three over the whole network).

use crate::flags::{Flag, FlagKind, Verdict};
use crate::kinds::{classify, KindClass};
use crate::metrics as m;
use crate::seen::{Forward, NodeSeen};
use crate::thresholds::Thresholds;
use std::collections::HashMap;

/// One forward's three plasticity readings of a node.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    param_mean_abs: f64,
    dormant: f64,
    erank: f64,
}

fn reading(node: &NodeSeen) -> Option<Reading> {
    let r = Reading {
        param_mean_abs: node.get(m::PARAM_MEAN_ABS)?,
        dormant: node.get(m::DORMANT_UNIT_FRACTION)?,
        erank: node.get(m::FEATURE_ERANK)?,
    };
    [r.param_mean_abs, r.dormant, r.erank]
        .iter()
        .all(|v| v.is_finite())
        .then_some(r)
}

/// Whether the first and last of `readings` show all three at once: `param_mean_abs`
/// grown by `plasticity_param_growth` times, `dormant_unit_fraction` risen by
/// `plasticity_dormant_rise`, and `feature_erank` fallen by `plasticity_erank_drop` of itself,
/// over at least `plasticity_min_points` readings (Dohare et al. 2024 track these three).
fn losing(readings: &[Reading], t: &Thresholds) -> bool {
    let (Some(first), Some(last)) = (readings.first(), readings.last()) else {
        return false;
    };
    if (readings.len() as f64) < t.plasticity_min_points {
        return false;
    }
    let grown = first.param_mean_abs > 0.0
        && last.param_mean_abs / first.param_mean_abs >= t.plasticity_param_growth;
    let quieter = last.dormant - first.dormant >= t.plasticity_dormant_rise;
    let narrower =
        first.erank > 0.0 && (first.erank - last.erank) / first.erank >= t.plasticity_erank_drop;
    grown && quieter && narrower
}

/// Raise LOSING_PLASTICITY at every node whose history (the forwards in the order given,
/// only those where all three readings were measured) shows all three trends at once.
pub fn plasticity(forwards: &[Forward], t: &Thresholds, verdict: &mut Verdict) {
    // One pass over the history: each node's readings, nodes in first-seen order.
    let mut names: Vec<&str> = Vec::new();
    let mut readings: HashMap<&str, Vec<Reading>> = HashMap::new();
    for f in forwards {
        for n in &f.nodes {
            let entry = readings.entry(n.name.as_str()).or_insert_with(|| {
                names.push(&n.name);
                Vec::new()
            });
            entry.extend(reading(n));
        }
    }
    for name in names {
        if readings.get(name).is_some_and(|r| losing(r, t)) {
            verdict.raise(name, Flag::plain(FlagKind::LosingPlasticity));
        }
    }
    // The network's readings, where no one node carries all three (a Linear carries the
    // weights, the ReLU after it the dormant units and the features): mean |θ| over the
    // nodes with parameters, the dormant share over the nodes that measure it, and the
    // feature rank of the last hidden node (the last that measures both before the head).
    if !verdict
        .iter()
        .any(|(_, f)| f.iter().any(|f| f.kind == FlagKind::LosingPlasticity))
    {
        let mut at: Option<&str> = None;
        let mut net: Vec<Reading> = Vec::new();
        for f in forwards {
            if let Some((name, r)) = network_reading(f) {
                at = Some(name);
                net.push(r);
            }
        }
        if let Some(name) = at {
            if losing(&net, t) {
                verdict.raise(name, Flag::plain(FlagKind::LosingPlasticity));
            }
        }
    }
}

/// One forward's plasticity reading of the whole network, and the node it is named at (the
/// last hidden node measuring the dormant share and the feature rank).
fn network_reading(f: &Forward) -> Option<(&str, Reading)> {
    let mean = |metric: &str| {
        let v: Vec<f64> = f
            .nodes
            .iter()
            .filter_map(|n| n.get(metric))
            .filter(|v| v.is_finite())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    // Hidden features are an activation's output (not a flatten's or a pool's of them).
    let hidden: Vec<&NodeSeen> = f
        .nodes
        .iter()
        .filter(|n| {
            !matches!(classify(&n.kind), KindClass::Norm | KindClass::Other)
                && n.get(m::DORMANT_UNIT_FRACTION).is_some()
                && n.get(m::FEATURE_ERANK).is_some()
        })
        .collect();
    // The last activation's features (the head's output is no activation's).
    let last = *hidden.last()?;
    let r = Reading {
        param_mean_abs: mean(m::PARAM_MEAN_ABS)?,
        dormant: mean(m::DORMANT_UNIT_FRACTION)?,
        erank: last.get(m::FEATURE_ERANK)?,
    };
    [r.param_mean_abs, r.dormant, r.erank]
        .iter()
        .all(|v| v.is_finite())
        .then_some((last.name.as_str(), r))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (param_mean_abs, dormant_unit_fraction, feature_erank) per forward.
    type Points = &'static [(f64, f64, f64)];

    /// A run of one node `h` whose (param_mean_abs, dormant_unit_fraction, feature_erank)
    /// go through `points`, one forward each.
    fn run(points: &[(f64, f64, f64)]) -> Vec<Forward> {
        points
            .iter()
            .enumerate()
            .map(|(i, &(p, d, e))| Forward {
                number: i as u64,
                nodes: vec![NodeSeen::new(
                    "h",
                    "ReLU",
                    [
                        ("param_mean_abs", p),
                        ("dormant_unit_fraction", d),
                        ("feature_erank", e),
                    ],
                )],
            })
            .collect()
    }

    fn raised(forwards: &[Forward], t: &Thresholds) -> bool {
        let mut v = Verdict::new();
        plasticity(forwards, t, &mut v);
        v.has("h", FlagKind::LosingPlasticity)
    }

    #[test]
    fn all_three_trends_at_once_and_only_then() {
        let t = Thresholds::default();
        let cases: &[(&str, Points, bool)] = &[
            (
                "all three",
                &[(0.10, 0.00, 50.0), (0.12, 0.05, 45.0), (0.15, 0.10, 40.0)],
                true,
            ),
            (
                "exactly at every bound",
                &[(1.0, 0.00, 50.0), (1.0, 0.0, 50.0), (1.1, 0.05, 45.0)],
                true,
            ),
            (
                "param growth just short",
                &[(1.0, 0.00, 50.0), (1.0, 0.0, 50.0), (1.0999, 0.05, 45.0)],
                false,
            ),
            (
                "dormant rise just short",
                &[(1.0, 0.00, 50.0), (1.0, 0.0, 50.0), (1.1, 0.0499, 45.0)],
                false,
            ),
            (
                "erank drop just short",
                &[(1.0, 0.00, 50.0), (1.0, 0.0, 50.0), (1.1, 0.05, 45.1)],
                false,
            ),
            (
                "two points are no trend",
                &[(0.10, 0.00, 50.0), (0.15, 0.10, 40.0)],
                false,
            ),
            (
                "weights shrinking",
                &[(0.15, 0.00, 50.0), (0.12, 0.05, 45.0), (0.10, 0.10, 40.0)],
                false,
            ),
        ];
        for (what, points, want) in cases {
            assert_eq!(raised(&run(points), &t), *want, "{what}: {points:?}");
        }
    }

    #[test]
    fn the_network_loses_plasticity_when_no_one_node_carries_all_three() {
        // fc carries the weights, relu the dormant units and the features, out is the head.
        let forwards: Vec<Forward> = [(0.10, 0.0, 40.0), (0.13, 0.1, 35.0), (0.16, 0.3, 25.0)]
            .iter()
            .enumerate()
            .map(|(i, &(p, d, e))| Forward {
                number: i as u64,
                nodes: vec![
                    NodeSeen::new("fc", "Linear", [("param_mean_abs", p)]),
                    NodeSeen::new(
                        "relu",
                        "ReLU",
                        [("dormant_unit_fraction", d), ("feature_erank", e)],
                    ),
                    NodeSeen::new(
                        "out",
                        "Linear",
                        [
                            ("param_mean_abs", p),
                            ("dormant_unit_fraction", 0.0),
                            ("feature_erank", 3.0),
                        ],
                    ),
                ],
            })
            .collect();
        let mut v = Verdict::new();
        plasticity(&forwards, &Thresholds::default(), &mut v);
        assert_eq!(
            v.to_names(),
            vec![("relu".to_string(), vec!["LOSING_PLASTICITY".to_string()])]
        );
    }

    #[test]
    fn forwards_missing_a_reading_are_skipped_and_nothing_measured_raises_nothing() {
        let t = Thresholds::default();
        let mut forwards = run(&[(0.10, 0.00, 50.0), (0.12, 0.05, 45.0), (0.15, 0.10, 40.0)]);
        forwards[1].nodes[0].metrics.remove("feature_erank");
        assert!(!raised(&forwards, &t), "only two forwards have all three");
        let bare: Vec<Forward> = (0..5)
            .map(|i| Forward {
                number: i,
                nodes: vec![NodeSeen::new("h", "ReLU", [])],
            })
            .collect();
        assert!(!raised(&bare, &t));
    }

    #[test]
    fn changing_one_threshold_changes_the_answer() {
        let points = [(0.10, 0.00, 50.0), (0.12, 0.05, 45.0), (0.15, 0.10, 40.0)];
        for (bound, value) in [
            ("plasticity_param_growth", 2.0),
            ("plasticity_dormant_rise", 0.2),
            ("plasticity_erank_drop", 0.5),
            ("plasticity_min_points", 4.0),
        ] {
            assert!(raised(&run(&points), &Thresholds::default()));
            let t = Thresholds::with([(bound, value)]).unwrap();
            assert!(!raised(&run(&points), &t), "{bound} = {value} still raises");
        }
    }
}

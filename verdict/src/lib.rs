//! The verdict: health flags at thresholds that are plain data, with no dependencies at all.
//!
//! Give it what was measured ([`NodeSeen`] per node, in declaration order, or a history of
//! [`Forward`]s) and [`Thresholds`]; it answers `{where: [flag, …]}` as a [`Verdict`]. A node
//! with nothing wrong is absent, and a metric nobody measured raises nothing.

pub mod about;
pub mod depth;
pub mod flags;
pub mod judge;
pub mod kinds;
pub mod metrics;
pub mod ranks;
pub mod rules;
pub mod seen;
pub mod thresholds;
pub mod time;

pub use about::{about, About};
pub use flags::{Flag, FlagKind, Verdict};
pub use judge::{judge, Fault, Finding, Judgement};
pub use kinds::{classify, KindClass};
pub use metrics::{Metric, VOCABULARY};
pub use ranks::{judge_writers, same_network};
pub use seen::{latest, series, Forward, NodeSeen};
pub use thresholds::{Bound, Origin, ThresholdError, Thresholds, BOUNDS};

/// The health flags this crate knows, by name.
pub const FLAGS: &[&str] = &[
    "NAN",
    "INF",
    "VANISHING",
    "EXPLODING",
    "DEAD",
    "SATURATED",
    "STALLED",
    "OVERSTEPPING",
    "DEAD_CHANNELS",
    "IGNORED_CHANNELS",
    "LEAKAGE",
    "NARROWING",
    "MISSING_NORMALISATION",
    "LOSING_PLASTICITY",
];

/// Whether `name` is a flag this crate knows (`DEAD_CHANNELS(3)` counts as `DEAD_CHANNELS`).
pub fn is_flag(name: &str) -> bool {
    FlagKind::parse(name).is_some()
}

/// The verdict on one picture of the nodes (the latest of each metric, in declaration
/// order): every per-node rule and every shape-over-depth rule. No rule over time.
pub fn verdict(seen: &[NodeSeen], t: &Thresholds) -> Verdict {
    let mut v = Verdict::new();
    for node in seen {
        for flag in rules::node_flags(node, t) {
            v.raise(&node.name, flag);
        }
    }
    depth::gradient_shape(seen, t, &mut v);
    depth::missing_normalisation(seen, t, &mut v);
    // A layer whose weights do not move keeps the gradient it is given: a large one there is
    // not a gradient too big to step on (nothing steps).
    for node in seen {
        if v.has(&node.name, FlagKind::Stalled) {
            v.lower(&node.name, FlagKind::Exploding);
        }
    }
    v.order_by(seen.iter().map(|n| n.name.as_str()));
    v
}

/// The verdict on a run's forwards (oldest first), judged over time ([`judge`]): the root
/// flags of its faults, `{where: [flag, …]}`.
pub fn diagnose(forwards: &[Forward], t: &Thresholds) -> Verdict {
    judge(forwards, t).verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_its_flags_and_their_counted_forms() {
        for (name, want) in [
            ("NAN", true),
            ("DEAD_CHANNELS(3)", true),
            ("LOSING_PLASTICITY", true),
            ("nan", false),
            ("HEALTHY", false),
        ] {
            assert_eq!(is_flag(name), want, "is_flag({name:?})");
        }
        let names: Vec<&str> = FlagKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, FLAGS);
    }

    /// A small healthy chain shaped like ../shared/runs/example_cnn at its last step
    /// (numbers measured from it with numpy), and the same chain made sick node by node.
    fn chain() -> Vec<NodeSeen> {
        vec![
            NodeSeen::new(
                "0",
                "Conv2d",
                [
                    ("grad_norm", 0.111),
                    ("grad_mean_abs", 4e-3),
                    ("update_ratio", 0.022),
                    ("act_var", 0.253),
                    ("nan", 0.0),
                    ("inf", 0.0),
                ],
            ),
            NodeSeen::new(
                "1",
                "BatchNorm2d",
                [
                    ("grad_norm", 0.0101),
                    ("update_ratio", 0.0011),
                    ("act_var", 1.0),
                ],
            ),
            NodeSeen::new(
                "2",
                "ReLU",
                [
                    ("act_var", 0.342),
                    ("dead_units", 0.0),
                    ("dead_unit_fraction", 0.0),
                ],
            ),
            NodeSeen::new(
                "3",
                "Conv2d",
                [
                    ("grad_norm", 0.105),
                    ("update_ratio", 0.0177),
                    ("act_var", 0.106),
                ],
            ),
            NodeSeen::new(
                "4",
                "BatchNorm2d",
                [
                    ("grad_norm", 0.0556),
                    ("update_ratio", 0.00786),
                    ("act_var", 0.979),
                ],
            ),
            NodeSeen::new(
                "5",
                "ReLU",
                [
                    ("act_var", 0.328),
                    ("dead_units", 0.0),
                    ("dead_unit_fraction", 0.0),
                ],
            ),
            NodeSeen::new("6", "AdaptiveAvgPool2d", [("act_var", 0.00482)]),
            NodeSeen::new("7", "Flatten", [("act_var", 0.00482)]),
            NodeSeen::new(
                "8",
                "Linear",
                [
                    ("grad_norm", 0.183),
                    ("update_ratio", 0.0836),
                    ("act_var", 0.00413),
                    ("dead_units", 1.0),
                ],
            ),
            NodeSeen::new("loss", "", [("loss", 1.0967), ("nan", 0.0)]),
        ]
    }

    #[test]
    fn a_healthy_chain_raises_nothing() {
        let v = verdict(&chain(), &Thresholds::default());
        assert!(v.is_empty(), "healthy chain raised {:?}", v.to_names());
    }

    #[test]
    fn flags_land_on_their_nodes_in_declaration_order() {
        let mut nodes = chain();
        nodes[8].metrics.insert("nan".into(), 3.0);
        nodes[0].metrics.insert("grad_norm".into(), 1e-6);
        nodes[5].metrics.insert("dead_units".into(), 5.0);
        nodes[5]
            .metrics
            .insert("dead_unit_fraction".into(), 5.0 / 8.0);
        let got = verdict(&nodes, &Thresholds::default()).to_names();
        let want: Vec<(String, Vec<String>)> = vec![
            ("0".into(), vec!["VANISHING".into()]),
            ("5".into(), vec!["DEAD".into(), "DEAD_CHANNELS(5)".into()]),
            ("8".into(), vec!["NAN".into()]),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn diagnose_judges_the_latest_and_the_history() {
        let forwards: Vec<Forward> = [
            (1.0, 0.0, 40.0, 0.5),
            (1.2, 0.1, 30.0, 0.01),
            (1.5, 0.2, 20.0, 1e-9),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(p, d, e, r))| Forward {
            number: i as u64,
            nodes: vec![NodeSeen::new(
                "h",
                "Linear",
                [
                    ("param_mean_abs", p),
                    ("dormant_unit_fraction", d),
                    ("feature_erank", e),
                    ("update_ratio", r),
                ],
            )],
        })
        .collect();
        let got = diagnose(&forwards, &Thresholds::default()).to_names();
        // STALLED held on one forward of three: not the run's (judged over time).
        assert_eq!(
            got,
            vec![("h".to_string(), vec!["LOSING_PLASTICITY".to_string()])]
        );
        // The latest picture alone has no history to show a trend in.
        let alone = verdict(&latest(&forwards), &Thresholds::default()).to_names();
        assert_eq!(alone, vec![("h".to_string(), vec!["STALLED".to_string()])]);
    }
}

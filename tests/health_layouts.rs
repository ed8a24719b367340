//! The unit axis follows the layout, and ignored units are judged by their consumer, on real
//! torch outputs: a TransformerEncoderLayer's `(N, T, D)` output through a Linear with two
//! units biased off, a ReLU and a head, and a GRU's output batch-first and sequence-first.
//!
//! The fixtures in tests/data/health_layouts/ were made by its `make.py` (torch 2.15 CPU,
//! seed 17), which also wrote the expected per-unit numbers (numpy, along the feature axis)
//! into `expected.json`.

use somatize::health::{step_stats, Graph, GraphNode, MeasureError};
use somatize::import::read_step;
use somatize::store::NodeStats;
use std::path::Path;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/health_layouts");

fn step(name: &str) -> somatize::health::Step {
    read_step(Path::new(&format!("{DATA}/{name}"))).expect("fixture reads")
}

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(format!("{DATA}/expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

fn graph(nodes: &[(&str, &str, Option<&str>)]) -> Graph {
    Graph {
        nodes: nodes
            .iter()
            .map(|(n, k, l)| GraphNode {
                name: n.to_string(),
                kind: k.to_string(),
                layout: l.map(str::to_string),
            })
            .collect(),
        apart: Vec::new(),
    }
}

fn metric(stats: &NodeStats, node: &str, name: &str) -> Option<f64> {
    stats.get(node)?.get(name).map(|n| n.0)
}

/// The node's units, act_var and dead_units agree with numpy's along the axis `want` names.
fn agrees(stats: &NodeStats, node: &str, want: &serde_json::Value) {
    for name in ["units", "act_var", "dead_units"] {
        let got = metric(stats, node, name).unwrap_or(f64::NAN);
        let w = want[name].as_f64().expect("a number");
        assert!(
            (got - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{node} {name}: measured {got}, numpy {w}"
        );
    }
}

const TRANSFORMER: &[(&str, &str, Option<&str>)] = &[
    ("enc", "TransformerEncoderLayer", None),
    ("fc", "Linear", None),
    ("relu", "ReLU", None),
    ("head", "Linear", None),
];

#[test]
fn a_transformer_output_has_its_units_on_d() {
    let step = step("transformer.npz");
    let want = expected();
    let stats = step_stats(&graph(TRANSFORMER), &step, None).unwrap();
    for node in ["enc", "fc", "relu"] {
        agrees(&stats, node, &want[node]);
    }
    // The two units biased off are dead along D; along T (axis 1, the old default) no
    // position is, and there are 6 "units".
    assert_eq!(metric(&stats, "relu", "dead_units"), Some(2.0));
    // A declared layout wins over the kind: `NCL` puts the units on axis 1.
    let mut g = graph(TRANSFORMER);
    g.nodes[2].layout = Some("NCL".into());
    let along_t = step_stats(&g, &step, None).unwrap();
    agrees(&along_t, "relu", &want["relu_along_t"]);
    // Declaring the layout the kind implies changes nothing.
    g.nodes[2].layout = Some("NTD".into());
    assert_eq!(step_stats(&g, &step, None).unwrap(), stats);
}

#[test]
fn a_layout_that_does_not_fit_is_an_error_naming_it() {
    let step = step("transformer.npz");
    let mut g = graph(TRANSFORMER);
    g.nodes[2].layout = Some("NC".into());
    match step_stats(&g, &step, None) {
        Err(MeasureError::Layout { key, layout, shape }) => {
            assert_eq!((key.as_str(), layout.as_str()), ("act.relu", "NC"));
            assert_eq!(shape, [4, 6, 16]);
        }
        other => panic!("wanted a layout error, got {other:?}"),
    }
    // A graph.json with a layout that names no unit axis is refused when it is read.
    let text = br#"{"nodes": [{"name": "a", "kind": "Linear", "layout": "NTX"}]}"#;
    let err = Graph::parse(text, "graph.json").unwrap_err();
    assert!(err.contains("\"a\"") && err.contains("NTX"), "{err}");
    let ok = br#"{"nodes": [{"name": "a", "kind": "Linear", "layout": "NTD"}]}"#;
    assert_eq!(
        Graph::parse(ok, "graph.json").unwrap().nodes[0]
            .layout
            .as_deref(),
        Some("NTD")
    );
}

#[test]
fn a_gru_output_has_its_units_on_the_hidden_axis() {
    let step = step("gru.npz");
    let want = expected();
    // Batch-first (N, T, H) by the kind's default, or declared.
    for layout in [None, Some("NTD")] {
        let stats = step_stats(&graph(&[("gru", "GRU", layout)]), &step, None).unwrap();
        agrees(&stats, "gru", &want["gru"]);
    }
    // Sequence-first (T, N, H): the same units and numbers.
    for layout in [None, Some("TND")] {
        let stats = step_stats(&graph(&[("gru_tnd", "GRU", layout)]), &step, None).unwrap();
        agrees(&stats, "gru_tnd", &want["gru"]);
    }
}

#[test]
fn ignored_units_are_judged_once_by_the_consumer_that_reads_them() {
    let step = step("transformer.npz");
    let stats = step_stats(&graph(TRANSFORMER), &step, None).unwrap();
    // enc is read by fc; fc by the ReLU (not a consumer); the ReLU by the head.
    for (node, judged) in [
        ("enc", true),
        ("fc", false),
        ("relu", true),
        ("head", false),
    ] {
        assert_eq!(
            metric(&stats, node, "ignored_units").is_some(),
            judged,
            "{node}: {:?}",
            stats.get(node)
        );
    }
    // With a LayerNorm between fc and the head, nothing is said of fc's units across it; a
    // Dropout between the ReLU and the head passes the units on and is not judged itself.
    let mut s = step.clone();
    let relu = s["act.relu"].clone();
    s.insert("act.drop".into(), relu);
    let g = graph(&[
        ("enc", "TransformerEncoderLayer", None),
        ("fc", "Linear", None),
        ("norm", "LayerNorm", None),
        ("relu", "ReLU", None),
        ("drop", "Dropout", None),
        ("head", "Linear", None),
    ]);
    let stats = step_stats(&g, &s, None).unwrap();
    for (node, judged) in [("fc", false), ("relu", true), ("drop", false)] {
        assert_eq!(
            metric(&stats, node, "ignored_units").is_some(),
            judged,
            "{node}: {:?}",
            stats.get(node)
        );
    }
}

//! The healthy example run (../shared/runs/example_cnn: a real PyTorch conv + batch norm +
//! ReLU run, 12 SGD steps dumped as NPZ with graph.json) measured node by node and judged:
//! none of NAN, INF, VANISHING, EXPLODING, DEAD, SATURATED, STALLED, OVERSTEPPING is raised.
//!
//! The dumps are read with the project's own NPZ reader, as `somatize import` reads them.

use crate::common;

use common::BASIC_FLAGS;
use somatize::health::{measure_forward, Step};
use somatize::import::{folder_graph, read_step};
use somatize::verdict::{diagnose, FlagKind, Forward, Thresholds};
use std::path::Path;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");

/// The run's folder; `SOMATIZE_SHARED` overrides where `shared/` is (for worktrees not beside it).
fn run_dir() -> String {
    let shared = std::env::var("SOMATIZE_SHARED").unwrap_or_else(|_| SHARED.to_string());
    format!("{shared}/runs/example_cnn")
}

/// The run's declared nodes, `(name, kind)` in order, from its `graph.json`.
fn graph() -> Vec<(String, String)> {
    let graph = folder_graph(Path::new(&run_dir()))
        .expect("graph.json parses")
        .expect("the run has a graph.json");
    graph.nodes.into_iter().map(|n| (n.name, n.kind)).collect()
}

fn forwards() -> Vec<Forward> {
    let graph = graph();
    let mut out = Vec::new();
    let mut previous: Option<Step> = None;
    for number in 0..12u64 {
        let path = format!("{}/step_{number:06}.npz", run_dir());
        let step = read_step(Path::new(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        let nodes = measure_forward(&graph, &step, previous.as_ref())
            .unwrap_or_else(|e| panic!("step {number}: {e}"));
        out.push(Forward { number, nodes });
        previous = Some(step);
    }
    out
}

#[test]
fn the_healthy_example_run_raises_none_of_the_basic_flags() {
    let forwards = forwards();
    let last = &forwards[11].nodes;
    // The measured numbers are the ones numpy gives (docs/health.md quotes them).
    let ratio = last[8].metrics["update_ratio"];
    assert!((ratio - 0.0836).abs() < 1e-3, "Linear update ratio {ratio}");
    assert_eq!(
        last[2].metrics["dead_units"], 0.0,
        "node 2 (ReLU) has no dead unit"
    );
    let verdict = diagnose(&forwards, &Thresholds::default());
    for (node, flags) in verdict.iter() {
        for f in flags {
            assert!(
                !BASIC_FLAGS.contains(&f.kind),
                "healthy run raised {f} at {node}: {:?}",
                verdict.to_names()
            );
        }
    }
    // Changing one bound over the same record changes the answer, without training again.
    let t = Thresholds::with([("overstepping_update_ratio", 0.05)]).unwrap();
    let strict = diagnose(&forwards, &t);
    assert!(
        strict.has("8", FlagKind::Overstepping),
        "{:?}",
        strict.to_names()
    );
}

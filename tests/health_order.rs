//! Nodes keep their declaration order from the record to every answer: a run recorded with a
//! graph declared out of alphabetical order (and one with no graph, ordered by its facts) is
//! read back by the core and printed by `somatize seen|diagnose --json`, and every list and
//! every JSON object names its nodes in that order, never sorted by name.

use crate::common;

use common::temp_dir;
use somatize::health::record::{write_graph, Graph};
use somatize::health::store::{diagnose, read, seen, where_};
use somatize::record::Recorder;
use somatize::store::{DirFs, Fact, ForwardRecord, NodeStats, Num, Store};
use somatize::verdict::Thresholds;
use std::path::Path;
use std::process::Command;

/// Declared in this order; sorted by name it would be alpha, mid, zeta, 10.
const DECLARED: [(&str, &str); 4] = [
    ("zeta", "Linear"),
    ("alpha", "ReLU"),
    ("10", "Linear"),
    ("mid", "Linear"),
];

/// Record six forwards of `run`, each node raising a flag of its own kind from a forward of
/// its own (zeta STALLED from 0, alpha DEAD from 1, 10 OVERSTEPPING from 2, mid LEAKAGE from
/// 3: four faults, none started before one it explains, so none folds another), the facts in
/// declaration order; with `graph`, the graph declares the order too.
fn record(root: &Path, run: &str, graph: bool) {
    if graph {
        write_graph(root, run, &Graph::of(DECLARED)).expect("write graph.json");
    }
    let mut rec = Recorder::new(root, run).expect("a recorder");
    for forward in 0..6u64 {
        let mut stats = NodeStats::new();
        // Stats rows are a sorted map on purpose: the order must come from the graph or facts.
        for (i, (name, _)) in DECLARED.iter().enumerate() {
            let on = forward >= i as u64;
            let row = stats.entry(name.to_string()).or_default();
            row.insert("grad_norm".into(), Num(forward as f64 + 1.0));
            match i {
                0 => row.insert("update_ratio".into(), Num(if on { 0.0 } else { 1e-3 })),
                1 => {
                    row.insert("unit_samples".into(), Num(64.0));
                    row.insert("dead_unit_fraction".into(), Num(if on { 0.9 } else { 0.0 }))
                }
                2 => row.insert("update_ratio".into(), Num(if on { 5.0 } else { 1e-3 })),
                _ => row.insert("cka".into(), Num(if on { 1.0 } else { 0.0 })),
            };
        }
        let facts = DECLARED.iter().map(|(n, k)| Fact::new(*n, *k)).collect();
        rec.record(&ForwardRecord {
            forward,
            took_us: Some(10),
            facts,
            stats,
            ..Default::default()
        })
        .expect("record a forward");
    }
    rec.flush().expect("flush");
}

fn declared() -> Vec<&'static str> {
    DECLARED.iter().map(|(n, _)| *n).collect()
}

/// The keys of a JSON object as written in `text` at `pointer`.
fn keys(text: &str, pointer: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(text).expect("JSON");
    let obj = v
        .pointer(pointer)
        .and_then(|o| o.as_object())
        .unwrap_or_else(|| panic!("no object at {pointer:?} in {text}"));
    obj.keys().cloned().collect()
}

fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "somatize {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn nodes_keep_declaration_order_in_the_core_and_the_cli_json() {
    let root = temp_dir("health-order");
    record(&root, "graphed", true);
    record(&root, "facts_only", false);
    let store = Store::open(DirFs::new(&root)).expect("open the store");
    let t = Thresholds::default();
    let want = declared();
    for run in ["graphed", "facts_only"] {
        let got: Vec<String> = seen(&store, run, None)
            .unwrap()
            .into_iter()
            .map(|n| n.name)
            .collect();
        assert_eq!(got, want, "{run}: seen");
        let d = diagnose(&store, run, &t, None).unwrap();
        let got: Vec<&str> = d.verdict.iter().map(|(n, _)| n).collect();
        assert_eq!(got, want, "{run}: diagnose");
        let h = read(&store, run, None).unwrap();
        let got: Vec<String> = h.alerts(&d).into_iter().map(|a| a.node).collect();
        assert_eq!(got, want, "{run}: alerts");
        let got: Vec<String> = where_(&store, run, &t, None)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(got, want, "{run}: where");

        // JSON: what the CLI prints, and what the package's `diagnose` answer is made of.
        let dir = root.to_str().unwrap();
        let text = cli(&["seen", dir, "--run", run, "--json"]);
        assert_eq!(keys(&text, ""), want, "{run}: seen --json\n{text}");
        let text = cli(&["diagnose", dir, "--run", run, "--json"]);
        assert_eq!(keys(&text, ""), want, "{run}: diagnose --json\n{text}");
        let text = cli(&["diagnose", dir, "--run", run, "--with-bounds"]);
        assert_eq!(
            keys(&text, "/diagnosis"),
            want,
            "{run}: diagnose --json\n{text}"
        );
        let text = serde_json::to_string(&d.to_json()).unwrap();
        assert_eq!(keys(&text, "/diagnosis"), want, "{run}: Diagnosis::to_json");
        // The thresholds are written in the order of the bounds, not sorted by name.
        let names = keys(&text, "/thresholds");
        let bounds: Vec<String> = t
            .as_dict()
            .into_iter()
            .map(|(n, _)| n.to_string())
            .collect();
        assert_eq!(names, bounds, "{run}: thresholds");
    }
    let _ = std::fs::remove_dir_all(&root);
}

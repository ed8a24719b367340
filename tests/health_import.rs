//! Update ratios through `import` mean the update of one optimiser step, whatever the dumps'
//! sampling: a dump's own `update.*` tensors are used when present; otherwise the previous
//! file is diffed against only when it is step n − 1, and a gap of more steps gives no
//! update ratio (never a k-fold one). Unknown key prefixes do not break the import.
//!
//! The dumps in tests/data/health_import/ were made by its `make.py` (torch 2.15 CPU, SGD
//! with momentum, seed 5), which wrote numpy's one-step ratios of fc1 into `expected.json`.

use crate::common;

use common::temp_dir;
use somatize::health::store::history;
use somatize::store::{DirFs, Store};
use std::path::{Path, PathBuf};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/health_import");

fn expected() -> Vec<f64> {
    let text = std::fs::read_to_string(format!("{DATA}/expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["fc1_update_ratio"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// A dump folder with the graph and only the given steps of `set` (`plain` or `update`).
fn dumps(set: &str, steps: &[u64]) -> PathBuf {
    let dir = temp_dir(&format!("import-{set}"));
    let from = Path::new(DATA).join(set);
    std::fs::copy(from.join("graph.json"), dir.join("graph.json")).unwrap();
    for n in steps {
        let name = format!("step_{n:03}.npz");
        std::fs::copy(from.join(&name), dir.join(&name)).unwrap();
    }
    dir
}

/// fc1's `metric` by forward after importing `dir`.
fn imported(dir: &Path, metric: &str) -> Vec<(u64, f64)> {
    let root = temp_dir("import-store");
    somatize::import::import(dir, &root, "run", false, &mut |_| {}).expect("imports");
    let s = Store::open(DirFs::new(&root)).unwrap();
    history(&s, "run", "fc1", metric, None).unwrap()
}

fn close(got: &[(u64, f64)], want: &[(u64, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for ((f, g), (wf, w)) in got.iter().zip(want) {
        assert_eq!(f, wf, "{got:?} vs {want:?}");
        assert!((g - w).abs() <= 1e-5 * w.abs(), "forward {f}: {g} vs {w}");
    }
}

#[test]
fn every_step_without_updates_diffs_against_the_step_before() {
    let ratios = expected();
    let got = imported(&dumps("plain", &[0, 1, 2, 3, 4, 5]), "update_ratio");
    // Forward n's difference is step n − 1's update.
    let want: Vec<(u64, f64)> = (1..6).map(|n| (n, ratios[n as usize - 1])).collect();
    close(&got, &want);
    let steps = imported(&dumps("plain", &[0, 1, 2]), "update_steps");
    assert_eq!(steps, [(1, 1.0), (2, 1.0)]);
}

#[test]
fn a_gap_of_more_than_one_step_gives_no_update_ratio() {
    for metric in [
        "update_ratio",
        "update_norm",
        "update_erank",
        "update_steps",
    ] {
        let got = imported(&dumps("plain", &[0, 2, 4]), metric);
        assert!(got.is_empty(), "{metric} over a 2-step gap: {got:?}");
    }
    // A gap after consecutive steps: only the consecutive pair is measured.
    let got = imported(&dumps("plain", &[0, 1, 3]), "update_ratio");
    assert_eq!(got.iter().map(|(f, _)| *f).collect::<Vec<_>>(), [1]);
}

#[test]
fn a_dumps_own_update_is_one_step_whatever_the_sampling() {
    let ratios = expected();
    for steps in [&[0u64, 1, 2, 3, 4, 5][..], &[0, 2, 4], &[5]] {
        let got = imported(&dumps("update", steps), "update_ratio");
        let want: Vec<(u64, f64)> = steps.iter().map(|&n| (n, ratios[n as usize])).collect();
        close(&got, &want);
        let one: Vec<(u64, f64)> = steps.iter().map(|&n| (n, 1.0)).collect();
        assert_eq!(imported(&dumps("update", steps), "update_steps"), one);
    }
}

#[test]
fn a_partial_or_malformed_update_is_not_used_and_breaks_nothing() {
    use somatize::health::{step_stats, Graph};
    use somatize::tensor::TypedTensor;
    let dir = Path::new(DATA).join("update");
    let graph = Graph::parse(
        &std::fs::read(dir.join("graph.json")).unwrap(),
        "graph.json",
    )
    .unwrap();
    let mut step = somatize::import::read_step(&dir.join("step_002.npz")).unwrap();
    // fc1's weight update of the wrong length, and an update for a node the graph lacks.
    let bad = TypedTensor::from_f32("update.fc1.weight", vec![0.5; 5], vec![5]).unwrap();
    step.insert("update.fc1.weight".into(), bad);
    let ghost = TypedTensor::from_f32("update.ghost.weight", vec![1.0; 2], vec![2]).unwrap();
    step.insert("update.ghost.weight".into(), ghost);
    let stats = step_stats(&graph, &step, None).expect("measures");
    let ratio = |node: &str| {
        stats
            .get(node)
            .and_then(|r| r.get("update_ratio"))
            .map(|n| n.0)
    };
    assert_eq!(
        ratio("fc1"),
        None,
        "fc1's update is malformed and there is no step before"
    );
    assert!(ratio("fc2").is_some(), "fc2's own update is still used");
    assert!(stats
        .get("fc1")
        .is_some_and(|r| r.contains_key("param_norm")));
}

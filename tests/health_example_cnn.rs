//! The healthy example run (../shared/runs/example_cnn: a real PyTorch conv + batch norm +
//! ReLU run, 12 SGD steps dumped as NPZ with graph.json) measured node by node and judged:
//! none of NAN, INF, VANISHING, EXPLODING, DEAD, SATURATED, STALLED, OVERSTEPPING is raised.
//!
//! The dumps are opened here with the zip and npyz crates directly, because the project's
//! NPZ reader is being written in parallel; every array in them is float32.

use somatize::health::{measure_forward, Step};
use somatize::tensor::TypedTensor;
use somatize::verdict::{diagnose, FlagKind, Forward, Thresholds};
use std::io::Read;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");

/// The run's folder; `SOMATIZE_SHARED` overrides where `shared/` is (for worktrees not beside it).
fn run_dir() -> String {
    let shared = std::env::var("SOMATIZE_SHARED").unwrap_or_else(|_| SHARED.to_string());
    format!("{shared}/runs/example_cnn")
}

/// Every array of one step dump, by key (`param.0.weight`, `act.2`, `loss`, …).
fn load_step(path: &str) -> Step {
    let file = std::fs::File::open(path).expect("step file");
    let mut zip = zip::ZipArchive::new(file).expect("an NPZ is a zip");
    let mut out = Step::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).expect("entry");
        let key = entry
            .name()
            .expect("entry name")
            .trim_end_matches(".npy")
            .to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("entry bytes");
        let npy = npyz::NpyFile::new(&bytes[..]).expect("npy header");
        let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        let values: Vec<f32> = npy.into_vec().expect("float32 values");
        let t = TypedTensor::from_f32(&key, values, shape).expect("shape matches");
        out.insert(key, t);
    }
    out
}

fn graph() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(format!("{}/graph.json", run_dir())).expect("graph.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("graph JSON");
    v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().into(),
                n["kind"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn forwards() -> Vec<Forward> {
    let graph = graph();
    let mut out = Vec::new();
    let mut previous: Option<Step> = None;
    for number in 0..12u64 {
        let step = load_step(&format!("{}/step_{number:06}.npz", run_dir()));
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
    let basic = [
        FlagKind::Nan,
        FlagKind::Inf,
        FlagKind::Vanishing,
        FlagKind::Exploding,
        FlagKind::Dead,
        FlagKind::Saturated,
        FlagKind::Stalled,
        FlagKind::Overstepping,
    ];
    for (node, flags) in verdict.iter() {
        for f in flags {
            assert!(
                !basic.contains(&f.kind),
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

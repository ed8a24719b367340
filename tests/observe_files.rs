//! Observables over real tensor files: every good fixture through FileSource and the runtime
//! agrees with numpy's float64 statistics in ../shared/fixtures/expected.json (written by
//! numpy 2.4, torch and safetensors; see its README) within 1e-6 relative; CheckpointSource
//! lists only parameters; the store-backed sink reads back exactly; `somatize observe` writes it.

use serde_json::Value as Json;
use somatize::math::stats::Stats;
use somatize::observe::source::split_key;
use somatize::record::StoreSink;
use somatize::{
    CheckpointSource, FileSource, Observable, ObservableSpec, Pack, Runtime, TensorSource, Value,
    ValueSink,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// ../shared beside the repo (or beside the worktrees' parent, for a worktree).
fn shared(rel: &str) -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let beside = here.join("../shared");
    let root = if beside.is_dir() {
        beside
    } else {
        here.join("../../shared")
    };
    root.join(rel)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("somatize-observe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-6 * want.abs().max(1e-12) || got == want
}

#[test]
fn every_good_fixture_agrees_with_numpy_through_the_runtime() {
    let expected: BTreeMap<String, BTreeMap<String, Json>> =
        serde_json::from_str(&std::fs::read_to_string(shared("fixtures/expected.json")).unwrap())
            .unwrap();
    let mut compared = 0;
    for (file, keys) in &expected {
        let source = FileSource::open(shared(&format!("fixtures/{file}"))).unwrap();
        let mut pack = Pack::new();
        let mut wanted = Vec::new();
        for (key, want) in keys {
            let (kind, name) = split_key(key);
            for stat in Stats::COUNTS.into_iter().chain(Stats::FLOATS) {
                let spec = ObservableSpec::new(kind, name, stat);
                wanted.push((key.clone(), stat, spec.id().unwrap(), want[stat].clone()));
                pack.push(Observable::builtin(spec).unwrap());
            }
        }
        let obs = Runtime::new(pack)
            .unwrap()
            .observe(0, &source)
            .ok()
            .unwrap();
        for (key, stat, id, want) in wanted {
            let got = obs.values.get(&id).and_then(Value::as_scalar);
            match want.as_f64() {
                Some(w) => {
                    let g =
                        got.unwrap_or_else(|| panic!("{file} {key} {stat}: got nothing, want {w}"));
                    assert!(close(g, w), "{file} {key} {stat}: got {g}, want {w}");
                    compared += 1;
                }
                None => assert_eq!(got, None, "{file} {key} {stat}: numpy has no value"),
            }
        }
    }
    assert!(compared > 500, "compared only {compared} numbers");
}

#[test]
fn a_checkpoint_source_lists_only_parameters() {
    let source = CheckpointSource::open(shared("fixtures/nested_checkpoint.pt")).unwrap();
    let keys = source.list().unwrap();
    assert!(!keys.is_empty());
    assert!(
        keys.iter().all(|k| k.starts_with("param.model.")),
        "keys {keys:?}"
    );
    let npz = FileSource::open(shared("fixtures/step_stored.npz")).unwrap();
    let keys = npz.list().unwrap();
    for want in ["act.fc1", "grad.fc1.weight", "loss", "param.fc1.bias"] {
        assert!(keys.iter().any(|k| k == want), "{want} in {keys:?}");
    }
    assert!(npz.read("param.nope").is_err());
}

#[test]
fn the_store_sink_reads_back_exactly_what_it_wrote() {
    let dir = temp_dir("sink");
    let mut sink = StoreSink::new(&dir, "r", "w").unwrap();
    let values = |step: u64| {
        BTreeMap::from([
            (
                "a".to_string(),
                Value::Scalar(Some(0.1 + step as f64 / 3.0)),
            ),
            ("b".to_string(), Value::Vector(vec![Some(1.0), None])),
        ])
    };
    for step in [0, 5, 10] {
        sink.write(step, &values(step)).unwrap();
    }
    assert_eq!(sink.query("a", 5).unwrap(), values(5).get("a").cloned());
    assert_eq!(sink.query("b", 10).unwrap(), values(10).get("b").cloned());
    assert_eq!(sink.query("a", 6).unwrap(), None, "no such step");
    assert_eq!(sink.query("zz", 5).unwrap(), None, "no such id");
    let history: Vec<u64> = sink
        .history("a", 5)
        .unwrap()
        .iter()
        .map(|(s, _)| *s)
        .collect();
    assert_eq!(history, [0, 5]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_runtime_applies_a_temporal_function_over_the_stored_history() {
    let dir = temp_dir("temporal");
    let mut sink = StoreSink::new(&dir, "r", "w").unwrap();
    let mut spec = ObservableSpec::new("loss", "loss", "mean");
    spec.temporal = Some(somatize::observe::spec::Temporal::Delta);
    let id = spec.id().unwrap();
    let mut pack = Pack::new();
    pack.push(Observable::builtin(spec).unwrap());
    let runtime = Runtime::new(pack).unwrap().with_temporal(true);
    let mut last = None;
    for (step, loss) in [(0u64, 2.0), (1, 1.5), (2, 1.25)] {
        let mut source = somatize::HookSource::new();
        source.put_loss(loss);
        last = runtime
            .observe_into(step, &source, &mut sink)
            .unwrap()
            .temporal
            .remove(&id);
    }
    assert_eq!(last, Some(Some(-0.25)), "delta of the stored losses");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn observe_writes_one_step_per_file_and_its_specs() {
    let dir = temp_dir("cli");
    let files: Vec<PathBuf> = (0..3)
        .map(|i| shared(&format!("runs/example_cnn/step_{i:06}.npz")))
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .arg("observe")
        .args(&files)
        .args([
            "--store",
            dir.to_str().unwrap(),
            "--run",
            "cnn",
            "--kinds",
            "param,loss",
        ])
        .args(["--reductions", "l2,quantiles(0.05,0.95)", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Json = serde_json::from_slice(&out.stdout).unwrap();
    let specs = printed["specs"].as_object().unwrap();
    assert_eq!(
        specs.len(),
        2 * 11,
        "10 params and the loss, two reductions each"
    );
    let (id, _) = specs
        .iter()
        .find(|(_, s)| s["selector"] == "8.weight" && s["reduction"] == "l2")
        .unwrap();
    // The value in the store is the one printed, and the one the file gives directly.
    let direct = FileSource::open(&files[2]).unwrap();
    let want =
        somatize::math::stats::stats_of(&direct.read("param.8.weight").unwrap().data.to_f64());
    let sink = StoreSink::new(&dir, "cnn", "reader").unwrap();
    let stored = sink
        .query(id, 2)
        .unwrap()
        .and_then(|v| v.as_scalar())
        .unwrap();
    assert!(
        close(stored, want.l2.unwrap()),
        "stored {stored} vs {:?}",
        want.l2
    );
    assert_eq!(printed["steps"]["2"][id].as_f64(), Some(stored));
    let table = dir.join("runs/cnn/observe/observables.json");
    let table: Json = serde_json::from_str(&std::fs::read_to_string(table).unwrap()).unwrap();
    assert_eq!(&table[id.as_str()], &specs[id.as_str()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn observe_refuses_an_unknown_reduction_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .arg("observe")
        .arg(shared("fixtures/step_stored.npz"))
        .args([
            "--store",
            temp_dir("bad").to_str().unwrap(),
            "--run",
            "r",
            "--reductions",
            "l3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("l3"));
}

//! The verdict from a stored record: runs trained here (small real training loops, seeded,
//! hand-written backprop) or by the built-in demo are recorded through the real `Recorder`
//! with the per-node metrics every way in writes, then judged by reading the store back.
//! Each flag is shown on a recorded run; the same record judged at another threshold gives
//! another answer without training again; ../shared/runs/example_cnn imported raises none of
//! the basic flags.

use crate::common;

use common::mlp::{matmul_t, t_matmul, tensor, train, Act, Recipe, Rng};

/// The healthy MLP as these tests record it: six steps, each on a fresh batch.
const HEALTHY: Recipe = Recipe {
    steps: 6,
    fresh_batches: true,
    ..common::mlp::HEALTHY
};
use common::temp_dir;
use somatize::health::record::{step_record, write_graph, Graph};
use somatize::health::store::{alerts, diagnose, history, read, seen, where_, Diagnosis};
use somatize::health::Step;
use somatize::record::{probe, Recorder};
use somatize::store::{DirFs, Store};
use somatize::verdict::{FlagKind, Thresholds};
use std::path::Path;

fn mlp_graph(act: Act) -> Graph {
    let kind = match act {
        Act::Relu => "ReLU",
        Act::Tanh => "Tanh",
    };
    Graph::of([("fc1", "Linear"), ("act", kind), ("fc2", "Linear")])
}

/// Record `steps` as run `run` through the Recorder (writer `test`), each with the node
/// metrics against the step before, and the graph.
fn record(root: &Path, run: &str, graph: &Graph, steps: &[Step]) {
    let mut rec = Recorder::with_writer(root, run, "test")
        .expect("open a recorder")
        .summarising(["loss"]);
    write_graph(root, run, graph).expect("write the graph");
    for (k, step) in steps.iter().enumerate() {
        let previous = k.checked_sub(1).map(|p| &steps[p]);
        let forward = step_record(k as u64, graph, step, previous, true).expect("measures");
        rec.record(&forward).expect("records");
    }
}

fn store(root: &Path) -> Store<DirFs> {
    Store::open(DirFs::new(root)).expect("a store")
}

fn judged(root: &Path, run: &str) -> Diagnosis {
    diagnose(&store(root), run, &Thresholds::default(), None).expect("diagnoses")
}

/// Whether `d` raised a flag of `kind` at `node` (any node when `None`), as a fault's root or
/// folded under one.
fn raised(d: &Diagnosis, node: Option<&str>, kind: FlagKind) -> bool {
    d.judgement.shows(node, kind)
}

#[test]
fn a_stored_run_is_judged_again_at_another_threshold_without_training() {
    let root = temp_dir("health-again");
    let steps = train(Recipe {
        lr: 1e-9,
        ..HEALTHY
    });
    record(&root, "slow", &mlp_graph(Act::Relu), &steps);
    drop(steps);
    let first = judged(&root, "slow");
    assert!(
        raised(&first, Some("fc1"), FlagKind::Stalled),
        "{:?}",
        first.verdict.to_names()
    );
    // The same record, read again, at a stalled bound a thousand times smaller.
    let t = Thresholds::with([("stalled_update_ratio", 1e-12)]).unwrap();
    let again = diagnose(&store(&root), "slow", &t, None).unwrap();
    assert!(
        !raised(&again, None, FlagKind::Stalled),
        "{:?}",
        again.verdict.to_names()
    );
    assert_ne!(first.verdict, again.verdict);
    // Each diagnosis written out carries the thresholds it was taken at.
    let (a, b) = (first.to_json(), again.to_json());
    assert_eq!(a["thresholds"]["stalled_update_ratio"], 1e-6);
    assert_eq!(b["thresholds"]["stalled_update_ratio"], 1e-12);
    assert_eq!(a["forwards"]["count"], 6);
    assert!(a["diagnosis"]["fc1"]
        .as_array()
        .unwrap()
        .contains(&"STALLED".into()));
}

#[test]
fn seen_history_where_and_alerts_read_the_record() {
    let root = temp_dir("health-read");
    let steps = train(Recipe {
        lr: 1e-9,
        ..HEALTHY
    });
    record(&root, "slow", &mlp_graph(Act::Relu), &steps);
    let s = store(&root);
    let nodes = seen(&s, "slow", None).unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["fc1", "act", "fc2", "loss"], "declaration order");
    assert_eq!(nodes[1].kind, "ReLU");
    for metric in [
        "grad_norm",
        "update_ratio",
        "param_mean_abs",
        "feature_erank",
    ] {
        assert!(nodes[0].get(metric).is_some(), "fc1 has no {metric}");
    }
    // The first forward has no step before it, so no update: history starts at forward 1.
    let ratios = history(&s, "slow", "fc1", "update_ratio", None).unwrap();
    assert_eq!(
        ratios.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    let last2 = history(&s, "slow", "fc1", "grad_norm", Some(2)).unwrap();
    assert_eq!(last2.iter().map(|(f, _)| *f).collect::<Vec<_>>(), [4, 5]);
    let h = read(&s, "slow", Some(2)).unwrap();
    assert_eq!(h.forwards.len(), 2, "last=2 reads two forwards");
    let t = Thresholds::default();
    let w = where_(&s, "slow", &t, None).unwrap();
    assert_eq!(w[0].0, "fc1");
    assert!(w[0].1.contains(&"STALLED".to_string()), "{w:?}");
    let a = alerts(&s, "slow", &t, None).unwrap();
    let stalled = a
        .iter()
        .find(|a| a.node == "fc1" && a.flag == "STALLED")
        .expect("a STALLED alert at fc1");
    assert_eq!(stalled.first_forward, 1, "the first forward with an update");
    assert!(
        stalled.advice.contains("learning rate"),
        "{}",
        stalled.advice
    );
}

/// Each row: what is wrong, the recipe, and the node and flag the recorded run must show.
#[test]
fn each_sick_mlp_shows_its_flag_from_the_store() {
    let cases: [(&str, Recipe, &str, FlagKind); 3] = [
        (
            "fc2 at 100x its init over fc1 at 1/1000 of its own",
            Recipe {
                gain1: 1e-3,
                gain2: 100.0,
                steps: 1,
                ..HEALTHY
            },
            "fc1",
            FlagKind::Exploding,
        ),
        (
            "fc2 never reads 4 units",
            Recipe {
                pruned: 4,
                ..HEALTHY
            },
            "act",
            FlagKind::IgnoredChannels,
        ),
        (
            "a learning rate of 3 blows the MSE loss past float32",
            Recipe {
                lr: 3.0,
                steps: 200,
                stop_at_nonfinite: true,
                ..HEALTHY
            },
            "loss",
            FlagKind::Inf,
        ),
    ];
    for (k, (what, recipe, node, kind)) in cases.into_iter().enumerate() {
        let root = temp_dir(&format!("health-sick-{k}"));
        record(&root, "sick", &mlp_graph(recipe.act), &train(recipe));
        let d = judged(&root, "sick");
        assert!(
            raised(&d, Some(node), kind),
            "{what}: wanted {} at {node}, got {:?}",
            kind.name(),
            d.verdict.to_names()
        );
    }
}

/// One sample per step into a 32-wide layer: each SGD update is rank one, which is all a batch
/// of one allows, so the update uses its whole rank bound and nothing narrows (issue 17: the
/// old rank bound, min(rows, cols) = 32, made this NARROWING, a batch-size detector).
#[test]
fn a_batch_of_one_is_not_narrowing() {
    let recipe = Recipe {
        n: 1,
        i: 32,
        h: 32,
        lr: 0.01,
        ..HEALTHY
    };
    let root = temp_dir("health-batch-one");
    record(&root, "one", &mlp_graph(recipe.act), &train(recipe));
    let d = judged(&root, "one");
    assert!(
        !raised(&d, Some("fc1"), FlagKind::Narrowing),
        "{:?}",
        d.verdict.to_names()
    );
    let s = store(&root);
    let dims = history(&s, "one", "fc1", "rank_dims", None).unwrap();
    assert!(
        !dims.is_empty() && dims.iter().all(|(_, v)| *v == 1.0),
        "{dims:?}"
    );
    let fraction = history(&s, "one", "fc1", "update_erank_fraction", None).unwrap();
    // 1 up to the float32 rounding of W_t − W_{t−1} (a few 1e-4 of effective rank).
    assert!(
        !fraction.is_empty() && fraction.iter().all(|(_, v)| (v - 1.0).abs() < 1e-2),
        "{fraction:?}"
    );
}

#[test]
fn two_groups_declared_apart_that_carry_the_same_signal_leak() {
    // A tanh layer at a tenth of its init is nearly linear, so its output is its input up
    // to a small bend: declared apart, fc1 and act carry the same information.
    let recipe = Recipe {
        act: Act::Tanh,
        gain1: 0.1,
        ..HEALTHY
    };
    let root = temp_dir("health-leak");
    let mut graph = mlp_graph(Act::Tanh);
    graph.apart.push(["fc1".into(), "act".into()]);
    record(&root, "leaky", &graph, &train(recipe));
    let d = judged(&root, "leaky");
    assert!(
        raised(&d, Some("act"), FlagKind::Leakage),
        "{:?}",
        d.verdict.to_names()
    );
    // Not declared apart: no CKA is measured and nothing leaks.
    let root = temp_dir("health-noleak");
    record(&root, "plain", &mlp_graph(Act::Tanh), &train(recipe));
    assert!(!raised(&judged(&root, "plain"), None, FlagKind::Leakage));
}

/// A linear layer fitted by gradient descent to a teacher that uses only two of its 16
/// outputs: the two grow, the other fourteen fade towards zero, and the output collapses
/// onto two directions: weights growing, units going quiet, rank falling, all at once.
fn plasticity_steps() -> Vec<Step> {
    let (n, i, h) = (64usize, 16usize, 16usize);
    let mut rng = Rng(11);
    let x = rng.fill(n * i, 1.0);
    let mut teacher = vec![0.0f32; h * i];
    teacher[..2 * i].copy_from_slice(&rng.fill(2 * i, 3.0));
    let target = matmul_t(&x, &teacher, n, i, h);
    let mut w = rng.fill(h * i, 0.1);
    let lr = 0.5;
    let mut steps = Vec::new();
    for _ in 0..40 {
        let z = matmul_t(&x, &w, n, i, h);
        let dz: Vec<f32> = z
            .iter()
            .zip(&target)
            .map(|(a, t)| 2.0 * (a - t) / n as f32)
            .collect();
        let loss = z
            .iter()
            .zip(&target)
            .map(|(a, t)| (a - t) * (a - t))
            .sum::<f32>()
            / n as f32;
        let gw = t_matmul(&dz, &x, n, h, i);
        steps.push(Step::from([
            tensor("param.fc.weight", w.clone(), &[h, i]),
            tensor("grad.fc.weight", gw.clone(), &[h, i]),
            tensor("act.fc", z, &[n, h]),
            tensor("loss", vec![loss], &[]),
        ]));
        w.iter_mut().zip(&gw).for_each(|(w, g)| *w -= lr * g);
    }
    steps
}

#[test]
fn a_layer_that_grows_quietens_and_narrows_loses_plasticity() {
    let root = temp_dir("health-plasticity");
    record(
        &root,
        "fit",
        &Graph::of([("fc", "Linear")]),
        &plasticity_steps(),
    );
    let d = judged(&root, "fit");
    assert!(
        raised(&d, Some("fc"), FlagKind::LosingPlasticity),
        "{:?}",
        d.verdict.to_names()
    );
    // The trend needs more than the last forward: the last one alone shows none.
    let alone = diagnose(&store(&root), "fit", &Thresholds::default(), Some(1)).unwrap();
    assert!(!raised(&alone, None, FlagKind::LosingPlasticity));
}

#[test]
fn a_probe_of_a_chain_without_normalisation_shows_it_missing() {
    // One forward, never trained, through four linear layers that each multiply the
    // variance by about 4, written as a probe (run/<id>/0).
    let (n, h) = (64usize, 16usize);
    let mut rng = Rng(7);
    let mut a = rng.fill(n * h, 1.0);
    let mut step = Step::new();
    let mut nodes = Vec::new();
    for l in 0..4 {
        let w = rng.fill(h * h, 2.0 * (3.0 / h as f32).sqrt());
        a = matmul_t(&a, &w, n, h, h);
        step.extend([tensor(&format!("act.l{l}"), a.clone(), &[n, h])]);
        nodes.push((format!("l{l}"), "Linear".to_string()));
    }
    let root = temp_dir("health-probe");
    let graph = Graph::of(nodes);
    let rec = step_record(0, &graph, &step, None, false).unwrap();
    probe(&root, "3fa2c0d19b7e4a61", &rec).unwrap();
    // No graph.json was written: the kinds come from the facts.
    let d = judged(&root, "3fa2c0d19b7e4a61");
    assert!(
        raised(&d, Some("l2"), FlagKind::MissingNormalisation),
        "{:?}",
        d.verdict.to_names()
    );
}

/// The demo conditions, recorded briefly through the same path as `somatize demo`, show
/// NAN, VANISHING, DEAD, DEAD_CHANNELS, SATURATED, STALLED and OVERSTEPPING.
#[test]
fn the_demo_conditions_show_their_flags_from_the_store() {
    let root = temp_dir("health-demo");
    let cases = [
        ("exploding", FlagKind::Nan),
        ("vanishing", FlagKind::Vanishing),
        ("dead_relu", FlagKind::Dead),
        ("dead_relu", FlagKind::DeadChannels),
        ("saturated", FlagKind::Saturated),
        ("stalled", FlagKind::Stalled),
        ("overstepping", FlagKind::Overstepping),
    ];
    for (name, kind) in cases {
        if !root.join("runs").join(name).exists() {
            let c = somatize::demo::condition(name).unwrap();
            somatize::record::demo::record_condition(&root, c, 40, 20).unwrap();
        }
        let d = judged(&root, name);
        assert!(
            raised(&d, None, kind),
            "{name}: wanted {}, got {:?}",
            kind.name(),
            d.verdict.to_names()
        );
    }
}

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");

/// ../shared/runs/example_cnn; `SOMATIZE_SHARED` overrides where `shared/` is.
fn example_cnn() -> std::path::PathBuf {
    let shared = std::env::var("SOMATIZE_SHARED").unwrap_or_else(|_| SHARED.to_string());
    Path::new(&shared).join("runs/example_cnn")
}

#[test]
fn example_cnn_imported_raises_none_of_the_basic_flags() {
    let dir = example_cnn();
    let root = temp_dir("health-cnn");
    let report = somatize::import::import(&dir, &root, "cnn", false, &mut |_| {}).unwrap();
    assert_eq!((report.forwards, report.steps), (12, Some((0, 11))));
    assert!(report.graph);
    let expect: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("expect.json")).unwrap()).unwrap();
    let d = judged(&root, "cnn");
    for name in expect["not"].as_array().unwrap() {
        let kind = FlagKind::parse(name.as_str().unwrap()).unwrap();
        assert!(
            !raised(&d, None, kind),
            "{} raised: {:?}",
            kind.name(),
            d.verdict.to_names()
        );
    }
    // The import carried what the rules read, and the loss into the index.
    let s = store(&root);
    let nodes = seen(&s, "cnn", None).unwrap();
    let first = &nodes[0];
    assert_eq!((first.name.as_str(), first.kind.as_str()), ("0", "Conv2d"));
    for metric in [
        "grad_norm",
        "update_ratio",
        "act_var",
        "update_erank",
        "feature_erank",
    ] {
        assert!(first.get(metric).is_some(), "node 0 has no {metric}");
    }
    let items: Vec<_> = s.scan("cnn").unwrap().map(Result::unwrap).collect();
    assert!(items.iter().all(|i| i
        .entry
        .field("loss.value")
        .and_then(|f| f.as_f64())
        .is_some()));
}

#[test]
fn the_companion_measures_frames_that_carry_tensors() {
    let numpy = std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        numpy,
        "python3 with numpy is needed (scripts/test.sh installs it)"
    );
    let root = temp_dir("health-companion");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/train_numpy.py");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(["record", "--store"])
        .arg(&root)
        .args(["--run", "mlp", "--every", "1", "--", "python3", example])
        .args(["--steps", "4"])
        .output()
        .expect("run somatize record");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = store(&root);
    let h = read(&s, "mlp", None).unwrap();
    let graph = h.graph.as_ref().expect("the companion wrote graph.json");
    assert_eq!(graph.kind_of("relu"), Some("ReLU"));
    let nodes = h.seen();
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["fc1", "relu", "fc2", "loss"]);
    for metric in ["grad_norm", "update_ratio", "param_norm", "act_var"] {
        assert!(nodes[0].get(metric).is_some(), "fc1 has no {metric}");
    }
    assert!(nodes[1].get("dead_units").is_some());
    // Every forward carries the update it applied (the example sends `update.*`).
    let ratios = h.history("fc1", "update_ratio");
    assert_eq!(
        ratios.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    // With tensors every 2 forwards the kept ones still carry one step's update, the same
    // as at every forward.
    let sparse = temp_dir("health-companion-every-2");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(["record", "--store"])
        .arg(&sparse)
        .args(["--run", "mlp", "--every", "2", "--", "python3", example])
        .args(["--steps", "5"])
        .output()
        .expect("run somatize record");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s2 = store(&sparse);
    let h2 = read(&s2, "mlp", None).unwrap();
    let kept = h2.history("fc1", "update_ratio");
    assert_eq!(kept.iter().map(|(f, _)| *f).collect::<Vec<_>>(), [0, 2, 4]);
    for (f, r) in &kept {
        let every = ratios.iter().find(|(g, _)| g == f).map(|(_, r)| *r);
        if let Some(e) = every {
            assert!((r - e).abs() <= 1e-9 * e, "forward {f}: {r} vs {e}");
        }
    }
    assert!(h2
        .history("fc1", "update_steps")
        .iter()
        .all(|(_, v)| *v == 1.0));
}

//! Pathological runs, trained here: a two-layer MLP (fc1 → activation → fc2, MSE loss, plain
//! SGD, hand-written backprop, seeded), dumped per step by the DESIGN keys, measured with
//! `measure_forward` and judged with `diagnose`. Each run is made sick one way and shows the
//! flag for it; the healthy one shows none of the basic flags.
//!
//! The steps stay in memory here, so a failure points at the rules, not the store; the
//! health_store tests carry the same runs through a store.

use crate::common;

use common::mlp::{matmul_t, tensor, train, Act, Recipe, Rng, HEALTHY};
use common::BASIC_FLAGS as BASIC;

/// The probe chain's batch and width, and the MLP's hidden width.
const N: usize = HEALTHY.n;
const H: usize = HEALTHY.h;
use somatize::health::{linear_cka, measure_forward, Step};
use somatize::tensor::TypedTensor;
use somatize::verdict::{judge, Flag, FlagKind, Forward, Judgement, Thresholds};

fn graph(act: Act) -> Vec<(String, String)> {
    let kind = match act {
        Act::Relu => "ReLU",
        Act::Tanh => "Tanh",
    };
    [("fc1", "Linear"), ("act", kind), ("fc2", "Linear")]
        .iter()
        .map(|(n, k)| (n.to_string(), k.to_string()))
        .collect()
}

/// The run measured forward by forward.
fn record(recipe: Recipe) -> Vec<Forward> {
    let steps = train(recipe);
    let graph = graph(recipe.act);
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let previous = i.checked_sub(1).map(|p| &steps[p]);
            let nodes = measure_forward(&graph, step, previous).expect("measures");
            Forward {
                number: i as u64,
                nodes,
            }
        })
        .collect()
}

fn judged(forwards: &[Forward]) -> Judgement {
    judge(forwards, &Thresholds::default())
}

#[test]
fn the_healthy_runs_raise_none_of_the_basic_flags_and_learn() {
    for (what, act) in [("relu", Act::Relu), ("tanh", Act::Tanh)] {
        let forwards = record(Recipe { act, ..HEALTHY });
        let loss = |f: &Forward| f.nodes.last().and_then(|n| n.get("loss")).unwrap();
        assert!(
            loss(&forwards[11]) < loss(&forwards[0]),
            "the healthy {what} run learns"
        );
        let v = judged(&forwards);
        for f in v.findings() {
            assert!(
                !BASIC.contains(&f.flag.kind),
                "healthy {what} run raised {} at {}: {:?}",
                f.flag,
                f.node,
                v.verdict.to_names()
            );
        }
    }
}

/// Each row: what is wrong, the recipe, and the (node, flag) it must show.
#[test]
fn each_sick_run_shows_its_flag_where_it_is() {
    let cases: [(&str, Recipe, &str, Flag); 7] = [
        (
            "ReLU biases far below zero",
            Recipe {
                bias1: -10.0,
                ..HEALTHY
            },
            "act",
            Flag::plain(FlagKind::Dead),
        ),
        (
            "ReLU biases far below zero",
            Recipe {
                bias1: -10.0,
                ..HEALTHY
            },
            "act",
            Flag::counted(FlagKind::DeadChannels, H as u64),
        ),
        (
            "ReLU biases far below zero",
            Recipe {
                bias1: -10.0,
                ..HEALTHY
            },
            "fc1",
            Flag::plain(FlagKind::Vanishing),
        ),
        (
            "tanh with 10x the init",
            Recipe {
                act: Act::Tanh,
                gain1: 10.0,
                ..HEALTHY
            },
            "act",
            Flag::plain(FlagKind::Saturated),
        ),
        (
            "a learning rate of 1e-9",
            Recipe {
                lr: 1e-9,
                ..HEALTHY
            },
            "fc1",
            Flag::plain(FlagKind::Stalled),
        ),
        (
            "fc2 at 100x its init over fc1 at 1/1000 of its own",
            Recipe {
                gain1: 1e-3,
                gain2: 100.0,
                steps: 1,
                ..HEALTHY
            },
            "fc1",
            Flag::plain(FlagKind::Exploding),
        ),
        (
            "fc2 never reads 4 units",
            Recipe {
                pruned: 4,
                ..HEALTHY
            },
            "act",
            Flag::counted(FlagKind::IgnoredChannels, 4),
        ),
    ];
    for (what, recipe, node, flag) in cases {
        let v = judged(&record(recipe));
        assert!(
            v.findings().any(|f| f.node == node && f.flag == flag),
            "{what}: wanted {flag} at {node}, got {:#?}",
            v.faults
        );
    }
}

#[test]
fn a_learning_rate_far_too_high_oversteps_then_breaks() {
    let forwards = record(Recipe {
        lr: 200.0,
        steps: 40,
        ..HEALTHY
    });
    let early = judged(&forwards[..2]);
    assert!(
        early.shows(None, FlagKind::Overstepping),
        "the first update oversteps: {:#?}",
        early.faults
    );
    let late = judged(&forwards);
    let head = late.faults.first().map(|f| f.root.flag.kind);
    assert!(
        matches!(head, Some(FlagKind::Nan | FlagKind::Inf)),
        "40 steps at lr 200 break a number, and that comes first: {:#?}",
        late.faults
    );
    // What came before it is folded under it: one row.
    assert_eq!(
        late.verdict.iter().count(),
        1,
        "{:?}",
        late.verdict.to_names()
    );
}

/// One probe forward (never trained) through `layers` linear layers whose weights multiply
/// the variance by about 4 each, with a LayerNorm after each when `normalised`: the step and
/// its graph.
fn probe_chain(layers: usize, normalised: bool) -> (Step, Vec<(String, String)>) {
    let mut rng = Rng(7);
    let mut a = rng.fill(N * H, 1.0);
    let mut step = Step::new();
    let mut graph = Vec::new();
    for i in 0..layers {
        // Uniform in ±2·sqrt(3/H): variance 4/H per weight, so 4× the input's variance.
        let w = rng.fill(H * H, 2.0 * (3.0 / H as f32).sqrt());
        let z = matmul_t(&a, &w, N, H, H);
        step.extend([tensor(&format!("act.l{i}"), z.clone(), &[N, H])]);
        graph.push((format!("l{i}"), "Linear".to_string()));
        a = z;
        if normalised {
            a = layer_norm(&a);
            step.extend([tensor(&format!("act.n{i}"), a.clone(), &[N, H])]);
            graph.push((format!("n{i}"), "LayerNorm".to_string()));
        }
    }
    (step, graph)
}

/// LayerNorm over each row of an N×H output, without affine parameters.
fn layer_norm(v: &[f32]) -> Vec<f32> {
    v.chunks(H)
        .flat_map(|row| {
            let mean = row.iter().sum::<f32>() / H as f32;
            let var = row.iter().map(|a| (a - mean).powi(2)).sum::<f32>() / H as f32;
            row.iter()
                .map(move |a| (a - mean) / (var + 1e-5).sqrt())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_stretch_with_no_normalisation_grows_and_a_layernorm_stops_it() {
    let flagged = |normalised: bool| {
        let (step, graph) = probe_chain(4, normalised);
        let nodes = measure_forward(&graph, &step, None).unwrap();
        let v = judged(&[Forward { number: 0, nodes }]);
        let at: Vec<String> = v
            .verdict
            .iter()
            .filter(|(_, f)| f.iter().any(|f| f.kind == FlagKind::MissingNormalisation))
            .map(|(n, _)| n.to_string())
            .collect();
        at
    };
    // Variance about 4×, 16×, 64× the first layer's: the bound of 10 is crossed at l2.
    assert_eq!(flagged(false), ["l2"]);
    // With a LayerNorm after every layer each stretch grows about 4×: nothing raised.
    assert_eq!(flagged(true), Vec::<String>::new());
}

#[test]
fn two_groups_reading_the_same_path_leak() {
    // Group B is group A's hidden output through a fixed rotation-and-scale of its units;
    // group C is an independent draw. CKA(A, B) = 1 raises LEAKAGE, CKA(A, C) does not.
    let steps = train(HEALTHY);
    let a = &steps[0]["act.act"];
    let values = a.data.to_f64();
    let b: Vec<f32> = values
        .chunks(H)
        .flat_map(|r| r.iter().rev().map(|v| (2.0 * v) as f32).collect::<Vec<_>>())
        .collect();
    let b = TypedTensor::from_f32("act.b", b, vec![N, H]).unwrap();
    let c = TypedTensor::from_f32("act.c", Rng(99).fill(N * H, 1.0), vec![N, H]).unwrap();
    let t = Thresholds::default();
    for (other, leaks) in [(&b, true), (&c, false)] {
        let cka = linear_cka(a, other).unwrap().unwrap();
        let node = somatize::verdict::NodeSeen::new("b", "Linear", [("cka", cka)]);
        let v = somatize::verdict::verdict(&[node], &t);
        assert_eq!(
            v.has("b", FlagKind::Leakage),
            leaks,
            "CKA {cka} against {}",
            other.provenance.key
        );
    }
}

//! Pathological runs, trained here: a two-layer MLP (fc1 → activation → fc2, MSE loss, plain
//! SGD, hand-written backprop, seeded), dumped per step by the DESIGN keys, measured with
//! `measure_forward` and judged with `diagnose`. Each run is made sick one way and shows the
//! flag for it; the healthy one shows none of the basic flags.
//!
//! The store is being written in parallel, so the steps stay in memory here; the record and
//! store tests carry the same runs through a store.

mod common;

use common::mlp::{matmul_t, t_matmul, tensor, Rng};
use somatize::health::{linear_cka, measure_forward, Step};
use somatize::tensor::TypedTensor;
use somatize::verdict::{diagnose, Flag, FlagKind, Forward, Thresholds, Verdict};

#[derive(Clone, Copy, PartialEq)]
enum Act {
    Relu,
    Tanh,
}

/// How a run is made: sizes, init scales, learning rate, and a sickness.
#[derive(Clone, Copy)]
struct Recipe {
    act: Act,
    lr: f32,
    steps: usize,
    /// Multiplies fc1's He-style init.
    gain1: f32,
    /// Multiplies fc2's init.
    gain2: f32,
    /// fc1's bias at init.
    bias1: f32,
    /// How many of fc2's input columns are held at zero (pruned connections).
    pruned: usize,
}

const HEALTHY: Recipe = Recipe {
    act: Act::Relu,
    lr: 0.05,
    steps: 12,
    gain1: 1.0,
    gain2: 1.0,
    bias1: 0.0,
    pruned: 0,
};

const N: usize = 64;
const I: usize = 8;
const H: usize = 16;
const O: usize = 2;

/// Train the MLP by `recipe`, returning one dump per step: the parameters and their
/// gradients before the step's update, every node's output, and the loss.
fn train(recipe: Recipe) -> Vec<Step> {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let x = rng.fill(N * I, 1.0);
    let teacher = rng.fill(O * I, 1.0);
    let target = matmul_t(&x, &teacher, N, I, O);
    let he1 = (6.0 / I as f32).sqrt() * recipe.gain1;
    let he2 = (6.0 / H as f32).sqrt() * recipe.gain2;
    let mut w1 = rng.fill(H * I, he1);
    let mut b1 = vec![recipe.bias1; H];
    let mut w2 = rng.fill(O * H, he2);
    let mut b2 = vec![0.0f32; O];
    let mut steps = Vec::new();
    for _ in 0..recipe.steps {
        for row in w2.chunks_mut(H) {
            row[..recipe.pruned].iter_mut().for_each(|w| *w = 0.0);
        }
        let mut z1 = matmul_t(&x, &w1, N, I, H);
        z1.iter_mut().enumerate().for_each(|(i, z)| *z += b1[i % H]);
        let h: Vec<f32> = match recipe.act {
            Act::Relu => z1.iter().map(|z| z.max(0.0)).collect(),
            Act::Tanh => z1.iter().map(|z| z.tanh()).collect(),
        };
        let mut y = matmul_t(&h, &w2, N, H, O);
        y.iter_mut().enumerate().for_each(|(i, v)| *v += b2[i % O]);
        let loss = y
            .iter()
            .zip(&target)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f32>()
            / (N * O) as f32;
        // Backward.
        let dy: Vec<f32> = y
            .iter()
            .zip(&target)
            .map(|(a, b)| 2.0 * (a - b) / (N * O) as f32)
            .collect();
        let mut gw2 = t_matmul(&dy, &h, N, O, H);
        for row in gw2.chunks_mut(H) {
            row[..recipe.pruned].iter_mut().for_each(|g| *g = 0.0);
        }
        let gb2: Vec<f32> = (0..O)
            .map(|j| (0..N).map(|s| dy[s * O + j]).sum())
            .collect();
        let dh = {
            // dy (N×O) · w2 (O×H) = N×H.
            let mut out = vec![0.0f32; N * H];
            for s in 0..N {
                for j in 0..H {
                    out[s * H + j] = (0..O).map(|k| dy[s * O + k] * w2[k * H + j]).sum();
                }
            }
            out
        };
        let dz1: Vec<f32> = dh
            .iter()
            .zip(z1.iter().zip(&h))
            .map(|(d, (z, hv))| match recipe.act {
                Act::Relu => {
                    if *z > 0.0 {
                        *d
                    } else {
                        0.0
                    }
                }
                Act::Tanh => d * (1.0 - hv * hv),
            })
            .collect();
        let gw1 = t_matmul(&dz1, &x, N, H, I);
        let gb1: Vec<f32> = (0..H)
            .map(|j| (0..N).map(|s| dz1[s * H + j]).sum())
            .collect();
        steps.push(Step::from([
            tensor("param.fc1.weight", w1.clone(), &[H, I]),
            tensor("param.fc1.bias", b1.clone(), &[H]),
            tensor("param.fc2.weight", w2.clone(), &[O, H]),
            tensor("param.fc2.bias", b2.clone(), &[O]),
            tensor("grad.fc1.weight", gw1.clone(), &[H, I]),
            tensor("grad.fc1.bias", gb1.clone(), &[H]),
            tensor("grad.fc2.weight", gw2.clone(), &[O, H]),
            tensor("grad.fc2.bias", gb2.clone(), &[O]),
            tensor("act.fc1", z1, &[N, H]),
            tensor("act.act", h, &[N, H]),
            tensor("act.fc2", y, &[N, O]),
            tensor("loss", vec![loss], &[]),
        ]));
        // Update.
        let lr = recipe.lr;
        w1.iter_mut().zip(&gw1).for_each(|(w, g)| *w -= lr * g);
        b1.iter_mut().zip(&gb1).for_each(|(w, g)| *w -= lr * g);
        w2.iter_mut().zip(&gw2).for_each(|(w, g)| *w -= lr * g);
        b2.iter_mut().zip(&gb2).for_each(|(w, g)| *w -= lr * g);
    }
    steps
}

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

fn judged(forwards: &[Forward]) -> Verdict {
    diagnose(forwards, &Thresholds::default())
}

const BASIC: [FlagKind; 8] = [
    FlagKind::Nan,
    FlagKind::Inf,
    FlagKind::Vanishing,
    FlagKind::Exploding,
    FlagKind::Dead,
    FlagKind::Saturated,
    FlagKind::Stalled,
    FlagKind::Overstepping,
];

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
        for (node, flags) in v.iter() {
            for f in flags {
                assert!(
                    !BASIC.contains(&f.kind),
                    "healthy {what} run raised {f} at {node}: {:?}",
                    v.to_names()
                );
            }
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
            v.flags_of(node).contains(&flag),
            "{what}: wanted {flag} at {node}, got {:?}",
            v.to_names()
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
        early
            .iter()
            .any(|(_, f)| f.iter().any(|f| f.kind == FlagKind::Overstepping)),
        "the first update oversteps: {:?}",
        early.to_names()
    );
    let late = judged(&forwards);
    let broke = late.iter().any(|(_, f)| {
        f.iter()
            .any(|f| matches!(f.kind, FlagKind::Nan | FlagKind::Inf))
    });
    assert!(
        broke,
        "40 steps at lr 200 break a number: {:?}",
        late.to_names()
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

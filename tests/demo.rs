//! The built-in demo: determinism, a gradient check of the hand-written backward pass, and
//! for every condition the health statistic it is meant to break, computed from its records.

use somatize::demo::{self, net::Net, Init, LayerSpec, StepRecord};
use somatize::math::stats::stats_of;
use somatize::{TensorData, TypedTensor};

const STEPS: u64 = demo::DEFAULT_STEPS;

fn values(t: &TypedTensor) -> &[f32] {
    match &t.data {
        TensorData::F32(v) => v,
        other => panic!("{}: wanted f32, got {:?}", t.provenance.key, other.dtype()),
    }
}

fn l2(v: &[f32]) -> f64 {
    stats_of(v).l2.unwrap_or(f64::NAN)
}

/// Every record of a condition's run, one every `every` steps plus the last.
fn run(name: &str, every: u64) -> Vec<StepRecord> {
    let condition = demo::condition(name).unwrap_or_else(|| panic!("no condition {name}"));
    let mut records = Vec::new();
    let summary = demo::train(condition, STEPS, every, &mut |r| records.push(r.clone()));
    assert_eq!(summary.recorded, records.len() as u64, "{name}");
    records
}

/// The last record: what a verdict taken over the latest forward reads.
fn last(name: &str) -> StepRecord {
    run(name, 100).pop().expect("a run records its last step")
}

/// Per Linear node: ‖grad‖ over weight and bias together.
fn grad_norms(r: &StepRecord) -> Vec<(String, f64)> {
    let linears = r.nodes.iter().filter(|n| n.kind == "Linear");
    linears
        .map(|n| {
            let sq: f64 = n.params.iter().map(|p| l2(values(&p.grad)).powi(2)).sum();
            (n.name.clone(), sq.sqrt())
        })
        .collect()
}

/// Per Linear node: ‖W_after − W_before‖ / ‖W_before‖ over weight and bias together.
fn update_ratios(r: &StepRecord) -> Vec<(String, f64)> {
    let linears = r.nodes.iter().filter(|n| n.kind == "Linear");
    linears
        .map(|n| {
            let (mut du, mut w) = (0.0, 0.0);
            for p in &n.params {
                let diff: Vec<f32> = values(&p.updated)
                    .iter()
                    .zip(values(&p.value))
                    .map(|(a, b)| a - b)
                    .collect();
                du += l2(&diff).powi(2);
                w += l2(values(&p.value)).powi(2);
            }
            (n.name.clone(), (du / w).sqrt())
        })
        .collect()
}

/// Per activation node of `kind`: the share of units whose output is above 0 on under 1 %
/// of the batch (dead), and the share whose |output| (tanh scale) is above 0.97 on over
/// 99 % of it (saturated), as health-flags.md defines them.
fn unit_shares(r: &StepRecord, kind: &str) -> Vec<(String, f64, f64)> {
    let nodes = r.nodes.iter().filter(|n| n.kind == kind);
    nodes
        .map(|n| {
            let (rows, width) = (n.activation.shape[0], n.activation.shape[1]);
            let a = values(&n.activation);
            let scale = |y: f32| if kind == "Sigmoid" { 2.0 * y - 1.0 } else { y };
            let (mut dead, mut saturated) = (0, 0);
            for u in 0..width {
                let col = || (0..rows).map(|i| a[i * width + u]);
                let active = col().filter(|&y| y > 0.0).count() as f64;
                let hot = col().filter(|&y| scale(y).abs() > 0.97).count() as f64;
                dead += (active < 0.01 * rows as f64) as usize;
                saturated += (hot > 0.99 * rows as f64) as usize;
            }
            let w = width as f64;
            (n.name.clone(), dead as f64 / w, saturated as f64 / w)
        })
        .collect()
}

#[test]
fn the_same_condition_trains_the_same_bit_for_bit() {
    for c in demo::conditions() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        demo::train(c, 40, 13, &mut |r| a.push(r.clone()));
        demo::train(c, 40, 13, &mut |r| b.push(r.clone()));
        let bits = |rs: &[StepRecord]| rs.iter().map(|r| r.loss.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "{}: losses differ", c.name);
        for (x, y) in a.iter().zip(&b) {
            for (m, n) in x.nodes.iter().zip(&y.nodes) {
                let mut pairs = vec![(&m.activation, &n.activation)];
                for (p, q) in m.params.iter().zip(&n.params) {
                    pairs.extend([
                        (&p.value, &q.value),
                        (&p.grad, &q.grad),
                        (&p.updated, &q.updated),
                    ]);
                }
                for (s, t) in pairs {
                    let bits =
                        |t: &TypedTensor| values(t).iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(s),
                        bits(t),
                        "{} step {}: {}",
                        c.name,
                        x.step,
                        s.provenance.key
                    );
                }
            }
        }
    }
}

#[test]
fn records_carry_every_node_in_order_with_keyed_tensors() {
    let c = demo::condition("healthy").unwrap();
    let mut records = Vec::new();
    let summary = demo::train(c, 10, 4, &mut |r| records.push(r.clone()));
    let steps: Vec<u64> = records.iter().map(|r| r.step).collect();
    assert_eq!(steps, [0, 4, 8, 9], "recorded steps");
    assert_eq!(summary.steps, 10);
    let graph = demo::graph(c);
    let r = &records[0];
    let got: Vec<(String, &str)> = r.nodes.iter().map(|n| (n.name.clone(), n.kind)).collect();
    assert_eq!(got, graph);
    assert_eq!(
        got,
        [
            ("fc1".into(), "Linear"),
            ("relu1".into(), "ReLU"),
            ("fc2".into(), "Linear")
        ]
    );
    let fc1 = &r.nodes[0];
    assert_eq!(fc1.activation.shape, [demo::BATCH, 64]);
    assert_eq!(fc1.activation.provenance.key, "act.fc1");
    let keys: Vec<(&str, &str, &str)> = fc1
        .params
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.value.provenance.key.as_str(),
                p.grad.provenance.key.as_str(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("fc1.weight", "param.fc1.weight", "grad.fc1.weight"),
            ("fc1.bias", "param.fc1.bias", "grad.fc1.bias")
        ]
    );
    assert_eq!(fc1.params[0].value.shape, [64, 2]);
    assert_eq!(fc1.params[0].updated.stage.as_deref(), Some("after_step"));
    // `updated` is the value after this step's SGD update: value − lr · grad (no decay here).
    assert_eq!(c.weight_decay(), 0.0);
    for p in r.nodes.iter().flat_map(|n| &n.params) {
        let (v, g, u) = (values(&p.value), values(&p.grad), values(&p.updated));
        for ((&v, &g), &u) in v.iter().zip(g).zip(u) {
            assert_eq!(u, v - c.lr() * g, "{}", p.name);
        }
    }
    // And the next record's forward starts from it when the steps are consecutive.
    let (a, b) = (&records[2], &records[3]);
    assert_eq!(
        a.nodes[0].params[0].updated.data,
        b.nodes[0].params[0].value.data
    );
    assert_eq!(r.next_weight(1).map(|w| w.shape.clone()), Some(vec![3, 64]));
    assert_eq!(r.next_weight(2), None);
}

#[test]
fn backward_matches_finite_differences() {
    let specs = [
        LayerSpec::Linear {
            out: 5,
            init: Init::Gain(1.0),
            bias: 0.1,
        },
        LayerSpec::Tanh,
        LayerSpec::Linear {
            out: 4,
            init: Init::Torch,
            bias: 0.0,
        },
        LayerSpec::LayerNorm { affine: true },
        LayerSpec::Sigmoid,
        LayerSpec::Linear {
            out: 4,
            init: Init::He,
            bias: 0.05,
        },
        LayerSpec::ReLU,
        LayerSpec::Linear {
            out: 3,
            init: Init::Torch,
            bias: 0.0,
        },
    ];
    let x: Vec<f32> = vec![0.3, -1.2, 1.5, 0.4, -0.7, -0.9, 0.05, 1.1];
    let y = [0usize, 2, 1, 2];
    let mut net = Net::new(&specs, 2, 11);
    let loss = |net: &Net| {
        let t = net.forward(x.clone());
        demo::cross_entropy(t.outputs.last().unwrap(), &y, 3).0
    };
    let trace = net.forward(x.clone());
    let (_, d) = demo::cross_entropy(trace.outputs.last().unwrap(), &y, 3);
    let grads = net.backward(&trace, d);
    let eps = 1e-2f32;
    let (mut diff, mut sum) = (0.0f64, 0.0f64);
    for i in 0..net.nodes.len() {
        for p in 0..net.nodes[i].params.len() {
            for k in 0..net.nodes[i].params[p].len() {
                let w = net.nodes[i].params[p][k];
                net.nodes[i].params[p][k] = w + eps;
                let up = loss(&net);
                net.nodes[i].params[p][k] = w - eps;
                let down = loss(&net);
                net.nodes[i].params[p][k] = w;
                let numeric = (up - down) / (2.0 * eps as f64);
                let analytic = grads.params[i][p][k] as f64;
                diff += (numeric - analytic).powi(2);
                sum += (numeric + analytic).powi(2);
            }
        }
    }
    let rel = diff.sqrt() / sum.sqrt();
    assert!(rel < 1e-3, "relative error {rel:e} (wanted < 1e-3)");
}

#[test]
fn healthy_loss_falls_and_every_statistic_stays_healthy() {
    let records = run("healthy", 1);
    let losses: Vec<f64> = records.iter().map(|r| r.loss).collect();
    let first = losses[0];
    let end = losses[losses.len() - 30..].iter().sum::<f64>() / 30.0;
    assert!(
        end < 0.7 * first,
        "loss {first:.3} → {end:.3}, wanted a fall of 30 % or more"
    );
    assert!(losses.iter().all(|l| l.is_finite()), "a non-finite loss");
    let r = records.last().unwrap();
    for (name, ratio) in update_ratios(r) {
        assert!(
            (1e-5..1e-1).contains(&ratio),
            "{name}: update ratio {ratio:e}"
        );
    }
    let g = grad_norms(r);
    let ratio = g[0].1 / g[g.len() - 1].1;
    assert!(
        (1e-3..70.0).contains(&ratio),
        "first/last grad norm {ratio:e}"
    );
    for (name, dead, _) in unit_shares(r, "ReLU") {
        assert_eq!(dead, 0.0, "{name}: dead unit share");
    }
    // No stretch without normalisation grows its output variance tenfold.
    let vars: Vec<f64> = r
        .nodes
        .iter()
        .map(|n| stats_of(values(&n.activation)).std.unwrap().powi(2))
        .collect();
    let growth = vars
        .iter()
        .enumerate()
        .map(|(i, v)| v / vars[..=i].iter().cloned().fold(f64::INFINITY, f64::min))
        .fold(0.0, f64::max);
    assert!(
        growth < 10.0,
        "activation variance grows {growth:.1}× ({vars:?})"
    );
}

#[test]
fn vanishing_gradient_is_orders_of_magnitude_below_the_last_layer() {
    let r = last("vanishing");
    let g = grad_norms(&r);
    assert!(g.len() >= 10, "{} Linear layers", g.len());
    let (first, end) = (g[0].1, g[g.len() - 1].1);
    assert!(
        first / end < 1e-3 && first < 1e-4,
        "first {first:e}, last {end:e}"
    );
    // Its sigmoids are not saturated: the gradient vanishes by depth, not by saturation.
    for (name, _, saturated) in unit_shares(&r, "Sigmoid") {
        assert_eq!(saturated, 0.0, "{name}");
    }
}

#[test]
fn exploding_reaches_a_non_finite_loss_and_healthy_does_not() {
    let condition = demo::condition("exploding").unwrap();
    let summary = demo::train(condition, STEPS, STEPS, &mut |_| {});
    let at = summary.first_nonfinite.expect("a non-finite loss");
    assert!(at < STEPS / 2, "first non-finite loss at step {at}");
    assert!(!summary.last_loss.is_finite());
    let r = last("exploding");
    let nonfinite: u64 = r
        .nodes
        .iter()
        .flat_map(|n| &n.params)
        .map(|p| stats_of(values(&p.value)).nonfinite)
        .sum();
    assert!(nonfinite > 0, "the last step's parameters are all finite");
    let healthy = demo::train(
        demo::condition("healthy").unwrap(),
        STEPS,
        STEPS,
        &mut |_| {},
    );
    assert_eq!(healthy.first_nonfinite, None);
}

#[test]
fn dead_relu_kills_most_units_on_every_sample() {
    let r = last("dead_relu");
    let shares = unit_shares(&r, "ReLU");
    assert!(
        shares.iter().any(|(_, dead, _)| *dead > 0.6),
        "dead shares {shares:?}"
    );
}

#[test]
fn saturated_tanh_sits_at_plus_or_minus_one() {
    let r = last("saturated");
    let shares = unit_shares(&r, "Tanh");
    let flagged = shares.iter().filter(|(_, _, s)| *s > 0.6).count();
    assert!(flagged >= 2, "saturated unit shares {shares:?}");
    for n in r.nodes.iter().filter(|n| n.kind == "Tanh") {
        let a = values(&n.activation);
        let hot = a.iter().filter(|y| y.abs() > 0.97).count() as f64 / a.len() as f64;
        assert!(hot > 0.9, "{}: share of |tanh| > 0.97 is {hot}", n.name);
    }
}

#[test]
fn stalled_updates_are_a_millionth_of_the_weights_or_less() {
    let r = last("stalled");
    for (name, ratio) in update_ratios(&r) {
        assert!(ratio < 1e-6, "{name}: update ratio {ratio:e}");
    }
}

#[test]
fn overstepping_updates_are_as_large_as_the_weights_and_stay_finite() {
    let records = run("overstepping", 10);
    assert!(
        records.iter().all(|r| r.loss.is_finite()),
        "a non-finite loss"
    );
    for r in records.iter().filter(|r| r.step >= 100) {
        let ratios = update_ratios(r);
        // The output layer is rewritten by more than its own size every step.
        let (name, out) = &ratios[ratios.len() - 1];
        assert!(*out > 1.1, "step {}: {name} update ratio {out}", r.step);
        // The layer before the norm is scale-free, so its gradient is orthogonal to it and
        // with lr × decay = 1 the update is never shorter than the weights.
        let (name, first) = &ratios[0];
        assert!(
            *first > 0.999,
            "step {}: {name} update ratio {first}",
            r.step
        );
    }
}

#[test]
fn every_condition_names_its_flags() {
    let names: Vec<&str> = demo::conditions().iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "healthy",
            "vanishing",
            "exploding",
            "dead_relu",
            "saturated",
            "stalled",
            "overstepping"
        ]
    );
    for c in demo::conditions() {
        assert_eq!(
            c.raises.is_empty(),
            c.name == "healthy",
            "{}: raises {:?}",
            c.name,
            c.raises
        );
        for flag in c.raises.iter().chain(c.before) {
            assert!(
                somatize::verdict::is_flag(flag),
                "{}: {flag} is not a flag",
                c.name
            );
        }
        assert!(!c.description.is_empty());
    }
}

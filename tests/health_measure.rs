//! Measuring nodes for the verdict, on small tensors built here in code.
//!
//! The tensors are built in code, small enough that every expected value is worked out by hand
//! in the comments, or by a plain loop written here independently of the one-pass code, or
//! (CKA) by numpy 2.4 as noted.

use somatize::health::{
    linear_cka, measure, measure_loss, rank_metrics, MeasureError, Metrics, NodeTensors, RankOf,
    UnitRule,
};
use somatize::tensor::{Provenance, TensorData, TypedTensor};
use somatize::verdict::{verdict, NodeSeen, Thresholds};

fn f32s(key: &str, values: Vec<f32>, shape: &[usize]) -> TypedTensor {
    TypedTensor::from_f32(key, values, shape.to_vec()).expect("shape matches")
}

fn f64s(key: &str, values: Vec<f64>, shape: &[usize]) -> TypedTensor {
    let provenance = Provenance {
        key: key.into(),
        ..Provenance::default()
    };
    TypedTensor::new(TensorData::F64(values), shape.to_vec(), provenance).expect("shape matches")
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-12 * want.abs().max(1.0)
}

/// Assert every `(metric, value)` is in `got`, to 1e-12.
fn expect(got: &Metrics, want: &[(&str, f64)], what: &str) {
    for (name, value) in want {
        match got.get(*name) {
            Some(v) if close(*v, *value) => {}
            other => panic!("{what}: {name} = {other:?}, wanted {value}; all: {got:?}"),
        }
    }
}

fn absent(got: &Metrics, names: &[&str], what: &str) {
    for name in names {
        assert!(
            !got.contains_key(*name),
            "{what}: {name} should not be measured: {got:?}"
        );
    }
}

#[test]
fn parameters_gradients_and_the_applied_update() {
    // W = [[3, 4]], b = [0]; before the step W = [[3, 0]], b = [0] (stored as f64).
    let w = f32s("param.fc.weight", vec![3.0, 4.0], &[1, 2]);
    let b = f32s("param.fc.bias", vec![0.0], &[1]);
    let w0 = f64s("param.fc.weight", vec![3.0, 0.0], &[1, 2]);
    let b0 = f64s("param.fc.bias", vec![0.0], &[1]);
    // Gradients: [[0.5, NaN]] and [+inf]: finite entries 0.5 only.
    let gw = f32s("grad.fc.weight", vec![0.5, f32::NAN], &[1, 2]);
    let gb = f32s("grad.fc.bias", vec![f32::INFINITY], &[1]);
    let node = NodeTensors {
        kind: "Linear",
        params: &[&w, &b],
        grads: &[&gw, &gb],
        previous: &[&w0, &b0],
        ..NodeTensors::default()
    };
    let got = measure(&node).unwrap();
    expect(
        &got,
        &[
            ("param_norm", 5.0),
            ("param_absmax", 4.0),
            ("param_mean_abs", 7.0 / 3.0),
            ("update_norm", 4.0),
            ("update_ratio", 4.0 / 3.0),
            ("grad_norm", 0.5),
            ("grad_mean_abs", 0.5),
            ("grad_zero_fraction", 0.0),
            ("nan", 1.0),
            ("inf", 1.0),
            ("nonfinite", 2.0),
        ],
        "linear node",
    );
    absent(
        &got,
        &["act_var", "units", "dead_units"],
        "no activation given",
    );
}

#[test]
fn the_update_ratio_over_many_chunks_matches_a_plain_loop() {
    // Longer than a conversion chunk (4096), with mixed dtypes, so the previous tensor is
    // read range by range beside the current one.
    let n = 10_007;
    let now: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let before: Vec<f64> = now
        .iter()
        .enumerate()
        .map(|(i, &x)| x as f64 - 1e-3 * ((i % 13) as f64 - 6.0))
        .collect();
    let (mut diff, mut base) = (0.0f64, 0.0f64);
    for (&a, &b) in now.iter().zip(&before) {
        diff += (a as f64 - b) * (a as f64 - b);
        base += b * b;
    }
    let w = f32s("param.w", now, &[n]);
    let w0 = f64s("param.w", before, &[n]);
    let got = measure(&NodeTensors {
        params: &[&w],
        previous: &[&w0],
        ..NodeTensors::default()
    })
    .unwrap();
    let ratio = got["update_ratio"];
    let want = diff.sqrt() / base.sqrt();
    assert!(
        (ratio - want).abs() <= 1e-9 * want,
        "update_ratio {ratio}, plain loop {want}"
    );
}

#[test]
fn a_zero_previous_weight_has_no_update_ratio() {
    let w = f32s("param.w", vec![1.0, 1.0], &[2]);
    let w0 = f32s("param.w", vec![0.0, 0.0], &[2]);
    let got = measure(&NodeTensors {
        params: &[&w],
        previous: &[&w0],
        ..NodeTensors::default()
    })
    .unwrap();
    expect(&got, &[("update_norm", 2f64.sqrt())], "from zero");
    absent(&got, &["update_ratio"], "from zero");
}

#[test]
fn per_channel_activity_of_a_relu_output() {
    // (N, C, H, W) = (2, 3, 2, 2): channel 0 is all zero (dead), channel 1 is positive at one
    // of its 8 places (f = 1/8, alive but ReDo-dormant), channel 2 is 1..8 (alive).
    let mut v = vec![0.0f32; 24];
    for n in 0..2 {
        for p in 0..4 {
            v[n * 12 + 8 + p] = (n * 4 + p + 1) as f32;
        }
    }
    v[4] = 0.5; // channel 1, sample 0, first place
    let act = f32s("act.relu", v, &[2, 3, 2, 2]);
    // A ReLU after a Conv2d: the graph path gives it the conv's channel-first rule.
    let got = measure(&NodeTensors {
        kind: "ReLU",
        activation: Some(&act),
        units: UnitRule::ChannelFirst,
        ..NodeTensors::default()
    })
    .unwrap();
    // Channel variances: 0; 0.5^2/8 - (0.5/8)^2; var(1..8) = 5.25. Channel means 0, 1/16, 4.5.
    let var1 = 0.25 / 8.0 - (0.5f64 / 8.0).powi(2);
    let mean_abs = [0.0, 0.5 / 8.0, 4.5];
    let layer = mean_abs.iter().sum::<f64>() / 3.0; // 1.5208…; channel 1 scores 0.041 <= 0.1
    assert!(mean_abs[1] / layer <= 0.1);
    expect(
        &got,
        &[
            ("units", 3.0),
            ("dead_units", 1.0),
            ("dead_unit_fraction", 1.0 / 3.0),
            ("dormant_units", 2.0),
            ("dormant_unit_fraction", 2.0 / 3.0),
            ("act_var", (0.0 + var1 + 5.25) / 3.0),
            (
                "act_mean_sq",
                (0.0 + (1.0f64 / 16.0).powi(2) + 4.5 * 4.5) / 3.0,
            ),
            ("act_mean", (0.5 + 36.0) / 24.0),
            ("act_zero_fraction", 15.0 / 24.0),
            ("nan", 0.0),
            ("inf", 0.0),
        ],
        "relu output",
    );
    absent(
        &got,
        &["saturated_units", "act_saturated_fraction"],
        "relu is not saturating",
    );
}

#[test]
fn saturation_is_judged_on_the_tanh_scale_for_tanh_and_sigmoid() {
    // (N, D) = (4, 2). Tanh: unit 0 sits at ±0.99 always (saturated), unit 1 at 0.5 except once.
    let tanh = f32s(
        "act.t",
        vec![0.99, 0.5, -0.99, 0.5, 0.99, 0.98, 0.99, 0.5],
        &[4, 2],
    );
    // Sigmoid: unit 0 at 0.999/0.001 (2y-1 = ±0.998), unit 1 at 0.98 (2y-1 = 0.96: not).
    let sig = f32s(
        "act.s",
        vec![0.999, 0.98, 0.001, 0.98, 0.999, 0.98, 0.001, 0.98],
        &[4, 2],
    );
    // A LayerNorm output at 0.99 is not saturation, and is not judged for it.
    let norm = f32s("act.n", vec![0.99; 8], &[4, 2]);
    for (kind, act, want) in [
        ("Tanh", &tanh, Some((5.0 / 8.0, 1.0))),
        ("Sigmoid", &sig, Some((4.0 / 8.0, 1.0))),
        ("LayerNorm", &norm, None),
    ] {
        let got = measure(&NodeTensors {
            kind,
            activation: Some(act),
            ..NodeTensors::default()
        })
        .unwrap();
        match want {
            Some((entries, units)) => expect(
                &got,
                &[
                    ("act_saturated_fraction", entries),
                    ("saturated_units", units),
                    ("saturated_unit_fraction", units / 2.0),
                ],
                kind,
            ),
            None => absent(&got, &["act_saturated_fraction", "saturated_units"], kind),
        }
    }
}

#[test]
fn ignored_units_need_the_next_layers_weight() {
    // (N, D) = (2, 3), all units alive and alike; the next Linear (out 2, in 3) never reads
    // unit 2 (its column is zero), so unit 2 is ignored.
    let act = f32s("act.h", vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0], &[2, 3]);
    let next = f32s(
        "param.out.weight",
        vec![0.5, -0.5, 0.0, 1.0, 0.25, 0.0],
        &[2, 3],
    );
    // A flattened (N, C, H, W) = (2, 3, 1, 2) output read by a Linear of 6 inputs: unit 1's
    // two flattened columns are zero.
    let conv = f32s("act.c", vec![1.0; 12], &[2, 3, 1, 2]);
    let flat = f32s(
        "param.fc.weight",
        vec![1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
        &[1, 6],
    );
    // A next weight of another width reads something else: not measured.
    let other = f32s("param.x.weight", vec![1.0; 8], &[2, 4]);
    for (what, act, next, want) in [
        ("linear", &act, &next, Some(1.0)),
        ("flattened conv", &conv, &flat, Some(1.0)),
        ("other width", &act, &other, None),
    ] {
        let got = measure(&NodeTensors {
            kind: "ReLU",
            activation: Some(act),
            next_weight: Some(next),
            units: UnitRule::ChannelFirst,
            ..NodeTensors::default()
        })
        .unwrap();
        match want {
            Some(n) => expect(
                &got,
                &[("ignored_units", n), ("ignored_unit_fraction", n / 3.0)],
                what,
            ),
            None => absent(&got, &["ignored_units"], what),
        }
    }
}

#[test]
fn the_loss_node() {
    let cases = [
        (f32s("loss", vec![1.5], &[]), 1.5, 0.0, 0.0),
        (f32s("loss", vec![1.0, 2.0], &[2]), 1.5, 0.0, 0.0),
        (f32s("loss", vec![f32::NAN], &[]), f64::NAN, 1.0, 0.0),
        (
            f32s("loss", vec![f32::INFINITY], &[]),
            f64::INFINITY,
            0.0,
            1.0,
        ),
    ];
    for (loss, value, nan, inf) in cases {
        let got = measure_loss(&loss);
        let v = got["loss"];
        assert!(
            v == value || (v.is_nan() && value.is_nan()),
            "loss {loss:?}: got {v}, wanted {value}"
        );
        assert_eq!((got["nan"], got["inf"]), (nan, inf), "{loss:?}");
    }
}

#[test]
fn malformed_input_is_refused_with_the_key() {
    let mut lying = f32s("act.x", vec![0.0; 4], &[2, 2]);
    lying.shape = vec![3, 3];
    let err = measure(&NodeTensors {
        activation: Some(&lying),
        ..NodeTensors::default()
    })
    .unwrap_err();
    assert!(matches!(err, MeasureError::Shape { .. }), "{err:?}");
    assert!(err.to_string().contains("act.x"), "{err}");

    // An empty output whose shape names 2^40 units sizes nothing by it.
    let empty = f32s("act.e", vec![], &[0, 1 << 40]);
    let got = measure(&NodeTensors {
        kind: "ReLU",
        activation: Some(&empty),
        ..NodeTensors::default()
    })
    .unwrap();
    absent(&got, &["units", "act_var", "dead_units"], "empty output");

    let w = f32s("param.w", vec![1.0; 4], &[4]);
    let w0 = f32s("param.w", vec![1.0; 3], &[3]);
    for previous in [&[&w0][..], &[&w, &w][..]] {
        let err = measure(&NodeTensors {
            params: &[&w],
            previous,
            ..NodeTensors::default()
        })
        .unwrap_err();
        assert!(matches!(err, MeasureError::Previous { .. }), "{err:?}");
    }
}

#[test]
fn singular_value_summaries() {
    // Four equal singular values: every rank is 4. One non-zero value: every rank is 1.
    // [3, 1]: p = (0.75, 0.25), erank = exp(-(0.75 ln 0.75 + 0.25 ln 0.25)); srank needs both.
    let h: f64 = -(0.75f64 * 0.75f64.ln() + 0.25 * 0.25f64.ln());
    for (sv, erank, srank, stable) in [
        (vec![1.0, 1.0, 1.0, 1.0], 4.0, 4.0, 4.0),
        (vec![2.0, 0.0, 0.0], 1.0, 1.0, 1.0),
        (vec![3.0, 1.0], h.exp(), 2.0, 10.0 / 9.0),
    ] {
        let got = rank_metrics(RankOf::Update, &sv);
        expect(
            &got,
            &[
                ("update_erank", erank),
                ("update_srank", srank),
                ("update_stable_rank", stable),
                ("rank_dims", sv.len() as f64),
            ],
            &format!("{sv:?}"),
        );
    }
    let features = rank_metrics(RankOf::Feature, &[1.0, 1.0]);
    expect(&features, &[("feature_erank", 2.0)], "features");
    absent(&features, &["rank_dims"], "features");
    assert!(!rank_metrics(RankOf::Grad, &[0.0, 0.0]).contains_key("grad_erank"));
}

#[test]
fn linear_cka_matches_numpy_and_sees_a_rotation_as_the_same() {
    // numpy 2.4, Kornblith et al.'s feature_space_linear_cka(x, y, debiased=True) (columns
    // centred, the debiased HSIC of Song et al. 2012), typed out in the venv.
    let x = f64s(
        "act.a",
        vec![1., 2., 0., 0., 1., 3., 2., 2., 1., 1., 0., 0., 3., 1., 2.],
        &[5, 3],
    );
    let y = f64s(
        "act.b",
        vec![1., 0., 0., 2., 1., 1., 2., 1., 0., 0.],
        &[5, 2],
    );
    // Fewer samples than features: the Gram path.
    let x2 = f64s(
        "act.a",
        vec![
            1., 2., 0., 1., 0., 2., 0., 1., 3., 2., 1., 1., 2., 2., 1., 0., 0., 1., 1., 1., 0., 2.,
            3., 0., 0., 1., 1., 0., 2., 1.,
        ],
        &[5, 6],
    );
    let y2 = f64s(
        "act.b",
        vec![
            1., 0., 1., 0., 0., 2., 2., 1., 1., 1., 0., 3., 2., 0., 1., 1., 0., 1., 3., 2.,
        ],
        &[5, 4],
    );
    for (x, y, want) in [
        (&x, &y, -0.0975900072948526),
        (&x2, &y2, -0.3350119545758598),
    ] {
        let got = linear_cka(x, y).unwrap().unwrap();
        assert!((got - want).abs() < 1e-12, "CKA {got}, numpy {want}");
        let back = linear_cka(y, x).unwrap().unwrap();
        assert!((back - want).abs() < 1e-12, "CKA is symmetric: {back}");
    }
    // Y = X R with R a rotation by 90 degrees in the first two features, scaled by 3.
    let xs: Vec<f64> = x.data.to_f64();
    let rotated: Vec<f64> = xs
        .chunks(3)
        .flat_map(|r| [-3.0 * r[1], 3.0 * r[0], 3.0 * r[2]])
        .collect();
    let r = f64s("act.r", rotated, &[5, 3]);
    let same = linear_cka(&x, &r).unwrap().unwrap();
    assert!((same - 1.0).abs() < 1e-12, "rotated copy: {same}");
    // Different sample counts are refused; a constant group, or fewer than 4 samples, has no
    // CKA.
    let short = f64s("act.s", vec![1.0; 4], &[2, 2]);
    assert!(matches!(
        linear_cka(&x, &short),
        Err(MeasureError::Samples { .. })
    ));
    let flat = f64s("act.f", vec![7.0; 10], &[5, 2]);
    assert_eq!(linear_cka(&x, &flat).unwrap(), None);
    let three = f64s("act.t", vec![1., 2., 0., 1., 3., 5.], &[3, 2]);
    assert_eq!(linear_cka(&three, &three).unwrap(), None);
}

/// Standard normal draws from a fixed seed (splitmix64 and Box–Muller, written here).
fn gaussian(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u, v) = (next().max(1e-300), next());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
        .collect()
}

#[test]
fn cka_reads_independent_noise_as_unrelated_and_a_rotation_as_the_same() {
    // Two independent Gaussian representations of 64 samples by 512 features: the biased
    // estimator reads about 0.89 here (review-2026-12 §4a, numpy); the debiased one near 0.
    let (n, p) = (64usize, 512usize);
    for seed in 1..=4u64 {
        let a = f64s("act.a", gaussian(seed, n * p), &[n, p]);
        let b = f64s("act.b", gaussian(seed + 100, n * p), &[n, p]);
        let cka = linear_cka(&a, &b).unwrap().unwrap();
        assert!(cka.abs() < 0.1, "independent noise, seed {seed}: CKA {cka}");
    }
    // The same representation through an orthogonal map (Givens rotations over neighbouring
    // feature pairs, two passes so every feature mixes with its neighbours) and a scale.
    let x = gaussian(7, n * p);
    let angles = gaussian(8, p);
    let mut y = x.clone();
    for row in y.chunks_mut(p) {
        for start in [0usize, 1] {
            for i in (start..p - 1).step_by(2) {
                let (c, s) = (angles[i].cos(), angles[i].sin());
                let (u, v) = (row[i], row[i + 1]);
                row[i] = c * u - s * v;
                row[i + 1] = s * u + c * v;
            }
        }
        row.iter_mut().for_each(|x| *x *= 2.5);
    }
    let a = f64s("act.a", x, &[n, p]);
    let b = f64s("act.b", y, &[n, p]);
    let cka = linear_cka(&a, &b).unwrap().unwrap();
    assert!((cka - 1.0).abs() < 1e-9, "rotated copy: CKA {cka}");
}

#[test]
fn measured_nodes_feed_the_verdict() {
    // A Linear then a ReLU whose 4 units are all off but one: the ReLU is DEAD with 3 dead
    // channels; raising the bound past 3/4 quiets DEAD but not the count.
    let w = f32s("param.fc.weight", vec![0.1; 8], &[4, 2]);
    let g = f32s("grad.fc.weight", vec![0.01; 8], &[4, 2]);
    let h = f32s(
        "act.fc",
        vec![-1.0, -1.0, -1.0, 2.0, -1.0, -1.0, -1.0, 3.0],
        &[2, 4],
    );
    let r = f32s(
        "act.relu",
        vec![0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0],
        &[2, 4],
    );
    let fc = measure(&NodeTensors {
        kind: "Linear",
        params: &[&w],
        grads: &[&g],
        activation: Some(&h),
        ..NodeTensors::default()
    })
    .unwrap();
    let relu = measure(&NodeTensors {
        kind: "ReLU",
        activation: Some(&r),
        ..NodeTensors::default()
    })
    .unwrap();
    let seen = vec![
        NodeSeen {
            name: "fc".into(),
            kind: "Linear".into(),
            metrics: fc,
        },
        NodeSeen {
            name: "relu".into(),
            kind: "ReLU".into(),
            metrics: relu,
        },
    ];
    // Two samples per unit say little of a unit that is never on: nothing at the defaults.
    assert_eq!(seen[1].metrics.get("unit_samples"), Some(&2.0));
    assert!(verdict(&seen, &Thresholds::default()).is_empty());
    let few = Thresholds::with([("dead_min_samples", 2.0)]).unwrap();
    let got = verdict(&seen, &few).to_names();
    let want = vec![(
        "relu".to_string(),
        vec!["DEAD".to_string(), "DEAD_CHANNELS(3)".to_string()],
    )];
    assert_eq!(got, want);
    let t = Thresholds::with([("dead_layer_fraction", 0.75), ("dead_min_samples", 2.0)]).unwrap();
    let got = verdict(&seen, &t).to_names();
    assert_eq!(
        got,
        vec![("relu".to_string(), vec!["DEAD_CHANNELS(3)".to_string()])]
    );
}

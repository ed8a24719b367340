//! Reductions and transforms against numpy float64 on small arrays built here.
//!
//! Reference values come from numpy 2.4 (python3), computed once on the same arrays, e.g.
//! `A.std()`, `np.quantile(a, q)`, `np.histogram(a, bins=5)`, `np.linalg.norm(A, axis=1)`,
//! `(X > 0).mean(axis=(0, 2, 3))`, `np.linalg.svd(A, compute_uv=False)`.

use somatize::observe::ops;
use somatize::observe::registry;
use somatize::tensor::{Provenance, TensorData, TypedTensor};
use somatize::{ObservableSpec, Value};

/// The 4x6 matrix every numpy reference below was computed on.
const A: [f64; 24] = [
    0.5, -1.25, 0.0, 2.0, 3.5, -0.75, //
    1e-7, 4.0, -2.5, 0.0, 1.5, 0.25, //
    -3.0, 0.125, 2.25, -1.0, 0.0, 5.0, //
    0.75, -0.5, 1.0, 6.0, -4.5, 2e-7,
];

fn tensor(values: &[f64], shape: &[usize]) -> TypedTensor {
    TypedTensor::new(
        TensorData::F64(values.to_vec()),
        shape.to_vec(),
        Provenance::default(),
    )
    .expect("shape fits")
}

fn plan(transforms: &[&str], reduction: &str) -> registry::Plan {
    let mut spec = ObservableSpec::new("param", "A", reduction);
    spec.transforms = transforms.iter().map(|t| t.to_string()).collect();
    registry::plan(&spec).unwrap_or_else(|e| panic!("{transforms:?} {reduction}: {e}"))
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-6 * want.abs().max(1e-300) || got == want
}

fn assert_values(what: &str, got: &Value, want: &[f64]) {
    let got: Vec<f64> = match got {
        Value::Scalar(v) => vec![v.expect("defined")],
        Value::Vector(v) => v.iter().map(|x| x.expect("defined")).collect(),
        Value::Histogram { .. } => panic!("{what}: got a histogram"),
    };
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: got {got:?}, wanted {want:?}"
    );
    for (g, w) in got.iter().zip(want) {
        assert!(close(*g, *w), "{what}: got {got:?}, wanted {want:?}");
    }
}

/// (transforms, reduction, numpy's value) over A as a 4x6 matrix.
fn table() -> Vec<(Vec<&'static str>, &'static str, Vec<f64>)> {
    vec![
        (vec![], "count", vec![24.0]),
        (vec![], "mean", vec![0.5572916791666667]),
        (vec![], "std", vec![2.3617997077084243]),
        (vec![], "var", vec![5.578097859331599]),
        (vec![], "min", vec![-4.5]),
        (vec![], "max", vec![6.0]),
        (vec![], "absmax", vec![6.0]),
        (vec![], "l1", vec![40.375000299999996]),
        (vec![], "l2", vec![11.88815061311052]),
        (vec![], "rms", vec![2.426658582289648]),
        (vec![], "nonfinite", vec![0.0]),
        (vec![], "nan", vec![0.0]),
        (vec![], "zero_fraction", vec![0.125]),
        (vec![], "sparsity", vec![0.20833333333333334]),
        (
            vec![],
            "quantiles(0,0.05,0.25,0.5,0.9,1)",
            vec![-4.5, -2.925, -0.5625, 0.0625001, 3.8499999999999996, 6.0],
        ),
        (
            vec![],
            "channel_activity",
            vec![0.75, 0.5, 0.5, 0.5, 0.5, 0.75],
        ),
        (vec![], "stable_rank", vec![2.260454844736752]),
        (vec![], "effective_rank", vec![3.8473845878317476]),
        (vec![], "srank", vec![4.0]),
        (vec!["log1p_abs"], "mean", vec![0.7857025676093875]),
        (vec!["square"], "l1", vec![141.32812500000006]),
        (vec!["neg"], "max", vec![4.5]),
        (vec!["flatten", "center"], "absmax", vec![5.442708320833333]),
        (
            vec!["identity", "center"],
            "absmax",
            vec![5.442708320833333],
        ),
        (
            vec!["per_row", "center"],
            "std",
            vec![
                1.6308654825650772,
                1.9494479229173238,
                2.5225545088263206,
                3.076851289603275,
            ],
        ),
        (
            vec!["per_row"],
            "l2",
            vec![
                4.315669125408017,
                4.956056900399753,
                6.3307286310503,
                7.619875327064088,
            ],
        ),
        (
            vec!["abs", "per_row"],
            "mean",
            vec![
                1.3333333333333333,
                1.375000016666667,
                1.8958333333333333,
                2.1250000333333334,
            ],
        ),
        (
            vec!["per_column"],
            "mean",
            vec![
                -0.43749997500000004,
                0.59375,
                0.1875,
                1.75,
                0.125,
                1.12500005,
            ],
        ),
    ]
}

#[test]
fn each_reduction_matches_numpy_alone() {
    let t = tensor(&A, &[4, 6]);
    for (transforms, reduction, want) in table() {
        let got = ops::reduce(&t, &[plan(&transforms, reduction)]).remove(0);
        let got = got.unwrap_or_else(|e| panic!("{transforms:?} {reduction}: {e}"));
        assert_values(&format!("{transforms:?} {reduction}"), &got, &want);
    }
}

#[test]
fn all_reductions_in_one_pass_match_numpy() {
    let t = tensor(&A, &[4, 6]);
    let rows = table();
    let plans: Vec<_> = rows.iter().map(|(t, r, _)| plan(t, r)).collect();
    let results = ops::reduce(&t, &plans);
    for ((transforms, reduction, want), got) in rows.iter().zip(results) {
        let got = got.unwrap_or_else(|e| panic!("{transforms:?} {reduction}: {e}"));
        assert_values(&format!("one pass: {transforms:?} {reduction}"), &got, want);
    }
}

fn histogram(v: Value) -> (Vec<u64>, Vec<f64>) {
    match v {
        Value::Histogram { edges, counts } => (counts, edges),
        other => panic!("wanted a histogram, got {other:?}"),
    }
}

#[test]
fn histograms_match_numpy() {
    let t = tensor(&A, &[4, 6]);
    let got = ops::reduce(
        &t,
        &[plan(&[], "histogram(5)"), plan(&[], "histogram(4,-2,2)")],
    );
    let (counts, edges) = histogram(got[0].clone().unwrap());
    // np.histogram(a, bins=5)
    assert_eq!(counts, vec![3, 4, 11, 3, 3]);
    let want_edges = [
        -4.5,
        -2.4,
        -0.2999999999999998,
        1.8000000000000007,
        3.9000000000000004,
        6.0,
    ];
    for (g, w) in edges.iter().zip(want_edges) {
        assert!(close(*g, w), "edges {edges:?}");
    }
    // np.histogram(a, bins=4, range=(-2, 2)), computed while streaming.
    let (counts, edges) = histogram(got[1].clone().unwrap());
    assert_eq!(counts, vec![1, 3, 9, 3]);
    assert_eq!(edges, vec![-2.0, -1.0, 0.0, 1.0, 2.0]);
}

#[test]
fn channel_activity_takes_axis_one_of_nchw() {
    // X = [((i*7) % 11) - 5 for i in range(24)] reshaped (2, 3, 2, 2);
    // numpy: (X > 0).mean(axis=(0, 2, 3)) = [0.625, 0.375, 0.375].
    let x: Vec<f64> = (0..24).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
    let t = tensor(&x, &[2, 3, 2, 2]);
    let got = ops::reduce(&t, &[plan(&[], "channel_activity")])
        .remove(0)
        .unwrap();
    assert_values("channel_activity", &got, &[0.625, 0.375, 0.375]);
}

#[test]
fn nonfinite_values_are_counted_and_left_out() {
    // B = [1, nan, -inf, 2, 0, inf, -3.5]; numpy over B[np.isfinite(B)].
    let b = [
        1.0,
        f64::NAN,
        f64::NEG_INFINITY,
        2.0,
        0.0,
        f64::INFINITY,
        -3.5,
    ];
    let t = tensor(&b, &[7]);
    let names = [
        "nonfinite",
        "nan",
        "count",
        "mean",
        "std",
        "rms",
        "quantiles(0.1,0.5)",
    ];
    let plans: Vec<_> = names.iter().map(|r| plan(&[], r)).collect();
    let got: Vec<Value> = ops::reduce(&t, &plans)
        .into_iter()
        .map(|v| v.unwrap())
        .collect();
    let want: [&[f64]; 7] = [
        &[3.0],
        &[1.0],
        &[7.0],
        &[-0.125],
        &[2.072890493972125],
        &[2.0766559657295187],
        &[-2.4499999999999997, 0.5],
    ];
    for ((name, g), w) in names.iter().zip(&got).zip(want) {
        assert_values(name, g, w);
    }
    // Alone, l2 / rms / nonfinite take the light sum-of-squares path; same answers.
    // numpy: np.linalg.norm(f) = sqrt(1 + 4 + 0 + 12.25), np.sqrt(np.mean(f * f)).
    for (name, want) in [
        ("l2", 17.25f64.sqrt()),
        ("rms", 2.0766559657295187),
        ("nonfinite", 3.0),
        ("count", 7.0),
    ] {
        let got = ops::reduce(&t, &[plan(&[], name)]).remove(0).unwrap();
        assert_values(&format!("{name} alone"), &got, &[want]);
    }
    let rank = ops::reduce(&tensor(&b[..6], &[2, 3]), &[plan(&[], "stable_rank")]);
    assert_eq!(
        rank[0],
        Ok(Value::Scalar(None)),
        "rank of a matrix with NaN"
    );
}

#[test]
fn streamed_and_held_paths_agree_across_dtypes() {
    // f32 values over several chunks: a fixed-range histogram streams, an auto-range one is
    // held; per_row streams, per_column is held. They must agree where they overlap.
    let n = 3 * 5000;
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 / 10.0 - 5.0)
        .collect();
    let t = TypedTensor::from_f32("w", v.clone(), vec![3, 5000]).unwrap();
    let plans = [
        plan(&[], "histogram(10,-5,5)"),
        plan(&[], "histogram(10)"),
        plan(&["per_row"], "mean"),
        plan(&["center", "per_row"], "mean"),
        plan(&["abs"], "l1"),
        plan(&["per_column", "abs"], "l1"),
    ];
    let got: Vec<Value> = ops::reduce(&t, &plans)
        .into_iter()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(histogram(got[0].clone()).0, histogram(got[1].clone()).0);
    let row_means = got[2].as_vector().unwrap();
    assert_eq!(row_means.len(), 3);
    for (r, m) in row_means.iter().enumerate() {
        let want: f64 = v[r * 5000..(r + 1) * 5000]
            .iter()
            .map(|&x| x as f64)
            .sum::<f64>()
            / 5000.0;
        assert!(close(m.unwrap(), want), "row {r}: {m:?} vs {want}");
    }
    // `center` before `per_row` subtracts the mean of the whole tensor from every row.
    let global: f64 = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    for (c, m) in got[3].as_vector().unwrap().iter().zip(row_means) {
        let (c, m) = (c.unwrap(), m.unwrap());
        assert!(
            (c - (m - global)).abs() < 1e-9,
            "centred row mean {c} vs {m} - {global}"
        );
    }
    let total: f64 = got[5].as_vector().unwrap().iter().map(|x| x.unwrap()).sum();
    assert!(
        close(total, got[4].as_scalar().unwrap()),
        "column l1s sum to {total}"
    );
}

#[test]
fn shape_errors_say_what_they_needed() {
    let t = tensor(&A[..6], &[6]);
    for (transforms, reduction) in [
        (vec![], "stable_rank"),
        (vec![], "channel_activity"),
        (vec!["per_row"], "l2"),
        (vec!["flatten"], "effective_rank"),
    ] {
        let got = ops::reduce(&t, &[plan(&transforms, reduction)]).remove(0);
        let e = got.expect_err("a shape error");
        assert!(
            e.to_string().contains("[6]"),
            "{transforms:?} {reduction}: {e}"
        );
    }
}

#[test]
fn stored_f32_fed_directly_equals_one_sequential_pass() {
    // Long enough to be split across threads (2^21 elements or more), with a NaN and an inf
    // in different parts: the direct (and parallel) f32 path must give what one sequential
    // `stats_of` over the values converted to f64 gives.
    let n = (1 << 21) + 12_345;
    let mut v: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0)
        .collect();
    v[17] = f32::NAN;
    v[n - 100] = f32::INFINITY;
    let t = TypedTensor::from_f32("w", v.clone(), vec![n]).unwrap();
    let want = somatize::math::stats::stats_of(&t.data.to_f64());
    let names = [
        "l2",
        "mean",
        "std",
        "min",
        "max",
        "l1",
        "absmax",
        "zero_fraction",
        "nan",
    ];
    let wanted = [
        want.l2,
        want.mean,
        want.std,
        want.min,
        want.max,
        want.l1,
        want.absmax,
        want.zero_fraction,
        Some(want.nan as f64),
    ];
    for group in [&names[..1], &names[..]] {
        let plans: Vec<_> = group.iter().map(|r| plan(&[], r)).collect();
        let got = ops::reduce(&t, &plans);
        for ((name, g), w) in group.iter().zip(got).zip(wanted) {
            let (g, w) = (g.unwrap().as_scalar().unwrap(), w.unwrap());
            assert!(close(g, w), "{name}: direct path {g}, sequential {w}");
        }
    }
}

#[test]
fn a_long_tensor_gives_the_same_bits_on_one_thread_and_on_many() {
    // 5 Mi values (past the size at which the engine starts threads, and not a whole number
    // of its blocks): the blocks are merged in order, so the thread count cannot change a bit.
    let n = (5 << 20) + 3;
    let values: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 2003) as f32 * 0.01 - 10.0)
        .collect();
    let want_mean = values.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64;
    let t = TypedTensor::from_f32("w", values, vec![n]).expect("1-d");
    let plans: Vec<registry::Plan> = ["mean", "std", "l1", "l2", "min", "zero_fraction"]
        .iter()
        .map(|r| plan(&[], r))
        .collect();
    let l2 = [plan(&[], "l2")];
    ops::engine::set_max_threads(1);
    let one = (ops::reduce(&t, &plans), ops::reduce(&t, &l2));
    ops::engine::set_max_threads(4);
    let many = (ops::reduce(&t, &plans), ops::reduce(&t, &l2));
    ops::engine::set_max_threads(0);
    assert_eq!(one, many, "one thread, then four");
    let mean = one.0[0].clone().expect("mean").as_scalar().expect("scalar");
    assert!(
        (mean - want_mean).abs() <= 1e-9 * want_mean.abs(),
        "mean {mean}, want {want_mean} (a plain f64 sum)"
    );
}

//! Singular values, ranks and linear CKA against numpy.
//!
//! References from numpy 2.4 (python3): `np.linalg.svd(M, compute_uv=False)`, stable rank
//! `(s**2).sum() / s[0]**2`, effective rank `exp(-(p * log p).sum())` with `p = s / s.sum()`,
//! srank `argmax(cumsum(s) / s.sum() >= 0.99) + 1`, and linear CKA as
//! `‖Yᵀ X‖²_F / (‖Xᵀ X‖_F ‖Yᵀ Y‖_F)` after centring columns, on the matrices written here
//! (Xc and Yc were drawn once with `np.random.default_rng(7)` and rounded).

use somatize::math::linalg::{
    effective_rank, linear_cka, singular_values, srank_delta, stable_rank, LinalgError,
};

const A: [f64; 24] = [
    0.5, -1.25, 0.0, 2.0, 3.5, -0.75, //
    1e-7, 4.0, -2.5, 0.0, 1.5, 0.25, //
    -3.0, 0.125, 2.25, -1.0, 0.0, 5.0, //
    0.75, -0.5, 1.0, 6.0, -4.5, 2e-7,
];

const W: [f64; 15] = [
    2., 0., 1., 0., 3., 0., 1., 0., 2., 0.5, 0.5, 0.5, 1., -1., 0.,
];

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: got {got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-10 * w.abs().max(1.0),
            "{what}: got {got:?}, wanted {want:?}"
        );
    }
}

#[test]
fn singular_values_of_wide_and_tall_matrices() {
    let want_a = [
        7.907084512542029,
        6.543851213982664,
        4.591273831909187,
        3.860615935469574,
    ];
    assert_close("A (4x6)", &singular_values(&A, 4, 6).unwrap(), &want_a);
    let want_w = [3.2530871022700634, 3.1224989991991987, 1.1905563006612325];
    assert_close("W (5x3)", &singular_values(&W, 5, 3).unwrap(), &want_w);
    // The transpose has the same singular values.
    let wt: Vec<f64> = (0..3)
        .flat_map(|c| (0..5).map(move |r| W[r * 3 + c]))
        .collect();
    assert_close("W.T (3x5)", &singular_values(&wt, 3, 5).unwrap(), &want_w);
}

#[test]
fn ranks_match_numpy() {
    assert_close(
        "stable",
        &[stable_rank(&A, 4, 6).unwrap().unwrap()],
        &[2.260454844736752],
    );
    assert_close(
        "effective",
        &[effective_rank(&A, 4, 6).unwrap().unwrap()],
        &[3.8473845878317476],
    );
    assert_eq!(srank_delta(&A, 4, 6, 0.01).unwrap(), Some(4));
    // With δ = 0.5 the first two singular values (14.45 of 22.90) are the least that reach half.
    assert_eq!(srank_delta(&A, 4, 6, 0.5).unwrap(), Some(2));
    assert_eq!(stable_rank(&[0.0; 4], 2, 2).unwrap(), None, "zero matrix");
}

#[test]
fn rank_one_matrix_has_rank_one() {
    let m: Vec<f64> = (0..4)
        .flat_map(|r| (0..3).map(move |c| (r + 1) as f64 * (c + 2) as f64))
        .collect();
    let sr = stable_rank(&m, 4, 3).unwrap().unwrap();
    let er = effective_rank(&m, 4, 3).unwrap().unwrap();
    assert!(
        (sr - 1.0).abs() < 1e-12 && (er - 1.0).abs() < 1e-6,
        "stable {sr}, effective {er}"
    );
}

#[test]
fn linear_cka_matches_numpy() {
    let xc = [
        0.001, 0.299, -0.274, -0.891, -0.455, -0.992, 0.06, 1.34, -0.492, -0.62, 0.49, 0.357,
        0.105, -0.93, -0.029, 0.695, -1.344, -0.458, -1.901, -1.29, -1.842, -0.235, -1.267, 0.271,
        0.157, -0.187, -2.517, -0.539, -0.049, 0.113,
    ];
    let yc = [
        0.122, 0.4685, 0.0031, -1.734, 0.6581, 2.4816, -0.9803, 0.8655, 0.0756, -1.8274, 1.164,
        -2.4715, -0.1815, -4.0755, -0.3701, -2.7249, 2.7599, -1.0387, -0.7161, -0.1336,
    ];
    let got = linear_cka(&xc, (10, 3), &yc, (10, 2)).unwrap().unwrap();
    assert!((got - 0.7668951712491603).abs() < 1e-12, "cka {got}");
    let same = linear_cka(&xc, (10, 3), &xc, (10, 3)).unwrap().unwrap();
    assert!((same - 1.0).abs() < 1e-12, "cka with itself {same}");
    assert_eq!(
        linear_cka(&xc, (10, 3), &yc[..18], (9, 2)),
        Err(LinalgError::RowsDiffer {
            x_rows: 10,
            y_rows: 9
        })
    );
}

#[test]
fn bad_input_is_refused() {
    assert!(matches!(
        singular_values(&A, 5, 5),
        Err(LinalgError::Shape { .. })
    ));
    assert_eq!(
        singular_values(&[1.0, f64::NAN], 1, 2),
        Err(LinalgError::NonFinite)
    );
    assert!(matches!(
        singular_values(&A, usize::MAX, 2),
        Err(LinalgError::Shape { .. })
    ));
}

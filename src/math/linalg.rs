//! Dense linear algebra in f64: singular values (through `faer`), stable rank, effective
//! rank, `srank_δ` and linear CKA (biased and debiased).
//!
//! Matrices are row-major slices with their row and column counts. Costs are about
//! `min(m,n)² · max(m,n)` for singular values and `O(n · (p₁+p₂)²)` for CKA.

use std::fmt;

/// Why a matrix computation could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum LinalgError {
    /// `rows * cols` does not match the number of values given; fix the call.
    Shape {
        rows: usize,
        cols: usize,
        len: usize,
    },
    /// The two matrices of CKA have different numbers of rows (examples).
    RowsDiffer { x_rows: usize, y_rows: usize },
    /// An entry is NaN or infinite; the result would be meaningless.
    NonFinite,
    /// The SVD did not converge (not seen on finite input; retrying will not help).
    NoConvergence,
}

impl fmt::Display for LinalgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinalgError::Shape { rows, cols, len } => {
                write!(
                    f,
                    "a {rows}x{cols} matrix needs {} values, got {len}",
                    rows * cols
                )
            }
            LinalgError::RowsDiffer { x_rows, y_rows } => {
                write!(
                    f,
                    "CKA needs the same examples in both: {x_rows} rows vs {y_rows}"
                )
            }
            LinalgError::NonFinite => write!(f, "the matrix has NaN or infinite entries"),
            LinalgError::NoConvergence => {
                write!(f, "the singular value decomposition did not converge")
            }
        }
    }
}

impl std::error::Error for LinalgError {}

fn check(values: &[f64], rows: usize, cols: usize) -> Result<(), LinalgError> {
    let shape = LinalgError::Shape {
        rows,
        cols,
        len: values.len(),
    };
    if rows.checked_mul(cols) != Some(values.len()) {
        return Err(shape);
    }
    if values.iter().any(|x| !x.is_finite()) {
        return Err(LinalgError::NonFinite);
    }
    Ok(())
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The singular values of a row-major `rows x cols` matrix, largest first
/// (`min(rows, cols)` of them), by `faer`'s SVD (bidiagonalisation and divide and conquer, in
/// f64, on one thread): a 768 x 768 matrix takes a fraction of a second in an optimised build.
pub fn singular_values(values: &[f64], rows: usize, cols: usize) -> Result<Vec<f64>, LinalgError> {
    check(values, rows, cols)?;
    if rows == 0 || cols == 0 {
        return Ok(Vec::new());
    }
    let a = faer::MatRef::from_row_major_slice(values, rows, cols);
    let mut sv = a
        .singular_values()
        .map_err(|_| LinalgError::NoConvergence)?;
    sv.sort_unstable_by(|a, b| b.total_cmp(a));
    Ok(sv)
}

/// Stable rank `Σσ² / σ_max²` (= `‖A‖_F² / ‖A‖₂²`) from singular values; `None` for a zero matrix.
pub fn stable_rank_of(sv: &[f64]) -> Option<f64> {
    let max = sv.iter().copied().fold(0.0, f64::max);
    (max > 0.0).then(|| sv.iter().map(|s| s * s).sum::<f64>() / (max * max))
}

/// Effective rank (Roy & Vetterli 2007): `exp(-Σ pᵢ ln pᵢ)` with `pᵢ = σᵢ / Σσ`;
/// `None` for a zero matrix.
pub fn effective_rank_of(sv: &[f64]) -> Option<f64> {
    let total: f64 = sv.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let entropy: f64 = sv
        .iter()
        .map(|s| s / total)
        .filter(|&p| p > 0.0)
        .map(|p| -p * p.ln())
        .sum();
    Some(entropy.exp())
}

/// `srank_δ` (Kumar et al. 2021, "Implicit Under-Parameterization"): the least `k` with
/// `Σᵢ₌₁..ₖ σᵢ / Σσ ≥ 1 − δ`, singular values sorted largest first; `None` for a zero matrix.
pub fn srank_of(sv: &[f64], delta: f64) -> Option<usize> {
    let total: f64 = sv.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut sorted = sv.to_vec();
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    let mut running = 0.0;
    for (i, s) in sorted.iter().enumerate() {
        running += s;
        if running / total >= 1.0 - delta {
            return Some(i + 1);
        }
    }
    Some(sorted.len())
}

/// Stable rank of a row-major matrix.
pub fn stable_rank(values: &[f64], rows: usize, cols: usize) -> Result<Option<f64>, LinalgError> {
    Ok(stable_rank_of(&singular_values(values, rows, cols)?))
}

/// Effective rank of a row-major matrix.
pub fn effective_rank(
    values: &[f64],
    rows: usize,
    cols: usize,
) -> Result<Option<f64>, LinalgError> {
    Ok(effective_rank_of(&singular_values(values, rows, cols)?))
}

/// `srank_δ` of a row-major matrix (Kumar et al. use δ = 0.01).
pub fn srank_delta(
    values: &[f64],
    rows: usize,
    cols: usize,
    delta: f64,
) -> Result<Option<usize>, LinalgError> {
    Ok(srank_of(&singular_values(values, rows, cols)?, delta))
}

/// Column-centred copy of a row-major matrix.
fn centred(values: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut means = vec![0.0; cols];
    for row in values.chunks_exact(cols.max(1)) {
        means.iter_mut().zip(row).for_each(|(m, x)| *m += x);
    }
    means.iter_mut().for_each(|m| *m /= rows as f64);
    let mut out = values.to_vec();
    for row in out.chunks_exact_mut(cols.max(1)) {
        row.iter_mut().zip(&means).for_each(|(x, m)| *x -= m);
    }
    out
}

/// `‖Aᵀ B‖_F²` for row-major `n x p` and `n x q` matrices.
fn cross_frobenius_sq(a: &[f64], p: usize, b: &[f64], q: usize) -> f64 {
    let mut m = vec![0.0; p * q];
    for (ra, rb) in a.chunks_exact(p.max(1)).zip(b.chunks_exact(q.max(1))) {
        for (i, &x) in ra.iter().enumerate() {
            let row = &mut m[i * q..(i + 1) * q];
            row.iter_mut().zip(rb).for_each(|(acc, &y)| *acc += x * y);
        }
    }
    m.iter().map(|v| v * v).sum()
}

/// `X Xᵀ` (`n x n`) for a row-major `n x p` matrix.
fn gram(a: &[f64], n: usize, p: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    let rows: Vec<&[f64]> = a.chunks_exact(p.max(1)).collect();
    for i in 0..n {
        for j in i..n {
            let v = dot(rows[i], rows[j]);
            out[i * n + j] = v;
            out[j * n + i] = v;
        }
    }
    out
}

/// Two representations of the same examples, checked and column-centred: `(n, p, q, X, Y)`.
type Centred = (usize, usize, usize, Vec<f64>, Vec<f64>);

fn centred_pair(
    x: &[f64],
    x_shape: (usize, usize),
    y: &[f64],
    y_shape: (usize, usize),
) -> Result<Centred, LinalgError> {
    let ((n, p), (m, q)) = (x_shape, y_shape);
    check(x, n, p)?;
    check(y, m, q)?;
    if n != m {
        return Err(LinalgError::RowsDiffer {
            x_rows: n,
            y_rows: m,
        });
    }
    Ok((n, p, q, centred(x, n, p), centred(y, m, q)))
}

/// Linear CKA (Kornblith et al. 2019) between representations `x` (`n x p`) and `y`
/// (`n x q`) of the same `n` examples: `‖Yᵀ X‖_F² / (‖Xᵀ X‖_F ‖Yᵀ Y‖_F)` after centring
/// each column. Taken through the `n x n` Gram matrices (`‖Yᵀ X‖_F² = ⟨X Xᵀ, Y Yᵀ⟩`) when
/// there are fewer examples than features, else through the feature cross-products.
/// `None` when either representation is constant.
pub fn linear_cka(
    x: &[f64],
    x_shape: (usize, usize),
    y: &[f64],
    y_shape: (usize, usize),
) -> Result<Option<f64>, LinalgError> {
    let (n, p, q, xc, yc) = centred_pair(x, x_shape, y, y_shape)?;
    let (xy, xx, yy) = similarities(n, p, q, &xc, &yc);
    let (xx, yy) = (xx.sqrt(), yy.sqrt());
    let cka = xy / (xx * yy);
    Ok((xx > 0.0 && yy > 0.0 && cka.is_finite()).then_some(cka))
}

/// `(⟨K, L⟩, ⟨K, K⟩, ⟨L, L⟩)` of centred `xc` (`n x p`) and `yc` (`n x q`), K = X Xᵀ and
/// L = Y Yᵀ: through the `n x n` Gram matrices when there are fewer examples than features,
/// else as ‖Yᵀ X‖²_F, ‖Xᵀ X‖²_F, ‖Yᵀ Y‖²_F (the same numbers, the smaller intermediates).
fn similarities(n: usize, p: usize, q: usize, xc: &[f64], yc: &[f64]) -> (f64, f64, f64) {
    if n < p.max(q) {
        let (k, l) = (gram(xc, n, p), gram(yc, n, q));
        (dot(&k, &l), dot(&k, &k), dot(&l, &l))
    } else {
        (
            cross_frobenius_sq(yc, q, xc, p),
            cross_frobenius_sq(xc, p, xc, p),
            cross_frobenius_sq(yc, q, yc, q),
        )
    }
}

/// The sum of squares of each row of a row-major `n x p` matrix (the diagonal of `X Xᵀ`).
fn row_norms_sq(a: &[f64], p: usize) -> Vec<f64> {
    a.chunks_exact(p.max(1)).map(|r| dot(r, r)).collect()
}

/// The debiased `⟨K, L⟩` of Kornblith et al.'s reference code for centred representations
/// (the unbiased HSIC estimator of Song et al. 2012, without its `1/(n(n−3))`, which cancels
/// in CKA): `⟨K, L⟩ − n/(n−2) · diag(K)·diag(L) + tr K · tr L / ((n−1)(n−2))`.
fn debiased_dot(kl: f64, dk: &[f64], dl: &[f64], n: usize) -> f64 {
    let n = n as f64;
    let (tk, tl): (f64, f64) = (dk.iter().sum(), dl.iter().sum());
    kl - n / (n - 2.0) * dot(dk, dl) + tk * tl / ((n - 1.0) * (n - 2.0))
}

/// Debiased linear CKA (Song et al. 2012's unbiased HSIC estimator in place of the biased
/// one; the "unbiased CKA" of Nguyen et al. 2021 and Kornblith et al.'s `debiased=True`)
/// between `x` (`n x p`) and `y` (`n x q`) of the same `n` examples, columns centred. Near 0
/// for independent representations even when `n ≪ p` (the biased estimator reads close to 1
/// there), 1 for a rotation or scaling of the same one; it can be slightly negative. Taken
/// through the `n x n` Gram matrices when there are fewer examples than features, else through
/// the feature cross-products. `None` when `n < 4` (the estimator needs it) or either
/// representation has no positive debiased self-similarity (constant, or too few examples).
pub fn debiased_linear_cka(
    x: &[f64],
    x_shape: (usize, usize),
    y: &[f64],
    y_shape: (usize, usize),
) -> Result<Option<f64>, LinalgError> {
    Ok(debiased_hsic(x, x_shape, y, y_shape)?.and_then(|(xy, xx, yy)| cka_of(xy, xx, yy)))
}

/// The three debiased HSIC estimates linear CKA is made of, `(xy, xx, yy)` (see
/// [`debiased_linear_cka`]): what a summary carries of two outputs. `Ok(None)` with fewer than
/// 4 samples.
pub fn debiased_hsic(
    x: &[f64],
    x_shape: (usize, usize),
    y: &[f64],
    y_shape: (usize, usize),
) -> Result<Option<(f64, f64, f64)>, LinalgError> {
    let (n, p, q, xc, yc) = centred_pair(x, x_shape, y, y_shape)?;
    if n < 4 {
        return Ok(None);
    }
    let (dx, dy) = (row_norms_sq(&xc, p), row_norms_sq(&yc, q));
    let (xy, xx, yy) = similarities(n, p, q, &xc, &yc);
    Ok(Some((
        debiased_dot(xy, &dx, &dy, n),
        debiased_dot(xx, &dx, &dx, n),
        debiased_dot(yy, &dy, &dy, n),
    )))
}

/// Linear CKA from its debiased HSIC estimates: xy / √(xx · yy); `None` when a group is
/// constant (xx or yy not positive) or the result is not finite.
pub fn cka_of(xy: f64, xx: f64, yy: f64) -> Option<f64> {
    if !(xx > 0.0 && yy > 0.0) {
        return None;
    }
    let cka = xy / (xx.sqrt() * yy.sqrt());
    cka.is_finite().then_some(cka)
}

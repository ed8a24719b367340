//! Small dense linear algebra in f64: singular values (one-sided Jacobi), stable rank,
//! effective rank, `srank_δ` and linear CKA.
//!
//! Matrices are row-major slices with their row and column counts. Costs are
//! `O(sweeps · min(m,n)² · max(m,n))` for singular values and `O(n · (p₁+p₂)²)` for CKA, so
//! they suit the layer-sized matrices of health checks, not huge ones.

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
/// (`min(rows, cols)` of them), by one-sided Jacobi rotations in f64.
pub fn singular_values(values: &[f64], rows: usize, cols: usize) -> Result<Vec<f64>, LinalgError> {
    check(values, rows, cols)?;
    // Work on k = min(rows, cols) vectors of length l = max(rows, cols), each contiguous:
    // the columns of A (A's transpose's rows) when rows >= cols, else the rows of A.
    let (k, l) = (rows.min(cols), rows.max(cols));
    let mut v: Vec<Vec<f64>> = if rows >= cols {
        (0..cols)
            .map(|c| (0..rows).map(|r| values[r * cols + c]).collect())
            .collect()
    } else {
        values
            .chunks_exact(cols.max(1))
            .map(|r| r.to_vec())
            .collect()
    };
    debug_assert!(v.iter().all(|c| c.len() == l));
    const SWEEPS: usize = 60;
    for _ in 0..SWEEPS {
        let mut rotated = false;
        for p in 0..k {
            for q in p + 1..k {
                let (head, tail) = v.split_at_mut(q);
                let (a, b) = (&mut head[p], &mut tail[0]);
                let alpha = dot(a, a);
                let beta = dot(b, b);
                let gamma = dot(a, b);
                if gamma == 0.0 || gamma.abs() <= 1e-15 * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for (x, y) in a.iter_mut().zip(b.iter_mut()) {
                    let (xa, yb) = (*x, *y);
                    *x = c * xa - s * yb;
                    *y = s * xa + c * yb;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let mut sv: Vec<f64> = v.iter().map(|c| dot(c, c).sqrt()).collect();
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
    let ((n, p), (m, q)) = (x_shape, y_shape);
    check(x, n, p)?;
    check(y, m, q)?;
    if n != m {
        return Err(LinalgError::RowsDiffer {
            x_rows: n,
            y_rows: m,
        });
    }
    let (xc, yc) = (centred(x, n, p), centred(y, m, q));
    let (xy, xx, yy) = if n < p.max(q) {
        let (k, l) = (gram(&xc, n, p), gram(&yc, n, q));
        (dot(&k, &l), dot(&k, &k).sqrt(), dot(&l, &l).sqrt())
    } else {
        (
            cross_frobenius_sq(&yc, q, &xc, p),
            cross_frobenius_sq(&xc, p, &xc, p).sqrt(),
            cross_frobenius_sq(&yc, q, &yc, q).sqrt(),
        )
    };
    let cka = xy / (xx * yy);
    Ok((xx > 0.0 && yy > 0.0 && cka.is_finite()).then_some(cka))
}

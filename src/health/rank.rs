//! Singular-value summaries under health's metric names: effective rank, srank_δ and stable
//! rank (the arithmetic in [`crate::linalg`]), and the capped SVD of a node's update,
//! gradient or output that feeds them.

use super::measure::Metrics;
use crate::linalg;
use crate::tensor::TypedTensor;
use somatize_verdict::metrics as m;

/// The δ of srank_δ (Kumar et al., ICLR 2021).
pub const SRANK_DELTA: f64 = 0.01;
/// The largest min(rows, cols) a matrix may have for its singular values to be taken
/// (one-sided Jacobi costs about min² · max per sweep); larger matrices go unmeasured.
pub const RANK_MAX_DIMS: usize = 128;
/// The most entries a matrix may have for its singular values to be taken.
pub const RANK_MAX_ENTRIES: usize = 1 << 17;

/// Which matrix the singular values are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankOf {
    /// The applied update W_t − W_{t−1}, as a matrix (out × rest).
    Update,
    /// The gradient, as a matrix (out × rest).
    Grad,
    /// The node's output, as a (samples × features) matrix.
    Feature,
}

/// The finite, non-negative singular values.
fn usable(sv: &[f64]) -> Vec<f64> {
    sv.iter()
        .copied()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .collect()
}

/// Effective rank exp(−Σ p_k ln p_k), p_k = σ_k / Σσ (Roy & Vetterli 2007); `None` when
/// there is no positive finite singular value.
pub fn effective_rank(sv: &[f64]) -> Option<f64> {
    linalg::effective_rank_of(&usable(sv)).filter(|e| e.is_finite())
}

/// srank_δ: the least k with Σ_{i≤k} σ_i / Σσ ≥ 1 − δ, σ in decreasing order.
pub fn srank(sv: &[f64], delta: f64) -> Option<f64> {
    let s = usable(sv);
    if !s.iter().sum::<f64>().is_finite() {
        return None;
    }
    linalg::srank_of(&s, delta).map(|k| k as f64)
}

/// Stable rank ‖A‖²_F / σ²_max = Σσ² / σ²_max.
pub fn stable_rank(sv: &[f64]) -> Option<f64> {
    linalg::stable_rank_of(&usable(sv)).filter(|s| s.is_finite())
}

/// The metrics of one matrix's singular values (all min(rows, cols) of them, as a thin SVD
/// gives): `{of}_erank`, `{of}_srank` (δ = 0.01), `update_stable_rank`, and `rank_dims` (the
/// count of singular values) for the update and the gradient.
pub fn rank_metrics(of: RankOf, singular_values: &[f64]) -> Metrics {
    let (erank, srank_name) = match of {
        RankOf::Update => (m::UPDATE_ERANK, m::UPDATE_SRANK),
        RankOf::Grad => (m::GRAD_ERANK, m::GRAD_SRANK),
        RankOf::Feature => (m::FEATURE_ERANK, m::FEATURE_SRANK),
    };
    let mut out = Metrics::new();
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            out.insert(k.to_string(), v);
        }
    };
    put(erank, effective_rank(singular_values));
    put(srank_name, srank(singular_values, SRANK_DELTA));
    if of == RankOf::Update {
        put(m::UPDATE_STABLE_RANK, stable_rank(singular_values));
    }
    if of != RankOf::Feature && !singular_values.is_empty() {
        put(m::RANK_DIMS, Some(singular_values.len() as f64));
    }
    out
}

/// The (rows, cols) of a tensor as a matrix: its first axis by the rest flattened; `None`
/// for a tensor of fewer than two axes or over the caps.
pub fn as_matrix(shape: &[usize]) -> Option<(usize, usize)> {
    let (&rows, rest) = shape.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let cols = rest.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    let entries = rows.checked_mul(cols)?;
    (rows.min(cols) <= RANK_MAX_DIMS && entries <= RANK_MAX_ENTRIES && entries > 0)
        .then_some((rows, cols))
}

/// The rank metrics of `values` (row-major, `shape` read as [`as_matrix`]); empty when the
/// matrix is over the caps, has a non-finite entry, or is all zeros.
pub fn rank_of(of: RankOf, values: &[f64], shape: &[usize]) -> Metrics {
    let Some((rows, cols)) = as_matrix(shape) else {
        return Metrics::new();
    };
    match singular_values(values, rows, cols) {
        Some(sv) => rank_metrics(of, &sv),
        None => Metrics::new(),
    }
}

/// The singular values of a row-major matrix; a long, thin one (the long side over twice the
/// short) through its short-side Gram matrix (σ = √ of the Gram's singular values), which
/// costs about long·short² once instead of per Jacobi sweep. Values under about 1e-8 of the
/// largest are lost that way, which moves no rank summary measurably.
fn singular_values(values: &[f64], rows: usize, cols: usize) -> Option<Vec<f64>> {
    let (k, l) = (rows.min(cols), rows.max(cols));
    if l <= 2 * k || values.iter().any(|v| !v.is_finite()) {
        return linalg::singular_values(values, rows, cols).ok();
    }
    // G = A Aᵀ (rows ≤ cols) or Aᵀ A (cols < rows), k × k.
    let at = |i: usize, j: usize| values[i * cols + j];
    let mut g = vec![0.0f64; k * k];
    for a in 0..k {
        for b in a..k {
            let v: f64 = if rows <= cols {
                (0..cols).map(|j| at(a, j) * at(b, j)).sum()
            } else {
                (0..rows).map(|i| at(i, a) * at(i, b)).sum()
            };
            g[a * k + b] = v;
            g[b * k + a] = v;
        }
    }
    let sv = linalg::singular_values(&g, k, k).ok()?;
    Some(sv.into_iter().map(|s| s.max(0.0).sqrt()).collect())
}

/// The rank metrics of a tensor as a matrix (see [`rank_of`]); read only when under the caps.
pub fn rank_of_tensor(of: RankOf, t: &TypedTensor) -> Metrics {
    if as_matrix(&t.shape).is_none() {
        return Metrics::new();
    }
    rank_of(of, &t.data.to_f64(), &t.shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gram_path_agrees_with_jacobi_on_thin_matrices() {
        // A 5 x 40 matrix and its transpose, of a fixed pattern with distinct singular values.
        let (r, c) = (5usize, 40usize);
        let a: Vec<f64> = (0..r * c)
            .map(|k| ((k * 37 % 23) as f64 - 11.0) * (1.0 + (k / c) as f64))
            .collect();
        let t: Vec<f64> = (0..c * r).map(|k| a[(k % r) * c + k / r]).collect();
        let direct = linalg::singular_values(&a, r, c).unwrap();
        for (values, rows, cols) in [(&a, r, c), (&t, c, r)] {
            let got = singular_values(values, rows, cols).unwrap();
            assert_eq!(got.len(), direct.len());
            for (g, d) in got.iter().zip(&direct) {
                assert!((g - d).abs() <= 1e-9 * direct[0], "{got:?} vs {direct:?}");
            }
        }
    }
}

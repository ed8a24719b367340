//! Singular-value summaries under health's metric names: effective rank, srank_δ and stable
//! rank (the arithmetic in [`crate::math::linalg`]), and the capped SVD of a node's update,
//! gradient or output that feeds them.

use super::summary::Spectrum;
use super::Metrics;
use crate::math::linalg;
use crate::tensor::TypedTensor;
use somatize_verdict::metrics as m;

/// The δ of srank_δ (Kumar et al., ICLR 2021).
pub const SRANK_DELTA: f64 = 0.01;
pub use super::summary::{SPECTRUM_MAX_COLS, SPECTRUM_MAX_ROWS};

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
/// count of singular values) for the update and the gradient. [`rank_of`] lowers `rank_dims`
/// to the samples the update was taken over when they are known.
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
/// for a tensor of fewer than two axes or an empty one.
pub fn as_matrix(shape: &[usize]) -> Option<(usize, usize)> {
    let (&rows, rest) = shape.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let cols = rest.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    (rows > 0 && cols > 0 && rows.checked_mul(cols).is_some()).then_some((rows, cols))
}

/// The stride a side of `n` is read at so that at most `most` of it is taken, and how many
/// are taken.
pub fn spectrum_stride(n: usize, most: usize) -> (usize, usize) {
    let stride = n.div_ceil(most.max(1)).max(1);
    (stride, n.div_ceil(stride))
}

/// Rows and columns of a row-major `rows × cols` matrix at [`spectrum_stride`]: the matrix
/// the singular values are taken of, with its (rows, cols).
fn spectrum_sample(values: &[f64], rows: usize, cols: usize) -> Option<(Vec<f64>, usize, usize)> {
    let ((rs, r), (cs, c)) = (
        spectrum_stride(rows, SPECTRUM_MAX_ROWS),
        spectrum_stride(cols, SPECTRUM_MAX_COLS),
    );
    let mut out = Vec::with_capacity(r * c);
    for i in (0..rows).step_by(rs) {
        let row = values.get(i.checked_mul(cols)?..)?;
        for j in (0..cols).step_by(cs) {
            out.push(*row.get(j)?);
        }
    }
    Some((out, r, c))
}

/// The spectrum of `values` (row-major, `shape` read as [`as_matrix`]): the singular values
/// of its sample of at most [`SPECTRUM_MAX_ROWS`] rows and [`SPECTRUM_MAX_COLS`] columns at
/// an even stride. `None` for fewer than two axes, an empty matrix or a non-finite entry in the
/// sample.
pub fn spectrum(values: &[f64], shape: &[usize]) -> Option<Spectrum> {
    let (rows, cols) = as_matrix(shape)?;
    let (sample, rows, cols) = spectrum_sample(values, rows, cols)?;
    let values = singular_values(&sample, rows, cols)?;
    Some(Spectrum { rows, cols, values })
}

/// The rank metrics of a spectrum; empty when its sample was all zeros. For the update and
/// the gradient of a weight, `samples` is how many input rows (samples × positions) the step
/// summed over when it is known: an SGD step's update is a sum of that many outer products, so
/// its rank is at most min(rows, cols, samples). Then `rank_dims` is that bound and
/// `update_erank_fraction` (or `grad_erank_fraction`) is the effective rank over it; without
/// `samples` neither is written (a small batch would read as a narrow update).
pub fn spectrum_metrics(of: RankOf, s: &Spectrum, samples: Option<u64>) -> Metrics {
    let mut out = rank_metrics(of, &s.values);
    if of == RankOf::Feature {
        return out;
    }
    out.remove(m::RANK_DIMS);
    let (erank, fraction) = match of {
        RankOf::Update => (m::UPDATE_ERANK, UPDATE_ERANK_FRACTION),
        _ => (m::GRAD_ERANK, GRAD_ERANK_FRACTION),
    };
    if let Some(n) = samples.filter(|n| *n > 0) {
        let bound = (s.rows.min(s.cols) as u64).min(n) as f64;
        out.insert(m::RANK_DIMS.into(), bound);
        out.insert(RANK_SAMPLES.into(), n as f64);
        if let Some(e) = out.get(erank).copied() {
            out.insert(fraction.into(), e / bound);
        }
    }
    out
}

/// The rank metrics of `values` (row-major, `shape` read as [`as_matrix`]): its
/// [`spectrum`]'s [`spectrum_metrics`]; empty when the sample has a non-finite entry or is
/// all zeros.
pub fn rank_of(of: RankOf, values: &[f64], shape: &[usize], samples: Option<usize>) -> Metrics {
    spectrum(values, shape)
        .map(|s| spectrum_metrics(of, &s, samples.map(|n| n as u64)))
        .unwrap_or_default()
}

/// The singular values of a row-major matrix; `None` with a non-finite entry.
fn singular_values(values: &[f64], rows: usize, cols: usize) -> Option<Vec<f64>> {
    linalg::singular_values(values, rows, cols).ok()
}

/// The rank metrics of a weight's gradient as a matrix (see [`rank_of`]).
pub fn rank_of_tensor(of: RankOf, t: &TypedTensor, samples: Option<usize>) -> Metrics {
    if as_matrix(&t.shape).is_none() {
        return Metrics::new();
    }
    rank_of(of, &t.data.to_f64(), &t.shape, samples)
}

/// An output as a (positions × units) matrix: every axis but the unit axis `axis` is a row
/// (samples and positions), the units are the columns; at most [`SPECTRUM_MAX_ROWS`] rows and
/// [`SPECTRUM_MAX_COLS`] columns, taken at an even stride ([`spectrum_stride`]). `None` for an output of fewer than two axes
/// or a bad axis.
pub fn feature_matrix(t: &TypedTensor, axis: usize) -> Option<(Vec<f64>, usize, usize)> {
    let units = *t.shape.get(axis)?;
    if t.shape.len() < 2 || units == 0 {
        return None;
    }
    let inner: usize = t.shape.get(axis + 1..)?.iter().product();
    let positions = t.len() / units;
    if positions == 0 {
        return None;
    }
    let ((stride, rows), (ustride, cols)) = (
        spectrum_stride(positions, SPECTRUM_MAX_ROWS),
        spectrum_stride(units, SPECTRUM_MAX_COLS),
    );
    let values = t.data.to_f64();
    let mut out = Vec::with_capacity(rows * cols);
    for r in (0..positions).step_by(stride) {
        // Position r is (outer, inner) around the unit axis.
        let (outer, within) = (r / inner.max(1), r % inner.max(1));
        let base = outer * units * inner + within;
        out.extend(
            (0..units)
                .step_by(ustride)
                .map(|u| values.get(base + u * inner).copied().unwrap_or(0.0)),
        );
    }
    Some((out, rows, cols))
}

/// The spectrum of an output as a (positions × units) matrix (see [`feature_matrix`]).
pub fn feature_spectrum(t: &TypedTensor, axis: usize) -> Option<Spectrum> {
    let (values, rows, cols) = feature_matrix(t, axis)?;
    let values = singular_values(&values, rows, cols)?;
    Some(Spectrum { rows, cols, values })
}

/// The effective rank and srank of an output as a (positions × units) matrix (see
/// [`feature_matrix`]).
pub fn feature_rank(t: &TypedTensor, axis: usize) -> Metrics {
    feature_spectrum(t, axis)
        .map(|s| spectrum_metrics(RankOf::Feature, &s, None))
        .unwrap_or_default()
}

/// `update_erank` over `rank_dims` = min(rows, cols, samples): the share of the rank an
/// SGD-like update of that batch could have that it uses (written only when the samples are
/// known; with momentum or Adam it can exceed 1).
pub const UPDATE_ERANK_FRACTION: &str = "update_erank_fraction";
/// `grad_erank` over `rank_dims`, as [`UPDATE_ERANK_FRACTION`] for the gradient.
pub const GRAD_ERANK_FRACTION: &str = "grad_erank_fraction";
/// The input rows (samples × positions per unit of the node's output) the weight's gradient
/// was summed over, as the rank bound took them.
pub const RANK_SAMPLES: &str = "rank_samples";

#[cfg(test)]
mod tests {
    use super::*;

    /// Column `k` of the Householder reflection I − 2 v vᵀ / ‖v‖² (orthonormal columns).
    fn householder_column(v: &[f64], k: usize) -> Vec<f64> {
        let norm_sq: f64 = v.iter().map(|x| x * x).sum();
        (0..v.len())
            .map(|i| f64::from(u8::from(i == k)) - 2.0 * v[i] * v[k] / norm_sq)
            .collect()
    }

    /// Σ_{k<rank} u_k v_kᵀ of n × n, u_k and v_k columns of two Householder reflections:
    /// `rank` singular values of exactly 1 and the rest 0.
    fn of_rank(n: usize, rank: usize) -> Vec<f64> {
        let a: Vec<f64> = (0..n).map(|i| ((i * 37 % 101) as f64) - 50.0).collect();
        let b: Vec<f64> = (0..n).map(|i| ((i * 53 % 89) as f64) - 44.5).collect();
        let mut m = vec![0.0f64; n * n];
        for k in 0..rank {
            let (u, v) = (householder_column(&a, k), householder_column(&b, k));
            for i in 0..n {
                for j in 0..n {
                    m[i * n + j] += u[i] * v[j];
                }
            }
        }
        m
    }

    #[test]
    fn a_64_by_64_matrix_of_rank_20_reads_rank_20() {
        // Within the sample's bounds nothing is sampled: erank, srank and stable rank are 20.
        let n = 64;
        let got = rank_of(RankOf::Update, &of_rank(n, 20), &[n, n], Some(4096));
        for (name, want) in [
            (m::UPDATE_ERANK, 20.0),
            (m::UPDATE_SRANK, 20.0),
            (m::UPDATE_STABLE_RANK, 20.0),
            (m::RANK_DIMS, 64.0),
            (UPDATE_ERANK_FRACTION, 20.0 / 64.0),
        ] {
            let v = got.get(name).copied().unwrap_or(f64::NAN);
            assert!(
                (v - want).abs() < 1e-6 * want,
                "{name}: got {v}, wanted {want}: {got:?}"
            );
        }
    }

    #[test]
    fn a_wide_matrix_is_read_at_a_stride_and_its_rank_bounds_the_sample() {
        // 512 x 384 of rank 20 (the first 384 columns of a 512 x 512 one): rows at stride 8
        // and columns at stride 3, a 64 x 128 sample, whose rank is at most 20; the metrics
        // are those of that sample taken out by hand.
        let (n, cols) = (512, 384);
        let full = of_rank(n, 20);
        let m: Vec<f64> = (0..n)
            .flat_map(|i| full[i * n..i * n + cols].to_vec())
            .collect();
        assert_eq!(
            (
                spectrum_stride(512, SPECTRUM_MAX_ROWS),
                spectrum_stride(384, SPECTRUM_MAX_COLS)
            ),
            ((8, 64), (3, 128))
        );
        let sample: Vec<f64> = (0..n)
            .step_by(8)
            .flat_map(|i| (0..cols).step_by(3).map(move |j| (i, j)))
            .map(|(i, j)| m[i * cols + j])
            .collect();
        let got = rank_of(RankOf::Update, &m, &[n, cols], Some(4096));
        let by_hand = rank_of(RankOf::Update, &sample, &[64, 128], Some(4096));
        assert_eq!(
            got, by_hand,
            "got {got:?}, wanted the hand-taken sample's {by_hand:?}"
        );
        assert_eq!(got[m::RANK_DIMS], 64.0);
        let (erank, srank) = (got[m::UPDATE_ERANK], got[m::UPDATE_SRANK]);
        assert!(erank > 1.0 && erank <= 20.0 + 1e-9, "erank {erank}");
        assert!(srank <= 20.0, "srank {srank}");
        // A 50,000 x 768 embedding (past the old caps) is measured too, as its sample.
        let big = vec![1.0f64; 4 * 3000];
        let got = rank_of(RankOf::Grad, &big, &[4, 3000], Some(10));
        let erank = got.get(m::GRAD_ERANK).copied().unwrap_or(f64::NAN);
        assert!((erank - 1.0).abs() < 1e-9, "{got:?}");
    }

    #[test]
    fn the_rank_bound_is_the_batch_when_the_batch_is_smaller() {
        // An update that is a sum of 4 outer products (an SGD step on a batch of 4) of a
        // 64 x 48 weight: full use of what the batch allows reads a fraction near 1, not 4/48.
        let (rows, cols, batch) = (64usize, 48usize, 4usize);
        let mut u = vec![0.0f64; rows * cols];
        for s in 0..batch {
            for i in 0..rows {
                for j in 0..cols {
                    let (x, y) = (
                        ((i * 7 + s * 13) % 11) as f64 - 5.0,
                        ((j * 5 + s * 3) % 7) as f64 - 3.0,
                    );
                    u[i * cols + j] += x * y;
                }
            }
        }
        let with = rank_of(RankOf::Update, &u, &[rows, cols], Some(batch));
        assert_eq!(with.get(m::RANK_DIMS), Some(&(batch as f64)));
        let fraction = with[UPDATE_ERANK_FRACTION];
        assert!(fraction > 0.5 && fraction <= 1.0 + 1e-9, "{with:?}");
        // Without the batch size the bound is unknown: no rank_dims, no fraction.
        let without = rank_of(RankOf::Update, &u, &[rows, cols], None);
        assert!(without.contains_key(m::UPDATE_ERANK));
        assert!(
            !without.contains_key(m::RANK_DIMS) && !without.contains_key(UPDATE_ERANK_FRACTION)
        );
    }

    #[test]
    fn a_long_output_is_read_at_a_stride_of_positions_and_units() {
        // (N=4, T=50, D=260): 200 positions at stride 4 (50 rows), 260 units at stride 3
        // (87 columns); row r, column c is position 4r, unit 3c.
        let values: Vec<f32> = (0..4 * 50 * 260).map(|x| x as f32).collect();
        let t = TypedTensor::from_f32("act.x", values, vec![4, 50, 260]).unwrap();
        let (m, rows, cols) = feature_matrix(&t, 2).unwrap();
        assert_eq!((rows, cols), (50, 87));
        assert_eq!(m[cols + 2], (4 * 260 + 6) as f64);
    }

    #[test]
    fn an_ntd_output_is_read_as_positions_by_features() {
        // (N=2, T=3, D=4) with the unit axis last: 6 rows of 4; as NCHW-like (axis 1) it is
        // (N·D=8) rows of T=3 units.
        let values: Vec<f32> = (0..24).map(|x| x as f32).collect();
        let t = TypedTensor::from_f32("act.x", values, vec![2, 3, 4]).unwrap();
        let (m, rows, cols) = feature_matrix(&t, 2).unwrap();
        assert_eq!((rows, cols), (6, 4));
        assert_eq!(&m[4..8], &[4.0, 5.0, 6.0, 7.0]);
        let (m, rows, cols) = feature_matrix(&t, 1).unwrap();
        assert_eq!((rows, cols), (8, 3));
        assert_eq!(&m[..3], &[0.0, 4.0, 8.0]);
        assert_eq!(&m[3..6], &[1.0, 5.0, 9.0]);
        assert_eq!(&m[12..15], &[12.0, 16.0, 20.0]);
    }
}

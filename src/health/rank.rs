//! Singular-value summaries: effective rank, srank_δ and stable rank, from singular values.
//!
//! Whoever has the singular values (an SVD of the update, the gradient or a feature matrix)
//! hands them here; this module computes no decomposition itself.

use super::measure::Metrics;
use somatize_verdict::metrics as m;

/// The δ of srank_δ (Kumar et al., ICLR 2021).
pub const SRANK_DELTA: f64 = 0.01;

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

/// Effective rank exp(−Σ p_k ln p_k), p_k = σ_k / Σσ (Roy & Vetterli 2007); `None` when
/// there is no positive finite singular value.
pub fn effective_rank(sv: &[f64]) -> Option<f64> {
    let total: f64 = usable(sv).sum();
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    let entropy: f64 = usable(sv)
        .filter(|s| *s > 0.0)
        .map(|s| {
            let p = s / total;
            -p * p.ln()
        })
        .sum();
    Some(entropy.exp())
}

/// srank_δ: the least k with Σ_{i≤k} σ_i / Σσ ≥ 1 − δ, σ in decreasing order.
pub fn srank(sv: &[f64], delta: f64) -> Option<f64> {
    let mut s: Vec<f64> = usable(sv).collect();
    let total: f64 = s.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    s.sort_by(|a, b| b.total_cmp(a));
    let mut run = 0.0;
    for (k, v) in s.iter().enumerate() {
        run += v;
        if run / total >= 1.0 - delta {
            return Some((k + 1) as f64);
        }
    }
    Some(s.len() as f64)
}

/// Stable rank ‖A‖²_F / σ²_max = Σσ² / σ²_max.
pub fn stable_rank(sv: &[f64]) -> Option<f64> {
    let max = usable(sv).fold(0.0f64, f64::max);
    (max > 0.0).then(|| usable(sv).map(|s| s * s).sum::<f64>() / (max * max))
}

fn usable(sv: &[f64]) -> impl Iterator<Item = f64> + '_ {
    sv.iter().copied().filter(|s| s.is_finite() && *s >= 0.0)
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

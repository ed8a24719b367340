//! Softmax cross-entropy over a batch of logits, in f64, with its gradient.

/// The mean cross-entropy of `logits` (`[batch, classes]`) against `labels`, and its
/// gradient with respect to the logits. Non-finite logits give a non-finite loss and
/// gradient, as they would in PyTorch; nothing panics.
pub fn cross_entropy(logits: &[f32], labels: &[usize], classes: usize) -> (f64, Vec<f32>) {
    let batch = labels.len().max(1) as f64;
    let mut loss = 0.0f64;
    let mut grad = Vec::with_capacity(logits.len());
    for (row, &label) in logits.chunks_exact(classes).zip(labels) {
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let exps: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        let target = row.get(label).map_or(f64::NAN, |&v| v as f64);
        loss += sum.ln() + max - target;
        for (k, e) in exps.iter().enumerate() {
            let p = e / sum - if k == label { 1.0 } else { 0.0 };
            grad.push((p / batch) as f32);
        }
    }
    (loss / batch, grad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_logits_cost_log_classes() {
        let (loss, grad) = cross_entropy(&[0.0; 6], &[0, 2], 3);
        assert!((loss - 3f64.ln()).abs() < 1e-12, "loss {loss}");
        let want = [
            -1.0 / 3.0,
            1.0 / 6.0,
            1.0 / 6.0,
            1.0 / 6.0,
            1.0 / 6.0,
            -1.0 / 3.0,
        ];
        for (g, w) in grad.iter().zip(want) {
            assert!(
                (*g as f64 - w).abs() < 1e-7,
                "grad {grad:?}, wanted {want:?}"
            );
        }
    }

    #[test]
    fn large_logits_stay_finite() {
        let (loss, _) = cross_entropy(&[1e30, 0.0, -1e30], &[1], 3);
        assert!((loss - 1e30).abs() / 1e30 < 1e-6, "loss {loss}");
    }

    #[test]
    fn non_finite_logits_give_a_non_finite_loss() {
        let (loss, _) = cross_entropy(&[f32::NAN, 0.0, 1.0], &[0], 3);
        assert!(!loss.is_finite());
        let (loss, _) = cross_entropy(&[f32::INFINITY, 0.0, 1.0], &[1], 3);
        assert!(!loss.is_finite());
    }
}

//! The metric vocabulary: the per-node numbers the record writes and the rules read, by name.

/// One metric: its name, what it is, and which flags read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The key in a node's metrics.
    pub name: &'static str,
    /// What the number is, precisely enough to compute it.
    pub meaning: &'static str,
    /// The flags whose rules read it (empty: recorded for people and figures only).
    pub used_by: &'static [&'static str],
}

pub const NAN: &str = "nan";
pub const INF: &str = "inf";
pub const NONFINITE: &str = "nonfinite";
pub const LOSS: &str = "loss";
pub const GRAD_NORM: &str = "grad_norm";
pub const GRAD_MEAN_ABS: &str = "grad_mean_abs";
pub const GRAD_ZERO_FRACTION: &str = "grad_zero_fraction";
pub const GRAD_NONFINITE: &str = "grad_nonfinite";
pub const PARAM_NORM: &str = "param_norm";
pub const PARAM_ABSMAX: &str = "param_absmax";
pub const PARAM_MEAN_ABS: &str = "param_mean_abs";
pub const UPDATE_NORM: &str = "update_norm";
pub const UPDATE_RATIO: &str = "update_ratio";
pub const ACT_MEAN: &str = "act_mean";
pub const ACT_VAR: &str = "act_var";
pub const ACT_MEAN_SQ: &str = "act_mean_sq";
pub const ACT_ZERO_FRACTION: &str = "act_zero_fraction";
pub const ACT_SATURATED_FRACTION: &str = "act_saturated_fraction";
pub const UNITS: &str = "units";
pub const UNIT_SAMPLES: &str = "unit_samples";
pub const DEAD_UNITS: &str = "dead_units";
pub const DEAD_UNIT_FRACTION: &str = "dead_unit_fraction";
pub const DORMANT_UNITS: &str = "dormant_units";
pub const DORMANT_UNIT_FRACTION: &str = "dormant_unit_fraction";
pub const SATURATED_UNITS: &str = "saturated_units";
pub const SATURATED_UNIT_FRACTION: &str = "saturated_unit_fraction";
pub const IGNORED_UNITS: &str = "ignored_units";
pub const IGNORED_UNIT_FRACTION: &str = "ignored_unit_fraction";
pub const RANK_DIMS: &str = "rank_dims";
pub const UPDATE_ERANK: &str = "update_erank";
pub const UPDATE_SRANK: &str = "update_srank";
pub const UPDATE_STABLE_RANK: &str = "update_stable_rank";
pub const GRAD_ERANK: &str = "grad_erank";
pub const GRAD_SRANK: &str = "grad_srank";
pub const FEATURE_ERANK: &str = "feature_erank";
pub const FEATURE_SRANK: &str = "feature_srank";
pub const CKA: &str = "cka";

/// Every metric the rules know, in the order docs/health.md lists them.
pub const VOCABULARY: &[Metric] = &[
    Metric { name: NAN, meaning: "count of NaN entries over every tensor of the node (params, grads, activation; the loss for the `loss` node)", used_by: &["NAN"] },
    Metric { name: INF, meaning: "count of +inf or -inf entries over the same tensors", used_by: &["INF"] },
    Metric { name: NONFINITE, meaning: "nan + inf", used_by: &[] },
    Metric { name: GRAD_NONFINITE, meaning: "count of NaN and ±inf entries in the node's parameter gradients alone (part of `nonfinite`): what a backward pass broke, told apart from what the forward did", used_by: &["NAN", "INF"] },
    Metric { name: LOSS, meaning: "the loss value of the forward (on the node `loss`); NaN or infinite raises NAN or INF", used_by: &["NAN", "INF"] },
    Metric { name: GRAD_NORM, meaning: "L2 (Frobenius) norm of all the node's parameter gradients together, over finite entries", used_by: &["VANISHING", "EXPLODING"] },
    Metric { name: GRAD_MEAN_ABS, meaning: "mean |g| over the finite entries of all the node's parameter gradients", used_by: &["VANISHING"] },
    Metric { name: GRAD_ZERO_FRACTION, meaning: "share of gradient entries exactly 0", used_by: &[] },
    Metric { name: PARAM_NORM, meaning: "L2 norm of all the node's parameters together", used_by: &[] },
    Metric { name: PARAM_ABSMAX, meaning: "max |w| over the node's parameters", used_by: &[] },
    Metric { name: PARAM_MEAN_ABS, meaning: "mean |w| over the node's parameters", used_by: &["LOSING_PLASTICITY"] },
    Metric { name: UPDATE_NORM, meaning: "||W_t - W_{t-1}||_F over all the node's parameters, the update actually applied", used_by: &[] },
    Metric { name: UPDATE_RATIO, meaning: "||W_t - W_{t-1}||_F / ||W_{t-1}||_F (absent when ||W_{t-1}|| is 0)", used_by: &["STALLED", "OVERSTEPPING"] },
    Metric { name: ACT_MEAN, meaning: "mean of the node's output over its finite entries", used_by: &[] },
    Metric { name: ACT_VAR, meaning: "average over units of each unit's variance over samples and positions (signal propagation plots)", used_by: &["MISSING_NORMALISATION"] },
    Metric { name: ACT_MEAN_SQ, meaning: "average over units of each unit's squared mean", used_by: &[] },
    Metric { name: ACT_ZERO_FRACTION, meaning: "share of output entries exactly 0", used_by: &[] },
    Metric { name: ACT_SATURATED_FRACTION, meaning: "tanh/sigmoid-like kinds only: share of output entries past 0.97 on the tanh scale (|y| > 0.97; sigmoid |2y - 1| > 0.97)", used_by: &["SATURATED"] },
    Metric { name: UNITS, meaning: "the node's width: units (N,D) or channels (N,C,...) of its output", used_by: &["DEAD_CHANNELS", "IGNORED_CHANNELS"] },
    Metric { name: UNIT_SAMPLES, meaning: "samples per unit of the node's output: its finite entries over its units (batch x positions)", used_by: &["DEAD", "DEAD_CHANNELS"] },
    Metric { name: DEAD_UNITS, meaning: "units whose activity frequency f_c (share of samples and positions with output > 0) is below 0.01", used_by: &["DEAD_CHANNELS"] },
    Metric { name: DEAD_UNIT_FRACTION, meaning: "dead_units / units", used_by: &["DEAD"] },
    Metric { name: DORMANT_UNITS, meaning: "units whose ReDo score mean|h_c| / mean_k mean|h_k| is at most 0.1", used_by: &[] },
    Metric { name: DORMANT_UNIT_FRACTION, meaning: "dormant_units / units", used_by: &["LOSING_PLASTICITY"] },
    Metric { name: SATURATED_UNITS, meaning: "tanh/sigmoid-like kinds only: units saturated on more than 99 % of their samples and positions", used_by: &[] },
    Metric { name: SATURATED_UNIT_FRACTION, meaning: "saturated_units / units", used_by: &["SATURATED"] },
    Metric { name: IGNORED_UNITS, meaning: "units not dormant whose contribution utility mean_k|W_next[k,c]| * mean|h_c| is at most 0.01 of the layer's mean utility (needs the next layer's weight)", used_by: &["IGNORED_CHANNELS"] },
    Metric { name: IGNORED_UNIT_FRACTION, meaning: "ignored_units / units", used_by: &[] },
    Metric { name: RANK_DIMS, meaning: "min(rows, columns) of the node's weight as a matrix (out x rest): the largest rank update_erank and grad_erank can have", used_by: &["NARROWING"] },
    Metric { name: UPDATE_ERANK, meaning: "effective rank exp(-sum p_k ln p_k), p_k = s_k / sum s, of the update W_t - W_{t-1} as a matrix (out x rest)", used_by: &["NARROWING"] },
    Metric { name: UPDATE_SRANK, meaning: "srank_0.01: least k with sum_{i<=k} s_i / sum s >= 0.99, of the update", used_by: &[] },
    Metric { name: UPDATE_STABLE_RANK, meaning: "||U||_F^2 / s_max^2 of the update", used_by: &[] },
    Metric { name: GRAD_ERANK, meaning: "effective rank of the gradient as a matrix; NARROWING reads it when update_erank is absent", used_by: &["NARROWING"] },
    Metric { name: GRAD_SRANK, meaning: "srank_0.01 of the gradient", used_by: &[] },
    Metric { name: FEATURE_ERANK, meaning: "effective rank of the node's output as a (samples x features) matrix", used_by: &["LOSING_PLASTICITY"] },
    Metric { name: FEATURE_SRANK, meaning: "srank_0.01 of the output as a (samples x features) matrix", used_by: &[] },
    Metric { name: CKA, meaning: "linear CKA (Kornblith et al. 2019) between this node's output and the output of a group declared apart from it, on the same inputs", used_by: &["LEAKAGE"] },
];

/// The metric with this name, if the vocabulary has it.
pub fn metric(name: &str) -> Option<&'static Metric> {
    VOCABULARY.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_flags_known() {
        for (i, m) in VOCABULARY.iter().enumerate() {
            assert!(
                VOCABULARY[..i].iter().all(|o| o.name != m.name),
                "{} twice",
                m.name
            );
            for f in m.used_by {
                assert!(crate::is_flag(f), "{} is used by unknown flag {f}", m.name);
            }
        }
        assert_eq!(metric("grad_norm").map(|m| m.name), Some("grad_norm"));
        assert!(metric("gradnorm").is_none());
    }
}

//! Node kinds as the rules care about them: ReLU-like, tanh- or sigmoid-like, normalising, other.

/// What a node's kind means to the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindClass {
    /// Exactly zero below a threshold (ReLU, ReLU6, Threshold): a unit can die, so DEAD and
    /// DEAD_CHANNELS apply.
    ReluLike,
    /// Small but not zero, with a gradient, below zero (LeakyReLU, PReLU, ELU, SELU, GELU,
    /// SiLU, Mish, Hardswish, …): a unit goes dormant but does not die, so DEAD and
    /// DEAD_CHANNELS do not apply (dormant units count towards LOSING_PLASTICITY).
    SoftRelu,
    /// Bounded by ±1 (Tanh, Hardtanh, Softsign): SATURATED applies, judged at |y| > 0.97.
    TanhLike,
    /// Bounded by 0 and 1 (Sigmoid, Hardsigmoid): SATURATED applies, judged at |2y − 1| > 0.97.
    SigmoidLike,
    /// A normalisation layer (BatchNorm*, LayerNorm, GroupNorm, RMSNorm, …): it resets the
    /// stretch MISSING_NORMALISATION looks along, and its output is never called saturated.
    Norm,
    /// Anything else, including an unknown or empty kind.
    Other,
}

const RELU_LIKE: &[&str] = &["relu", "relu6", "threshold"];
const SOFT_RELU: &[&str] = &[
    "leakyrelu",
    "prelu",
    "rrelu",
    "elu",
    "selu",
    "celu",
    "gelu",
    "quickgelu",
    "silu",
    "swish",
    "mish",
    "hardswish",
];
const TANH_LIKE: &[&str] = &["tanh", "hardtanh", "softsign"];
const SIGMOID_LIKE: &[&str] = &["sigmoid", "hardsigmoid"];

/// The class of a kind as a graph names it: `ReLU`, `torch.nn.Tanh`, `nn::LayerNorm`,
/// `batch_norm`, `BatchNorm2d` all work (last path segment, case and `_` ignored).
pub fn classify(kind: &str) -> KindClass {
    let last = kind.rsplit(['.', ':', '/']).next().unwrap_or(kind);
    let k: String = last
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    if RELU_LIKE.contains(&k.as_str()) {
        KindClass::ReluLike
    } else if SOFT_RELU.contains(&k.as_str()) {
        KindClass::SoftRelu
    } else if TANH_LIKE.contains(&k.as_str()) {
        KindClass::TanhLike
    } else if SIGMOID_LIKE.contains(&k.as_str()) {
        KindClass::SigmoidLike
    } else if k.contains("norm") && !k.contains("normal") {
        KindClass::Norm
    } else {
        KindClass::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_kinds_graphs_name() {
        use KindClass::*;
        for (kind, want) in [
            ("ReLU", ReluLike),
            ("torch.nn.LeakyReLU", SoftRelu),
            ("GELU", SoftRelu),
            ("SiLU", SoftRelu),
            ("ReLU6", ReluLike),
            ("Tanh", TanhLike),
            ("Hardtanh", TanhLike),
            ("Sigmoid", SigmoidLike),
            ("BatchNorm2d", Norm),
            ("LayerNorm", Norm),
            ("nn::RMSNorm", Norm),
            ("group_norm", Norm),
            ("Linear", Other),
            ("Conv2d", Other),
            ("Normalizer", Other),
            ("", Other),
        ] {
            assert_eq!(classify(kind), want, "classify({kind:?})");
        }
    }
}

//! The demo conditions: one healthy network and six that go wrong in a named way.

use super::layer::{Init, LayerSpec};
use super::task::CLASSES;

/// A training setup and what is wrong with it: the network as declared, its learning rate
/// and seed, and the flags its record must raise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Condition {
    /// Short name, used as the run name (`healthy`, `vanishing`, …).
    pub name: &'static str,
    /// One line: what is wrong, and what it does to the numbers.
    pub description: &'static str,
    /// The flags the run raises, each the root of one fault, and nothing else (none for
    /// `healthy`).
    pub raises: &'static [&'static str],
    /// Flags that must show before the first NaN/Inf, folded under it (the exploding run's
    /// EXPLODING); empty for the others.
    pub before: &'static [&'static str],
    pub(crate) layers: &'static [LayerSpec],
    pub(crate) lr: f32,
    pub(crate) weight_decay: f32,
    pub(crate) seed: u64,
}

impl Condition {
    /// The network, in declaration order.
    pub fn layers(&self) -> &'static [LayerSpec] {
        self.layers
    }

    /// The SGD learning rate.
    pub fn lr(&self) -> f32 {
        self.lr
    }

    /// The SGD weight decay (L2 penalty added to every gradient, as PyTorch's `SGD`).
    pub fn weight_decay(&self) -> f32 {
        self.weight_decay
    }

    /// The seed the weights and the minibatches are drawn from.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

const fn linear(out: usize, init: Init) -> LayerSpec {
    LayerSpec::Linear {
        out,
        init,
        bias: 0.0,
    }
}

/// 2 → 64 → 3 ReLU MLP, He-initialised, PyTorch's default init on the output layer.
const RELU_MLP: &[LayerSpec] = &[
    linear(64, Init::He),
    LayerSpec::ReLU,
    linear(CLASSES, Init::Torch),
];

/// 2 → 32 → 32 → 3: a deeper ReLU MLP, He-initialised, for the run that explodes.
const DEEP_RELU_MLP: &[LayerSpec] = &[
    linear(32, Init::He),
    LayerSpec::ReLU,
    linear(32, Init::He),
    LayerSpec::ReLU,
    linear(CLASSES, Init::Torch),
];

/// The same MLP with every hidden bias at -4: most units never fire.
const DEAD_MLP: &[LayerSpec] = &[
    LayerSpec::Linear {
        out: 64,
        init: Init::He,
        bias: -4.0,
    },
    LayerSpec::ReLU,
    linear(CLASSES, Init::Torch),
];

/// A three-hidden-layer tanh MLP whose hidden weights are drawn with a gain of 200
/// (std 200/√fan_in instead of about 1/√fan_in).
const HOT_TANH: &[LayerSpec] = &[
    linear(32, Init::Gain(200.0)),
    LayerSpec::Tanh,
    linear(32, Init::Gain(200.0)),
    LayerSpec::Tanh,
    linear(32, Init::Gain(200.0)),
    LayerSpec::Tanh,
    linear(CLASSES, Init::Torch),
];

/// 2 → 64 → 3 with a LayerNorm (no learned gain or bias) before the ReLU: the first layer's
/// output is normalised, so the network cannot collapse when weight decay shrinks it.
const NORMED_MLP: &[LayerSpec] = &[
    linear(64, Init::He),
    LayerSpec::LayerNorm { affine: false },
    LayerSpec::ReLU,
    linear(CLASSES, Init::Torch),
];

/// Ten sigmoid layers deep, PyTorch's default init.
const DEEP_SIGMOID: &[LayerSpec] = &[
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(32, Init::Torch),
    LayerSpec::Sigmoid,
    linear(CLASSES, Init::Torch),
];

/// Every condition, healthy first.
pub const CONDITIONS: &[Condition] = &[
    Condition {
        name: "healthy",
        description: "ReLU MLP, He init, learning rate 0.05: the loss falls and nothing is wrong",
        raises: &[],
        before: &[],
        layers: RELU_MLP,
        lr: 0.05,
        weight_decay: 0.0,
        seed: 1,
    },
    Condition {
        name: "vanishing",
        description: "ten sigmoid layers: each multiplies the gradient by at most 1/4, so the \
                      first layers get almost none",
        raises: &["VANISHING"],
        before: &[],
        layers: DEEP_SIGMOID,
        lr: 0.1,
        weight_decay: 0.0,
        seed: 2,
    },
    Condition {
        name: "exploding",
        description: "learning rate 20 on a two-hidden-layer ReLU MLP: the weights blow up until \
                      the loss is NaN",
        raises: &["NAN"],
        before: &["EXPLODING"],
        layers: DEEP_RELU_MLP,
        lr: 20.0,
        weight_decay: 0.0,
        seed: 3,
    },
    Condition {
        name: "dead_relu",
        description: "hidden biases at -4: most ReLU units output 0 on every sample, so they pass \
                      no gradient and never learn again",
        raises: &["DEAD"],
        before: &[],
        layers: DEAD_MLP,
        lr: 0.05,
        weight_decay: 0.0,
        seed: 4,
    },
    Condition {
        name: "saturated",
        description: "tanh MLP with init gain 200: most units sit at ±1 on every sample, where \
                      the derivative is nothing",
        raises: &["SATURATED"],
        before: &[],
        layers: HOT_TANH,
        lr: 0.1,
        weight_decay: 0.0,
        seed: 5,
    },
    Condition {
        name: "stalled",
        description: "learning rate 1e-7 on the healthy MLP: each step moves the weights by less \
                      than a millionth of themselves",
        raises: &["STALLED"],
        before: &[],
        layers: RELU_MLP,
        lr: 1e-7,
        weight_decay: 0.0,
        seed: 6,
    },
    Condition {
        name: "overstepping",
        description: "learning rate 2 with weight decay 0.5 (lr × decay = 1): every step wipes \
                      each weight and writes the gradient step in its place, so each update is \
                      as large as the weights and nothing is learnt",
        raises: &["OVERSTEPPING"],
        before: &[],
        layers: NORMED_MLP,
        lr: 2.0,
        weight_decay: 0.5,
        seed: 7,
    },
];

//! The layers a demo network is made of, with a hand-written forward and backward pass each.
//!
//! Activations are row-major `[batch, width]`; a Linear weight is `[out, in]` as in PyTorch,
//! so `y = x Wᵀ + b`. Values are f32; every sum is accumulated in f64.

use super::rng::Rng;

/// How a Linear layer's weight is drawn (its bias is a constant, see [`LayerSpec::Linear`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// He (Kaiming) normal: std √(2 / fan_in), for ReLU layers.
    He,
    /// PyTorch's default for `nn.Linear`: uniform in ±1/√fan_in.
    Torch,
    /// Normal with std `gain / √fan_in`.
    Gain(f32),
}

/// One layer of a network, as declared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LayerSpec {
    /// A fully connected layer with `out` outputs, its weight drawn by `init` and every
    /// bias entry set to `bias`.
    Linear {
        out: usize,
        init: Init,
        bias: f32,
    },
    ReLU,
    Tanh,
    Sigmoid,
    /// Layer normalisation over the features; with `affine`, a learned gain (from 1) and
    /// bias (from 0) per feature, as PyTorch's `elementwise_affine`.
    LayerNorm {
        affine: bool,
    },
}

/// The epsilon LayerNorm adds to the variance, as PyTorch does.
pub const LN_EPS: f64 = 1e-5;

impl LayerSpec {
    /// The kind as PyTorch names the module class.
    pub fn kind(&self) -> &'static str {
        match self {
            LayerSpec::Linear { .. } => "Linear",
            LayerSpec::ReLU => "ReLU",
            LayerSpec::Tanh => "Tanh",
            LayerSpec::Sigmoid => "Sigmoid",
            LayerSpec::LayerNorm { .. } => "LayerNorm",
        }
    }

    /// The output width for an input of width `input`.
    pub fn width(&self, input: usize) -> usize {
        match self {
            LayerSpec::Linear { out, .. } => *out,
            _ => input,
        }
    }

    /// Fresh parameters `[weight, bias]` for an input of width `input` (none for activations).
    pub fn init(&self, input: usize, rng: &mut Rng) -> Vec<Vec<f32>> {
        match *self {
            LayerSpec::Linear { out, init, bias } => {
                let fan_in = input.max(1) as f64;
                let w = (0..out * input)
                    .map(|_| match init {
                        Init::He => ((2.0 / fan_in).sqrt() * rng.normal()) as f32,
                        Init::Torch => {
                            let a = 1.0 / fan_in.sqrt();
                            rng.range(-a, a) as f32
                        }
                        Init::Gain(g) => (g as f64 / fan_in.sqrt() * rng.normal()) as f32,
                    })
                    .collect();
                vec![w, vec![bias; out]]
            }
            LayerSpec::LayerNorm { affine: true } => vec![vec![1.0; input], vec![0.0; input]],
            _ => Vec::new(),
        }
    }
}

/// The output of `spec` on `x` (`[batch, input]`), given its parameters.
pub fn forward(spec: &LayerSpec, params: &[Vec<f32>], x: &[f32], input: usize) -> Vec<f32> {
    match spec {
        LayerSpec::Linear { out, .. } => linear_forward(&params[0], &params[1], x, input, *out),
        LayerSpec::ReLU => x.iter().map(|&v| relu(v)).collect(),
        LayerSpec::Tanh => x.iter().map(|&v| v.tanh()).collect(),
        LayerSpec::Sigmoid => x.iter().map(|&v| sigmoid(v)).collect(),
        LayerSpec::LayerNorm { .. } => layer_norm_forward(params, x, input),
    }
}

/// max(v, 0), passing NaN through as PyTorch does (`f32::max` would turn it into 0).
fn relu(v: f32) -> f32 {
    if v > 0.0 || v.is_nan() {
        v
    } else {
        0.0
    }
}

/// The logistic function, computed so that neither tail overflows.
fn sigmoid(v: f32) -> f32 {
    if v >= 0.0 {
        1.0 / (1.0 + (-v).exp())
    } else {
        let e = v.exp();
        e / (1.0 + e)
    }
}

fn linear_forward(w: &[f32], b: &[f32], x: &[f32], input: usize, out: usize) -> Vec<f32> {
    let mut y = Vec::with_capacity(x.len() / input.max(1) * out);
    for row in x.chunks_exact(input) {
        for (o, wrow) in w.chunks_exact(input).enumerate() {
            let dot: f64 = row
                .iter()
                .zip(wrow)
                .map(|(&a, &b)| a as f64 * b as f64)
                .sum();
            y.push((dot + b[o] as f64) as f32);
        }
    }
    y
}

/// Gain and bias of feature `i`: the parameters when there are any, else 1 and 0.
fn affine(params: &[Vec<f32>], i: usize) -> (f64, f64) {
    match params {
        [gain, bias] => (gain[i] as f64, bias[i] as f64),
        _ => (1.0, 0.0),
    }
}

fn layer_norm_forward(params: &[Vec<f32>], x: &[f32], width: usize) -> Vec<f32> {
    let mut y = Vec::with_capacity(x.len());
    for row in x.chunks_exact(width) {
        let (mean, inv) = row_moments(row);
        for (i, &v) in row.iter().enumerate() {
            let (gain, bias) = affine(params, i);
            y.push(((v as f64 - mean) * inv * gain + bias) as f32);
        }
    }
    y
}

/// A row's mean and 1/√(variance + ε).
fn row_moments(row: &[f32]) -> (f64, f64) {
    let n = row.len().max(1) as f64;
    let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, 1.0 / (var + LN_EPS).sqrt())
}

/// Given the layer's input `x`, output `y` and the loss gradient `dy` at its output, the
/// gradient at its input and the gradients of its parameters (in the order of `params`).
pub fn backward(
    spec: &LayerSpec,
    params: &[Vec<f32>],
    x: &[f32],
    y: &[f32],
    dy: &[f32],
    input: usize,
) -> (Vec<f32>, Vec<Vec<f32>>) {
    let each = |f: &dyn Fn(f32, f32) -> f32| -> Vec<f32> {
        y.iter().zip(dy).map(|(&y, &g)| f(y, g)).collect()
    };
    match spec {
        LayerSpec::Linear { out, .. } => linear_backward(&params[0], x, dy, input, *out),
        // As PyTorch's threshold_backward: the gradient passes where the output is above 0.
        LayerSpec::ReLU => (each(&|y, g| if y > 0.0 { g } else { 0.0 }), Vec::new()),
        LayerSpec::Tanh => (each(&|y, g| g * (1.0 - y * y)), Vec::new()),
        LayerSpec::Sigmoid => (each(&|y, g| g * y * (1.0 - y)), Vec::new()),
        LayerSpec::LayerNorm { .. } => layer_norm_backward(params, x, dy, input),
    }
}

fn linear_backward(
    w: &[f32],
    x: &[f32],
    dy: &[f32],
    input: usize,
    out: usize,
) -> (Vec<f32>, Vec<Vec<f32>>) {
    let mut dw = vec![0f64; out * input];
    let mut db = vec![0f64; out];
    let mut dx = Vec::with_capacity(x.len());
    let mut dx_row = vec![0f64; input];
    for (row, grow) in x.chunks_exact(input).zip(dy.chunks_exact(out)) {
        dx_row.fill(0.0);
        for ((o, &g), wrow) in grow.iter().enumerate().zip(w.chunks_exact(input)) {
            let g = g as f64;
            db[o] += g;
            let acc = &mut dw[o * input..(o + 1) * input];
            for (((a, &v), d), &wv) in acc.iter_mut().zip(row).zip(dx_row.iter_mut()).zip(wrow) {
                *a += g * v as f64;
                *d += g * wv as f64;
            }
        }
        dx.extend(dx_row.iter().map(|&d| d as f32));
    }
    let to32 = |v: Vec<f64>| v.into_iter().map(|a| a as f32).collect();
    (dx, vec![to32(dw), to32(db)])
}

fn layer_norm_backward(
    params: &[Vec<f32>],
    x: &[f32],
    dy: &[f32],
    width: usize,
) -> (Vec<f32>, Vec<Vec<f32>>) {
    let mut dgain = vec![0f64; width];
    let mut dbias = vec![0f64; width];
    let mut dx = Vec::with_capacity(x.len());
    let n = width.max(1) as f64;
    for (row, grow) in x.chunks_exact(width).zip(dy.chunks_exact(width)) {
        let (mean, inv) = row_moments(row);
        let xhat: Vec<f64> = row.iter().map(|&v| (v as f64 - mean) * inv).collect();
        let dxhat: Vec<f64> = (0..width)
            .map(|i| grow[i] as f64 * affine(params, i).0)
            .collect();
        for i in 0..width {
            dgain[i] += grow[i] as f64 * xhat[i];
            dbias[i] += grow[i] as f64;
        }
        let sum_d: f64 = dxhat.iter().sum();
        let sum_dx: f64 = dxhat.iter().zip(&xhat).map(|(a, b)| a * b).sum();
        for i in 0..width {
            dx.push((inv / n * (n * dxhat[i] - sum_d - xhat[i] * sum_dx)) as f32);
        }
    }
    let to32 = |v: Vec<f64>| v.into_iter().map(|a| a as f32).collect();
    let grads = if params.is_empty() {
        Vec::new()
    } else {
        vec![to32(dgain), to32(dbias)]
    };
    (dx, grads)
}

//! A tiny hand-written two-layer MLP the health tests train (fc1 → activation → fc2, MSE
//! against a linear teacher, plain SGD, seeded), with the recipes that make it sick.

use somatize::health::Step;
use somatize::tensor::TypedTensor;

/// The hidden activation.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Act {
    Relu,
    Tanh,
}

/// How a run is made: sizes, init scales, learning rate, and a sickness.
#[derive(Clone, Copy)]
pub struct Recipe {
    pub act: Act,
    pub lr: f32,
    pub steps: usize,
    /// Samples per step, inputs, hidden units, outputs.
    pub n: usize,
    pub i: usize,
    pub h: usize,
    pub o: usize,
    /// Multiplies fc1's He-style init.
    pub gain1: f32,
    /// Multiplies fc2's init.
    pub gain2: f32,
    /// fc1's bias at init.
    pub bias1: f32,
    /// How many of fc2's input columns are held at zero (pruned connections).
    pub pruned: usize,
    /// Stop after the first step whose loss is not finite.
    pub stop_at_nonfinite: bool,
    /// A new batch each step (drawn after the weights) rather than one batch drawn first.
    pub fresh_batches: bool,
}

/// A healthy run: ReLU, He init, lr 0.05, 12 steps over one batch of 64.
pub const HEALTHY: Recipe = Recipe {
    act: Act::Relu,
    lr: 0.05,
    steps: 12,
    n: 64,
    i: 8,
    h: 16,
    o: 2,
    gain1: 1.0,
    gain2: 1.0,
    bias1: 0.0,
    pruned: 0,
    stop_at_nonfinite: false,
    fresh_batches: false,
};

/// The parameters being trained.
struct Params {
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
}

/// Train by `r`, one dump per step: the parameters and their gradients before the step's
/// update, every node's output (`act.fc1`, `act.act`, `act.fc2`), and the loss.
pub fn train(r: Recipe) -> Vec<Step> {
    let (n, i, h, o) = (r.n, r.i, r.h, r.o);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let first = (!r.fresh_batches).then(|| rng.fill(n * i, 1.0));
    let teacher = rng.fill(o * i, 1.0);
    let mut p = Params {
        w1: rng.fill(h * i, (6.0 / i as f32).sqrt() * r.gain1),
        b1: vec![r.bias1; h],
        w2: rng.fill(o * h, (6.0 / h as f32).sqrt() * r.gain2),
        b2: vec![0.0; o],
    };
    let mut steps = Vec::new();
    for _ in 0..r.steps {
        let x = first.clone().unwrap_or_else(|| rng.fill(n * i, 1.0));
        let target = matmul_t(&x, &teacher, n, i, o);
        for row in p.w2.chunks_mut(h) {
            row[..r.pruned].iter_mut().for_each(|w| *w = 0.0);
        }
        let (step, grads, loss) = step(&r, &p, &x, &target);
        steps.push(step);
        if r.stop_at_nonfinite && !loss.is_finite() {
            break;
        }
        for (w, g) in [&mut p.w1, &mut p.b1, &mut p.w2, &mut p.b2]
            .into_iter()
            .zip(&grads)
        {
            w.iter_mut().zip(g).for_each(|(w, g)| *w -= r.lr * g);
        }
    }
    steps
}

/// One forward and backward pass: the step's dump, the gradients `[w1, b1, w2, b2]`, the loss.
fn step(r: &Recipe, p: &Params, x: &[f32], target: &[f32]) -> (Step, [Vec<f32>; 4], f32) {
    let (n, i, h, o) = (r.n, r.i, r.h, r.o);
    let mut z1 = matmul_t(x, &p.w1, n, i, h);
    z1.iter_mut()
        .enumerate()
        .for_each(|(k, z)| *z += p.b1[k % h]);
    let a: Vec<f32> = match r.act {
        Act::Relu => z1.iter().map(|z| z.max(0.0)).collect(),
        Act::Tanh => z1.iter().map(|z| z.tanh()).collect(),
    };
    let mut y = matmul_t(&a, &p.w2, n, h, o);
    y.iter_mut()
        .enumerate()
        .for_each(|(k, v)| *v += p.b2[k % o]);
    let scale = (n * o) as f32;
    let loss = y
        .iter()
        .zip(target)
        .map(|(p, t)| (p - t) * (p - t))
        .sum::<f32>()
        / scale;
    let dy: Vec<f32> = y
        .iter()
        .zip(target)
        .map(|(p, t)| 2.0 * (p - t) / scale)
        .collect();
    let mut gw2 = t_matmul(&dy, &a, n, o, h);
    for row in gw2.chunks_mut(h) {
        row[..r.pruned].iter_mut().for_each(|g| *g = 0.0);
    }
    let gb2 = column_sums(&dy, n, o);
    let mut dz1 = vec![0.0f32; n * h];
    for s in 0..n {
        for j in 0..h {
            let d: f32 = (0..o).map(|k| dy[s * o + k] * p.w2[k * h + j]).sum();
            dz1[s * h + j] = match r.act {
                Act::Relu if z1[s * h + j] > 0.0 => d,
                Act::Relu => 0.0,
                Act::Tanh => d * (1.0 - a[s * h + j] * a[s * h + j]),
            };
        }
    }
    let gw1 = t_matmul(&dz1, x, n, h, i);
    let gb1 = column_sums(&dz1, n, h);
    let step = Step::from([
        tensor("param.fc1.weight", p.w1.clone(), &[h, i]),
        tensor("param.fc1.bias", p.b1.clone(), &[h]),
        tensor("param.fc2.weight", p.w2.clone(), &[o, h]),
        tensor("param.fc2.bias", p.b2.clone(), &[o]),
        tensor("grad.fc1.weight", gw1.clone(), &[h, i]),
        tensor("grad.fc1.bias", gb1.clone(), &[h]),
        tensor("grad.fc2.weight", gw2.clone(), &[o, h]),
        tensor("grad.fc2.bias", gb2.clone(), &[o]),
        tensor("act.fc1", z1, &[n, h]),
        tensor("act.act", a, &[n, h]),
        tensor("act.fc2", y, &[n, o]),
        tensor("loss", vec![loss], &[]),
    ]);
    (step, [gw1, gb1, gw2, gb2], loss)
}

/// The sums over rows of an `n×c` matrix.
fn column_sums(m: &[f32], n: usize, c: usize) -> Vec<f32> {
    (0..c).map(|j| (0..n).map(|s| m[s * c + j]).sum()).collect()
}

/// A small seeded generator (xorshift64*), uniform in [-1, 1).
pub struct Rng(pub u64);

impl Rng {
    pub fn uniform(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let bits = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40;
        (bits as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    pub fn fill(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform() * scale).collect()
    }
}

/// `a (r×k) · bᵀ` for `b (c×k)`: r×c.
pub fn matmul_t(a: &[f32], b: &[f32], r: usize, k: usize, c: usize) -> Vec<f32> {
    let mut out = vec![0.0; r * c];
    for i in 0..r {
        for j in 0..c {
            out[i * c + j] = (0..k).map(|t| a[i * k + t] * b[j * k + t]).sum();
        }
    }
    out
}

/// `aᵀ · b` for `a (n×r)`, `b (n×c)`: r×c.
pub fn t_matmul(a: &[f32], b: &[f32], n: usize, r: usize, c: usize) -> Vec<f32> {
    let mut out = vec![0.0; r * c];
    for s in 0..n {
        for i in 0..r {
            for j in 0..c {
                out[i * c + j] += a[s * r + i] * b[s * c + j];
            }
        }
    }
    out
}

/// A keyed f32 tensor, as a step dump holds it.
pub fn tensor(key: &str, values: Vec<f32>, shape: &[usize]) -> (String, TypedTensor) {
    let t = TypedTensor::from_f32(key, values, shape.to_vec()).expect("shape matches");
    (key.to_string(), t)
}

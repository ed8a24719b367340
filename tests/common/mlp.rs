//! A tiny hand-written MLP toolkit the health tests train with: a seeded generator, the two
//! matrix products backprop needs, and a keyed f32 tensor.

use somatize::tensor::TypedTensor;

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

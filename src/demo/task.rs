//! The built-in task: a noisy three-armed spiral in the plane, classified into its arms.

use super::rng::Rng;

/// Number of classes (spiral arms).
pub const CLASSES: usize = 3;
/// Input features per sample (x and y).
pub const FEATURES: usize = 2;
/// Samples per arm.
pub const PER_CLASS: usize = 200;
/// The spiral's outer radius: √6 makes each feature's mean square about 1.
const RADIUS: f64 = 2.449_489_742_783_178;
/// Seed of the data set, shared by every condition so they all learn the same thing.
pub const DATA_SEED: u64 = 0x5eed_da7a;

/// A labelled data set, features row-major `[n, FEATURES]`.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub x: Vec<f32>,
    pub y: Vec<usize>,
}

impl Dataset {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

/// The spiral: arm `c` at radius r ∈ (0, 1] turns through angle 4r + 2πc/3, with Gaussian
/// angle noise of 0.3 radians so that neighbouring arms overlap near the centre (the best
/// possible loss is above zero, which keeps a healthy classifier's logits moderate).
/// Features are scaled to about unit variance.
pub fn spiral() -> Dataset {
    let mut rng = Rng::new(DATA_SEED);
    let n = PER_CLASS * CLASSES;
    let mut x = Vec::with_capacity(n * FEATURES);
    let mut y = Vec::with_capacity(n);
    for c in 0..CLASSES {
        for i in 0..PER_CLASS {
            let r = (i + 1) as f64 / PER_CLASS as f64;
            let turn = std::f64::consts::TAU * c as f64 / CLASSES as f64;
            let t = 4.0 * r + turn + 0.3 * rng.normal();
            x.push((RADIUS * r * t.cos()) as f32);
            x.push((RADIUS * r * t.sin()) as f32);
            y.push(c);
        }
    }
    Dataset { x, y }
}

/// A minibatch of `size` samples drawn with replacement: features `[size, FEATURES]`, labels.
pub fn batch(data: &Dataset, size: usize, rng: &mut Rng) -> (Vec<f32>, Vec<usize>) {
    let mut x = Vec::with_capacity(size * FEATURES);
    let mut y = Vec::with_capacity(size);
    for _ in 0..size {
        let i = rng.below(data.len());
        x.extend_from_slice(&data.x[i * FEATURES..(i + 1) * FEATURES]);
        y.push(data.y[i]);
    }
    (x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spiral_is_balanced_and_about_unit_scale() {
        let d = spiral();
        assert_eq!(d.len(), PER_CLASS * CLASSES);
        assert_eq!(d.x.len(), d.len() * FEATURES);
        for c in 0..CLASSES {
            let count = d.y.iter().filter(|&&y| y == c).count();
            assert_eq!(count, PER_CLASS, "class {c}");
        }
        let ms = d.x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / d.x.len() as f64;
        assert!((0.8..1.2).contains(&ms), "mean square {ms}");
    }

    #[test]
    fn batches_come_from_the_data() {
        let d = spiral();
        let (x, y) = batch(&d, 16, &mut Rng::new(1));
        assert_eq!((x.len(), y.len()), (32, 16));
        assert!(y.iter().all(|&c| c < CLASSES));
    }
}

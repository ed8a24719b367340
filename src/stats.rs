//! One-pass summary statistics of a tensor: counts, norms, moments and extremes, in f64.

use serde::{Deserialize, Serialize};

/// The statistics `somatize stats` prints for every tensor.
///
/// `count` is every element; `nonfinite` and `nan` count the ones that are not numbers;
/// the rest are taken over the finite values only, in f64, and are `None` when there are
/// none. `zero_fraction` is the share of all elements that are exactly zero. `std` is the
/// population standard deviation (numpy's default, `ddof=0`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: u64,
    pub nonfinite: u64,
    pub nan: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub l2: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub l1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub std: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub absmax: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub zero_fraction: Option<f64>,
}

/// Lanes of independent accumulators, so the compiler can keep several sums in flight.
const LANES: usize = 4;

/// A running one-pass accumulator behind [`Stats`]; feed it slices, merge partial ones.
///
/// The variance is accumulated around a shift (the first finite value seen) so that a
/// large mean does not cancel the spread away.
#[derive(Debug, Clone)]
pub struct Moments {
    count: u64,
    nan: u64,
    nonfinite: u64,
    zeros: u64,
    finite: u64,
    shift: Option<f64>,
    sum: f64,
    sum_shifted: f64,
    sum_sq_shifted: f64,
    sum_abs: f64,
    sum_sq: f64,
    min: f64,
    max: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            count: 0,
            nan: 0,
            nonfinite: 0,
            zeros: 0,
            finite: 0,
            shift: None,
            sum: 0.0,
            sum_shifted: 0.0,
            sum_sq_shifted: 0.0,
            sum_abs: 0.0,
            sum_sq: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

/// Per-lane partial sums of one block.
#[derive(Clone, Copy)]
struct Lanes {
    sum: [f64; LANES],
    shifted: [f64; LANES],
    sq_shifted: [f64; LANES],
    abs: [f64; LANES],
    sq: [f64; LANES],
    min: [f64; LANES],
    max: [f64; LANES],
    finite: [u64; LANES],
    zeros: [u64; LANES],
    nan: [u64; LANES],
}

impl Lanes {
    fn new() -> Self {
        Lanes {
            sum: [0.0; LANES],
            shifted: [0.0; LANES],
            sq_shifted: [0.0; LANES],
            abs: [0.0; LANES],
            sq: [0.0; LANES],
            min: [f64::INFINITY; LANES],
            max: [f64::NEG_INFINITY; LANES],
            finite: [0; LANES],
            zeros: [0; LANES],
            nan: [0; LANES],
        }
    }

    #[inline(always)]
    fn push(&mut self, lane: usize, x: f64, shift: f64) {
        // Branch-free, so that a block of lanes vectorises: non-finite values add nothing.
        let ok = x.is_finite();
        let v = if ok { x } else { 0.0 };
        let d = if ok { x - shift } else { 0.0 };
        let lo = if ok { x } else { f64::INFINITY };
        let hi = if ok { x } else { f64::NEG_INFINITY };
        self.sum[lane] += v;
        self.shifted[lane] += d;
        self.sq_shifted[lane] += d * d;
        self.abs[lane] += v.abs();
        self.sq[lane] += v * v;
        self.min[lane] = if lo < self.min[lane] {
            lo
        } else {
            self.min[lane]
        };
        self.max[lane] = if hi > self.max[lane] {
            hi
        } else {
            self.max[lane]
        };
        self.finite[lane] += ok as u64;
        self.zeros[lane] += (x == 0.0) as u64;
        self.nan[lane] += x.is_nan() as u64;
    }
}

/// Values converted to f64 at a time by [`Moments::push_slice`] and [`Moments::push_iter`].
const BLOCK: usize = 1024;

impl Moments {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add every value of a slice of any element type that converts to f64.
    pub fn push_slice<T: Copy + Into<f64>>(&mut self, values: &[T]) {
        let mut buf = [0f64; BLOCK];
        for chunk in values.chunks(BLOCK) {
            for (out, &v) in buf.iter_mut().zip(chunk) {
                *out = v.into();
            }
            self.push_f64(&buf[..chunk.len()]);
        }
    }

    /// Add every value of an iterator of f64.
    pub fn push_iter(&mut self, values: impl Iterator<Item = f64>) {
        let mut buf = [0f64; BLOCK];
        let mut n = 0;
        for x in values {
            buf[n] = x;
            n += 1;
            if n == BLOCK {
                self.push_f64(&buf);
                n = 0;
            }
        }
        self.push_f64(&buf[..n]);
    }

    /// Add every value of a slice of f64 (the fast path: lanes of independent sums).
    pub fn push_f64(&mut self, values: &[f64]) {
        let mut values = values;
        if self.shift.is_none() {
            // The first finite value becomes the shift; values before it only count.
            let first = values
                .iter()
                .position(|x| x.is_finite())
                .unwrap_or(values.len());
            for &x in &values[..first] {
                self.push_one(x);
            }
            values = &values[first..];
            self.shift = values.first().copied();
        }
        if values.is_empty() {
            return;
        }
        let shift = self.shift.unwrap_or(0.0);
        let mut lanes = Lanes::new();
        let mut blocks = values.chunks_exact(LANES);
        for block in &mut blocks {
            for (lane, &x) in block.iter().enumerate() {
                lanes.push(lane, x, shift);
            }
        }
        for (lane, &x) in blocks.remainder().iter().enumerate() {
            lanes.push(lane, x, shift);
        }
        self.absorb(&lanes, values.len() as u64);
    }

    fn push_one(&mut self, x: f64) {
        let mut lanes = Lanes::new();
        lanes.push(0, x, self.shift.unwrap_or(0.0));
        self.absorb(&lanes, 1);
    }

    fn absorb(&mut self, lanes: &Lanes, seen: u64) {
        let nan: u64 = lanes.nan.iter().sum();
        let finite: u64 = lanes.finite.iter().sum();
        self.count += seen;
        self.nan += nan;
        self.nonfinite += seen - finite;
        self.finite += finite;
        self.zeros += lanes.zeros.iter().sum::<u64>();
        self.sum += lanes.sum.iter().sum::<f64>();
        self.sum_shifted += lanes.shifted.iter().sum::<f64>();
        self.sum_sq_shifted += lanes.sq_shifted.iter().sum::<f64>();
        self.sum_abs += lanes.abs.iter().sum::<f64>();
        self.sum_sq += lanes.sq.iter().sum::<f64>();
        self.min = lanes.min.iter().fold(self.min, |a, &b| a.min(b));
        self.max = lanes.max.iter().fold(self.max, |a, &b| a.max(b));
    }

    /// The statistics of everything pushed so far.
    pub fn finish(&self) -> Stats {
        let n = self.finite as f64;
        let some = |v: f64| (self.finite > 0).then_some(v);
        let mean = self.sum / n;
        let shifted_mean = self.sum_shifted / n;
        let var = (self.sum_sq_shifted / n - shifted_mean * shifted_mean).max(0.0);
        Stats {
            count: self.count,
            nonfinite: self.nonfinite,
            nan: self.nan,
            l2: some(self.sum_sq.sqrt()),
            l1: some(self.sum_abs),
            mean: some(mean),
            std: some(var.sqrt()),
            min: some(self.min),
            max: some(self.max),
            absmax: some(self.min.abs().max(self.max.abs())),
            zero_fraction: (self.count > 0).then(|| self.zeros as f64 / self.count as f64),
        }
    }
}

/// The statistics of one slice, in one pass.
pub fn stats_of<T: Copy + Into<f64>>(values: &[T]) -> Stats {
    let mut m = Moments::new();
    m.push_slice(values);
    m.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy_on_values_with_nan_and_inf() {
        // numpy 2.4 over [1, nan, -inf, 2, 0, inf] (../shared/fixtures/with_nan_inf.npy).
        let s = stats_of(&[1.0f32, f32::NAN, f32::NEG_INFINITY, 2.0, 0.0, f32::INFINITY]);
        assert_eq!((s.count, s.nonfinite, s.nan), (6, 3, 1));
        assert_eq!(s.mean, Some(1.0));
        assert!(
            (s.std.unwrap() - 0.816496580927726).abs() < 1e-15,
            "std {:?}",
            s.std
        );
        assert!((s.l2.unwrap() - 2.23606797749979).abs() < 1e-15);
        assert_eq!((s.min, s.max, s.absmax), (Some(0.0), Some(2.0), Some(2.0)));
        assert!((s.zero_fraction.unwrap() - 1.0 / 6.0).abs() < 1e-15);
    }

    #[test]
    fn empty_has_counts_only() {
        let s = stats_of::<f32>(&[]);
        assert_eq!((s.count, s.nonfinite, s.nan), (0, 0, 0));
        assert_eq!((s.mean, s.l2, s.zero_fraction), (None, None, None));
    }

    #[test]
    fn a_large_mean_does_not_cancel_the_spread() {
        let v: Vec<f64> = (0..1000).map(|i| 1e9 + (i % 2) as f64).collect();
        let s = stats_of(&v);
        assert!((s.std.unwrap() - 0.5).abs() < 1e-9, "std {:?}", s.std);
    }

    #[test]
    fn merging_pushes_equals_one_push() {
        let v: Vec<f32> = (0..1001).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
        let mut m = Moments::new();
        m.push_slice(&v[..500]);
        m.push_slice(&v[500..]);
        let (a, b) = (m.finish(), stats_of(&v));
        assert_eq!(a.count, b.count);
        for (x, y) in [(a.mean, b.mean), (a.std, b.std), (a.l1, b.l1), (a.l2, b.l2)] {
            let (x, y) = (x.unwrap(), y.unwrap());
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0), "{x} vs {y}");
        }
    }

    #[test]
    fn lanes_agree_with_a_plain_loop_around_non_finite_values() {
        // Leading non-finite values (no shift yet), then a length that is not a multiple of 8.
        let mut v = vec![f64::NAN, f64::INFINITY];
        v.extend((0..1003).map(|i| {
            if i % 97 == 0 {
                f64::NAN
            } else {
                (i % 13) as f64 - 6.0
            }
        }));
        let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        let n = finite.len() as f64;
        let mean = finite.iter().sum::<f64>() / n;
        let var = finite.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let mut one_by_one = Moments::new();
        v.iter().for_each(|&x| one_by_one.push_f64(&[x]));
        for s in [stats_of(&v), one_by_one.finish()] {
            assert_eq!((s.count, s.nan, s.nonfinite), (1005, 12, 13));
            assert!(
                (s.mean.unwrap() - mean).abs() < 1e-12,
                "mean {:?} vs {mean}",
                s.mean
            );
            assert!(
                (s.std.unwrap() - var.sqrt()).abs() < 1e-12,
                "std {:?}",
                s.std
            );
            assert_eq!((s.min, s.max), (Some(-6.0), Some(6.0)));
        }
    }
}

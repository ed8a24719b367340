//! One-pass summary statistics of a tensor: counts, norms, moments and extremes, in f64.

use serde::{Deserialize, Serialize};

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) use simd128::sum_sq as simd_sum_sq;

/// A slice in one of the two float types the vector kernels take, or in another type.
pub enum Native<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    Other,
}

/// An element type the statistics take: anything that converts to f64 without loss; f32
/// and f64 slices are recognised (without copying) so that they can take the vector kernels.
pub trait Element: Copy + Into<f64> {
    /// The slice as f32 or f64 values, when it is one of those.
    fn native(_values: &[Self]) -> Native<'_> {
        Native::Other
    }
}

impl Element for f32 {
    fn native(values: &[f32]) -> Native<'_> {
        Native::F32(values)
    }
}

impl Element for f64 {
    fn native(values: &[f64]) -> Native<'_> {
        Native::F64(values)
    }
}

impl Element for i8 {}
impl Element for i16 {}
impl Element for i32 {}
impl Element for u8 {}
impl Element for u16 {}
impl Element for u32 {}
impl Element for bool {}

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

impl Stats {
    /// The counts, by name, in listing order (what `somatize stats` prints first).
    pub const COUNTS: [&'static str; 3] = ["count", "nonfinite", "nan"];
    /// The statistics over the finite values, by name, in listing order.
    pub const FLOATS: [&'static str; 8] = [
        "l2",
        "l1",
        "mean",
        "std",
        "min",
        "max",
        "absmax",
        "zero_fraction",
    ];

    /// The counts, in the order of [`Stats::COUNTS`].
    pub fn counts(&self) -> [u64; 3] {
        [self.count, self.nonfinite, self.nan]
    }

    /// The statistics over the finite values, in the order of [`Stats::FLOATS`].
    pub fn floats(&self) -> [Option<f64>; 8] {
        [
            self.l2,
            self.l1,
            self.mean,
            self.std,
            self.min,
            self.max,
            self.absmax,
            self.zero_fraction,
        ]
    }
}

/// Lanes of independent accumulators, so the compiler can keep several sums in flight.
const LANES: usize = 8;

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

/// Per-lane partial sums of one slice. Counts are kept as f64 lanes (exact below 2^53 per
/// lane) so that the whole block step stays in floating-point vector registers.
#[derive(Clone, Copy)]
struct Lanes {
    sum: [f64; LANES],
    shifted: [f64; LANES],
    sq_shifted: [f64; LANES],
    abs: [f64; LANES],
    sq: [f64; LANES],
    min: [f64; LANES],
    max: [f64; LANES],
    finite: [f64; LANES],
    zeros: [f64; LANES],
    nan: [f64; LANES],
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
            finite: [0.0; LANES],
            zeros: [0.0; LANES],
            nan: [0.0; LANES],
        }
    }

    /// One value into one lane, branch-free so that a block of lanes vectorises.
    #[inline(always)]
    fn push(&mut self, lane: usize, x: f64, shift: f64) {
        let ok = x.abs() < f64::INFINITY; // false for NaN and for ±inf
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
        self.finite[lane] += if ok { 1.0 } else { 0.0 };
        self.zeros[lane] += if x == 0.0 { 1.0 } else { 0.0 };
        #[allow(clippy::eq_op)]
        let is_nan = x != x;
        self.nan[lane] += if is_nan { 1.0 } else { 0.0 };
    }

    /// One value into one lane, assuming it is finite (see [`Lanes::push_all_plain`]).
    #[inline(always)]
    fn push_plain(&mut self, lane: usize, x: f64, shift: f64) {
        let d = x - shift;
        self.sum[lane] += x;
        self.shifted[lane] += d;
        self.sq_shifted[lane] += d * d;
        self.abs[lane] += x.abs();
        self.sq[lane] += x * x;
        self.min[lane] = if x < self.min[lane] {
            x
        } else {
            self.min[lane]
        };
        self.max[lane] = if x > self.max[lane] {
            x
        } else {
            self.max[lane]
        };
        self.finite[lane] += 1.0;
        self.zeros[lane] += if x == 0.0 { 1.0 } else { 0.0 };
    }

    /// Whether every sum is finite: then no value was NaN or infinite, and the plain
    /// pass is exact (a non-finite value always makes `sq` non-finite).
    fn sums_finite(&self) -> bool {
        let all = |v: &[f64; LANES]| v.iter().all(|x| x.is_finite());
        all(&self.sum) && all(&self.shifted) && all(&self.sq_shifted) && all(&self.sq)
    }

    /// Like [`Lanes::push_all`] but without the per-value finiteness masks; the caller
    /// checks [`Lanes::sums_finite`] afterwards and redoes the slice masked if not.
    #[inline(always)]
    fn push_all_plain<T: Copy + Into<f64>>(&mut self, values: &[T], shift: f64) {
        let mut l = *self;
        let blocks = values.chunks_exact(LANES);
        let tail = blocks.remainder();
        for block in blocks {
            for (lane, &x) in block.iter().enumerate() {
                l.push_plain(lane, x.into(), shift);
            }
        }
        for (lane, &x) in tail.iter().enumerate() {
            l.push_plain(lane, x.into(), shift);
        }
        *self = l;
    }

    /// Every value of a slice: the plain pass, and the masked one only when a value was
    /// not finite.
    #[inline(always)]
    fn push_any<T: Copy + Into<f64>>(&mut self, values: &[T], shift: f64) {
        let mut plain = Lanes::new();
        plain.push_all_plain(values, shift);
        if plain.sums_finite() {
            *self = plain;
        } else {
            self.push_all(values, shift);
        }
    }

    /// Every value of a slice, a block of [`LANES`] at a time, then the tail.
    #[inline(always)]
    fn push_all<T: Copy + Into<f64>>(&mut self, values: &[T], shift: f64) {
        // Work on a local copy so the accumulators can live in registers.
        let mut l = *self;
        let blocks = values.chunks_exact(LANES);
        let tail = blocks.remainder();
        for block in blocks {
            for (lane, &x) in block.iter().enumerate() {
                l.push(lane, x.into(), shift);
            }
        }
        for (lane, &x) in tail.iter().enumerate() {
            l.push(lane, x.into(), shift);
        }
        *self = l;
    }
}

/// [`Lanes::push_any`] compiled for AVX2, chosen at run time where the CPU has it.
///
/// # Safety
/// The caller must have checked that the CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn push_any_avx2<T: Copy + Into<f64>>(lanes: &mut Lanes, values: &[T], shift: f64) {
    lanes.push_any(values, shift)
}

/// The totals of one slice, ready to be folded into [`Moments`].
#[derive(Debug, Clone, Copy)]
struct Totals {
    finite: u64,
    nan: u64,
    zeros: u64,
    sum: f64,
    shifted: f64,
    sq_shifted: f64,
    abs: f64,
    sq: f64,
    min: f64,
    max: f64,
}

impl Lanes {
    /// The lanes added up.
    fn totals(&self) -> Totals {
        let count = |v: &[f64; LANES]| v.iter().sum::<f64>() as u64;
        let add = |v: &[f64; LANES]| v.iter().sum::<f64>();
        Totals {
            finite: count(&self.finite),
            nan: count(&self.nan),
            zeros: count(&self.zeros),
            sum: add(&self.sum),
            shifted: add(&self.shifted),
            sq_shifted: add(&self.sq_shifted),
            abs: add(&self.abs),
            sq: add(&self.sq),
            min: self.min.iter().fold(f64::INFINITY, |a, &b| a.min(b)),
            max: self.max.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b)),
        }
    }
}

/// The totals of a slice around `shift`, with the fastest kernel the target has: AVX2
/// natively where the CPU has it, 128-bit SIMD in wasm for f32 and f64, else portable lanes.
fn totals_of<T: Element>(values: &[T], shift: f64) -> Totals {
    let mut lanes = Lanes::new();
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        if let Some(t) = simd128::plain_totals(T::native(values), shift) {
            return t;
        }
        // The vector kernel declined: another type (taken plain, then masked if need be),
        // or a value that is not finite (rare: the masked pass ends up taking it).
        lanes.push_any(values, shift);
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected just above.
            unsafe { push_any_avx2(&mut lanes, values, shift) };
        } else {
            lanes.push_any(values, shift);
        }
    }
    #[cfg(not(any(
        target_arch = "x86_64",
        all(target_arch = "wasm32", target_feature = "simd128")
    )))]
    lanes.push_any(values, shift);
    lanes.totals()
}

impl Moments {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add every value of a slice of any element type that converts to f64.
    pub fn push_slice<T: Element>(&mut self, values: &[T]) {
        let mut values = values;
        if self.shift.is_none() {
            // The first finite value becomes the shift; the values before it only count.
            while let Some((&x, rest)) = values.split_first() {
                let x: f64 = x.into();
                if x.is_finite() {
                    self.shift = Some(x);
                    break;
                }
                self.push_one(x);
                values = rest;
            }
        }
        let totals = totals_of(values, self.shift.unwrap_or(0.0));
        self.absorb(&totals, values.len() as u64);
    }

    /// Add every value of an f64 slice (a chunk converted to f64 on its way in).
    pub fn push_f64(&mut self, values: &[f64]) {
        self.push_slice(values);
    }

    /// Add every value of an iterator of f64.
    pub fn push_iter(&mut self, values: impl Iterator<Item = f64>) {
        let mut buf = [0f64; 1024];
        let mut n = 0;
        for x in values {
            buf[n] = x;
            n += 1;
            if n == buf.len() {
                self.push_slice(&buf);
                n = 0;
            }
        }
        self.push_slice(&buf[..n]);
    }

    fn push_one(&mut self, x: f64) {
        let mut lanes = Lanes::new();
        lanes.push(0, x, self.shift.unwrap_or(0.0));
        self.absorb(&lanes.totals(), 1);
    }

    fn absorb(&mut self, t: &Totals, seen: u64) {
        self.count += seen;
        self.nan += t.nan;
        self.nonfinite += seen - t.finite;
        self.finite += t.finite;
        self.zeros += t.zeros;
        self.sum += t.sum;
        self.sum_shifted += t.shifted;
        self.sum_sq_shifted += t.sq_shifted;
        self.sum_abs += t.abs;
        self.sum_sq += t.sq;
        self.min = self.min.min(t.min);
        self.max = self.max.max(t.max);
    }

    /// Fold in another accumulator's values, as if they had been pushed after this one's
    /// (for splitting one tensor across threads; the other's shift is moved onto ours).
    pub fn merge(&mut self, other: &Moments) {
        self.count += other.count;
        self.nan += other.nan;
        self.nonfinite += other.nonfinite;
        self.zeros += other.zeros;
        self.sum += other.sum;
        self.sum_abs += other.sum_abs;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        match (self.shift, other.shift) {
            (_, None) => {}
            (None, Some(_)) => {
                self.shift = other.shift;
                self.sum_shifted = other.sum_shifted;
                self.sum_sq_shifted = other.sum_sq_shifted;
            }
            (Some(mine), Some(theirs)) => {
                // Their deviations d = x - theirs are d + delta around ours.
                let delta = theirs - mine;
                let n = other.finite as f64;
                self.sum_sq_shifted +=
                    other.sum_sq_shifted + 2.0 * delta * other.sum_shifted + n * delta * delta;
                self.sum_shifted += other.sum_shifted + n * delta;
            }
        }
        self.finite += other.finite;
    }

    /// Every value pushed, finite or not.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The finite values pushed.
    pub fn finite(&self) -> u64 {
        self.finite
    }

    /// The NaNs pushed.
    pub fn nan(&self) -> u64 {
        self.nan
    }

    /// The zeros pushed.
    pub fn zeros(&self) -> u64 {
        self.zeros
    }

    /// Σx² over the finite values.
    pub fn sum_sq(&self) -> f64 {
        self.sum_sq
    }

    /// Σ|x| over the finite values.
    pub fn sum_abs(&self) -> f64 {
        self.sum_abs
    }

    /// How many numbers [`Moments::to_fields`] writes.
    pub const FIELDS: usize = 13;

    /// The accumulator as plain numbers (counts are exact up to 2^53; no shift is NaN), so
    /// that one accumulated elsewhere (another wasm instance) can be handed back.
    pub fn to_fields(&self) -> [f64; Self::FIELDS] {
        [
            self.count as f64,
            self.nan as f64,
            self.nonfinite as f64,
            self.zeros as f64,
            self.finite as f64,
            self.shift.unwrap_or(f64::NAN),
            self.sum,
            self.sum_shifted,
            self.sum_sq_shifted,
            self.sum_abs,
            self.sum_sq,
            self.min,
            self.max,
        ]
    }

    /// An accumulator from [`Moments::to_fields`]; `None` when there are not
    /// [`Moments::FIELDS`] numbers or a count is not a whole number in range.
    pub fn from_fields(f: &[f64]) -> Option<Moments> {
        let f: &[f64; Self::FIELDS] = f.try_into().ok()?;
        let [count, nan, nonfinite, zeros, finite] = [f[0], f[1], f[2], f[3], f[4]].map(count_of);
        Some(Moments {
            count: count?,
            nan: nan?,
            nonfinite: nonfinite?,
            zeros: zeros?,
            finite: finite?,
            shift: (!f[5].is_nan()).then_some(f[5]),
            sum: f[6],
            sum_shifted: f[7],
            sum_sq_shifted: f[8],
            sum_abs: f[9],
            sum_sq: f[10],
            min: f[11],
            max: f[12],
        })
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

/// A count handed back as a float: a whole number from 0 to 2^53, else `None`.
pub(crate) fn count_of(x: f64) -> Option<u64> {
    (x >= 0.0 && x <= (1u64 << 53) as f64 && x.fract() == 0.0).then_some(x as u64)
}

/// The statistics of one slice, in one pass.
pub fn stats_of<T: Element>(values: &[T]) -> Stats {
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
    fn merging_accumulators_equals_one_push() {
        let v: Vec<f64> = (0..3001)
            .map(|i| ((i * 37) % 101) as f64 * 0.5 + 3.0)
            .collect();
        let mut parts = [Moments::new(), Moments::new(), Moments::new()];
        parts[0].push_slice(&[f64::NAN]);
        parts[1].push_slice(&v[..1200]);
        parts[2].push_slice(&v[1200..]);
        let mut m = Moments::new();
        parts.iter().for_each(|p| m.merge(p));
        let mut whole = vec![f64::NAN];
        whole.extend(&v);
        let (a, b) = (m.finish(), stats_of(&whole));
        assert_eq!(
            (a.count, a.nan, a.min, a.max),
            (b.count, b.nan, b.min, b.max)
        );
        for (x, y) in [(a.mean, b.mean), (a.std, b.std), (a.l1, b.l1), (a.l2, b.l2)] {
            let (x, y) = (x.unwrap(), y.unwrap());
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0), "{x} vs {y}");
        }
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
    fn an_accumulator_survives_its_fields_and_bad_fields_are_refused() {
        let mut m = Moments::new();
        m.push_slice(&[f32::NAN, 3.0, -1.5, 0.0, f32::INFINITY]);
        let back = Moments::from_fields(&m.to_fields()).expect("its own fields");
        assert_eq!(format!("{:?}", back.finish()), format!("{:?}", m.finish()));
        let empty = Moments::from_fields(&Moments::new().to_fields()).expect("empty");
        assert_eq!(empty.shift, None, "no shift travels as NaN");
        let good = m.to_fields();
        let mut bad: Vec<(&str, Vec<f64>)> = vec![("short", good[..12].to_vec())];
        for (what, at, x) in [
            ("negative", 0, -1.0),
            ("fractional", 4, 2.5),
            ("huge", 1, 1e300),
        ] {
            let mut f = good.to_vec();
            f[at] = x;
            bad.push((what, f));
        }
        for (what, f) in bad {
            assert!(Moments::from_fields(&f).is_none(), "{what} count was taken");
        }
    }
}

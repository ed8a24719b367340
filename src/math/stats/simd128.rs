//! The statistics kernels in wasm's 128-bit SIMD: f32 and f64 slices, assuming every value is finite.
//!
//! f32 values are loaded four at a time and widened to two f64x2 halves, so every sum is taken
//! in f64 as natively; minimum, maximum and zero count stay in the stored type, where they are
//! exact. The caller checks the sums: a value that is NaN or infinite always makes them
//! non-finite, and the slice is then summed again by the masked portable code.
//!
//! The fast kernel keeps three sums (x, |x|, x²) and derives the sums around the shift from the
//! slice's own mean and spread (`Σx² − mean·Σx`). That is exact enough only while the mean is
//! not large against the spread ([`SPREAD_SHARE`]); otherwise the slice is summed again around
//! the shift, as the five-sum kernel always did.

use super::{Native, Totals};
use core::arch::wasm32::*;

/// The running vector sums of one slice.
struct Acc {
    sum: v128,
    shifted: v128,
    sq_shifted: v128,
    abs: v128,
    sq: v128,
}

impl Acc {
    fn new() -> Self {
        let z = f64x2_splat(0.0);
        Acc {
            sum: z,
            shifted: z,
            sq_shifted: z,
            abs: z,
            sq: z,
        }
    }

    /// Four values, as two f64x2 halves, into the sums. The halves are added together
    /// before they reach an accumulator, so each sum waits on one addition per four values.
    #[inline(always)]
    fn push(&mut self, lo: v128, hi: v128, shift: v128) {
        let (dl, dh) = (f64x2_sub(lo, shift), f64x2_sub(hi, shift));
        let pair = |a: v128, b: v128| f64x2_add(a, b);
        self.sum = f64x2_add(self.sum, pair(lo, hi));
        self.shifted = f64x2_add(self.shifted, pair(dl, dh));
        let dd = pair(f64x2_mul(dl, dl), f64x2_mul(dh, dh));
        self.sq_shifted = f64x2_add(self.sq_shifted, dd);
        self.abs = f64x2_add(self.abs, pair(f64x2_abs(lo), f64x2_abs(hi)));
        self.sq = f64x2_add(self.sq, pair(f64x2_mul(lo, lo), f64x2_mul(hi, hi)));
    }

    /// One scalar (a tail value) into lane 0.
    fn push_one(&mut self, x: f64, shift: f64) {
        let d = x - shift;
        let add = |acc: &mut v128, v: f64| *acc = f64x2_add(*acc, f64x2(v, 0.0));
        add(&mut self.sum, x);
        add(&mut self.shifted, d);
        add(&mut self.sq_shifted, d * d);
        add(&mut self.abs, x.abs());
        add(&mut self.sq, x * x);
    }
}

/// Both lanes of an f64x2 added.
fn add_lanes(v: v128) -> f64 {
    f64x2_extract_lane::<0>(v) + f64x2_extract_lane::<1>(v)
}

/// The totals of an all-finite f32 or f64 slice; `None` for another type, or when a value
/// was not finite (a sum is then NaN or infinite).
pub(super) fn plain_totals(values: Native<'_>, shift: f64) -> Option<Totals> {
    let three = match values {
        Native::F32(v) => f32_three(v),
        Native::F64(v) => f64_three(v),
        Native::Other => return None,
    };
    if ![three.sum, three.abs, three.sq]
        .iter()
        .all(|s| s.is_finite())
    {
        return None;
    }
    if let Some(t) = three.around(shift) {
        return Some(t);
    }
    let t = match values {
        Native::F32(v) => f32_totals(v, shift),
        Native::F64(v) => f64_totals(v, shift),
        Native::Other => return None,
    };
    let sums = [t.sum, t.shifted, t.sq_shifted, t.abs, t.sq];
    sums.iter().all(|s| s.is_finite()).then_some(t)
}

/// The least share of `Σx²` the spread `Σ(x − mean)²` must be for the sums around the shift
/// to be derived from the three plain sums: the derivation loses about `1/SPREAD_SHARE` times
/// the rounding of `Σx²`, so at 1/16 a mean up to about four times the standard deviation
/// keeps the variance within ~1e-13 of the five-sum kernel's.
const SPREAD_SHARE: f64 = 1.0 / 16.0;

/// The three plain sums of a slice, with its extremes and zero count.
struct Three {
    n: usize,
    sum: f64,
    abs: f64,
    sq: f64,
    zeros: u64,
    min: f64,
    max: f64,
}

impl Three {
    /// The totals around `shift`, derived from the slice's mean `m` and spread `s`:
    /// `Σ(x − c) = n(m − c)` and `Σ(x − c)² = s + n(m − c)²`; `None` when the spread is too
    /// small a share of `Σx²` for that to be exact enough.
    fn around(&self, shift: f64) -> Option<Totals> {
        let n = self.n as f64;
        if self.n == 0 {
            return Some(self.totals(0.0, 0.0));
        }
        let mean = self.sum / n;
        let spread = self.sq - self.sum * mean;
        let enough = spread >= self.sq * SPREAD_SHARE; // false for NaN
        if !enough || self.sq == 0.0 && self.sum != 0.0 {
            return None;
        }
        let d = mean - shift;
        Some(self.totals(n * d, spread + n * d * d))
    }

    fn totals(&self, shifted: f64, sq_shifted: f64) -> Totals {
        Totals {
            finite: self.n as u64,
            nan: 0,
            zeros: self.zeros,
            sum: self.sum,
            shifted,
            sq_shifted,
            abs: self.abs,
            sq: self.sq,
            min: self.min,
            max: self.max,
        }
    }
}

/// Four f32 values from `q` (at least four long) in one unaligned 128-bit load.
#[inline(always)]
fn load4(q: &[f32]) -> v128 {
    assert!(q.len() >= 4);
    // SAFETY: `q` holds at least four f32 (16 bytes) from its start; wasm loads need no alignment.
    unsafe { v128_load(q.as_ptr().cast::<v128>()) }
}

/// The high two f32 lanes of `x` widened to f64.
#[inline(always)]
fn promote_high(x: v128) -> v128 {
    f64x2_promote_low_f32x4(i32x4_shuffle::<2, 3, 0, 1>(x, x))
}

/// Two f64x2 vectors added, and four added pairwise.
#[inline(always)]
fn add2(a: v128, b: v128) -> v128 {
    f64x2_add(a, b)
}

#[inline(always)]
fn add4(v: [v128; 4]) -> v128 {
    add2(add2(v[0], v[1]), add2(v[2], v[3]))
}

/// Eight values (four f64x2) into the three sums: each sum of eight is formed pairwise
/// before it reaches its accumulator.
#[inline(always)]
fn three_of8(acc: &mut [v128; 3], v: [v128; 4]) {
    acc[0] = add2(acc[0], add4(v));
    acc[1] = add2(acc[1], add4(v.map(|x| f64x2_abs(x))));
    acc[2] = add2(acc[2], add4(v.map(|x| f64x2_mul(x, x))));
}

/// Four values (two f64x2) into the three sums.
#[inline(always)]
fn three_of4(acc: &mut [v128; 3], a: v128, b: v128) {
    acc[0] = add2(acc[0], add2(a, b));
    acc[1] = add2(acc[1], add2(f64x2_abs(a), f64x2_abs(b)));
    acc[2] = add2(acc[2], add2(f64x2_mul(a, a), f64x2_mul(b, b)));
}

/// The sums of an f32 slice eight values at a time, then its tail.
fn f32_three(values: &[f32]) -> Three {
    let mut acc = [f64x2_splat(0.0); 3];
    let mut lo = f32x4_splat(f32::INFINITY);
    let mut hi = f32x4_splat(f32::NEG_INFINITY);
    let zero = f32x4_splat(0.0);
    let mut zeros = 0u64;
    let mut tail = Three::scalar(std::iter::empty());
    for block in values.chunks(BLOCK) {
        let octs = block.chunks_exact(8);
        let rest = octs.remainder();
        let mut z = i32x4_splat(0);
        for o in octs {
            let (x, y) = (load4(o), load4(&o[4..]));
            let (xl, xh) = (f64x2_promote_low_f32x4(x), promote_high(x));
            let (yl, yh) = (f64x2_promote_low_f32x4(y), promote_high(y));
            three_of8(&mut acc, [xl, xh, yl, yh]);
            lo = f32x4_pmin(f32x4_pmin(lo, x), y);
            hi = f32x4_pmax(f32x4_pmax(hi, x), y);
            z = i32x4_sub(z, i32x4_add(f32x4_eq(x, zero), f32x4_eq(y, zero)));
        }
        zeros += lane_sum_i32(z);
        tail.add(&Three::scalar(rest.iter().map(|&x| f64::from(x))));
    }
    let min = (0..4).fold(tail.min, |m, i| m.min(f64::from(f32_lane(lo, i))));
    let max = (0..4).fold(tail.max, |m, i| m.max(f64::from(f32_lane(hi, i))));
    Three {
        n: values.len(),
        sum: add_lanes(acc[0]) + tail.sum,
        abs: add_lanes(acc[1]) + tail.abs,
        sq: add_lanes(acc[2]) + tail.sq,
        zeros: zeros + tail.zeros,
        min,
        max,
    }
}

/// The sums of an f64 slice four values at a time, then its tail.
fn f64_three(values: &[f64]) -> Three {
    let mut acc = [f64x2_splat(0.0); 3];
    let mut lo = f64x2_splat(f64::INFINITY);
    let mut hi = f64x2_splat(f64::NEG_INFINITY);
    let zero = f64x2_splat(0.0);
    let mut z = i64x2_splat(0);
    let quads = values.chunks_exact(4);
    let tail = Three::scalar(quads.remainder().iter().copied());
    for q in quads {
        let (l, h) = (f64x2(q[0], q[1]), f64x2(q[2], q[3]));
        three_of4(&mut acc, l, h);
        lo = f64x2_pmin(f64x2_pmin(lo, l), h);
        hi = f64x2_pmax(f64x2_pmax(hi, l), h);
        z = i64x2_sub(i64x2_sub(z, f64x2_eq(l, zero)), f64x2_eq(h, zero));
    }
    let zeros = (i64x2_extract_lane::<0>(z) + i64x2_extract_lane::<1>(z)) as u64;
    let min = f64x2_extract_lane::<0>(lo).min(f64x2_extract_lane::<1>(lo));
    let max = f64x2_extract_lane::<0>(hi).max(f64x2_extract_lane::<1>(hi));
    Three {
        n: values.len(),
        sum: add_lanes(acc[0]) + tail.sum,
        abs: add_lanes(acc[1]) + tail.abs,
        sq: add_lanes(acc[2]) + tail.sq,
        zeros: zeros + tail.zeros,
        min: min.min(tail.min),
        max: max.max(tail.max),
    }
}

impl Three {
    /// The sums of a few values, one at a time.
    fn scalar(values: impl Iterator<Item = f64>) -> Three {
        let mut t = Three {
            n: 0,
            sum: 0.0,
            abs: 0.0,
            sq: 0.0,
            zeros: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        };
        for x in values {
            t.n += 1;
            t.sum += x;
            t.abs += x.abs();
            t.sq += x * x;
            t.zeros += u64::from(x == 0.0);
            t.min = if x < t.min { x } else { t.min };
            t.max = if x > t.max { x } else { t.max };
        }
        t
    }

    /// Fold in another's sums (its count is the caller's business).
    fn add(&mut self, other: &Three) {
        self.sum += other.sum;
        self.abs += other.abs;
        self.sq += other.sq;
        self.zeros += other.zeros;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// Totals of the sums, with the extremes and zero count found on the side.
fn totals(acc: &Acc, finite: usize, zeros: u64, min: f64, max: f64) -> Totals {
    Totals {
        finite: finite as u64,
        nan: 0,
        zeros,
        sum: add_lanes(acc.sum),
        shifted: add_lanes(acc.shifted),
        sq_shifted: add_lanes(acc.sq_shifted),
        abs: add_lanes(acc.abs),
        sq: add_lanes(acc.sq),
        min,
        max,
    }
}

/// Values per block, after which the 32-bit zero counters are flushed.
const BLOCK: usize = 1 << 20;

fn f32_totals(values: &[f32], shift: f64) -> Totals {
    let sh = f64x2_splat(shift);
    let mut acc = Acc::new();
    let mut lo = f32x4_splat(f32::INFINITY);
    let mut hi = f32x4_splat(f32::NEG_INFINITY);
    let zero = f32x4_splat(0.0);
    let mut zeros = 0u64;
    let mut tail_min = f64::INFINITY;
    let mut tail_max = f64::NEG_INFINITY;
    for block in values.chunks(BLOCK) {
        let quads = block.chunks_exact(4);
        let tail = quads.remainder();
        let mut z = i32x4_splat(0);
        for q in quads {
            let x = f32x4(q[0], q[1], q[2], q[3]);
            let high = i32x4_shuffle::<2, 3, 0, 1>(x, x);
            acc.push(
                f64x2_promote_low_f32x4(x),
                f64x2_promote_low_f32x4(high),
                sh,
            );
            lo = f32x4_pmin(lo, x);
            hi = f32x4_pmax(hi, x);
            z = i32x4_sub(z, f32x4_eq(x, zero));
        }
        zeros += lane_sum_i32(z);
        for &x in tail {
            let x = f64::from(x);
            acc.push_one(x, shift);
            tail_min = if x < tail_min { x } else { tail_min };
            tail_max = if x > tail_max { x } else { tail_max };
            zeros += u64::from(x == 0.0);
        }
    }
    let min = (0..4).fold(tail_min, |m, i| m.min(f64::from(f32_lane(lo, i))));
    let max = (0..4).fold(tail_max, |m, i| m.max(f64::from(f32_lane(hi, i))));
    totals(&acc, values.len(), zeros, min, max)
}

fn f64_totals(values: &[f64], shift: f64) -> Totals {
    let sh = f64x2_splat(shift);
    let mut acc = Acc::new();
    let mut lo = f64x2_splat(f64::INFINITY);
    let mut hi = f64x2_splat(f64::NEG_INFINITY);
    let zero = f64x2_splat(0.0);
    let mut zeros = 0u64;
    let mut z = i64x2_splat(0);
    let quads = values.chunks_exact(4);
    let tail = quads.remainder();
    for q in quads {
        let (l, h) = (f64x2(q[0], q[1]), f64x2(q[2], q[3]));
        acc.push(l, h, sh);
        lo = f64x2_pmin(f64x2_pmin(lo, l), h);
        hi = f64x2_pmax(f64x2_pmax(hi, l), h);
        z = i64x2_sub(i64x2_sub(z, f64x2_eq(l, zero)), f64x2_eq(h, zero));
    }
    zeros += (i64x2_extract_lane::<0>(z) + i64x2_extract_lane::<1>(z)) as u64;
    let mut min = f64x2_extract_lane::<0>(lo).min(f64x2_extract_lane::<1>(lo));
    let mut max = f64x2_extract_lane::<0>(hi).max(f64x2_extract_lane::<1>(hi));
    for &x in tail {
        acc.push_one(x, shift);
        min = min.min(x);
        max = max.max(x);
        zeros += u64::from(x == 0.0);
    }
    totals(&acc, values.len(), zeros, min, max)
}

fn lane_sum_i32(v: v128) -> u64 {
    let lanes = [
        i32x4_extract_lane::<0>(v),
        i32x4_extract_lane::<1>(v),
        i32x4_extract_lane::<2>(v),
        i32x4_extract_lane::<3>(v),
    ];
    lanes.iter().map(|&n| n as u64).sum()
}

fn f32_lane(v: v128, i: usize) -> f32 {
    match i {
        0 => f32x4_extract_lane::<0>(v),
        1 => f32x4_extract_lane::<1>(v),
        2 => f32x4_extract_lane::<2>(v),
        _ => f32x4_extract_lane::<3>(v),
    }
}

/// The sum of squares of an all-finite f32 or f64 slice (`None` for another type; the
/// caller checks the result is finite).
pub(crate) fn sum_sq(values: Native<'_>) -> Option<f64> {
    let (mut a, mut b) = (f64x2_splat(0.0), f64x2_splat(0.0));
    let mut tail_sum = 0.0;
    match values {
        Native::F32(v) => {
            // Eight values a step into four sums, so no add waits on the one before.
            let (mut c, mut d) = (f64x2_splat(0.0), f64x2_splat(0.0));
            let octs = v.chunks_exact(8);
            for &x in octs.remainder() {
                tail_sum += f64::from(x) * f64::from(x);
            }
            let sq = |x: v128| f64x2_mul(x, x);
            for o in octs {
                let (x, y) = (load4(o), load4(&o[4..]));
                a = f64x2_add(a, sq(f64x2_promote_low_f32x4(x)));
                b = f64x2_add(b, sq(promote_high(x)));
                c = f64x2_add(c, sq(f64x2_promote_low_f32x4(y)));
                d = f64x2_add(d, sq(promote_high(y)));
            }
            a = f64x2_add(a, c);
            b = f64x2_add(b, d);
        }
        Native::F64(v) => {
            let quads = v.chunks_exact(4);
            for &x in quads.remainder() {
                tail_sum += x * x;
            }
            for q in quads {
                let l = f64x2(q[0], q[1]);
                let h = f64x2(q[2], q[3]);
                a = f64x2_add(a, f64x2_mul(l, l));
                b = f64x2_add(b, f64x2_mul(h, h));
            }
        }
        Native::Other => return None,
    }
    Some(add_lanes(f64x2_add(a, b)) + tail_sum)
}

//! Reductions: the moment family read off one shared `Moments`, streaming accumulators for
//! sparsity, histograms and channel activity, and the ones that need the values in hand.

use super::OpError;
use crate::math::linalg;
use crate::math::stats::{Element, Stats};
use crate::observe::registry::Reduction;
use crate::observe::value::Value;

/// Whether a reduction is read off [`crate::math::stats::Moments`].
pub fn is_moment(r: &Reduction) -> bool {
    use Reduction::*;
    matches!(
        r,
        Count
            | Mean
            | Std
            | Var
            | Min
            | Max
            | Absmax
            | L1
            | L2
            | Rms
            | Nonfinite
            | Nan
            | ZeroFraction
    )
}

/// A moment-family reduction read off finished statistics (`None` for other reductions).
pub fn from_stats(r: &Reduction, s: &Stats) -> Option<Option<f64>> {
    let finite = s.count - s.nonfinite;
    Some(match r {
        Reduction::Count => Some(s.count as f64),
        Reduction::Nonfinite => Some(s.nonfinite as f64),
        Reduction::Nan => Some(s.nan as f64),
        Reduction::Mean => s.mean,
        Reduction::Std => s.std,
        Reduction::Var => s.std.map(|v| v * v),
        Reduction::Min => s.min,
        Reduction::Max => s.max,
        Reduction::Absmax => s.absmax,
        Reduction::L1 => s.l1,
        Reduction::L2 => s.l2,
        Reduction::Rms => s.l2.map(|l2| l2 / (finite as f64).sqrt()),
        Reduction::ZeroFraction => s.zero_fraction,
        _ => return None,
    })
}

/// Check that a reduction can take a (transformed) tensor of this shape.
pub fn check_shape(r: &Reduction, shape: &[usize]) -> Result<(), OpError> {
    let need = match r {
        Reduction::ChannelActivity if shape.len() < 2 => "2 or more dimensions (N,D or N,C,...)",
        Reduction::StableRank | Reduction::EffectiveRank | Reduction::Srank { .. }
            if shape.len() != 2 =>
        {
            "exactly 2 dimensions"
        }
        _ => return Ok(()),
    };
    Err(OpError::Shape {
        op: op_name(r).into(),
        shape: shape.to_vec(),
        need: need.into(),
    })
}

/// The registry name of a reduction, for messages.
pub fn op_name(r: &Reduction) -> &'static str {
    match r {
        Reduction::Count => "count",
        Reduction::Mean => "mean",
        Reduction::Std => "std",
        Reduction::Var => "var",
        Reduction::Min => "min",
        Reduction::Max => "max",
        Reduction::Absmax => "absmax",
        Reduction::L1 => "l1",
        Reduction::L2 => "l2",
        Reduction::Rms => "rms",
        Reduction::Nonfinite => "nonfinite",
        Reduction::Nan => "nan",
        Reduction::ZeroFraction => "zero_fraction",
        Reduction::Sparsity { .. } => "sparsity",
        Reduction::Quantiles(_) => "quantiles",
        Reduction::Histogram { .. } => "histogram",
        Reduction::ChannelActivity => "channel_activity",
        Reduction::StableRank => "stable_rank",
        Reduction::EffectiveRank => "effective_rank",
        Reduction::Srank { .. } => "srank",
    }
}

/// Whether a moment-type reduction needs only [`SumSqAcc`] (the common global-norm case).
pub fn is_light(r: &Reduction) -> bool {
    matches!(
        r,
        Reduction::L2 | Reduction::Rms | Reduction::Count | Reduction::Nonfinite
    )
}

const SQ_LANES: usize = 8;

/// The sum of squares of the finite values and the counts: all that `l2`, `rms`, `count`
/// and `nonfinite` need, at a fraction of the cost of full [`crate::math::stats::Moments`].
#[derive(Debug, Clone, Default)]
pub struct SumSqAcc {
    seen: u64,
    finite: u64,
    sum_sq: f64,
}

#[inline(always)]
fn sum_sq_lanes<T: Copy + Into<f64>>(values: &[T]) -> ([f64; SQ_LANES], [f64; SQ_LANES]) {
    let (mut sq, mut finite) = ([0.0; SQ_LANES], [0.0; SQ_LANES]);
    let blocks = values.chunks_exact(SQ_LANES);
    let tail = blocks.remainder();
    let mut push = |lane: usize, x: T| {
        let x: f64 = x.into();
        let ok = x.abs() < f64::INFINITY;
        let v = if ok { x } else { 0.0 };
        sq[lane] += v * v;
        finite[lane] += if ok { 1.0 } else { 0.0 };
    };
    for block in blocks {
        for (lane, &x) in block.iter().enumerate() {
            push(lane, x);
        }
    }
    for (lane, &x) in tail.iter().enumerate() {
        push(lane, x);
    }
    (sq, finite)
}

/// [`sum_sq_lanes`] compiled for AVX2.
///
/// # Safety
/// The caller must have checked that the CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_sq_lanes_avx2<T: Copy + Into<f64>>(
    values: &[T],
) -> ([f64; SQ_LANES], [f64; SQ_LANES]) {
    sum_sq_lanes(values)
}

/// Sum of squares per lane, assuming every value is finite.
#[inline(always)]
fn sum_sq_plain<T: Copy + Into<f64>>(values: &[T]) -> [f64; SQ_LANES] {
    let mut sq = [0.0; SQ_LANES];
    let blocks = values.chunks_exact(SQ_LANES);
    let tail = blocks.remainder();
    for block in blocks {
        for (lane, &x) in block.iter().enumerate() {
            let x: f64 = x.into();
            sq[lane] += x * x;
        }
    }
    for (lane, &x) in tail.iter().enumerate() {
        let x: f64 = x.into();
        sq[lane] += x * x;
    }
    sq
}

/// [`sum_sq_plain`] for f32 in AVX2 by hand: sixteen values a step into four independent
/// f64x4 sums (widened, squared, added: no FMA, so each square is rounded as in the portable
/// code), folded into the eight lanes at the end.
///
/// # Safety
/// The caller must have checked that the CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_sq_f32_avx2(values: &[f32]) -> [f64; SQ_LANES] {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_setzero_pd(); 4];
    let blocks = values.chunks_exact(16);
    let tail = blocks.remainder();
    for b in blocks {
        // Ask for the line 2 KiB ahead: one 64-byte line per step, the rate it is read at.
        _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().wrapping_add(512).cast::<i8>());
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: `b` holds sixteen f32, so `b[4k..4k+4]` is in bounds; the load is unaligned.
            let x = _mm256_cvtps_pd(unsafe { _mm_loadu_ps(b.as_ptr().add(4 * k)) });
            *a = _mm256_add_pd(*a, _mm256_mul_pd(x, x));
        }
    }
    let mut out = [0.0; SQ_LANES];
    let (lo, hi) = (_mm256_add_pd(acc[0], acc[2]), _mm256_add_pd(acc[1], acc[3]));
    // SAFETY: `out` holds eight f64: four from its start and four from index 4.
    unsafe {
        _mm256_storeu_pd(out.as_mut_ptr(), lo);
        _mm256_storeu_pd(out.as_mut_ptr().add(4), hi);
    }
    for (lane, &x) in tail.iter().enumerate() {
        out[lane % SQ_LANES] += f64::from(x) * f64::from(x);
    }
    out
}

/// [`sum_sq_plain`] compiled for AVX2.
///
/// # Safety
/// The caller must have checked that the CPU supports AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_sq_plain_avx2<T: Copy + Into<f64>>(values: &[T]) -> [f64; SQ_LANES] {
    sum_sq_plain(values)
}

impl SumSqAcc {
    /// How many numbers [`SumSqAcc::to_fields`] writes.
    pub const FIELDS: usize = 3;

    /// The accumulator as plain numbers (see [`crate::math::stats::Moments::to_fields`]).
    pub fn to_fields(&self) -> [f64; Self::FIELDS] {
        [self.seen as f64, self.finite as f64, self.sum_sq]
    }

    /// An accumulator from [`SumSqAcc::to_fields`]; `None` when malformed.
    pub fn from_fields(f: &[f64]) -> Option<SumSqAcc> {
        let &[seen, finite, sum_sq] = f else {
            return None;
        };
        Some(SumSqAcc {
            seen: crate::math::stats::count_of(seen)?,
            finite: crate::math::stats::count_of(finite)?,
            sum_sq,
        })
    }

    /// Fold in another accumulator's values.
    pub fn merge(&mut self, other: &SumSqAcc) {
        self.seen += other.seen;
        self.finite += other.finite;
        self.sum_sq += other.sum_sq;
    }

    /// Add values: a plain sum of squares first; only when it is not finite (a value was NaN
    /// or infinite, or the squares overflowed) the slice is summed again with masks.
    pub fn feed<T: Element>(&mut self, values: &[T]) {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        let sq = crate::math::stats::simd_sum_sq(T::native(values)).map_or_else(
            || sum_sq_plain(values),
            |s| [s, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        );
        #[cfg(target_arch = "x86_64")]
        let sq = if std::arch::is_x86_feature_detected!("avx2") {
            match T::native(values) {
                // SAFETY: AVX2 was detected just above.
                crate::math::stats::Native::F32(v) => unsafe { sum_sq_f32_avx2(v) },
                // SAFETY: AVX2 was detected just above.
                _ => unsafe { sum_sq_plain_avx2(values) },
            }
        } else {
            sum_sq_plain(values)
        };
        #[cfg(not(any(
            target_arch = "x86_64",
            all(target_arch = "wasm32", target_feature = "simd128")
        )))]
        let sq = sum_sq_plain(values);
        let total: f64 = sq.iter().sum();
        if total.is_finite() {
            self.seen += values.len() as u64;
            self.finite += values.len() as u64;
            self.sum_sq += total;
            return;
        }
        self.feed_masked(values);
    }

    fn feed_masked<T: Copy + Into<f64>>(&mut self, values: &[T]) {
        #[cfg(target_arch = "x86_64")]
        let (sq, finite) = if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected just above.
            unsafe { sum_sq_lanes_avx2(values) }
        } else {
            sum_sq_lanes(values)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (sq, finite) = sum_sq_lanes(values);
        self.seen += values.len() as u64;
        self.finite += finite.iter().sum::<f64>() as u64;
        self.sum_sq += sq.iter().sum::<f64>();
    }

    /// The value of a light reduction (see [`is_light`]); `None` for any other.
    pub fn value(&self, r: &Reduction) -> Option<Option<f64>> {
        let some = |v: f64| (self.finite > 0).then_some(v);
        Some(match r {
            Reduction::Count => Some(self.seen as f64),
            Reduction::Nonfinite => Some((self.seen - self.finite) as f64),
            Reduction::L2 => some(self.sum_sq.sqrt()),
            Reduction::Rms => some((self.sum_sq / self.finite as f64).sqrt()),
            _ => return None,
        })
    }
}

/// Counts `|x| <= eps` over every element.
#[derive(Debug, Clone)]
pub struct SparsityAcc {
    pub eps: f64,
    small: u64,
    seen: u64,
}

impl SparsityAcc {
    pub fn new(eps: f64) -> Self {
        SparsityAcc {
            eps,
            small: 0,
            seen: 0,
        }
    }

    pub fn feed(&mut self, values: &[f64]) {
        let eps = self.eps;
        self.small += values.iter().filter(|x| x.abs() <= eps).count() as u64;
        self.seen += values.len() as u64;
    }

    pub fn finish(&self) -> Option<f64> {
        (self.seen > 0).then(|| self.small as f64 / self.seen as f64)
    }
}

/// `numpy.histogram` over a fixed range, fed chunk by chunk.
#[derive(Debug, Clone)]
pub struct HistogramAcc {
    edges: Vec<f64>,
    counts: Vec<u64>,
}

impl HistogramAcc {
    /// Equal-width bins over `[lo, hi]`, edges as `numpy.linspace` makes them.
    pub fn new(bins: usize, lo: f64, hi: f64) -> Self {
        let step = (hi - lo) / bins as f64;
        let mut edges: Vec<f64> = (0..=bins).map(|i| i as f64 * step + lo).collect();
        edges[bins] = hi;
        HistogramAcc {
            edges,
            counts: vec![0; bins],
        }
    }

    pub fn feed(&mut self, values: &[f64]) {
        let bins = self.counts.len();
        let (lo, hi) = (self.edges[0], self.edges[bins]);
        let norm = bins as f64 / (hi - lo);
        for &x in values {
            if !(x >= lo && x <= hi) {
                continue; // outside the range, or NaN
            }
            let mut i = (((x - lo) * norm) as usize).min(bins - 1);
            // Like numpy: trust the edges over the arithmetic at the boundaries.
            if x < self.edges[i] {
                i -= 1;
            } else if i + 1 < bins && x >= self.edges[i + 1] {
                i += 1;
            }
            self.counts[i] += 1;
        }
    }

    pub fn finish(self) -> Value {
        Value::Histogram {
            edges: self.edges,
            counts: self.counts,
        }
    }
}

/// numpy's default histogram range over the finite values.
pub fn auto_range(values: &[f64]) -> (f64, f64) {
    let (lo, hi) = values
        .iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    if lo > hi {
        (0.0, 1.0)
    } else if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

/// Per channel, the share of entries > 0. The channel of element `i` is `(i / inner) % channels`.
#[derive(Debug, Clone)]
pub struct ChannelAcc {
    inner: usize,
    active: Vec<u64>,
    total: Vec<u64>,
    pos: usize,
}

impl ChannelAcc {
    /// For a tensor of this shape (2 or more dimensions; checked by [`check_shape`]).
    pub fn new(shape: &[usize]) -> Self {
        let (channels, inner) = if shape.len() == 2 {
            (shape[1], 1)
        } else {
            (
                shape.get(1).copied().unwrap_or(1),
                shape[2..].iter().product(),
            )
        };
        ChannelAcc {
            inner,
            active: vec![0; channels],
            total: vec![0; channels],
            pos: 0,
        }
    }

    pub fn feed(&mut self, mut values: &[f64]) {
        let channels = self.active.len();
        if channels == 0 || self.inner == 0 {
            return;
        }
        while !values.is_empty() {
            let channel = (self.pos / self.inner) % channels;
            let run = (self.inner - self.pos % self.inner).min(values.len());
            let (head, rest) = values.split_at(run);
            self.active[channel] += head.iter().filter(|&&x| x > 0.0).count() as u64;
            self.total[channel] += run as u64;
            self.pos += run;
            values = rest;
        }
    }

    pub fn finish(&self) -> Value {
        let shares = self
            .active
            .iter()
            .zip(&self.total)
            .map(|(&a, &t)| (t > 0).then(|| a as f64 / t as f64))
            .collect();
        Value::Vector(shares)
    }
}

/// numpy's default (`linear`) quantile of sorted values, with numpy's two-sided lerp.
fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let virtual_index = q * (n - 1) as f64;
    let lo = (virtual_index.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let t = virtual_index - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    let diff = b - a;
    Some(if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    })
}

/// Reduce values in hand (one group, of `shape`), for every reduction.
pub fn reduce_values(r: &Reduction, values: &[f64], shape: &[usize]) -> Result<Value, OpError> {
    check_shape(r, shape)?;
    if is_moment(r) {
        let stats = crate::math::stats::stats_of(values);
        return Ok(Value::Scalar(from_stats(r, &stats).flatten()));
    }
    Ok(match r {
        Reduction::Sparsity { eps } => {
            let mut acc = SparsityAcc::new(*eps);
            acc.feed(values);
            Value::Scalar(acc.finish())
        }
        Reduction::Quantiles(qs) => {
            let mut sorted: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
            sorted.sort_unstable_by(f64::total_cmp);
            Value::Vector(qs.iter().map(|&q| quantile_sorted(&sorted, q)).collect())
        }
        Reduction::Histogram { bins, range } => {
            let (lo, hi) = range.unwrap_or_else(|| auto_range(values));
            let mut acc = HistogramAcc::new(*bins, lo, hi);
            acc.feed(values);
            acc.finish()
        }
        Reduction::ChannelActivity => {
            let mut acc = ChannelAcc::new(shape);
            acc.feed(values);
            acc.finish()
        }
        Reduction::StableRank | Reduction::EffectiveRank | Reduction::Srank { .. } => {
            Value::Scalar(rank(r, values, shape[0], shape[1]))
        }
        _ => unreachable!("moment reductions returned above"),
    })
}

/// A rank of a matrix; `None` when it has non-finite entries or is all zeros.
fn rank(r: &Reduction, values: &[f64], rows: usize, cols: usize) -> Option<f64> {
    if values.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let sv = linalg::singular_values(values, rows, cols).ok()?;
    match r {
        Reduction::StableRank => linalg::stable_rank_of(&sv),
        Reduction::EffectiveRank => linalg::effective_rank_of(&sv),
        Reduction::Srank { delta } => linalg::srank_of(&sv, *delta).map(|k| k as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_edges_take_the_boundary_values() {
        // np.histogram([0, 0.25, 0.5, 1, 2, nan], bins=4, range=(0, 1))
        // -> counts [1, 1, 1, 1] (1 falls in the last bin, 2 and nan are dropped).
        let mut acc = HistogramAcc::new(4, 0.0, 1.0);
        acc.feed(&[0.0, 0.25, 0.5, 1.0, 2.0, f64::NAN]);
        match acc.finish() {
            Value::Histogram { edges, counts } => {
                assert_eq!(counts, vec![1, 1, 1, 1]);
                assert_eq!(edges, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
            }
            other => panic!("wanted a histogram, got {other:?}"),
        }
    }

    #[test]
    fn channel_activity_streams_across_chunks() {
        // shape (2, 2, 2): channel 0 holds elements 0,1,4,5; channel 1 holds 2,3,6,7.
        let v = [1.0, 0.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0];
        let mut acc = ChannelAcc::new(&[2, 2, 2]);
        acc.feed(&v[..3]);
        acc.feed(&v[3..]);
        assert_eq!(acc.finish(), Value::Vector(vec![Some(0.75), Some(0.25)]));
    }

    #[test]
    fn shape_errors_name_the_shape() {
        let e = reduce_values(&Reduction::StableRank, &[1.0, 2.0], &[2]).unwrap_err();
        assert!(
            e.to_string().contains("stable_rank") && e.to_string().contains("[2]"),
            "{e}"
        );
    }
}

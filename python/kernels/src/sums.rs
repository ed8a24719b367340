//! One-pass sums of a float32 tensor's entries: what `somatize.torch` sends of a parameter, a
//! gradient, an update and a layer's output, each read from memory once.
//!
//! Every kernel takes its entries a chunk at a time into `LANES` float32 accumulators (so that
//! the compiler keeps them in vector registers) and adds each chunk's lanes into float64 before
//! the next: no float32 sum runs over more than `CHUNK / LANES` entries, which keeps them within
//! about 1e-7 of an exact sum where a float32 accumulator over a whole tensor drifts (Adam's
//! first updates are ±lr everywhere). The order of every addition is fixed by the data alone,
//! never by the machine, so the same tensor gives the same bits on every CPU.

// The lane loops index by lane on purpose: the fixed-width form is what the compiler keeps in
// vector registers.
#![allow(clippy::needless_range_loop)]

/// The float32 accumulators a chunk is summed in.
pub const LANES: usize = 16;

/// Entries summed in float32 before their lanes are added into float64.
pub const CHUNK: usize = 1024;

/// Calls `$f` compiled for the widest vectors this CPU has (AVX2 and AVX-512 on x86-64, found
/// at run time; the wheel's baseline is SSE2). The lanes' arithmetic is the same in every
/// build (no fused multiply-adds), so every build gives the same bits.
macro_rules! dispatch {
    ($f:ident($($a:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        let r = {
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2")]
            fn wide512<T>(f: impl FnOnce() -> T) -> T {
                f()
            }
            #[target_feature(enable = "avx2")]
            fn wide256<T>(f: impl FnOnce() -> T) -> T {
                f()
            }
            if std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                // SAFETY: the CPU has the features this build of the call assumes.
                unsafe { wide512(move || $f($($a),*)) }
            } else if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                unsafe { wide256(move || $f($($a),*)) }
            } else {
                $f($($a),*)
            }
        };
        #[cfg(not(target_arch = "x86_64"))]
        let r = $f($($a),*);
        r
    }};
}

/// Rows of an output summed in float32 per unit before they are added into float64.
const ROWS: usize = 32;

/// A tensor's Σ|x|, max |x|, count of entries that are not zero, and Σx².
///
/// A NaN is skipped by the maximum and makes `sq` NaN; an infinity makes `sq` infinite: a
/// caller that finds `sq` not finite measures the tensor again, finite entries only.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AbsSums {
    /// Σ|x|.
    pub l1: f64,
    /// max |x| (0 for an empty tensor).
    pub absmax: f32,
    /// The entries that are not zero (exact at any size).
    pub nonzero: f64,
    /// Σx².
    pub sq: f64,
}

#[derive(Default)]
struct Lanes {
    l1: [f32; LANES],
    sq: [f32; LANES],
    max: [f32; LANES],
    nonzero: [f32; LANES],
}

impl Lanes {
    /// Adds `part` (at most `CHUNK` entries) to the lanes.
    #[inline(always)]
    fn feed(&mut self, part: &[f32]) {
        let mut whole = part.chunks_exact(LANES);
        for v in &mut whole {
            for j in 0..LANES {
                self.add(j, v[j]);
            }
        }
        for (j, &x) in whole.remainder().iter().enumerate() {
            self.add(j, x);
        }
    }

    /// Adds `x` to lane `j`.
    #[inline(always)]
    fn add(&mut self, j: usize, x: f32) {
        let a = x.abs();
        self.l1[j] += a;
        self.sq[j] += a * a;
        self.max[j] = if a > self.max[j] { a } else { self.max[j] };
        self.nonzero[j] += if a != 0.0 { 1.0 } else { 0.0 };
    }

    /// Adds the lanes into `into` and empties them (the maximum is kept).
    #[inline(always)]
    fn flush(&mut self, into: &mut AbsSums) {
        for j in 0..LANES {
            into.l1 += f64::from(self.l1[j]);
            into.sq += f64::from(self.sq[j]);
            into.nonzero += f64::from(self.nonzero[j]);
        }
        self.l1 = [0.0; LANES];
        self.sq = [0.0; LANES];
        self.nonzero = [0.0; LANES];
    }

    fn max(&self) -> f32 {
        self.max.iter().fold(0.0, |m, &a| if a > m { a } else { m })
    }
}

/// Where [`abs_sums`] writes besides its sums (`AbsOut::default()`: nowhere).
#[derive(Default)]
pub struct AbsOut<'a> {
    /// A copy of the entries (the same length), written chunk by chunk while it is in the cache.
    pub copy: Option<&'a mut [f32]>,
    /// Σ|x| of each column of the entries read as rows of `columns.len()` (its length divides
    /// the entries'), added into (float64).
    pub columns: Option<&'a mut [f64]>,
}

/// Σ|x|, max |x|, the count of non-zeros and Σx² of `x`, with `out`'s copy and column sums, in
/// one pass, on up to `threads` threads.
///
/// The entries are summed a segment (`SEGMENT`, whole rows with columns) at a time and the
/// segments' sums added in order, whatever the threads: the same bits on any number of them.
///
/// # Panics
/// If `out.copy`'s length differs from `x`'s, or `out.columns` is empty or its length does not
/// divide `x`'s (callers check: [`crate`]'s Python functions raise instead).
pub fn abs_sums(x: &[f32], out: AbsOut<'_>, threads: usize) -> AbsSums {
    if let Some(c) = &out.copy {
        assert_eq!(c.len(), x.len(), "copy of another length");
    }
    let width = out.columns.as_ref().map_or(0, |c| c.len());
    assert!(
        out.columns.is_none() || width > 0,
        "columns do not divide the entries"
    );
    // A segment is whole rows when columns are summed (each segment its own row of column
    // sums, added in order), so one wave of a few segments at a time holds only a few rows.
    let (step, wave) = if width == 0 {
        (SEGMENT, usize::MAX)
    } else {
        assert!(
            x.len().is_multiple_of(width),
            "columns do not divide the entries"
        );
        ((SEGMENT / width).max(1) * width, threads.max(1) * 2)
    };
    let mut copies = out.copy.map(|c| c.chunks_mut(step));
    let mut segments = x
        .chunks(step)
        .map(|xs| (xs, copies.as_mut().and_then(|c| c.next())));
    let mut cols = out.columns;
    let mut total = AbsSums::default();
    loop {
        let some: Vec<_> = segments.by_ref().take(wave).collect();
        if some.is_empty() {
            break;
        }
        for (p, local) in par_map(some, threads, |(xs, copy)| {
            let mut local = vec![0f64; width];
            let columns = (width > 0).then_some(&mut local[..]);
            let p = dispatch!(abs_sums_with(xs, AbsOut { copy, columns }));
            (p, local)
        }) {
            total.l1 += p.l1;
            total.sq += p.sq;
            total.nonzero += p.nonzero;
            total.absmax = if p.absmax > total.absmax {
                p.absmax
            } else {
                total.absmax
            };
            if let Some(c) = cols.as_deref_mut() {
                for (c, l) in c.iter_mut().zip(&local) {
                    *c += l;
                }
            }
        }
    }
    total
}

/// Entries [`abs_sums`] and [`diff_sq`] take as one piece of work (1 MiB of float32): a
/// thread's share is whole segments, and their sums are added in order.
pub const SEGMENT: usize = 1 << 18;

/// `f` of each item, on up to `threads` threads (each a contiguous run of the items; the
/// calling thread takes the first), the results in the items' order.
fn par_map<I: Send, T: Send>(items: Vec<I>, threads: usize, f: impl Fn(I) -> T + Sync) -> Vec<T> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    let mut groups: Vec<Vec<I>> = Vec::with_capacity(threads);
    let mut rest = items.into_iter();
    loop {
        let g: Vec<I> = rest.by_ref().take(per).collect();
        if g.is_empty() {
            break;
        }
        groups.push(g);
    }
    let f = &f;
    std::thread::scope(|scope| {
        let mut groups = groups.into_iter();
        let first = groups.next().unwrap_or_default();
        let others: Vec<_> = groups
            .map(|g| scope.spawn(move || g.into_iter().map(f).collect::<Vec<T>>()))
            .collect();
        let mut out: Vec<T> = first.into_iter().map(f).collect();
        for h in others {
            match h.join() {
                Ok(part) => out.extend(part),
                Err(e) => std::panic::resume_unwind(e),
            }
        }
        out
    })
}

#[inline(always)]
fn abs_sums_with(x: &[f32], out: AbsOut<'_>) -> AbsSums {
    // (`abs_sums` cuts the copy and the rows to match.)
    debug_assert!(out.copy.as_ref().is_none_or(|c| c.len() == x.len()));
    let mut total = AbsSums::default();
    let mut lanes = Lanes::default();
    match out.columns {
        None => {
            let mut copy = out.copy;
            for (i, part) in x.chunks(CHUNK).enumerate() {
                if let Some(c) = copy.as_deref_mut() {
                    c[i * CHUNK..i * CHUNK + part.len()].copy_from_slice(part);
                }
                lanes.feed(part);
                lanes.flush(&mut total);
            }
        }
        Some(cols) => {
            let width = cols.len();
            debug_assert!(width > 0 && x.len().is_multiple_of(width));
            let mut copy = out.copy;
            for (r, row) in x.chunks_exact(width).enumerate() {
                if let Some(c) = copy.as_deref_mut() {
                    c[r * width..(r + 1) * width].copy_from_slice(row);
                }
                for part in row.chunks(CHUNK) {
                    lanes.feed(part);
                    lanes.flush(&mut total);
                }
                // (In float64: a column of one magnitude down its rows drifts in float32.)
                for (c, &v) in cols.iter_mut().zip(row) {
                    *c += f64::from(v.abs());
                }
            }
        }
    }
    total.absmax = lanes.max();
    total
}

/// ‖a − b‖₂² (float64), the difference never written, on up to `threads` threads (a
/// `SEGMENT` at a time, the segments' sums added in order: the same bits on any number).
///
/// # Panics
/// If the lengths differ.
pub fn diff_sq(a: &[f32], b: &[f32], threads: usize) -> f64 {
    assert_eq!(a.len(), b.len(), "difference of tensors of two lengths");
    let segments: Vec<_> = a.chunks(SEGMENT).zip(b.chunks(SEGMENT)).collect();
    par_map(segments, threads, |(pa, pb)| {
        dispatch!(diff_sq_with(pa, pb))
    })
    .into_iter()
    .sum()
}

#[inline(always)]
fn diff_sq_with(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "difference of tensors of two lengths");
    let mut total = 0f64;
    for (pa, pb) in a.chunks(CHUNK).zip(b.chunks(CHUNK)) {
        // (Float64 lanes: an update is often of one magnitude everywhere, and float32 lanes
        // of equal squares drift by 2e-7; the pass is bound by memory, not by these adds.)
        let mut acc = [0f64; LANES];
        let mut wa = pa.chunks_exact(LANES);
        let mut wb = pb.chunks_exact(LANES);
        for (va, vb) in (&mut wa).zip(&mut wb) {
            for j in 0..LANES {
                let d = va[j] - vb[j];
                acc[j] += f64::from(d * d);
            }
        }
        for (j, (x, y)) in wa.remainder().iter().zip(wb.remainder()).enumerate() {
            let d = x - y;
            acc[j] += f64::from(d * d);
        }
        for v in acc {
            total += v;
        }
    }
    total
}

/// What an output's saturation is counted against (`somatize.torch`'s node scale).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Saturation {
    /// Not counted.
    None,
    /// |x| > the bound (a tanh's output).
    Tanh(f32),
    /// |2x − 1| > the bound (a sigmoid's output).
    Sigmoid(f32),
}

/// The fields [`output_sums`] writes per unit: Σ(x − x₀), Σ(x − x₀)², Σ|x|, Σ sign x,
/// Σ |sign x|, and with a [`Saturation`] the count of saturated entries.
pub fn output_fields(saturation: Saturation) -> usize {
    if saturation == Saturation::None {
        5
    } else {
        6
    }
}

/// The per-unit sums of an output read as `rows` × `units` (row-major, `x.len()` = rows ×
/// units), each unit's taken around its first row's value (x₀, as measure.rs shifts), into
/// `out` (fields × units, float32, [`output_fields`]): the wire's `signs` form. Returns false,
/// with `out` unspecified, when a sum is not finite as float32 (an entry was NaN or infinite,
/// or the sums overflow float32: the caller takes the masked path, in float64).
///
/// On up to `threads` threads, a tile of units (`UNITS_TILE`) each: each unit's sums are its
/// own, so the same bits on any number.
///
/// # Panics
/// If `units` is 0 or does not divide `x`'s length, or `out` is not fields × units long.
pub fn output_sums(
    x: &[f32],
    units: usize,
    saturation: Saturation,
    out: &mut [f32],
    threads: usize,
) -> bool {
    let fields = output_fields(saturation);
    assert!(
        units > 0 && x.len().is_multiple_of(units),
        "units do not divide the entries"
    );
    assert_eq!(out.len(), fields * units, "out is not fields × units");
    if units <= UNITS_TILE || threads <= 1 {
        return dispatch!(output_sums_with(x, units, saturation, out));
    }
    let tiles: Vec<_> = (0..units)
        .step_by(UNITS_TILE)
        .map(|lo| lo..(lo + UNITS_TILE).min(units))
        .collect();
    let mut finite = true;
    for (tile, (sums, ok)) in tiles
        .clone()
        .into_iter()
        .zip(par_map(tiles, threads, |tile| {
            let mut sums = vec![0f32; fields * tile.len()];
            let w = tile.len();
            let into = &mut sums[..];
            let ok = dispatch!(output_tile(x, units, tile, saturation, into, (w, 0)));
            (sums, ok)
        }))
    {
        finite &= ok;
        let w = tile.len();
        for k in 0..fields {
            out[k * units + tile.start..k * units + tile.end]
                .copy_from_slice(&sums[k * w..(k + 1) * w]);
        }
    }
    finite
}

#[inline(always)]
fn output_sums_with(x: &[f32], units: usize, saturation: Saturation, out: &mut [f32]) -> bool {
    let mut finite = true;
    let mut lo = 0;
    while lo < units {
        let hi = (lo + UNITS_TILE).min(units);
        finite &= output_tile(x, units, lo..hi, saturation, out, (units, lo));
        lo = hi;
    }
    finite
}

/// Units [`output_sums`] sums together, a row of them at a time: their float32 accumulators
/// (fields × this) stay in the cache while the rows go by however wide the output (GPT-2's
/// logits are 50,257 wide). Each unit's sums are its own, so the tiles change no bit.
const UNITS_TILE: usize = 4096;

/// [`output_sums`] of the units in `tile`, into `out` read as fields × `at.0` from column
/// `at.1`; false when one of their sums is not finite as float32.
#[inline(always)]
fn output_tile(
    x: &[f32],
    units: usize,
    tile: std::ops::Range<usize>,
    saturation: Saturation,
    out: &mut [f32],
    at: (usize, usize),
) -> bool {
    let fields = output_fields(saturation);
    let w = tile.len();
    let x0 = &x[tile.clone()];
    let mut acc = vec![0f32; fields * w];
    let mut wide = vec![0f64; fields * w];
    for (r, whole) in x.chunks_exact(units).enumerate() {
        let row = &whole[tile.clone()];
        let (d1, rest) = acc.split_at_mut(w);
        let (d2, rest) = rest.split_at_mut(w);
        let (ab, rest) = rest.split_at_mut(w);
        let (sg, rest) = rest.split_at_mut(w);
        let (nz, rest) = rest.split_at_mut(w);
        for j in 0..w {
            let v = row[j];
            let d = v - x0[j];
            d1[j] += d;
            d2[j] += d * d;
            ab[j] += v.abs();
            sg[j] += if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                0.0
            };
            nz[j] += if v != 0.0 { 1.0 } else { 0.0 };
        }
        match saturation {
            Saturation::None => {}
            Saturation::Tanh(bound) => {
                for (s, &v) in rest.iter_mut().zip(row) {
                    *s += if v.abs() > bound { 1.0 } else { 0.0 };
                }
            }
            Saturation::Sigmoid(bound) => {
                for (s, &v) in rest.iter_mut().zip(row) {
                    *s += if (v * 2.0 - 1.0).abs() > bound {
                        1.0
                    } else {
                        0.0
                    };
                }
            }
        }
        if (r + 1) % ROWS == 0 {
            for (v, a) in wide.iter_mut().zip(acc.iter_mut()) {
                *v += f64::from(*a);
                *a = 0.0;
            }
        }
    }
    for (v, a) in wide.iter_mut().zip(&acc) {
        *v += f64::from(*a);
    }
    // Finite as sent: a sum that fits float64 but not float32 (an output of 1e18s) is as
    // unusable on the wire as a NaN, and takes the masked path too.
    let mut finite = true;
    for k in 0..fields {
        for (o, v) in out[k * at.0 + at.1..k * at.0 + at.1 + w]
            .iter_mut()
            .zip(&wide[k * w..(k + 1) * w])
        {
            *o = *v as f32;
            finite &= o.is_finite();
        }
    }
    finite
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of values (an LCG), some exact zeros.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if i % 7 == 3 {
                    0.0
                } else {
                    ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
                }
            })
            .collect()
    }

    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs().max(1e-30)
    }

    #[test]
    fn abs_sums_match_float64_sums() {
        // (length, got vs want): lengths around the lanes and chunks, and past many chunks.
        for n in [0, 1, 15, 16, 17, 1023, 1024, 1025, 300_007] {
            let x = values(n, n as u64 + 1);
            let got = abs_sums(&x, AbsOut::default(), 1);
            let l1: f64 = x.iter().map(|v| f64::from(v.abs())).sum();
            let sq: f64 = x.iter().map(|v| f64::from(*v) * f64::from(*v)).sum();
            let nz = x.iter().filter(|v| **v != 0.0).count() as f64;
            let mx = x.iter().fold(0f32, |m, v| m.max(v.abs()));
            assert!(close(got.l1, l1, 1e-7), "n={n}: l1 {} want {l1}", got.l1);
            assert!(close(got.sq, sq, 1e-7), "n={n}: sq {} want {sq}", got.sq);
            assert_eq!(got.nonzero, nz, "n={n}: nonzero");
            assert_eq!(got.absmax, mx, "n={n}: absmax");
        }
    }

    #[test]
    fn copy_and_columns_in_the_same_pass() {
        let (rows, width) = (97, 33);
        let x = values(rows * width, 9);
        let mut copy = vec![0f32; x.len()];
        let mut cols = vec![0f64; width];
        let with = abs_sums(
            &x,
            AbsOut {
                copy: Some(&mut copy),
                columns: Some(&mut cols),
            },
            1,
        );
        let without = abs_sums(&x, AbsOut::default(), 1);
        assert_eq!(copy, x);
        for (j, c) in cols.iter().enumerate() {
            let want: f64 = (0..rows).map(|r| f64::from(x[r * width + j].abs())).sum();
            assert!(close(*c, want, 1e-7), "column {j}: {c} want {want}");
        }
        // (Summed a row at a time, so not in the same order as without columns.)
        assert!(close(with.l1, without.l1, 1e-7) && close(with.sq, without.sq, 1e-7));
        assert_eq!(
            (with.absmax, with.nonzero),
            (without.absmax, without.nonzero)
        );
    }

    #[test]
    fn non_finite_entries_make_sq_non_finite() {
        // (entry, what Σx² must be): the caller's cue to measure the tensor again.
        for (bad, nan) in [
            (f32::NAN, true),
            (f32::INFINITY, false),
            (f32::NEG_INFINITY, false),
        ] {
            let mut x = values(5000, 3);
            x[4321] = bad;
            let got = abs_sums(&x, AbsOut::default(), 1);
            assert!(!got.sq.is_finite(), "{bad}: sq {}", got.sq);
            assert_eq!(got.sq.is_nan(), nan, "{bad}: sq {}", got.sq);
            let mut out = vec![0f32; 5 * 50];
            assert!(
                !output_sums(&x, 50, Saturation::None, &mut out, 1),
                "{bad}: output finite"
            );
        }
    }

    #[test]
    fn sums_past_float32_are_not_finite() {
        // (entries, what they overflow): finite entries whose float32 sums are not.
        for (v, what) in [(1e18f32, "Σ(x − x₀)²"), (1e37, "Σ|x|")] {
            let mut x = vec![v; 192 * 3];
            if what == "Σ(x − x₀)²" {
                x.iter_mut().step_by(2).for_each(|e| *e = -v);
            }
            let mut out = vec![0f32; 5 * 3];
            assert!(
                !output_sums(&x, 3, Saturation::None, &mut out, 1),
                "{what}: {out:?}"
            );
        }
    }

    #[test]
    fn an_update_of_one_magnitude_everywhere_sums_exactly_enough() {
        // Adam's first step moves every entry by ±lr: a float32 sum over 300,000 equal squares
        // drifts by 1e-5 to 2e-4; the chunked sum stays within 1e-7.
        let n = 300_000;
        let a = vec![0.25f32; n];
        let b: Vec<f32> = (0..n)
            .map(|i| if i % 2 == 0 { 0.25 - 1e-3 } else { 0.25 + 1e-3 })
            .collect();
        let want: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(x - y).powi(2))
            .sum();
        let got = diff_sq(&a, &b, 1);
        assert!(close(got, want, 1e-7), "diff_sq {got} want {want}");
        assert_eq!(diff_sq(&[], &[], 3), 0.0);
    }

    #[test]
    fn output_sums_per_unit() {
        // (Narrow, and wider than a tile of units with a partial last tile.)
        for (rows, units) in [(70, 9), (40, UNITS_TILE * 2 + 7), (3, UNITS_TILE)] {
            output_sums_case(rows, units);
        }
    }

    fn output_sums_case(rows: usize, units: usize) {
        let x = values(rows * units, 5);
        for sat in [
            Saturation::None,
            Saturation::Tanh(0.99),
            Saturation::Sigmoid(0.5),
        ] {
            let f = output_fields(sat);
            let mut out = vec![0f32; f * units];
            assert!(output_sums(&x, units, sat, &mut out, 1));
            for j in 0..units {
                let col: Vec<f64> = (0..rows).map(|r| f64::from(x[r * units + j])).collect();
                let x0 = col[0];
                let want = [
                    col.iter().map(|v| v - x0).sum::<f64>(),
                    col.iter().map(|v| (v - x0) * (v - x0)).sum(),
                    col.iter().map(|v| v.abs()).sum(),
                    col.iter()
                        .map(|v| {
                            if *v > 0.0 {
                                1.0
                            } else if *v < 0.0 {
                                -1.0
                            } else {
                                0.0
                            }
                        })
                        .sum(),
                    col.iter().filter(|v| **v != 0.0).count() as f64,
                    match sat {
                        Saturation::None => 0.0,
                        Saturation::Tanh(b) => {
                            col.iter().filter(|v| v.abs() > f64::from(b)).count() as f64
                        }
                        Saturation::Sigmoid(b) => col
                            .iter()
                            .filter(|v| (*v * 2.0 - 1.0).abs() > f64::from(b))
                            .count() as f64,
                    },
                ];
                for k in 0..f {
                    let got = f64::from(out[k * units + j]);
                    assert!(
                        (got - want[k]).abs() <= 1e-5 * want[k].abs().max(1.0),
                        "{sat:?} unit {j} field {k}: got {got} want {}",
                        want[k]
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod same_bits {
    use super::*;

    #[test]
    fn every_build_of_a_kernel_gives_the_same_bits() {
        // The dispatched call (AVX2 or AVX-512 where the CPU has them) against the baseline
        // build, on entries that round differently in any other order of addition.
        let x: Vec<f32> = (0..100_003)
            .map(|i| ((i * 7919) % 1013) as f32 * 1.37e-3 - 0.6)
            .collect();
        let y: Vec<f32> = x.iter().map(|v| v * 0.999 + 1e-4).collect();
        let (mut c1, mut c2) = (vec![0f64; 7], vec![0f64; 7]);
        let wide = abs_sums(
            &x[..100_002],
            AbsOut {
                copy: None,
                columns: Some(&mut c1),
            },
            1,
        );
        let base = abs_sums_with(
            &x[..100_002],
            AbsOut {
                copy: None,
                columns: Some(&mut c2),
            },
        );
        assert_eq!((wide, c1), (base, c2));
        assert_eq!(diff_sq(&x, &y, 1).to_bits(), diff_sq_with(&x, &y).to_bits());
        for sat in [Saturation::None, Saturation::Sigmoid(0.9)] {
            let f = output_fields(sat);
            let (mut o1, mut o2) = (vec![0f32; f * 13], vec![0f32; f * 13]);
            assert!(output_sums(&x[..13 * 7000], 13, sat, &mut o1, 1));
            assert!(output_sums_with(&x[..13 * 7000], 13, sat, &mut o2));
            assert_eq!(o1, o2, "{sat:?}");
        }
    }
}

#[cfg(test)]
mod threads {
    use super::*;

    #[test]
    fn any_number_of_threads_gives_the_same_bits() {
        // Past several segments (and a partial last one), with a copy and column sums; an
        // output wider than several tiles. (threads, got vs one thread's.)
        let width = 4099;
        let n = width * 321; // 5 segments and part of a sixth
        let x: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 2003) as f32 * 7.3e-4 - 0.7)
            .collect();
        let y: Vec<f32> = x.iter().map(|v| v * 1.001 - 3e-5).collect();
        let one = |threads: usize| {
            let mut copy = vec![0f32; n];
            let mut cols = vec![0f64; width];
            let s = abs_sums(
                &x,
                AbsOut {
                    copy: Some(&mut copy),
                    columns: Some(&mut cols),
                },
                threads,
            );
            let plain = abs_sums(&x, AbsOut::default(), threads);
            let d = diff_sq(&x, &y, threads).to_bits();
            let units = UNITS_TILE * 3 + 5;
            let rows = 9;
            let mut out = vec![0f32; 6 * units];
            let ok = output_sums(
                &x[..rows * units],
                units,
                Saturation::Tanh(0.5),
                &mut out,
                threads,
            );
            assert!(ok && copy == x, "threads {threads}");
            (s, cols, plain, d, out)
        };
        let base = one(1);
        for threads in [2, 3, 7] {
            assert!(
                one(threads) == base,
                "threads {threads}: not the bits of one thread"
            );
        }
    }
}

//! Which points of a long line to draw: each bucket's lowest and highest, so no spike is lost.

/// The indices a line of `n` points keeps when drawn with at most `max` points: all of them
/// when it is short enough; else per bucket (of about `2n/max` points) its lowest and highest
/// of `ys` (each of `ys` is a series over the same points: all must keep their extremes) and its
/// first non-finite point, with the first and last points always kept. In order.
pub fn downsample(n: usize, ys: &[&[f64]], max: usize) -> Vec<usize> {
    if n <= max {
        return (0..n).collect();
    }
    // Each bucket keeps up to 2 points per series and a gap.
    let per = 2 * ys.len().max(1) + 1;
    let buckets = (max / per).max(1);
    let size = n.div_ceil(buckets);
    let mut keep = vec![0, n - 1];
    for start in (0..n).step_by(size) {
        let end = (start + size).min(n);
        for y in ys {
            let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
            let mut gap = None;
            for (i, v) in y.iter().enumerate().take(end).skip(start) {
                if !v.is_finite() {
                    gap.get_or_insert(i);
                    continue;
                }
                if lo.is_none_or(|l| *v < y[l]) {
                    lo = Some(i);
                }
                if hi.is_none_or(|h| *v > y[h]) {
                    hi = Some(i);
                }
            }
            keep.extend(lo);
            keep.extend(hi);
            keep.extend(gap);
        }
    }
    keep.sort_unstable();
    keep.dedup();
    keep
}

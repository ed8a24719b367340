//! Temporal functions over explicit histories: delta, ema, slope and rolling_std.
//!
//! Each takes the whole history (oldest first) and returns a series of the same length, with
//! NaN where the function is not defined yet, as pandas does. They match
//! `pandas.Series.diff()`, `.ewm(alpha=α, adjust=False, ignore_na=True).mean()`,
//! a least-squares line over `.rolling(w)` windows, and `.rolling(w).std()` (ddof = 1).

use crate::observe::spec::Temporal;

/// `x[i] - x[i-1]`; the first entry is NaN.
pub fn delta(history: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(history.len());
    if !history.is_empty() {
        out.push(f64::NAN);
    }
    out.extend(history.windows(2).map(|w| w[1] - w[0]));
    out
}

/// Exponential moving average, `y₀ = x₀`, `yᵢ = (1 − α)·yᵢ₋₁ + α·xᵢ`; a NaN input repeats
/// the previous average (NaN until the first number).
pub fn ema(history: &[f64], alpha: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(history.len());
    let mut y = f64::NAN;
    for &x in history {
        if !x.is_nan() {
            y = if y.is_nan() {
                x
            } else {
                (1.0 - alpha) * y + alpha * x
            };
        }
        out.push(y);
    }
    out
}

/// The windows ending at each index; `None` before the first full window.
fn rolling(history: &[f64], window: usize, f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    (0..history.len())
        .map(|i| {
            if window == 0 || i + 1 < window {
                return f64::NAN;
            }
            let w = &history[i + 1 - window..=i];
            if w.iter().any(|x| x.is_nan()) {
                f64::NAN
            } else {
                f(w)
            }
        })
        .collect()
}

fn mean(w: &[f64]) -> f64 {
    w.iter().sum::<f64>() / w.len() as f64
}

/// The least-squares slope of each window of `window` values against their positions
/// `0, 1, …` (per step); NaN for the first `window − 1` entries and for `window < 2`.
pub fn slope(history: &[f64], window: usize) -> Vec<f64> {
    if window < 2 {
        return vec![f64::NAN; history.len()];
    }
    rolling(history, window, |w| {
        let x_mean = (w.len() - 1) as f64 / 2.0;
        let y_mean = mean(w);
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, &y) in w.iter().enumerate() {
            let dx = i as f64 - x_mean;
            sxy += dx * (y - y_mean);
            sxx += dx * dx;
        }
        sxy / sxx
    })
}

/// The sample standard deviation (ddof = 1) of each window of `window` values; NaN for the
/// first `window − 1` entries and for `window < 2`.
pub fn rolling_std(history: &[f64], window: usize) -> Vec<f64> {
    if window < 2 {
        return vec![f64::NAN; history.len()];
    }
    rolling(history, window, |w| {
        let m = mean(w);
        let ss: f64 = w.iter().map(|x| (x - m) * (x - m)).sum();
        (ss / (w.len() - 1) as f64).sqrt()
    })
}

impl Temporal {
    /// The whole series of this function over a history.
    pub fn series(&self, history: &[f64]) -> Vec<f64> {
        let window = |w: u64| usize::try_from(w).unwrap_or(usize::MAX);
        match self {
            Temporal::Delta => delta(history),
            Temporal::Ema { alpha } => ema(history, *alpha),
            Temporal::Slope { window: w } => slope(history, window(*w)),
            Temporal::RollingStd { window: w } => rolling_std(history, window(*w)),
        }
    }

    /// The function's value at the newest entry of a history; `None` where undefined.
    pub fn last(&self, history: &[f64]) -> Option<f64> {
        let tail_len = match self {
            Temporal::Delta => 2,
            Temporal::Ema { .. } => history.len(),
            Temporal::Slope { window } | Temporal::RollingStd { window } => {
                usize::try_from(*window).unwrap_or(usize::MAX)
            }
        };
        let tail = &history[history.len().saturating_sub(tail_len)..];
        self.series(tail).last().copied().filter(|v| !v.is_nan())
    }
}

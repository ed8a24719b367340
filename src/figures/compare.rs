//! The `compare` figure: one summarised field of several runs overlaid, smoothed (TensorBoard's
//! debiased EMA, or a rolling mean), against forward, wall time or time since each run began,
//! optionally on a log y axis, runs grouped by name prefix drawn as a mean with a min–max band,
//! and long lines downsampled keeping each bucket's lowest and highest points.

use super::{colour, num, Figure};
use crate::health::compare::glob_match;
use crate::math::downsample::downsample;
use crate::readback::curve::curve;
use crate::readback::{Answer, ReadbackError, Result, Skip};
use crate::store::summary::Sketch;
use crate::store::{Store, StoreFs};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What the x axis counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XAxis {
    /// The forward number.
    #[default]
    Forward,
    /// When the forward's index line was written (the writer's clock), as a date.
    Wall,
    /// Seconds since the run's first index line.
    Relative,
}

impl XAxis {
    /// `forward`, `wall` or `relative`.
    pub fn parse(s: &str) -> Option<XAxis> {
        match s {
            "forward" => Some(XAxis::Forward),
            "wall" => Some(XAxis::Wall),
            "relative" => Some(XAxis::Relative),
            _ => None,
        }
    }
}

/// How a line is smoothed before it is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Smooth {
    #[default]
    None,
    /// TensorBoard's debiased exponential moving average with this weight in [0, 1).
    Ema(f64),
    /// The mean of the last N points (trailing), N ≥ 1.
    Mean(usize),
}

/// Options of the compare figure.
#[derive(Debug, Clone)]
pub struct CompareFigure {
    /// Only runs whose names match this glob.
    pub runs: Option<String>,
    /// Only these runs, when not empty (the page's choice of runs).
    pub names: Vec<String>,
    /// The summarised field drawn (default `loss.value`).
    pub of: String,
    pub smooth: Smooth,
    pub x: XAxis,
    pub log_y: bool,
    /// Runs whose names begin with one of these are drawn as one group (the first prefix a
    /// run begins with), as the mean over its runs with a band from their min to their max.
    pub group_by: Vec<String>,
    /// The most points a line keeps (each of a longer line's buckets keeps its lowest and
    /// highest points, and its first gap).
    pub max_points: usize,
    /// Runs whose recorded config (`runs/<run>/config.json`) has this field are drawn as one
    /// group per value of it (`lr=0.1`), as prefix groups are; runs without it alone. Not
    /// with `group_by`.
    pub group_config: Option<String>,
    /// Draw a finished run's line from the sketch its summary line carries (when it is of
    /// `of`) instead of reading its index: what a figure of many runs costs one read of the
    /// summaries file for. `false` reads every index.
    pub sketches: bool,
}

impl Default for CompareFigure {
    fn default() -> Self {
        CompareFigure {
            runs: None,
            names: Vec::new(),
            of: crate::readback::DEFAULT_FIELD.into(),
            smooth: Smooth::None,
            x: XAxis::Forward,
            log_y: false,
            group_by: Vec::new(),
            max_points: 2000,
            group_config: None,
            sketches: true,
        }
    }
}

/// Why a compare figure's options cannot be drawn.
pub fn check(o: &CompareFigure) -> std::result::Result<(), String> {
    match o.smooth {
        Smooth::Ema(w) if !(0.0..1.0).contains(&w) => {
            Err(format!("the EMA weight must be in [0, 1), not {w}"))
        }
        Smooth::Mean(0) => Err("a rolling mean needs a window of at least 1".into()),
        _ if o.max_points < 4 => Err("a line must keep at least 4 points".into()),
        _ if o.group_config.is_some() && !o.group_by.is_empty() => {
            Err("group by name prefixes or by a config field, not both".into())
        }
        _ if o.group_config.as_deref() == Some("") => {
            Err("the config field to group by has no name".into())
        }
        _ => Ok(()),
    }
}

/// TensorBoard's smoothing (its scalars dashboard): `last = last·w + (1−w)·y`, divided by
/// `1 − w^n` after n finite points so the start is not pulled towards 0; a non-finite value
/// is passed through and does not move the average.
pub fn ema(values: &[f64], weight: f64) -> Vec<f64> {
    let mut last = 0.0;
    let mut n = 0i32;
    values
        .iter()
        .map(|&y| {
            if !y.is_finite() {
                return y;
            }
            last = last * weight + (1.0 - weight) * y;
            n = n.saturating_add(1);
            let debias = 1.0 - weight.powi(n);
            if debias > 0.0 {
                last / debias
            } else {
                y
            }
        })
        .collect()
}

/// The trailing mean of the last `window` finite values (a non-finite value stays itself and
/// is left out of the means after it).
pub fn rolling_mean(values: &[f64], window: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(values.len());
    let mut kept: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
    let mut sum = 0.0;
    for &y in values {
        if !y.is_finite() {
            out.push(y);
            continue;
        }
        kept.push_back(y);
        sum += y;
        if kept.len() > window.max(1) {
            sum -= kept.pop_front().unwrap_or(0.0);
        }
        out.push(sum / kept.len() as f64);
    }
    out
}

/// One run's line: forwards, their x and values, oldest first.
#[derive(Clone)]
struct Line {
    run: String,
    forwards: Vec<u64>,
    xs: Vec<f64>,
    ys: Vec<f64>,
}

/// A run's values of `of` with when each forward was written (the first writer's line of a
/// forward counts). One scan of the indexes when `of` is summarised there (the forwards whose
/// lines carry it); when no line carries it, a fetch per forward (through `curve`).
fn line_of<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    of: &str,
    skipped: &mut Vec<Skip>,
) -> Result<Line> {
    let mut forwards = Vec::new();
    let mut written = Vec::new();
    let mut ys: Vec<Option<f64>> = Vec::new();
    crate::readback::lines::walk(store, run, skipped, &mut |l| {
        if forwards.last() == Some(&l.forward) {
            return;
        }
        forwards.push(l.forward);
        written.push(l.written_us);
        ys.push(l.fields.number(of));
    })?;
    let keep: Vec<(u64, i64, f64)> = if ys.iter().any(Option::is_some) {
        (0..forwards.len())
            .filter_map(|i| ys[i].map(|v| (forwards[i], written[i], v)))
            .collect()
    } else {
        let got = curve(store, run, of)?;
        skipped.extend(got.skipped);
        let by: BTreeMap<u64, f64> = got.rows.iter().map(|p| (p.forward, p.value)).collect();
        (0..forwards.len())
            .filter_map(|i| by.get(&forwards[i]).map(|v| (forwards[i], written[i], *v)))
            .collect()
    };
    let written: Vec<i64> = keep.iter().map(|k| k.1).collect();
    Ok(Line {
        run: run.to_string(),
        xs: Vec::new(),
        forwards: keep.iter().map(|k| k.0).collect(),
        ys: keep.iter().map(|k| k.2).collect(),
    }
    .with_written(&written))
}

impl Line {
    /// A finished run's line from its summary's sketch.
    fn of_sketch(run: &str, sketch: &Sketch) -> Line {
        Line {
            run: run.to_string(),
            forwards: sketch.forwards.clone(),
            xs: sketch.written_us().map(|w| w as f64).collect(),
            ys: sketch.values_f64().collect(),
        }
    }

    fn with_written(mut self, written: &[i64]) -> Self {
        // Kept as µs here; turned into the axis' unit by `place`.
        self.xs = written.iter().map(|&w| w as f64).collect();
        self
    }

    /// Set xs from the forwards or the written times, as the axis asks.
    fn place(&mut self, x: XAxis) {
        match x {
            XAxis::Forward => self.xs = self.forwards.iter().map(|&f| f as f64).collect(),
            XAxis::Wall => self.xs.iter_mut().for_each(|w| *w /= 1000.0),
            XAxis::Relative => {
                let first = self.xs.iter().copied().fold(f64::INFINITY, f64::min);
                self.xs.iter_mut().for_each(|w| *w = (*w - first) / 1e6);
            }
        }
    }

    fn smooth(&mut self, s: Smooth) {
        match s {
            Smooth::None => {}
            Smooth::Ema(w) => self.ys = ema(&self.ys, w),
            Smooth::Mean(n) => self.ys = rolling_mean(&self.ys, n),
        }
    }
}

fn values(ys: &[f64], keep: &[usize]) -> Vec<Value> {
    keep.iter().map(|&i| num(ys[i])).collect()
}

fn xs(xs: &[f64], keep: &[usize]) -> Vec<Value> {
    keep.iter().map(|&i| num(xs[i])).collect()
}

/// Runs' lines as read from their indexes (before smoothing and placing on the x axis), kept
/// by `(run, field)` between figures: the page's open store keeps one until it is refreshed, so
/// a change of smoothing, axis, groups or of the runs chosen reads nothing again.
#[derive(Default)]
pub struct KeptLines {
    lines: std::collections::HashMap<(String, String), Line>,
    /// The sketches of finished runs, from one read of the summaries file.
    sketches: Option<BTreeMap<String, Sketch>>,
    /// The runs' configs, each read once.
    configs: std::collections::HashMap<String, Option<crate::store::config::Config>>,
}

impl KeptLines {
    /// Forget every line (the store's files may have changed).
    pub fn clear(&mut self) {
        self.lines.clear();
        self.sketches = None;
        self.configs.clear();
    }

    /// Run `run`'s value of config field `field`, its config read once (one that cannot be
    /// read is none).
    fn config_value<F: StoreFs>(
        &mut self,
        store: &Store<F>,
        run: &str,
        field: &str,
    ) -> Option<String> {
        self.configs
            .entry(run.to_string())
            .or_insert_with(|| crate::store::config::read(store.fs(), run).ok().flatten())
            .as_ref()
            .and_then(|c| crate::store::config::value_text(c, field))
    }

    /// The sketches of the runs whose summary line stands for them (finished, nothing written
    /// since), read once. A summaries file that cannot be read gives none (the indexes are read).
    fn sketches<F: StoreFs>(&mut self, store: &Store<F>) -> &BTreeMap<String, Sketch> {
        self.sketches.get_or_insert_with(|| {
            crate::store::summary::read_runs(store.fs())
                .unwrap_or_default()
                .into_iter()
                .filter(|(_, l)| crate::health::compare::from_line(&l.last).is_some())
                .filter_map(|(run, l)| l.last.sketch?.parse().map(|s| (run, s)))
                .collect()
        })
    }
}

/// The compare figure over the store's runs matching `o.runs`.
pub fn compare<F: StoreFs>(store: &Store<F>, o: &CompareFigure) -> Result<Answer<Figure>> {
    compare_kept(store, o, &mut KeptLines::default())
}

/// [`compare`], reading only the lines `kept` does not hold (and keeping them there). A line
/// read with skips is not kept.
pub fn compare_kept<F: StoreFs>(
    store: &Store<F>,
    o: &CompareFigure,
    kept: &mut KeptLines,
) -> Result<Answer<Figure>> {
    check(o).map_err(|what| {
        ReadbackError::Store(crate::store::StoreError::Refused {
            what: format!("compare: {what}"),
        })
    })?;
    let mut skipped = Vec::new();
    let mut lines = Vec::new();
    for run in store.runs()? {
        if o.runs.as_deref().is_some_and(|g| !glob_match(g, &run))
            || (!o.names.is_empty() && !o.names.contains(&run))
        {
            continue;
        }
        let key = (run.clone(), o.of.clone());
        let sketched = if o.sketches {
            kept.sketches(store)
                .get(&run)
                .filter(|s| s.of == o.of)
                .map(|s| Line::of_sketch(&run, s))
        } else {
            None
        };
        let mut l = match (sketched, kept.lines.get(&key)) {
            (Some(l), _) => l,
            (None, Some(l)) => l.clone(),
            (None, None) => {
                let before = skipped.len();
                let l = line_of(store, &run, &o.of, &mut skipped)?;
                if skipped.len() == before {
                    kept.lines.insert(key, l.clone());
                }
                l
            }
        };
        l.place(o.x);
        l.smooth(o.smooth);
        lines.push(l);
    }
    let field = super::progress::field_title(&o.of);
    let smoothing = match o.smooth {
        Smooth::None => String::new(),
        Smooth::Ema(w) => format!(", EMA {w}"),
        Smooth::Mean(n) => format!(", rolling mean of {n}"),
    };
    let (x_title, x_extra) = match o.x {
        XAxis::Forward => ("forward", json!({})),
        XAxis::Wall => ("written (writer's clock)", json!({"type": "date"})),
        XAxis::Relative => ("seconds since the run began", json!({})),
    };
    // Exponents as `1e+21`, not as superscripts (which plotly draws with a style attribute,
    // refused by the page's CSP): an exploding run's loss spans many decades.
    let y_extra = if o.log_y {
        json!({"type": "log", "exponentformat": "e"})
    } else {
        json!({"exponentformat": "e"})
    };
    let mut fig = Figure::new(&format!(
        "{field} of {} run{}{smoothing}",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" }
    ))
    .axis("xaxis", x_title, x_extra)
    .axis("yaxis", &field, y_extra)
    .layout(json!({"legend": {"orientation": "v"}}));
    // Groups first (by prefix, in the order given; or by config value, in the order of the
    // values), then the runs in no group. Each group: its name and legend group, its lines.
    let mut grouped: Vec<(String, String, Vec<Line>)> = o
        .group_by
        .iter()
        .map(|p| (format!("{p}*"), p.clone(), Vec::new()))
        .collect();
    let mut alone = Vec::new();
    match &o.group_config {
        Some(field) => {
            let mut by: BTreeMap<String, Vec<Line>> = BTreeMap::new();
            for l in lines {
                match kept.config_value(store, &l.run, field) {
                    Some(v) => by.entry(v).or_default().push(l),
                    None => alone.push(l),
                }
            }
            let mut values: Vec<(String, Vec<Line>)> = by.into_iter().collect();
            // Numbers in their order when every value is one (0.01 before 0.1 before 1).
            if values.iter().all(|(v, _)| v.parse::<f64>().is_ok()) {
                values.sort_by(|a, b| {
                    a.0.parse::<f64>()
                        .unwrap_or(0.0)
                        .total_cmp(&b.0.parse::<f64>().unwrap_or(0.0))
                });
            }
            grouped = values
                .into_iter()
                .map(|(v, ls)| (format!("{field}={v}"), format!("{field}={v}"), ls))
                .collect();
        }
        None => {
            for l in lines {
                match grouped
                    .iter_mut()
                    .find(|(_, p, _)| !p.is_empty() && l.run.starts_with(p.as_str()))
                {
                    Some((_, _, members)) => members.push(l),
                    None => alone.push(l),
                }
            }
        }
    }
    let mut colour_at = 0;
    for (name, key, members) in grouped.into_iter().filter(|(_, _, m)| !m.is_empty()) {
        fig = group_traces(fig, &name, &key, &members, o, colour(colour_at));
        colour_at += 1;
    }
    for l in &alone {
        let keep = downsample(l.ys.len(), &[&l.ys], o.max_points);
        fig = fig.trace(json!({
            "type": "scatter", "mode": if l.ys.len() > 1 { "lines" } else { "markers" },
            "name": l.run, "x": xs(&l.xs, &keep), "y": values(&l.ys, &keep),
            "line": {"color": colour(colour_at), "width": 1.5},
            "marker": {"color": colour(colour_at)},
            "hovertemplate": format!("%{{x}}<br>{field} %{{y}}<extra>%{{fullData.name}}</extra>"),
        }));
        colour_at += 1;
    }
    Ok(Answer { rows: fig, skipped })
}

/// A group's traces: its band (max, then min filled to it) and its mean, over the forwards
/// any member has, each value taken over the members that have that forward. `label` names
/// it (`lr-*`, `lr=0.1`), `key` is its legend group.
fn group_traces(
    fig: Figure,
    label: &str,
    key: &str,
    members: &[Line],
    o: &CompareFigure,
    c: &str,
) -> Figure {
    // forward -> (x sum, n, value sum, value n, min, max)
    let mut at: BTreeMap<u64, (f64, u32, f64, u32, f64, f64)> = BTreeMap::new();
    for l in members {
        for i in 0..l.forwards.len() {
            let e = at.entry(l.forwards[i]).or_insert((
                0.0,
                0,
                0.0,
                0,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ));
            e.0 += l.xs[i];
            e.1 += 1;
            let y = l.ys[i];
            if y.is_finite() {
                e.2 += y;
                e.3 += 1;
                e.4 = e.4.min(y);
                e.5 = e.5.max(y);
            }
        }
    }
    let x: Vec<f64> = at.values().map(|e| e.0 / e.1.max(1) as f64).collect();
    let gap = |ok: bool, v: f64| if ok { v } else { f64::NAN };
    let mean: Vec<f64> = at
        .values()
        .map(|e| gap(e.3 > 0, e.2 / e.3.max(1) as f64))
        .collect();
    let lo: Vec<f64> = at.values().map(|e| gap(e.3 > 0, e.4)).collect();
    let hi: Vec<f64> = at.values().map(|e| gap(e.3 > 0, e.5)).collect();
    let keep = downsample(x.len(), &[&mean, &lo, &hi], o.max_points);
    let name = format!("{label} ({} runs)", members.len());
    let band = format!("{c}33");
    fig.trace(json!({
        "type": "scatter", "mode": "lines", "name": format!("{name} max"), "legendgroup": key,
        "showlegend": false, "x": xs(&x, &keep), "y": values(&hi, &keep),
        "line": {"color": band, "width": 0}, "hoverinfo": "skip",
    }))
    .trace(json!({
        "type": "scatter", "mode": "lines", "name": format!("{name} min–max"), "legendgroup": key,
        "x": xs(&x, &keep), "y": values(&lo, &keep), "fill": "tonexty", "fillcolor": band,
        "line": {"color": band, "width": 0}, "hoverinfo": "skip",
    }))
    .trace(json!({
        "type": "scatter", "mode": "lines", "name": format!("{name} mean"), "legendgroup": key,
        "x": xs(&x, &keep), "y": values(&mean, &keep),
        "line": {"color": c, "width": 2},
        "hovertemplate": "%{x}<br>mean %{y}<extra>%{fullData.name}</extra>",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ema_is_tensorboards_debiased_average() {
        // TensorBoard: last = last*w + (1-w)*y; smoothed = last / (1 - w^n).
        let got = ema(&[1.0, 2.0, f64::NAN, 4.0], 0.5);
        assert_eq!(got[0], 1.0);
        // last = 0.25*1 + 0.5*... : step 1 last=0.5, /0.5 = 1; step 2 last=0.25+1=1.25, /0.75
        assert!((got[1] - 1.25 / 0.75).abs() < 1e-12);
        assert!(got[2].is_nan());
        let last3 = 1.25 * 0.5 + 0.5 * 4.0;
        assert!((got[3] - last3 / (1.0 - 0.125)).abs() < 1e-12);
        assert!(ema(&[3.0, 3.0, 3.0], 0.9)
            .iter()
            .all(|v| (v - 3.0).abs() < 1e-12));
        assert_eq!(ema(&[1.0, 5.0], 0.0), vec![1.0, 5.0]);
    }

    #[test]
    fn rolling_mean_is_trailing_over_finite_values() {
        let got = rolling_mean(&[1.0, 3.0, f64::INFINITY, 5.0, 7.0], 2);
        assert_eq!(got[0], 1.0);
        assert_eq!(got[1], 2.0);
        assert!(got[2].is_infinite());
        assert_eq!(got[3], 4.0);
        assert_eq!(got[4], 6.0);
    }

    #[test]
    fn downsampling_keeps_every_spike_and_gap() {
        let mut y: Vec<f64> = (0..100_000).map(|i| (i % 7) as f64).collect();
        y[54_321] = 1e9;
        y[77_777] = -1e9;
        y[12_345] = f64::NAN;
        let keep = downsample(y.len(), &[&y], 1000);
        assert!(keep.len() <= 1000 + 2, "{} points kept", keep.len());
        for must in [0, 54_321, 77_777, 12_345, 99_999] {
            assert!(keep.contains(&must), "point {must} dropped");
        }
        assert!(keep.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            downsample(10, &[&y[..10]], 1000),
            (0..10).collect::<Vec<_>>()
        );
    }
}

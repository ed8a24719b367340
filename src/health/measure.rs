//! Measuring a node: its health metrics from its tensors, each tensor read once.
//!
//! The names and meanings are the vocabulary of `somatize_verdict::metrics`; docs/health.md
//! lists them. Constants that decide what a unit is (dead, dormant, saturated, ignored) are
//! fixed at measurement and written down here: changing them means measuring again, while
//! every bound in `Thresholds` can be changed over a stored record.

pub use super::error::MeasureError;
pub use super::layout::{unit_axis, UnitRule};
use super::Metrics;
pub use super::CKA_MAX_ENTRIES;
use crate::math::stats::Moments;
use crate::tensor::typed::{bf16_to_f64, f16_to_f64};
use crate::tensor::{TensorData, TypedTensor};
use somatize_verdict::metrics as m;
use somatize_verdict::{classify, KindClass};

/// A unit is dead when its share of outputs above 0 is below this (Dohare et al. 2024;
/// SageMaker DeadRelu threshold_inactivity 1 %).
pub const DEAD_ACTIVITY: f64 = 0.01;
/// A unit is dormant when its ReDo score is at most this (Sokar et al. 2023, τ = 0.1 as in
/// the timoklein/redo reimplementation).
pub const DORMANT_SCORE: f64 = 0.1;
/// An output is saturated past this on the tanh scale (Karpathy, makemore part 3).
pub const SATURATED_OUTPUT: f64 = 0.97;
/// A unit is saturated when more than this share of its outputs are (SageMaker
/// SaturatedActivation: active, i.e. unsaturated, on under 1 %).
pub const SATURATED_UNIT_SHARE: f64 = 0.99;
/// A live unit is ignored when its contribution utility is at most this share of the layer's
/// mean utility (ours: continual backprop publishes no absolute cut).
pub const IGNORED_UTILITY: f64 = 0.01;
/// The update of a weight is given a rank only when ‖ΔW‖ exceeds this share of ‖W‖: below
/// it (about a hundred float32 roundings) the update is rounding noise with no direction, and
/// NARROWING reads the gradient's rank instead.
pub const UPDATE_RANK_RESOLUTION: f64 = 1e-5;

/// The tensors of one node at one forward.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeTensors<'a> {
    /// The node's kind as the graph names it (`ReLU`, `Tanh`, `Linear`, …; empty if unknown).
    pub kind: &'a str,
    /// The node's parameters (weight, bias, …).
    pub params: &'a [&'a TypedTensor],
    /// Their gradients.
    pub grads: &'a [&'a TypedTensor],
    /// The same parameters one optimiser step earlier, in the same order (empty: no update
    /// metrics from a difference).
    pub previous: &'a [&'a TypedTensor],
    /// The applied update of one optimiser step of each parameter (`update.<node>.<leaf>`:
    /// the weights after `optimizer.step()` minus those before, `params` being the before), in
    /// the same order; when given, the update metrics are taken from it and `previous` is not
    /// read.
    pub updates: &'a [&'a TypedTensor],
    /// The node's output.
    pub activation: Option<&'a TypedTensor>,
    /// How the output's unit axis is chosen when it names no axis (see [`super::layout`]).
    pub units: UnitRule<'a>,
    /// The weight of the layer that reads this node's output (for ignored units): shape
    /// `(out, units, …)`, `(out, units·k)` after a flatten, or `(units,)` for a per-unit scale.
    pub next_weight: Option<&'a TypedTensor>,
}

/// Refuse a tensor whose shape does not multiply out to its length.
pub(crate) fn check_shape(t: &TypedTensor) -> Result<(), MeasureError> {
    let n = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if n == Some(t.len()) {
        Ok(())
    } else {
        Err(MeasureError::Shape {
            key: t.provenance.key.clone(),
            shape: t.shape.clone(),
            len: t.len(),
        })
    }
}

/// Every metric of the node its tensors allow, each tensor read once.
pub fn measure(node: &NodeTensors) -> Result<Metrics, MeasureError> {
    let mut out = Metrics::new();
    let (mut nan, mut nonfinite, mut any) = (0u64, 0u64, false);
    if !node.params.is_empty() {
        let s = params(node.params, node.previous, node.updates, &mut out)?;
        (nan, nonfinite, any) = (nan + s.0, nonfinite + s.1, true);
    }
    if !node.grads.is_empty() {
        let s = grads(node.grads, &mut out)?;
        (nan, nonfinite, any) = (nan + s.0, nonfinite + s.1, true);
    }
    if let Some(act) = node.activation {
        let s = activation(act, node.kind, node.units, node.next_weight, &mut out)?;
        (nan, nonfinite, any) = (nan + s.0, nonfinite + s.1, true);
    }
    ranks(node, &mut out)?;
    if any {
        put(&mut out, m::NAN, Some(nan as f64));
        put(&mut out, m::INF, Some((nonfinite - nan) as f64));
        put(&mut out, m::NONFINITE, Some(nonfinite as f64));
    }
    Ok(out)
}

/// The singular-value metrics of the node's weight update, weight gradient and output
/// (see [`super::rank`]): the weight is the first parameter of two or more axes, read as
/// (out × rest); the output as (positions × units) along its unit axis. The samples a step's
/// update summed over are the positions per unit of the node's output (batch × tokens, or
/// batch × height × width), when the output was recorded. Matrices over the rank caps, or
/// with a non-finite entry, are left unmeasured.
fn ranks(node: &NodeTensors, out: &mut Metrics) -> Result<(), MeasureError> {
    use super::rank::{as_matrix, feature_rank, rank_of, rank_of_tensor, RankOf};
    let axis = match node.activation {
        Some(a) if !a.is_empty() => unit_axis(a, node.kind, node.units)?,
        _ => None,
    };
    let samples = node.activation.and_then(|a| {
        let units = axis.and_then(|i| a.shape.get(i).copied()).unwrap_or(1);
        a.len().checked_div(units).filter(|n| *n > 0)
    });
    let weight = node.params.iter().position(|p| p.shape.len() >= 2);
    let given = weight.and_then(|i| node.updates.get(i));
    if let (Some(i), Some(u)) = (weight, given) {
        let p = node.params[i];
        if p.len() == u.len() && as_matrix(&p.shape).is_some() {
            let update = u.data.to_f64();
            let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm(&update) > UPDATE_RANK_RESOLUTION * norm(&p.data.to_f64()) {
                out.extend(rank_of(RankOf::Update, &update, &p.shape, samples));
            }
        }
    } else if let (Some(i), Some(q)) = (weight, weight.and_then(|i| node.previous.get(i))) {
        let p = node.params[i];
        if p.len() == q.len() && as_matrix(&p.shape).is_some() {
            let before = q.data.to_f64();
            let update: Vec<f64> = p
                .data
                .to_f64()
                .iter()
                .zip(&before)
                .map(|(a, b)| a - b)
                .collect();
            let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
            // An update within rounding of the weights has no direction worth a rank.
            if norm(&update) > UPDATE_RANK_RESOLUTION * norm(&before) {
                out.extend(rank_of(RankOf::Update, &update, &p.shape, samples));
            }
        }
    }
    if let Some(g) = node.grads.iter().find(|g| g.shape.len() >= 2) {
        out.extend(rank_of_tensor(RankOf::Grad, g, samples));
    }
    if let (Some(a), Some(axis)) = (node.activation, axis) {
        out.extend(feature_rank(a, axis));
    }
    Ok(())
}

/// The loss node's metrics: the loss value (the mean when it is not a scalar; NaN when any
/// entry is NaN, else infinite when any is) and its NaN and infinity counts.
pub fn measure_loss(loss: &TypedTensor) -> Metrics {
    let mut moments = Moments::new();
    loss.data.for_each_chunk(&mut |c| moments.push_slice(c));
    let s = moments.finish();
    let mut out = Metrics::new();
    let value = match (loss.len(), s.nonfinite) {
        (1, 1) => loss.data.to_f64().first().copied(),
        (_, 0) => s.mean,
        _ if s.nan > 0 => Some(f64::NAN),
        _ => Some(f64::INFINITY),
    };
    put(&mut out, m::LOSS, value);
    put(&mut out, m::NAN, Some(s.nan as f64));
    put(&mut out, m::INF, Some((s.nonfinite - s.nan) as f64));
    put(&mut out, m::NONFINITE, Some(s.nonfinite as f64));
    out
}

fn put(out: &mut Metrics, name: &str, value: Option<f64>) {
    if let Some(v) = value {
        out.insert(name.to_string(), v);
    }
}

/// Convert `data[start..start + buf.len()]` to f64 into `buf`; how many were converted.
fn chunk_into(data: &TensorData, start: usize, buf: &mut [f64]) -> usize {
    fn conv<T: Copy>(v: &[T], start: usize, buf: &mut [f64], f: impl Fn(T) -> f64) -> usize {
        let end = start.saturating_add(buf.len()).min(v.len());
        let src = v.get(start..end).unwrap_or(&[]);
        for (o, &x) in buf.iter_mut().zip(src) {
            *o = f(x);
        }
        src.len()
    }
    match data {
        TensorData::F16(v) => conv(v, start, buf, f16_to_f64),
        TensorData::BF16(v) => conv(v, start, buf, bf16_to_f64),
        TensorData::F32(v) => conv(v, start, buf, f64::from),
        TensorData::F64(v) => conv(v, start, buf, |x| x),
        TensorData::I8(v) => conv(v, start, buf, f64::from),
        TensorData::I16(v) => conv(v, start, buf, f64::from),
        TensorData::I32(v) => conv(v, start, buf, f64::from),
        TensorData::I64(v) => conv(v, start, buf, |x| x as f64),
        TensorData::U8(v) => conv(v, start, buf, f64::from),
        TensorData::U16(v) => conv(v, start, buf, f64::from),
        TensorData::U32(v) => conv(v, start, buf, f64::from),
        TensorData::U64(v) => conv(v, start, buf, |x| x as f64),
        TensorData::Bool(v) => conv(v, start, buf, |x| if x { 1.0 } else { 0.0 }),
    }
}

/// Parameter metrics, and the applied update's when the update or the previous parameters
/// are given. Each current tensor is read once, alongside the same range of its update (or
/// its previous one).
fn params(
    params: &[&TypedTensor],
    previous: &[&TypedTensor],
    updates: &[&TypedTensor],
    out: &mut Metrics,
) -> Result<(u64, u64), MeasureError> {
    // The applied update, when given, wins over a difference against the step before.
    let (other, is_update) = if updates.is_empty() {
        (previous, false)
    } else {
        (updates, true)
    };
    let what = if is_update { "updates" } else { "previous" };
    if !other.is_empty() && other.len() != params.len() {
        return Err(MeasureError::Previous {
            key: "<count>".into(),
            detail: format!("{} parameters, {} {what}", params.len(), other.len()),
        });
    }
    let mut moments = Moments::new();
    let (mut diff_sq, mut prev_sq) = (0.0f64, 0.0f64);
    let mut buf = vec![0f64; crate::tensor::typed::CHUNK];
    for (i, p) in params.iter().enumerate() {
        check_shape(p)?;
        let prev = other.get(i);
        if let Some(q) = prev {
            if q.len() != p.len() {
                return Err(MeasureError::Previous {
                    key: p.provenance.key.clone(),
                    detail: format!("{} values now, {} in the {what}", p.len(), q.len()),
                });
            }
        }
        let mut at = 0usize;
        p.data.for_each_chunk(&mut |c| {
            moments.push_slice(c);
            if let Some(q) = prev {
                let n = chunk_into(&q.data, at, &mut buf[..c.len()]);
                for (&now, &o) in c.iter().zip(&buf[..n]) {
                    // The update's base is the weight the step started from: `now` when the
                    // update is given (params are the weights the forward used), else `o`.
                    let (step, base) = if is_update { (o, now) } else { (now - o, o) };
                    if step.is_finite() && base.is_finite() {
                        diff_sq += step * step;
                        prev_sq += base * base;
                    }
                }
            }
            at += c.len();
        });
    }
    let s = moments.finish();
    put(out, m::PARAM_NORM, s.l2);
    put(out, m::PARAM_ABSMAX, s.absmax);
    put(out, m::PARAM_MEAN_ABS, mean_abs(s.l1, s.count, s.nonfinite));
    if !other.is_empty() {
        let update = diff_sq.sqrt();
        put(out, m::UPDATE_NORM, Some(update));
        put(
            out,
            m::UPDATE_RATIO,
            (prev_sq > 0.0).then(|| update / prev_sq.sqrt()),
        );
        put(out, UPDATE_STEPS, Some(1.0));
    }
    Ok((s.nan, s.nonfinite))
}

/// How many optimiser steps the update metrics were taken over: always 1 where written (an
/// `update.*` tensor, or a difference against the step just before); an update over a gap of
/// more steps is never measured.
pub const UPDATE_STEPS: &str = "update_steps";

fn mean_abs(l1: Option<f64>, count: u64, nonfinite: u64) -> Option<f64> {
    let finite = count.checked_sub(nonfinite).filter(|n| *n > 0)?;
    l1.map(|l| l / finite as f64)
}

/// Gradient metrics over all the node's gradients together.
fn grads(grads: &[&TypedTensor], out: &mut Metrics) -> Result<(u64, u64), MeasureError> {
    let mut moments = Moments::new();
    for g in grads {
        check_shape(g)?;
        g.data.for_each_chunk(&mut |c| moments.push_slice(c));
    }
    let s = moments.finish();
    put(out, m::GRAD_NORM, s.l2);
    put(out, m::GRAD_MEAN_ABS, mean_abs(s.l1, s.count, s.nonfinite));
    put(out, m::GRAD_ZERO_FRACTION, s.zero_fraction);
    Ok((s.nan, s.nonfinite))
}

/// Per-unit running sums of an output.
struct Units {
    count: Vec<u64>,
    shift: Vec<f64>,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
    sum_abs: Vec<f64>,
    positive: Vec<u64>,
    saturated: Vec<u64>,
}

impl Units {
    fn new(n: usize) -> Self {
        Units {
            count: vec![0; n],
            shift: vec![f64::NAN; n],
            sum: vec![0.0; n],
            sum_sq: vec![0.0; n],
            sum_abs: vec![0.0; n],
            positive: vec![0; n],
            saturated: vec![0; n],
        }
    }

    #[inline]
    fn push(&mut self, u: usize, x: f64, scale: Option<Scale>) {
        if !x.is_finite() {
            return;
        }
        if self.shift[u].is_nan() {
            self.shift[u] = x;
        }
        let d = x - self.shift[u];
        self.count[u] += 1;
        self.sum[u] += d;
        self.sum_sq[u] += d * d;
        self.sum_abs[u] += x.abs();
        self.positive[u] += (x > 0.0) as u64;
        if let Some(scale) = scale {
            let y = match scale {
                Scale::Tanh => x,
                Scale::Sigmoid => 2.0 * x - 1.0,
            };
            self.saturated[u] += (y.abs() > SATURATED_OUTPUT) as u64;
        }
    }
}

/// The scale saturation is judged on.
#[derive(Clone, Copy)]
enum Scale {
    Tanh,
    Sigmoid,
}

/// Output metrics: moments overall and per unit, in one pass over the output.
fn activation(
    act: &TypedTensor,
    kind: &str,
    rule: UnitRule,
    next_weight: Option<&TypedTensor>,
    out: &mut Metrics,
) -> Result<(u64, u64), MeasureError> {
    check_shape(act)?;
    if act.is_empty() {
        // Nothing to measure; and a shape such as [0, 10^12] must not size per-unit sums.
        return Ok((0, 0));
    }
    let scale = match classify(kind) {
        KindClass::TanhLike => Some(Scale::Tanh),
        KindClass::SigmoidLike => Some(Scale::Sigmoid),
        _ => None,
    };
    let (units, inner) = match unit_axis(act, kind, rule)? {
        Some(a) => (act.shape[a], act.shape[a + 1..].iter().product::<usize>()),
        None => (1, act.len().max(1)),
    };
    let mut acc = Units::new(units);
    let mut moments = Moments::new();
    let (mut unit, mut pos) = (0usize, 0usize);
    if units > 0 && inner > 0 {
        act.data.for_each_chunk(&mut |c| {
            moments.push_slice(c);
            for &x in c {
                acc.push(unit, x, scale);
                pos += 1;
                if pos == inner {
                    pos = 0;
                    unit += 1;
                    if unit == units {
                        unit = 0;
                    }
                }
            }
        });
    }
    let s = moments.finish();
    put(out, m::ACT_MEAN, s.mean);
    put(out, m::ACT_ZERO_FRACTION, s.zero_fraction);
    unit_metrics(&acc, scale.is_some(), next_weight, out);
    Ok((s.nan, s.nonfinite))
}

/// The per-unit metrics from the running sums. Units with no finite output count in
/// `units` but in none of the dead, dormant, saturated or ignored counts.
fn unit_metrics(acc: &Units, saturating: bool, next: Option<&TypedTensor>, out: &mut Metrics) {
    let Some(layer) = Layer::of(acc) else { return };
    put(
        out,
        m::ACT_VAR,
        Some(layer.mean_over_live(|u| layer.var[u])),
    );
    put(
        out,
        m::ACT_MEAN_SQ,
        Some(layer.mean_over_live(|u| layer.mean[u].powi(2))),
    );
    put(out, m::UNITS, Some(layer.units()));
    let samples: u64 = acc.count.iter().sum();
    put(out, m::UNIT_SAMPLES, Some(samples as f64 / layer.units()));
    let dead = layer.count_live(|u| (acc.positive[u] as f64 / layer.n[u]) < DEAD_ACTIVITY);
    layer.put_count(out, m::DEAD_UNITS, m::DEAD_UNIT_FRACTION, dead);
    let dormant = layer.dormant();
    let n_dormant = layer.count_live(|u| dormant[u]);
    layer.put_count(out, m::DORMANT_UNITS, m::DORMANT_UNIT_FRACTION, n_dormant);
    if saturating {
        let entries: u64 = acc.saturated.iter().sum();
        let all: u64 = acc.count.iter().sum();
        put(
            out,
            m::ACT_SATURATED_FRACTION,
            Some(entries as f64 / all as f64),
        );
        let sat = layer.count_live(|u| acc.saturated[u] as f64 / layer.n[u] > SATURATED_UNIT_SHARE);
        layer.put_count(out, m::SATURATED_UNITS, m::SATURATED_UNIT_FRACTION, sat);
    }
    if let Some(outgoing) = next.and_then(|w| outgoing_mean_abs(w, acc.count.len())) {
        let utility: Vec<f64> = outgoing
            .iter()
            .zip(&layer.mean_abs)
            .map(|(w, h)| w * h)
            .collect();
        let mean_utility = layer.mean_over_live(|u| utility[u]);
        let ignored =
            layer.count_live(|u| !dormant[u] && utility[u] <= IGNORED_UTILITY * mean_utility);
        layer.put_count(out, m::IGNORED_UNITS, m::IGNORED_UNIT_FRACTION, ignored);
    }
}

/// Per-unit moments of a layer's output, over the units with a finite output (`live`).
struct Layer {
    live: Vec<usize>,
    n: Vec<f64>,
    mean: Vec<f64>,
    var: Vec<f64>,
    mean_abs: Vec<f64>,
}

impl Layer {
    fn of(acc: &Units) -> Option<Layer> {
        let units = acc.count.len();
        let live: Vec<usize> = (0..units).filter(|&u| acc.count[u] > 0).collect();
        if live.is_empty() {
            return None;
        }
        let n: Vec<f64> = acc.count.iter().map(|&c| (c as f64).max(1.0)).collect();
        let shifted: Vec<f64> = (0..units).map(|u| acc.sum[u] / n[u]).collect();
        Some(Layer {
            mean: (0..units).map(|u| acc.shift[u] + shifted[u]).collect(),
            var: (0..units)
                .map(|u| (acc.sum_sq[u] / n[u] - shifted[u] * shifted[u]).max(0.0))
                .collect(),
            mean_abs: (0..units).map(|u| acc.sum_abs[u] / n[u]).collect(),
            live,
            n,
        })
    }

    fn units(&self) -> f64 {
        self.n.len() as f64
    }

    fn mean_over_live(&self, f: impl Fn(usize) -> f64) -> f64 {
        self.live.iter().map(|&u| f(u)).sum::<f64>() / self.live.len() as f64
    }

    fn count_live(&self, f: impl Fn(usize) -> bool) -> f64 {
        self.live.iter().filter(|&&u| f(u)).count() as f64
    }

    /// Which units are dormant: ReDo score mean|h_c| / mean_k mean|h_k| at most
    /// [`DORMANT_SCORE`]; every live unit when the whole layer is zero.
    fn dormant(&self) -> Vec<bool> {
        let layer = self.mean_over_live(|u| self.mean_abs[u]);
        let mut out = vec![false; self.n.len()];
        for &u in &self.live {
            out[u] = layer == 0.0 || self.mean_abs[u] / layer <= DORMANT_SCORE;
        }
        out
    }

    fn put_count(&self, out: &mut Metrics, count: &str, fraction: &str, n: f64) {
        put(out, count, Some(n));
        put(out, fraction, Some(n / self.units()));
    }
}

/// Mean |w| of the next layer's weights reading each unit: axis 1 of `(out, units, …)`,
/// groups of `k` along axis 1 of `(out, units·k)` (a flattened `N,C,H,W`), or `|w|` of a
/// `(units,)` scale. `None` when the weight reads some other width, or is malformed.
pub fn outgoing_mean_abs(w: &TypedTensor, units: usize) -> Option<Vec<f64>> {
    check_shape(w).ok()?;
    if units == 0 {
        return None;
    }
    let (cols, inner) = match w.shape.as_slice() {
        [d] if *d == units => (units, 1usize),
        [_, cols, rest @ ..] if *cols > 0 && cols % units == 0 => (*cols, rest.iter().product()),
        _ => return None,
    };
    let group = cols / units;
    let mut sum = vec![0.0f64; units];
    let mut count = vec![0u64; units];
    let (mut col, mut pos) = (0usize, 0usize);
    w.data.for_each_chunk(&mut |c| {
        for &x in c {
            if x.is_finite() {
                let u = col / group;
                sum[u] += x.abs();
                count[u] += 1;
            }
            pos += 1;
            if pos == inner {
                pos = 0;
                col += 1;
                if col == cols {
                    col = 0;
                }
            }
        }
    });
    Some(
        sum.iter()
            .zip(&count)
            .map(|(s, &n)| if n > 0 { s / n as f64 } else { 0.0 })
            .collect(),
    )
}

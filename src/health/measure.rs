//! Measuring a node from its whole tensors: each tensor read once into its summary
//! ([`super::summary`]), then the metrics derived from the summaries by [`super::metrics`],
//! the same code torch's summaries go through.

pub use super::error::MeasureError;
pub use super::layout::{unit_axis, UnitRule};
use super::metrics::{node_metrics, outgoing_of, NodeSums};
pub use super::metrics::{
    DEAD_ACTIVITY, DORMANT_SCORE, IGNORED_UTILITY, SATURATED_UNIT_SHARE, UPDATE_RANK_RESOLUTION,
    UPDATE_STEPS,
};
use super::rank::{as_matrix, feature_spectrum, spectrum};
use super::summary::{
    Columns, FullSums, NodeSpectra, OutputSums, TensorSums, UnitSums, UpdateSums,
};
use super::Metrics;
pub use super::CKA_MAX_ENTRIES;
use crate::math::stats::Moments;
use crate::tensor::typed::{bf16_to_f64, f16_to_f64};
use crate::tensor::{TensorData, TypedTensor};
use somatize_verdict::metrics as m;
use somatize_verdict::{classify, KindClass};

/// An output is saturated past this on the tanh scale (Karpathy, makemore part 3).
pub const SATURATED_OUTPUT: f64 = 0.97;

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

/// One node's tensors summarised: what [`measure`] derives its metrics from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeSummary {
    /// Each parameter's sums, in the order given.
    pub params: Vec<TensorSums>,
    /// Each gradient's.
    pub grads: Vec<TensorSums>,
    /// Each parameter's applied update (empty without one).
    pub updates: Vec<UpdateSums>,
    /// The output's, with its unit axis (`None`: one unit).
    pub output: Option<(OutputSums, Option<usize>)>,
    /// The spectra of the first weight's update and gradient and of the output.
    pub spectra: NodeSpectra,
}

/// Every metric of the node its tensors allow, each tensor read once: [`summarise`], then
/// [`node_metrics`].
pub fn measure(node: &NodeTensors) -> Result<Metrics, MeasureError> {
    let s = summarise(node)?;
    let units = s.output.as_ref().map(|(o, _)| o.units.len());
    let outgoing = match (node.next_weight, units) {
        (Some(w), Some(units)) => outgoing_mean_abs(w, units),
        _ => None,
    };
    Ok(node_metrics(&NodeSums {
        kind: node.kind,
        params: s.params.iter().collect(),
        grads: s.grads.iter().collect(),
        updates: s.updates.iter().collect(),
        rank_weight: node.params.iter().position(|p| p.shape.len() >= 2),
        output: s.output.as_ref().map(|(o, _)| o),
        outgoing,
        spectra: Some(&s.spectra),
        cka: None,
    }))
}

/// A node's tensors summarised, each read once: parameters (with the update of each, from
/// `updates` or against `previous`), gradients, the output along its unit axis, and the
/// spectra of the first weight's update and gradient and of the output.
pub fn summarise(node: &NodeTensors) -> Result<NodeSummary, MeasureError> {
    let mut out = NodeSummary::default();
    // The applied update, when given, wins over a difference against the step before.
    let (other, is_update) = if node.updates.is_empty() {
        (node.previous, false)
    } else {
        (node.updates, true)
    };
    let what = if is_update { "updates" } else { "previous" };
    if !other.is_empty() && other.len() != node.params.len() {
        return Err(MeasureError::Previous {
            key: "<count>".into(),
            detail: format!("{} parameters, {} {what}", node.params.len(), other.len()),
        });
    }
    for (i, p) in node.params.iter().enumerate() {
        let (sums, update) = summarise_param(p, other.get(i).copied(), is_update)?;
        out.params.push(sums);
        out.updates.extend(update);
    }
    for g in node.grads {
        out.grads.push(summarise_tensor(g)?);
    }
    if let Some(act) = node.activation {
        out.output = summarise_output(act, node.kind, node.units)?;
    }
    out.spectra = spectra(node, out.output.as_ref())?;
    Ok(out)
}

/// A tensor's sums (full), in one pass.
pub fn summarise_tensor(t: &TypedTensor) -> Result<TensorSums, MeasureError> {
    check_shape(t)?;
    let mut moments = Moments::new();
    t.data.for_each_chunk(&mut |c| moments.push_slice(c));
    Ok(tensor_sums(t, &moments))
}

fn tensor_sums(t: &TypedTensor, moments: &Moments) -> TensorSums {
    TensorSums {
        shape: t.shape.clone(),
        finite: moments.finite(),
        nan: moments.nan(),
        sum_sq: moments.sum_sq(),
        full: Some(FullSums {
            sum_abs: moments.sum_abs(),
            absmax: moments.finish().absmax.unwrap_or(0.0),
            zeros: Some(moments.zeros()),
        }),
        columns: None,
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

/// A parameter's sums and, with `other` (its applied update when `is_update`, else the same
/// parameter one step earlier), the update's, in one pass over both: the update's base is the
/// weight the step started from (the parameter itself when the update is given, else the
/// earlier one), over the entries where the step and its base are both finite.
pub fn summarise_param(
    p: &TypedTensor,
    other: Option<&TypedTensor>,
    is_update: bool,
) -> Result<(TensorSums, Option<UpdateSums>), MeasureError> {
    check_shape(p)?;
    let what = if is_update { "updates" } else { "previous" };
    if let Some(q) = other {
        if q.len() != p.len() {
            return Err(MeasureError::Previous {
                key: p.provenance.key.clone(),
                detail: format!("{} values now, {} in the {what}", p.len(), q.len()),
            });
        }
    }
    let mut moments = Moments::new();
    let (mut diff_sq, mut base_sq) = (0.0f64, 0.0f64);
    let mut buf = vec![
        0f64;
        if other.is_some() {
            crate::tensor::typed::CHUNK
        } else {
            0
        }
    ];
    let mut at = 0usize;
    p.data.for_each_chunk(&mut |c| {
        moments.push_slice(c);
        if let Some(q) = other {
            let n = chunk_into(&q.data, at, &mut buf[..c.len()]);
            for (&now, &o) in c.iter().zip(&buf[..n]) {
                let (step, base) = if is_update { (o, now) } else { (now - o, o) };
                if step.is_finite() && base.is_finite() {
                    diff_sq += step * step;
                    base_sq += base * base;
                }
            }
        }
        at += c.len();
    });
    let update = other.map(|_| UpdateSums {
        sum_sq: diff_sq,
        base_sq,
    });
    Ok((tensor_sums(p, &moments), update))
}

/// Per-unit running sums of an output.
struct Units {
    sums: UnitSums,
    nan: u64,
    nonfinite: u64,
}

impl Units {
    fn new(n: usize, saturating: bool) -> Self {
        Units {
            sums: UnitSums {
                count: vec![0.0; n],
                shift: vec![f64::NAN; n],
                sum: vec![0.0; n],
                sum_sq: vec![0.0; n],
                sum_abs: vec![0.0; n],
                positive: vec![0.0; n],
                zeros: vec![0.0; n],
                saturated: saturating.then(|| vec![0.0; n]),
            },
            nan: 0,
            nonfinite: 0,
        }
    }

    #[inline]
    fn push(&mut self, u: usize, x: f64, scale: Option<Scale>) {
        if !x.is_finite() {
            self.nonfinite += 1;
            self.nan += u64::from(x.is_nan());
            return;
        }
        let s = &mut self.sums;
        if s.shift[u].is_nan() {
            s.shift[u] = x;
        }
        let d = x - s.shift[u];
        s.count[u] += 1.0;
        s.sum[u] += d;
        s.sum_sq[u] += d * d;
        s.sum_abs[u] += x.abs();
        s.positive[u] += f64::from(u8::from(x > 0.0));
        s.zeros[u] += f64::from(u8::from(x == 0.0));
        if let (Some(scale), Some(sat)) = (scale, s.saturated.as_mut()) {
            let y = match scale {
                Scale::Tanh => x,
                Scale::Sigmoid => 2.0 * x - 1.0,
            };
            sat[u] += f64::from(u8::from(y.abs() > SATURATED_OUTPUT));
        }
    }
}

/// The scale saturation is judged on.
#[derive(Clone, Copy)]
enum Scale {
    Tanh,
    Sigmoid,
}

/// An output's per-unit sums in one pass, along its unit axis (with that axis: `None` for
/// one unit); `None` for an empty output (nothing to measure, and a shape such as
/// `[0, 10^12]` must not size per-unit sums).
pub fn summarise_output(
    act: &TypedTensor,
    kind: &str,
    rule: UnitRule,
) -> Result<Option<(OutputSums, Option<usize>)>, MeasureError> {
    check_shape(act)?;
    if act.is_empty() {
        return Ok(None);
    }
    let scale = match classify(kind) {
        KindClass::TanhLike => Some(Scale::Tanh),
        KindClass::SigmoidLike => Some(Scale::Sigmoid),
        _ => None,
    };
    let axis = unit_axis(act, kind, rule)?;
    let (units, inner) = match axis {
        Some(a) => (act.shape[a], act.shape[a + 1..].iter().product::<usize>()),
        None => (1, act.len().max(1)),
    };
    let mut acc = Units::new(units, scale.is_some());
    let (mut unit, mut pos) = (0usize, 0usize);
    if units > 0 && inner > 0 {
        act.data.for_each_chunk(&mut |c| {
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
    let elements = act.len() as u64;
    Ok(Some((
        OutputSums {
            elements,
            nan: acc.nan,
            nonfinite: acc.nonfinite,
            positions: elements.checked_div(units as u64).unwrap_or(0),
            units: acc.sums,
        },
        axis,
    )))
}

/// The spectra of the node's weight update, weight gradient and output (see
/// [`super::rank`]): the weight is the first parameter of two or more axes, read as
/// (out × rest); the output as (positions × units) along its unit axis. Matrices with a
/// non-finite entry in their sample have none.
fn spectra(
    node: &NodeTensors,
    output: Option<&(OutputSums, Option<usize>)>,
) -> Result<NodeSpectra, MeasureError> {
    let mut out = NodeSpectra::default();
    let weight = node.params.iter().position(|p| p.shape.len() >= 2);
    if let Some(i) = weight {
        let p = node.params[i];
        if let Some(u) = node.updates.get(i) {
            if p.len() == u.len() && as_matrix(&p.shape).is_some() {
                out.update = spectrum(&u.data.to_f64(), &p.shape);
            }
        } else if let Some(q) = node.previous.get(i) {
            if p.len() == q.len() && as_matrix(&p.shape).is_some() {
                let update: Vec<f64> = p
                    .data
                    .to_f64()
                    .iter()
                    .zip(&q.data.to_f64())
                    .map(|(a, b)| a - b)
                    .collect();
                out.update = spectrum(&update, &p.shape);
            }
        }
    }
    if let Some(g) = node.grads.iter().find(|g| g.shape.len() >= 2) {
        if as_matrix(&g.shape).is_some() {
            out.grad = spectrum(&g.data.to_f64(), &g.shape);
        }
    }
    if let (Some(a), Some((_, Some(axis)))) = (node.activation, output) {
        out.feature = feature_spectrum(a, *axis);
    }
    Ok(out)
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
    let mut put = |name: &str, v: Option<f64>| {
        if let Some(v) = v {
            out.insert(name.to_string(), v);
        }
    };
    put(m::LOSS, value);
    put(m::NAN, Some(s.nan as f64));
    put(m::INF, Some((s.nonfinite - s.nan) as f64));
    put(m::NONFINITE, Some(s.nonfinite as f64));
    out
}

/// A weight's |w| per index of axis 1 (over axis 0 and every axis after 1), finite entries
/// only: what the mean |w| reading each unit of the layer before it is taken from
/// ([`outgoing_of`]). `None` for fewer than two axes or a malformed tensor.
pub fn summarise_columns(w: &TypedTensor) -> Option<Columns> {
    check_shape(w).ok()?;
    let (cols, inner) = match w.shape.as_slice() {
        [_, cols, rest @ ..] => (*cols, rest.iter().product::<usize>()),
        _ => return None,
    };
    let mut abs = vec![0.0f64; cols];
    let mut finite = vec![0.0f64; cols];
    if cols == 0 || inner == 0 {
        return Some(Columns { abs, finite });
    }
    let (mut col, mut pos) = (0usize, 0usize);
    w.data.for_each_chunk(&mut |c| {
        for &x in c {
            if x.is_finite() {
                abs[col] += x.abs();
                finite[col] += 1.0;
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
    Some(Columns { abs, finite })
}

/// Mean |w| of the next layer's weights reading each unit: axis 1 of `(out, units, …)`,
/// groups of `k` along axis 1 of `(out, units·k)` (a flattened `N,C,H,W`), or `|w|` of a
/// `(units,)` scale. `None` when the weight reads some other width, or is malformed.
pub fn outgoing_mean_abs(w: &TypedTensor, units: usize) -> Option<Vec<f64>> {
    check_shape(w).ok()?;
    if units == 0 {
        return None;
    }
    match w.shape.as_slice() {
        [d] if *d == units => {
            let mut out = Vec::with_capacity(units);
            w.data.for_each_chunk(&mut |c| {
                out.extend(c.iter().map(|x| if x.is_finite() { x.abs() } else { 0.0 }))
            });
            Some(out)
        }
        [_, cols, ..] if *cols > 0 && cols % units == 0 => {
            outgoing_of(&summarise_columns(w)?, units)
        }
        _ => None,
    }
}

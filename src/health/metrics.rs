//! The metric vocabulary from summaries: every health metric derived once, here, from a
//! step's [`StepSummary`], whether Rust summarised whole tensors or torch summarised them on
//! the device.
//!
//! The names and meanings are the vocabulary of `somatize_verdict::metrics`; docs/health.md
//! lists them. Constants that decide what a unit is (dead, dormant, saturated, ignored) are
//! fixed at measurement and written down here: changing them means measuring again, while
//! every bound in `Thresholds` can be changed over a stored record.

use super::graph::GraphNode;
use super::keys::{keyed, readers};
use super::rank::{spectrum_metrics, RankOf};
use super::summary::{
    CkaSums, Columns, NodeSpectra, OutputSums, StepSummary, TensorSums, UnitSums, UpdateSums,
};
use super::Metrics;
use crate::math::linalg;
use somatize_verdict::metrics as m;
use somatize_verdict::{classify, KindClass, NodeSeen};
use std::collections::HashSet;

/// A unit is dead when its share of outputs above 0 is below this (Dohare et al. 2024;
/// SageMaker DeadRelu threshold_inactivity 1 %).
pub const DEAD_ACTIVITY: f64 = 0.01;
/// A unit is dormant when its ReDo score is at most this (Sokar et al. 2023, τ = 0.1 as in
/// the timoklein/redo reimplementation).
pub const DORMANT_SCORE: f64 = 0.1;
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

/// How many optimiser steps the update metrics were taken over: always 1 where written (an
/// `update.*` tensor, or a difference against the step just before); an update over a gap of
/// more steps is never measured.
pub const UPDATE_STEPS: &str = "update_steps";

/// What one node's metrics are derived from, borrowed from a step's summary.
#[derive(Debug, Clone, Default)]
pub struct NodeSums<'a> {
    /// The node's kind (`ReLU`, `Tanh`, `Linear`, …; empty if unknown): saturation is judged
    /// on tanh- and sigmoid-like kinds only.
    pub kind: &'a str,
    /// Its parameters' sums, in key order.
    pub params: Vec<&'a TensorSums>,
    /// Its gradients' sums.
    pub grads: Vec<&'a TensorSums>,
    /// The update one optimiser step applied, one per parameter in the same order; empty
    /// when any parameter has none (no update metrics).
    pub updates: Vec<&'a UpdateSums>,
    /// Which parameter is the weight whose update and gradient spectra are taken (the first
    /// of two or more axes).
    pub rank_weight: Option<usize>,
    /// Its output's.
    pub output: Option<&'a OutputSums>,
    /// The mean |w| of the consumer's weights reading each of its units.
    pub outgoing: Option<Vec<f64>>,
    /// Its spectra.
    pub spectra: Option<&'a NodeSpectra>,
    /// CKA's sums, on the second node of a pair declared apart.
    pub cka: Option<&'a CkaSums>,
}

fn put(out: &mut Metrics, name: &str, value: Option<f64>) {
    if let Some(v) = value {
        out.insert(name.to_string(), v);
    }
}

/// Tensors' sums added up: entries, finite, NaN, Σx², and with every one full Σ|x| and
/// max |x| over those with a finite entry, and the zeros when every one has them.
struct Totals {
    count: u64,
    finite: u64,
    nan: u64,
    sum_sq: f64,
    full: Option<(f64, f64)>,
    zeros: Option<u64>,
}

fn totals(ts: &[&TensorSums]) -> Totals {
    let mut t = Totals {
        count: 0,
        finite: 0,
        nan: 0,
        sum_sq: 0.0,
        full: Some((0.0, 0.0)),
        zeros: Some(0),
    };
    for s in ts {
        t.count = t.count.saturating_add(s.count().unwrap_or(u64::MAX));
        t.finite = t.finite.saturating_add(s.finite);
        t.nan = t.nan.saturating_add(s.nan);
        t.sum_sq += s.sum_sq;
        t.full = match (t.full, s.full) {
            (Some((l1, max)), Some(f)) => Some((
                l1 + f.sum_abs,
                if s.finite > 0 { max.max(f.absmax) } else { max },
            )),
            _ => None,
        };
        t.zeros = match (t.zeros, s.full.and_then(|f| f.zeros)) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
    }
    t
}

/// Every metric one node's summaries allow.
pub fn node_metrics(node: &NodeSums) -> Metrics {
    let mut out = Metrics::new();
    let (mut nan, mut nonfinite, mut any) = (0u64, 0u64, false);
    if !node.params.is_empty() {
        let t = totals(&node.params);
        let some = |v: f64| (t.finite > 0).then_some(v);
        put(&mut out, m::PARAM_NORM, some(t.sum_sq.sqrt()));
        if let Some((l1, max)) = t.full {
            put(&mut out, m::PARAM_ABSMAX, some(max));
            put(&mut out, m::PARAM_MEAN_ABS, some(l1 / t.finite as f64));
        }
        if !node.updates.is_empty() && node.updates.len() == node.params.len() {
            let diff: f64 = node.updates.iter().map(|u| u.sum_sq).sum();
            let base: f64 = node.updates.iter().map(|u| u.base_sq).sum();
            let update = diff.sqrt();
            put(&mut out, m::UPDATE_NORM, Some(update));
            put(
                &mut out,
                m::UPDATE_RATIO,
                (base > 0.0).then(|| update / base.sqrt()),
            );
            put(&mut out, UPDATE_STEPS, Some(1.0));
        }
        nan += t.nan;
        nonfinite += t.count.saturating_sub(t.finite);
        any = true;
    }
    if !node.grads.is_empty() {
        let t = totals(&node.grads);
        let some = |v: f64| (t.finite > 0).then_some(v);
        put(&mut out, m::GRAD_NORM, some(t.sum_sq.sqrt()));
        if let Some((l1, _)) = t.full {
            put(&mut out, m::GRAD_MEAN_ABS, some(l1 / t.finite as f64));
        }
        if let Some(zeros) = t.zeros.filter(|_| t.count > 0) {
            put(
                &mut out,
                m::GRAD_ZERO_FRACTION,
                Some(zeros as f64 / t.count as f64),
            );
        }
        nan += t.nan;
        let broken = t.count.saturating_sub(t.finite);
        put(&mut out, m::GRAD_NONFINITE, Some(broken as f64));
        nonfinite += broken;
        any = true;
    }
    if let Some(o) = node.output.filter(|o| o.elements > 0) {
        let saturating = matches!(
            classify(node.kind),
            KindClass::TanhLike | KindClass::SigmoidLike
        );
        output_metrics(o, saturating, node.outgoing.as_deref(), &mut out);
        nan += o.nan;
        nonfinite += o.nonfinite;
        any = true;
    }
    if let Some(s) = node.spectra {
        let samples = node.output.map(|o| o.positions).filter(|n| *n > 0);
        // An update within rounding of the weights has no direction worth a rank.
        let resolved = node
            .rank_weight
            .and_then(|i| node.updates.get(i))
            .is_some_and(|u| u.sum_sq.sqrt() > UPDATE_RANK_RESOLUTION * u.base_sq.sqrt());
        if let Some(u) = s.update.as_ref().filter(|_| resolved) {
            out.extend(spectrum_metrics(RankOf::Update, u, samples));
        }
        if let Some(g) = &s.grad {
            out.extend(spectrum_metrics(RankOf::Grad, g, samples));
        }
        if let Some(f) = &s.feature {
            out.extend(spectrum_metrics(RankOf::Feature, f, None));
        }
    }
    if let Some(c) = node.cka {
        put(&mut out, m::CKA, linalg::cka_of(c.xy, c.xx, c.yy));
    }
    if any {
        put(&mut out, m::NAN, Some(nan as f64));
        put(
            &mut out,
            m::INF,
            Some((nonfinite - nan.min(nonfinite)) as f64),
        );
        put(&mut out, m::NONFINITE, Some(nonfinite as f64));
    }
    out
}

/// Output metrics: moments overall and per unit. Units with no finite output count in
/// `units` but in none of the dead, dormant, saturated or ignored counts.
fn output_metrics(o: &OutputSums, saturating: bool, outgoing: Option<&[f64]>, out: &mut Metrics) {
    let u = &o.units;
    let finite: f64 = u.count.iter().sum();
    // (A unit with no finite output has no shift: it adds nothing.)
    let total: f64 = (0..u.len())
        .filter(|&i| u.count[i] > 0.0)
        .map(|i| u.count[i] * u.shift[i] + u.sum[i])
        .sum();
    put(out, m::ACT_MEAN, (finite > 0.0).then(|| total / finite));
    let zeros: f64 = u.zeros.iter().sum();
    put(out, m::ACT_ZERO_FRACTION, Some(zeros / o.elements as f64));
    let Some(layer) = Layer::of(u) else { return };
    put(
        out,
        m::ACT_VAR,
        Some(layer.mean_over_live(|i| layer.var[i])),
    );
    put(
        out,
        m::ACT_MEAN_SQ,
        Some(layer.mean_over_live(|i| layer.mean[i].powi(2))),
    );
    put(out, m::UNITS, Some(layer.units()));
    put(out, m::UNIT_SAMPLES, Some(finite / layer.units()));
    let dead = layer.count_live(|i| (u.positive[i] / layer.n[i]) < DEAD_ACTIVITY);
    layer.put_count(out, m::DEAD_UNITS, m::DEAD_UNIT_FRACTION, dead);
    let dormant = layer.dormant();
    let n_dormant = layer.count_live(|i| dormant[i]);
    layer.put_count(out, m::DORMANT_UNITS, m::DORMANT_UNIT_FRACTION, n_dormant);
    if let (true, Some(sat)) = (saturating, u.saturated.as_ref()) {
        let entries: f64 = sat.iter().sum();
        put(out, m::ACT_SATURATED_FRACTION, Some(entries / finite));
        let n = layer.count_live(|i| sat[i] / layer.n[i] > SATURATED_UNIT_SHARE);
        layer.put_count(out, m::SATURATED_UNITS, m::SATURATED_UNIT_FRACTION, n);
    }
    if let Some(outgoing) = outgoing.filter(|w| w.len() == u.len()) {
        let utility: Vec<f64> = outgoing
            .iter()
            .zip(&layer.mean_abs)
            .map(|(w, h)| w * h)
            .collect();
        let mean_utility = layer.mean_over_live(|i| utility[i]);
        let ignored =
            layer.count_live(|i| !dormant[i] && utility[i] <= IGNORED_UTILITY * mean_utility);
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
    fn of(u: &UnitSums) -> Option<Layer> {
        let units = u.len();
        let live: Vec<usize> = (0..units).filter(|&i| u.count[i] > 0.0).collect();
        if live.is_empty() {
            return None;
        }
        let n: Vec<f64> = u.count.iter().map(|&c| c.max(1.0)).collect();
        let shifted: Vec<f64> = (0..units).map(|i| u.sum[i] / n[i]).collect();
        Some(Layer {
            mean: (0..units).map(|i| u.shift[i] + shifted[i]).collect(),
            var: (0..units)
                .map(|i| (u.sum_sq[i] / n[i] - shifted[i] * shifted[i]).max(0.0))
                .collect(),
            mean_abs: (0..units).map(|i| u.sum_abs[i] / n[i]).collect(),
            live,
            n,
        })
    }

    fn units(&self) -> f64 {
        self.n.len() as f64
    }

    fn mean_over_live(&self, f: impl Fn(usize) -> f64) -> f64 {
        self.live.iter().map(|&i| f(i)).sum::<f64>() / self.live.len() as f64
    }

    fn count_live(&self, f: impl Fn(usize) -> bool) -> f64 {
        self.live.iter().filter(|&&i| f(i)).count() as f64
    }

    /// Which units are dormant: ReDo score mean|h_c| / mean_k mean|h_k| at most
    /// [`DORMANT_SCORE`]; every live unit when the whole layer is zero.
    fn dormant(&self) -> Vec<bool> {
        let layer = self.mean_over_live(|i| self.mean_abs[i]);
        let mut out = vec![false; self.n.len()];
        for &i in &self.live {
            out[i] = layer == 0.0 || self.mean_abs[i] / layer <= DORMANT_SCORE;
        }
        out
    }

    fn put_count(&self, out: &mut Metrics, count: &str, fraction: &str, n: f64) {
        put(out, count, Some(n));
        put(out, fraction, Some(n / self.units()));
    }
}

/// Mean |w| of a weight's entries reading each of `units` units, from its column sums: the
/// columns (axis 1) in `units` groups of consecutive ones (a flattened `N,C,H,W` is read by
/// `C·H·W` columns, `H·W` of them per unit). `None` when the weight reads some other width.
pub fn outgoing_of(columns: &Columns, units: usize) -> Option<Vec<f64>> {
    let cols = columns.abs.len();
    if units == 0 || cols == 0 || !cols.is_multiple_of(units) || columns.finite.len() != cols {
        return None;
    }
    let group = cols / units;
    Some(
        (0..units)
            .map(|u| {
                let span = u * group..(u + 1) * group;
                let n: f64 = columns.finite[span.clone()].iter().sum();
                let s: f64 = columns.abs[span].iter().sum();
                if n > 0.0 {
                    s / n
                } else {
                    0.0
                }
            })
            .collect(),
    )
}

/// Every node's metrics at one step, in the order of `graph` (declaration order), from the
/// step's summary. A parameter or gradient belongs to the graph node with the longest name
/// its path starts with (a coarse node owns its submodules' parameters); a node's update
/// metrics need the update of every parameter of it; its ignored units are judged by the
/// weight of the consumer that reads them ([`readers`]), from that weight's column sums.
pub fn step_metrics(graph: &[GraphNode], summary: &StepSummary) -> Vec<NodeSeen> {
    let names: HashSet<&str> = graph.iter().map(|n| n.name.as_str()).collect();
    let params = keyed(&summary.tensors, "param", &names);
    let grads = keyed(&summary.tensors, "grad", &names);
    let weight = |name: &str| summary.tensors.get(&format!("param.{name}.weight"));
    let readers = readers(graph, |name| {
        weight(name).is_some_and(|w| w.shape.len() >= 2)
    });
    let none = Vec::new();
    let mut out = Vec::with_capacity(graph.len());
    for (i, node) in graph.iter().enumerate() {
        let name = node.name.as_str();
        let params = params.get(name).unwrap_or(&none);
        let updates: Option<Vec<&UpdateSums>> = params
            .iter()
            .map(|(key, _)| {
                let path = key.strip_prefix("param.")?;
                summary.updates.get(&format!("update.{path}"))
            })
            .collect();
        let output = summary.outputs.get(name);
        let outgoing = match (readers[i], output) {
            (Some(r), Some(o)) => weight(&graph[r].name)
                .and_then(|w| w.columns.as_ref())
                .and_then(|c| outgoing_of(c, o.units.len())),
            _ => None,
        };
        let metrics = node_metrics(&NodeSums {
            kind: &node.kind,
            params: params.iter().map(|(_, t)| *t).collect(),
            grads: grads
                .get(name)
                .map(|g| g.iter().map(|(_, t)| *t).collect())
                .unwrap_or_default(),
            updates: updates.unwrap_or_default(),
            rank_weight: params.iter().position(|(_, t)| t.shape.len() >= 2),
            output,
            outgoing,
            spectra: summary.spectra.get(name),
            cka: summary.cka.get(name),
        });
        out.push(NodeSeen {
            name: node.name.clone(),
            kind: node.kind.clone(),
            metrics,
        });
    }
    out
}

//! Per-node rules: the flags one node's own numbers raise, given its kind and the thresholds.

use crate::flags::{Flag, FlagKind};
use crate::kinds::{classify, KindClass};
use crate::metrics as m;
use crate::seen::NodeSeen;
use crate::thresholds::Thresholds;

/// A count metric as a whole number; `None` when negative or not a number.
fn count(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0).then(|| v.round() as u64)
}

/// The flags `node` raises on its own numbers, in [`FlagKind::ALL`] order. A metric that
/// was not measured raises nothing; NaN metrics compare false and raise nothing either
/// (a NaN *count* is not a count; the `nan`/`inf` metrics are what say a number broke).
pub fn node_flags(node: &NodeSeen, t: &Thresholds) -> Vec<Flag> {
    let class = classify(&node.kind);
    let get = |name: &str| node.get(name);
    let mut out = Vec::new();
    let mut raise = |cond: bool, kind: FlagKind| {
        if cond {
            out.push(Flag::plain(kind));
        }
    };
    let loss = get(m::LOSS);
    raise(
        get(m::NAN).is_some_and(|n| n > 0.0) || loss.is_some_and(f64::is_nan),
        FlagKind::Nan,
    );
    raise(
        get(m::INF).is_some_and(|n| n > 0.0) || loss.is_some_and(f64::is_infinite),
        FlagKind::Inf,
    );
    raise(
        get(m::GRAD_MEAN_ABS).is_some_and(|g| g < t.vanishing_mean_abs),
        FlagKind::Vanishing,
    );
    // Never active on a handful of samples says little: dead is judged on enough of them.
    let enough = get(m::UNIT_SAMPLES).is_none_or(|n| n >= t.dead_min_samples);
    raise(
        class == KindClass::ReluLike
            && enough
            && get(m::DEAD_UNIT_FRACTION).is_some_and(|f| f > t.dead_layer_fraction),
        FlagKind::Dead,
    );
    let saturating = matches!(class, KindClass::TanhLike | KindClass::SigmoidLike);
    raise(
        saturating
            && (get(m::SATURATED_UNIT_FRACTION).is_some_and(|f| f > t.saturated_layer_fraction)
                || get(m::ACT_SATURATED_FRACTION).is_some_and(|f| f > t.saturated_output_fraction)),
        FlagKind::Saturated,
    );
    let ratio = get(m::UPDATE_RATIO);
    raise(
        ratio.is_some_and(|r| r < t.stalled_update_ratio),
        FlagKind::Stalled,
    );
    raise(
        ratio.is_some_and(|r| r > t.overstepping_update_ratio),
        FlagKind::Overstepping,
    );
    if class == KindClass::ReluLike && enough {
        if let Some(n) = counted(
            node,
            m::DEAD_UNITS,
            m::DEAD_UNIT_FRACTION,
            t.dead_channels_min,
            t.dead_channels_fraction,
        ) {
            out.push(Flag::counted(FlagKind::DeadChannels, n));
        }
    }
    if let Some(n) = counted(
        node,
        m::IGNORED_UNITS,
        m::IGNORED_UNIT_FRACTION,
        t.ignored_channels_min,
        t.ignored_channels_fraction,
    ) {
        out.push(Flag::counted(FlagKind::IgnoredChannels, n));
    }
    if get(m::CKA).is_some_and(|c| c >= t.leakage_cka) {
        out.push(Flag::plain(FlagKind::Leakage));
    }
    if narrowing(node, t) {
        out.push(Flag::plain(FlagKind::Narrowing));
    }
    out
}

/// A count of units worth naming: at least one, at least `min`, and (when the node's share of
/// such units, or its unit count, is known) at least `share` of its units.
fn counted(node: &NodeSeen, units: &str, fraction: &str, min: f64, share: f64) -> Option<u64> {
    let n = node.get(units).and_then(count)?;
    let frac = node.get(fraction).or_else(|| {
        node.get(m::UNITS)
            .filter(|u| *u > 0.0)
            .map(|u| n as f64 / u)
    });
    (n >= 1 && n as f64 >= min && frac.is_none_or(|f| f >= share)).then_some(n)
}

/// The update's effective rank (else the gradient's) is a small share of the rank it could have.
fn narrowing(node: &NodeSeen, t: &Thresholds) -> bool {
    let erank = node
        .get(m::UPDATE_ERANK)
        .or_else(|| node.get(m::GRAD_ERANK));
    match (erank, node.get(m::RANK_DIMS)) {
        (Some(e), Some(d)) if d > 0.0 => e / d < t.narrowing_erank_fraction,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node's metrics, and flag names.
    type Metrics = &'static [(&'static str, f64)];
    type Names = &'static [&'static str];

    /// The flag names `node_flags` gives for a node of `kind` with `metrics`.
    fn flags(kind: &str, metrics: &[(&str, f64)], t: &Thresholds) -> Vec<String> {
        let node = NodeSeen::new("n", kind, metrics.iter().copied());
        node_flags(&node, t).iter().map(Flag::to_string).collect()
    }

    /// Each row: a kind and metrics, and the flags wanted at the default thresholds.
    /// Rows come in pairs: one that raises the flag, one just the other side of its bound.
    #[test]
    fn each_flag_is_raised_on_one_side_of_its_bound_only() {
        let t = Thresholds::default();
        let cases: &[(&str, Metrics, Names)] = &[
            ("Linear", &[("nan", 1.0)], &["NAN"]),
            ("Linear", &[("nan", 0.0)], &[]),
            ("", &[("loss", f64::NAN)], &["NAN"]),
            ("", &[("loss", 3.5)], &[]),
            ("Linear", &[("inf", 2.0)], &["INF"]),
            ("Linear", &[("inf", 0.0)], &[]),
            ("", &[("loss", f64::NEG_INFINITY)], &["INF"]),
            ("Linear", &[("grad_mean_abs", 0.9e-7)], &["VANISHING"]),
            ("Linear", &[("grad_mean_abs", 1e-7)], &[]),
            ("ReLU", &[("dead_unit_fraction", 0.51)], &["DEAD"]),
            ("ReLU", &[("dead_unit_fraction", 0.5)], &[]),
            ("LeakyReLU", &[("dead_unit_fraction", 0.9)], &[]),
            (
                "GELU",
                &[("dead_unit_fraction", 0.9), ("dead_units", 9.0)],
                &[],
            ),
            ("ReLU6", &[("dead_unit_fraction", 0.9)], &["DEAD"]),
            (
                "ReLU",
                &[
                    ("dead_unit_fraction", 0.9),
                    ("dead_units", 9.0),
                    ("unit_samples", 4.0),
                ],
                &[],
            ),
            (
                "ReLU",
                &[("dead_unit_fraction", 0.9), ("unit_samples", 32.0)],
                &["DEAD"],
            ),
            (
                "ReLU",
                &[("dead_units", 3.0), ("dead_unit_fraction", 0.05)],
                &[],
            ),
            (
                "ReLU",
                &[("dead_units", 3.0), ("units", 30.0)],
                &["DEAD_CHANNELS(3)"],
            ),
            ("ReLU", &[("dead_units", 2.0), ("units", 96.0)], &[]),
            (
                "Linear",
                &[("ignored_units", 2.0), ("ignored_unit_fraction", 0.02)],
                &[],
            ),
            ("Linear", &[("dead_unit_fraction", 0.9)], &[]),
            ("Tanh", &[("saturated_unit_fraction", 0.6)], &["SATURATED"]),
            (
                "Sigmoid",
                &[("saturated_unit_fraction", 0.6)],
                &["SATURATED"],
            ),
            ("Tanh", &[("saturated_unit_fraction", 0.5)], &[]),
            ("LayerNorm", &[("saturated_unit_fraction", 1.0)], &[]),
            ("Tanh", &[("act_saturated_fraction", 0.51)], &["SATURATED"]),
            ("Tanh", &[("act_saturated_fraction", 0.5)], &[]),
            ("LayerNorm", &[("act_saturated_fraction", 1.0)], &[]),
            ("BatchNorm2d", &[("saturated_unit_fraction", 1.0)], &[]),
            ("Linear", &[("update_ratio", 0.9e-6)], &["STALLED"]),
            ("Linear", &[("update_ratio", 0.0)], &["STALLED"]),
            ("Linear", &[("update_ratio", 1e-6)], &[]),
            ("Linear", &[("update_ratio", 1.01)], &["OVERSTEPPING"]),
            ("Linear", &[("update_ratio", 1.0)], &[]),
            ("ReLU", &[("dead_units", 3.0)], &["DEAD_CHANNELS(3)"]),
            ("ReLU", &[("dead_units", 0.0)], &[]),
            ("Conv2d", &[("dead_units", 3.0)], &[]),
            (
                "ReLU",
                &[("dead_units", 6.0), ("dead_unit_fraction", 0.75)],
                &["DEAD", "DEAD_CHANNELS(6)"],
            ),
            (
                "Linear",
                &[("ignored_units", 2.0)],
                &["IGNORED_CHANNELS(2)"],
            ),
            ("Linear", &[("ignored_units", 0.0)], &[]),
            ("Linear", &[("ignored_units", -1.0)], &[]),
            ("Linear", &[("cka", 0.4)], &["LEAKAGE"]),
            ("Linear", &[("cka", 0.39)], &[]),
            (
                "Linear",
                &[("update_erank", 4.9), ("rank_dims", 100.0)],
                &["NARROWING"],
            ),
            (
                "Linear",
                &[("update_erank", 5.0), ("rank_dims", 100.0)],
                &[],
            ),
            (
                "Linear",
                &[("grad_erank", 4.9), ("rank_dims", 100.0)],
                &["NARROWING"],
            ),
            (
                "Linear",
                &[
                    ("update_erank", 50.0),
                    ("grad_erank", 1.0),
                    ("rank_dims", 100.0),
                ],
                &[],
            ),
            ("Linear", &[("update_erank", 1.0), ("rank_dims", 0.0)], &[]),
            ("Linear", &[("update_erank", 1.0)], &[]),
        ];
        for (kind, metrics, want) in cases {
            let got = flags(kind, metrics, &t);
            assert_eq!(
                got, *want,
                "{kind} {metrics:?}: got {got:?}, wanted {want:?}"
            );
        }
    }

    #[test]
    fn a_metric_nobody_measured_raises_nothing() {
        let t = Thresholds::default();
        for kind in ["ReLU", "Tanh", "Linear", "LayerNorm", ""] {
            assert_eq!(
                flags(kind, &[], &t),
                Vec::<String>::new(),
                "{kind} with no metrics"
            );
            // Unknown metrics and NaN-valued ones are not readings either.
            let noise = [
                ("grad_p5", 0.0),
                ("update_ratio", f64::NAN),
                ("dead_units", f64::NAN),
            ];
            assert_eq!(
                flags(kind, &noise, &t),
                Vec::<String>::new(),
                "{kind} with {noise:?}"
            );
        }
    }

    /// Each row: one threshold changed, and a node whose answer it changes.
    #[test]
    fn changing_one_threshold_changes_the_answer() {
        let cases: &[(&str, f64, &str, Metrics, Names)] = &[
            (
                "vanishing_mean_abs",
                1e-3,
                "Linear",
                &[("grad_mean_abs", 1e-4)],
                &["VANISHING"],
            ),
            (
                "dead_layer_fraction",
                0.2,
                "ReLU",
                &[("dead_unit_fraction", 0.3)],
                &["DEAD"],
            ),
            (
                "saturated_layer_fraction",
                0.2,
                "Tanh",
                &[("saturated_unit_fraction", 0.3)],
                &["SATURATED"],
            ),
            (
                "saturated_output_fraction",
                0.2,
                "Sigmoid",
                &[("act_saturated_fraction", 0.3)],
                &["SATURATED"],
            ),
            (
                "stalled_update_ratio",
                1e-2,
                "Linear",
                &[("update_ratio", 1e-3)],
                &["STALLED"],
            ),
            (
                "overstepping_update_ratio",
                0.1,
                "Linear",
                &[("update_ratio", 0.2)],
                &["OVERSTEPPING"],
            ),
            (
                "dead_channels_min",
                4.0,
                "ReLU",
                &[("dead_units", 3.0)],
                &[],
            ),
            (
                "ignored_channels_min",
                3.0,
                "Linear",
                &[("ignored_units", 2.0)],
                &[],
            ),
            ("leakage_cka", 0.7, "Linear", &[("cka", 0.6)], &[]),
            (
                "narrowing_erank_fraction",
                0.5,
                "Linear",
                &[("update_erank", 40.0), ("rank_dims", 100.0)],
                &["NARROWING"],
            ),
        ];
        for (bound, value, kind, metrics, want) in cases {
            let before = flags(kind, metrics, &Thresholds::default());
            let t = Thresholds::with([(*bound, *value)]).unwrap();
            let after = flags(kind, metrics, &t);
            assert_eq!(after, *want, "{bound} = {value}, {kind} {metrics:?}");
            assert_ne!(
                before, after,
                "{bound} = {value} changed nothing for {metrics:?}"
            );
        }
    }
}

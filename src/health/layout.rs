//! Which axis of a node's output holds its units: a named axis, a declared layout, or the
//! default of the node's kind; and which kinds read the units of the node before them.
//!
//! A layout is a string of one letter per axis (`NCHW`, `NCL`, `NC`, `NTD`, `TND`, `ND`, …):
//! the unit axis is the position of `C`, else of `D` (so `NCDHW`, a 3-D convolution's, reads
//! `C`). With no layout, convolutions, batch/instance/group norms, pooling, `Dropout2d`-like
//! and padding kinds are channel-first (`N,C,…`: axis 1); element-wise kinds (activations,
//! dropout, identity) take the rule of the node before them when that one's output has the
//! same rank (a ReLU after a `Conv2d` is `NCHW` too); everything else (Linear, LayerNorm,
//! Embedding, GRU/LSTM/RNN outputs, attention, transformer blocks) has its units on the
//! **last** axis.

use super::error::MeasureError;
use crate::tensor::TypedTensor;
use somatize_verdict::{classify, KindClass};

/// The most letters a layout may have (a tensor of more axes than this is not a layer's output).
pub const LAYOUT_MAX_LEN: usize = 16;

/// How a node's unit axis is chosen when its output names no axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitRule<'a> {
    /// From the node's kind (see the module doc); what [`super::NodeTensors`] has by default.
    #[default]
    Kind,
    /// A declared layout (`NCHW`, `NTD`, …): the position of `C`, else of `D`.
    Layout(&'a str),
    /// Axis 1 (`N,C,…`).
    ChannelFirst,
    /// The last axis (`…,D`).
    Last,
}

/// Axis names that say "this is the unit (channel, feature) axis".
const UNIT_AXIS_NAMES: &[&str] = &[
    "C", "c", "channel", "channels", "D", "d", "feature", "features", "unit", "units", "hidden",
];

/// A kind as the tables below spell it: the last path segment, lower case, no `_` or `-`.
fn normal(kind: &str) -> String {
    let last = kind.rsplit(['.', ':', '/']).next().unwrap_or(kind);
    last.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Kinds whose output is channel-first (`N,C,…`), by prefix of the normal spelling.
const CHANNEL_FIRST_PREFIXES: &[&str] = &[
    "conv",
    "batchnorm",
    "syncbatchnorm",
    "instancenorm",
    "groupnorm",
    "localresponsenorm",
    "maxpool",
    "avgpool",
    "adaptiveavgpool",
    "adaptivemaxpool",
    "lppool",
    "fractionalmaxpool",
    "maxunpool",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "featurealphadropout",
    "pixelshuffle",
    "pixelunshuffle",
    "channelshuffle",
    "upsample",
    "zeropad",
    "constantpad",
    "reflectionpad",
    "replicationpad",
    "circularpad",
];

/// Element-wise kinds besides the activations `classify` knows: they keep their input's layout.
const ELEMENTWISE: &[&str] = &[
    "dropout",
    "alphadropout",
    "identity",
    "softplus",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "logsigmoid",
    "threshold",
];

/// Kinds that only reshape or mask their input: a consumer after them still reads the units of
/// the node before them.
const TRANSPARENT: &[&str] = &[
    "dropout",
    "alphadropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "featurealphadropout",
    "identity",
    "flatten",
    "unflatten",
];

/// Whether a kind's output is channel-first by default.
pub fn is_channel_first(kind: &str) -> bool {
    let k = normal(kind);
    CHANNEL_FIRST_PREFIXES.iter().any(|p| k.starts_with(p))
}

/// Whether a kind is element-wise (an activation, soft ReLU-likes such as GELU and SiLU
/// included, dropout, identity): its output keeps the layout of its input.
pub fn is_elementwise(kind: &str) -> bool {
    matches!(
        classify(kind),
        KindClass::ReluLike | KindClass::SoftRelu | KindClass::TanhLike | KindClass::SigmoidLike
    ) || ELEMENTWISE.contains(&normal(kind).as_str())
}

/// Whether a kind passes its input on unchanged but for a mask or a reshape (dropout,
/// identity, flatten): a consumer after it reads the units of the node before it.
pub fn is_transparent(kind: &str) -> bool {
    TRANSPARENT.contains(&normal(kind).as_str())
}

/// Whether a kind with a 2-or-more-axis `weight` reads the units of the node before it as
/// a linear map (Linear, Conv, Bilinear, …): not a normalisation (its weight is a per-unit
/// gain), not an embedding (it reads indices), not element-wise or transparent.
pub fn is_consumer(kind: &str) -> bool {
    let k = normal(kind);
    classify(kind) != KindClass::Norm
        && !k.contains("embedding")
        && !is_elementwise(kind)
        && !is_transparent(kind)
}

/// Check a declared layout: 1 to [`LAYOUT_MAX_LEN`] ASCII letters, each at most once, with a
/// `C` or a `D`. The error says what is wrong.
pub fn check_layout(layout: &str) -> Result<(), String> {
    if layout.is_empty() || layout.len() > LAYOUT_MAX_LEN {
        return Err(format!(
            "layout {layout:?} must have 1 to {LAYOUT_MAX_LEN} letters, one per axis"
        ));
    }
    if !layout.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!(
            "layout {layout:?} must be letters only, one per axis"
        ));
    }
    let upper = layout.to_ascii_uppercase();
    if upper
        .bytes()
        .enumerate()
        .any(|(i, b)| upper.as_bytes()[..i].contains(&b))
    {
        return Err(format!("layout {layout:?} names an axis twice"));
    }
    if !upper.contains(['C', 'D']) {
        return Err(format!(
            "layout {layout:?} has no C or D axis, so it does not say where the units are"
        ));
    }
    Ok(())
}

/// The unit axis a layout names: the position of `C`, else of `D` (case ignored).
pub fn layout_axis(layout: &str) -> Option<usize> {
    let upper = layout.to_ascii_uppercase();
    upper.find('C').or_else(|| upper.find('D'))
}

/// The unit axis of output `t` of a node of kind `kind`: a named axis (`C`, `channel`,
/// `feature`, …) when the tensor names its axes, else by `rule`; `None` for 0-d and 1-d
/// outputs, which are measured as one unit. A declared layout whose length is not the
/// output's rank, or that names no unit axis, is an error naming the output and the layout
/// (the record says something that is not so; measuring along a guessed axis would hide it).
pub fn unit_axis(
    t: &TypedTensor,
    kind: &str,
    rule: UnitRule,
) -> Result<Option<usize>, MeasureError> {
    if let Some(axes) = &t.axes {
        if let Some(i) = axes
            .iter()
            .position(|a| UNIT_AXIS_NAMES.contains(&a.as_str()))
        {
            return Ok((i < t.shape.len()).then_some(i));
        }
    }
    let rank = t.shape.len();
    if let UnitRule::Layout(layout) = rule {
        let axis = layout_axis(layout).filter(|_| check_layout(layout).is_ok());
        return match axis {
            Some(a) if layout.len() == rank => Ok((rank >= 2).then_some(a)),
            _ => Err(MeasureError::Layout {
                key: t.provenance.key.clone(),
                layout: layout.to_string(),
                shape: t.shape.clone(),
            }),
        };
    }
    if rank < 2 {
        return Ok(None);
    }
    let first = match rule {
        UnitRule::ChannelFirst => true,
        UnitRule::Last => false,
        _ => is_channel_first(kind),
    };
    Ok(Some(if first { 1 } else { rank - 1 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_name_their_unit_axis() {
        for (layout, want) in [
            ("NCHW", Ok(1)),
            ("NCL", Ok(1)),
            ("NC", Ok(1)),
            ("NTD", Ok(2)),
            ("TND", Ok(2)),
            ("ND", Ok(1)),
            ("NHWC", Ok(3)),
            ("NCDHW", Ok(1)),
            ("ntd", Ok(2)),
            ("NTH", Err(())),
            ("NCC", Err(())),
            ("N-C", Err(())),
            ("", Err(())),
        ] {
            let got = check_layout(layout)
                .map_err(|_| ())
                .and_then(|()| layout_axis(layout).ok_or(()));
            assert_eq!(got, want, "{layout}");
        }
    }

    #[test]
    fn kinds_have_their_default() {
        for (kind, first, elementwise, consumer) in [
            ("Conv2d", true, false, true),
            ("torch.nn.ConvTranspose1d", true, false, true),
            ("BatchNorm2d", true, false, false),
            ("GroupNorm", true, false, false),
            ("MaxPool2d", true, false, true),
            ("AdaptiveAvgPool2d", true, false, true),
            ("Dropout2d", true, false, false),
            ("Linear", false, false, true),
            ("LayerNorm", false, false, false),
            ("GELU", false, true, false),
            ("ReLU", false, true, false),
            ("Dropout", false, true, false),
            ("Embedding", false, false, false),
            ("GRU", false, false, true),
            ("MultiheadAttention", false, false, true),
            ("TransformerEncoderLayer", false, false, true),
        ] {
            assert_eq!(is_channel_first(kind), first, "{kind} channel-first");
            assert_eq!(is_elementwise(kind), elementwise, "{kind} element-wise");
            assert_eq!(is_consumer(kind), consumer, "{kind} consumer");
        }
    }

    #[test]
    fn the_unit_axis_is_named_else_declared_else_the_kinds() {
        let t = |axes: Option<&[&str]>| {
            let mut t = TypedTensor::from_f32("act.x", vec![0.0; 24], vec![2, 3, 4]).unwrap();
            t.axes = axes.map(|a| a.iter().map(|s| s.to_string()).collect());
            t
        };
        let named = t(Some(&["N", "T", "feature"]));
        let unnamed = t(Some(&["N", "T", "X"]));
        let bare = t(None);
        for (tensor, kind, rule, want) in [
            // A named unit axis wins over the kind and over a declared layout.
            (&named, "Conv1d", UnitRule::Kind, Some(2)),
            (&named, "Linear", UnitRule::Layout("NCL"), Some(2)),
            // Names with no unit axis among them: the rule decides.
            (&unnamed, "Conv1d", UnitRule::Kind, Some(1)),
            (&bare, "Linear", UnitRule::Kind, Some(2)),
            (&bare, "GRU", UnitRule::Kind, Some(2)),
            (&bare, "BatchNorm1d", UnitRule::Kind, Some(1)),
            (&bare, "ReLU", UnitRule::ChannelFirst, Some(1)),
            (&bare, "Linear", UnitRule::Layout("TND"), Some(2)),
            (&bare, "Linear", UnitRule::Layout("NCL"), Some(1)),
        ] {
            assert_eq!(
                unit_axis(tensor, kind, rule).unwrap(),
                want,
                "{kind} {rule:?} {:?}",
                tensor.axes
            );
        }
        assert!(matches!(
            unit_axis(&bare, "Linear", UnitRule::Layout("ND")),
            Err(MeasureError::Layout { .. })
        ));
        let scalar = TypedTensor::from_f32("act.s", vec![1.0], vec![1]).unwrap();
        assert_eq!(unit_axis(&scalar, "Linear", UnitRule::Kind).unwrap(), None);
    }
}

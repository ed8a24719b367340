//! The registry of named transforms and reductions: parsing, argument checks and defaults.

pub use crate::observe::spec::{default_args, SPARSITY_EPS, SRANK_DELTA};
use crate::observe::spec::{ObservableSpec, SpecError};
use std::fmt;

/// A transform applied to a tensor before its reduction, in spec order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transform {
    /// Leaves the values as they are.
    Identity,
    /// `|x|`.
    Abs,
    /// `x * x`.
    Square,
    /// `-x`.
    Neg,
    /// `ln(1 + |x|)`.
    Log1pAbs,
    /// Subtracts the mean of the finite values (per row or column after `per_row`/`per_column`).
    Center,
    /// Reshapes to one dimension.
    Flatten,
    /// Reduces each row (axis 0; the rest of the axes stay) separately, giving a vector.
    PerRow,
    /// Reduces each column of the `(shape[0], rest)` matrix separately, giving a vector.
    PerColumn,
}

/// A reduction of a (transformed) tensor to a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Reduction {
    /// Number of elements, finite or not.
    Count,
    /// Mean of the finite values.
    Mean,
    /// Population standard deviation (numpy `ddof=0`) of the finite values.
    Std,
    /// Population variance of the finite values.
    Var,
    /// Smallest finite value.
    Min,
    /// Largest finite value.
    Max,
    /// Largest `|x|` over finite values.
    Absmax,
    /// Sum of `|x|` over finite values.
    L1,
    /// Euclidean norm of the finite values.
    L2,
    /// Root mean square of the finite values.
    Rms,
    /// Number of NaN and infinite elements.
    Nonfinite,
    /// Number of NaN elements.
    Nan,
    /// Share of all elements that are exactly zero.
    ZeroFraction,
    /// Share of all elements with `|x| <= eps`.
    Sparsity { eps: f64 },
    /// numpy's default (linear) quantiles of the finite values.
    Quantiles(Vec<f64>),
    /// `numpy.histogram` of the finite values; the range defaults to their min and max.
    Histogram {
        bins: usize,
        range: Option<(f64, f64)>,
    },
    /// Per channel, the share of entries > 0 (axis 1 of N,C,…; the last axis of N,D).
    ChannelActivity,
    /// `‖A‖_F² / σ_max²` of a 2-d tensor.
    StableRank,
    /// Roy & Vetterli's effective rank of a 2-d tensor.
    EffectiveRank,
    /// Kumar et al.'s `srank_δ` of a 2-d tensor: singular values needed for `1 - δ` of their sum.
    Srank { delta: f64 },
}

/// A spec's transforms and reduction, parsed and checked against each other.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub transforms: Vec<Transform>,
    pub reduction: Reduction,
}

/// Why a name or its arguments are not in the registry.
#[derive(Debug, Clone, PartialEq)]
pub enum RegistryError {
    /// No transform has this name; fix the spec (see `registry::TRANSFORMS`).
    UnknownTransform { name: String },
    /// No reduction has this name; fix the spec (see `registry::REDUCTIONS`).
    UnknownReduction { name: String },
    /// The op exists but its arguments are wrong (count or range); names the op and why.
    BadArguments { op: String, reason: String },
    /// The transforms and the reduction do not go together (e.g. `per_row` with `quantiles`).
    Incompatible { reason: String },
    /// The spec itself is malformed.
    Spec(SpecError),
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::UnknownTransform { name } => write!(
                f,
                "unknown transform {name:?} (known: {})",
                TRANSFORMS.join(", ")
            ),
            RegistryError::UnknownReduction { name } => write!(
                f,
                "unknown reduction {name:?} (known: {})",
                REDUCTIONS.join(", ")
            ),
            RegistryError::BadArguments { op, reason } => write!(f, "{op}: {reason}"),
            RegistryError::Incompatible { reason } => write!(f, "{reason}"),
            RegistryError::Spec(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Every transform name.
pub const TRANSFORMS: &[&str] = &[
    "identity",
    "abs",
    "square",
    "neg",
    "log1p_abs",
    "center",
    "flatten",
    "per_row",
    "per_column",
];

/// Every reduction name (arguments in parentheses where it takes them).
pub const REDUCTIONS: &[&str] = &[
    "count",
    "mean",
    "std",
    "var",
    "min",
    "max",
    "absmax",
    "l1",
    "l2",
    "rms",
    "nonfinite",
    "nan",
    "zero_fraction",
    "sparsity(eps=1e-6)",
    "quantiles(q,...)",
    "histogram(bins[,lo,hi])",
    "channel_activity",
    "stable_rank",
    "effective_rank",
    "srank(delta=0.01)",
];

/// The most bins a histogram may have.
pub const MAX_BINS: usize = 1 << 20;
/// The most quantiles one reduction may ask for.
pub const MAX_QUANTILES: usize = 1024;

/// Split a canonical op `name(a,b)` into its name and numbers.
fn split_op(text: &str) -> Result<(String, Vec<f64>), SpecError> {
    let canonical = ObservableSpec::canonical_op_text(text)?;
    let Some((name, rest)) = canonical.split_once('(') else {
        return Ok((canonical, Vec::new()));
    };
    let args = rest
        .trim_end_matches(')')
        .split(',')
        .filter_map(|a| a.parse::<f64>().ok())
        .collect();
    Ok((name.to_string(), args))
}

fn bad(op: &str, reason: impl Into<String>) -> RegistryError {
    RegistryError::BadArguments {
        op: op.to_string(),
        reason: reason.into(),
    }
}

fn no_args(op: &str, args: &[f64]) -> Result<(), RegistryError> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(bad(op, "takes no arguments"))
    }
}

/// Parse one transform by name (`abs`, `per_row`, …).
pub fn transform(text: &str) -> Result<Transform, RegistryError> {
    let (name, args) = split_op(text).map_err(RegistryError::Spec)?;
    let t = match name.as_str() {
        "identity" => Transform::Identity,
        "abs" => Transform::Abs,
        "square" => Transform::Square,
        "neg" => Transform::Neg,
        "log1p_abs" => Transform::Log1pAbs,
        "center" => Transform::Center,
        "flatten" => Transform::Flatten,
        "per_row" => Transform::PerRow,
        "per_column" => Transform::PerColumn,
        _ => return Err(RegistryError::UnknownTransform { name }),
    };
    no_args(&name, &args)?;
    Ok(t)
}

fn one_arg(op: &str, args: &[f64], default: f64) -> Result<f64, RegistryError> {
    match args {
        [] => Ok(default),
        [a] => Ok(*a),
        _ => Err(bad(op, "takes one argument")),
    }
}

fn histogram(args: &[f64]) -> Result<Reduction, RegistryError> {
    let op = "histogram";
    let bins = match args.first() {
        Some(&b) if b.fract() == 0.0 && b >= 1.0 && b <= MAX_BINS as f64 => b as usize,
        Some(b) => {
            return Err(bad(
                op,
                format!("bins {b} is not a whole number in 1..={MAX_BINS}"),
            ))
        }
        None => return Err(bad(op, "needs the number of bins")),
    };
    let range = match args {
        [_] => None,
        [_, lo, hi] if lo < hi => Some((*lo, *hi)),
        [_, lo, hi] => return Err(bad(op, format!("range {lo}..{hi} is empty"))),
        _ => return Err(bad(op, "takes bins, or bins, lo and hi")),
    };
    Ok(Reduction::Histogram { bins, range })
}

/// Parse one reduction by name (`l2`, `quantiles(0.05,0.95)`, …).
pub fn reduction(text: &str) -> Result<Reduction, RegistryError> {
    let (name, args) = split_op(text).map_err(RegistryError::Spec)?;
    let simple = match name.as_str() {
        "count" => Some(Reduction::Count),
        "mean" => Some(Reduction::Mean),
        "std" => Some(Reduction::Std),
        "var" => Some(Reduction::Var),
        "min" => Some(Reduction::Min),
        "max" => Some(Reduction::Max),
        "absmax" => Some(Reduction::Absmax),
        "l1" => Some(Reduction::L1),
        "l2" => Some(Reduction::L2),
        "rms" => Some(Reduction::Rms),
        "nonfinite" => Some(Reduction::Nonfinite),
        "nan" => Some(Reduction::Nan),
        "zero_fraction" => Some(Reduction::ZeroFraction),
        "channel_activity" => Some(Reduction::ChannelActivity),
        "stable_rank" => Some(Reduction::StableRank),
        "effective_rank" => Some(Reduction::EffectiveRank),
        _ => None,
    };
    if let Some(r) = simple {
        no_args(&name, &args)?;
        return Ok(r);
    }
    match name.as_str() {
        "sparsity" => {
            let eps = one_arg(&name, &args, SPARSITY_EPS)?;
            if eps < 0.0 {
                return Err(bad(&name, format!("eps {eps} is negative")));
            }
            Ok(Reduction::Sparsity { eps })
        }
        "srank" => {
            let delta = one_arg(&name, &args, SRANK_DELTA)?;
            if !(0.0..1.0).contains(&delta) {
                return Err(bad(&name, format!("delta {delta} is not in [0, 1)")));
            }
            Ok(Reduction::Srank { delta })
        }
        "quantiles" => {
            if args.is_empty() || args.len() > MAX_QUANTILES {
                return Err(bad(&name, format!("needs 1..={MAX_QUANTILES} quantiles")));
            }
            if let Some(q) = args.iter().find(|q| !(0.0..=1.0).contains(*q)) {
                return Err(bad(&name, format!("quantile {q} is not in [0, 1]")));
            }
            Ok(Reduction::Quantiles(args))
        }
        "histogram" => histogram(&args),
        _ => Err(RegistryError::UnknownReduction { name }),
    }
}

impl Reduction {
    /// Whether the reduction yields one number (so it can be taken per row or column).
    pub fn is_scalar(&self) -> bool {
        !matches!(
            self,
            Reduction::Quantiles(_) | Reduction::Histogram { .. } | Reduction::ChannelActivity
        )
    }
}

/// Parse and check a spec's transforms and reduction: every name known, arguments in range,
/// at most one `per_row`/`per_column`, and only scalar reductions after one.
pub fn plan(spec: &ObservableSpec) -> Result<Plan, RegistryError> {
    let transforms = spec
        .transforms
        .iter()
        .map(|t| transform(t))
        .collect::<Result<Vec<_>, _>>()?;
    let reduction = reduction(&spec.reduction)?;
    let grouping = transforms
        .iter()
        .filter(|t| matches!(t, Transform::PerRow | Transform::PerColumn))
        .count();
    if grouping > 1 {
        return Err(RegistryError::Incompatible {
            reason: "at most one of per_row / per_column may appear".into(),
        });
    }
    if grouping == 1 && !reduction.is_scalar() {
        return Err(RegistryError::Incompatible {
            reason: format!(
                "per_row / per_column need a scalar reduction, not {}",
                spec.reduction.trim()
            ),
        });
    }
    Ok(Plan {
        transforms,
        reduction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_names_are_named() {
        assert_eq!(transform(" Log1p_Abs "), Ok(Transform::Log1pAbs));
        assert_eq!(reduction("sparsity"), Ok(Reduction::Sparsity { eps: 1e-6 }));
        assert_eq!(
            reduction("histogram(4,-1,1)"),
            Ok(Reduction::Histogram {
                bins: 4,
                range: Some((-1.0, 1.0))
            })
        );
        let e = reduction("l3").unwrap_err();
        assert_eq!(e, RegistryError::UnknownReduction { name: "l3".into() });
        assert!(e.to_string().contains("\"l3\""), "message: {e}");
        let e = transform("sqrt").unwrap_err();
        assert!(e.to_string().contains("\"sqrt\""), "message: {e}");
    }

    #[test]
    fn bad_arguments_are_refused() {
        for text in [
            "l2(1)",
            "quantiles",
            "quantiles(1.5)",
            "histogram",
            "histogram(0)",
            "histogram(2.5)",
            "histogram(4,1,1)",
            "histogram(4,1)",
            "sparsity(-1)",
            "srank(1)",
        ] {
            assert!(
                matches!(reduction(text), Err(RegistryError::BadArguments { .. })),
                "{text} gave {:?}, wanted BadArguments",
                reduction(text)
            );
        }
        assert!(transform("abs(2)").is_err());
    }

    #[test]
    fn grouping_needs_a_scalar_reduction() {
        let mut s = ObservableSpec::new("param", "w", "quantiles(0.5)");
        s.transforms = vec!["per_row".into()];
        assert!(matches!(plan(&s), Err(RegistryError::Incompatible { .. })));
        s.reduction = "l2".into();
        assert!(plan(&s).is_ok());
        s.transforms.push("per_column".into());
        assert!(matches!(plan(&s), Err(RegistryError::Incompatible { .. })));
    }
}

//! `Thresholds`: the bounds a verdict is taken at, as plain named numbers with their sources.

use std::fmt;

/// Where a default comes from: a published value (with its source) or our own choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A value published by the named source (see `research/health-flags.md`).
    Published(&'static str),
    /// No published value exists; this one is ours, and the text says why.
    Ours(&'static str),
}

/// One named bound: its default, what it bounds, and where the default comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The name `get`/`set` and the JSON overrides use.
    pub name: &'static str,
    /// The default value.
    pub default: f64,
    /// What the bound is compared with, in one line.
    pub meaning: &'static str,
    /// Where the default comes from.
    pub origin: Origin,
}

/// Every bound, in the order `as_dict` lists them. The defaults are data, and one opinion.
pub const BOUNDS: &[Bound] = &[
    Bound {
        name: "vanishing_ratio",
        default: 1e-3,
        meaning: "VANISHING when a node's grad_norm over the last node's grad_norm is below this…",
        origin: Origin::Published("AutoTrainer beta_1 = 1e-3 (monitor.py gradient_issue)"),
    },
    Bound {
        name: "vanishing_floor",
        default: 1e-4,
        meaning: "…and the node's grad_norm is also below this",
        origin: Origin::Published("AutoTrainer beta_2 = 1e-4 (monitor.py gradient_issue)"),
    },
    Bound {
        name: "vanishing_mean_abs",
        default: 1e-7,
        meaning: "VANISHING when a node's grad_mean_abs is below this, whatever its neighbours",
        origin: Origin::Published("SageMaker Debugger VanishingGradient threshold = 1e-7"),
    },
    Bound {
        name: "exploding_ratio",
        default: 70.0,
        meaning: "EXPLODING when a node's grad_norm over the last node's grad_norm is above this",
        origin: Origin::Published("AutoTrainer beta_3 = 70 (monitor.py gradient_issue)"),
    },
    Bound {
        name: "dead_layer_fraction",
        default: 0.5,
        meaning: "DEAD when a ReLU-like node's dead_unit_fraction is above this",
        origin: Origin::Published("SageMaker Debugger DeadRelu threshold_layer = 50 %"),
    },
    Bound {
        name: "saturated_layer_fraction",
        default: 0.5,
        meaning: "SATURATED when a tanh/sigmoid-like node's saturated_unit_fraction is above this",
        origin: Origin::Published("SageMaker Debugger SaturatedActivation threshold_layer = 50 %"),
    },
    Bound {
        name: "saturated_output_fraction",
        default: 0.5,
        meaning:
            "SATURATED also when a tanh/sigmoid-like node's act_saturated_fraction is above this",
        origin: Origin::Ours(
            "Karpathy (makemore part 3) reads the share of |tanh| > 0.97 by eye and publishes no \
             bound; with small batches hardly any unit is saturated on 99 % of its samples",
        ),
    },
    Bound {
        name: "stalled_update_ratio",
        default: 1e-6,
        meaning: "STALLED when a node's update_ratio is below this",
        origin: Origin::Ours(
            "three decades under CS231n's healthy ~1e-3; SageMaker WeightUpdateRatio's \
             published small_threshold 1e-8 only catches frozen tensors",
        ),
    },
    Bound {
        name: "overstepping_update_ratio",
        default: 1.0,
        meaning: "OVERSTEPPING when a node's update_ratio is above this",
        origin: Origin::Ours(
            "an update as large as the weights it moves; CS231n calls ~1e-3 healthy and 1e-2 \
             still fine for a small net; SageMaker's published large_threshold is 10",
        ),
    },
    Bound {
        name: "dead_channels_min",
        default: 1.0,
        meaning: "DEAD_CHANNELS(n) when a ReLU-like node has at least this many dead_units",
        origin: Origin::Ours("any dead channel is worth naming; no published count exists"),
    },
    Bound {
        name: "ignored_channels_min",
        default: 1.0,
        meaning: "IGNORED_CHANNELS(n) when a node has at least this many ignored_units",
        origin: Origin::Ours(
            "continual backprop replaces the lowest-utility share and publishes no count",
        ),
    },
    Bound {
        name: "leakage_cka",
        default: 0.9,
        meaning: "LEAKAGE when the linear CKA between two groups declared apart is at least this",
        origin: Origin::Ours(
            "no published CKA leak bound; 1 is the same information up to rotation and scale",
        ),
    },
    Bound {
        name: "narrowing_erank_fraction",
        default: 0.05,
        meaning: "NARROWING when update_erank (else grad_erank) over rank_dims is below this",
        origin: Origin::Ours(
            "papers track the decline of effective rank (Roy & Vetterli 2007) and publish no bound",
        ),
    },
    Bound {
        name: "missing_norm_var_growth",
        default: 10.0,
        meaning: "MISSING_NORMALISATION when act_var grows by more than this factor over a \
                  stretch of nodes with no normalisation node",
        origin: Origin::Published(
            "SageMaker Debugger PoorWeightInitialization: max/min activation variance > 10",
        ),
    },
    Bound {
        name: "plasticity_param_growth",
        default: 1.1,
        meaning: "LOSING_PLASTICITY needs param_mean_abs last/first at least this…",
        origin: Origin::Ours(
            "Dohare et al. 2024 track the trend of mean |theta| and publish no bound",
        ),
    },
    Bound {
        name: "plasticity_dormant_rise",
        default: 0.05,
        meaning: "…and dormant_unit_fraction last minus first at least this…",
        origin: Origin::Ours("Dohare et al. 2024, Sokar et al. 2023 track the trend, no bound"),
    },
    Bound {
        name: "plasticity_erank_drop",
        default: 0.1,
        meaning: "…and feature_erank fallen by at least this share of its first value…",
        origin: Origin::Ours("Dohare et al. 2024 track the fall of effective rank, no bound"),
    },
    Bound {
        name: "plasticity_min_points",
        default: 3.0,
        meaning: "…over a history of at least this many forwards with all three measured",
        origin: Origin::Ours("a trend needs more than two points"),
    },
];

/// Why a threshold could not be read or set.
#[derive(Debug, Clone, PartialEq)]
pub enum ThresholdError {
    /// No bound has this name; retrying will not help, `BOUNDS` lists the names.
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The value is NaN or infinite, which no bound can be; retrying will not help.
    NotFinite {
        /// The bound being set.
        name: String,
        /// The value refused.
        value: f64,
    },
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdError::Unknown { name } => {
                let known: Vec<&str> = BOUNDS.iter().map(|b| b.name).collect();
                write!(
                    f,
                    "unknown threshold {name:?}; the thresholds are {}",
                    known.join(", ")
                )
            }
            ThresholdError::NotFinite { name, value } => {
                write!(f, "threshold {name:?} must be a finite number, not {value}")
            }
        }
    }
}

impl std::error::Error for ThresholdError {}

/// The bounds a verdict is taken at: one value per entry of [`BOUNDS`], defaults unless set.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    values: Vec<f64>,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            values: BOUNDS.iter().map(|b| b.default).collect(),
        }
    }
}

fn index_of(name: &str) -> Result<usize, ThresholdError> {
    BOUNDS
        .iter()
        .position(|b| b.name == name)
        .ok_or_else(|| ThresholdError::Unknown { name: name.into() })
}

impl Thresholds {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The defaults with some bounds overridden by name; the first bad override is refused.
    pub fn with<'a>(
        overrides: impl IntoIterator<Item = (&'a str, f64)>,
    ) -> Result<Self, ThresholdError> {
        let mut t = Self::default();
        for (name, value) in overrides {
            t.set(name, value)?;
        }
        Ok(t)
    }

    /// The value of a bound by name.
    pub fn get(&self, name: &str) -> Result<f64, ThresholdError> {
        Ok(self.values[index_of(name)?])
    }

    /// Set a bound by name; unknown names and non-finite values are refused.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), ThresholdError> {
        let i = index_of(name)?;
        if !value.is_finite() {
            return Err(ThresholdError::NotFinite {
                name: name.into(),
                value,
            });
        }
        self.values[i] = value;
        Ok(())
    }

    /// Every bound with its value, in the order of [`BOUNDS`].
    pub fn as_dict(&self) -> Vec<(&'static str, f64)> {
        BOUNDS
            .iter()
            .map(|b| b.name)
            .zip(self.values.iter().copied())
            .collect()
    }

    /// The value of a bound known to exist (the rules' own names); the default if not.
    pub(crate) fn of(&self, name: &'static str) -> f64 {
        index_of(name).map(|i| self.values[i]).unwrap_or(f64::NAN)
    }
}

/// The bound with this name, if there is one.
pub fn bound(name: &str) -> Option<&'static Bound> {
    BOUNDS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_finite_and_names_unique() {
        let t = Thresholds::default();
        let dict = t.as_dict();
        assert_eq!(dict.len(), BOUNDS.len());
        for (i, (name, value)) in dict.iter().enumerate() {
            assert!(value.is_finite(), "{name} = {value}");
            assert!(
                dict[..i].iter().all(|(n, _)| n != name),
                "{name} listed twice"
            );
        }
    }

    #[test]
    fn get_and_set_by_name() {
        let mut t = Thresholds::new();
        assert_eq!(t.get("exploding_ratio"), Ok(70.0));
        t.set("exploding_ratio", 5.0).unwrap();
        assert_eq!(t.get("exploding_ratio"), Ok(5.0));
        assert_ne!(t, Thresholds::new());
    }

    #[test]
    fn refuses_unknown_names_and_non_finite_values() {
        let mut t = Thresholds::new();
        for (name, value, want) in [
            (
                "exploding",
                1.0,
                ThresholdError::Unknown {
                    name: "exploding".into(),
                },
            ),
            (
                "leakage_cka",
                f64::NAN,
                ThresholdError::NotFinite {
                    name: "leakage_cka".into(),
                    value: f64::NAN,
                },
            ),
            (
                "leakage_cka",
                f64::INFINITY,
                ThresholdError::NotFinite {
                    name: "leakage_cka".into(),
                    value: f64::INFINITY,
                },
            ),
        ] {
            let got = t.set(name, value).unwrap_err();
            // NaN != NaN, so compare the messages.
            assert_eq!(got.to_string(), want.to_string(), "set({name}, {value})");
        }
        assert_eq!(t, Thresholds::new(), "a refused set changed nothing");
        assert!(t
            .get("nope")
            .unwrap_err()
            .to_string()
            .contains("vanishing_ratio"));
    }

    #[test]
    fn with_applies_overrides_in_order() {
        let t = Thresholds::with([("leakage_cka", 0.5), ("leakage_cka", 0.7)]).unwrap();
        assert_eq!(t.get("leakage_cka"), Ok(0.7));
        assert!(Thresholds::with([("nope", 1.0)]).is_err());
    }
}

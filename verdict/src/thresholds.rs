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

/// Declares the bounds once: the typed [`Thresholds`] struct (one field each), [`BOUNDS`]
/// (name, default, meaning, origin, in this order) and the lookups by name, so a rule reads
/// `t.exploding_ratio` and a misspelt name is a compile error, never a NaN.
macro_rules! bounds {
    ($( $name:ident = $default:expr, $meaning:literal, $origin:expr; )*) => {
        /// The bounds a verdict is taken at: one named number each (what each means and where
        /// its default comes from is in [`BOUNDS`]). Set by name with [`Thresholds::set`], which
        /// refuses a name it does not know, listing the ones it knows.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Thresholds {
            $( #[doc = $meaning] pub $name: f64, )*
        }

        impl Default for Thresholds {
            fn default() -> Self {
                Thresholds { $( $name: $default, )* }
            }
        }

        /// Every bound, in the order `as_dict` lists them. The defaults are data, and one opinion.
        pub const BOUNDS: &[Bound] = &[
            $( Bound { name: stringify!($name), default: $default, meaning: $meaning, origin: $origin }, )*
        ];

        impl Thresholds {
            /// The field named `name`, to set.
            fn slot(&mut self, name: &str) -> Option<&mut f64> {
                match name {
                    $( stringify!($name) => Some(&mut self.$name), )*
                    _ => None,
                }
            }

            /// The value of the field named `name`.
            fn value(&self, name: &str) -> Option<f64> {
                match name {
                    $( stringify!($name) => Some(self.$name), )*
                    _ => None,
                }
            }

            /// Every bound and its value, in the order of [`BOUNDS`] (the seed's `as_dict`).
            pub fn as_dict(&self) -> Vec<(&'static str, f64)> {
                vec![ $( (stringify!($name), self.$name), )* ]
            }
        }
    };
}

bounds! {
    vanishing_ratio = 1e-3,
        "VANISHING when a node's grad_norm over the last node's grad_norm is below this…",
        Origin::Published("AutoTrainer beta_1 = 1e-3 (monitor.py gradient_issue)");
    vanishing_floor = 1e-4,
        "…and the node's grad_norm is also below this",
        Origin::Published("AutoTrainer beta_2 = 1e-4 (monitor.py gradient_issue)");
    vanishing_mean_abs = 1e-7,
        "VANISHING when a node's grad_mean_abs is below this, whatever its neighbours",
        Origin::Published("SageMaker Debugger VanishingGradient threshold = 1e-7");
    exploding_ratio = 70.0,
        "EXPLODING when a node's grad_norm over the last node's grad_norm is above this",
        Origin::Published("AutoTrainer beta_3 = 70 (monitor.py gradient_issue)");
    exploding_growth = 100.0,
        "EXPLODING also when the run's gradient norm (every node's together) is more than this \
         times its smallest value at an earlier forward judged",
        Origin::Ours(
            "AutoTrainer's beta_3 compares layers at one step; a learning rate too high grows \
             every layer at once, so growth over time is judged too, at two decades",
        );
    dead_layer_fraction = 0.5,
        "DEAD when a ReLU-like node's dead_unit_fraction is above this",
        Origin::Published("SageMaker Debugger DeadRelu threshold_layer = 50 %");
    saturated_layer_fraction = 0.5,
        "SATURATED when a tanh/sigmoid-like node's saturated_unit_fraction is above this",
        Origin::Published("SageMaker Debugger SaturatedActivation threshold_layer = 50 %");
    saturated_output_fraction = 0.5,
        "SATURATED also when a tanh/sigmoid-like node's act_saturated_fraction is above this",
        Origin::Ours(
            "Karpathy (makemore part 3) reads the share of |tanh| > 0.97 by eye and publishes no \
             bound; with small batches hardly any unit is saturated on 99 % of its samples",
        );
    stalled_update_ratio = 1e-6,
        "STALLED when a node's update_ratio is below this",
        Origin::Ours(
            "three decades under CS231n's healthy ~1e-3; SageMaker WeightUpdateRatio's \
             published small_threshold 1e-8 only catches frozen tensors",
        );
    overstepping_update_ratio = 1.0,
        "OVERSTEPPING when a node's update_ratio is above this",
        Origin::Ours(
            "an update as large as the weights it moves; CS231n calls ~1e-3 healthy and 1e-2 \
             still fine for a small net; SageMaker's published large_threshold is 10",
        );
    dead_min_samples = 32.0,
        "DEAD and DEAD_CHANNELS need at least this many samples per unit (unit_samples), when known",
        Origin::Ours(
            "a unit is dead when active on under 1 % of its samples; on a handful of samples, \
             never active says little (a unit active on a tenth of the inputs is off on all of \
             32 one time in thirty, on all of 4 two times in three)",
        );
    dead_channels_min = 1.0,
        "DEAD_CHANNELS(n) when a ReLU-like node has at least this many dead_units",
        Origin::Ours("any dead channel is worth naming; no published count exists");
    dead_channels_fraction = 0.1,
        "…and at least this share of the node's units",
        Origin::Ours(
            "a few dead units in a wide healthy ReLU layer are common; a tenth of the width is a fault",
        );
    ignored_channels_min = 1.0,
        "IGNORED_CHANNELS(n) when a node has at least this many ignored_units",
        Origin::Ours(
            "continual backprop replaces the lowest-utility share and publishes no count",
        );
    ignored_channels_fraction = 0.1,
        "…and at least this share of the node's units",
        Origin::Ours("as dead_channels_fraction: a few low-utility units are what training leaves");
    leakage_cka = 0.4,
        "LEAKAGE when the debiased linear CKA between two groups declared apart is at least this",
        Origin::Ours(
            "no published CKA leak bound; the debiased estimator reads about 0 on independent \
             representations (|cka| < 0.25 on the benchmark's healthy two-branch runs) and 1 on \
             the same information up to rotation and scale; two random ReLU maps of one input \
             read 0.5-0.8",
        );
    narrowing_erank_fraction = 0.05,
        "NARROWING when update_erank (else grad_erank) over rank_dims is below this",
        Origin::Ours(
            "papers track the decline of effective rank (Roy & Vetterli 2007) and publish no bound",
        );
    missing_norm_var_growth = 10.0,
        "MISSING_NORMALISATION when act_var grows by more than this factor over a \
                  stretch of nodes with no normalisation node",
        Origin::Published(
            "SageMaker Debugger PoorWeightInitialization: max/min activation variance > 10",
        );
    plasticity_param_growth = 1.1,
        "LOSING_PLASTICITY needs param_mean_abs last/first at least this…",
        Origin::Ours(
            "Dohare et al. 2024 track the trend of mean |theta| and publish no bound",
        );
    plasticity_dormant_rise = 0.05,
        "…and dormant_unit_fraction last minus first at least this…",
        Origin::Ours("Dohare et al. 2024, Sokar et al. 2023 track the trend, no bound");
    plasticity_erank_drop = 0.1,
        "…and feature_erank fallen by at least this share of its first value…",
        Origin::Ours("Dohare et al. 2024 track the fall of effective rank, no bound");
    plasticity_min_points = 3.0,
        "…over a history of at least this many forwards with all three measured",
        Origin::Ours("a trend needs more than two points");
    persist_window = 10.0,
        "A flag is the run's when it held on persist_count of the last persist_window forwards \
         judged (in proportion when fewer were judged)…",
        Origin::Ours("ten forwards: one noisy forward is not a fault, a trend over ten is");
    persist_count = 5.0,
        "…this many of them",
        Origin::Ours("half the window, so a flag that flickers on and off still counts");
    persist_streak = 3.0,
        "…or on each of the last this many forwards judged: it holds now, however short the run",
        Origin::Ours("three in a row is a trend, not a flicker");
    start_forwards = 20.0,
        "A flag that held only at forwards within this many of the first one judged, and not \
         in the last window, is a transient of the fresh initialisation, not the run's fault",
        Origin::Ours("the first steps of a fresh initialisation settle within tens of steps");
}

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

    /// The value of a bound by name; an unknown name is refused with the list of known ones.
    pub fn get(&self, name: &str) -> Result<f64, ThresholdError> {
        self.value(name)
            .ok_or_else(|| ThresholdError::Unknown { name: name.into() })
    }

    /// Set a bound by name; unknown names and non-finite values are refused.
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), ThresholdError> {
        let slot = self
            .slot(name)
            .ok_or_else(|| ThresholdError::Unknown { name: name.into() })?;
        if !value.is_finite() {
            return Err(ThresholdError::NotFinite {
                name: name.into(),
                value,
            });
        }
        *slot = value;
        Ok(())
    }
}

/// The bounds every flag is judged at (how long a flag must hold to be the run's), not one
/// flag's own.
pub const EVERY_FLAG: &[&str] = &[
    "persist_window",
    "persist_count",
    "persist_streak",
    "start_forwards",
];

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

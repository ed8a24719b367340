//! Observable specs: a declarative measurement and its stable 16-hex-char id.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// A measurement, declared: where the tensor comes from, which one, what is done to it,
/// how it is reduced, and when. Every field is part of its identity (see [`ObservableSpec::id`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservableSpec {
    /// Which kind of tensor: `param`, `grad`, `act`, `loss`, or a name a source defines.
    pub source: String,
    /// Which tensor of that kind: a key such as `fc1.weight`, a glob, or `all`.
    pub selector: String,
    /// Transforms applied left to right before the reduction, e.g. `["abs", "log1p_abs"]`.
    #[serde(default)]
    pub transforms: Vec<String>,
    /// The reduction, e.g. `l2` or `quantiles(0.05,0.95)`.
    pub reduction: String,
    /// A temporal function over the history of this observable's values, if any.
    #[serde(default)]
    pub temporal: Option<Temporal>,
    /// Observe every `frequency` steps (step % frequency == 0); 1 means every step.
    #[serde(default = "every_step")]
    pub frequency: u64,
    /// A declared estimate of the cost, used by a runtime budget; not a measurement.
    #[serde(default)]
    pub budget_hint: Option<BudgetHint>,
}

fn every_step() -> u64 {
    1
}

/// A temporal function over an explicit history of values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fn", rename_all = "snake_case", deny_unknown_fields)]
pub enum Temporal {
    /// The difference from the previous value.
    Delta,
    /// An exponential moving average with smoothing factor `alpha` in (0, 1].
    Ema { alpha: f64 },
    /// The least-squares slope over the last `window` values.
    Slope { window: u64 },
    /// The standard deviation over the last `window` values.
    RollingStd { window: u64 },
}

/// A declared cost estimate for one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetHint {
    /// Estimated milliseconds of compute per evaluation (an estimate, never measured).
    pub compute_ms: f64,
}

/// Why a spec could not be read or is not well formed.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecError {
    /// The spec's JSON did not parse or has unknown fields; fix the input, retrying will not help.
    Json(String),
    /// A transform or reduction is not `name` or `name(number,…)`; names the field and the text.
    BadOp { field: &'static str, text: String },
    /// A numeric field is out of range (frequency 0, alpha outside (0, 1], window 0, cost < 0).
    OutOfRange { field: &'static str, value: String },
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Json(e) => write!(f, "not a valid observable spec: {e}"),
            SpecError::BadOp { field, text } => {
                write!(
                    f,
                    "spec {field} {text:?} is not `name` or `name(number,...)`"
                )
            }
            SpecError::OutOfRange { field, value } => {
                write!(f, "spec {field} is out of range: {value}")
            }
        }
    }
}

impl std::error::Error for SpecError {}

/// Rewrite an op such as ` Quantiles( 0.050, .95 )` as `quantiles(0.05,0.95)`.
fn canonical_op(field: &'static str, text: &str) -> Result<String, SpecError> {
    let bad = || SpecError::BadOp {
        field,
        text: text.to_string(),
    };
    let text = text.trim();
    let (name, args) = match text.split_once('(') {
        None => (text, None),
        Some((name, rest)) => (name.trim(), Some(rest.strip_suffix(')').ok_or_else(bad)?)),
    };
    let name_ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !name_ok {
        return Err(bad());
    }
    let name = name.to_ascii_lowercase();
    let numbers = match args {
        Some(args) => parse_numbers(args).ok_or_else(bad)?,
        None => match default_args(&name) {
            Some(defaults) => defaults,
            None => return Ok(name),
        },
    };
    // `+ 0.0` turns -0 into 0, so the two spellings of zero are one op.
    let numbers: Vec<String> = numbers.iter().map(|v| format!("{}", v + 0.0)).collect();
    Ok(format!("{name}({})", numbers.join(",")))
}

/// The default `eps` of `sparsity`.
pub const SPARSITY_EPS: f64 = 1e-6;
/// The default `delta` of `srank` (Kumar et al. 2021).
pub const SRANK_DELTA: f64 = 0.01;

/// The arguments a known op takes when none are written, so that `sparsity` and
/// `sparsity(0.000001)` are the same op (and get the same id).
pub fn default_args(name: &str) -> Option<Vec<f64>> {
    match name {
        "sparsity" => Some(vec![SPARSITY_EPS]),
        "srank" => Some(vec![SRANK_DELTA]),
        _ => None,
    }
}

/// The comma-separated finite numbers of an op's argument list.
fn parse_numbers(args: &str) -> Option<Vec<f64>> {
    args.split(',')
        .map(|a| a.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
        .collect::<Option<Vec<f64>>>()
}

impl ObservableSpec {
    /// A spec with the defaults: no transforms, no temporal function, every step, no hint.
    pub fn new(source: &str, selector: &str, reduction: &str) -> Self {
        ObservableSpec {
            source: source.to_string(),
            selector: selector.to_string(),
            transforms: Vec::new(),
            reduction: reduction.to_string(),
            temporal: None,
            frequency: 1,
            budget_hint: None,
        }
    }

    /// The canonical spelling of one transform or reduction: trimmed, name lower-cased,
    /// arguments as shortest round-trip decimals, registry defaults written out
    /// (`Sparsity` becomes `sparsity(0.000001)`).
    pub fn canonical_op_text(text: &str) -> Result<String, SpecError> {
        canonical_op("op", text)
    }

    /// Read a spec from JSON; missing optional fields take their defaults.
    pub fn from_json(text: &str) -> Result<Self, SpecError> {
        serde_json::from_str(text).map_err(|e| SpecError::Json(e.to_string()))
    }

    /// The same spec with its ops in canonical spelling and its numbers checked.
    pub fn canonical(&self) -> Result<ObservableSpec, SpecError> {
        let range = |field, ok: bool, value: String| {
            if ok {
                Ok(())
            } else {
                Err(SpecError::OutOfRange { field, value })
            }
        };
        range("frequency", self.frequency >= 1, self.frequency.to_string())?;
        match &self.temporal {
            Some(Temporal::Ema { alpha }) => range(
                "temporal.alpha",
                *alpha > 0.0 && *alpha <= 1.0,
                alpha.to_string(),
            )?,
            Some(Temporal::Slope { window }) | Some(Temporal::RollingStd { window }) => {
                range("temporal.window", *window >= 1, window.to_string())?
            }
            _ => {}
        }
        if let Some(h) = &self.budget_hint {
            let ok = h.compute_ms.is_finite() && h.compute_ms >= 0.0;
            range("budget_hint.compute_ms", ok, h.compute_ms.to_string())?;
        }
        let transforms = self
            .transforms
            .iter()
            .map(|t| canonical_op("transform", t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ObservableSpec {
            source: self.source.trim().to_string(),
            selector: self.selector.trim().to_string(),
            transforms,
            reduction: canonical_op("reduction", &self.reduction)?,
            // -0 and 0 are the same cost.
            budget_hint: self.budget_hint.as_ref().map(|h| BudgetHint {
                compute_ms: h.compute_ms + 0.0,
            }),
            ..self.clone()
        })
    }

    /// The canonical serialisation the id is taken over: compact JSON, fields in declaration
    /// order, every default written out, ops in canonical spelling (see docs/observables.md).
    pub fn canonical_json(&self) -> Result<String, SpecError> {
        let c = self.canonical()?;
        serde_json::to_string(&c).map_err(|e| SpecError::Json(e.to_string()))
    }

    /// The stable id: the first 16 lower-case hex chars of SHA-256 over [`Self::canonical_json`].
    pub fn id(&self) -> Result<String, SpecError> {
        let digest = Sha256::digest(self.canonical_json()?.as_bytes());
        Ok(digest.iter().take(8).map(|b| format!("{b:02x}")).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_does_not_change_the_id_but_every_field_does() {
        let base = ObservableSpec::new("param", "fc1.weight", "l2");
        let id = base.id().unwrap();
        assert_eq!(id.len(), 16);
        let same = ObservableSpec::from_json(
            r#"{"reduction":" L2 ","selector":"fc1.weight","source":"param","frequency":1}"#,
        )
        .unwrap();
        assert_eq!(same.id().unwrap(), id, "key order, defaults and spelling");
        let mut changed = vec![];
        let mut s = base.clone();
        s.source = "grad".into();
        changed.push(("source", s));
        let mut s = base.clone();
        s.selector = "fc2.weight".into();
        changed.push(("selector", s));
        let mut s = base.clone();
        s.transforms = vec!["abs".into()];
        changed.push(("transforms", s));
        let mut s = base.clone();
        s.reduction = "l1".into();
        changed.push(("reduction", s));
        let mut s = base.clone();
        s.temporal = Some(Temporal::Ema { alpha: 0.1 });
        changed.push(("temporal", s));
        let mut s = base.clone();
        s.frequency = 10;
        changed.push(("frequency", s));
        let mut s = base.clone();
        s.budget_hint = Some(BudgetHint { compute_ms: 1.0 });
        changed.push(("budget_hint", s));
        for (field, spec) in changed {
            assert_ne!(
                spec.id().unwrap(),
                id,
                "changing {field} must change the id"
            );
        }
    }

    #[test]
    fn op_arguments_are_canonical_numbers() {
        for (got, want) in [
            (
                "quantiles( 0.050, .95 )",
                Ok("quantiles(0.05,0.95)".to_string()),
            ),
            ("Histogram(32.0)", Ok("histogram(32)".to_string())),
            ("l2", Ok("l2".to_string())),
            ("quantiles(0.5", Err(())),
            ("quantiles(x)", Err(())),
            ("2bad", Err(())),
            ("", Err(())),
        ] {
            assert_eq!(
                canonical_op("reduction", got).map_err(|_| ()),
                want,
                "for {got:?}"
            );
        }
    }

    #[test]
    fn out_of_range_numbers_are_refused() {
        let mut s = ObservableSpec::new("param", "w", "l2");
        s.frequency = 0;
        assert!(matches!(
            s.id(),
            Err(SpecError::OutOfRange {
                field: "frequency",
                ..
            })
        ));
        s.frequency = 1;
        s.temporal = Some(Temporal::Ema { alpha: 1.5 });
        assert!(matches!(
            s.id(),
            Err(SpecError::OutOfRange {
                field: "temporal.alpha",
                ..
            })
        ));
    }
}

//! Thresholds as JSON: `{"name": value, …}` overrides on top of the defaults, and back out.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use somatize_verdict::{ThresholdError, Thresholds};
use std::fmt;
use std::path::Path;

/// Why thresholds could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum ThresholdsError {
    /// The file could not be read; retrying may help if it was a passing I/O problem.
    Io {
        /// The file.
        path: String,
        detail: String,
    },
    /// The text is not a JSON object; fix the text.
    Json {
        /// Where the text came from (a file, or `<text>`).
        source: String,
        detail: String,
    },
    /// A value is not a number; fix the text.
    NotANumber {
        source: String,
        /// The threshold's name.
        name: String,
        /// The JSON it had instead.
        got: String,
    },
    /// An unknown name or a non-finite value; fix the text.
    Threshold {
        source: String,
        error: ThresholdError,
    },
}

impl fmt::Display for ThresholdsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThresholdsError::Io { path, detail } => write!(f, "{path}: {detail}"),
            ThresholdsError::Json { source, detail } => write!(
                f,
                "{source}: thresholds must be a JSON object of name to number: {detail}"
            ),
            ThresholdsError::NotANumber { source, name, got } => {
                write!(
                    f,
                    "{source}: threshold {name:?} must be a number, not {got}"
                )
            }
            ThresholdsError::Threshold { source, error } => write!(f, "{source}: {error}"),
        }
    }
}

impl std::error::Error for ThresholdsError {}

/// The defaults with the overrides of a JSON object applied (`null` or an empty object
/// gives the defaults). `source` names where the value came from, for errors.
pub fn from_value(value: &Value, source: &str) -> Result<Thresholds, ThresholdsError> {
    let object = match value {
        Value::Null => return Ok(Thresholds::default()),
        Value::Object(o) => o,
        other => {
            return Err(ThresholdsError::Json {
                source: source.into(),
                detail: format!("got {}", kind_of(other)),
            })
        }
    };
    let mut t = Thresholds::default();
    for (name, v) in object {
        let Some(x) = v.as_f64() else {
            return Err(ThresholdsError::NotANumber {
                source: source.into(),
                name: name.clone(),
                got: v.to_string(),
            });
        };
        t.set(name, x).map_err(|error| ThresholdsError::Threshold {
            source: source.into(),
            error,
        })?;
    }
    Ok(t)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Thresholds from JSON text.
pub fn from_json(text: &str) -> Result<Thresholds, ThresholdsError> {
    from_json_named(text, "<text>")
}

fn from_json_named(text: &str, source: &str) -> Result<Thresholds, ThresholdsError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ThresholdsError::Json {
        source: source.into(),
        detail: e.to_string(),
    })?;
    from_value(&value, source)
}

/// Thresholds from a JSON file of overrides (capped at 1 MiB: it holds a few numbers).
pub fn load(path: &Path) -> Result<Thresholds, ThresholdsError> {
    const CAP: u64 = 1 << 20;
    let name = path.display().to_string();
    let io = |e: std::io::Error| ThresholdsError::Io {
        path: name.clone(),
        detail: e.to_string(),
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > CAP {
        return Err(ThresholdsError::Io {
            path: name,
            detail: format!("{len} bytes is more than the {CAP}-byte cap for a thresholds file"),
        });
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    from_json_named(&text, &name)
}

/// Every threshold as a JSON object in the order of `BOUNDS`, for writing beside a diagnosis.
pub struct AsJson<'a>(pub &'a Thresholds);

impl Serialize for AsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let dict = self.0.as_dict();
        let mut map = s.serialize_map(Some(dict.len()))?;
        for (name, value) in dict {
            map.serialize_entry(name, &value)?;
        }
        map.end()
    }
}

/// Every threshold as pretty JSON text, in the order of `BOUNDS`.
pub fn to_json(t: &Thresholds) -> String {
    // Serialising a map of finite f64 cannot fail.
    serde_json::to_string_pretty(&AsJson(t)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_on_top_of_the_defaults() {
        let t = from_json(r#"{"exploding_ratio": 5, "leakage_cka": 0.5}"#).unwrap();
        assert_eq!(t.get("exploding_ratio"), Ok(5.0));
        assert_eq!(t.get("leakage_cka"), Ok(0.5));
        assert_eq!(
            t.get("vanishing_ratio"),
            Thresholds::default().get("vanishing_ratio")
        );
        assert_eq!(from_json("{}").unwrap(), Thresholds::default());
        assert_eq!(from_json("null").unwrap(), Thresholds::default());
    }

    #[test]
    fn refuses_bad_text_with_a_message_naming_the_problem() {
        for (text, want) in [
            (r#"{"exploding": 5}"#, "unknown threshold \"exploding\""),
            (
                r#"{"exploding_ratio": "5"}"#,
                "\"exploding_ratio\" must be a number, not \"5\"",
            ),
            (r#"[1, 2]"#, "got an array"),
            (r#"{"exploding_ratio": 5"#, "must be a JSON object"),
        ] {
            let got = from_json(text).unwrap_err().to_string();
            assert!(
                got.contains(want),
                "{text}: got {got:?}, wanted it to contain {want:?}"
            );
        }
    }

    #[test]
    fn round_trips_through_json_in_order() {
        let mut t = Thresholds::default();
        t.set("dead_layer_fraction", 0.25).unwrap();
        let text = to_json(&t);
        assert_eq!(from_json(&text).unwrap(), t);
        let first = text.find("vanishing_ratio").unwrap();
        let last = text.find("plasticity_min_points").unwrap();
        assert!(first < last, "{text}");
    }
}

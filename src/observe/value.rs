//! The value an observable produces: a scalar, a vector, or a histogram.

use serde::{Deserialize, Serialize};

/// What one reduction yields. Serialised untagged, so in JSON a scalar is a number (or `null`
/// when undefined, e.g. the mean of no finite values), a vector is an array, and a histogram is
/// `{"edges": [...], "counts": [...]}` as `numpy.histogram` returns them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// One number; `None` when the statistic is undefined for the input.
    Scalar(Option<f64>),
    /// One number per row, column, quantile or channel; `None` where undefined.
    Vector(Vec<Option<f64>>),
    /// `bins + 1` edges and `bins` counts.
    Histogram { edges: Vec<f64>, counts: Vec<u64> },
}

impl Value {
    /// The number, when this is a defined scalar.
    pub fn as_scalar(&self) -> Option<f64> {
        match self {
            Value::Scalar(v) => *v,
            _ => None,
        }
    }

    /// The entries, when this is a vector.
    pub fn as_vector(&self) -> Option<&[Option<f64>]> {
        match self {
            Value::Vector(v) => Some(v),
            _ => None,
        }
    }

    /// A scalar from a number, `None` when it is not finite.
    pub fn scalar(v: f64) -> Value {
        Value::Scalar(v.is_finite().then_some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_each_shape() {
        for (value, json) in [
            (Value::Scalar(Some(1.5)), "1.5"),
            (Value::Scalar(None), "null"),
            (Value::Vector(vec![Some(1.0), None]), "[1.0,null]"),
            (
                Value::Histogram {
                    edges: vec![0.0, 1.0],
                    counts: vec![3],
                },
                r#"{"edges":[0.0,1.0],"counts":[3]}"#,
            ),
        ] {
            let got = serde_json::to_string(&value).unwrap();
            assert_eq!(got, json, "serialising {value:?}");
            let back: Value = serde_json::from_str(json).unwrap();
            assert_eq!(back, value, "reading {json}");
        }
    }
}

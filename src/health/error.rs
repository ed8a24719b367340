//! Why a node could not be measured: the error of the health measurements.

use super::CKA_MAX_ENTRIES;
use std::fmt;

/// Why a node could not be measured.
#[derive(Debug, Clone, PartialEq)]
pub enum MeasureError {
    /// A tensor's shape does not multiply out to its length; the tensor is malformed and
    /// measuring it again will not help.
    Shape {
        /// The tensor's key.
        key: String,
        shape: Vec<usize>,
        len: usize,
    },
    /// The previous parameters do not pair with the current ones (a different count, or
    /// a different length at the same position); pass the same tensors in the same order.
    Previous {
        /// The current parameter's key (or `<count>` when the counts differ).
        key: String,
        /// What was expected and what came, in words.
        detail: String,
    },
    /// The two groups given to CKA do not have the same number of samples (axis 0).
    Samples {
        x_key: String,
        y_key: String,
        x: usize,
        y: usize,
    },
    /// A declared layout does not fit the output it describes: its length is not the
    /// output's rank, or it names no unit axis (`C` or `D`). Fix the graph's `layout`.
    Layout {
        /// The output's key (`act.<node>`).
        key: String,
        layout: String,
        shape: Vec<usize>,
    },
    /// A CKA intermediate would hold more than [`CKA_MAX_ENTRIES`] entries; pass fewer
    /// samples or features.
    TooLarge {
        x_key: String,
        y_key: String,
        entries: usize,
    },
}

impl fmt::Display for MeasureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MeasureError::Shape { key, shape, len } => {
                write!(f, "{key}: shape {shape:?} does not hold its {len} values")
            }
            MeasureError::Previous { key, detail } => {
                write!(f, "{key}: previous parameters do not match: {detail}")
            }
            MeasureError::Samples { x_key, y_key, x, y } => write!(
                f,
                "CKA of {x_key} and {y_key}: {x} samples against {y}; they must be the same inputs"
            ),
            MeasureError::Layout { key, layout, shape } => write!(
                f,
                "{key}: layout {layout:?} does not fit an output of shape {shape:?} \
                 (one letter per axis, with a C or D for the units)"
            ),
            MeasureError::TooLarge {
                x_key,
                y_key,
                entries,
            } => write!(
                f,
                "CKA of {x_key} and {y_key}: a {entries}-entry intermediate is over the \
                 {CKA_MAX_ENTRIES} cap; pass fewer samples or features"
            ),
        }
    }
}

impl std::error::Error for MeasureError {}

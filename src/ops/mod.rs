//! Transforms and reductions, and the engine that runs many of them over a tensor in one pass.

pub mod engine;
pub mod reductions;
pub mod transforms;

pub use engine::Batch;

use crate::registry::Plan;
use crate::tensor::TypedTensor;
use crate::value::Value;
use std::fmt;

/// Why a transform or reduction could not run on a tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum OpError {
    /// The op needs another shape (e.g. `stable_rank` of a vector); the input will not change
    /// on retry. Names the op, the shape it got and what it needs.
    Shape {
        op: String,
        shape: Vec<usize>,
        need: String,
    },
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::Shape { op, shape, need } => {
                write!(f, "{op} needs {need}, got shape {shape:?}")
            }
        }
    }
}

impl std::error::Error for OpError {}

/// Run every plan over one tensor, all in one pass over its values; one result per plan.
pub fn reduce(tensor: &TypedTensor, plans: &[Plan]) -> Vec<Result<Value, OpError>> {
    let mut batch = Batch::new(&tensor.shape);
    for plan in plans {
        batch.add(plan);
    }
    tensor.data.for_each_chunk(&mut |chunk| batch.feed(chunk));
    batch.finish()
}

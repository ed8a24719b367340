//! Transforms and reductions, and the engine that runs many of them over a tensor in one pass.

pub mod blocks;
pub mod engine;
pub mod reductions;
pub mod transforms;

pub use engine::Batch;

use crate::observe::registry::Plan;
use crate::observe::value::Value;
use crate::tensor::{TensorData, TypedTensor};
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

/// A run of values in the type they are stored in (f32 and f64 are not converted first).
#[derive(Debug, Clone, Copy)]
pub enum Chunk<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// Elements per native chunk, when values have to be converted on the way.
pub const NATIVE_CHUNK: usize = crate::tensor::typed::CHUNK * 16;

/// Hand every value of a tensor to `f`, in order, f32 and f64 as they are stored and every
/// other dtype converted to f64 by [`crate::TensorData::for_each_chunk`].
/// Native chunks are at most `chunk_len` long (see [`Batch::chunk_len`]).
pub fn for_each_native_chunk(data: &TensorData, chunk_len: usize, f: &mut dyn FnMut(Chunk<'_>)) {
    let len = chunk_len.max(1);
    match data {
        TensorData::F32(v) => v.chunks(len).for_each(|c| f(Chunk::F32(c))),
        TensorData::F64(v) => v.chunks(len).for_each(|c| f(Chunk::F64(c))),
        other => other.for_each_chunk(&mut |c| f(Chunk::F64(c))),
    }
}

/// Run every plan over one tensor, all in one pass over its values; one result per plan.
pub fn reduce(tensor: &TypedTensor, plans: &[Plan]) -> Vec<Result<Value, OpError>> {
    let mut batch = Batch::new(&tensor.shape);
    for plan in plans {
        batch.add(plan);
    }
    let len = batch.chunk_len();
    for_each_native_chunk(&tensor.data, len, &mut |chunk| batch.feed_chunk(chunk));
    batch.finish()
}

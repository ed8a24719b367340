//! Tensors and the files they come in: the typed tensor every source hands out.

pub mod typed;

pub use typed::{DType, Provenance, TensorData, TypedTensor};

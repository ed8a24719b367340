//! Tensors and the files they come in: the typed tensor every source hands out, and readers for NPY, NPZ, PyTorch and safetensors files.

pub mod bytes;
pub mod crc;
pub mod elem;
pub mod error;
pub mod file;
pub mod npy;
pub mod pickle;
pub mod safetensors;
pub mod torch;
pub mod typed;
pub mod zipdir;

pub use error::{Problem, TensorError};
pub use file::{BytesFile, EntryInfo, Format, PathFile, Summaries, TensorFile, TensorSummary};
pub use typed::{DType, Provenance, TensorData, TypedTensor};

//! somatize: what happened in a training run, and was it healthy. The core, natively and in wasm.

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
#[cfg(not(target_arch = "wasm32"))]
pub mod record;
pub mod spec;
pub mod stats;
pub mod store;
pub mod tensor;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use somatize_verdict as verdict;
pub use spec::{ObservableSpec, SpecError};
pub use stats::{Moments, Stats};
pub use tensor::{DType, TensorData, TypedTensor};

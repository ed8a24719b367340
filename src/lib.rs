//! somatize: what happened in a training run, and was it healthy. The core, natively and in wasm.

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod demo;
pub mod figures;
pub mod file_source;
pub mod generate;
pub mod health;
#[cfg(not(target_arch = "wasm32"))]
pub mod import;
pub mod linalg;
pub mod ops;
pub mod readback;
#[cfg(not(target_arch = "wasm32"))]
pub mod record;
pub mod registry;
#[cfg(not(target_arch = "wasm32"))]
pub mod report;
pub mod runtime;
#[cfg(not(target_arch = "wasm32"))]
pub mod serve;
pub mod sink;
pub mod source;
pub mod spec;
pub mod stats;
pub mod store;
pub mod temporal;
pub mod tensor;
pub mod value;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use file_source::{CheckpointSource, FileSource};
pub use generate::{generate, generate_specs, generate_with, GenerateOptions};
pub use runtime::{Budget, Observable, Observation, OfflineAnalyzer, Pack, Runtime};
pub use sink::{MemorySink, ValueSink};
pub use somatize_verdict as verdict;
pub use source::{HookSource, TensorSource};
pub use spec::{ObservableSpec, SpecError};
pub use stats::{Moments, Stats};
pub use tensor::{DType, TensorData, TypedTensor};
pub use value::Value;

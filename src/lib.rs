//! somatize: what happened in a training run, and was it healthy. The core, natively and in wasm.

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod demo;
pub mod figures;
pub mod health;
#[cfg(not(target_arch = "wasm32"))]
pub mod import;
pub mod math;
pub mod observe;
pub mod readback;
#[cfg(not(target_arch = "wasm32"))]
pub mod record;
#[cfg(not(target_arch = "wasm32"))]
pub mod report;
#[cfg(not(target_arch = "wasm32"))]
pub mod serve;
pub mod store;
pub mod tensor;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use math::stats::{Moments, Stats};
pub use observe::file_source::{CheckpointSource, FileSource};
pub use observe::generate::{generate, generate_specs, generate_with, GenerateOptions};
pub use observe::runtime::{Budget, Observable, Observation, OfflineAnalyzer, Pack, Runtime};
pub use observe::sink::{MemorySink, ValueSink};
pub use observe::source::{HookSource, TensorSource};
pub use observe::spec::{ObservableSpec, SpecError};
pub use observe::value::Value;
pub use somatize_verdict as verdict;
pub use tensor::{DType, TensorData, TypedTensor};

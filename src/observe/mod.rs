//! Observables: declarative specs, the registry of transforms and reductions, the engine that runs them, where tensors come from and where values go.

pub mod file_source;
pub mod generate;
pub mod ops;
pub mod registry;
pub mod runtime;
pub mod sink;
pub mod source;
pub mod spec;
pub mod temporal;
pub mod value;

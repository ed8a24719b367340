//! `somatize._kernels`: one-pass CPU sums of float32 tensors for `somatize.torch` ([`sums`]).

pub mod sums;

#[cfg(feature = "python")]
mod python;

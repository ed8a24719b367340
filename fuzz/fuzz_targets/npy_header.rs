//! The NPY header (both parsers: `tensor::npy`, any numpy file, and `store::npy`, the
//! store's blobs), then the whole file as `somatize stats` reads a `.npy`.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::npy_header(data));

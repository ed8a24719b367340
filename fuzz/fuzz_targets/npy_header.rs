//! The NPY header (`tensor::npy`, the one parser; `store::npy`, the store's check of its
//! blobs on top of it), then the whole file as `somatize stats` reads a `.npy`.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::npy_header(data));

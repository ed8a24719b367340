//! The NPY header (both parsers: `tensor::npy`, any numpy file, and `store::npy`, the
//! store's blobs), then the whole file as `somatize stats` reads a `.npy`.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use somatize::{store, tensor};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = tensor::npy::parse_header(data) {
        let _ = (h.count(), h.data_len());
    }
    let _ = store::npy::parse(data, "x", "fuzz.npy");
    common::read_all("fuzz.npy", data);
});

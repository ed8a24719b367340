//! A zip directory as `.npz` and zipped torch `.pt` files are read (`tensor::zipdir`,
//! `tensor::torch::from_zip`), then every member read and summarised.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::npz_zip(data));

//! A zip directory as `.npz` and zipped torch `.pt` files are read (`tensor::zipdir`,
//! `tensor::torch::from_zip`), then every member read and summarised.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::read_all("fuzz.npz", data);
});

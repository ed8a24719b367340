//! The restricted pickle machine (`tensor::pickle::load`) and what torch's loader takes from
//! it, then the bytes as a legacy (non-zip) torch file.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::torch_pickle(data));

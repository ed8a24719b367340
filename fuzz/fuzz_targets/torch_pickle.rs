//! The restricted pickle machine (`tensor::pickle::load`) and what torch's loader takes from
//! it, then the bytes as a legacy (non-zip) torch file.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use somatize::tensor::{pickle, torch};

fuzz_target!(|data: &[u8]| {
    if let Ok((p, _)) = pickle::load(data) {
        let _ = torch::named_tensors(&p);
    }
    let _ = torch::from_legacy(&mut std::io::Cursor::new(data));
    common::read_all("fuzz.pt", data);
});

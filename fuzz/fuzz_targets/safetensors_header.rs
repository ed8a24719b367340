//! The safetensors header: its length prefix and JSON (`tensor::safetensors`), then the file
//! read whole.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use somatize::tensor::safetensors;

fuzz_target!(|data: &[u8]| {
    let total = data.len() as u64;
    if let Ok(n) = safetensors::header_len(data, total) {
        if let Some(json) = usize::try_from(n)
            .ok()
            .and_then(|n| data.get(8..8usize.checked_add(n)?))
        {
            let _ = safetensors::parse(json, total);
        }
    }
    let _ = safetensors::parse(data, total);
    common::read_all("fuzz.safetensors", data);
});

//! The safetensors header: its length prefix and JSON (`tensor::safetensors`), then the file.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::safetensors_header(data));

//! A snapshot zip read as a store (`store::ZipFs`: the `zip` crate over range reads), then
//! what the CLI reads from it: runs, index lines, blobs (stored zips of NPY), readings.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::snapshot(data));

//! Frames of the companion's channel (`record::frame::read_frame`), as `somatize record`
//! reads them from a training process, each turned into the record it would store.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::frame(data));

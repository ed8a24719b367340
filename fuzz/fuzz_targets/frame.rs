//! Frames of the companion's channel (`record::frame::read_frame`), as `somatize record`
//! reads them from a training process, each turned into the record it would store.
#![no_main]

use libfuzzer_sys::fuzz_target;
use somatize::record::frame::read_frame;

fuzz_target!(|data: &[u8]| {
    let mut input = data;
    for forward in 0..64 {
        match read_frame(&mut input) {
            Ok(Some(frame)) => {
                let _ = frame.is_hello();
                let _ = frame.record(forward, true);
            }
            Ok(None) | Err(_) => break,
        }
    }
});

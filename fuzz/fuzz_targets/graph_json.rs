//! A run's `graph.json` (`health::record::Graph::parse`), as `somatize import` and the
//! verdict read it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use somatize::health::record::Graph;

fuzz_target!(|data: &[u8]| {
    let _ = Graph::parse(data, "graph.json");
});

//! A run's `graph.json` (`health::record::Graph::parse`), as `somatize import` and the
//! verdict read it.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::graph_json(data));

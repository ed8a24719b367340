//! Index lines (`index.jsonl`): the fast in-place scanner (`store::index::view`/`view_at`,
//! fastline.rs) over a buffer of lines, checked against serde_json, which reads every line
//! the fast path does not take: whatever the fast path takes, serde must read the same.
#![no_main]

mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::index_line(data));

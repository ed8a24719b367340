//! Index lines (`index.jsonl`): the fast in-place scanner (`store::index::view`/`view_at`,
//! fastline.rs) over a buffer of lines, checked against serde_json, which reads every line
//! the fast path does not take: whatever the fast path takes, serde must read the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use somatize::store::index::{view, view_at, IndexLine};

fuzz_target!(|data: &[u8]| {
    // In place, line by line, as a scan reads a whole index buffer.
    let starts = std::iter::once(0).chain(
        data.iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1),
    );
    for at in starts {
        if let Some((line, _end)) = view_at(data, at) {
            let _ = (line.error(), line.blob(), line.fields.get("loss.value"));
            for (_, field) in line.fields.iter() {
                let _ = format!("{field:?}");
            }
        }
    }
    for raw in data.split(|&b| b == b'\n') {
        let fast = view(raw);
        let Ok(text) = std::str::from_utf8(raw) else {
            assert!(fast.is_none(), "the fast path took a line that is not UTF-8");
            continue;
        };
        let slow: Result<IndexLine, _> = serde_json::from_str(text);
        if let Some(fast) = fast {
            let fast = fast.to_index_line();
            let slow = slow.unwrap_or_else(|e| {
                panic!("{text:?}: the fast path took it, serde refused it: {e}")
            });
            assert_eq!(
                format!("{:?}", fast.to_entry()),
                format!("{:?}", slow.to_entry()),
                "{text:?}: fast path (left), serde (right)"
            );
            let _ = fast.to_entry().to_line();
        }
        if let Ok(line) = IndexLine::parse(text) {
            let entry = line.to_entry();
            let _ = (entry.to_line(), entry.field("loss.value"));
        }
    }
});

//! A snapshot zip read as a store (`store::ZipFs`, the zip reader of store/zipfile.rs), then
//! what the CLI reads from it: runs, index lines, blobs (stored zips of NPY), readings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use somatize::store::{fs::ZipFs, Store};

fuzz_target!(|data: &[u8]| {
    let Ok(fs) = ZipFs::new(data.to_vec(), "fuzz.zip") else {
        return;
    };
    let Ok(store) = Store::open(fs) else {
        return;
    };
    let Ok(runs) = store.runs() else {
        return;
    };
    for run in runs.iter().take(4) {
        let _ = store.last(run, 3, &mut |_| {});
        if let Ok(writers) = store.writers(run) {
            for w in writers.iter().take(4) {
                let _ = store.newest_reading(run, w);
                let _ = store.exit(run, w);
            }
        }
        let Ok(scan) = store.scan(run) else {
            continue;
        };
        for item in scan.take(16).flatten() {
            let Ok(blob) = store.fetch(run, &item.writer, &item.entry) else {
                continue;
            };
            let _ = (blob.meta(), blob.facts(), blob.stats(), blob.values());
            let keys: Vec<String> = blob.tensor_keys().iter().map(|k| k.to_string()).collect();
            for k in keys.iter().take(8) {
                let _ = blob.tensor(k);
            }
        }
    }
});

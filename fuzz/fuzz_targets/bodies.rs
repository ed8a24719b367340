//! The body of every fuzz target, shared by the fuzzer (fuzz/fuzz_targets/<target>.rs) and by
//! the main crate's tests/fuzz_regressions.rs, which runs each over the committed seeds and
//! every input that once failed. Errors are fine; a panic, a hang or a runaway allocation is
//! what the fuzzer looks for.
#![allow(dead_code)]

use somatize::health::record::{summary_stats, Graph};
use somatize::record::frame::read_frame;
use somatize::store::index::{view, view_at, IndexLine};
use somatize::store::{self, Store, ZipFs};
use somatize::tensor::file::TensorFile;
use somatize::tensor::{self, pickle, safetensors, torch};

/// A target's body: the bytes the fuzzer made.
pub type Body = fn(&[u8]);

/// Every target's name and body, in the order of fuzz/Cargo.toml.
pub const TARGETS: [(&str, Body); 8] = [
    ("npy_header", npy_header),
    ("npz_zip", npz_zip),
    ("torch_pickle", torch_pickle),
    ("safetensors_header", safetensors_header),
    ("index_line", index_line),
    ("frame", frame),
    ("snapshot", snapshot),
    ("graph_json", graph_json),
];

/// Open `bytes` as a tensor file named `name` and read everything in it, as `somatize stats`.
fn read_all(name: &str, bytes: &[u8]) {
    let Ok(mut file) = TensorFile::open_bytes(name, bytes) else {
        return;
    };
    let _ = file.format();
    for info in file.entries() {
        let _ = file.read(&info.key);
        let _ = file.stats(&info.key);
    }
    let _ = file.summarize();
}

/// The NPY header (`tensor::npy`, the one parser; `store::npy`, the store's check of its
/// blobs on top of it), then the whole file as `somatize stats` reads a `.npy`.
pub fn npy_header(data: &[u8]) {
    if let Ok(h) = tensor::npy::parse_header(data) {
        let _ = (h.count(), h.data_len());
    }
    let _ = store::npy::parse(data, "x", "fuzz.npy");
    read_all("fuzz.npy", data);
}

/// A zip directory as `.npz` and zipped torch `.pt` files are read (`tensor::zipdir`,
/// `tensor::torch::from_zip`), then every member read and summarised.
pub fn npz_zip(data: &[u8]) {
    read_all("fuzz.npz", data);
}

/// The restricted pickle machine (`tensor::pickle::load`) and what torch's loader takes from
/// it, then the bytes as a legacy (non-zip) torch file.
pub fn torch_pickle(data: &[u8]) {
    if let Ok((p, _)) = pickle::load(data) {
        let _ = torch::named_tensors(&p);
    }
    let _ = torch::from_legacy(&mut std::io::Cursor::new(data));
    read_all("fuzz.pt", data);
}

/// The safetensors header: its length prefix and JSON (`tensor::safetensors`), then the file.
pub fn safetensors_header(data: &[u8]) {
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
    read_all("fuzz.safetensors", data);
}

/// Index lines (`index.jsonl`): the fast in-place scanner (`store::index::view`/`view_at`,
/// fastline.rs) over a buffer of lines, checked against serde_json, which reads every line
/// the fast path does not take: whatever the fast path takes, serde must read the same.
pub fn index_line(data: &[u8]) {
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
            assert!(
                fast.is_none(),
                "the fast path took a line that is not UTF-8"
            );
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
        }
        if let Ok(line) = IndexLine::parse(text) {
            let entry = line.to_entry();
            let _ = (entry.to_line(), entry.field("loss.value"));
        }
    }
}

/// Frames of the companion's channel (`record::frame::read_frame`), as `somatize record`
/// reads them from a training process, each turned into the record it would store.
pub fn frame(data: &[u8]) {
    let mut input = data;
    for forward in 0..64 {
        match read_frame(&mut input) {
            Ok(Some(frame)) => {
                let _ = frame.is_hello();
                let _ = frame.record(forward, true);
                // A summary's structure over its numbers, then the metrics derived from it over
                // the nodes it names (a tanh-like kind, so saturation is read too).
                if let Some(Ok(summary)) = frame.summary() {
                    let nodes: Vec<(String, &str)> = summary
                        .outputs
                        .keys()
                        .chain(summary.spectra.keys())
                        .map(|n| (n.clone(), "Tanh"))
                        .collect();
                    let _ = summary_stats(&Graph::of(nodes), &summary);
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
}

/// A snapshot zip read as a store (`store::ZipFs`: the `zip` crate over range reads), then
/// what the CLI reads from it: runs, index lines, blobs (stored zips of NPY), readings.
pub fn snapshot(data: &[u8]) {
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
}

/// A run's `graph.json` (`health::record::Graph::parse`), as `somatize import` and the
/// verdict read it.
pub fn graph_json(data: &[u8]) {
    let _ = Graph::parse(data, "graph.json");
}

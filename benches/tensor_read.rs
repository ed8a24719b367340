//! Benchmark (not a test): statistics of a large float32 NPZ entry, from bytes and from a path,
//! stored and deflated. `cargo bench --bench tensor_read [-- MiB]`; prints medians and throughput.

use somatize::tensor::TensorFile;
use std::io::Write;
use std::time::{Duration, Instant};
use zip::write::SimpleFileOptions;

/// An NPY v1 file of `n` float32 values (a cheap deterministic pattern with some zeros).
fn npy(n: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({n},), }}");
    let pad = 64 - (10 + dict.len() + 1) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad));
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    let mut state = 0x2545f4914f6cdd1du64;
    out.reserve(n * 4);
    for i in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let v = if i % 1000 == 0 {
            0.0
        } else {
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        };
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn npz(entry: &[u8], method: zip::CompressionMethod) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(method)
        .large_file(true);
    zip.start_file("w.npy", options).expect("zip entry");
    zip.write_all(entry).expect("zip write");
    zip.finish().expect("zip finish").into_inner()
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time(label: &str, bytes: u64, runs: usize, mut f: impl FnMut()) {
    let d = median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    );
    let gbs = bytes as f64 / d.as_secs_f64() / 1e9;
    println!(
        "{label:<34} {:>8.1} ms  {gbs:>6.2} GB/s",
        d.as_secs_f64() * 1e3
    );
}

fn main() {
    let mib: usize = std::env::args()
        .filter_map(|a| a.parse().ok())
        .next()
        .unwrap_or(256);
    let n = mib * (1 << 20) / 4;
    let entry = npy(n);
    let bytes = entry.len() as u64;
    let stored = npz(&entry, zip::CompressionMethod::Stored);
    let deflated = npz(&entry, zip::CompressionMethod::Deflated);
    drop(entry);
    let path = std::env::temp_dir().join(format!("somatize-bench-{}.npz", std::process::id()));
    std::fs::write(&path, &stored).expect("temp file");
    println!("{mib} MiB float32 entry, median of 5 runs");
    time("stats, stored, from bytes", bytes, 5, || {
        TensorFile::open_bytes("w.npz", &stored)
            .and_then(|mut f| f.stats("w"))
            .expect("stats");
    });
    time("stats, stored, from path", bytes, 5, || {
        TensorFile::open_path(&path)
            .and_then(|mut f| f.stats("w"))
            .expect("stats");
    });
    time("stats, deflated, from bytes", bytes, 3, || {
        TensorFile::open_bytes("w.npz", &deflated)
            .and_then(|mut f| f.stats("w"))
            .expect("stats");
    });
    time("read as TypedTensor, from path", bytes, 5, || {
        TensorFile::open_path(&path)
            .and_then(|mut f| f.read("w"))
            .expect("read");
    });
    let _ = std::fs::remove_file(&path);
}

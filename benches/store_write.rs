//! Store benchmark (harness = false): ingest throughput of tensor payload against `cp` of the
//! same bytes on the same disk, per-forward bookkeeping against a forward carrying 1 MiB of
//! tensors, the companion end to end, and an index scan against Python's `json.loads`.
//!
//! `cargo bench --bench store_write` (or scripts/bench-store.sh). BENCH_DIR picks the disk
//! (default: the system temp folder); BENCH_FORWARDS the forwards per measurement (200).

use somatize::record::Recorder;
use somatize::store::{DirFs, Fact, ForwardRecord, IndexEntry, Store, TensorBytes};
use somatize::tensor::DType;
use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn fresh(base: &Path, name: &str) -> PathBuf {
    let d = base.join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A forward carrying `bytes` of f32 tensors in 4 tensors.
fn payload_forward(f: u64, data: &[u8]) -> ForwardRecord<'_> {
    let quarter = data.len() / 4;
    ForwardRecord {
        forward: f,
        facts: vec![Fact::new("fc1", "Linear"), Fact::loss(0.5)],
        tensors: (0..4)
            .map(|k| TensorBytes {
                key: Cow::Owned(format!("act.layer{k}")),
                dtype: DType::F32,
                shape: vec![quarter / 4],
                data: Cow::Borrowed(&data[k * quarter..(k + 1) * quarter]),
            })
            .collect(),
        ..Default::default()
    }
}

/// Seconds per forward writing `n` forwards of `bytes` payload each (`depth` blobs synced
/// at once); the last entry is the time to flush what was still in flight.
fn per_forward(base: &Path, n: u64, bytes: usize, durable: bool, depth: usize) -> Vec<f64> {
    let dir = fresh(base, "ingest");
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    let mut r = Recorder::with_writer(&dir, "bench", "w")
        .unwrap()
        .summarising(["loss"]);
    r.writer().durable = durable;
    r.writer().set_pipeline(depth).unwrap();
    let mut times: Vec<f64> = (0..n)
        .map(|f| {
            let t = Instant::now();
            r.record(&payload_forward(f, &data)).unwrap();
            t.elapsed().as_secs_f64()
        })
        .collect();
    let t = Instant::now();
    r.flush().unwrap();
    times.push(t.elapsed().as_secs_f64());
    times
}

/// Seconds to `cp` `n` files of `bytes` each (one cp of the folder), optionally then `sync`.
fn cp_time(base: &Path, n: u64, bytes: usize, sync: bool) -> f64 {
    let src = fresh(base, "cp-src");
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    for i in 0..n {
        std::fs::write(src.join(format!("{i:06}.bin")), &data).unwrap();
    }
    Command::new("sync").status().ok();
    let dst = base.join("cp-dst");
    let _ = std::fs::remove_dir_all(&dst);
    let t = Instant::now();
    assert!(Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(&dst)
        .status()
        .unwrap()
        .success());
    if sync {
        Command::new("sync").status().ok();
    }
    t.elapsed().as_secs_f64()
}

fn ingest(base: &Path, n: u64) {
    println!(
        "## ingest: {n} forwards of 1 MiB tensors (4 x 256 KiB f32) vs cp of {n} x 1 MiB files"
    );
    let mib_total = n as f64;
    for (durable, depth) in [(true, 1), (true, 4), (false, 1)] {
        let mut rates = Vec::new();
        for _ in 0..3 {
            let t: f64 = per_forward(base, n, MIB, durable, depth).iter().sum();
            rates.push(mib_total / t);
        }
        println!(
            "recorder (fsync {}, {depth} blob(s) in flight): median {:.0} MiB/s",
            if durable { "on " } else { "off" },
            median(rates)
        );
    }
    for sync in [false, true] {
        let rates: Vec<f64> = (0..3)
            .map(|_| mib_total / cp_time(base, n, MIB, sync))
            .collect();
        println!(
            "cp -r{}: median {:.0} MiB/s",
            if sync { " + sync" } else { "" },
            median(rates)
        );
    }
}

fn bookkeeping(base: &Path, n: u64) {
    println!(
        "## per-forward bookkeeping (facts only, no tensors) vs a forward with 1 MiB of tensors"
    );
    for (durable, depth) in [(true, 1), (true, 4), (false, 1)] {
        let empty = median(per_forward(base, n, 0, durable, depth));
        let full = median(per_forward(base, n, MIB, durable, depth));
        println!(
            "fsync {}, {depth} in flight: empty forward median {:.1} us, 1 MiB forward median {:.1} us, ratio {:.2}%",
            if durable { "on " } else { "off" },
            empty * 1e6,
            full * 1e6,
            100.0 * empty / full
        );
    }
}

fn companion(base: &Path, n: u64) {
    for pipeline in ["1", "4"] {
        companion_once(base, n, pipeline);
    }
}

fn companion_once(base: &Path, n: u64, pipeline: &str) {
    let exe = env!("CARGO_BIN_EXE_somatize");
    let dir = fresh(base, "companion");
    let me = std::env::current_exe().unwrap();
    let t = Instant::now();
    let out = Command::new(exe)
        .args(["record", "--no-stats", "--pipeline", pipeline, "--store"])
        .arg(&dir)
        .args(["--run", "c", "--writer", "w", "--"])
        .arg(&me)
        .env("BENCH_ROLE", "producer")
        .env("BENCH_FORWARDS", n.to_string())
        .output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "## companion end to end, --pipeline {pipeline} (socket + frames + fsync'd writes, process start included): {n} x 1 MiB in {:.2} s = {:.0} MiB/s",
        secs,
        n as f64 / secs
    );
}

fn producer() {
    let n: u64 = std::env::var("BENCH_FORWARDS").unwrap().parse().unwrap();
    let addr = std::env::var("SOMATIZE_CHANNEL").unwrap();
    let mut s =
        std::os::unix::net::UnixStream::connect(addr.strip_prefix("unix:").unwrap()).unwrap();
    let data: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    for f in 0..n {
        let header = serde_json::json!({
            "forward": f,
            "facts": [{"node": "loss", "kind": "loss", "value": 0.5}],
            "tensors": (0..4).map(|k| serde_json::json!({"key": format!("act.layer{k}"), "dtype": "float32", "shape": [MIB / 16]})).collect::<Vec<_>>(),
        });
        let h = serde_json::to_vec(&header).unwrap();
        s.write_all(&(h.len() as u32).to_le_bytes()).unwrap();
        s.write_all(&h).unwrap();
        s.write_all(&data).unwrap();
    }
}

fn scan(base: &Path, lines: u64) {
    let dir = fresh(base, "scan");
    somatize::store::writer::ensure_store(&dir).unwrap();
    let wdir = dir.join("runs/big/w");
    std::fs::create_dir_all(&wdir).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(wdir.join("index.jsonl")).unwrap());
    for f in 0..lines {
        let line: IndexEntry = serde_json::from_str(&format!(
            r#"{{"forward":{f},"written_us":{},"took_us":{},"broke":false,"fields":{{"loss.value":{}}},"blob":"blobs/{f:012}.npz","len":{},"crc32":{}}}"#,
            1_764_500_000_000_000u64 + f * 1000,
            900 + f % 77,
            1.0 / (f as f64 + 1.0),
            70_000 + f % 999,
            (f * 2_654_435_761) % (1 << 32)
        ))
        .unwrap();
        writeln!(out, "{}", line.to_line()).unwrap();
    }
    drop(out);
    let store = Store::open(DirFs::new(&dir)).unwrap();
    let mut times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut sum = 0.0;
        store
            .for_each_line(
                "big",
                "w",
                &mut |l| {
                    sum += l
                        .fields
                        .get("loss.value")
                        .and_then(|f| f.as_f64())
                        .unwrap_or(0.0)
                },
                &mut |e| panic!("{e}"),
            )
            .unwrap();
        assert!(sum > 0.0);
        times.push(t.elapsed().as_secs_f64());
    }
    let ours = median(times);
    let mut merged = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let n = store.scan("big").unwrap().filter(|i| i.is_ok()).count();
        assert_eq!(n as u64, lines);
        merged.push(t.elapsed().as_secs_f64());
    }
    let py = Command::new("python3")
        .arg("-c")
        .arg(
            "import json,sys,time\nt=time.perf_counter()\ns=0.0\nfor l in open(sys.argv[1]):\n    s+=json.loads(l)['fields']['loss.value']\nprint(time.perf_counter()-t)",
        )
        .arg(wdir.join("index.jsonl"))
        .output();
    let py = py.ok().filter(|o| o.status.success()).and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse::<f64>()
            .ok()
    });
    println!(
        "## index scan of {lines} lines: borrowed for_each_line median {:.3} s, merged owned scan {:.3} s, python json.loads {}",
        ours,
        median(merged),
        py.map_or("n/a".into(), |p| format!("{p:.3} s (borrowed scan {:.1}x faster)", p / ours))
    );
}

fn main() {
    if std::env::var("BENCH_ROLE").as_deref() == Ok("producer") {
        producer();
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let base = std::env::var("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    let base = fresh(&base, "somatize-bench");
    let n: u64 = std::env::var("BENCH_FORWARDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    println!(
        "# somatize store benchmark in {} ({n} forwards)",
        base.display()
    );
    ingest(&base, n);
    bookkeeping(&base, n);
    companion(&base, n);
    scan(&base, 1_000_000);
    let _ = std::fs::remove_dir_all(&base);
    let _ = Duration::ZERO;
}

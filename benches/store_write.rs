//! Store benchmark (harness = false): ingest throughput of tensor payload against `cp` of the
//! same bytes on the same disk, per-forward bookkeeping against a forward carrying 1 MiB of
//! tensors, the companion end to end, and an index scan against Python's `json.loads`.
//!
//! `cargo bench --bench store_write` (or scripts/bench-store.sh). BENCH_DIR picks the disk
//! (default: the system temp folder); BENCH_FORWARDS the forwards per measurement (200);
//! BENCH_RUNS the runs each median is taken over (5); BENCH_DEPTH the pipelined writer's
//! forwards in flight (16384, the companion's default); BENCH_EMPTY_FORWARDS the forwards
//! without tensors per pipelined bookkeeping measurement (50000: more than the window, and
//! enough that the final flush, one round of syncs, does not dominate the time per forward;
//! the one-in-flight writer, bound by fsync latency, writes BENCH_FORWARDS); BENCH_ONLY a
//! comma-separated choice of `ingest`, `companion`, `bookkeeping`, `scan` (default: all).
//!
//! Every time is wall time to the end: a durable writer's time includes its final flush (every
//! forward indexed and synced), `cp + sync` includes the `sync`; a writer without fsync is set
//! against plain `cp`, a durable one against `cp + sync`.

use somatize::record::Recorder;
use somatize::store::{DirFs, Fact, ForwardRecord, IndexEntry, Store, TensorBytes};
use somatize::tensor::DType;
use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

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

/// Seconds each `record` call took writing `n` forwards of `bytes` payload each (`depth`
/// forwards in flight), and the seconds for all of them including the final flush. The
/// records are built before the clock starts and dropped after it stops: what is timed is the
/// store's work, not the caller's building of its own facts and tensors.
fn per_forward(base: &Path, n: u64, bytes: usize, durable: bool, depth: usize) -> (Vec<f64>, f64) {
    let dir = fresh(base, "ingest");
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    let mut r = Recorder::with_writer(&dir, "bench", "w")
        .unwrap()
        .summarising(["loss"]);
    r.writer().durable = durable;
    r.writer().set_pipeline(depth).unwrap();
    let recs: Vec<ForwardRecord<'_>> = (0..n).map(|f| payload_forward(f, &data)).collect();
    let mut times = Vec::with_capacity(recs.len());
    let all = Instant::now();
    for rec in &recs {
        let t = Instant::now();
        r.record(rec).unwrap();
        times.push(t.elapsed().as_secs_f64());
    }
    r.flush().unwrap();
    let all = all.elapsed().as_secs_f64();
    drop(recs);
    (times, all)
}

/// Seconds to `cp` the same bytes: `n` files of `bytes` each (one `cp -r` of the folder), or
/// one file of `n * bytes`; optionally then `sync`.
fn cp_time(base: &Path, n: u64, bytes: usize, one_file: bool, sync: bool) -> f64 {
    let src = fresh(base, "cp-src");
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    if one_file {
        let mut f = std::fs::File::create(src.join("all.bin")).unwrap();
        for _ in 0..n {
            f.write_all(&data).unwrap();
        }
    } else {
        for i in 0..n {
            std::fs::write(src.join(format!("{i:06}.bin")), &data).unwrap();
        }
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

/// The configurations measured: (fsync, forwards in flight).
fn configs(depth: usize) -> [(bool, usize); 3] {
    [(true, 1), (true, depth), (false, depth)]
}

fn fsync_name(durable: bool) -> &'static str {
    if durable {
        "on "
    } else {
        "off"
    }
}

/// Prints ingest against `cp` (the faster `cp` and `cp + sync` of files or one file).
fn ingest(base: &Path, n: u64, runs: usize, depth: usize) {
    println!(
        "## ingest: {n} forwards of 1 MiB tensors (4 x 256 KiB f32) vs cp of the same {n} MiB, medians of {runs} runs (MiB/s, wall time to the end)"
    );
    let mib_total = n as f64;
    let mut baselines = Vec::new();
    for (one_file, sync) in [(false, false), (true, false), (false, true), (true, true)] {
        let rate = median(
            (0..runs)
                .map(|_| mib_total / cp_time(base, n, MIB, one_file, sync))
                .collect(),
        );
        let name = format!(
            "cp{}{}",
            if one_file {
                " (one file)"
            } else {
                " -r (files)"
            },
            if sync { " + sync" } else { "" }
        );
        println!("{name}: {rate:.0} MiB/s");
        baselines.push((sync, rate));
    }
    let best = |s: bool| {
        baselines
            .iter()
            .filter(|b| b.0 == s)
            .map(|b| b.1)
            .fold(0.0, f64::max)
    };
    let (cp, cp_sync) = (best(false), best(true));
    for (durable, depth) in configs(depth) {
        let rate = median(
            (0..runs)
                .map(|_| mib_total / per_forward(base, n, MIB, durable, depth).1)
                .collect(),
        );
        println!(
            "recorder (fsync {}, {depth} in flight): {rate:.0} MiB/s = {:.2}x cp, {:.2}x cp + sync (the faster cp of each)",
            fsync_name(durable),
            rate / cp,
            rate / cp_sync,
        );
    }
}

fn bookkeeping(base: &Path, n: u64, n_empty: u64, runs: usize, depth: usize) {
    println!(
        "## per-forward bookkeeping: {n_empty} forwards with facts and 4 empty tensors ({n} with 1 in flight) vs {n} with 1 MiB of tensors, medians of {runs} runs"
    );
    for (durable, depth) in configs(depth) {
        let (mut wall_empty, mut wall_full, mut call_empty, mut call_full) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let m = if depth > 1 { n_empty } else { n };
            let (calls, all) = per_forward(base, m, 0, durable, depth);
            wall_empty.push(all / m as f64);
            call_empty.push(median(calls));
            let (calls, all) = per_forward(base, n, MIB, durable, depth);
            wall_full.push(all / n as f64);
            call_full.push(median(calls));
        }
        let (we, wf) = (median(wall_empty), median(wall_full));
        let (ce, cf) = (median(call_empty), median(call_full));
        println!(
            "fsync {}, {depth} in flight: wall per forward {:.1} us empty / {:.1} us 1 MiB = {:.2}%; median record() call {:.1} us / {:.1} us = {:.2}%",
            fsync_name(durable),
            we * 1e6,
            wf * 1e6,
            100.0 * we / wf,
            ce * 1e6,
            cf * 1e6,
            100.0 * ce / cf
        );
    }
    beyond_the_bytes(base, n, runs, depth);
}

/// One forward's three timings: `record()`, a plain write of the same bytes, their CRC-32.
type Trio = [f64; 3];

/// `n` forwards of `data`, each `record()`ed (pipelined, `durable` or not), then its same
/// bytes appended to a plain file with `write_all` (no headers, index or sync), then hashed:
/// side by side, so all three see the same page cache and load. Returns the median wall
/// seconds of each.
fn side_by_side(base: &Path, n: u64, data: &[u8], durable: bool, depth: usize) -> Trio {
    let dir = fresh(base, "calls");
    let mut r = Recorder::with_writer(&dir, "bench", "w")
        .unwrap()
        .summarising(["loss"]);
    r.writer().durable = durable;
    r.writer().set_pipeline(depth).unwrap();
    let mut raw = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("raw.bin"))
        .unwrap();
    let quarter = data.len() / 4;
    let mut walls: [Vec<f64>; 3] = Default::default();
    for f in 0..n {
        let steps: [&mut dyn FnMut(); 3] = [
            &mut || {
                r.record(&payload_forward(f, data)).unwrap();
            },
            &mut || {
                for k in 0..4 {
                    raw.write_all(&data[k * quarter..(k + 1) * quarter])
                        .unwrap();
                }
            },
            &mut || {
                std::hint::black_box(crc32fast::hash(std::hint::black_box(data)));
            },
        ];
        for (i, step) in steps.into_iter().enumerate() {
            let t = Instant::now();
            step();
            walls[i].push(t.elapsed().as_secs_f64());
        }
    }
    r.flush().unwrap();
    walls.map(median)
}

/// What a pipelined `record()` of a 1 MiB forward spends beyond moving its bytes: its median
/// call minus the median plain write of the same bytes and the median CRC-32 of them (which
/// the index records). With fsync on, a call also holds waits for the window and contends
/// with the syncer's writeback of the same pack.
fn beyond_the_bytes(base: &Path, n: u64, runs: usize, depth: usize) {
    let data: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    for durable in [true, false] {
        let walls: Vec<Trio> = (0..runs)
            .map(|_| side_by_side(base, n, &data, durable, depth))
            .collect();
        let med =
            |v: &[Trio]| -> Trio { [0, 1, 2].map(|i| median(v.iter().map(|t| t[i]).collect())) };
        let [rec, raw, crc] = med(&walls);
        let over = rec - raw - crc;
        println!(
            "record() of 1 MiB beyond the bytes, fsync {}, {depth} in flight, medians of {runs} runs of {n} forwards: record() {:.1} us - plain write {:.1} us - CRC-32 {:.1} us = {:.1} us = {:.2}% of the call",
            fsync_name(durable),
            rec * 1e6,
            raw * 1e6,
            crc * 1e6,
            over * 1e6,
            100.0 * over / rec
        );
    }
}

/// The companion end to end against `cp` like for like, in turns so that load hits each alike:
/// each round times `cp` (one file), `cp` + `sync`, the companion durable (its default) and with
/// `--no-fsync`; the ratios are per round (durable vs `cp` + `sync`, no fsync vs `cp`), and the
/// medians of them are printed. Then the other configurations (one forward in flight; `act.*`
/// keys, measured for the health table), each against the round's baselines.
fn companion(base: &Path, n: u64, runs: usize, depth: usize) {
    let depth = depth.to_string();
    let configs: [(&str, &str, bool); 4] = [
        ("x", depth.as_str(), true),
        ("x", depth.as_str(), false),
        ("x", "1", true),
        ("act", depth.as_str(), true),
    ];
    let mut rates = vec![Vec::new(); configs.len()];
    let (mut cp, mut cp_sync) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        cp.push(n as f64 / cp_time(base, n, MIB, true, false));
        cp_sync.push(n as f64 / cp_time(base, n, MIB, true, true));
        for (i, (keys, pipeline, durable)) in configs.iter().enumerate() {
            rates[i].push(n as f64 / companion_once(base, n, pipeline, keys, *durable));
        }
    }
    println!(
        "## companion end to end vs cp (one file of {n} MiB) in turns, {runs} rounds (socket + frames + writes, process start included); ratios are medians of the rounds' ratios"
    );
    println!(
        "cp: {:.0} MiB/s, cp + sync: {:.0} MiB/s (medians)",
        median(cp.clone()),
        median(cp_sync.clone())
    );
    for ((keys, pipeline, durable), r) in configs.iter().zip(&rates) {
        let (base_rates, against) = if *durable {
            (&cp_sync, "cp + sync")
        } else {
            (&cp, "cp")
        };
        let ratios: Vec<f64> = r.iter().zip(base_rates).map(|(a, b)| a / b).collect();
        let vs_cp: Vec<f64> = r.iter().zip(&cp).map(|(a, b)| a / b).collect();
        println!(
            "companion {keys}.layer0..3, --pipeline {pipeline}{}: {:.0} MiB/s = {:.2}x {against} (rounds {}){}",
            if *durable { "" } else { " --no-fsync" },
            median(r.clone()),
            median(ratios.clone()),
            ratios.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join(" "),
            if *durable {
                format!(", {:.2}x cp", median(vs_cp))
            } else {
                String::new()
            }
        );
    }
}

/// Seconds for `somatize record` to take `n` forwards of 1 MiB from the producer.
fn companion_once(base: &Path, n: u64, pipeline: &str, keys: &str, durable: bool) -> f64 {
    let exe = env!("CARGO_BIN_EXE_somatize");
    let dir = fresh(base, "companion");
    let me = std::env::current_exe().unwrap();
    let fsync: &[&str] = if durable { &[] } else { &["--no-fsync"] };
    let t = Instant::now();
    let out = Command::new(exe)
        .args(["record", "--no-stats", "--pipeline", pipeline])
        .args(fsync)
        .arg("--store")
        .arg(&dir)
        .args(["--run", "c", "--writer", "w", "--"])
        .arg(&me)
        .env("BENCH_ROLE", "producer")
        .env("BENCH_FORWARDS", n.to_string())
        .env("BENCH_KEYS", keys)
        .output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    secs
}

fn producer() {
    let n: u64 = std::env::var("BENCH_FORWARDS").unwrap().parse().unwrap();
    let addr = std::env::var("SOMATIZE_CHANNEL").unwrap();
    let mut s =
        std::os::unix::net::UnixStream::connect(addr.strip_prefix("unix:").unwrap()).unwrap();
    let keys = std::env::var("BENCH_KEYS").unwrap_or_else(|_| "act".into());
    let data: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    for f in 0..n {
        let header = serde_json::json!({
            "forward": f,
            "facts": [{"node": "loss", "kind": "loss", "value": 0.5}],
            "tensors": (0..4).map(|k| serde_json::json!({"key": format!("{keys}.layer{k}"), "dtype": "float32", "shape": [MIB / 16]})).collect::<Vec<_>>(),
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
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (runs, depth) = (env("BENCH_RUNS", 5).max(1), env("BENCH_DEPTH", 16384));
    let n_empty = env("BENCH_EMPTY_FORWARDS", 50_000) as u64;
    println!(
        "# somatize store benchmark in {} ({n} forwards)",
        base.display()
    );
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let on = |part: &str| only.is_empty() || only.split(',').any(|p| p == part);
    if on("ingest") {
        ingest(&base, n, runs, depth);
    }
    if on("companion") {
        companion(&base, n, runs, depth);
    }
    if on("bookkeeping") {
        bookkeeping(&base, n, n_empty, runs, depth);
    }
    if on("scan") {
        scan(&base, 1_000_000);
    }
    let _ = std::fs::remove_dir_all(&base);
}

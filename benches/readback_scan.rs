//! Reading back a run of 1,000,000 forwards: `runs`, `forwards` and a summarised `curve` (index
//! only) against Python's `json.loads` over the same index lines, and `nodes(last=100)`.
//!
//! The index lines are generated directly in the documented format (docs/store-format.md) to
//! save time; the last 100 forwards have real blobs written by the store's own blob writer, in a pack.
//! Runs `BENCH_ROUNDS` (default 5, at least 5) rounds, each timing Python once and then every
//! read once, so a change in the machine's load falls on both sides alike; prints medians of
//! wall-clock and CPU time, each read's ratio to Python, and the peak heap each read
//! allocated (a counting allocator). `BENCH_DIR` picks the folder, `BENCH_LINES` the run's
//! length.

use somatize::readback;
use somatize::store::blob::{self, ForwardMeta};
use somatize::store::{DirFs, Fact, ForwardRecord, Store};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The system allocator, counting bytes live and the most live since the last [`peak_from`].
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        let live = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        std::alloc::System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        std::alloc::System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            let live = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        std::alloc::System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Start counting a peak from what is live now; returns that baseline.
fn peak_from() -> usize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

const BLOBS: u64 = 100;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// This thread's CPU time in seconds (`/proc/thread-self/schedstat`), `NaN` where unknown.
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// One read's timings over the rounds: wall-clock and CPU seconds, and peak heap bytes.
#[derive(Default)]
struct Timings {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    peak: Vec<usize>,
}

impl Timings {
    /// Time one call of `f`, and the most heap it held beyond what was live before.
    fn once(&mut self, f: impl FnOnce()) {
        let base = peak_from();
        let (t, c) = (Instant::now(), cpu());
        f();
        self.wall.push(t.elapsed().as_secs_f64());
        self.cpu.push(cpu() - c);
        self.peak
            .push(PEAK.load(Ordering::Relaxed).saturating_sub(base));
    }

    fn medians(&self) -> (f64, f64) {
        (median(self.wall.clone()), median(self.cpu.clone()))
    }
}

/// A forward's facts: three nodes, one of them on another machine, and the loss.
fn facts(f: u64) -> Vec<Fact> {
    let mut out = Vec::new();
    for (i, (node, place)) in [("fc1", "local"), ("attn", "w1"), ("fc2", "local")]
        .into_iter()
        .enumerate()
    {
        let mut x = Fact::new(node, "Linear");
        x.began_us = i as i64 * 100;
        x.took_us = 90 + f % 7;
        x.where_ = place.into();
        out.push(x);
    }
    out.push(Fact::loss(1.0 / (f as f64 + 1.0)));
    out
}

/// Write run `big` of `lines` forwards under `root` as a 2.0 writer lays it out (index lines
/// naming a pack and an offset); the last [`BLOBS`] have real blobs in the pack, the others
/// name ranges that are never fetched.
fn write_run(root: &Path, lines: u64) -> PathBuf {
    somatize::store::writer::ensure_store(root).unwrap();
    let w = root.join("runs/big/w");
    std::fs::create_dir_all(w.join("packs")).unwrap();
    let index = w.join("index.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&index).unwrap());
    let pack_name = somatize::store::format::pack_name(0);
    let unfetched = somatize::store::format::pack_name(1);
    let mut pack = Vec::new();
    for f in 0..lines {
        let written = 1_764_500_000_000_000u64 + f * 1000;
        let took = 900 + f % 77;
        let loss = 1.0 / (f as f64 + 1.0);
        let broke = f % 10_007 == 0;
        let blob = if f + BLOBS >= lines {
            let rec = ForwardRecord {
                forward: f,
                facts: facts(f),
                ..Default::default()
            };
            let meta = ForwardMeta {
                run: "big".into(),
                writer: "w".into(),
                forward: f,
                written_us: written as i64,
                took_us: took,
                broke: false,
                error: None,
                fields: Default::default(),
                tensors: vec![],
            };
            let (bytes, len, crc) = blob::write(Vec::new(), &meta, &rec).unwrap();
            let offset = pack.len();
            pack.extend_from_slice(&bytes);
            format!(r#","blob":"{pack_name}","offset":{offset},"len":{len},"crc32":{crc}"#)
        } else {
            format!(
                r#","blob":"{unfetched}","offset":{},"len":{},"crc32":{}"#,
                f * 71_000,
                70_000 + f % 999,
                (f * 2_654_435_761) % (1 << 32)
            )
        };
        let error = if broke { r#","error":"nan loss""# } else { "" };
        writeln!(
            out,
            r#"{{"forward":{f},"written_us":{written},"took_us":{took},"broke":{broke}{error},"fields":{{"loss.value":{loss}}}{blob}}}"#
        )
        .unwrap();
    }
    out.flush().unwrap();
    std::fs::write(w.join(&pack_name), pack).unwrap();
    index
}

/// Python's json.loads over every line, once: wall-clock and CPU seconds (None without
/// python3).
fn python(index: &Path) -> Option<(f64, f64)> {
    let code = "import json,sys,time\nt=time.perf_counter();c=time.thread_time()\ns=0.0\nfor l in open(sys.argv[1]):\n    s+=json.loads(l)['fields']['loss.value']\nprint(time.perf_counter()-t, time.thread_time()-c)";
    let out = Command::new("python3")
        .arg("-c")
        .arg(code)
        .arg(index)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some((it.next()??, it.next()??))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let base = std::env::var("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir())
        .join("somatize-bench-readback");
    let lines: u64 = std::env::var("BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let _ = std::fs::remove_dir_all(&base);
    let t = Instant::now();
    let index = write_run(&base, lines);
    let size = std::fs::metadata(&index).unwrap().len();
    println!(
        "# readback benchmark: run of {lines} forwards, index {:.1} MB, written in {:.1} s ({})",
        size as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        base.display()
    );
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(5);
    let store = Store::open(DirFs::new(&base)).unwrap();
    let names = [
        "runs",
        "forwards",
        "curve loss.value (scan)",
        "nodes(last=100)",
    ];
    let mut reads: Vec<Timings> = names.iter().map(|_| Timings::default()).collect();
    let (mut py_wall, mut py_cpu) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        if let Some((w, c)) = python(&index) {
            py_wall.push(w);
            py_cpu.push(c);
        }
        reads[0].once(|| {
            let a = readback::runs(&store).unwrap();
            assert_eq!(a.rows[0].forwards, lines);
        });
        reads[1].once(|| {
            let a = readback::forwards(&store, "big").unwrap();
            assert_eq!(a.rows.len() as u64, lines);
        });
        reads[2].once(|| {
            let a = readback::curve(&store, "big", "loss.value").unwrap();
            assert_eq!(a.rows.len() as u64, lines);
        });
        reads[3].once(|| {
            let a = readback::nodes(&store, "big", Some(BLOBS as usize)).unwrap();
            assert!(a.skipped.is_empty(), "{:?}", a.skipped);
            assert_eq!(a.rows[0].ran, BLOBS);
        });
    }
    let py = (py_wall.len() == rounds).then(|| (median(py_wall), median(py_cpu.clone())));
    println!("{rounds} rounds, medians; peak heap is the most a read held at once beyond what was live before it");
    println!(
        "| read | wall median (s) | CPU median (s) | vs python, wall | vs python, CPU | CPU ratio per round (min–max) | peak heap (MB) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, t) in names.iter().zip(&reads) {
        let (wall, busy) = t.medians();
        let ratio = |p: f64, ours: f64| format!("{:.1}x faster", p / ours);
        let (rw, rc) = py.map_or(("n/a".into(), "n/a".into()), |(pw, pc)| {
            (ratio(pw, wall), ratio(pc, busy))
        });
        let per_round: Vec<f64> = py_cpu.iter().zip(&t.cpu).map(|(p, o)| p / o).collect();
        let range = match (
            per_round.iter().copied().reduce(f64::min),
            per_round.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) if py.is_some() => format!("{lo:.1}–{hi:.1}x"),
            _ => "n/a".into(),
        };
        let peak = *t.peak.iter().max().unwrap_or(&0) as f64 / 1e6;
        println!("| {name} | {wall:.4} | {busy:.4} | {rw} | {rc} | {range} | {peak:.1} |");
    }
    match py {
        Some((w, c)) => println!("| python json.loads per line | {w:.4} | {c:.4} | 1x | 1x | | |"),
        None => println!("| python json.loads per line | n/a | n/a | | | | |"),
    }
    let _ = std::fs::remove_dir_all(&base);
}

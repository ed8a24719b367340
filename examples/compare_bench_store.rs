//! Writes many long runs cheaply for the compare benchmark (scripts/bench-compare.mjs):
//! `cargo run --example compare_bench_store -- DIR [RUNS=1000] [FORWARDS=10000] [BLOBS=1000]`
//! makes store DIR (afresh) with RUNS runs named `gGG-sSSS` (groups of 50), each of FORWARDS
//! forwards whose loss is summarised into the index. Only the last BLOBS forwards of a run have
//! a blob (three nodes' timed facts and health metrics, written through the real writer); the
//! index lines before them are appended as a writer writes them but name no blob (what a reader
//! of the index alone, `compare`'s overlay, reads the same either way), so the store stays a few
//! GB. Every seventh run has a NaN in `fc` over its last 300 forwards. Each run is finished as a
//! recording is (`Recorder::finish`): its summary goes into `summaries.jsonl`.

use somatize::health::record::{write_graph, Graph};
use somatize::record::Recorder;
use somatize::store::{ExitRecord, Fact, ForwardRecord, NodeStats, Num};
use std::io::Write;

const NODES: [(&str, &str); 3] = [("fc", "Linear"), ("relu", "ReLU"), ("head", "Linear")];

/// A deterministic wobble in [-1, 1].
fn wobble(i: u64, k: u64) -> f64 {
    let x = (i
        .wrapping_mul(6364136223846793005)
        .wrapping_add(k.wrapping_mul(1442695040888963407)))
        >> 33;
    (x % 2001) as f64 / 1000.0 - 1.0
}

/// Run `r`'s loss at forward `i` of `n`: each run its own rate and floor, with noise.
fn loss(r: u64, i: u64, n: u64) -> f64 {
    let t = i as f64 / n.max(1) as f64;
    let rate = 1.0 + (r % 50) as f64 / 10.0;
    let floor = 0.05 + (r / 50) as f64 / 100.0;
    2.0 * (-rate * t).exp() + floor + 0.02 * wobble(i, r)
}

fn forward(r: u64, i: u64, n: u64) -> ForwardRecord<'static> {
    let mut facts = vec![Fact::loss(loss(r, i, n))];
    let mut stats = NodeStats::new();
    let mut began = 0i64;
    for (k, (name, kind)) in NODES.iter().enumerate() {
        let mut f = Fact::new(*name, *kind);
        f.began_us = began;
        f.took_us = 100 + 20 * k as u64;
        began += f.took_us as i64;
        facts.push(f);
        let sick = r.is_multiple_of(7) && *name == "fc" && i + 300 >= n;
        let row = stats.entry(name.to_string()).or_default();
        for (m, v) in [
            ("grad_norm", 0.5 + 0.1 * wobble(i, 10 + k as u64)),
            ("update_ratio", 1e-3),
            ("act_mean", 0.3),
            ("nan", if sick { 1.0 } else { 0.0 }),
            ("inf", 0.0),
        ] {
            row.insert(m.into(), Num(v));
        }
    }
    ForwardRecord {
        forward: i,
        took_us: Some(began as u64),
        facts,
        stats,
        ..Default::default()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: compare_bench_store DIR [RUNS] [FORWARDS] [BLOBS]";
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().ok_or(usage)?);
    let mut next = |default: u64| -> Result<u64, Box<dyn std::error::Error>> {
        Ok(match args.next() {
            Some(s) => s.parse()?,
            None => default,
        })
    };
    let (runs, n, blobs) = (next(1000)?, next(10_000)?, next(1000)?);
    let blobs = blobs.min(n);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let start = std::time::Instant::now();
    for r in 0..runs {
        let name = format!("g{:02}-s{:03}", r / 50, r % 50);
        let mut rec = Recorder::with_writer(&dir, &name, "w0")?.summarising(["loss"]);
        rec.writer().durable = false;
        write_graph(&dir, &name, &Graph::of(NODES))?;
        // The forwards before the last `blobs`: index lines only, one millisecond apart.
        let t0 = somatize::store::writer::now_us() - (n as i64) * 1000;
        let mut text = String::with_capacity(((n - blobs) * 120) as usize);
        for i in 0..n - blobs {
            text.push_str(&format!(
                "{{\"forward\":{i},\"written_us\":{},\"took_us\":160,\"broke\":false,\"fields\":{{\"loss.value\":{}}}}}\n",
                t0 + i as i64 * 1000,
                loss(r, i, n)
            ));
        }
        std::fs::OpenOptions::new()
            .append(true)
            .open(
                rec.writer()
                    .dir_writer()
                    .ok_or("the bench store is a folder")?
                    .dir()
                    .join("index.jsonl"),
            )?
            .write_all(text.as_bytes())?;
        for i in n - blobs..n {
            rec.record(&forward(r, i, n))?;
        }
        rec.finish(&ExitRecord {
            written_us: somatize::store::writer::now_us(),
            ok: true,
            code: Some(0),
            signal: None,
            forwards: n,
            last_forward: n.checked_sub(1),
            error: None,
        })?;
        if (r + 1) % 100 == 0 {
            eprintln!("{} runs in {:.1} s", r + 1, start.elapsed().as_secs_f64());
        }
    }
    println!(
        "{}: {runs} runs of {n} forwards ({blobs} with blobs) in {:.1} s",
        dir.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

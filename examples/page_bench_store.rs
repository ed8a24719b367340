//! Writes a long run through the real writer for the page benchmark (scripts/bench-page.mjs):
//! `cargo run --example page_bench_store -- DIR [FORWARDS=100000]` makes store DIR (afresh)
//! with run `long`: a graph of six nodes and FORWARDS forwards, each with its loss (summarised
//! into the index), a timed fact per node and a stats row per node (the health metrics a
//! recorder writes), as a training run recorded every step would leave it.

use somatize::health::record::{write_graph, Graph};
use somatize::record::Recorder;
use somatize::store::{Fact, ForwardRecord, NodeStats, Num};

const NODES: [(&str, &str); 6] = [
    ("conv1", "Conv2d"),
    ("relu1", "ReLU"),
    ("conv2", "Conv2d"),
    ("relu2", "ReLU"),
    ("fc", "Linear"),
    ("head", "Linear"),
];

/// A deterministic wobble in [-1, 1] (no dependency on a random number crate).
fn wobble(i: u64, k: u64) -> f64 {
    let x = (i
        .wrapping_mul(6364136223846793005)
        .wrapping_add(k.wrapping_mul(1442695040888963407)))
        >> 33;
    (x % 2001) as f64 / 1000.0 - 1.0
}

/// Forward `i` of `n`: a loss going down with noise, timings, and per-node metrics drifting
/// (the head's gradients shrink towards the end, so a verdict over the last forwards differs).
fn forward(i: u64, n: u64) -> ForwardRecord<'static> {
    let t = i as f64 / n.max(1) as f64;
    let loss = 2.0 * (-3.0 * t).exp() + 0.05 + 0.02 * wobble(i, 0);
    let mut facts = vec![Fact::loss(loss)];
    let mut began = 0i64;
    let mut stats = NodeStats::new();
    for (k, (name, kind)) in NODES.iter().enumerate() {
        let mut f = Fact::new(*name, *kind);
        f.began_us = began;
        f.took_us = 200 + (k as u64) * 50 + (wobble(i, k as u64 + 1).abs() * 40.0) as u64;
        began += f.took_us as i64;
        facts.push(f);
        let row = stats.entry(name.to_string()).or_default();
        let fade = if *name == "head" {
            1.0 - 0.999 * t
        } else {
            1.0
        };
        let g = (0.5 + 0.1 * wobble(i, 10 + k as u64)) * fade;
        for (m, v) in [
            ("grad_norm", g),
            ("grad_mean_abs", g * 1e-2),
            ("param_norm", 10.0 + t),
            (
                "update_ratio",
                1e-3 * (1.0 + 0.2 * wobble(i, 20 + k as u64)),
            ),
            ("act_mean", 0.3 + 0.05 * wobble(i, 30 + k as u64)),
            (
                "dead_unit_fraction",
                if kind == &"ReLU" { 0.1 + 0.3 * t } else { 0.0 },
            ),
            ("nan", 0.0),
            ("inf", 0.0),
        ] {
            row.insert(m.into(), Num(v));
        }
    }
    ForwardRecord {
        forward: i,
        took_us: Some(began as u64 + 100),
        broke: false,
        facts,
        stats,
        ..Default::default()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(
        args.next()
            .ok_or("usage: page_bench_store DIR [FORWARDS]")?,
    );
    let n: u64 = match args.next() {
        Some(s) => s.parse()?,
        None => 100_000,
    };
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let start = std::time::Instant::now();
    let mut rec = Recorder::with_writer(&dir, "long", "w0")?.summarising(["loss"]);
    rec.writer().durable = false;
    write_graph(&dir, "long", &Graph::of(NODES))?;
    for i in 0..n {
        rec.record(&forward(i, n))?;
    }
    rec.flush()?;
    println!(
        "{}: run long, {n} forwards in {:.1} s",
        dir.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

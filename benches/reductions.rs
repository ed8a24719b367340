//! Benchmark: eight statistics over one 256 MiB float32 tensor in one pass, a single l2, and a
//! plain memory copy as the machine's limit; with the engine's default threads and on one
//! thread (as wasm runs). Prints one JSON line for scripts/bench-reductions.sh.

use somatize::observe::ops;
use somatize::observe::registry;
use somatize::tensor::TypedTensor;
use somatize::ObservableSpec;
use std::hint::black_box;
use std::time::Instant;

const ELEMENTS: usize = 64 << 20; // 64 Mi float32 = 256 MiB
const RUNS: usize = 5;

/// The eight statistics, as numpy computes them in the script.
const EIGHT: [&str; 8] = [
    "mean",
    "std",
    "min",
    "max",
    "l1",
    "l2",
    "absmax",
    "zero_fraction",
];

fn values() -> Vec<f32> {
    // xorshift64: deterministic, not constant, a few exact zeros.
    let mut s = 0x9e3779b97f4a7c15u64;
    (0..ELEMENTS)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if i % 97 == 0 {
                0.0
            } else {
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            }
        })
        .collect()
}

/// Runs per measurement: `SOMATIZE_BENCH_RUNS`, else [`RUNS`].
fn runs() -> usize {
    std::env::var("SOMATIZE_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(RUNS)
}

fn median_seconds(mut f: impl FnMut()) -> f64 {
    let runs = runs();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn plans(names: &[&str]) -> Vec<registry::Plan> {
    names
        .iter()
        .map(|r| registry::plan(&ObservableSpec::new("param", "w", r)).expect("known reduction"))
        .collect()
}

fn main() {
    let v = values();
    let bytes = (v.len() * 4) as f64;
    let tensor = TypedTensor::from_f32("w", v, vec![ELEMENTS]).expect("1-d");
    let mut copy = vec![0f32; ELEMENTS];
    let source = match &tensor.data {
        somatize::TensorData::F32(v) => v.clone(),
        _ => unreachable!("built as f32"),
    };
    let copy_s = median_seconds(|| {
        copy.copy_from_slice(black_box(&source));
        black_box(&copy);
    });
    let eight = plans(&EIGHT);
    let eight_s = median_seconds(|| {
        black_box(ops::reduce(&tensor, &eight));
    });
    let l2 = plans(&["l2"]);
    let l2_s = median_seconds(|| {
        black_box(ops::reduce(&tensor, &l2));
    });
    ops::engine::set_max_threads(1);
    let eight_1t_s = median_seconds(|| {
        black_box(ops::reduce(&tensor, &eight));
    });
    let l2_1t_s = median_seconds(|| {
        black_box(ops::reduce(&tensor, &l2));
    });
    ops::engine::set_max_threads(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let results = ops::reduce(&tensor, &eight);
    let values: Vec<String> = EIGHT
        .iter()
        .zip(&results)
        .map(|(n, r)| {
            format!(
                "\"{n}\":{}",
                r.as_ref()
                    .ok()
                    .and_then(|v| v.as_scalar())
                    .unwrap_or(f64::NAN)
            )
        })
        .collect();
    println!(
        "{{\"bytes\":{bytes},\"threads\":{threads},\"copy_s\":{copy_s},\"eight_s\":{eight_s},\"l2_s\":{l2_s},\"eight_1t_s\":{eight_1t_s},\"l2_1t_s\":{l2_1t_s},\"values\":{{{}}}}}",
        values.join(",")
    );
}

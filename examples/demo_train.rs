//! Trains every demo condition and prints how long each took and how its loss went: the
//! timing the report quotes (`cargo run --release --example demo_train [STEPS] [EVERY]`).

use somatize::demo;

fn main() {
    let mut args = std::env::args().skip(1);
    let steps = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(demo::DEFAULT_STEPS);
    let every = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let start = std::time::Instant::now();
    for c in demo::conditions() {
        let mut bytes = 0usize;
        let s = demo::train(c, steps, every, &mut |r| {
            for n in &r.nodes {
                bytes += n.activation.len() * 4;
                bytes += n.params.iter().map(|p| p.value.len() * 12).sum::<usize>();
            }
        });
        println!(
            "{:<12} {:>4} steps, {:>4} recorded ({:>6.1} MB of f32), {:>7.1} ms, loss {:.3} -> {:.3}{}",
            c.name,
            s.steps,
            s.recorded,
            bytes as f64 / 1e6,
            s.took_us as f64 / 1e3,
            s.first_loss,
            s.last_loss,
            s.first_nonfinite.map_or(String::new(), |t| format!(" (non-finite from step {t})")),
        );
    }
    println!("all: {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
}

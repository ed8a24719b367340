//! Write a long run to a store (a folder or `s3://…`) for scripts/bench-objstore.sh: FORWARDS
//! forwards with a loss fact (summarised into the index, so `curve` reads only the index) and
//! no tensors, a segment put every PER_SEGMENT forwards (as a long run puts one a second).
//! Usage: objstore_forwards STORE RUN FORWARDS PER_SEGMENT

use somatize::store::object::ObjectWriter;
use somatize::store::{blob, Fact, ForwardRecord};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: objstore_forwards STORE RUN FORWARDS PER_SEGMENT";
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or(usage)?;
    let run = args.next().ok_or(usage)?;
    let forwards: u64 = args.next().ok_or(usage)?.parse()?;
    let per: u64 = args.next().ok_or(usage)?.parse()?;
    let mut w = ObjectWriter::open(&url, &run, "w0")?;
    // Segments are cut by the flushes below, not by size or age.
    w.set_segment(usize::MAX, Duration::from_secs(3600));
    let kinds = vec!["loss".to_string()];
    let t0 = std::time::Instant::now();
    for f in 0..forwards {
        let rec = ForwardRecord {
            forward: f,
            facts: vec![Fact::loss(1.0 / (f as f64 + 1.0))],
            ..Default::default()
        };
        let fields = blob::summarise(&rec.facts, &kinds);
        w.append(&rec, fields)?;
        if (f + 1) % per.max(1) == 0 {
            w.flush()?;
        }
    }
    w.finish(&somatize::store::ExitRecord {
        written_us: somatize::store::writer::now_us(),
        ok: true,
        forwards,
        last_forward: forwards.checked_sub(1),
        ..Default::default()
    })?;
    eprintln!(
        "objstore_forwards: {forwards} forwards, {} segments, into {url} in {:.1} s",
        forwards.div_ceil(per.max(1)),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

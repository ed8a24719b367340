//! The `machines` figure: per machine, the round trip in two parts — time working, and time
//! waited on (the wire, the queue and the codec).

use super::{colour, num, Figure};
use crate::readback::fleet::{fleet, FleetRow};
use crate::readback::{Answer, Result};
use crate::store::{Store, StoreFs};
use serde_json::json;

/// Working vs waited-on time per machine over a run (or its last `last` forwards). Costs what
/// `fleet` costs.
pub fn machines<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
) -> Result<Answer<Figure>> {
    let a = fleet(store, run, last)?;
    Ok(Answer {
        rows: draw(run, last, &a.rows),
        skipped: a.skipped,
    })
}

/// Draw fleet rows: stacked bars per machine, working then waited on, in milliseconds.
pub fn draw(run: &str, last: Option<usize>, rows: &[FleetRow]) -> Figure {
    let span = last.map_or("all forwards".to_string(), |n| format!("last {n} forwards"));
    let names: Vec<&str> = rows.iter().map(|r| r.machine.as_str()).collect();
    Figure::new(&format!("Working and waited on, per machine, run {run} ({span})"))
        .axis("xaxis", "machine", json!({"type": "category"}))
        .axis("yaxis", "time (ms)", json!({"rangemode": "tozero"}))
        .layout(json!({"barmode": "stack"}))
        .trace(json!({
            "type": "bar", "name": "working",
            "x": names,
            "y": rows.iter().map(|r| num(r.working_us as f64 / 1000.0)).collect::<Vec<_>>(),
            "marker": {"color": colour(0)},
        }))
        .trace(json!({
            "type": "bar", "name": "waited on (wire, queue, codec)",
            "x": names,
            "y": rows.iter().map(|r| num(r.waiting_us.unwrap_or(0).max(0) as f64 / 1000.0)).collect::<Vec<_>>(),
            "marker": {"color": colour(1)},
        }))
}

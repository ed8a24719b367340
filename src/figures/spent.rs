//! The `spent` figure: where the time went, added up per node, bars coloured by where it ran.

use super::{colour, num, Figure};
use crate::readback::nodes::{nodes, NodeRow};
use crate::readback::{Answer, Result};
use crate::store::{Store, StoreFs};
use serde_json::json;

/// Time per node over a run (or its last `last` forwards). Costs what `nodes` costs.
pub fn spent<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
) -> Result<Answer<Figure>> {
    let a = nodes(store, run, last)?;
    Ok(Answer {
        rows: draw(run, last, &a.rows),
        skipped: a.skipped,
    })
}

/// Draw node rows: one bar trace per place, nodes along x, total milliseconds up.
pub fn draw(run: &str, last: Option<usize>, rows: &[NodeRow]) -> Figure {
    let span = last.map_or("all forwards".to_string(), |n| format!("last {n} forwards"));
    let order: Vec<&str> = first_seen(rows.iter().map(|r| r.node.as_str()));
    let mut fig = Figure::new(&format!("Time per node, run {run} ({span})"))
        .axis(
            "xaxis",
            "node",
            json!({"type": "category", "categoryorder": "array", "categoryarray": order}),
        )
        .axis("yaxis", "time spent (ms)", json!({"rangemode": "tozero"}))
        .layout(json!({"barmode": "stack", "legend": {"title": {"text": "where"}}}));
    for (i, place) in first_seen(rows.iter().map(|r| r.where_.as_str()))
        .into_iter()
        .enumerate()
    {
        let mine: Vec<&NodeRow> = rows.iter().filter(|r| r.where_ == place).collect();
        fig = fig.trace(json!({
            "type": "bar", "name": place,
            "x": mine.iter().map(|r| &r.node).collect::<Vec<_>>(),
            "y": mine.iter().map(|r| num(r.total_us as f64 / 1000.0)).collect::<Vec<_>>(),
            "text": mine.iter().map(|r| format!("{} ({}) on {}: ran {}×, mean {:.3} ms, read back {}×", r.node, r.kind, r.where_, r.ran, r.mean_us / 1000.0, r.read_back)).collect::<Vec<_>>(),
            "hoverinfo": "text",
            "marker": {"color": colour(i)},
        }));
    }
    fig
}

/// Distinct values in order of first appearance.
pub(crate) fn first_seen<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in it {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

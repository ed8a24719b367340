//! The `progress` figure: a run's field (the loss) per forward, its rolling mean, the time
//! per forward on a second axis, and broken forwards marked — from a store or a `Live` tally.

use super::{colour, num, Figure};
use crate::readback::curve::{curve_costs, value_in_facts, Cost};
use crate::readback::live::{Live, LiveOptions, ProgressRow, Tally};
use crate::readback::{Answer, ReadbackError, Result, Skip};
use crate::store::fact::Field;
use crate::store::{Store, StoreFs};
use serde_json::{json, Value};

/// The progress figure of a stored run. One scan when the field is summarised in the index,
/// else a fetch per forward (as `curve_costs` says). `options.title` is replaced by the
/// run's; a forward whose blob cannot be read is drawn without a value and reported.
pub fn progress<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    options: LiveOptions,
) -> Result<Answer<Figure>> {
    let mut tally = Tally::new(LiveOptions {
        title: title(run),
        ..options
    });
    let of = tally.options.of.clone();
    let mut skipped = Vec::new();
    match curve_costs(store, run, &of)? {
        Cost::Scan => crate::readback::lines::walk(store, run, &mut skipped, &mut |l| {
            tally.push(ProgressRow {
                forward: l.forward,
                value: l.fields.get(&of).as_ref().and_then(Field::as_f64),
                smoothed: None,
                took_us: l.took_us,
                broke: l.broke,
                error: l.error.map(str::to_string),
            })
        })?,
        Cost::Fetch => {
            for item in store.scan(run).map_err(|e| ReadbackError::in_run(run, e))? {
                let item = match item {
                    Ok(i) => i,
                    Err(e) => {
                        skipped.push(Skip::from_store(run, e));
                        continue;
                    }
                };
                let e = &item.entry;
                let value = match e.blob {
                    None => None,
                    Some(_) => match store.fetch(run, &item.writer, e).and_then(|b| b.facts()) {
                        Ok(facts) => value_in_facts(&facts, &of),
                        Err(err) => {
                            skipped.push(Skip::forward(run, &item.writer, e.forward, &err));
                            None
                        }
                    },
                };
                tally.push(ProgressRow {
                    forward: e.forward,
                    value,
                    smoothed: None,
                    took_us: e.took_us,
                    broke: e.broke,
                    error: e.error.clone(),
                });
            }
        }
    }
    Ok(Answer {
        rows: draw(&tally),
        skipped,
    })
}

/// The title `progress` gives run `run` (a `Live` given the same title draws the same figure).
pub fn title(run: &str) -> String {
    format!("Progress of run {run}")
}

/// A readable axis title for a field: `loss.value` is "loss".
pub fn field_title(of: &str) -> String {
    match of.strip_suffix(".value") {
        Some(kind) => kind.to_string(),
        None => of.to_string(),
    }
}

/// The progress figure of everything a `Live` has received, the open forward included.
pub fn live(l: &mut Live) -> Figure {
    l.with_open(draw)
}

/// Draw a tally: the field, its rolling mean, time per forward (ms, right axis), breaks.
pub fn draw(t: &Tally) -> Figure {
    let o = &t.options;
    let rows: Vec<ProgressRow> = t.rows().collect();
    let xs: Vec<u64> = rows.iter().map(|r| r.forward).collect();
    let (seen, stride) = t.seen();
    let mut title = o.title.clone();
    if stride > 1 {
        title = format!("{title} (every {stride}th of {seen} forwards drawn)");
    }
    let mut fig = Figure::new(&title)
        .axis("xaxis", "forward", json!({}))
        .axis("yaxis", &field_title(&o.of), json!({}))
        .axis(
            "yaxis2",
            "time per forward (ms)",
            json!({"overlaying": "y", "side": "right", "rangemode": "tozero", "showgrid": false}),
        )
        .layout(json!({"legend": {"orientation": "h", "y": -0.2}}))
        .trace(json!({
            "type": "scatter", "mode": "lines", "name": o.of,
            "x": xs, "y": rows.iter().map(|r| r.value.map_or(Value::Null, num)).collect::<Vec<_>>(),
            "line": {"color": colour(2), "width": 1},
        }));
    if o.smooth > 0 {
        fig = fig.trace(json!({
            "type": "scatter", "mode": "lines", "name": format!("rolling mean of {}", o.smooth),
            "x": xs, "y": rows.iter().map(|r| r.smoothed.map_or(Value::Null, num)).collect::<Vec<_>>(),
            "line": {"color": colour(0), "width": 2},
        }));
    }
    fig = fig.trace(json!({
        "type": "scatter", "mode": "lines", "name": "time per forward", "yaxis": "y2",
        "x": xs, "y": rows.iter().map(|r| num(r.took_us as f64 / 1000.0)).collect::<Vec<_>>(),
        "line": {"color": colour(1), "width": 1},
    }));
    let broken: Vec<ProgressRow> = t.broken().collect();
    if !broken.is_empty() {
        fig = fig
            .layout(json!({"yaxis3": {"overlaying": "y", "range": [0, 1], "visible": false, "fixedrange": true}}))
            .trace(json!({
                "type": "scatter", "mode": "markers", "name": "broke", "yaxis": "y3",
                "x": broken.iter().map(|r| r.forward).collect::<Vec<_>>(),
                "y": broken.iter().map(|_| 0.03).collect::<Vec<_>>(),
                "text": broken.iter().map(|r| format!("forward {} broke: {}", r.forward, r.error.as_deref().unwrap_or("(no reason given)"))).collect::<Vec<_>>(),
                "hoverinfo": "text",
                "marker": {"symbol": "x", "size": 9, "color": colour(7)},
            }));
    }
    fig
}

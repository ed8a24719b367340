//! Health over an open store from JS: the seed's somatize.health and its figures.

use super::readback::{FigureJs, FigureOpts};
use super::*;
use crate::health::HealthCache;
use std::cell::RefCell;

/// Options of the health functions: the run, how far back, the thresholds (`{name: value}`
/// overrides of the defaults), and for `history` the node and metric.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HealthOpts {
    run: String,
    last: Option<usize>,
    thresholds: Option<serde_json::Value>,
    node: Option<String>,
    of: Option<String>,
}

/// Thresholds from an optional `{name: value}` object of overrides.
fn thresholds_of(value: Option<&serde_json::Value>) -> Result<crate::verdict::Thresholds, JsError> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(crate::verdict::Thresholds::default()),
        Some(v) => crate::health::thresholds::from_value(v, "thresholds").map_err(js_err),
    }
}

/// `seen`, `diagnose`, `history`, `where`, `alerts` over a run, as the CLI's --json gives them:
/// seen `{node: {kind, metric: value}}`; diagnose `{run, forwards, diagnosis: {where: [flags]},
/// thresholds}`; history `[[forward, value]]`; where `{node: [flags]}`; alerts
/// `[{node, flag, first_forward, means, advice}]`.
/// The read behind them is kept in `cache` while the run is unchanged.
pub(super) fn health_call<F: StoreFs>(
    store: &Store<F>,
    cache: &RefCell<HealthCache>,
    name: &str,
    o: HealthOpts,
) -> Result<JsValue, JsError> {
    let h = cache
        .borrow_mut()
        .read(store, &o.run, o.last)
        .map_err(js_err)?;
    let t = thresholds_of(o.thresholds.as_ref())?;
    match name {
        "seen" => to_js(&crate::health::json::seen_json(&h.seen())),
        "diagnose" => to_js(&h.diagnose(&t).to_json()),
        "history" => {
            let node = o
                .node
                .as_deref()
                .ok_or_else(|| JsError::new("history needs {run, node}"))?;
            to_js(&h.history(node, o.of.as_deref().unwrap_or("grad_norm")))
        }
        "where" => {
            let folded: serde_json::Map<String, serde_json::Value> = h
                .overlay(&h.diagnose(&t))
                .into_iter()
                .map(|(node, flags)| (node, serde_json::json!(flags)))
                .collect();
            to_js(&folded)
        }
        _ => to_js(&h.alerts(&h.diagnose(&t))),
    }
}

/// `figure({kind: "profile"|"flags"|"overlaid", run, of?, last?, thresholds?})`, read afresh.
pub(super) fn health_figure<F: StoreFs>(
    store: &Store<F>,
    o: FigureOpts,
) -> Result<JsValue, JsError> {
    health_figure_with(store, &RefCell::default(), o)
}

/// A health figure over the read kept in `cache` while the run is unchanged.
pub(super) fn health_figure_with<F: StoreFs>(
    store: &Store<F>,
    cache: &RefCell<HealthCache>,
    o: FigureOpts,
) -> Result<JsValue, JsError> {
    use crate::health::store::HealthFigure;
    let kind = match o.kind.as_str() {
        "profile" => HealthFigure::Profile,
        "flags" => HealthFigure::Flags,
        _ => HealthFigure::Overlaid,
    };
    let h = cache
        .borrow_mut()
        .read(store, &o.run, o.last)
        .map_err(js_err)?;
    let d = h.diagnose(&thresholds_of(o.thresholds.as_ref())?);
    let figure = h.figure(&d, kind, o.of.as_deref().unwrap_or("grad_norm"));
    to_js(&FigureJs {
        data: &figure.data,
        layout: &figure.layout,
        skipped: &h.skipped,
    })
}

//! Health over an open store from JS: the seed's somatize.health and its figures.

use super::call::{FigureJs, FigureOpts};
use super::*;
use crate::health::store::{Diagnosis, HealthFigure, RunHealth};
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

/// `{where: [flag, …]}` as a JS `Map` from node to an array of flags: a `Map` keeps the
/// declaration order for every name, where a plain object would put names like `0`, `1`
/// (an `nn.Sequential`'s) first in numeric order.
fn ordered_js(pairs: &[(String, Vec<String>)]) -> Result<JsValue, JsError> {
    let map = js_sys::Map::new();
    for (node, flags) in pairs {
        map.set(&JsValue::from_str(node), &to_js(flags)?);
    }
    Ok(map.into())
}

/// `seen`, `diagnose`, `diagnosed`, `history`, `where`, `alerts` over a run, as the CLI's
/// --json gives them: seen `{node: {kind, metric: value}}`; diagnose the seed's
/// `{where: [flags]}` as a `Map` in declaration order; diagnosed (`diagnose --with-bounds`)
/// `{run, forwards, diagnosis: {where: [flags]}, thresholds, …}`; history
/// `[[forward, value]]`; where `{node: [flags]}` as a `Map`; alerts
/// `[{node, flag, first_forward, means, advice}]`. `node` and `of` are `history`'s only.
/// The read behind them is kept in `cache` while the run is unchanged.
pub(super) fn health_call<F: StoreFs>(
    store: &Store<F>,
    cache: &RefCell<HealthCache>,
    name: &str,
    o: HealthOpts,
) -> Result<JsValue, JsError> {
    if name != "history" {
        for (given, field) in [(o.node.is_some(), "node"), (o.of.is_some(), "of")] {
            if given {
                return Err(coded(
                    codes::UNKNOWN_OPTION,
                    format!("options of {name}: unknown field `{field}` (only history takes it)"),
                ));
            }
        }
    }
    if name == "seen" && o.thresholds.is_some() {
        return Err(coded(
            codes::UNKNOWN_OPTION,
            "options of seen: unknown field `thresholds` (seen is what was measured, not judged)",
        ));
    }
    let h = kept_read(store, cache, &o.run, o.last)?;
    let t = thresholds_of(o.thresholds.as_ref())?;
    match name {
        "seen" => to_js(&crate::health::json::seen_json(&h.seen())),
        "diagnose" => ordered_js(&h.diagnose(&t).verdict.to_names()),
        "diagnosed" => to_js(&h.diagnose(&t).to_json()),
        "history" => {
            let node = o
                .node
                .as_deref()
                .ok_or_else(|| coded(codes::BAD_OPTION, "history needs {run, node}"))?;
            to_js(&h.history(node, o.of.as_deref().unwrap_or("grad_norm")))
        }
        "where" => ordered_js(&h.overlay(&h.diagnose(&t))),
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
    let kind = match o.kind.as_str() {
        "profile" => HealthFigure::Profile,
        "flags" => HealthFigure::Flags,
        _ => HealthFigure::Overlaid,
    };
    let h = kept_read(store, cache, &o.run, o.last)?;
    let d = h.diagnose(&thresholds_of(o.thresholds.as_ref())?);
    health_figure_js(&h, &d, kind, o.of.as_deref())
}

/// The read behind health answers, kept in `cache`; whether the run grew is asked of the
/// store at most once a second (`HealthCache::read_at`, by the JS clock).
fn kept_read<F: StoreFs>(
    store: &Store<F>,
    cache: &RefCell<HealthCache>,
    run: &str,
    last: Option<usize>,
) -> Result<std::sync::Arc<RunHealth>, JsError> {
    cache
        .borrow_mut()
        .read_at(store, run, last, js_sys::Date::now())
        .map_err(core_err)
}

/// A health figure of a read under a diagnosis, as `figure` answers it: `{data, layout, skipped}`.
fn health_figure_js(
    h: &RunHealth,
    d: &Diagnosis,
    kind: HealthFigure,
    of: Option<&str>,
) -> Result<JsValue, JsError> {
    let figure = crate::figures::health::figure(h, d, kind, of.unwrap_or("grad_norm"));
    to_js(&FigureJs {
        data: &figure.data,
        layout: &figure.layout,
        skipped: &h.skipped,
    })
}

/// The diagnosis folded onto the graph's nodes as `where` answers it: `{node: [flags]}`.
fn where_json(h: &RunHealth, d: &Diagnosis) -> serde_json::Map<String, serde_json::Value> {
    h.overlay(d)
        .into_iter()
        .map(|(node, flags)| (node, serde_json::json!(flags)))
        .collect()
}

/// Options of `judge`: the run, how far back, the thresholds, and the measurement the profile
/// draws (`grad_norm` when not given).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JudgeOpts {
    run: String,
    last: Option<usize>,
    thresholds: Option<serde_json::Value>,
    of: Option<String>,
}

/// `judge({run, thresholds?, last?, of?})`: what a threshold edit asks, in one call over one
/// read and one diagnosis: `{diagnose, alerts, where, profile, flags, overlaid}`, each exactly
/// what `diagnosed`, `alerts`, `where` (as a plain object) and `figure({kind, of})` answer with
/// the same options.
pub(super) fn judge_call<F: StoreFs>(
    store: &Store<F>,
    cache: &RefCell<HealthCache>,
    o: JudgeOpts,
) -> Result<JsValue, JsError> {
    let t = thresholds_of(o.thresholds.as_ref())?;
    let h = kept_read(store, cache, &o.run, o.last)?;
    let d = h.diagnose(&t);
    let of = o.of.as_deref();
    let out = js_sys::Object::new();
    let parts: [(&str, JsValue); 6] = [
        ("diagnose", to_js(&d.to_json())?),
        ("alerts", to_js(&h.alerts(&d))?),
        ("where", to_js(&where_json(&h, &d))?),
        (
            "profile",
            health_figure_js(&h, &d, HealthFigure::Profile, of)?,
        ),
        ("flags", health_figure_js(&h, &d, HealthFigure::Flags, of)?),
        (
            "overlaid",
            health_figure_js(&h, &d, HealthFigure::Overlaid, of)?,
        ),
    ];
    for (key, value) in parts {
        js_sys::Reflect::set(&out, &JsValue::from_str(key), &value)
            .map_err(|e| js_err(format!("{e:?}")))?;
    }
    Ok(out.into())
}

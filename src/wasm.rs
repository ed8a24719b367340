//! The wasm boundary: every `#[wasm_bindgen]` item, converting with serde-wasm-bindgen.

use crate::{stats, ObservableSpec, SpecError};
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::prelude::*;

/// Turn a core error into a JS `Error` carrying the core's message.
fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// Serialise a result into a plain JS value (objects as plain objects, not Maps).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let ser = serde_wasm_bindgen::Serializer::json_compatible();
    value.serialize(&ser).map_err(js_err)
}

/// Read a plain JS value into a core type; the error is the plain message, without a JS prefix.
fn from_js<T: DeserializeOwned>(value: JsValue) -> Result<T, String> {
    serde_wasm_bindgen::from_value(value).map_err(|e| {
        let e: JsValue = e.into();
        match e.dyn_ref::<js_sys::Error>() {
            Some(err) => String::from(err.message()),
            None => format!("{e:?}"),
        }
    })
}

/// Read a spec given as a plain object, with the core's wording for a bad one.
fn spec_from_js(spec: JsValue) -> Result<ObservableSpec, JsError> {
    from_js(spec).map_err(|e| js_err(SpecError::Json(e)))
}

/// The version of the core this package was built from.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The 16-hex-char id of an observable spec given as a plain object.
#[wasm_bindgen(js_name = specId)]
pub fn spec_id(spec: JsValue) -> Result<String, JsError> {
    spec_from_js(spec)?.id().map_err(js_err)
}

/// The canonical serialisation an id is taken over.
#[wasm_bindgen(js_name = specCanonical)]
pub fn spec_canonical(spec: JsValue) -> Result<String, JsError> {
    spec_from_js(spec)?.canonical_json().map_err(js_err)
}

/// One-pass statistics of a Float32Array or Float64Array of values.
#[wasm_bindgen(js_name = statsOf)]
pub fn stats_of(values: JsValue) -> Result<JsValue, JsError> {
    if let Some(a) = values.dyn_ref::<js_sys::Float32Array>() {
        return to_js(&stats::stats_of(&a.to_vec()));
    }
    if let Some(a) = values.dyn_ref::<js_sys::Float64Array>() {
        return to_js(&stats::stats_of(&a.to_vec()));
    }
    Err(JsError::new(
        "statsOf takes a Float32Array or a Float64Array",
    ))
}

/// What a health flag means, what to do about it, and the bounds it is judged at, with
/// their defaults: `{flag, means, todo, bounds: [{name, default, meaning, origin, source}],
/// metrics, sources}`. Throws for a name that is no flag.
#[wasm_bindgen]
pub fn about(flag: &str) -> Result<JsValue, JsError> {
    let about = crate::health::about_json(flag)
        .ok_or_else(|| JsError::new(&crate::health::json::unknown_flag(flag)))?;
    to_js(&about)
}

/// The default thresholds as `{name: value, …}`, in the order they are documented.
#[wasm_bindgen(js_name = thresholdsDefault)]
pub fn thresholds_default() -> Result<JsValue, JsError> {
    let t = crate::verdict::Thresholds::default();
    to_js(&crate::health::thresholds::AsJson(&t))
}

/// Thresholds from `{name: value}` overrides on top of the defaults (`undefined`/`null`: the
/// defaults); unknown names and non-numbers throw with the core's message.
fn thresholds_from_js(thresholds: JsValue) -> Result<crate::verdict::Thresholds, JsError> {
    if thresholds.is_undefined() || thresholds.is_null() {
        return Ok(crate::verdict::Thresholds::default());
    }
    let value: serde_json::Value = serde_wasm_bindgen::from_value(thresholds).map_err(js_err)?;
    crate::health::thresholds::from_value(&value, "thresholds").map_err(js_err)
}

/// The verdict on one picture of the nodes, `{where: [flag, …]}`. `seen` is a list of
/// `{name, kind, metrics}` or an object `{node: {kind?, metric: value, …}}`, in declaration
/// order; `thresholds` is `{name: value}` overrides or `undefined`. No rule over time runs
/// here (LOSING_PLASTICITY needs a history: see `verdictOver`).
#[wasm_bindgen]
pub fn verdict(seen: JsValue, thresholds: JsValue) -> Result<JsValue, JsError> {
    let crate::health::Seen(nodes) = serde_wasm_bindgen::from_value(seen).map_err(js_err)?;
    let t = thresholds_from_js(thresholds)?;
    to_js(&crate::health::VerdictJson(&crate::verdict::verdict(
        &nodes, &t,
    )))
}

/// The verdict over a history, `{where: [flag, …]}`: `forwards` is a list of
/// `{number, nodes}` (oldest first, `nodes` as `seen` in `verdict`). The latest of each metric
/// is judged, and LOSING_PLASTICITY over the whole history.
#[wasm_bindgen(js_name = verdictOver)]
pub fn verdict_over(forwards: JsValue, thresholds: JsValue) -> Result<JsValue, JsError> {
    let forwards: Vec<crate::health::ForwardJson> =
        serde_wasm_bindgen::from_value(forwards).map_err(js_err)?;
    let forwards: Vec<crate::verdict::Forward> = forwards.into_iter().map(Into::into).collect();
    let t = thresholds_from_js(thresholds)?;
    to_js(&crate::health::VerdictJson(&crate::verdict::diagnose(
        &forwards, &t,
    )))
}

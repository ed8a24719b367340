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

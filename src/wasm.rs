//! The wasm boundary: every `#[wasm_bindgen]` item, converting with serde-wasm-bindgen.

use crate::{stats, ObservableSpec};
use serde::Serialize;
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

/// The version of the core this package was built from.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The 16-hex-char id of an observable spec given as a plain object.
#[wasm_bindgen(js_name = specId)]
pub fn spec_id(spec: JsValue) -> Result<String, JsError> {
    let spec: ObservableSpec = serde_wasm_bindgen::from_value(spec).map_err(js_err)?;
    spec.id().map_err(js_err)
}

/// The canonical serialisation an id is taken over.
#[wasm_bindgen(js_name = specCanonical)]
pub fn spec_canonical(spec: JsValue) -> Result<String, JsError> {
    let spec: ObservableSpec = serde_wasm_bindgen::from_value(spec).map_err(js_err)?;
    spec.canonical_json().map_err(js_err)
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

/// Shape, dtype and statistics of every tensor in a .npy/.npz/.pt/.safetensors file's bytes,
/// as `{key: {shape, dtype, count, nonfinite, nan, l2, l1, mean, std, min, max, absmax, zero_fraction}}`.
#[wasm_bindgen(js_name = tensorStats)]
pub fn tensor_stats(bytes: &[u8], name: &str) -> Result<JsValue, JsError> {
    let mut file = crate::tensor::TensorFile::open_bytes(name, bytes).map_err(js_err)?;
    to_js(&file.summarize().map_err(js_err)?)
}

/// The tensors in a file's bytes, in file order: `[{key, shape, dtype}]`.
#[wasm_bindgen(js_name = tensorKeys)]
pub fn tensor_keys(bytes: &[u8], name: &str) -> Result<JsValue, JsError> {
    let file = crate::tensor::TensorFile::open_bytes(name, bytes).map_err(js_err)?;
    to_js(&file.entries())
}

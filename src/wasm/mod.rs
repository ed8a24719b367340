//! The wasm boundary: every `#[wasm_bindgen]` item, converting with serde-wasm-bindgen.
//!
//! One file per concept; this one holds the conversions they share.

mod call;
mod errors;
mod health;
mod helpers;
mod js_fs;
mod live;
mod observe;
mod readback;
mod step;
mod store;
mod tensor;
mod verdict;

// The exported items, reachable as `somatize::wasm::…` (the wasm-bindgen tests call them).
pub use errors::use_error_class;
pub use helpers::*;
pub use live::LiveHandle;
pub use observe::*;
pub use step::*;
pub use store::StoreHandle;
pub use tensor::*;
pub use verdict::*;

use crate::math::stats;
use crate::{ObservableSpec, SpecError};
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::prelude::*;

use crate::store::{ListedFs, RangeSource, Store, StoreError, StoreFs, ZipFs};
use errors::{coded, codes, core_err, core_err_in, with_code};

/// Turn a core error into a JS `Error` carrying the core's message.
fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// A serde error reading options: an unknown field is `UNKNOWN_OPTION`, anything else
/// `BAD_OPTION` (serde's own wording, "unknown field `x`, expected …", is what tells them apart).
fn option_error(what: &str, e: impl std::fmt::Display) -> JsError {
    let text = e.to_string();
    let code = if text.starts_with("unknown field") {
        codes::UNKNOWN_OPTION
    } else {
        codes::BAD_OPTION
    };
    coded(code, format!("{what}: {text}"))
}

/// Serialise a result into a plain JS value (objects as plain objects, not Maps).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let ser = serde_wasm_bindgen::Serializer::json_compatible();
    value.serialize(&ser).map_err(js_err)
}

/// The plain message of a conversion error, without the JS `Error: ` prefix.
fn js_message(e: serde_wasm_bindgen::Error) -> String {
    let e: JsValue = e.into();
    match e.dyn_ref::<js_sys::Error>() {
        Some(err) => String::from(err.message()),
        None => format!("{e:?}"),
    }
}

/// Read a plain JS value into a core type; the error names `what` was being read.
fn from_js<T: DeserializeOwned>(what: &str, value: JsValue) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(value)
        .map_err(|e| JsError::new(&format!("{what}: {}", js_message(e))))
}

/// Read a plain JS object into a struct that refuses unknown fields: through a JSON value, so
/// that `deny_unknown_fields` sees every key given (serde-wasm-bindgen reads a struct's own
/// fields only and would drop the others silently). For objects of names, strings and finite
/// numbers only (a NaN does not survive JSON).
fn from_js_strict<T: DeserializeOwned>(what: &str, value: JsValue) -> Result<T, JsError> {
    let value: serde_json::Value = from_js(what, value)?;
    serde_json::from_value(value).map_err(|e| option_error(what, e))
}

/// Read a spec given as a plain object, with the core's wording for a bad one (an unknown field
/// is refused, naming it).
fn spec_from_js(spec: JsValue) -> Result<ObservableSpec, JsError> {
    let value: serde_json::Value =
        serde_wasm_bindgen::from_value(spec).map_err(|e| js_err(SpecError::Json(js_message(e))))?;
    serde_json::from_value(value).map_err(|e| {
        let text = e.to_string();
        if text.starts_with("unknown field") {
            coded(codes::UNKNOWN_OPTION, SpecError::Json(text))
        } else {
            js_err(SpecError::Json(text))
        }
    })
}

/// The version of the core this package was built from.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

//! The wasm boundary: every `#[wasm_bindgen]` item, converting with serde-wasm-bindgen.
//!
//! One file per concept; this one holds the conversions they share.

mod call;
mod health;
mod helpers;
mod js_fs;
mod live;
mod observe;
mod readback;
mod store;
mod tensor;
mod verdict;

// The exported items, reachable as `somatize::wasm::…` (the wasm-bindgen tests call them).
pub use helpers::*;
pub use live::LiveHandle;
pub use observe::*;
pub use store::StoreHandle;
pub use tensor::*;
pub use verdict::*;

use crate::math::stats;
use crate::{ObservableSpec, SpecError};
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::prelude::*;

use crate::store::{ListedFs, RangeSource, Store, StoreError, StoreFs, ZipFs};

/// Turn a core error into a JS `Error` carrying the core's message.
fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// The stable `error.code`s of the JS errors the store functions, `observeTensors`,
/// `observeFile` and `generate` throw, for a caller to branch on instead of a message.
pub mod codes {
    /// An option, or a field of a tensor or spec, that the call does not take.
    pub const UNKNOWN_OPTION: &str = "SOMATIZE_UNKNOWN_OPTION";
    /// An option of the wrong type or a missing one (`{run}` missing, a forward not a number).
    pub const BAD_OPTION: &str = "SOMATIZE_BAD_OPTION";
    /// The store holds no run of that name.
    pub const NO_SUCH_RUN: &str = "SOMATIZE_NO_SUCH_RUN";
    /// No store function of that name.
    pub const NO_SUCH_FUNCTION: &str = "SOMATIZE_NO_SUCH_FUNCTION";
}

thread_local! {
    /// The code of the error being returned by the current exported call (see [`coded`]).
    static CODE: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// A JS error with the core's message whose `code` will be `code`: the code is attached where
/// the error leaves wasm ([`with_code`]). Made only where the error is returned at once, so
/// the code is that of the error thrown (wasm is single-threaded; each call starts clear).
fn coded(code: &'static str, message: impl std::fmt::Display) -> JsError {
    CODE.with(|c| c.set(Some(code)));
    JsError::new(&message.to_string())
}

/// Run an exported call and give its error the `code` [`coded`] chose for it, if any.
fn with_code<T>(call: impl FnOnce() -> Result<T, JsError>) -> Result<T, JsValue> {
    CODE.with(|c| c.set(None));
    call().map_err(|e| {
        let value: JsValue = e.into();
        if let Some(code) = CODE.with(|c| c.take()) {
            // Setting a property on an Error object cannot fail.
            let _ = js_sys::Reflect::set(&value, &JsValue::from_str("code"), &code.into());
        }
        value
    })
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

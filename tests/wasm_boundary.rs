//! wasm-bindgen tests: the boundary gives the native answers, and throws real JS errors on bad input.
#![cfg(target_arch = "wasm32")]

use somatize::wasm;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

fn spec(json: &str) -> JsValue {
    js_sys::JSON::parse(json).expect("test spec is JSON")
}

#[wasm_bindgen_test]
fn spec_ids_match_the_native_golden_ids() {
    let golden: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("golden/spec_ids.json")).unwrap();
    assert!(!golden.is_empty());
    for case in golden {
        let want = case["id"].as_str().unwrap();
        let got = wasm::spec_id(spec(&case["spec"].to_string()));
        assert_eq!(got.ok().as_deref(), Some(want), "spec {}", case["spec"]);
    }
}

#[wasm_bindgen_test]
fn a_bad_spec_is_a_js_error_with_the_core_message() {
    let err = wasm::spec_id(spec(
        r#"{"source":"param","selector":"w","reduction":"2bad"}"#,
    ))
    .err()
    .expect("a bad reduction is refused");
    let err: JsValue = err.into();
    let err: js_sys::Error = err.into();
    let message: String = err.message().into();
    assert!(message.contains("2bad"), "message: {message}");
}

#[wasm_bindgen_test]
fn stats_cross_the_boundary_unchanged() {
    let values = js_sys::Float32Array::from(&[1.0f32, f32::NAN, 2.0, 0.0][..]);
    let got = wasm::stats_of(values.into())
        .ok()
        .expect("stats of a Float32Array");
    let got: somatize::Stats = serde_wasm_bindgen::from_value(got).unwrap();
    assert_eq!(
        got,
        somatize::math::stats::stats_of(&[1.0f32, f32::NAN, 2.0, 0.0])
    );
}

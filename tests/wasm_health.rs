//! wasm-bindgen tests of the health boundary: about, thresholdsDefault, verdict, verdictOver
//! give the native answers, and bad input throws a JS error with the core's message.
#![cfg(target_arch = "wasm32")]

use somatize::wasm;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

fn js(json: &str) -> JsValue {
    js_sys::JSON::parse(json).expect("test input is JSON")
}

fn text(v: &JsValue) -> String {
    js_sys::JSON::stringify(v).expect("stringifies").into()
}

fn message(err: wasm_bindgen::JsError) -> String {
    let err: JsValue = err.into();
    let err: js_sys::Error = err.into();
    err.message().into()
}

#[wasm_bindgen_test]
fn about_gives_the_flag_and_its_bounds() {
    let got = wasm::about("DEAD_CHANNELS(2)").ok().expect("a known flag");
    let got: serde_json::Value = serde_wasm_bindgen::from_value(got).unwrap();
    assert_eq!(got["flag"], "DEAD_CHANNELS");
    assert_eq!(got["bounds"][0]["name"], "dead_channels_min");
    assert_eq!(got["bounds"][0]["origin"], "ours");
    let err = wasm::about("FINE").err().expect("not a flag");
    assert!(message(err).contains("unknown flag \"FINE\""));
}

#[wasm_bindgen_test]
fn default_thresholds_are_the_native_ones_in_order() {
    let got = wasm::thresholds_default().ok().unwrap();
    let keys = js_sys::Object::keys(&got.clone().into());
    let got: Vec<(String, f64)> = keys
        .iter()
        .map(|k| {
            let v = js_sys::Reflect::get(&got, &k).unwrap().as_f64().unwrap();
            (k.as_string().unwrap(), v)
        })
        .collect();
    let want: Vec<(String, f64)> = somatize::verdict::Thresholds::default()
        .as_dict()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(got, want);
}

/// A Linear then a ReLU with 3 of its 4 units dead, as a list and as an object.
const LIST: &str = r#"[{"name": "fc", "kind": "Linear", "metrics": {"grad_norm": 0.1}},
    {"name": "relu", "kind": "ReLU", "metrics": {"dead_units": 3, "dead_unit_fraction": 0.75}}]"#;
const OBJECT: &str = r#"{"fc": {"kind": "Linear", "grad_norm": 0.1},
    "relu": {"kind": "ReLU", "dead_units": 3, "dead_unit_fraction": 0.75}}"#;

#[wasm_bindgen_test]
fn verdict_matches_native_and_thresholds_change_it() {
    for seen in [LIST, OBJECT] {
        let got = wasm::verdict(js(seen), JsValue::UNDEFINED).ok().unwrap();
        assert_eq!(
            text(&got),
            r#"{"relu":["DEAD","DEAD_CHANNELS(3)"]}"#,
            "{seen}"
        );
        let over = js(r#"{"dead_layer_fraction": 0.8, "dead_channels_min": 4}"#);
        let got = wasm::verdict(js(seen), over).ok().unwrap();
        assert_eq!(text(&got), "{}", "{seen} at raised bounds");
    }
}

#[wasm_bindgen_test]
fn bad_thresholds_and_bad_seen_throw_the_core_message() {
    let err = wasm::verdict(js(LIST), js(r#"{"dead": 1}"#)).err().unwrap();
    assert!(message(err).contains("unknown threshold \"dead\""));
    let err = wasm::verdict(js(LIST), js(r#"{"leakage_cka": "high"}"#))
        .err()
        .unwrap();
    assert!(message(err).contains("must be a number"));
    let err = wasm::verdict(js(r#"{"a": {"grad_norm": "big"}}"#), JsValue::NULL)
        .err()
        .unwrap();
    assert!(message(err).contains("\"grad_norm\" must be a number"));
}

#[wasm_bindgen_test]
fn verdict_over_a_history_sees_plasticity_going() {
    let forwards = js(r#"[
        {"number": 0, "nodes": {"h": {"param_mean_abs": 1.0, "dormant_unit_fraction": 0.0, "feature_erank": 40}}},
        {"number": 1, "nodes": {"h": {"param_mean_abs": 1.2, "dormant_unit_fraction": 0.1, "feature_erank": 30}}},
        {"number": 2, "nodes": {"h": {"param_mean_abs": 1.5, "dormant_unit_fraction": 0.2, "feature_erank": 20}}}]"#);
    let got = wasm::verdict_over(forwards, JsValue::UNDEFINED)
        .ok()
        .unwrap();
    assert_eq!(text(&got), r#"{"h":["LOSING_PLASTICITY"]}"#);
}

#[wasm_bindgen_test]
fn ranks_are_taken_in_wasm_too() {
    // faer's SVD runs on wasm32 (one thread): a 64 x 48 matrix that is a sum of 3 outer
    // products of orthogonal ±1 patterns with weights 3, 2, 1 has those singular values
    // scaled by √(64·48), so its effective rank is exp(entropy of 3/6, 2/6, 1/6).
    let (rows, cols) = (64usize, 48usize);
    let pattern = |k: usize, i: usize| if (i >> k) & 1 == 0 { 1.0 } else { -1.0 };
    let mut m = vec![0.0f64; rows * cols];
    for (k, w) in [(0usize, 3.0f64), (1, 2.0), (2, 1.0)] {
        for i in 0..rows {
            for j in 0..cols {
                m[i * cols + j] += w * pattern(k, i) * pattern(k, j);
            }
        }
    }
    let sv = somatize::math::linalg::singular_values(&m, rows, cols).unwrap();
    let scale = ((rows * cols) as f64).sqrt();
    for (got, want) in sv.iter().zip([3.0, 2.0, 1.0]) {
        assert!((got / scale - want).abs() < 1e-9, "{sv:?}");
    }
    let p = [0.5f64, 1.0 / 3.0, 1.0 / 6.0];
    let want = (-p.iter().map(|x| x * x.ln()).sum::<f64>()).exp();
    let got = somatize::math::linalg::effective_rank(&m, rows, cols)
        .unwrap()
        .unwrap();
    assert!((got - want).abs() < 1e-6, "erank {got} vs {want}");
}

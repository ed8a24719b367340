//! The verdict from JS: flags explained, thresholds, and judging a picture of the nodes.

use super::*;

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
    let value: serde_json::Value = from_js("thresholds", thresholds)?;
    crate::health::thresholds::from_value(&value, "thresholds").map_err(js_err)
}

/// The verdict on one picture of the nodes, `{where: [flag, …]}`. `seen` is a list of
/// `{name, kind, metrics}` or an object `{node: {kind?, metric: value, …}}`, in declaration
/// order; `thresholds` is `{name: value}` overrides or `undefined`. No rule over time runs
/// here (LOSING_PLASTICITY needs a history: see `verdictOver`).
#[wasm_bindgen]
pub fn verdict(seen: JsValue, thresholds: JsValue) -> Result<JsValue, JsError> {
    let crate::health::Seen(nodes) = from_js("seen", seen)?;
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
    let forwards: Vec<crate::health::ForwardJson> = from_js("forwards", forwards)?;
    let forwards: Vec<crate::verdict::Forward> = forwards.into_iter().map(Into::into).collect();
    let t = thresholds_from_js(thresholds)?;
    to_js(&crate::health::VerdictJson(&crate::verdict::diagnose(
        &forwards, &t,
    )))
}

/// The node a key belongs to: the seed's `within(where)`. With the graph's node names
/// (`within("net.2.attn", ["net", "net.2"])` → `net.2`) the longest that holds it; with one
/// argument, the key's first dotted segment (`within("net.2.attn")` → `net`).
#[wasm_bindgen]
pub fn within(key: &str, nodes: Option<Vec<String>>) -> String {
    let nodes = nodes.unwrap_or_default();
    let names: Vec<&str> = nodes.iter().map(String::as_str).collect();
    crate::health::store::within(key, &names).to_string()
}

/// Every bound as `{name: value, …}` in the documented order, with `over` (`{name: value}`)
/// applied: the seed's `Thresholds(**over).as_dict()`. An unknown name or a non-number throws.
#[wasm_bindgen(js_name = thresholdsAsDict)]
pub fn thresholds_as_dict(over: JsValue) -> Result<JsValue, JsError> {
    let t = thresholds_from_js(over)?;
    to_js(&crate::health::thresholds::AsJson(&t))
}

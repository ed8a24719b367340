//! One step measured from JS as natively: a per-step dump as `somatize import` measures it
//! (the same reader, [`read_step_file`], and the same measurement, [`step_stats`]), or a
//! step's summary as the companion derives it ([`summary_stats`]).

use super::errors::{coded_with, Details};
use super::tensor::JsSource;
use super::*;
use crate::health::forward::Step;
use crate::health::record::{params_only, read_step_file, step_stats, summary_stats, Graph};
use crate::health::summary::{StepSummary, WireSummary};
use std::collections::BTreeMap;

/// Options of `stepStats`: the names of the step's and the previous step's files in errors.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StepOpts {
    name: Option<String>,
    previous_name: Option<String>,
}

/// The graph of a `stepStats` call: `graph.json`'s text or bytes, the graph as an object, or
/// null/undefined for none (the nodes are then those the step's keys name, as in import).
fn graph_from_js(graph: JsValue) -> Result<Graph, JsError> {
    const NAME: &str = "graph.json";
    let bytes = if graph.is_undefined() || graph.is_null() {
        return Ok(Graph::default());
    } else if let Some(text) = graph.as_string() {
        text.into_bytes()
    } else if let Some(array) = graph.dyn_ref::<js_sys::Uint8Array>() {
        // Refused before it is copied: Graph::parse would refuse it anyway.
        if array.length() as usize > crate::health::record::GRAPH_MAX_BYTES {
            return Err(coded_with(
                Details::code(codes::BAD_GRAPH).file(NAME),
                format!(
                    "{NAME}: {} bytes is over the {}-byte cap for a graph",
                    array.length(),
                    crate::health::record::GRAPH_MAX_BYTES
                ),
            ));
        }
        array.to_vec()
    } else if graph.is_object() {
        let value: serde_json::Value = serde_wasm_bindgen::from_value(graph).map_err(|e| {
            coded_with(
                Details::code(codes::BAD_GRAPH).file(NAME),
                format!("{NAME}: {}", js_message(e)),
            )
        })?;
        serde_json::to_vec(&value).map_err(js_err)?
    } else {
        return Err(coded(
            codes::BAD_OPTION,
            "stepStats takes the graph as graph.json's text or bytes, an object, or null",
        ));
    };
    Graph::parse(&bytes, NAME)
        .map_err(|reason| coded_with(Details::code(codes::BAD_GRAPH).file(NAME), reason))
}

/// Every tensor of a step file given as bytes (or `{size, readAtInto}`), named `name`.
fn step_from_js(bytes: JsValue, name: &str) -> Result<Step, JsError> {
    let source = JsSource::new(bytes, "stepStats").map_err(|_| {
        coded(
            codes::BAD_OPTION,
            format!(
                "stepStats takes the {name} file's bytes as a Uint8Array, or {{size, readAtInto}}"
            ),
        )
    })?;
    let file = crate::tensor::TensorFile::open(name, source).map_err(core_err)?;
    read_step_file(file).map_err(core_err)
}

/// `stepStats(graph, step, previous?, options?)`: one step of a per-step dump (DESIGN.md's
/// convention: `param.*`, `grad.*`, `act.*`, `update.*`, `loss`) measured as `somatize import`
/// measures it, as `{node: {metric: value}}`: the rows of the forward's `stats.json` (what
/// `somatize seen` shows of it, without the kinds), NaN a number. `graph` is the dump's
/// `graph.json` (text, bytes or an object; null for none). `step` and `previous` are step
/// files' bytes (Uint8Array, or `{size, readAtInto}`); `previous`, when given, must be the
/// step just before (n − 1): a node without its own `update.*` tensors gets its update from
/// the difference against it, as import does for consecutive files. `options`: `{name,
/// previousName}`, the files' names in errors (`step`, `previous` by default).
#[wasm_bindgen(js_name = stepStats)]
pub fn step_stats_js(
    graph: JsValue,
    step: JsValue,
    previous: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    with_code(|| {
        let o: StepOpts = super::call::call_opts("stepStats", options)?;
        let name = o.name.as_deref().unwrap_or("step");
        let graph = graph_from_js(graph)?;
        let current = step_from_js(step, name)?;
        let before = if previous.is_undefined() || previous.is_null() {
            None
        } else {
            let name = o.previous_name.as_deref().unwrap_or("previous");
            Some(params_only(step_from_js(previous, name)?))
        };
        let stats = step_stats(&graph, &current, before.as_ref()).map_err(|e| {
            coded_with(
                Details::code(codes::BAD_STEP).file(name),
                format!("{name}: {e}"),
            )
        })?;
        plain_stats(&stats)
    })
}

/// A stats table as `{node: {metric: value}}`, NaN a number.
fn plain_stats(stats: &crate::store::NodeStats) -> Result<JsValue, JsError> {
    let plain: BTreeMap<&str, BTreeMap<&str, f64>> = stats
        .iter()
        .map(|(node, row)| {
            let row = row.iter().map(|(k, v)| (k.as_str(), v.0)).collect();
            (node.as_str(), row)
        })
        .collect();
    to_js(&plain)
}

/// A Float64Array's or Float32Array's numbers as f64 (`what` names it in the error).
fn numbers(v: &JsValue, what: &str, f32: bool) -> Result<Vec<f64>, JsError> {
    if let Some(a) = v.dyn_ref::<js_sys::Float64Array>() {
        return Ok(a.to_vec());
    }
    if let (true, Some(a)) = (f32, v.dyn_ref::<js_sys::Float32Array>()) {
        return Ok(a.to_vec().into_iter().map(f64::from).collect());
    }
    Err(coded(
        codes::BAD_OPTION,
        format!(
            "summaryStats takes the summary's {what} as a Float64Array{}",
            if f32 { " or a Float32Array" } else { "" }
        ),
    ))
}

/// `summaryStats(graph, summary, values, samples?)`: a step's summary (torch's, as a frame
/// carries it: its structure, JSON text or an object; its numbers, a Float64Array; its
/// spectrum samples, a Float32Array or Float64Array) turned into `{node: {metric: value}}` as
/// the companion derives them (docs/recording.md, "Summaries"), over the nodes of `graph`
/// (graph.json's text, bytes or object).
#[wasm_bindgen(js_name = summaryStats)]
pub fn summary_stats_js(
    graph: JsValue,
    summary: JsValue,
    values: JsValue,
    samples: JsValue,
) -> Result<JsValue, JsValue> {
    with_code(|| {
        let graph = graph_from_js(graph)?;
        let bad = |m: String| coded(codes::BAD_SUMMARY, m);
        let wire: WireSummary = if let Some(text) = summary.as_string() {
            serde_json::from_str(&text).map_err(|e| bad(format!("summary: {e}")))?
        } else if summary.is_object() {
            serde_wasm_bindgen::from_value(summary)
                .map_err(|e| bad(format!("summary: {}", js_message(e))))?
        } else {
            return Err(coded(
                codes::BAD_OPTION,
                "summaryStats takes the summary as JSON text or an object",
            ));
        };
        let values = numbers(&values, "numbers", false)?;
        let samples = if samples.is_undefined() || samples.is_null() {
            Vec::new()
        } else {
            numbers(&samples, "samples", true)?
        };
        let summary =
            StepSummary::from_wire(&wire, &values, &samples).map_err(|e| bad(e.to_string()))?;
        plain_stats(&summary_stats(&graph, &summary))
    })
}

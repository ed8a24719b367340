//! Observables from JS: spec ids, generation, observing tensors and files, temporal functions.

use super::tensor::JsSource;
use super::*;
use crate::observe::ops::blocks::{BlockHelpers, BlockKind};

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

/// Options of `generate`: which key kinds and which names (`all`, a glob, an exact name).
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct GenerateOpts {
    kinds: Option<Vec<String>>,
    selector: Option<String>,
}

/// A generated spec with its id.
#[derive(Serialize)]
struct IdSpec {
    id: String,
    spec: ObservableSpec,
}

/// One spec per selected key × reduction: `generate(keys, reductions, transforms?, options?)`
/// returns `[{id, spec}]`; unknown names throw, naming them.
#[wasm_bindgen(js_name = generate)]
pub fn generate_js(
    keys: JsValue,
    reductions: JsValue,
    transforms: JsValue,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    with_code(|| generate_inner(keys, reductions, transforms, options))
}

fn generate_inner(
    keys: JsValue,
    reductions: JsValue,
    transforms: JsValue,
    options: JsValue,
) -> Result<JsValue, JsError> {
    let keys: Vec<String> = from_js("keys", keys)?;
    let reductions: Vec<String> = from_js("reductions", reductions)?;
    let transforms: Vec<String> = if transforms.is_undefined() || transforms.is_null() {
        Vec::new()
    } else {
        from_js("transforms", transforms)?
    };
    let opts: GenerateOpts = if options.is_undefined() || options.is_null() {
        GenerateOpts::default()
    } else {
        from_js_strict("options of generate", options)?
    };
    let mut o = crate::GenerateOptions::default();
    if let Some(kinds) = opts.kinds {
        o.kinds = kinds;
    }
    if let Some(selector) = opts.selector {
        o.selector = selector;
    }
    let specs = crate::generate_specs(&keys, &reductions, &transforms, &o).map_err(js_err)?;
    let out = specs
        .into_iter()
        .map(|spec| {
            Ok(IdSpec {
                id: spec.id().map_err(js_err)?,
                spec,
            })
        })
        .collect::<Result<Vec<_>, JsError>>()?;
    to_js(&out)
}

/// The values of a tensor handed in from JS, left in JS memory until a spec needs them.
enum JsValues {
    F32(js_sys::Float32Array),
    F64(js_sys::Float64Array),
    I32(js_sys::Int32Array),
    U8(js_sys::Uint8Array),
    /// A plain array, converted when it was handed in.
    Plain(Vec<f64>),
}

impl JsValues {
    fn len(&self) -> usize {
        match self {
            JsValues::F32(a) => a.length() as usize,
            JsValues::F64(a) => a.length() as usize,
            JsValues::I32(a) => a.length() as usize,
            JsValues::U8(a) => a.length() as usize,
            JsValues::Plain(v) => v.len(),
        }
    }

    /// The values copied into wasm memory, in their own type (one copy, no conversion).
    fn copy(&self) -> crate::TensorData {
        match self {
            JsValues::F32(a) => crate::TensorData::F32(a.to_vec()),
            JsValues::F64(a) => crate::TensorData::F64(a.to_vec()),
            JsValues::I32(a) => crate::TensorData::I32(a.to_vec()),
            JsValues::U8(a) => crate::TensorData::U8(a.to_vec()),
            JsValues::Plain(v) => crate::TensorData::F64(v.clone()),
        }
    }
}

/// A tensor handed in from JS: its shape, checked against the values' length when handed in,
/// and the seed's `TypedTensor` metadata when given (carried onto the tensor a spec reads).
struct JsTensor {
    shape: Vec<usize>,
    values: JsValues,
    /// Axis names, one per dimension.
    axes: Option<Vec<String>>,
    /// The training stage it was captured at.
    stage: Option<String>,
    /// Where it came from (the provenance's `file`; `<js>` when not given).
    provenance: Option<String>,
}

/// The fields a tensor handed in may have; any other is an error naming it (never dropped).
const TENSOR_FIELDS: &[&str] = &["key", "shape", "values", "axes", "stage", "provenance"];

/// A tensor handed in from JS: `{key, shape, values}` with values a typed array or array.
fn tensor_from_js(item: &JsValue) -> Result<(String, JsTensor), JsError> {
    let get = |name: &str| {
        js_sys::Reflect::get(item, &JsValue::from_str(name))
            .map_err(|_| JsError::new("tensor is not an object"))
    };
    let key: String = from_js("tensor key", get("key")?)?;
    if let Some(obj) = item.dyn_ref::<js_sys::Object>() {
        for name in js_sys::Object::keys(obj).iter() {
            let name = name.as_string().unwrap_or_default();
            if !TENSOR_FIELDS.contains(&name.as_str()) {
                return Err(coded(
                    codes::UNKNOWN_OPTION,
                    format!(
                        "tensor {key:?}: unknown field {name:?}, expected one of {}",
                        TENSOR_FIELDS.join(", ")
                    ),
                ));
            }
        }
    }
    let shape: Vec<usize> = from_js(&format!("shape of {key}"), get("shape")?)?;
    let optional = |name: &str| -> Result<Option<JsValue>, JsError> {
        let v = get(name)?;
        Ok((!v.is_undefined() && !v.is_null()).then_some(v))
    };
    let axes: Option<Vec<String>> = optional("axes")?
        .map(|v| from_js(&format!("axes of {key}"), v))
        .transpose()?;
    if let Some(a) = &axes {
        if a.len() != shape.len() {
            return Err(JsError::new(&format!(
                "tensor {key:?}: {} axis names for {} dimensions (shape {shape:?})",
                a.len(),
                shape.len()
            )));
        }
    }
    let stage: Option<String> = optional("stage")?
        .map(|v| from_js(&format!("stage of {key}"), v))
        .transpose()?;
    let provenance: Option<String> = optional("provenance")?
        .map(|v| from_js(&format!("provenance of {key}"), v))
        .transpose()?;
    let values = get("values")?;
    let values = if let Some(a) = values.dyn_ref::<js_sys::Float32Array>() {
        JsValues::F32(a.clone())
    } else if let Some(a) = values.dyn_ref::<js_sys::Float64Array>() {
        JsValues::F64(a.clone())
    } else if let Some(a) = values.dyn_ref::<js_sys::Int32Array>() {
        JsValues::I32(a.clone())
    } else if let Some(a) = values.dyn_ref::<js_sys::Uint8Array>() {
        JsValues::U8(a.clone())
    } else {
        JsValues::Plain(from_js(&format!("values of {key}"), values)?)
    };
    let len = values.len();
    let fills = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) == Some(len);
    if !fills {
        return Err(JsError::new(&format!(
            "tensor {key:?}: {len} values do not fill shape {shape:?}"
        )));
    }
    Ok((
        key,
        JsTensor {
            shape,
            values,
            axes,
            stage,
            provenance,
        },
    ))
}

/// Tensors handed in from JS, as a source: each is copied into wasm memory only when a spec
/// reads it, and dropped after its pass, so unselected tensors are never copied and at most
/// one is held at a time; a float32 one is streamed in blocks instead, never held whole.
/// Keys in sorted order, a later tensor replacing an earlier one of the same key (as
/// [`crate::HookSource`]).
struct JsTensors(
    std::collections::BTreeMap<String, JsTensor>,
    Option<super::helpers::JsPool>,
);

impl crate::TensorSource for JsTensors {
    fn list(&self) -> Result<Vec<String>, crate::observe::source::SourceError> {
        Ok(self.0.keys().cloned().collect())
    }

    fn read(
        &self,
        key: &str,
    ) -> Result<std::borrow::Cow<'_, crate::TypedTensor>, crate::observe::source::SourceError> {
        let t = self
            .0
            .get(key)
            .ok_or_else(|| crate::observe::source::SourceError::NotFound { key: key.into() })?;
        let data = t.values.copy();
        let provenance = crate::tensor::Provenance {
            file: t.provenance.clone().unwrap_or_else(|| "<js>".into()),
            key: key.into(),
            dtype: data.dtype().name().into(),
        };
        let len = data.len();
        crate::TypedTensor::new(data, t.shape.clone(), provenance)
            .map(|mut typed| {
                typed.axes = t.axes.clone();
                typed.stage = t.stage.clone();
                std::borrow::Cow::Owned(typed)
            })
            .ok_or_else(|| crate::observe::source::SourceError::BadTensor {
                key: key.into(),
                len,
                shape: t.shape.clone(),
            })
    }

    /// A float32 tensor is streamed, so that it is never held whole in wasm memory.
    fn stream_f32(&self, key: &str) -> Option<&dyn crate::observe::source::F32Stream> {
        let t = self.0.get(key)?;
        matches!(t.values, JsValues::F32(_)).then_some(t as &dyn crate::observe::source::F32Stream)
    }

    fn helpers(&self) -> Option<&dyn BlockHelpers> {
        self.1.as_ref().map(|_| self as &dyn BlockHelpers)
    }
}

/// The pool's calls, for the tensor under a key.
impl BlockHelpers for JsTensors {
    fn min_len(&self) -> usize {
        self.1.as_ref().map_or(usize::MAX, |p| p.min_len())
    }

    fn start(&self, key: &str, kind: BlockKind, block_len: usize, blocks: usize) -> bool {
        let (Some(pool), Some(t)) = (&self.1, self.0.get(key)) else {
            return false;
        };
        let JsValues::F32(values) = &t.values else {
            return false;
        };
        pool.start(values, kind, block_len, blocks)
    }

    fn claim(&self) -> bool {
        self.1.as_ref().is_some_and(|p| p.claim())
    }

    fn finish(&self, first: usize) -> Vec<f64> {
        self.1.as_ref().map_or_else(Vec::new, |p| p.finish(first))
    }
}

/// A float32 tensor in JS memory, copied into wasm memory a block at a time by the engine.
impl crate::observe::source::F32Stream for JsTensor {
    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn copy_f32(&self, start: usize, out: &mut [f32]) {
        if let JsValues::F32(a) = &self.values {
            let end = start + out.len();
            a.subarray(start as u32, end as u32).copy_to(out);
        }
    }
}

/// What `observeTensors` returns.
#[derive(Serialize)]
struct ObservedJs {
    step: u64,
    values: std::collections::BTreeMap<String, crate::Value>,
    skipped: Vec<crate::observe::runtime::Skipped>,
    failed: Vec<String>,
}

/// Options of the `observe*` calls: `{budget: {maxComputeMs}}`, the seed's
/// `Budget(max_compute_ms=…)` over the specs' declared `budget_hint.compute_ms`.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ObserveOpts {
    budget: Option<BudgetJs>,
}

/// `Budget(max_compute_ms)`: a cap on the sum of the declared hints (nothing is timed).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct BudgetJs {
    max_compute_ms: f64,
}

/// Observe specs over tensors handed in: `observeTensors(tensors, specs, step?, options?)` with
/// `tensors = [{key: "param.fc1.weight", shape: [2, 3], values: Float32Array}]`; returns
/// `{step, values: {id: value}, skipped, failed}`. Every key is read once, every reduction
/// over one tensor runs in one pass, as natively; a tensor's values are copied into wasm
/// memory only if a spec selects it, one tensor at a time (a Float32Array a block at a time).
#[wasm_bindgen(js_name = observeTensors)]
pub fn observe_tensors(
    tensors: JsValue,
    specs: JsValue,
    step: Option<f64>,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    with_code(|| observe_tensors_inner(tensors, specs, step, options))
}

fn observe_tensors_inner(
    tensors: JsValue,
    specs: JsValue,
    step: Option<f64>,
    options: JsValue,
) -> Result<JsValue, JsError> {
    let items = tensors
        .dyn_ref::<js_sys::Array>()
        .ok_or_else(|| JsError::new("tensors must be an array of {key, shape, values}"))?;
    let mut source = JsTensors(Default::default(), super::helpers::pool());
    for item in items.iter() {
        let (key, tensor) = tensor_from_js(&item)?;
        source.0.insert(key, tensor);
    }
    observe_source(&source, specs, step, options)
}

/// The specs of an `observe*` call: each a spec object, or an `{id, spec}` pair as `generate`
/// gives it (its id checked against the spec's, so a pair edited by hand cannot lie).
fn specs_from_js(specs: JsValue) -> Result<Vec<ObservableSpec>, JsError> {
    let items: Vec<serde_json::Value> = from_js("specs", specs)?;
    items
        .into_iter()
        .map(|item| {
            let pair = match &item {
                serde_json::Value::Object(m)
                    if m.len() == 2 && m.contains_key("id") && m.contains_key("spec") =>
                {
                    Some((m.get("id").cloned(), m.get("spec").cloned()))
                }
                _ => None,
            };
            let (id, spec) = match pair {
                Some((id, Some(spec))) => (id, spec),
                _ => (None, item),
            };
            let spec: ObservableSpec =
                serde_json::from_value(spec).map_err(|e| option_error("specs", e))?;
            if let Some(id) = id {
                let own = spec.id().map_err(js_err)?;
                if id.as_str() != Some(own.as_str()) {
                    return Err(JsError::new(&format!(
                        "specs: the pair's id {id} is not its spec's id {own:?}"
                    )));
                }
            }
            Ok(spec)
        })
        .collect()
}

/// Run specs (a JS array) over a source at a step; the shared tail of the `observe*` exports.
fn observe_source(
    source: &dyn crate::TensorSource,
    specs: JsValue,
    step: Option<f64>,
    options: JsValue,
) -> Result<JsValue, JsError> {
    let opts: ObserveOpts = super::call::call_opts("observe", options)?;
    let specs = specs_from_js(specs)?;
    let pack = specs
        .into_iter()
        .map(crate::Observable::builtin)
        .collect::<Result<crate::Pack, _>>()
        .map_err(js_err)?;
    let mut runtime = crate::Runtime::new(pack).map_err(js_err)?;
    if let Some(b) = opts.budget {
        if !(b.max_compute_ms >= 0.0 && b.max_compute_ms.is_finite()) {
            return Err(JsError::new(&format!(
                "budget: maxComputeMs {} is not a finite number >= 0",
                b.max_compute_ms
            )));
        }
        runtime = runtime.with_budget(crate::observe::runtime::Budget {
            max_compute_ms: b.max_compute_ms,
        });
    }
    let step = match step {
        Some(s) if s >= 0.0 && s.fract() == 0.0 && s <= u64::MAX as f64 => s as u64,
        Some(s) => {
            return Err(JsError::new(&format!(
                "step {s} is not a whole number >= 0"
            )))
        }
        None => 0,
    };
    let obs = runtime.observe(step, source);
    to_js(&ObservedJs {
        step: obs.step,
        values: obs.values,
        skipped: obs.skipped,
        failed: obs.failed.iter().map(|e| e.to_string()).collect(),
    })
}

/// Observe specs over a tensor file's bytes (an NPZ dump, a .npy, a checkpoint):
/// `observeFile(bytes, name, specs, step?, options?)` returns `{step, values: {id: value},
/// skipped, failed}`, as `observeTensors`; entries are read from the bytes only when a spec
/// needs them.
#[wasm_bindgen(js_name = observeFile)]
pub fn observe_file(
    bytes: JsValue,
    name: &str,
    specs: JsValue,
    step: Option<f64>,
    options: JsValue,
) -> Result<JsValue, JsValue> {
    with_code(|| {
        let file = crate::tensor::TensorFile::open(name, JsSource::new(bytes, "observeFile")?)
            .map_err(js_err)?;
        observe_source(&crate::FileSource::new(file), specs, step, options)
    })
}

fn window(name: &str, w: f64) -> Result<usize, JsError> {
    if w >= 1.0 && w.fract() == 0.0 && w <= u32::MAX as f64 {
        Ok(w as usize)
    } else {
        Err(JsError::new(&format!(
            "{name}: window {w} is not a whole number >= 1"
        )))
    }
}

/// `x[i] - x[i-1]` (NaN first), as a Float64Array.
#[wasm_bindgen(js_name = delta)]
pub fn delta_js(history: &[f64]) -> Vec<f64> {
    crate::observe::temporal::delta(history)
}

/// Exponential moving average with smoothing `alpha` in (0, 1].
#[wasm_bindgen(js_name = ema)]
pub fn ema_js(history: &[f64], alpha: f64) -> Result<Vec<f64>, JsError> {
    if !(alpha > 0.0 && alpha <= 1.0) {
        return Err(JsError::new(&format!(
            "ema: alpha {alpha} is not in (0, 1]"
        )));
    }
    Ok(crate::observe::temporal::ema(history, alpha))
}

/// Least-squares slope over each window (NaN before the first full window).
#[wasm_bindgen(js_name = slope)]
pub fn slope_js(history: &[f64], w: f64) -> Result<Vec<f64>, JsError> {
    Ok(crate::observe::temporal::slope(
        history,
        window("slope", w)?,
    ))
}

/// Sample standard deviation (ddof = 1) over each window.
#[wasm_bindgen(js_name = rollingStd)]
pub fn rolling_std_js(history: &[f64], w: f64) -> Result<Vec<f64>, JsError> {
    Ok(crate::observe::temporal::rolling_std(
        history,
        window("rollingStd", w)?,
    ))
}

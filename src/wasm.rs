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

/// Read a spec given as a plain object, with the core's wording for a bad one.
fn spec_from_js(spec: JsValue) -> Result<ObservableSpec, JsError> {
    serde_wasm_bindgen::from_value(spec).map_err(|e| js_err(SpecError::Json(js_message(e))))
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

// ---- observables: generate, observe tensors handed in, temporal functions ----

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
        from_js("options", options)?
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

/// A tensor handed in from JS: `{key, shape, values}` with values a typed array or array.
fn tensor_from_js(item: &JsValue) -> Result<(String, crate::TypedTensor), JsError> {
    let get = |name: &str| {
        js_sys::Reflect::get(item, &JsValue::from_str(name))
            .map_err(|_| JsError::new("tensor is not an object"))
    };
    let key: String = from_js("tensor key", get("key")?)?;
    let shape: Vec<usize> = from_js(&format!("shape of {key}"), get("shape")?)?;
    let values = get("values")?;
    let data = if let Some(a) = values.dyn_ref::<js_sys::Float32Array>() {
        crate::TensorData::F32(a.to_vec())
    } else if let Some(a) = values.dyn_ref::<js_sys::Float64Array>() {
        crate::TensorData::F64(a.to_vec())
    } else if let Some(a) = values.dyn_ref::<js_sys::Int32Array>() {
        crate::TensorData::I32(a.to_vec())
    } else if let Some(a) = values.dyn_ref::<js_sys::Uint8Array>() {
        crate::TensorData::U8(a.to_vec())
    } else {
        crate::TensorData::F64(from_js(&format!("values of {key}"), values)?)
    };
    let provenance = crate::tensor::Provenance {
        file: "<js>".into(),
        key: key.clone(),
        dtype: data.dtype().name().into(),
    };
    let len = data.len();
    let tensor = crate::TypedTensor::new(data, shape.clone(), provenance).ok_or_else(|| {
        JsError::new(&format!(
            "tensor {key:?}: {len} values do not fill shape {shape:?}"
        ))
    })?;
    Ok((key, tensor))
}

/// What `observeTensors` returns.
#[derive(Serialize)]
struct ObservedJs {
    step: u64,
    values: std::collections::BTreeMap<String, crate::Value>,
    skipped: Vec<crate::runtime::Skipped>,
    failed: Vec<String>,
}

/// Observe specs over tensors handed in: `observeTensors(tensors, specs, step?)` with
/// `tensors = [{key: "param.fc1.weight", shape: [2, 3], values: Float32Array}]`; returns
/// `{step, values: {id: value}, skipped, failed}`. Every key is read once, every reduction
/// over one tensor runs in one pass, as natively.
#[wasm_bindgen(js_name = observeTensors)]
pub fn observe_tensors(
    tensors: JsValue,
    specs: JsValue,
    step: Option<f64>,
) -> Result<JsValue, JsError> {
    let items = tensors
        .dyn_ref::<js_sys::Array>()
        .ok_or_else(|| JsError::new("tensors must be an array of {key, shape, values}"))?;
    let mut source = crate::HookSource::new();
    for item in items.iter() {
        let (key, tensor) = tensor_from_js(&item)?;
        source.put(&key, tensor);
    }
    observe_source(&source, specs, step)
}

/// Run specs (a JS array) over a source at a step; the shared tail of the `observe*` exports.
fn observe_source(
    source: &dyn crate::TensorSource,
    specs: JsValue,
    step: Option<f64>,
) -> Result<JsValue, JsError> {
    let specs: Vec<ObservableSpec> = from_js("specs", specs)?;
    let pack = specs
        .into_iter()
        .map(crate::Observable::builtin)
        .collect::<Result<crate::Pack, _>>()
        .map_err(js_err)?;
    let runtime = crate::Runtime::new(pack).map_err(js_err)?;
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
/// `observeFile(bytes, name, specs, step?)` returns `{step, values: {id: value}, skipped,
/// failed}`, as `observeTensors`; entries are read from the bytes only when a spec needs them.
#[wasm_bindgen(js_name = observeFile)]
pub fn observe_file(
    bytes: JsValue,
    name: &str,
    specs: JsValue,
    step: Option<f64>,
) -> Result<JsValue, JsError> {
    let file = crate::tensor::TensorFile::open(name, JsSource::new(bytes, "observeFile")?)
        .map_err(js_err)?;
    observe_source(&crate::FileSource::new(file), specs, step)
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
    crate::temporal::delta(history)
}

/// Exponential moving average with smoothing `alpha` in (0, 1].
#[wasm_bindgen(js_name = ema)]
pub fn ema_js(history: &[f64], alpha: f64) -> Result<Vec<f64>, JsError> {
    if !(alpha > 0.0 && alpha <= 1.0) {
        return Err(JsError::new(&format!(
            "ema: alpha {alpha} is not in (0, 1]"
        )));
    }
    Ok(crate::temporal::ema(history, alpha))
}

/// Least-squares slope over each window (NaN before the first full window).
#[wasm_bindgen(js_name = slope)]
pub fn slope_js(history: &[f64], w: f64) -> Result<Vec<f64>, JsError> {
    Ok(crate::temporal::slope(history, window("slope", w)?))
}

/// Sample standard deviation (ddof = 1) over each window.
#[wasm_bindgen(js_name = rollingStd)]
pub fn rolling_std_js(history: &[f64], w: f64) -> Result<Vec<f64>, JsError> {
    Ok(crate::temporal::rolling_std(
        history,
        window("rollingStd", w)?,
    ))
}

// ---- tensor files: listing and statistics of NPY/NPZ/.pt/safetensors bytes ----

/// Bytes left in JS memory: read by copying only the ranges asked for into wasm memory, so
/// a large file is neither copied whole nor held twice.
struct JsBytes {
    array: js_sys::Uint8Array,
    len: u64,
    pos: u64,
}

impl std::io::Read for JsBytes {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let start = self.pos.min(self.len);
        let end = start.saturating_add(buf.len() as u64).min(self.len);
        let n = (end - start) as usize;
        // Both ends are at most the array's length, which is a u32.
        self.array
            .subarray(start as u32, end as u32)
            .copy_to(&mut buf[..n]);
        self.pos = end;
        Ok(n)
    }
}

impl std::io::Seek for JsBytes {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(p) => Some(p),
            std::io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        self.pos = target;
        Ok(target)
    }
}

/// A buffered [`JsBytes`] as a tensor-file source.
struct JsSource(std::io::BufReader<JsBytes>);

impl JsSource {
    /// A source over a `Uint8Array` (a Node `Buffer` is one); anything else is an error.
    fn new(bytes: JsValue, caller: &str) -> Result<Self, JsError> {
        let array = bytes.dyn_into::<js_sys::Uint8Array>().map_err(|_| {
            JsError::new(&format!("{caller} takes the file's bytes as a Uint8Array"))
        })?;
        let len = u64::from(array.length());
        let reader = JsBytes { array, len, pos: 0 };
        Ok(JsSource(std::io::BufReader::with_capacity(1 << 16, reader)))
    }
}

impl std::io::Read for JsSource {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::io::Seek for JsSource {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.0.seek(to)
    }
}

impl crate::tensor::source::Source for JsSource {
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }
}

/// Shape, dtype and statistics of every tensor in a .npy/.npz/.pt/.safetensors file's bytes,
/// as `{key: {shape, dtype, count, nonfinite, nan, l2, l1, mean, std, min, max, absmax, zero_fraction}}`.
#[wasm_bindgen(js_name = tensorStats)]
pub fn tensor_stats(bytes: JsValue, name: &str) -> Result<JsValue, JsError> {
    let source = JsSource::new(bytes, "tensorStats")?;
    let mut file = crate::tensor::TensorFile::open(name, source).map_err(js_err)?;
    to_js(&file.summarize().map_err(js_err)?)
}

/// The tensors in a file's bytes, in file order: `[{key, shape, dtype}]`.
#[wasm_bindgen(js_name = tensorKeys)]
pub fn tensor_keys(bytes: JsValue, name: &str) -> Result<JsValue, JsError> {
    let source = JsSource::new(bytes, "tensorKeys")?;
    let file = crate::tensor::TensorFile::open(name, source).map_err(js_err)?;
    to_js(&file.entries())
}

// ---- stores: any store reachable from JS through synchronous reads, read lazily ----

use crate::store::{ListedFs, RangeSource, Store, StoreError, StoreFs, ZipFs};

/// The message of a thrown JS value: an `Error`'s message, a string, or its debug form.
fn thrown_message(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// A method of a JS object, if it has one by that name.
fn js_method(obj: &JsValue, name: &str) -> Option<js_sys::Function> {
    js_sys::Reflect::get(obj, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
}

/// A JS failure on `path` during `op` as a store error carrying the JS message.
fn js_io(path: &str, op: &'static str, message: String) -> StoreError {
    StoreError::Io {
        path: path.to_string(),
        op,
        source: std::io::Error::other(message),
    }
}

/// Call `f` on `this`; a throw becomes `Io`, a `null`/`undefined` answer `NotFound`.
fn js_call(
    f: &js_sys::Function,
    this: &JsValue,
    args: &[JsValue],
    path: &str,
    op: &'static str,
) -> crate::store::error::Result<JsValue> {
    let array: js_sys::Array = args.iter().collect();
    let v = f
        .apply(this, &array)
        .map_err(|e| js_io(path, op, thrown_message(&e)))?;
    if v.is_null() || v.is_undefined() {
        return Err(StoreError::NotFound {
            path: path.to_string(),
        });
    }
    Ok(v)
}

/// Bytes answered by JS (a `Uint8Array` or an `ArrayBuffer`), at most `cap` of them.
fn js_bytes(
    v: JsValue,
    path: &str,
    op: &'static str,
    cap: u64,
) -> crate::store::error::Result<Vec<u8>> {
    let array = if let Some(a) = v.dyn_ref::<js_sys::Uint8Array>() {
        a.clone()
    } else if v.is_instance_of::<js_sys::ArrayBuffer>() {
        js_sys::Uint8Array::new(&v)
    } else {
        return Err(js_io(path, op, "the source answered no Uint8Array".into()));
    };
    let n = u64::from(array.length()).min(cap) as u32;
    Ok(array.subarray(0, n).to_vec())
}

/// A length answered by JS: a whole number from 0 to 2^53.
fn js_len(v: JsValue, path: &str) -> crate::store::error::Result<u64> {
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0 => Ok(n as u64),
        _ => Err(js_io(
            path,
            "stat",
            format!("the source answered size {v:?}"),
        )),
    }
}

/// A store's plain files through a JS object with synchronous methods `list?(dir) ->
/// string[]`, `read(path) -> Uint8Array`, `readRange(path, offset, len) -> Uint8Array`,
/// `size(path) -> number`; `null` means the file (or folder) does not exist, a throw is an
/// error carrying its message. Without `list` the store's `listing.jsonl` is used (HTTP).
struct JsFs {
    this: JsValue,
    list: Option<js_sys::Function>,
    read: js_sys::Function,
    read_range: js_sys::Function,
    size: js_sys::Function,
}

impl JsFs {
    fn new(this: JsValue) -> Result<Self, JsError> {
        let need = |name: &str| {
            js_method(&this, name).ok_or_else(|| {
                JsError::new(&format!(
                    "a store source needs a {name} method (read, readRange, size; list optional)"
                ))
            })
        };
        Ok(JsFs {
            list: js_method(&this, "list"),
            read: need("read")?,
            read_range: need("readRange")?,
            size: need("size")?,
            this,
        })
    }
}

impl StoreFs for JsFs {
    fn list(&self, dir: &str) -> crate::store::error::Result<Vec<String>> {
        let Some(list) = &self.list else {
            return Err(js_io(dir, "list", "this source cannot list folders".into()));
        };
        let v = js_call(list, &self.this, &[JsValue::from_str(dir)], dir, "list")?;
        let array = v
            .dyn_into::<js_sys::Array>()
            .map_err(|_| js_io(dir, "list", "the source answered no array".into()))?;
        let mut out: Vec<String> = array.iter().filter_map(|n| n.as_string()).collect();
        out.sort();
        Ok(out)
    }

    fn read(&self, path: &str) -> crate::store::error::Result<Vec<u8>> {
        let v = js_call(
            &self.read,
            &self.this,
            &[JsValue::from_str(path)],
            path,
            "read",
        )?;
        js_bytes(v, path, "read", u64::MAX)
    }

    fn read_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
    ) -> crate::store::error::Result<Vec<u8>> {
        let args = [
            JsValue::from_str(path),
            JsValue::from_f64(offset as f64),
            JsValue::from_f64(len as f64),
        ];
        let v = js_call(&self.read_range, &self.this, &args, path, "read")?;
        js_bytes(v, path, "read", len)
    }

    fn len(&self, path: &str) -> crate::store::error::Result<u64> {
        let v = js_call(
            &self.size,
            &self.this,
            &[JsValue::from_str(path)],
            path,
            "stat",
        )?;
        js_len(v, path)
    }
}

/// A snapshot's bytes through JS: `{size: number, readAt(offset, len) -> Uint8Array}`, or a
/// `Uint8Array` holding the zip (read range by range in place, never copied whole).
enum JsRange {
    Reader {
        this: JsValue,
        read_at: js_sys::Function,
        size: u64,
        name: String,
    },
    Bytes(js_sys::Uint8Array),
}

impl JsRange {
    fn new(source: JsValue, name: &str) -> Result<Self, JsError> {
        if let Some(a) = source.dyn_ref::<js_sys::Uint8Array>() {
            return Ok(JsRange::Bytes(a.clone()));
        }
        let read_at = js_method(&source, "readAt").ok_or_else(|| {
            JsError::new("a snapshot is a Uint8Array or an object {size, readAt(offset, len)}")
        })?;
        let size = js_sys::Reflect::get(&source, &JsValue::from_str("size"))
            .map_err(|e| JsError::new(&thrown_message(&e)))?;
        let size = js_len(size, name).map_err(js_err)?;
        Ok(JsRange::Reader {
            this: source,
            read_at,
            size,
            name: name.to_string(),
        })
    }
}

impl RangeSource for JsRange {
    fn size(&self) -> u64 {
        match self {
            JsRange::Reader { size, .. } => *size,
            JsRange::Bytes(a) => u64::from(a.length()),
        }
    }

    fn read_at(&self, offset: u64, len: u64) -> crate::store::error::Result<Vec<u8>> {
        match self {
            JsRange::Reader {
                this,
                read_at,
                name,
                ..
            } => {
                let args = [
                    JsValue::from_f64(offset as f64),
                    JsValue::from_f64(len as f64),
                ];
                let v = js_call(read_at, this, &args, name, "read")?;
                js_bytes(v, name, "read", len)
            }
            JsRange::Bytes(a) => {
                let size = u64::from(a.length());
                let start = offset.min(size);
                let end = offset.saturating_add(len).min(size);
                // Both ends are at most the array's length, which is a u32.
                Ok(a.subarray(start as u32, end as u32).to_vec())
            }
        }
    }
}

/// An open store, read lazily through JS: only the files a call needs are read.
#[wasm_bindgen]
pub struct StoreHandle {
    store: Store<Box<dyn StoreFs>>,
}

#[wasm_bindgen]
impl StoreHandle {
    /// Open a store served as plain files by a JS source (see `JsFs`); `name` is used in
    /// messages. A newer major format, or no format file, throws.
    #[wasm_bindgen(js_name = openFiles)]
    pub fn open_files(source: JsValue, name: &str) -> Result<StoreHandle, JsError> {
        let fs = JsFs::new(source)?;
        let fs: Box<dyn StoreFs> = if fs.list.is_some() {
            Box::new(fs)
        } else {
            Box::new(ListedFs::new(fs))
        };
        let store = Store::open(fs).map_err(|e| js_err(format!("{name}: {e}")))?;
        Ok(StoreHandle { store })
    }

    /// Open a snapshot zip given as a `Uint8Array` or `{size, readAt(offset, len)}`: its
    /// central directory is read once, then each file by two range reads.
    #[wasm_bindgen(js_name = openSnapshot)]
    pub fn open_snapshot(source: JsValue, name: &str) -> Result<StoreHandle, JsError> {
        let zip = ZipFs::new(JsRange::new(source, name)?, name).map_err(js_err)?;
        let store = Store::open(Box::new(zip) as Box<dyn StoreFs>)
            .map_err(|e| js_err(format!("{name}: {e}")))?;
        Ok(StoreHandle { store })
    }

    /// Call store function `name` with its options object (see `store_call`).
    pub fn call(&self, name: &str, options: JsValue) -> Result<JsValue, JsError> {
        store_call(&self.store, name, options)
    }
}

/// Options naming a run.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RunOpts {
    run: String,
}

/// Options of `scan`: a run, and optionally only its last N forwards, or those in
/// `from..=to`, at most `limit` of them.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScanOpts {
    run: String,
    last: Option<usize>,
    from: Option<u64>,
    to: Option<u64>,
    limit: Option<usize>,
}

/// Options of `fetch`: one forward of a run, from one writer (the first that has it when
/// not given).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchOpts {
    run: String,
    forward: u64,
    writer: Option<String>,
}

/// One index row as `scan` returns it: the writer and the index line's fields.
#[derive(Serialize)]
struct Row<'a> {
    writer: &'a str,
    #[serde(flatten)]
    entry: &'a crate::store::IndexEntry,
}

/// What `scan` returns: rows in (forward, writer) order and the unreadable lines skipped.
#[derive(Serialize)]
struct ScanJs<'a> {
    rows: Vec<Row<'a>>,
    bad: Vec<String>,
}

/// What `fetch` returns: the forward's index row and its blob's contents but the tensors.
#[derive(Serialize)]
struct FetchJs<'a> {
    row: Row<'a>,
    meta: crate::store::ForwardMeta,
    facts: Vec<crate::store::Fact>,
    stats: crate::store::NodeStats,
    tensors: Vec<&'a str>,
}

/// Read a call's options object (`undefined` is `{}`).
fn call_opts<T: DeserializeOwned>(name: &str, options: JsValue) -> Result<T, JsError> {
    let options = if options.is_undefined() || options.is_null() {
        js_sys::Object::new().into()
    } else {
        options
    };
    // Through a JSON value, so that `deny_unknown_fields` sees every key the caller gave.
    let what = format!("options of {name}");
    let value: serde_json::Value = from_js(&what, options)?;
    serde_json::from_value(value).map_err(|e| JsError::new(&format!("{what}: {e}")))
}

/// The names `store_call` answers, for the message about an unknown one.
const STORE_CALLS: &[&str] = &[
    "format",
    "listRuns",
    "writers",
    "scan",
    "fetch",
    "runs",
    "forwards",
    "curve",
    "curveCosts",
    "facts",
    "nodes",
    "fleet",
    "standing",
    "figure",
    "seen",
    "diagnose",
    "history",
    "where",
    "alerts",
];

/// One call on an open store: `name` is the JS method, `options` its options object.
///
/// The pattern for every store function: one arm that reads its options with
/// `call_opts::<Opts>(name, options)?` (a `#[derive(Deserialize)] #[serde(deny_unknown_fields)]`
/// struct, camelCase names via `#[serde(rename_all = "camelCase")]`), calls the core function
/// with `store` (`&Store<F>`, any `F: StoreFs`), maps its error with `js_err`, and returns
/// `to_js(&answer)`; then add its name to `STORE_CALLS`, a one-line method to the `Store`
/// class in pkg/store.js (`foo(options) { return this.call("foo", options); }`) and its
/// type to pkg/index.d.ts. Nothing else changes: Node and the browser's worker both reach
/// every arm through `StoreHandle.call`.
fn store_call<F: StoreFs>(
    store: &Store<F>,
    name: &str,
    options: JsValue,
) -> Result<JsValue, JsError> {
    match name {
        "format" => to_js(&store.format),
        "listRuns" => to_js(&store.runs().map_err(js_err)?),
        "writers" => {
            let o: RunOpts = call_opts(name, options)?;
            to_js(&store.writers(&o.run).map_err(js_err)?)
        }
        "scan" => scan_js(store, call_opts(name, options)?),
        "fetch" => fetch_js(store, call_opts(name, options)?),
        "runs" | "forwards" | "curve" | "curveCosts" | "facts" | "nodes" | "fleet" | "standing" => {
            readback_call(store, name, options)
        }
        "figure" => figure_call(store, call_opts(name, options)?),
        "seen" | "diagnose" | "history" | "where" | "alerts" => {
            health_call(store, name, call_opts(name, options)?)
        }
        _ => Err(JsError::new(&format!(
            "no store function {name:?}; there are {}",
            STORE_CALLS.join(", ")
        ))),
    }
}

fn scan_js<F: StoreFs>(store: &Store<F>, o: ScanOpts) -> Result<JsValue, JsError> {
    let mut bad = Vec::new();
    let items = match o.last {
        Some(n) => store
            .last(&o.run, n, &mut |e| bad.push(e.to_string()))
            .map_err(js_err)?,
        None => {
            let mut items = Vec::new();
            let limit = o.limit.unwrap_or(usize::MAX);
            for item in store.scan(&o.run).map_err(js_err)? {
                match item {
                    Err(e) => bad.push(e.to_string()),
                    Ok(i) if o.to.is_some_and(|t| i.entry.forward > t) => break,
                    Ok(i) if o.from.is_some_and(|f| i.entry.forward < f) => {}
                    Ok(i) => items.push(i),
                }
                if items.len() >= limit {
                    break;
                }
            }
            items
        }
    };
    let rows = items
        .iter()
        .map(|i| Row {
            writer: &i.writer,
            entry: &i.entry,
        })
        .collect();
    to_js(&ScanJs { rows, bad })
}

fn fetch_js<F: StoreFs>(store: &Store<F>, o: FetchOpts) -> Result<JsValue, JsError> {
    let items = store.find(&o.run, o.forward).map_err(js_err)?;
    let item = items
        .iter()
        .find(|i| o.writer.as_deref().is_none_or(|w| *i.writer == *w))
        .ok_or_else(|| {
            JsError::new(&format!(
                "run {:?} has no forward {}{}",
                o.run,
                o.forward,
                o.writer
                    .as_deref()
                    .map(|w| format!(" from writer {w:?}"))
                    .unwrap_or_default()
            ))
        })?;
    let blob = store
        .fetch(&o.run, &item.writer, &item.entry)
        .map_err(js_err)?;
    to_js(&FetchJs {
        row: Row {
            writer: &item.writer,
            entry: &item.entry,
        },
        meta: blob.meta().map_err(js_err)?,
        facts: blob.facts().map_err(js_err)?,
        stats: blob.stats().map_err(js_err)?,
        tensors: blob.tensor_keys(),
    })
}

// ---- reading a record back: the seed's somatize.record over an open store ----

/// Options of the record functions: the run, and what each one takes.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RecordOpts {
    run: Option<String>,
    of: Option<String>,
    forward: Option<u64>,
    last: Option<usize>,
}

impl RecordOpts {
    /// The run, which every function but `runs` and `standing` needs.
    fn run(&self, name: &str) -> Result<&str, JsError> {
        self.run
            .as_deref()
            .ok_or_else(|| JsError::new(&format!("{name} needs {{run}}")))
    }

    fn of(&self) -> &str {
        self.of.as_deref().unwrap_or(crate::readback::DEFAULT_FIELD)
    }
}

/// `runs`, `forwards`, `curve`, `curveCosts`, `facts`, `nodes`, `fleet`, `standing`: the
/// answers as Rust gives them (`{rows, skipped}` where something can be skipped).
fn readback_call<F: StoreFs>(
    store: &Store<F>,
    name: &str,
    options: JsValue,
) -> Result<JsValue, JsError> {
    use crate::readback as rb;
    let o: RecordOpts = call_opts(name, options)?;
    match name {
        "runs" => to_js(&rb::runs(store).map_err(js_err)?),
        "forwards" => to_js(&rb::forwards(store, o.run(name)?).map_err(js_err)?),
        "curve" => to_js(&rb::curve(store, o.run(name)?, o.of()).map_err(js_err)?),
        "curveCosts" => to_js(&rb::curve_costs(store, o.run(name)?, o.of()).map_err(js_err)?),
        "facts" => {
            let forward = o
                .forward
                .ok_or_else(|| JsError::new("facts needs {run, forward}"))?;
            to_js(&rb::facts(store, o.run(name)?, forward).map_err(js_err)?)
        }
        "nodes" => to_js(&rb::nodes(store, o.run(name)?, o.last).map_err(js_err)?),
        "fleet" => to_js(&rb::fleet(store, o.run(name)?, o.last).map_err(js_err)?),
        _ => to_js(&rb::standing(store).map_err(js_err)?),
    }
}

/// Options of `figure`: which figure, of which run, and what that figure takes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FigureOpts {
    kind: String,
    run: String,
    of: Option<String>,
    smooth: Option<usize>,
    last: Option<usize>,
    forward: Option<u64>,
    thresholds: Option<serde_json::Value>,
}

/// A figure with what was skipped to draw it: Plotly's `{data, layout}` plus `skipped`.
#[derive(Serialize)]
struct FigureJs<'a, S: Serialize> {
    data: &'a [serde_json::Value],
    layout: &'a serde_json::Value,
    skipped: &'a [S],
}

fn figure_js(answer: crate::readback::Answer<crate::figures::Figure>) -> Result<JsValue, JsError> {
    let f = &answer.rows;
    to_js(&FigureJs {
        data: &f.data,
        layout: &f.layout,
        skipped: &answer.skipped,
    })
}

/// `figure({kind, run, …})`: progress, spent, gantt or machines as Plotly figure JSON.
fn figure_call<F: StoreFs>(store: &Store<F>, o: FigureOpts) -> Result<JsValue, JsError> {
    use crate::figures;
    let run = o.run.as_str();
    match o.kind.as_str() {
        "progress" => {
            let mut live = crate::readback::LiveOptions {
                smooth: o.smooth.unwrap_or(0),
                ..Default::default()
            };
            if let Some(of) = o.of {
                live.of = of;
            }
            figure_js(figures::progress::progress(store, run, live).map_err(js_err)?)
        }
        "spent" => figure_js(figures::spent::spent(store, run, o.last).map_err(js_err)?),
        "machines" => figure_js(figures::machines::machines(store, run, o.last).map_err(js_err)?),
        "gantt" => {
            let figure =
                figures::gantt::gantt(store, run, o.forward.unwrap_or(0)).map_err(js_err)?;
            figure_js(crate::readback::Answer::new(figure))
        }
        "profile" | "flags" | "overlaid" => health_figure(store, o),
        other => Err(JsError::new(&format!(
            "no figure {other:?}; there are progress, spent, gantt, machines, profile, flags, overlaid"
        ))),
    }
}

// ---- health over an open store: the seed's somatize.health ----

/// Options of the health functions: the run, how far back, the thresholds (`{name: value}`
/// overrides of the defaults), and for `history` the node and metric.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HealthOpts {
    run: String,
    last: Option<usize>,
    thresholds: Option<serde_json::Value>,
    node: Option<String>,
    of: Option<String>,
}

/// Thresholds from an optional `{name: value}` object of overrides.
fn thresholds_of(value: Option<&serde_json::Value>) -> Result<crate::verdict::Thresholds, JsError> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(crate::verdict::Thresholds::default()),
        Some(v) => crate::health::thresholds::from_value(v, "thresholds").map_err(js_err),
    }
}

/// `seen`, `diagnose`, `history`, `where`, `alerts` over a run, as the CLI's --json gives them:
/// seen `{node: {kind, metric: value}}`; diagnose `{run, forwards, diagnosis: {where: [flags]},
/// thresholds}`; history `[[forward, value]]`; where `{node: [flags]}`; alerts
/// `[{node, flag, first_forward, means, advice}]`.
fn health_call<F: StoreFs>(
    store: &Store<F>,
    name: &str,
    o: HealthOpts,
) -> Result<JsValue, JsError> {
    let h = crate::health::store::read(store, &o.run, o.last).map_err(js_err)?;
    let t = thresholds_of(o.thresholds.as_ref())?;
    match name {
        "seen" => to_js(&crate::health::json::seen_json(&h.seen())),
        "diagnose" => to_js(&h.diagnose(&t).to_json()),
        "history" => {
            let node = o
                .node
                .as_deref()
                .ok_or_else(|| JsError::new("history needs {run, node}"))?;
            to_js(&h.history(node, o.of.as_deref().unwrap_or("grad_norm")))
        }
        "where" => {
            let folded: serde_json::Map<String, serde_json::Value> = h
                .overlay(&h.diagnose(&t))
                .into_iter()
                .map(|(node, flags)| (node, serde_json::json!(flags)))
                .collect();
            to_js(&folded)
        }
        _ => to_js(&h.alerts(&h.diagnose(&t))),
    }
}

/// `figure({kind: "profile"|"flags"|"overlaid", run, of?, last?, thresholds?})`.
fn health_figure<F: StoreFs>(store: &Store<F>, o: FigureOpts) -> Result<JsValue, JsError> {
    use crate::health::store::HealthFigure;
    let kind = match o.kind.as_str() {
        "profile" => HealthFigure::Profile,
        "flags" => HealthFigure::Flags,
        _ => HealthFigure::Overlaid,
    };
    let h = crate::health::store::read(store, &o.run, o.last).map_err(js_err)?;
    let d = h.diagnose(&thresholds_of(o.thresholds.as_ref())?);
    let figure = h.figure(&d, kind, o.of.as_deref().unwrap_or("grad_norm"));
    to_js(&FigureJs {
        data: &figure.data,
        layout: &figure.layout,
        skipped: &h.skipped,
    })
}

/// The node a key belongs to (`net.2.attn` → `net.2` when `net.2` is a node), given the
/// node names: the seed's `within`.
#[wasm_bindgen]
pub fn within(key: &str, nodes: Vec<String>) -> String {
    let names: Vec<&str> = nodes.iter().map(String::as_str).collect();
    crate::health::store::within(key, &names).to_string()
}

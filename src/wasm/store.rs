//! An open store in JS (`StoreHandle`) and the dispatch of every call on it.

use super::call::{call_opts, figure_js, readback_err, FigureOpts};
use super::health::{health_call, health_figure_with, judge_call};
use super::js_fs::{JsFs, JsRange};
use super::readback::{figure_call, readback_call};
use super::*;

/// An open store, read lazily through JS: only the files a call needs are read.
#[wasm_bindgen]
pub struct StoreHandle {
    store: Store<Box<dyn StoreFs>>,
    /// What was read and is kept for the next calls (see `Kept`).
    kept: Kept,
}

/// What an open store keeps between calls: the last health read, while the run's record is
/// unchanged (asked at most once a second), and the index lines of the last `scan({last})`,
/// so that a forward among them is found without reading its index again.
#[derive(Default)]
struct Kept {
    health: std::cell::RefCell<crate::health::HealthCache>,
    lines: std::cell::RefCell<crate::readback::KeptLines>,
    /// The runs' lines the compare figure read, until the store is refreshed.
    curves: std::cell::RefCell<crate::figures::compare::KeptLines>,
}

#[wasm_bindgen]
impl StoreHandle {
    /// Open a store served as plain files by a JS source (see `JsFs`); `name` is used in
    /// messages. A newer major format, or no format file, throws.
    #[wasm_bindgen(js_name = openFiles)]
    pub fn open_files(source: JsValue, name: &str) -> Result<StoreHandle, JsValue> {
        with_code(|| Self::open_files_inner(source, name))
    }

    /// Open a snapshot zip given as a `Uint8Array` or `{size, readAt(offset, len)}`: its
    /// central directory is read once, then each file by two range reads.
    #[wasm_bindgen(js_name = openSnapshot)]
    pub fn open_snapshot(source: JsValue, name: &str) -> Result<StoreHandle, JsValue> {
        with_code(|| Self::open_snapshot_inner(source, name))
    }

    /// Call store function `name` with its options object (see `store_call`); an error has
    /// the core's message and, where one applies, a stable `code` (see `codes`).
    pub fn call(&self, name: &str, options: JsValue) -> Result<JsValue, JsValue> {
        with_code(|| store_call(&self.store, &self.kept, name, options))
    }

    /// The store's files were refreshed (files written since are seen): the next health answer
    /// asks whether the run grew, however recently that was asked.
    pub fn refreshed(&self) {
        self.kept.health.borrow_mut().recheck();
        self.kept.curves.borrow_mut().clear();
    }
}

impl StoreHandle {
    fn open_files_inner(source: JsValue, name: &str) -> Result<StoreHandle, JsError> {
        let fs = JsFs::new(source)?;
        let fs: Box<dyn StoreFs> = if fs.list.is_some() {
            Box::new(fs)
        } else {
            Box::new(ListedFs::new(fs))
        };
        let store = Store::open(fs).map_err(|e| core_err_in(name, e))?;
        Ok(StoreHandle {
            store,
            kept: Kept::default(),
        })
    }

    fn open_snapshot_inner(source: JsValue, name: &str) -> Result<StoreHandle, JsError> {
        let zip = ZipFs::new(JsRange::new(source, name)?, name).map_err(core_err)?;
        let store =
            Store::open(Box::new(zip) as Box<dyn StoreFs>).map_err(|e| core_err_in(name, e))?;
        Ok(StoreHandle {
            store,
            kept: Kept::default(),
        })
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
    "diagnosed",
    "history",
    "where",
    "alerts",
    "judge",
    "query",
    "compare",
];

/// Options of `query`: one value `observe` wrote, by exact spec id and step.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryOpts {
    run: String,
    id: String,
    step: u64,
}

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
    kept: &Kept,
    name: &str,
    options: JsValue,
) -> Result<JsValue, JsError> {
    let health = &kept.health;
    match name {
        "format" => to_js(&store.format),
        "listRuns" => to_js(&store.runs().map_err(core_err)?),
        "writers" => {
            let o: RunOpts = call_opts(name, options)?;
            to_js(&store.writers(&o.run).map_err(core_err)?)
        }
        "scan" => scan_js(store, &kept.lines, call_opts(name, options)?),
        "fetch" => fetch_js(store, call_opts(name, options)?),
        "runs" | "forwards" | "curve" | "curveCosts" | "facts" | "nodes" | "fleet" | "standing" => {
            readback_call(store, name, options)
        }
        "compare" => compare_js(store, call_opts(name, options)?),
        "figure" if figure_kind(&options) == Some("compare".into()) => {
            compare_figure_js(store, &kept.curves, call_opts(name, options)?)
        }
        "figure" => {
            let o: FigureOpts = call_opts(name, options)?;
            o.check()?;
            match o.kind.as_str() {
                "profile" | "flags" | "overlaid" => health_figure_with(store, health, o),
                "gantt" => gantt_js(store, &kept.lines.borrow(), o),
                _ => figure_call(store, o),
            }
        }
        "seen" | "diagnose" | "diagnosed" | "history" | "where" | "alerts" => {
            health_call(store, health, name, call_opts(name, options)?)
        }
        "judge" => judge_call(store, health, call_opts(name, options)?),
        "query" => {
            let o: QueryOpts = call_opts(name, options)?;
            to_js(&crate::readback::query(store, &o.run, &o.id, o.step).map_err(readback_err)?)
        }
        _ => Err(coded(
            codes::NO_SUCH_FUNCTION,
            format!(
                "no store function {name:?}; there are {}",
                STORE_CALLS.join(", ")
            ),
        )),
    }
}

/// Options of `compare`: runs matching a glob (all when not given); `lazy` leaves a run with
/// no summary unjudged (`healthy: null`, read from its indexes only).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareOpts {
    runs: Option<String>,
    #[serde(default)]
    lazy: bool,
    /// A config field: one row per value of it (`GroupSummary`) instead of one per run.
    #[serde(rename = "groupBy")]
    group_by: Option<String>,
}

fn compare_js<F: StoreFs>(store: &Store<F>, o: CompareOpts) -> Result<JsValue, JsError> {
    let options = crate::health::compare::CompareOptions {
        runs: o.runs,
        lazy: o.lazy,
    };
    let answer = crate::health::compare::compare(store, &options).map_err(core_err)?;
    match o.group_by {
        Some(field) => to_js(&crate::readback::Answer {
            rows: crate::health::compare::group(&answer.rows, &field),
            skipped: answer.skipped,
        }),
        None => to_js(&answer),
    }
}

/// The `kind` of a figure's options object, when it has a string one.
fn figure_kind(options: &JsValue) -> Option<String> {
    js_sys::Reflect::get(options, &JsValue::from_str("kind"))
        .ok()?
        .as_string()
}

/// How a compare figure is smoothed: `{ema: weight}` or `{mean: window}`.
/// Which runs a compare figure draws: a glob, or a list of names.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum RunsOpt {
    Glob(String),
    Names(Vec<String>),
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CompareFigureOpts {
    kind: String,
    runs: Option<RunsOpt>,
    of: Option<String>,
    /// TensorBoard's EMA weight in [0, 1).
    ema: Option<f64>,
    /// A rolling mean's window (0: none).
    smooth: Option<usize>,
    /// `forward` (default), `wall` or `relative`.
    x: Option<String>,
    #[serde(default)]
    log_y: bool,
    #[serde(default)]
    group_by: Vec<String>,
    /// A config field: one group per value of it.
    group_config: Option<String>,
    max_points: Option<usize>,
}

fn compare_figure_js<F: StoreFs>(
    store: &Store<F>,
    curves: &std::cell::RefCell<crate::figures::compare::KeptLines>,
    o: CompareFigureOpts,
) -> Result<JsValue, JsError> {
    use crate::figures::compare::{check, compare_kept, CompareFigure, Smooth, XAxis};
    let _ = o.kind;
    let smooth = match (o.ema, o.smooth.unwrap_or(0)) {
        (Some(_), n) if n > 0 => return Err(js_err("compare: give ema or smooth, not both")),
        (Some(w), _) => Smooth::Ema(w),
        (None, 0) => Smooth::None,
        (None, n) => Smooth::Mean(n),
    };
    let x = match o.x.as_deref() {
        None => XAxis::Forward,
        Some(s) => XAxis::parse(s).ok_or_else(|| {
            js_err(format!(
                "compare: x is forward, wall or relative, not {s:?}"
            ))
        })?,
    };
    let defaults = CompareFigure::default();
    let (runs, names) = match o.runs {
        None => (None, Vec::new()),
        Some(RunsOpt::Glob(g)) => (Some(g), Vec::new()),
        // No run chosen draws none (an empty list is not "every run").
        Some(RunsOpt::Names(n)) if n.is_empty() => (Some(String::new()), n),
        Some(RunsOpt::Names(n)) => (None, n),
    };
    let options = CompareFigure {
        runs,
        names,
        of: o.of.unwrap_or(defaults.of),
        smooth,
        x,
        log_y: o.log_y,
        group_by: o.group_by,
        max_points: o.max_points.unwrap_or(defaults.max_points),
        group_config: o.group_config,
        sketches: true,
    };
    check(&options).map_err(|e| js_err(format!("compare: {e}")))?;
    let answer = compare_kept(store, &options, &mut curves.borrow_mut()).map_err(core_err)?;
    figure_js(answer)
}

fn scan_js<F: StoreFs>(
    store: &Store<F>,
    lines: &std::cell::RefCell<crate::readback::KeptLines>,
    o: ScanOpts,
) -> Result<JsValue, JsError> {
    let mut bad = Vec::new();
    let items = match o.last {
        Some(n) => {
            let folders = store.writer_folders(&o.run).map_err(core_err)?;
            let items = store
                .last(&o.run, n, &mut |e| bad.push(e.to_string()))
                .map_err(core_err)?;
            if bad.is_empty() {
                lines.borrow_mut().keep(&o.run, folders, &items);
            }
            items
        }
        None => {
            let mut items = Vec::new();
            let limit = o.limit.unwrap_or(usize::MAX);
            for item in store.scan(&o.run).map_err(core_err)? {
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

/// `figure({kind: "gantt", run, forward})`, the forward's lines taken from those kept by the
/// last `scan({last})` when they say for certain (the same figure, no read of the index).
fn gantt_js<F: StoreFs>(
    store: &Store<F>,
    lines: &crate::readback::KeptLines,
    o: FigureOpts,
) -> Result<JsValue, JsError> {
    let figure = crate::figures::gantt::gantt_kept(store, &o.run, o.forward.unwrap_or(0), lines)
        .map_err(core_err)?;
    figure_js(crate::readback::Answer::new(figure))
}

fn fetch_js<F: StoreFs>(store: &Store<F>, o: FetchOpts) -> Result<JsValue, JsError> {
    let items = store.find(&o.run, o.forward).map_err(core_err)?;
    let item = items
        .iter()
        .find(|i| o.writer.as_deref().is_none_or(|w| *i.writer == *w))
        .ok_or_else(|| {
            coded(
                codes::NO_SUCH_FORWARD,
                format!(
                    "run {:?} has no forward {}{}",
                    o.run,
                    o.forward,
                    o.writer
                        .as_deref()
                        .map(|w| format!(" from writer {w:?}"))
                        .unwrap_or_default()
                ),
            )
        })?;
    let blob = store
        .fetch(&o.run, &item.writer, &item.entry)
        .map_err(core_err)?;
    to_js(&FetchJs {
        row: Row {
            writer: &item.writer,
            entry: &item.entry,
        },
        meta: blob.meta().map_err(core_err)?,
        facts: blob.facts().map_err(core_err)?,
        stats: blob.stats().map_err(core_err)?,
        tensors: blob.tensor_keys(),
    })
}

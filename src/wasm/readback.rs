//! Reading a record back from JS: the seed's somatize.record and its figures over an open store.

use super::call::{call_opts, curve_to_js, figure_js, readback_err, rows_and_skipped, FigureOpts};
use super::health::health_figure;
use super::*;
use crate::readback::lines::Line;
use crate::store::Field;

/// Options of the record functions: the run, and what each one takes.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordOpts {
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
            .ok_or_else(|| coded(codes::BAD_OPTION, format!("{name} needs {{run}}")))
    }

    fn of(&self) -> &str {
        self.of.as_deref().unwrap_or(crate::readback::DEFAULT_FIELD)
    }
}

/// `runs`, `forwards`, `curve`, `curveCosts`, `facts`, `nodes`, `fleet`, `standing`: the
/// answers as Rust gives them (`{rows, skipped}` where something can be skipped).
pub(super) fn readback_call<F: StoreFs>(
    store: &Store<F>,
    name: &str,
    options: JsValue,
) -> Result<JsValue, JsError> {
    use crate::readback as rb;
    let o: RecordOpts = call_opts(name, options)?;
    // An option the function does not take is an error naming it, never ignored.
    let takes: &[&str] = match name {
        "runs" | "standing" => &[],
        "forwards" => &["run"],
        "curve" | "curveCosts" => &["run", "of"],
        "facts" => &["run", "forward"],
        _ => &["run", "last"],
    };
    for (given, field) in [
        (o.run.is_some(), "run"),
        (o.of.is_some(), "of"),
        (o.forward.is_some(), "forward"),
        (o.last.is_some(), "last"),
    ] {
        if given && !takes.contains(&field) {
            return Err(coded(
                codes::UNKNOWN_OPTION,
                format!(
                    "options of {name}: unknown field `{field}`, expected {}",
                    if takes.is_empty() {
                        "none".to_string()
                    } else {
                        takes.join(", ")
                    }
                ),
            ));
        }
    }
    match name {
        "runs" => to_js(&rb::runs(store).map_err(readback_err)?),
        "forwards" => forwards_to_js(store, o.run(name)?),
        "curve" => curve_to_js(&rb::curve(store, o.run(name)?, o.of()).map_err(readback_err)?),
        "curveCosts" => to_js(&rb::curve_costs(store, o.run(name)?, o.of()).map_err(readback_err)?),
        "facts" => {
            let forward = o
                .forward
                .ok_or_else(|| coded(codes::BAD_OPTION, "facts needs {run, forward}"))?;
            to_js(&rb::facts(store, o.run(name)?, forward).map_err(readback_err)?)
        }
        "nodes" => to_js(&rb::nodes(store, o.run(name)?, o.last).map_err(readback_err)?),
        "fleet" => to_js(&rb::fleet(store, o.run(name)?, o.last).map_err(readback_err)?),
        _ => to_js(&rb::standing(store).map_err(readback_err)?),
    }
}

/// `figure({kind, run, …})`: progress, spent, gantt or machines as Plotly figure JSON.
pub(super) fn figure_call<F: StoreFs>(store: &Store<F>, o: FigureOpts) -> Result<JsValue, JsError> {
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
            figure_js(figures::progress::progress(store, run, live).map_err(readback_err)?)
        }
        "spent" => figure_js(figures::spent::spent(store, run, o.last).map_err(readback_err)?),
        "machines" => figure_js(figures::machines::machines(store, run, o.last).map_err(readback_err)?),
        "gantt" => {
            let figure =
                figures::gantt::gantt(store, run, o.forward.unwrap_or(0)).map_err(readback_err)?;
            figure_js(crate::readback::Answer::new(figure))
        }
        "profile" | "flags" | "overlaid" => health_figure(store, o),
        other => Err(JsError::new(&format!(
            "no figure {other:?}; there are progress, spent, gantt, machines, profile, flags, overlaid"
        ))),
    }
}

// Builds forwards' rows in JS from columns (see `ForwardColumns`), where making an object costs
// nanoseconds; keys are set in the order the core serialises them, so each row is the object
// `JSON.parse` would make of the row's JSON. In pkg/forward-rows.js, which the Node entry also
// imports: its store worker answers the columns (`use_row_columns`) and the rows are built on
// the calling thread, a part at a time.
#[wasm_bindgen(module = "/pkg/forward-rows.js")]
extern "C" {
    #[wasm_bindgen(js_name = forwardRows)]
    fn forward_rows(
        n: usize,
        nums: &[f64],
        ints: &[u32],
        writers: JsValue,
        names: JsValue,
        errors: JsValue,
        texts: &str,
    ) -> js_sys::Array;
}

/// Forwards' rows as columns for `forwardRows`, made straight from the index lines (no row is
/// kept in wasm memory): `nums` holds forward, written_us and took_us (n each; integers below
/// 2^53, so exact as JS numbers, as JSON.parse reads them), then each field's value where JS's
/// `String(value)` writes the text `Field::to_text` would (NaN elsewhere); `ints` holds each
/// row's writer (an index into `writers`), its number of fields and whether it broke (n
/// each), then each field's name (an index into `names`), then where its text ends in `texts`
/// (in UTF-16 units, as JS strings count; the other fields' texts); `errors` is `[row, error]`
/// for rows that have one.
#[derive(Default)]
struct ForwardColumns {
    forward: Vec<f64>,
    written: Vec<f64>,
    took: Vec<f64>,
    writer: Vec<u32>,
    counts: Vec<u32>,
    broke: Vec<u32>,
    writers: Names,
    names: Names,
    errors: Vec<(usize, String)>,
    values: Vec<f64>,
    field_names: Vec<u32>,
    ends: Vec<u32>,
    texts: String,
    /// `texts`' length in UTF-16 units.
    units: usize,
    /// The first error met (a text over 4 GiB).
    failed: Option<JsError>,
}

/// Distinct names in order of first use (the last one found is tried first).
#[derive(Default)]
struct Names {
    all: Vec<String>,
    last: usize,
}

impl Names {
    fn index(&mut self, name: &str) -> u32 {
        if self.all.get(self.last).map(String::as_str) != Some(name) {
            self.last = match self.all.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    self.all.push(name.to_string());
                    self.all.len() - 1
                }
            };
        }
        self.last as u32
    }
}

impl ForwardColumns {
    /// Add one forward's row.
    fn push_line(&mut self, l: &Line<'_>) {
        let i = self.forward.len();
        self.forward.push(l.forward as f64);
        self.written.push(l.written_us as f64);
        self.took.push(l.took_us as f64);
        let writer = self.writers.index(l.writer);
        self.writer.push(writer);
        self.broke.push(u32::from(l.broke));
        if let Some(e) = l.error {
            self.errors.push((i, e.to_string()));
        }
        let mut count = 0u32;
        l.fields.each(&mut |name, value| {
            let name = self.names.index(name);
            self.field_names.push(name);
            if let Err(e) = self.push_text(&value) {
                self.failed.get_or_insert(e);
            }
            count += 1;
        });
        self.counts.push(count);
    }

    /// A field's value for JS to write, or its text (as `Field::to_text` gives it) after
    /// those already held.
    fn push_text(&mut self, value: &Field<'_>) -> Result<(), JsError> {
        match value {
            Field::Num(v) if same_in_js(*v) => self.values.push(*v),
            other => {
                self.values.push(f64::NAN);
                let text = other.to_text();
                self.texts.push_str(&text);
                self.units += if text.is_ascii() {
                    text.len()
                } else {
                    text.encode_utf16().count()
                };
            }
        }
        let end = u32::try_from(self.units)
            .map_err(|_| JsError::new("forwards: the fields' text is over 4 GiB"))?;
        self.ends.push(end);
        Ok(())
    }

    /// The rows, made in JS; or, where the answer crosses to another thread
    /// (`use_row_columns`), `{columns: [n, nums, ints, writers, names, errors, texts]}`, the
    /// arguments of `forwardRows` there.
    fn into_rows(self) -> Result<JsValue, JsError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let n = self.forward.len();
        let mut nums = self.forward;
        for mut more in [self.written, self.took, self.values] {
            nums.append(&mut more);
        }
        let mut ints = self.writer;
        for mut more in [self.counts, self.broke, self.field_names, self.ends] {
            ints.append(&mut more);
        }
        let (writers, names, errors) = (
            to_js(&self.writers.all)?,
            to_js(&self.names.all)?,
            to_js(&self.errors)?,
        );
        if ROW_COLUMNS.with(std::cell::Cell::get) {
            let columns = js_sys::Array::new();
            for item in [
                JsValue::from_f64(n as f64),
                js_sys::Float64Array::from(&nums[..]).into(),
                js_sys::Uint32Array::from(&ints[..]).into(),
                writers,
                names,
                errors,
                JsValue::from_str(&self.texts),
            ] {
                columns.push(&item);
            }
            let out = js_sys::Object::new();
            // Setting a property on a fresh object cannot fail.
            let _ = js_sys::Reflect::set(&out, &"columns".into(), &columns);
            return Ok(out.into());
        }
        Ok(forward_rows(n, &nums, &ints, writers, names, errors, &self.texts).into())
    }
}

thread_local! {
    /// Whether `forwards` answers its rows as columns (see `use_row_columns`).
    static ROW_COLUMNS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Answer `forwards`' rows as the columns `forwardRows` (pkg/forward-rows.js) builds them from,
/// not as row objects: for a worker whose answers cross to another thread, where typed arrays
/// cross at the cost of a copy and row objects at many times the cost of making them.
#[wasm_bindgen(js_name = useRowColumns)]
pub fn use_row_columns(on: bool) {
    ROW_COLUMNS.with(|c| c.set(on));
}

/// Whether JS's `String(v)` writes `v` as Rust's `{v}` does: both write the shortest digits
/// that read back as `v` (the nearer to `v` of two), and without an exponent from 1e-6 up to
/// 1e21, where JS uses one and Rust does not; JS writes -0 as `0`.
fn same_in_js(v: f64) -> bool {
    let a = v.abs();
    (v == 0.0 && v.is_sign_positive()) || ((1e-6..1e21).contains(&a))
}

/// `forwards`' `{rows, skipped}` as a plain JS value, the same value `to_js` would give of
/// `readback::forwards`: the same walk, its rows crossing as columns (views of wasm memory,
/// one string of the fields' texts that JS does not write) and built in JS.
fn forwards_to_js<F: StoreFs>(store: &Store<F>, run: &str) -> Result<JsValue, JsError> {
    let mut columns = ForwardColumns::default();
    let mut skipped = Vec::new();
    crate::readback::forwards::each_forward(store, run, &mut skipped, &mut |l| {
        columns.push_line(l)
    })
    .map_err(readback_err)?;
    rows_and_skipped(&columns.into_rows()?, &skipped)
}

//! Reading a record back from JS: the seed's somatize.record and its figures over an open store.

use super::health::health_figure;
use super::store::{call_opts, curve_to_js, rows_and_skipped};
use super::*;
use crate::readback::{Answer, ForwardRow};
use crate::store::Field;
use std::sync::Arc;

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
            .ok_or_else(|| JsError::new(&format!("{name} needs {{run}}")))
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
    match name {
        "runs" => to_js(&rb::runs(store).map_err(js_err)?),
        "forwards" => forwards_to_js(&rb::forwards(store, o.run(name)?).map_err(js_err)?),
        "curve" => curve_to_js(&rb::curve(store, o.run(name)?, o.of()).map_err(js_err)?),
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
pub(super) struct FigureOpts {
    pub(super) kind: String,
    pub(super) run: String,
    pub(super) of: Option<String>,
    pub(super) smooth: Option<usize>,
    pub(super) last: Option<usize>,
    pub(super) forward: Option<u64>,
    pub(super) thresholds: Option<serde_json::Value>,
}

/// A figure with what was skipped to draw it: Plotly's `{data, layout}` plus `skipped`.
#[derive(Serialize)]
pub(super) struct FigureJs<'a, S: Serialize> {
    pub(super) data: &'a [serde_json::Value],
    pub(super) layout: &'a serde_json::Value,
    pub(super) skipped: &'a [S],
}

pub(super) fn figure_js(
    answer: crate::readback::Answer<crate::figures::Figure>,
) -> Result<JsValue, JsError> {
    let f = &answer.rows;
    to_js(&FigureJs {
        data: &f.data,
        layout: &f.layout,
        skipped: &answer.skipped,
    })
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

// Builds forwards' rows in JS from columns (see `ForwardColumns`), where making an object costs
// nanoseconds; keys are set in the order the core serialises them, so each row is the object
// `JSON.parse` would make of the row's JSON (`__proto__` as an own key, as JSON.parse makes it).
#[wasm_bindgen(
    inline_js = "export function forwardRows(n, nums, ints, writers, names, errors, texts) {
  const m = (ints.length - 3 * n) / 2;
  const rows = new Array(n);
  let e = 0;
  let errorAt = errors.length > 0 ? errors[0][0] : -1;
  let f = 0;
  let at = 0;
  for (let i = 0; i < n; i++) {
    const row = { forward: nums[i], writer: writers[ints[i]], written_us: nums[n + i], took_us: nums[2 * n + i], broke: ints[2 * n + i] !== 0 };
    if (i === errorAt) {
      row.error = errors[e][1];
      e++;
      errorAt = e < errors.length ? errors[e][0] : -1;
    }
    for (let k = ints[n + i]; k > 0; k--, f++) {
      const name = names[ints[3 * n + f]];
      const end = ints[3 * n + m + f];
      const v = nums[3 * n + f];
      const text = v === v ? String(v) : texts.slice(at, end);
      at = end;
      if (name === '__proto__') Object.defineProperty(row, name, { value: text, writable: true, enumerable: true, configurable: true });
      else row[name] = text;
    }
    rows[i] = row;
  }
  return rows;
}"
)]
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

/// Forwards' rows as columns for `forwardRows`: `nums` holds forward, written_us and took_us
/// (n each; integers below 2^53, so exact as JS numbers, as JSON.parse reads them), then each
/// field's value where JS's `String(value)` writes the text `Field::to_text` would (NaN
/// elsewhere); `ints` holds each row's writer (an index into `writers`), its number of fields
/// and whether it broke (n each), then each field's name (an index into `names`), then where
/// its text ends in `texts` (in UTF-16 units, as JS strings count; the other fields' texts);
/// `errors` is `[row, error]` for rows that have one.
#[derive(Default)]
struct ForwardColumns<'a> {
    nums: Vec<f64>,
    ints: Vec<u32>,
    writers: Names<'a>,
    names: Names<'a>,
    errors: Vec<(usize, &'a str)>,
    values: Vec<f64>,
    field_names: Vec<u32>,
    ends: Vec<u32>,
    texts: String,
    /// `texts`' length in UTF-16 units.
    units: usize,
}

/// Distinct names in order of first use; rows share each name's `Arc`, so most are found by
/// pointer.
#[derive(Default)]
struct Names<'a>(Vec<&'a Arc<str>>);

impl<'a> Names<'a> {
    fn index(&mut self, name: &'a Arc<str>) -> u32 {
        let found = self
            .0
            .iter()
            .position(|n| Arc::ptr_eq(n, name))
            .or_else(|| self.0.iter().position(|n| n.as_ref() == name.as_ref()));
        let i = found.unwrap_or_else(|| {
            self.0.push(name);
            self.0.len() - 1
        });
        i as u32
    }

    fn to_js(&self) -> Result<JsValue, JsError> {
        let names: Vec<&str> = self.0.iter().map(|n| n.as_ref()).collect();
        to_js(&names)
    }
}

impl<'a> ForwardColumns<'a> {
    fn new(rows: &'a [ForwardRow]) -> Result<Self, JsError> {
        let n = rows.len();
        let mut c = ForwardColumns {
            nums: vec![0.0; 3 * n],
            ints: vec![0; 3 * n],
            ..Default::default()
        };
        for (i, r) in rows.iter().enumerate() {
            c.nums[i] = r.forward as f64;
            c.nums[n + i] = r.written_us as f64;
            c.nums[2 * n + i] = r.took_us as f64;
            c.ints[i] = c.writers.index(&r.writer);
            c.ints[2 * n + i] = u32::from(r.broke);
            if let Some(e) = &r.error {
                c.errors.push((i, e));
            }
            let mut count = 0u32;
            for (name, value) in &r.fields {
                let name = c.names.index(name);
                c.field_names.push(name);
                c.push_text(value)?;
                count += 1;
            }
            c.ints[n + i] = count;
        }
        c.nums.append(&mut c.values);
        c.ints.append(&mut c.field_names);
        c.ints.append(&mut c.ends);
        Ok(c)
    }

    /// A field's value for JS to write, or its text (as `Field::to_text` gives it) after
    /// those already held.
    fn push_text(&mut self, value: &Field<'static>) -> Result<(), JsError> {
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
}

/// Whether JS's `String(v)` writes `v` as Rust's `{v}` does: both write the shortest digits
/// that read back as `v` (the nearer to `v` of two), and without an exponent from 1e-6 up to
/// 1e21, where JS uses one and Rust does not; JS writes -0 as `0`.
fn same_in_js(v: f64) -> bool {
    let a = v.abs();
    (v == 0.0 && v.is_sign_positive()) || ((1e-6..1e21).contains(&a))
}

/// `forwards`' `{rows, skipped}` as a plain JS value, the same value `to_js` gives: the rows
/// cross as columns (views of wasm memory, one string of every field's text) and are built
/// in JS.
fn forwards_to_js(answer: &Answer<Vec<ForwardRow>>) -> Result<JsValue, JsError> {
    let c = ForwardColumns::new(&answer.rows)?;
    let rows = forward_rows(
        answer.rows.len(),
        &c.nums,
        &c.ints,
        c.writers.to_js()?,
        c.names.to_js()?,
        to_js(&c.errors)?,
        &c.texts,
    );
    rows_and_skipped(&rows, &answer.skipped)
}

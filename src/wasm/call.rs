//! What the store's calls share: a call's options, record errors, curves and figures as JS values.

use super::*;

/// Read a call's options object (`undefined` is `{}`).
pub(super) fn call_opts<T: DeserializeOwned>(name: &str, options: JsValue) -> Result<T, JsError> {
    let options = if options.is_undefined() || options.is_null() {
        js_sys::Object::new().into()
    } else {
        options
    };
    // Through a JSON value, so that `deny_unknown_fields` sees every key the caller gave.
    let what = format!("options of {name}");
    let value: serde_json::Value = from_js(&what, options)?;
    serde_json::from_value(value).map_err(|e| option_error(&what, e))
}

/// A record error as a JS error with its code (a missing run is `NO_SUCH_RUN`).
pub(super) fn readback_err(e: crate::readback::ReadbackError) -> JsError {
    core_err(e)
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

impl FigureOpts {
    /// Refuse an option this kind of figure does not take, naming it (never ignored).
    pub(super) fn check(&self) -> Result<(), JsError> {
        let takes: &[&str] = match self.kind.as_str() {
            "progress" => &["of", "smooth"],
            "spent" | "machines" => &["last"],
            "gantt" => &["forward"],
            "profile" => &["of", "last", "thresholds"],
            "flags" | "overlaid" => &["last", "thresholds"],
            _ => return Ok(()), // an unknown kind is refused by name where it is drawn
        };
        for (given, field) in [
            (self.of.is_some(), "of"),
            (self.smooth.is_some(), "smooth"),
            (self.last.is_some(), "last"),
            (self.forward.is_some(), "forward"),
            (self.thresholds.is_some(), "thresholds"),
        ] {
            if given && !takes.contains(&field) {
                return Err(coded(
                    codes::UNKNOWN_OPTION,
                    format!(
                        "options of figure {:?}: unknown field `{field}`, expected {}",
                        self.kind,
                        takes.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
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

// Pairs a curve's two columns into `[forward, value]` rows in JS, where making a small array
// costs nanoseconds (from wasm, each costs several calls across the boundary); `texts` holds
// `[index, text]` for the values that are not finite numbers.
#[wasm_bindgen(inline_js = "export function curveRows(forwards, values, texts) {
  const rows = new Array(forwards.length);
  for (let i = 0; i < forwards.length; i++) rows[i] = [forwards[i], values[i]];
  for (const [i, text] of texts) rows[i][1] = text;
  return rows;
}")]
extern "C" {
    #[wasm_bindgen(js_name = curveRows)]
    fn curve_rows(forwards: &[f64], values: &[f64], texts: JsValue) -> js_sys::Array;
}

/// A curve's `{rows: [[forward, value]], skipped}` as a plain JS value, the same value `to_js`
/// gives (a non-finite value as its text, as the core writes it): two columns of numbers cross
/// as views of wasm memory and are paired in JS (`curveRows`), far cheaper than a million
/// small arrays made one call at a time or written and parsed as JSON text.
pub(super) fn curve_to_js(
    answer: &crate::readback::Answer<Vec<crate::readback::Point>>,
) -> Result<JsValue, JsError> {
    let forwards: Vec<f64> = answer.rows.iter().map(|p| p.forward as f64).collect();
    let values: Vec<f64> = answer.rows.iter().map(|p| p.value).collect();
    let texts: Vec<(usize, crate::store::Num)> = (0..)
        .zip(&answer.rows)
        .filter(|(_, p)| !p.value.is_finite())
        .map(|(i, p)| (i, crate::store::Num(p.value)))
        .collect();
    let rows = curve_rows(&forwards, &values, to_js(&texts)?);
    rows_and_skipped(&rows, &answer.skipped)
}

/// `{rows, skipped}` as a plain JS object, `rows` already made in JS.
pub(super) fn rows_and_skipped(
    rows: &JsValue,
    skipped: &impl Serialize,
) -> Result<JsValue, JsError> {
    let out = js_sys::Object::new();
    let set = |key: &str, value: &JsValue| {
        js_sys::Reflect::set(&out, &JsValue::from_str(key), value)
            .map(|_| ())
            .map_err(|e| js_err(format!("{e:?}")))
    };
    set("rows", rows)?;
    set("skipped", &to_js(skipped)?)?;
    Ok(out.into())
}

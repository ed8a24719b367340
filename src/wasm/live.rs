//! `Live` for JS: a run drawn while it happens, the same tally and figure as Rust's `Live`.

use super::*;
use crate::readback::live::{Live as CoreLive, LiveOptions, ProgressRow};
use crate::store::{Fact, IndexEntry};

/// Options of `new Live({title, smooth, of, cap})`, every one optional.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LiveOpts {
    title: Option<String>,
    smooth: Option<usize>,
    of: Option<String>,
    cap: Option<usize>,
}

/// One forward as a plain object: `{forward, value?, took_us?, broke?, error?}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RowIn {
    forward: u64,
    value: Option<f64>,
    #[serde(default)]
    took_us: u64,
    #[serde(default)]
    broke: bool,
    error: Option<String>,
}

/// Numbers per forward in `pushRows`' packed form: forward, value, took_us, flags.
const PACKED: usize = 4;

/// A run drawn while it happens: hand it forwards (`push`, `pushRows`, index lines with
/// `entry`, facts with `fact`) and ask for `figure()` whenever; it holds one compact row per
/// forward and draws what `progress` draws from a store.
#[wasm_bindgen(js_name = Live)]
pub struct LiveHandle {
    live: CoreLive,
}

#[wasm_bindgen(js_class = Live)]
impl LiveHandle {
    /// `new Live({title = "live", smooth = 0, of = "loss.value", cap = 10000})`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<LiveHandle, JsError> {
        let o: LiveOpts = if options.is_undefined() || options.is_null() {
            LiveOpts::default()
        } else {
            from_js("Live options", options)?
        };
        let d = LiveOptions::default();
        Ok(LiveHandle {
            live: CoreLive::new(LiveOptions {
                title: o.title.unwrap_or(d.title),
                smooth: o.smooth.unwrap_or(d.smooth),
                of: o.of.unwrap_or(d.of),
                cap: o.cap.unwrap_or(d.cap),
            }),
        })
    }

    /// One forward: `{forward, value?, took_us?, broke?, error?}`.
    pub fn push(&mut self, row: JsValue) -> Result<(), JsError> {
        let r: RowIn = from_js("Live.push", row)?;
        self.live.row(ProgressRow {
            forward: r.forward,
            value: r.value,
            smoothed: None,
            took_us: r.took_us,
            broke: r.broke,
            error: r.error,
        });
        Ok(())
    }

    /// Forwards packed four numbers each: forward, value, took_us, flags (1: has a value,
    /// 2: broke); `errors` is `{index: text}` for broken ones (or null). How a kernel sends
    /// them (a Float64Array buffer). Returns how many were added.
    #[wasm_bindgen(js_name = pushRows)]
    pub fn push_rows(&mut self, packed: &[f64], errors: JsValue) -> Result<usize, JsError> {
        if !packed.len().is_multiple_of(PACKED) {
            return Err(JsError::new(&format!(
                "Live.pushRows: {} numbers is not {PACKED} per forward",
                packed.len()
            )));
        }
        let named: std::collections::BTreeMap<String, String> =
            if errors.is_undefined() || errors.is_null() {
                Default::default()
            } else {
                from_js("Live.pushRows errors", errors)?
            };
        let mut errors = std::collections::BTreeMap::new();
        for (k, v) in named {
            let i: usize = k.parse().map_err(|_| {
                JsError::new(&format!("Live.pushRows errors: {k:?} is not a row's index"))
            })?;
            errors.insert(i, v);
        }
        let whole = |x: f64, what: &str| -> Result<u64, JsError> {
            if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= 2f64.powi(53) {
                Ok(x as u64)
            } else {
                Err(JsError::new(&format!(
                    "Live.pushRows: {what} {x} is not a whole number >= 0"
                )))
            }
        };
        for (i, row) in packed.chunks_exact(PACKED).enumerate() {
            let (forward, value, took, flags) = (row[0], row[1], row[2], row[3]);
            let flags = whole(flags, "flags")?;
            self.live.row(ProgressRow {
                forward: whole(forward, "forward")?,
                value: (flags & 1 != 0).then_some(value),
                smoothed: None,
                took_us: whole(took, "took_us")?,
                broke: flags & 2 != 0,
                error: errors.get(&i).cloned(),
            });
        }
        Ok(packed.len() / PACKED)
    }

    /// A forward as its index line says it (a row of `scan`).
    pub fn entry(&mut self, line: JsValue) -> Result<(), JsError> {
        let e: IndexEntry = from_js("Live.entry", line)?;
        self.live.entry(&e);
        Ok(())
    }

    /// One fact of forward `forward` as it arrives.
    pub fn fact(&mut self, forward: u64, fact: JsValue) -> Result<(), JsError> {
        let f: Fact = from_js("Live.fact", fact)?;
        self.live.fact(forward, &f);
        Ok(())
    }

    /// The progress figure of everything that has arrived: Plotly's `{data, layout}`.
    pub fn figure(&mut self) -> Result<JsValue, JsError> {
        let f = crate::figures::progress::live(&mut self.live);
        to_js(&serde_json::json!({"data": f.data, "layout": f.layout}))
    }

    /// Forwards seen, and rows held (one per forward, plus one per broken forward).
    pub fn seen(&self) -> Result<JsValue, JsError> {
        let t = self.live.tally();
        let (forwards, stride) = t.seen();
        to_js(&serde_json::json!({"forwards": forwards, "stride": stride, "held": t.held()}))
    }
}

//! Reading a record back from JS: the seed's somatize.record and its figures over an open store.

use super::health::health_figure;
use super::store::{answer_to_js, call_opts, curve_to_js};
use super::*;

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
        "forwards" => answer_to_js(&rb::forwards(store, o.run(name)?).map_err(js_err)?),
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

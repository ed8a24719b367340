//! Figures as data: Plotly-compatible figure JSON built in Rust, drawn by plotly.js anywhere.
//!
//! Every figure is `{data: [trace, …], layout: {…}}` as plotly.js takes it, so the same
//! picture comes out of the CLI, Node, the page and a notebook, and tests read its numbers
//! without a browser. Colour means good-or-bad only in the health figures ([`ALARM`]); every
//! other figure draws with the neutral [`PALETTE`].

pub mod compare;
pub mod flags;
pub mod health;
pub mod overlaid;
pub mod profile;

use serde::Serialize;
use serde_json::{json, Value};

pub mod gantt;
pub mod machines;
pub mod progress;
pub mod spent;

/// Neutral categorical colours (Okabe–Ito, colour-blind safe), none of which means good or bad.
pub const PALETTE: &[&str] = &[
    "#0072b2", "#e69f00", "#56b4e9", "#009e73", "#cc79a7", "#f0e442", "#d55e00", "#000000",
];

/// The alarm colour, used only by health figures for something judged wrong.
pub const ALARM: &str = "#c00000";

/// The colour for a neutral, unflagged mark in a health figure.
pub const QUIET: &str = "#7f7f7f";

/// A Plotly figure: traces and a layout.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub data: Vec<Value>,
    pub layout: Value,
}

impl Figure {
    /// An empty figure with a title and the layout every figure shares.
    pub fn new(title: &str) -> Self {
        Figure {
            data: Vec::new(),
            layout: json!({
                "title": {"text": title},
                "font": {"family": "system-ui, sans-serif", "size": 13},
                "margin": {"l": 64, "r": 24, "t": 56, "b": 56},
                "hovermode": "closest",
                "showlegend": true,
            }),
        }
    }

    /// Name an axis (`"xaxis"`, `"yaxis"`, `"yaxis2"`, …) with a title and optional extras.
    pub fn axis(mut self, axis: &str, title: &str, extra: Value) -> Self {
        let mut spec = json!({"title": {"text": title}, "automargin": true});
        merge(&mut spec, extra);
        self.layout[axis] = spec;
        self
    }

    /// Add a trace.
    pub fn trace(mut self, trace: Value) -> Self {
        self.data.push(trace);
        self
    }

    /// Set further layout fields (merged into what is there).
    pub fn layout(mut self, extra: Value) -> Self {
        merge(&mut self.layout, extra);
        self
    }

    /// The figure as a JSON value.
    pub fn to_value(&self) -> Value {
        json!({"data": self.data, "layout": self.layout})
    }
}

/// The colour of the i-th category.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Merge `extra` into `base`, object by object; anything else replaces.
fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

/// A number for a figure: non-finite values become `null` (a gap), as plotly.js expects.
pub fn num(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_plotly_json_with_titled_axes() {
        let f = Figure::new("loss")
            .axis("xaxis", "forward", json!({"rangemode": "tozero"}))
            .trace(json!({"type": "scatter", "x": [0, 1], "y": [num(1.0), num(f64::NAN)]}));
        let v = f.to_value();
        assert_eq!(v["layout"]["title"]["text"], "loss");
        assert_eq!(v["layout"]["xaxis"]["title"]["text"], "forward");
        assert_eq!(v["layout"]["xaxis"]["rangemode"], "tozero");
        assert_eq!(v["data"][0]["y"], json!([1.0, null]));
    }

    #[test]
    fn the_palette_holds_no_alarm_colour() {
        assert!(!PALETTE.contains(&ALARM));
        assert_eq!(colour(PALETTE.len()), PALETTE[0]);
    }
}

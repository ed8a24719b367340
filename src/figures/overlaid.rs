//! The graph with the diagnosis overlaid: nodes as boxes in a chain in declaration order,
//! filled by where each runs (neutral palette), flagged nodes outlined in the alarm colour
//! and badged with their flags.

use super::{colour, Figure, ALARM, QUIET};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Box width and the gap between boxes, in data units.
const WIDTH: f64 = 1.0;
const GAP: f64 = 0.4;

/// `nodes` as `(name, kind)` in declaration order; `places` where each node ran (missing:
/// `unknown`); `overlay` the diagnosis folded onto the nodes (`{node: [flag, …]}`). The
/// fill keeps saying where a node runs; health only changes the outline and the badge.
pub fn overlaid(
    nodes: &[(String, String)],
    places: &BTreeMap<String, String>,
    overlay: &[(String, Vec<String>)],
) -> Figure {
    let mut place_names: Vec<&str> = Vec::new();
    for (n, _) in nodes {
        let p = places.get(n).map_or("unknown", String::as_str);
        if !place_names.contains(&p) {
            place_names.push(p);
        }
    }
    let fill = |p: &str| colour(place_names.iter().position(|q| *q == p).unwrap_or(0));
    let mut shapes = Vec::new();
    let mut annotations = Vec::new();
    let (mut hx, mut hy, mut hover) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (name, kind)) in nodes.iter().enumerate() {
        let x0 = i as f64 * (WIDTH + GAP);
        let place = places.get(name).map_or("unknown", String::as_str);
        let flags = overlay
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f.clone())
            .unwrap_or_default();
        let flagged = !flags.is_empty();
        shapes.push(json!({
            "type": "rect", "x0": x0, "x1": x0 + WIDTH, "y0": 0, "y1": 1,
            "fillcolor": fill(place), "opacity": 0.35,
            "line": {"color": if flagged { ALARM } else { QUIET }, "width": if flagged { 4 } else { 1 }},
        }));
        if i > 0 {
            shapes.push(json!({
                "type": "line", "x0": x0 - GAP, "x1": x0, "y0": 0.5, "y1": 0.5,
                "line": {"color": QUIET, "width": 1},
            }));
        }
        annotations.push(json!({
            "x": x0 + WIDTH / 2.0, "y": 0.5, "showarrow": false,
            "text": format!("{name}<br><i>{kind}</i>"),
        }));
        if flagged {
            annotations.push(json!({
                "x": x0 + WIDTH / 2.0, "y": 1.08, "showarrow": false, "yanchor": "bottom",
                "text": flags.join("<br>"), "font": {"color": "white", "size": 11},
                "bgcolor": ALARM, "borderpad": 3,
            }));
        }
        hx.push(x0 + WIDTH / 2.0);
        hy.push(0.5);
        let said = if flagged {
            flags.join(", ")
        } else {
            "no flag".into()
        };
        hover.push(format!("{name} ({kind})<br>runs on {place}<br>{said}"));
    }
    let mut fig = Figure::new("The graph, with what is wrong where")
        .axis("xaxis", "", json!({"visible": false}))
        .axis("yaxis", "", json!({"visible": false, "range": [-0.2, 2.0]}))
        .layout(json!({"shapes": shapes, "annotations": annotations}))
        .trace(json!({
            "type": "scatter", "mode": "markers", "x": hx, "y": hy, "text": hover,
            "hoverinfo": "text", "marker": {"opacity": 0, "size": 30}, "showlegend": false,
        }));
    for p in &place_names {
        fig = fig.trace(legend_entry(p, fill(p)));
    }
    fig
}

/// A legend entry saying which fill means which place.
fn legend_entry(place: &str, colour: &str) -> Value {
    json!({
        "type": "scatter", "mode": "markers", "x": [null], "y": [null], "name": place,
        "marker": {"color": colour, "symbol": "square", "size": 12},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flagged_boxes_are_outlined_and_badged_and_the_fill_says_where() {
        let nodes = vec![
            ("a".to_string(), "Linear".to_string()),
            ("b".to_string(), "ReLU".to_string()),
        ];
        let places: BTreeMap<String, String> = [("a", "gpu0"), ("b", "gpu1")]
            .iter()
            .map(|(n, p)| (n.to_string(), p.to_string()))
            .collect();
        let overlay = vec![("b".to_string(), vec!["DEAD".to_string()])];
        let f = overlaid(&nodes, &places, &overlay).to_value();
        let rects: Vec<&Value> = f["layout"]["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["type"] == "rect")
            .collect();
        assert_eq!(rects.len(), 2);
        assert_eq!(rects[0]["line"]["color"], QUIET);
        assert_eq!(rects[1]["line"]["color"], ALARM);
        assert_ne!(rects[0]["fillcolor"], rects[1]["fillcolor"], "two places");
        assert!(!crate::figures::PALETTE.contains(&ALARM));
        let badges: Vec<&Value> = f["layout"]["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["bgcolor"] == ALARM)
            .collect();
        assert_eq!(badges.len(), 1);
        assert_eq!(badges[0]["text"], "DEAD");
    }
}

//! The health profile: one measurement across the nodes in declaration order (the shape over
//! depth), flagged nodes in the alarm colour with their flags on hover.

use super::{num, Figure, ALARM, QUIET};
use serde_json::json;
use somatize_verdict::{NodeSeen, Verdict};

/// The flags raised at `node` or inside it (`node.path`), as text.
pub(crate) fn flags_at(v: &Verdict, node: &str) -> Vec<String> {
    v.iter()
        .filter(|(k, _)| {
            *k == node
                || k.strip_prefix(node)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
        .flat_map(|(k, flags)| {
            flags.iter().map(move |f| {
                if k == node {
                    f.to_string()
                } else {
                    format!("{f} in {k}")
                }
            })
        })
        .collect()
}

/// One bar per node that measured `of`, in the order of `seen` (declaration order); a node
/// the verdict flagged is drawn in [`ALARM`] and names its flags on hover, the rest in
/// [`QUIET`]. A log axis when every value is positive and they span more than two decades.
pub fn profile(seen: &[NodeSeen], v: &Verdict, of: &str) -> Figure {
    let mut x = Vec::new();
    let mut y = Vec::new();
    let mut colours = Vec::new();
    let mut hover = Vec::new();
    for node in seen {
        let Some(value) = node.get(of) else { continue };
        let flags = flags_at(v, &node.name);
        x.push(node.name.clone());
        y.push(num(value));
        colours.push(if flags.is_empty() { QUIET } else { ALARM });
        let kind = if node.kind.is_empty() {
            String::new()
        } else {
            format!(" ({})", node.kind)
        };
        let said = if flags.is_empty() {
            "no flag".to_string()
        } else {
            flags.join(", ")
        };
        hover.push(format!(
            "{}{kind}<br>{of} = {value:.4e}<br>{said}",
            node.name
        ));
    }
    let values: Vec<f64> = y.iter().filter_map(|v| v.as_f64()).collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    let log = !values.is_empty() && lo > 0.0 && hi / lo > 100.0;
    Figure::new(&format!("{of} across the nodes"))
        .axis(
            "xaxis",
            "node (declaration order)",
            json!({"type": "category"}),
        )
        .axis(
            "yaxis",
            of,
            json!({"type": if log { "log" } else { "linear" }}),
        )
        .layout(json!({"showlegend": false}))
        .trace(json!({
            "type": "bar",
            "name": of,
            "x": x,
            "y": y,
            "marker": {"color": colours},
            "text": hover,
            "hoverinfo": "text",
            "textposition": "none",
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use somatize_verdict::{Flag, FlagKind};

    #[test]
    fn flagged_nodes_are_drawn_in_the_alarm_colour_in_declaration_order() {
        let seen = vec![
            NodeSeen::new("fc1", "Linear", [("grad_norm", 1e-9)]),
            NodeSeen::new("relu", "ReLU", []),
            NodeSeen::new("fc2", "Linear", [("grad_norm", 0.5)]),
        ];
        let mut v = Verdict::new();
        v.raise("fc1", Flag::plain(FlagKind::Vanishing));
        let f = profile(&seen, &v, "grad_norm").to_value();
        let bar = &f["data"][0];
        assert_eq!(
            bar["x"],
            json!(["fc1", "fc2"]),
            "nodes that measured it, in order"
        );
        assert_eq!(bar["marker"]["color"], json!([ALARM, QUIET]));
        assert!(bar["text"][0].as_str().unwrap().contains("VANISHING"));
        assert_eq!(f["layout"]["yaxis"]["type"], "log", "nine decades apart");
    }
}

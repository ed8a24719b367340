//! The health flags table: node, flag, and what to do, one row per flag raised.

use super::{Figure, ALARM};
use serde_json::json;
use somatize_verdict::{about, Verdict};

/// A Plotly table of every flag of `v` (nodes in the verdict's order): where, the flag (in
/// [`ALARM`]), and what to do about it. A node with nothing wrong is not a row; an empty
/// verdict is a table with no rows, titled to say that nothing measured crossed a bound.
pub fn flags(v: &Verdict) -> Figure {
    let (mut nodes, mut names, mut todo) = (Vec::new(), Vec::new(), Vec::new());
    for (node, raised) in v.iter() {
        for f in raised {
            nodes.push(node.to_string());
            names.push(f.to_string());
            todo.push(about(f.kind.name()).map_or("", |a| a.todo).to_string());
        }
    }
    let title = if names.is_empty() {
        "No flag raised (nothing measured crossed a bound)".to_string()
    } else {
        format!("{} flags raised", names.len())
    };
    Figure::new(&title)
        .layout(json!({"showlegend": false}))
        .trace(json!({
            "type": "table",
            "columnwidth": [1, 1, 4],
            "header": {"values": ["node", "flag", "what to do"], "align": "left"},
            "cells": {
                "values": [nodes, names, todo],
                "align": "left",
                "font": {"color": [["black"], [ALARM], ["black"]]},
            },
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use somatize_verdict::{Flag, FlagKind};

    #[test]
    fn one_row_per_flag_with_what_to_do() {
        let mut v = Verdict::new();
        v.raise("relu", Flag::plain(FlagKind::Dead));
        v.raise("relu", Flag::counted(FlagKind::DeadChannels, 3));
        let f = flags(&v).to_value();
        let cells = &f["data"][0]["cells"]["values"];
        assert_eq!(cells[0], json!(["relu", "relu"]));
        assert_eq!(cells[1], json!(["DEAD", "DEAD_CHANNELS(3)"]));
        assert!(cells[2][0].as_str().unwrap().contains("He initialisation"));
        let empty = flags(&Verdict::new()).to_value();
        assert!(empty["layout"]["title"]["text"]
            .as_str()
            .unwrap()
            .starts_with("No flag raised"));
    }
}

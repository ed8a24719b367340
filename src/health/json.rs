//! The verdict's inputs and answer as JSON: seen nodes in, `{where: [flags]}` out, in order.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use somatize_verdict::thresholds::bound;
use somatize_verdict::{Bound, Forward, NodeSeen, Origin, Verdict};
use std::collections::BTreeMap;
use std::fmt;

/// One node as JSON: `{"name": …, "kind": …, "metrics": {…}}`. A `null` metric is a NaN
/// (JSON has no NaN, and serde_json writes one as `null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenNode {
    pub name: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, deserialize_with = "nullable_metrics")]
    pub metrics: BTreeMap<String, f64>,
}

fn nullable_metrics<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    let raw: BTreeMap<String, Option<f64>> = BTreeMap::deserialize(d)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
        .collect())
}

impl From<SeenNode> for NodeSeen {
    fn from(n: SeenNode) -> Self {
        NodeSeen {
            name: n.name,
            kind: n.kind,
            metrics: n.metrics,
        }
    }
}

impl From<&NodeSeen> for SeenNode {
    fn from(n: &NodeSeen) -> Self {
        SeenNode {
            name: n.name.clone(),
            kind: n.kind.clone(),
            metrics: n.metrics.clone(),
        }
    }
}

/// Seen nodes in declaration order, read from either shape:
/// a list `[{"name", "kind", "metrics"}, …]`, or an object `{node: {metric: value, …}, …}`
/// whose key order is the declaration order and where a string `kind` entry names the kind,
/// numbers are metrics, booleans count as 1 or 0 and `null` is NaN.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Seen(pub Vec<NodeSeen>);

impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SeenVisitor)
    }
}

struct SeenVisitor;

impl<'de> Visitor<'de> for SeenVisitor {
    type Value = Seen;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of {name, kind, metrics} or an object of node to metrics")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Seen, A::Error> {
        let mut out = Vec::new();
        while let Some(node) = seq.next_element::<SeenNode>()? {
            out.push(node.into());
        }
        Ok(Seen(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Seen, A::Error> {
        let mut out = Vec::new();
        while let Some((name, fields)) = map.next_entry::<String, Map<String, Value>>()? {
            out.push(node_from_fields(name, fields).map_err(de::Error::custom)?);
        }
        Ok(Seen(out))
    }
}

fn node_from_fields(name: String, fields: Map<String, Value>) -> Result<NodeSeen, String> {
    let mut node = NodeSeen {
        name,
        ..NodeSeen::default()
    };
    for (key, value) in fields {
        let v = match (&value, key.as_str()) {
            (Value::String(kind), "kind") => {
                node.kind.clone_from(kind);
                continue;
            }
            (Value::Number(n), _) => n.as_f64().unwrap_or(f64::NAN),
            (Value::Bool(b), _) => f64::from(u8::from(*b)),
            (Value::Null, _) => f64::NAN,
            _ => {
                return Err(format!(
                    "node {:?}: metric {key:?} must be a number, a boolean or null, not {value}",
                    node.name
                ))
            }
        };
        node.metrics.insert(key, v);
    }
    Ok(node)
}

/// One forward as JSON: `{"number": n, "nodes": <seen, either shape>}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ForwardJson {
    pub number: u64,
    pub nodes: Seen,
}

impl From<ForwardJson> for Forward {
    fn from(f: ForwardJson) -> Self {
        Forward {
            number: f.number,
            nodes: f.nodes.0,
        }
    }
}

/// A verdict as the JSON object `{where: [flag, …]}`, nodes in the verdict's order.
pub struct VerdictJson<'a>(pub &'a Verdict);

impl Serialize for VerdictJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let names = self.0.to_names();
        let mut map = s.serialize_map(Some(names.len()))?;
        for (node, flags) in &names {
            map.serialize_entry(node, flags)?;
        }
        map.end()
    }
}

/// One bound as JSON: its name, default value, and where the default comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundJson {
    pub name: &'static str,
    pub default: f64,
    /// What the bound is compared with.
    pub meaning: &'static str,
    /// `published` or `ours`.
    pub origin: &'static str,
    /// The source (published) or the reason (ours).
    pub source: &'static str,
}

impl From<&Bound> for BoundJson {
    fn from(b: &Bound) -> Self {
        let (origin, source) = match b.origin {
            Origin::Published(s) => ("published", s),
            Origin::Ours(s) => ("ours", s),
        };
        BoundJson {
            name: b.name,
            default: b.default,
            meaning: b.meaning,
            origin,
            source,
        }
    }
}

/// What `about(flag)` answers, as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AboutJson {
    pub flag: &'static str,
    pub means: &'static str,
    pub todo: &'static str,
    /// The bounds it is judged at, with their defaults.
    pub bounds: Vec<BoundJson>,
    /// The metrics its rule reads.
    pub metrics: Vec<&'static str>,
    pub sources: &'static str,
}

/// `about(flag)` as JSON (`DEAD_CHANNELS(3)` works, and so does a flag as `where` names it,
/// `LEAKAGE in net.2`); `None` for a name that is no flag.
pub fn about_json(flag: &str) -> Option<AboutJson> {
    let name = flag.split_once(" in ").map_or(flag, |(f, _)| f).trim();
    let a = somatize_verdict::about(name)?;
    Some(AboutJson {
        flag: a.flag,
        means: a.means,
        todo: a.todo,
        bounds: a
            .bounds
            .iter()
            .filter_map(|n| bound(n))
            .map(BoundJson::from)
            .collect(),
        metrics: a.metrics(),
        sources: a.sources,
    })
}

/// The error for a name that is no flag, listing the flags.
pub fn unknown_flag(flag: &str) -> String {
    format!(
        "unknown flag {flag:?}; the flags are {}",
        somatize_verdict::FLAGS.join(", ")
    )
}

/// `{node: {"kind", metric: value, …}}` in declaration order, NaN as null: what `seen` prints.
pub fn seen_json(seen: &[NodeSeen]) -> Value {
    let mut out = Map::new();
    for n in seen {
        let mut row = Map::new();
        row.insert("kind".into(), Value::from(n.kind.clone()));
        for (k, v) in &n.metrics {
            let number = serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number);
            row.insert(k.clone(), number);
        }
        out.insert(n.name.clone(), Value::Object(row));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_shapes_in_declaration_order() {
        let list = r#"[{"name": "b", "kind": "ReLU", "metrics": {"dead_units": 2, "loss": null}},
                       {"name": "a", "metrics": {}}]"#;
        let object = r#"{"b": {"kind": "ReLU", "dead_units": 2, "loss": null}, "a": {}}"#;
        for text in [list, object] {
            let Seen(nodes) = serde_json::from_str(text).unwrap();
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            assert_eq!(names, ["b", "a"], "{text}");
            assert_eq!(nodes[0].kind, "ReLU");
            assert_eq!(nodes[0].get("dead_units"), Some(2.0));
            assert!(nodes[0].get("loss").is_some_and(f64::is_nan), "{text}");
        }
        let forwards: Vec<ForwardJson> =
            serde_json::from_str(&format!(r#"[{{"number": 3, "nodes": {object}}}]"#)).unwrap();
        let forward: Forward = forwards[0].clone().into();
        assert_eq!((forward.number, forward.nodes.len()), (3, 2));
        let bad = serde_json::from_str::<Seen>(r#"{"a": {"grad_norm": "big"}}"#).unwrap_err();
        assert!(
            bad.to_string().contains("\"grad_norm\" must be a number"),
            "{bad}"
        );
    }

    #[test]
    fn writes_the_verdict_in_its_order() {
        let mut v = Verdict::new();
        v.raise(
            "z",
            somatize_verdict::Flag::counted(somatize_verdict::FlagKind::DeadChannels, 3),
        );
        v.raise(
            "a",
            somatize_verdict::Flag::plain(somatize_verdict::FlagKind::Nan),
        );
        let text = serde_json::to_string(&VerdictJson(&v)).unwrap();
        assert_eq!(text, r#"{"z":["DEAD_CHANNELS(3)"],"a":["NAN"]}"#);
    }

    #[test]
    fn about_carries_the_bounds_with_their_defaults() {
        let a = about_json("LOSING_PLASTICITY").unwrap();
        let names: Vec<&str> = a.bounds.iter().map(|b| b.name).collect();
        assert_eq!(
            names,
            [
                "plasticity_param_growth",
                "plasticity_dormant_rise",
                "plasticity_erank_drop",
                "plasticity_min_points"
            ]
        );
        assert!(a.bounds.iter().all(|b| b.origin == "ours"));
        let v = about_json("VANISHING").unwrap();
        assert_eq!(
            (v.bounds[0].name, v.bounds[0].default, v.bounds[0].origin),
            ("vanishing_ratio", 1e-3, "published")
        );
        assert!(about_json("FINE").is_none());
        assert!(unknown_flag("FINE").contains("LOSING_PLASTICITY"));
    }
}

//! What a blob holds besides tensors: facts in arrival order, per-node statistics, field values.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// One thing that happened in a forward: a node ran (or was read back, or failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// The node's name, e.g. `fc1` or `loss`.
    pub node: String,
    /// The node's kind, e.g. `Linear`, `ReLU`, `loss`.
    pub kind: String,
    /// When it began, in microseconds from the start of the forward (its writer's clock).
    #[serde(default)]
    pub began_us: i64,
    /// How long it took, in microseconds.
    #[serde(default)]
    pub took_us: u64,
    /// Where it ran (a machine or device name); `local` when not said.
    #[serde(rename = "where", default = "local")]
    pub where_: String,
    /// Whether its output was read back (cached) instead of computed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_back: bool,
    /// The error it failed with, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Anything else the fact carries (e.g. `value` for a loss), kept as given.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

fn local() -> String {
    "local".into()
}

impl Fact {
    /// A fact for `node` of `kind`, with no timing, run locally.
    pub fn new(node: impl Into<String>, kind: impl Into<String>) -> Self {
        Fact {
            node: node.into(),
            kind: kind.into(),
            began_us: 0,
            took_us: 0,
            where_: local(),
            read_back: false,
            error: None,
            extra: Default::default(),
        }
    }

    /// The loss of a forward as a fact of kind `loss` carrying `value` (non-finite as text).
    pub fn loss(value: f64) -> Self {
        let mut f = Fact::new("loss", "loss");
        f.extra.insert("value".into(), Field::Num(value).to_json());
        f
    }
}

/// Per-node statistics, `node -> metric -> number` (`stats.json` in a blob).
pub type NodeStats = BTreeMap<String, BTreeMap<String, Num>>;

/// A number that may be NaN or infinite; in JSON, non-finite values are the strings
/// `"NaN"`, `"Infinity"`, `"-Infinity"` (JSON has no literal for them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Num(pub f64);

fn nonfinite_text(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("NaN")
    } else if v == f64::INFINITY {
        Some("Infinity")
    } else if v == f64::NEG_INFINITY {
        Some("-Infinity")
    } else {
        None
    }
}

fn nonfinite_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match nonfinite_text(self.0) {
            Some(t) => s.serialize_str(t),
            // Whole numbers are written without a fraction (`3`, not `3.0`).
            None if self.0.fract() == 0.0
                && self.0.abs() < 9.0e15
                && !(self.0 == 0.0 && self.0.is_sign_negative()) =>
            {
                s.serialize_i64(self.0 as i64)
            }
            None => s.serialize_f64(self.0),
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Field::deserialize(d)? {
            Field::Num(v) => Ok(Num(v)),
            other => Err(de::Error::custom(format!(
                "expected a number, got {other:?}"
            ))),
        }
    }
}

/// A summarised field value in an index line: a number, text, a boolean or null.
#[derive(Debug, Clone, PartialEq)]
pub enum Field<'a> {
    Num(f64),
    Text(Cow<'a, str>),
    Bool(bool),
    Null,
}

impl Field<'_> {
    /// The same value, owning its text.
    pub fn into_owned(self) -> Field<'static> {
        match self {
            Field::Num(v) => Field::Num(v),
            Field::Text(t) => Field::Text(Cow::Owned(t.into_owned())),
            Field::Bool(b) => Field::Bool(b),
            Field::Null => Field::Null,
        }
    }

    /// The number, if this is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Field::Num(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as a JSON value (non-finite numbers as their text).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Field::Num(v) => match nonfinite_text(*v) {
                Some(t) => t.into(),
                None => {
                    serde_json::Number::from_f64(*v).map_or(serde_json::Value::Null, Into::into)
                }
            },
            Field::Text(t) => t.as_ref().into(),
            Field::Bool(b) => (*b).into(),
            Field::Null => serde_json::Value::Null,
        }
    }

    /// A field from a JSON value; arrays and objects have no field form (`None`).
    pub fn from_json(v: &serde_json::Value) -> Option<Field<'static>> {
        Some(match v {
            serde_json::Value::Number(n) => Field::Num(n.as_f64()?),
            serde_json::Value::String(s) => match nonfinite_value(s) {
                Some(x) => Field::Num(x),
                None => Field::Text(Cow::Owned(s.clone())),
            },
            serde_json::Value::Bool(b) => Field::Bool(*b),
            serde_json::Value::Null => Field::Null,
            _ => return None,
        })
    }

    /// The value as text, as `forwards` shows it.
    pub fn to_text(&self) -> String {
        match self {
            Field::Num(v) => match nonfinite_text(*v) {
                Some(t) => t.to_string(),
                None => format!("{v}"),
            },
            Field::Text(t) => t.to_string(),
            Field::Bool(b) => b.to_string(),
            Field::Null => String::new(),
        }
    }
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Num(v) => Num(*v).serialize(s),
            Field::Text(t) => s.serialize_str(t),
            Field::Bool(b) => s.serialize_bool(*b),
            Field::Null => s.serialize_unit(),
        }
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, a string, a boolean or null")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Field::Num(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Field::Num(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Field::Num(v as f64))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Field::Bool(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Null)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(nonfinite_value(v).map_or(Field::Text(Cow::Borrowed(v)), Field::Num))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(nonfinite_value(v).map_or_else(|| Field::Text(Cow::Owned(v.to_string())), Field::Num))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}

/// A string that borrows from the input when it has no escapes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text<'a>(pub Cow<'a, str>);

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_string())))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

/// Summarised fields of one forward, in the order written: `(name, value)`, e.g. `loss.value`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fields<'a>(pub Vec<(Cow<'a, str>, Field<'a>)>);

impl<'a> Fields<'a> {
    /// The value of field `name`.
    pub fn get(&self, name: &str) -> Option<&Field<'a>> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The same fields, owning their text.
    pub fn into_owned(self) -> Fields<'static> {
        Fields(
            self.0
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                .collect(),
        )
    }
}

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k.as_ref(), v)?;
        }
        m.end()
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of field values")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Text(k)) = map.next_key::<Text<'de>>()? {
            out.push((k, map.next_value::<Field<'de>>()?));
        }
        Ok(Fields(out))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FieldsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_numbers_round_trip_as_text() {
        for v in [1.5, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1e300] {
            let text = serde_json::to_string(&Num(v)).unwrap();
            let back: Num = serde_json::from_str(&text).unwrap();
            assert_eq!(back.0.to_bits(), v.to_bits(), "{v} went to {text}");
        }
        let nan: Num =
            serde_json::from_str(&serde_json::to_string(&Num(f64::NAN)).unwrap()).unwrap();
        assert!(nan.0.is_nan());
    }

    #[test]
    fn fields_borrow_and_keep_order() {
        let text =
            r#"{"loss.value":0.5,"loss.took_us":3,"tag":"warm","ok":true,"gone":null,"bad":"NaN"}"#;
        let f: Fields = serde_json::from_str(text).unwrap();
        let names: Vec<&str> = f.0.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(
            names,
            ["loss.value", "loss.took_us", "tag", "ok", "gone", "bad"]
        );
        assert!(matches!(f.0[0].0, Cow::Borrowed(_)), "key was copied");
        assert_eq!(f.get("loss.value"), Some(&Field::Num(0.5)));
        assert_eq!(f.get("tag"), Some(&Field::Text("warm".into())));
        assert!(f
            .get("bad")
            .and_then(Field::as_f64)
            .is_some_and(f64::is_nan));
        assert_eq!(serde_json::to_string(&f).unwrap(), text);
    }

    #[test]
    fn facts_keep_extra_fields() {
        let text =
            r#"{"node":"loss","kind":"loss","began_us":5,"took_us":1,"where":"gpu0","value":0.25}"#;
        let f: Fact = serde_json::from_str(text).unwrap();
        assert_eq!(f.where_, "gpu0");
        assert_eq!(f.extra.get("value"), Some(&serde_json::json!(0.25)));
        let short: Fact = serde_json::from_str(r#"{"node":"a","kind":"ReLU"}"#).unwrap();
        assert_eq!(short.where_, "local");
    }
}

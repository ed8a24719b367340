//! `forwards`: every forward of a run in order, as its index lines say, summarised fields as text.

use super::error::{Answer, Result};
use super::lines::walk;
use crate::store::{Store, StoreFs};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// One forward as the index says it. Serialised flat: `{"forward":…, …, "loss.value":"0.41"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardRow {
    pub forward: u64,
    /// The writer whose index line this is.
    pub writer: String,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    pub error: Option<String>,
    /// Summarised fields, `<kind>.<field>` → the value as text, in the order written.
    pub fields: Vec<(String, String)>,
}

impl Serialize for ForwardRow {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("forward", &self.forward)?;
        m.serialize_entry("writer", &self.writer)?;
        m.serialize_entry("written_us", &self.written_us)?;
        m.serialize_entry("took_us", &self.took_us)?;
        m.serialize_entry("broke", &self.broke)?;
        if let Some(e) = &self.error {
            m.serialize_entry("error", e)?;
        }
        for (k, v) in &self.fields {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Every forward of `run` in order of (forward, writer). One scan of the indexes and no
/// fetches; memory is the rows.
pub fn forwards<F: StoreFs>(store: &Store<F>, run: &str) -> Result<Answer<Vec<ForwardRow>>> {
    let mut answer = Answer::new(Vec::new());
    let rows = &mut answer.rows;
    walk(store, run, &mut answer.skipped, &mut |l| {
        rows.push(ForwardRow {
            forward: l.forward,
            writer: l.writer.to_string(),
            written_us: l.written_us,
            took_us: l.took_us,
            broke: l.broke,
            error: l.error.map(str::to_string),
            fields: l
                .fields
                .0
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_text()))
                .collect(),
        })
    })?;
    Ok(answer)
}

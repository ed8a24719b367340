//! Where observed values go: the `ValueSink` contract and an in-memory sink.
//!
//! A sink stores `(id, step) → value` and reads back exactly what was written: `query` by id
//! and step, `history` of one id up to a step (what the runtime's temporal option needs). The
//! store-backed sink implements the same trait over a run's forwards.

use crate::observe::value::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Why a sink could not write or read.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkError {
    /// Writing failed (e.g. disk full or the store is read-only); retrying may help.
    Write { message: String },
    /// Reading failed (e.g. a damaged blob); names what, retrying will not help.
    Read { message: String },
}

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SinkError::Write { message } => write!(f, "writing values: {message}"),
            SinkError::Read { message } => write!(f, "reading values: {message}"),
        }
    }
}

impl std::error::Error for SinkError {}

/// The storage contract for observed values.
pub trait ValueSink {
    /// Store every value observed at a step (by spec id). Writing a step again replaces
    /// the values it names.
    fn write(&mut self, step: u64, values: &BTreeMap<String, Value>) -> Result<(), SinkError>;
    /// Exactly the value written for this id at this step, if any.
    fn query(&self, id: &str, step: u64) -> Result<Option<Value>, SinkError>;
    /// Every `(step, value)` written for this id at steps `<= through`, oldest first.
    fn history(&self, id: &str, through: u64) -> Result<Vec<(u64, Value)>, SinkError>;
}

/// A sink in memory: id → step → value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemorySink {
    values: BTreeMap<String, BTreeMap<u64, Value>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every id with at least one value.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

impl ValueSink for MemorySink {
    fn write(&mut self, step: u64, values: &BTreeMap<String, Value>) -> Result<(), SinkError> {
        for (id, v) in values {
            self.values
                .entry(id.clone())
                .or_default()
                .insert(step, v.clone());
        }
        Ok(())
    }

    fn query(&self, id: &str, step: u64) -> Result<Option<Value>, SinkError> {
        Ok(self.values.get(id).and_then(|s| s.get(&step)).cloned())
    }

    fn history(&self, id: &str, through: u64) -> Result<Vec<(u64, Value)>, SinkError> {
        Ok(self
            .values
            .get(id)
            .map(|s| s.range(..=through).map(|(k, v)| (*k, v.clone())).collect())
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_reads_back_exactly_and_history_stops_at_the_step() {
        let mut sink = MemorySink::new();
        for step in [0u64, 5, 10] {
            let values =
                BTreeMap::from([("a".to_string(), Value::Scalar(Some(step as f64 / 3.0)))]);
            sink.write(step, &values).unwrap();
        }
        assert_eq!(
            sink.query("a", 5).unwrap(),
            Some(Value::Scalar(Some(5.0 / 3.0)))
        );
        assert_eq!(sink.query("a", 6).unwrap(), None);
        assert_eq!(sink.query("b", 5).unwrap(), None);
        let steps: Vec<u64> = sink
            .history("a", 7)
            .unwrap()
            .iter()
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(steps, vec![0, 5]);
    }
}

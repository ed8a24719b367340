//! `StoreSink`: the store-backed `ValueSink`, one forward per observed step with `values.json`.

use super::Recorder;
use crate::observe::sink::{SinkError, ValueSink};
use crate::observe::value::Value;
use crate::store::{DirFs, ForwardRecord, ObservedValues, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Observed values written into a run of a store: each `write(step, …)` is one forward whose
/// blob holds `values.json` (`{spec id: value}`); `query` and `history` read them back from
/// the store itself, so what comes back is exactly what a later reader sees.
pub struct StoreSink {
    recorder: Recorder,
    root: PathBuf,
    run: String,
}

fn write_err(e: impl std::fmt::Display) -> SinkError {
    SinkError::Write {
        message: e.to_string(),
    }
}

fn read_err(e: impl std::fmt::Display) -> SinkError {
    SinkError::Read {
        message: e.to_string(),
    }
}

impl StoreSink {
    /// A sink writing run `run` of the store at `root` as writer `writer`.
    pub fn new(root: impl AsRef<Path>, run: &str, writer: &str) -> Result<Self, SinkError> {
        let recorder = Recorder::with_writer(root.as_ref(), run, writer).map_err(write_err)?;
        Ok(StoreSink {
            recorder,
            root: root.as_ref().to_path_buf(),
            run: run.to_string(),
        })
    }

    fn store(&self) -> Result<Store<DirFs>, SinkError> {
        Store::open(DirFs::new(&self.root)).map_err(read_err)
    }
}

/// The value of `id` in a blob's `values.json`, if written.
fn value_in(values: &ObservedValues, id: &str) -> Result<Option<Value>, SinkError> {
    values
        .get(id)
        .map(|v| serde_json::from_value(v.clone()).map_err(read_err))
        .transpose()
}

impl ValueSink for StoreSink {
    fn write(&mut self, step: u64, values: &BTreeMap<String, Value>) -> Result<(), SinkError> {
        let values = values
            .iter()
            .map(|(id, v)| Ok((id.clone(), serde_json::to_value(v).map_err(write_err)?)))
            .collect::<Result<ObservedValues, SinkError>>()?;
        let rec = ForwardRecord {
            forward: step,
            values,
            ..Default::default()
        };
        self.recorder.record(&rec).map_err(write_err)?;
        Ok(())
    }

    fn query(&self, id: &str, step: u64) -> Result<Option<Value>, SinkError> {
        let store = self.store()?;
        for item in store.find(&self.run, step).map_err(read_err)? {
            if item.entry.blob.is_none() {
                continue;
            }
            let blob = store
                .fetch(&self.run, &item.writer, &item.entry)
                .map_err(read_err)?;
            if let Some(v) = value_in(&blob.values().map_err(read_err)?, id)? {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    fn history(&self, id: &str, through: u64) -> Result<Vec<(u64, Value)>, SinkError> {
        let store = self.store()?;
        let mut out = Vec::new();
        for item in store.scan(&self.run).map_err(read_err)? {
            let item = item.map_err(read_err)?;
            if item.entry.forward > through || item.entry.blob.is_none() {
                continue;
            }
            let blob = store
                .fetch(&self.run, &item.writer, &item.entry)
                .map_err(read_err)?;
            if let Some(v) = value_in(&blob.values().map_err(read_err)?, id)? {
                out.push((item.entry.forward, v));
            }
        }
        Ok(out)
    }
}

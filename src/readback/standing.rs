//! `standing`: every machine writing readings into a store, its newest reading, and how far
//! behind the newest reading of any writer it is (writer against writer, never this clock).

use super::error::Result;
use super::fleet::writer_folders;
use crate::store::{Store, StoreFs};
use serde::Serialize;
use std::collections::BTreeMap;

/// A machine's newest reading, where it was written, and how quiet it has been since.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StandingRow {
    /// What the machine calls itself.
    pub machine: String,
    /// The run and writer whose readings file holds it.
    pub run: String,
    pub writer: String,
    /// When it was written, µs since the epoch, its writer's clock.
    pub written_us: i64,
    pub busy: Option<f64>,
    pub memory: Option<u64>,
    pub cores: Option<u32>,
    pub up_us: Option<u64>,
    pub served: Option<u64>,
    /// Seconds between this reading and the newest reading any writer in the store wrote.
    pub quiet_s: f64,
}

/// Every machine with readings in the store, keyed by its own name, with its newest reading.
/// One small read from the end of each writer's readings file; no index, no blob.
pub fn standing<F: StoreFs>(store: &Store<F>) -> Result<BTreeMap<String, StandingRow>> {
    let mut out: BTreeMap<String, StandingRow> = BTreeMap::new();
    for run in store.runs()? {
        for w in writer_folders(store, &run)? {
            let Some(r) = store.newest_reading(&run, &w)? else {
                continue;
            };
            if out
                .get(&r.machine)
                .is_some_and(|old| old.written_us >= r.written_us)
            {
                continue;
            }
            out.insert(
                r.machine.clone(),
                StandingRow {
                    machine: r.machine,
                    run: run.clone(),
                    writer: w,
                    written_us: r.written_us,
                    busy: r.busy,
                    memory: r.memory,
                    cores: r.cores,
                    up_us: r.up_us,
                    served: r.served,
                    quiet_s: 0.0,
                },
            );
        }
    }
    let newest = out.values().map(|r| r.written_us).max().unwrap_or(0);
    for row in out.values_mut() {
        row.quiet_s = newest.saturating_sub(row.written_us) as f64 / 1e6;
    }
    Ok(out)
}

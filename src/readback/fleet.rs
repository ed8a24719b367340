//! `fleet`: what each machine did in a run, the inverse of `nodes`, joined with the newest
//! reading each machine wrote; and the convention that says what a round trip to one was.
//!
//! A *call* is a fact the caller recorded for a round trip to another machine: any fact with
//! an extra text field `"calls"` naming that machine (`{"node":"block3","kind":"Remote",
//! "where":"local","calls":"w1","began_us":100,"took_us":520}`). Its `took_us` is the whole
//! round trip on the caller's clock; it is waiting, not work, so it counts to the called
//! machine's round trip and not to the caller's working time.

use super::error::{Answer, ReadbackError, Result};
use super::fetch::each_forward;
use crate::store::{Fact, Reading, Store, StoreFs};
use serde::Serialize;
use std::collections::HashMap;

/// The machine a fact is a round trip to, if it is a call.
pub fn call_target(f: &Fact) -> Option<&str> {
    f.extra.get("calls").and_then(|v| v.as_str())
}

/// One machine (a `where` of the facts) over the forwards read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetRow {
    pub machine: String,
    /// The nodes that ran there, in order of first appearance.
    pub nodes: Vec<String>,
    /// Facts computed there (not read back, not calls).
    pub ran: u64,
    /// Facts read back there instead of computed.
    pub read_back: u64,
    /// Time those facts took there, µs.
    pub working_us: u64,
    /// Calls to this machine, and their round trips added up, µs (`None`: nobody called it).
    pub calls: u64,
    pub round_trip_us: Option<u64>,
    /// The round trips minus what ran there: the wire, the queue and the codec, µs.
    pub waiting_us: Option<i64>,
    /// From the newest reading of this machine in the run (`None`: it said nothing).
    pub busy: Option<f64>,
    pub memory: Option<u64>,
    pub cores: Option<u32>,
    pub up_us: Option<u64>,
    pub served: Option<u64>,
    /// When that reading was written, µs since the epoch, its writer's clock.
    pub reading_written_us: Option<i64>,
}

impl FleetRow {
    fn new(machine: &str) -> Self {
        FleetRow {
            machine: machine.to_string(),
            nodes: Vec::new(),
            ran: 0,
            read_back: 0,
            working_us: 0,
            calls: 0,
            round_trip_us: None,
            waiting_us: None,
            busy: None,
            memory: None,
            cores: None,
            up_us: None,
            served: None,
            reading_written_us: None,
        }
    }
}

#[derive(Default)]
struct FleetTally {
    rows: Vec<FleetRow>,
    at: HashMap<String, usize>,
}

impl FleetTally {
    fn row(&mut self, machine: &str) -> &mut FleetRow {
        let i = match self.at.get(machine) {
            Some(&i) => i,
            None => {
                self.rows.push(FleetRow::new(machine));
                self.at.insert(machine.to_string(), self.rows.len() - 1);
                self.rows.len() - 1
            }
        };
        &mut self.rows[i]
    }

    fn add(&mut self, f: &Fact) {
        if let Some(to) = call_target(f) {
            let row = self.row(to);
            row.calls += 1;
            row.round_trip_us = Some(row.round_trip_us.unwrap_or(0).saturating_add(f.took_us));
            return;
        }
        let row = self.row(&f.where_);
        if !row.nodes.contains(&f.node) {
            row.nodes.push(f.node.clone());
        }
        if f.read_back {
            row.read_back += 1;
        } else {
            row.ran += 1;
            row.working_us = row.working_us.saturating_add(f.took_us);
        }
    }
}

/// Per machine: what ran there, how long it worked, its round trips and what of them was
/// waiting, and its newest reading. A fetch per forward, as `nodes`; `last = Some(n)` reads
/// only the last `n` forwards' blobs. Readings are read from their ends (one small read per
/// writer) and joined by the machine's name or, failing that, its writer id.
pub fn fleet<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
) -> Result<Answer<Vec<FleetRow>>> {
    let mut tally = FleetTally::default();
    let mut skipped = Vec::new();
    each_forward(store, run, last, &mut skipped, &mut |_, facts| {
        facts.iter().for_each(|f| tally.add(f))
    })?;
    let readings = newest_readings(store, run)?;
    for row in &mut tally.rows {
        if let Some(rt) = row.round_trip_us {
            row.waiting_us = Some(rt as i64 - row.working_us.min(i64::MAX as u64) as i64);
        }
        if let Some(r) = readings.get(&row.machine) {
            row.busy = r.busy;
            row.memory = r.memory;
            row.cores = r.cores;
            row.up_us = r.up_us;
            row.served = r.served;
            row.reading_written_us = Some(r.written_us);
        }
    }
    Ok(Answer {
        rows: tally.rows,
        skipped,
    })
}

/// The writer folders of `run` (with an index or not: a machine may only write readings).
pub(crate) fn writer_folders<F: StoreFs>(store: &Store<F>, run: &str) -> Result<Vec<String>> {
    store
        .writer_folders(run)
        .map_err(|e| ReadbackError::in_run(run, e))
}

/// The newest reading per machine name and per writer id in `run` (a machine's own name wins).
fn newest_readings<F: StoreFs>(store: &Store<F>, run: &str) -> Result<HashMap<String, Reading>> {
    let mut by_machine: HashMap<String, Reading> = HashMap::new();
    let mut by_writer: HashMap<String, Reading> = HashMap::new();
    for w in writer_folders(store, run)? {
        if let Some(r) = store.newest_reading(run, &w)? {
            keep_newest(&mut by_machine, r.machine.clone(), r.clone());
            by_writer.insert(w, r);
        }
    }
    for (w, r) in by_writer {
        by_machine.entry(w).or_insert(r);
    }
    Ok(by_machine)
}

/// Keep `r` under `key` unless a newer reading is there.
pub(crate) fn keep_newest(map: &mut HashMap<String, Reading>, key: String, r: Reading) {
    match map.get(&key) {
        Some(old) if old.written_us >= r.written_us => {}
        _ => {
            map.insert(key, r);
        }
    }
}

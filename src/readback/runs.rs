//! `runs`: every run a store holds, newest last, from the indexes alone.

use super::error::{Answer, ReadbackError, Result};
use super::lines::{walk, writers};
use crate::store::{Store, StoreError, StoreFs};
use serde::Serialize;

/// One run, as its indexes say it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    pub run: String,
    /// Writers (processes, ranks, machines) with an index in this run.
    pub writers: usize,
    /// Distinct forward numbers over all writers.
    pub forwards: u64,
    /// Forwards that broke (any writer's line says so).
    pub broke: u64,
    /// When the first and last index lines were written, µs since the epoch, writers' clocks.
    pub first_written_us: Option<i64>,
    pub last_written_us: Option<i64>,
    /// How long the forwards took, added up (a forward several writers recorded counts once,
    /// at the longest of their durations).
    pub took_us: u64,
    /// `took_us / forwards`, 0 for a run with none.
    pub mean_took_us: f64,
    /// How the recording ended: `true` when every writer wrote an exit record saying it
    /// went well, `false` when one said it did not, `None` while one has none (still going,
    /// or cut off).
    pub ended_ok: Option<bool>,
}

/// Every run in the store, newest (by last written line) last. One scan of each index, no
/// fetches; memory is one row per run.
pub fn runs<F: StoreFs>(store: &Store<F>) -> Result<Answer<Vec<RunRow>>> {
    let mut answer = Answer::new(Vec::new());
    for run in store.runs()? {
        let row = one_run(store, &run, &mut answer.skipped)?;
        answer.rows.push(row);
    }
    answer
        .rows
        .sort_by(|a, b| (a.last_written_us, &a.run).cmp(&(b.last_written_us, &b.run)));
    Ok(answer)
}

fn one_run<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    skipped: &mut Vec<super::Skip>,
) -> Result<RunRow> {
    let ws = writers(store, run)?;
    let mut row = RunRow {
        run: run.to_string(),
        writers: ws.len(),
        forwards: 0,
        broke: 0,
        first_written_us: None,
        last_written_us: None,
        took_us: 0,
        mean_took_us: 0.0,
        ended_ok: ended_ok(store, run, &ws)?,
    };
    // The forward being added up: (number, broke, longest took).
    let mut current: Option<(u64, bool, u64)> = None;
    let close = |row: &mut RunRow, c: Option<(u64, bool, u64)>| {
        if let Some((_, broke, took)) = c {
            row.forwards += 1;
            row.broke += broke as u64;
            row.took_us = row.took_us.saturating_add(took);
        }
    };
    let mut first = i64::MAX;
    let mut last = i64::MIN;
    walk(store, run, skipped, &mut |l| {
        first = first.min(l.written_us);
        last = last.max(l.written_us);
        match &mut current {
            Some((n, broke, took)) if *n == l.forward => {
                *broke |= l.broke;
                *took = (*took).max(l.took_us);
            }
            c => {
                let done = c.replace((l.forward, l.broke, l.took_us));
                close(&mut row, done);
            }
        }
    })?;
    close(&mut row, current);
    if row.forwards > 0 {
        row.first_written_us = Some(first);
        row.last_written_us = Some(last);
        row.mean_took_us = row.took_us as f64 / row.forwards as f64;
    }
    Ok(row)
}

pub(crate) fn ended_ok<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    ws: &[String],
) -> Result<Option<bool>> {
    let mut all = true;
    for w in ws {
        match store.exit(run, w) {
            Ok(Some(e)) => all &= e.ok,
            Ok(None) => return Ok(None),
            // An unreadable exit record says the recording did not end well.
            Err(StoreError::BadEntry { .. }) => all = false,
            Err(e) => return Err(ReadbackError::in_run(run, e)),
        }
    }
    Ok((!ws.is_empty()).then_some(all))
}

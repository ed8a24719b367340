//! `nodes`: what each node did over a run (or its last N forwards), added up from the facts.

use super::error::{Answer, Result};
use super::fetch::each_forward;
use crate::store::{Fact, Store, StoreFs};
use serde::Serialize;
use std::collections::HashMap;

/// One node at one place, added up over the forwards read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    pub node: String,
    /// Its kind (as its first fact said).
    pub kind: String,
    /// Where it ran (a node that ran in two places has a row for each).
    #[serde(rename = "where")]
    pub where_: String,
    /// Times it ran (computed, not read back).
    pub ran: u64,
    /// Times its output was read back instead of computed.
    pub read_back: u64,
    /// Times it failed (its fact carries an error).
    pub failed: u64,
    /// Time it took over the times it ran, µs.
    pub total_us: u64,
    /// `total_us / ran`, 0 when it never ran.
    pub mean_us: f64,
}

/// Adds facts up per (node, where), rows in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct NodeTally {
    pub rows: Vec<NodeRow>,
    at: HashMap<(String, String), usize>,
}

impl NodeTally {
    pub fn add(&mut self, f: &Fact) {
        let key = (f.node.clone(), f.where_.clone());
        let i = *self.at.entry(key).or_insert_with(|| {
            self.rows.push(NodeRow {
                node: f.node.clone(),
                kind: f.kind.clone(),
                where_: f.where_.clone(),
                ran: 0,
                read_back: 0,
                failed: 0,
                total_us: 0,
                mean_us: 0.0,
            });
            self.rows.len() - 1
        });
        let row = &mut self.rows[i];
        if f.read_back {
            row.read_back += 1;
        } else {
            row.ran += 1;
            row.total_us = row.total_us.saturating_add(f.took_us);
        }
        row.failed += f.error.is_some() as u64;
    }

    pub fn finish(mut self) -> Vec<NodeRow> {
        for r in &mut self.rows {
            if r.ran > 0 {
                r.mean_us = r.total_us as f64 / r.ran as f64;
            }
        }
        self.rows
    }
}

/// Per node and place: times run, total and mean time, times read back instead, times failed.
/// A fetch per forward (which node did what is in the blobs); `last = Some(n)` reads only the
/// last `n` forwards' blobs. Unreadable blobs are skipped and reported.
pub fn nodes<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
) -> Result<Answer<Vec<NodeRow>>> {
    let mut tally = NodeTally::default();
    let mut skipped = Vec::new();
    each_forward(store, run, last, &mut skipped, &mut |_, facts| {
        facts.iter().for_each(|f| tally.add(f))
    })?;
    Ok(Answer {
        rows: tally.finish(),
        skipped,
    })
}

//! `curve`: one number per forward, from the index when the field is summarised there, else
//! from each forward's facts; `curve_costs` says which of the two `curve` will do.

use super::error::{Answer, ReadbackError, Result};
use super::fetch::each_forward;
use super::lines::walk;
use crate::store::fact::{Field, Num};
use crate::store::{Fact, IndexLine, Store, StoreFs};
use serde::ser::{SerializeTuple, Serializer};
use serde::Serialize;

/// How many of a run's last index lines are looked at to decide whether a field is summarised.
pub const COST_PROBE: usize = 16;

/// What a curve costs: one scan of the indexes, or a fetch per forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cost {
    Scan,
    Fetch,
}

impl Cost {
    /// `"scan"` or `"fetch"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Cost::Scan => "scan",
            Cost::Fetch => "fetch",
        }
    }
}

/// One point of a curve; serialised as `[forward, value]` (non-finite values as their text,
/// as in the store).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub forward: u64,
    pub value: f64,
}

impl Serialize for Point {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&self.forward)?;
        t.serialize_element(&Num(self.value))?;
        t.end()
    }
}

/// How much of the end of each index `curve_costs` reads.
const COST_TAIL: u64 = 64 << 10;

/// Whether `curve(run, of)` will scan or fetch: `Scan` when `of` is among the summarised fields
/// of any of the last [`COST_PROBE`] lines of any writer's index (one read of at most 64 KiB
/// from the end of each index; longer lines are found by reading backwards).
pub fn curve_costs<F: StoreFs>(store: &Store<F>, run: &str, of: &str) -> Result<Cost> {
    for w in super::lines::writers(store, run)? {
        if tail_has(store, run, &w, of)? {
            return Ok(Cost::Scan);
        }
    }
    Ok(Cost::Fetch)
}

/// Whether one of the last few whole lines of `writer`'s index carries `of`.
fn tail_has<F: StoreFs>(store: &Store<F>, run: &str, writer: &str, of: &str) -> Result<bool> {
    let path = crate::store::scan::index_path(run, writer);
    let len = store.fs().len(&path)?;
    let start = len.saturating_sub(COST_TAIL);
    let tail = store.fs().read_range(&path, start, len - start)?;
    let Some(end) = tail.iter().rposition(|&b| b == b'\n') else {
        return long_lines_have(store, run, of, len > 0);
    };
    let mut lines: Vec<&[u8]> = tail[..end].split(|&b| b == b'\n').collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0); // it began before what was read
    }
    if lines.is_empty() {
        return long_lines_have(store, run, of, true);
    }
    Ok(lines.iter().rev().take(COST_PROBE).any(|l| {
        std::str::from_utf8(l)
            .ok()
            .and_then(|t| IndexLine::parse(t).ok())
            .is_some_and(|l| l.fields.get(of).is_some())
    }))
}

/// Lines longer than the tail read: look at the last few by reading backwards.
fn long_lines_have<F: StoreFs>(store: &Store<F>, run: &str, of: &str, any: bool) -> Result<bool> {
    if !any {
        return Ok(false);
    }
    let tail = store
        .last(run, COST_PROBE, &mut |_| {})
        .map_err(|e| ReadbackError::in_run(run, e))?;
    Ok(tail.iter().any(|i| i.entry.field(of).is_some()))
}

/// `of` (`<kind>.<field>`, e.g. `loss.value`) for every forward that has it as a number, in
/// order. One scan of the indexes when [`curve_costs`] says `Scan`; otherwise a fetch per
/// forward, reading the field from the first fact of that kind (as a writer summarises it).
pub fn curve<F: StoreFs>(store: &Store<F>, run: &str, of: &str) -> Result<Answer<Vec<Point>>> {
    let mut answer = Answer::new(Vec::new());
    let points = &mut answer.rows;
    match curve_costs(store, run, of)? {
        Cost::Scan => walk(store, run, &mut answer.skipped, &mut |l| {
            if let Some(v) = l.fields.number(of) {
                points.push(Point {
                    forward: l.forward,
                    value: v,
                })
            }
        })?,
        Cost::Fetch => each_forward(store, run, None, &mut answer.skipped, &mut |item, facts| {
            if let Some(v) = value_in_facts(&facts, of) {
                points.push(Point {
                    forward: item.entry.forward,
                    value: v,
                })
            }
        })?,
    }
    Ok(answer)
}

/// The value of `<kind>.<field>` in a forward's facts: the first fact of that kind, its extra
/// field (a number, or the text of a non-finite one), or its `took_us`/`began_us`. The kind is
/// what comes before the first dot.
pub fn value_in_facts(facts: &[Fact], of: &str) -> Option<f64> {
    let (kind, field) = of.split_once('.')?;
    let fact = facts.iter().find(|f| f.kind == kind)?;
    match field {
        "took_us" if !fact.extra.contains_key(field) => Some(fact.took_us as f64),
        "began_us" if !fact.extra.contains_key(field) => Some(fact.began_us as f64),
        _ => Field::from_json(fact.extra.get(field)?)?.as_f64(),
    }
}

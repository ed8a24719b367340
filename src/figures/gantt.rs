//! The `gantt` figure: one forward on a timeline — what ran when, and what was waiting.
//!
//! Every fact is a bar from its `began_us` for its `took_us`, so facts that ran at the same
//! time overlap. A slice that ran on another machine (the facts of machine M that arrived
//! after a call to M, up to the next call to M — or before the first call to M, for a sender
//! that sends a call's fact when its round trip ends; see `readback::fleet`) counts from its own
//! start — the earliest `began_us` among its facts, on M's clock — and is shifted to the
//! `began_us` of the call it arrived under, on the caller's clock: two wall clocks are never
//! compared. Facts of a machine nobody called are drawn where their `began_us` puts them.

use super::spent::first_seen;
use super::{colour, num, Figure};
use crate::readback::facts::{facts, facts_of};
use crate::readback::fleet::call_target;
use crate::readback::{KeptLines, ReadbackError, Result};
use crate::store::{Fact, Store, StoreFs};
use serde_json::json;
use std::collections::HashMap;

/// One forward of a run on a timeline. One fetch (per writer that recorded it), after finding
/// its line by bisecting each index; a forward the run does not hold is `NoSuchForward`.
pub fn gantt<F: StoreFs>(store: &Store<F>, run: &str, forward: u64) -> Result<Figure> {
    gantt_kept(store, run, forward, &KeptLines::default())
}

/// [`gantt`], its forward's lines taken from `kept` when those say for certain (then the index
/// is not read: one listing of the writer folders, then the fetch); the same figure.
pub fn gantt_kept<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    forward: u64,
    kept: &KeptLines,
) -> Result<Figure> {
    let found = match kept
        .find(store, run, forward)
        .map_err(|e| ReadbackError::in_run(run, e))?
    {
        Some(items) => facts_of(store, run, forward, items)?,
        None => facts(store, run, forward)?,
    };
    let facts = found.ok_or_else(|| ReadbackError::NoSuchForward {
        run: run.to_string(),
        forward,
    })?;
    Ok(draw(run, forward, &facts))
}

/// Where each fact starts on the caller's timeline, µs from the forward's start.
pub fn starts(facts: &[Fact]) -> Vec<i64> {
    // Which call (by index) each fact arrived under, if its machine was called: the last
    // call to its machine before it, or, for facts sent ahead of their call, the first after.
    let mut calls: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in facts.iter().enumerate() {
        if let Some(to) = call_target(f) {
            calls.entry(to).or_default().push(i);
        }
    }
    let under: Vec<Option<usize>> = facts
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if call_target(f).is_some() {
                return None;
            }
            let mine = calls.get(f.where_.as_str())?;
            let after = mine.partition_point(|&c| c < i);
            after
                .checked_sub(1)
                .or(Some(0))
                .and_then(|k| mine.get(k))
                .copied()
        })
        .collect();
    // Each slice's own start: its earliest fact.
    let mut own: HashMap<usize, i64> = HashMap::new();
    for (f, u) in facts.iter().zip(&under) {
        if let Some(c) = u {
            let s = own.entry(*c).or_insert(f.began_us);
            *s = (*s).min(f.began_us);
        }
    }
    facts
        .iter()
        .zip(&under)
        .map(|(f, u)| match u {
            Some(c) => facts[*c]
                .began_us
                .saturating_add(f.began_us.saturating_sub(own[c])),
            None => f.began_us,
        })
        .collect()
}

/// Draw one forward's facts: a horizontal bar per fact, one trace per place; calls are
/// hatched, facts read back dotted.
pub fn draw(run: &str, forward: u64, facts: &[Fact]) -> Figure {
    let at = starts(facts);
    let order = first_seen(facts.iter().map(|f| f.node.as_str()));
    let mut fig = Figure::new(&format!("Forward {forward} of run {run}"))
        .axis("xaxis", "time from the forward's start (ms)", json!({"rangemode": "tozero"}))
        .axis("yaxis", "node", json!({"type": "category", "categoryorder": "array", "categoryarray": order, "autorange": "reversed"}))
        .layout(json!({"barmode": "overlay", "legend": {"title": {"text": "where"}}}));
    for (i, place) in first_seen(facts.iter().map(|f| f.where_.as_str()))
        .into_iter()
        .enumerate()
    {
        let mine: Vec<usize> = (0..facts.len())
            .filter(|&k| facts[k].where_ == place)
            .collect();
        let pattern: Vec<&str> = mine
            .iter()
            .map(|&k| match (&facts[k], call_target(&facts[k])) {
                (_, Some(_)) => "/",
                (f, None) if f.read_back => ".",
                _ => "",
            })
            .collect();
        fig = fig.trace(json!({
            "type": "bar", "orientation": "h", "name": place, "opacity": 0.75,
            "y": mine.iter().map(|&k| &facts[k].node).collect::<Vec<_>>(),
            "base": mine.iter().map(|&k| num(at[k] as f64 / 1000.0)).collect::<Vec<_>>(),
            "x": mine.iter().map(|&k| num(facts[k].took_us as f64 / 1000.0)).collect::<Vec<_>>(),
            "text": mine.iter().map(|&k| label(&facts[k], at[k])).collect::<Vec<_>>(),
            "hoverinfo": "text",
            "marker": {"color": colour(i), "pattern": {"shape": pattern}},
        }));
    }
    fig
}

fn label(f: &Fact, at: i64) -> String {
    let mut s = format!(
        "{} ({}) on {}: {:.3} ms from {:.3} ms",
        f.node,
        f.kind,
        f.where_,
        f.took_us as f64 / 1000.0,
        at as f64 / 1000.0
    );
    if let Some(to) = call_target(f) {
        s.push_str(&format!("; round trip to {to}"));
    }
    if f.read_back {
        s.push_str("; read back");
    }
    if let Some(e) = &f.error {
        s.push_str(&format!("; failed: {e}"));
    }
    s
}

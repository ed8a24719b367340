//! `Live`: a run drawn while it happens. A fixed-memory tally that receives forwards (index
//! lines) or facts as they arrive and gives the same figure `progress` draws from a store.
//!
//! Memory is bounded, not one row per forward for ever: the tally keeps at most `cap` rows
//! (default [`DEFAULT_CAP`]); when full it drops every other row and from then on keeps every
//! 2nd, then every 4th, … forward, so a row is kept for every `stride`-th forward. The rolling
//! mean is computed over *every* forward as it arrives (a window of at most `cap` numbers), and
//! broken forwards are kept in a list of their own under the same rule, so a break is never
//! thinned away until there are more than `cap` of them. `progress` over a stored run feeds
//! this same tally, so both draw the same picture at any length.

use super::curve::value_in_facts;
use crate::figures::Figure;
use crate::store::fact::Field;
use crate::store::{Fact, IndexEntry};
use serde::Serialize;
use std::collections::VecDeque;

/// Rows kept by default before thinning.
pub const DEFAULT_CAP: usize = 10_000;
/// The longest error text kept per broken forward.
const MAX_ERROR: usize = 240;

/// What a live view draws and how much it may keep.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveOptions {
    /// The figure's title.
    pub title: String,
    /// The field drawn, `<kind>.<field>` (default `loss.value`).
    pub of: String,
    /// The rolling mean's window in forwards; 0 draws only what was measured.
    pub smooth: usize,
    /// The most rows kept (at least 2); beyond it, rows are thinned as described above.
    pub cap: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            title: "live".into(),
            of: super::DEFAULT_FIELD.into(),
            smooth: 0,
            cap: DEFAULT_CAP,
        }
    }
}

/// One forward as the progress figure draws it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgressRow {
    pub forward: u64,
    /// The drawn field, when the forward had it.
    pub value: Option<f64>,
    /// The rolling mean at this forward, when smoothing and it had a value.
    pub smoothed: Option<f64>,
    pub took_us: u64,
    pub broke: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Rows thinned to a cap: keeps the arrivals whose ordinal is a multiple of `stride`.
#[derive(Debug, Clone, PartialEq)]
struct Thinned {
    rows: Vec<(u64, ProgressRow)>,
    seen: u64,
    stride: u64,
    cap: usize,
}

impl Thinned {
    fn new(cap: usize) -> Self {
        Thinned {
            rows: Vec::new(),
            seen: 0,
            stride: 1,
            cap: cap.max(2),
        }
    }

    fn push(&mut self, row: ProgressRow) {
        let ordinal = self.seen;
        self.seen += 1;
        if !ordinal.is_multiple_of(self.stride) {
            return;
        }
        self.rows.push((ordinal, row));
        if self.rows.len() >= self.cap {
            self.stride = self.stride.saturating_mul(2);
            let stride = self.stride;
            self.rows.retain(|(o, _)| o.is_multiple_of(stride));
        }
    }
}

/// The tally behind `progress` and `Live`: bounded rows, a rolling mean over every forward.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub options: LiveOptions,
    rows: Thinned,
    broke: Thinned,
    window: VecDeque<f64>,
    sum: f64,
    since_resum: usize,
}

impl Tally {
    /// An empty tally.
    pub fn new(options: LiveOptions) -> Self {
        let cap = options.cap.max(2);
        Tally {
            rows: Thinned::new(cap),
            broke: Thinned::new(cap),
            window: VecDeque::new(),
            sum: 0.0,
            since_resum: 0,
            options: LiveOptions {
                smooth: options.smooth.min(cap),
                cap,
                ..options
            },
        }
    }

    /// Add one forward (its `smoothed` is computed here).
    pub fn push(&mut self, mut row: ProgressRow) {
        row.smoothed = self.smooth(row.value);
        if let Some(e) = &mut row.error {
            truncate(e, MAX_ERROR);
        }
        if row.broke {
            self.broke.push(row.clone());
        }
        self.rows.push(row);
    }

    fn smooth(&mut self, value: Option<f64>) -> Option<f64> {
        let w = self.options.smooth;
        let v = value.filter(|v| v.is_finite() && w > 0)?;
        self.window.push_back(v);
        self.sum += v;
        if self.window.len() > w {
            self.sum -= self.window.pop_front().unwrap_or(0.0);
        }
        // Re-add the window now and then so rounding cannot drift.
        self.since_resum += 1;
        if self.since_resum >= w {
            self.sum = self.window.iter().sum();
            self.since_resum = 0;
        }
        Some(self.sum / self.window.len() as f64)
    }

    /// The rows kept, in order.
    pub fn rows(&self) -> impl Iterator<Item = &ProgressRow> {
        self.rows.rows.iter().map(|(_, r)| r)
    }

    /// The broken forwards kept, in order.
    pub fn broken(&self) -> impl Iterator<Item = &ProgressRow> {
        self.broke.rows.iter().map(|(_, r)| r)
    }

    /// Forwards seen, and the stride rows are kept at (1 until the cap was reached).
    pub fn seen(&self) -> (u64, u64) {
        (self.rows.seen, self.rows.stride)
    }

    /// Rows held now (never more than the cap).
    pub fn held(&self) -> usize {
        self.rows.rows.len() + self.broke.rows.len()
    }

    /// The progress figure of what was tallied.
    pub fn figure(&self) -> Figure {
        crate::figures::progress::draw(self)
    }
}

fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
}

/// A forward whose facts are still arriving: only what the figure needs, not the facts.
#[derive(Debug, Clone, PartialEq)]
struct Open {
    forward: u64,
    start: i64,
    end: i64,
    error: Option<String>,
    value: Option<f64>,
    seen_kind: bool,
}

/// A run drawn while it happens: hand it index lines ([`Live::entry`]) or facts
/// ([`Live::fact`]) as they arrive, and ask for [`Live::figure`] whenever.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    tally: Tally,
    open: Option<Open>,
}

impl Live {
    /// An empty live view.
    pub fn new(options: LiveOptions) -> Self {
        Live {
            tally: Tally::new(options),
            open: None,
        }
    }

    /// A forward as its index line says it (a store being written, read as it grows).
    pub fn entry(&mut self, e: &IndexEntry) {
        self.close();
        let value = e.field(&self.tally.options.of).and_then(Field::as_f64);
        self.tally.push(ProgressRow {
            forward: e.forward,
            value,
            smoothed: None,
            took_us: e.took_us,
            broke: e.broke,
            error: e.error.clone(),
        });
    }

    /// One fact of forward `forward` as it arrives. A fact of another forward closes the one
    /// open; its time is the span of its facts, and it broke when a fact carries an error.
    pub fn fact(&mut self, forward: u64, f: &Fact) {
        if self.open.as_ref().is_some_and(|o| o.forward != forward) {
            self.close();
        }
        let end = f
            .began_us
            .saturating_add(f.took_us.min(i64::MAX as u64) as i64);
        let of = self.tally.options.of.clone();
        let open = self.open.get_or_insert(Open {
            forward,
            start: f.began_us,
            end,
            error: None,
            value: None,
            seen_kind: false,
        });
        open.start = open.start.min(f.began_us);
        open.end = open.end.max(end);
        if open.error.is_none() {
            open.error = f.error.as_ref().map(|e| format!("{}: {e}", f.node));
        }
        let kind = of.split_once('.').map(|(k, _)| k);
        if !open.seen_kind && kind == Some(f.kind.as_str()) {
            open.seen_kind = true;
            open.value = value_in_facts(std::slice::from_ref(f), &of);
        }
    }

    /// Close the forward whose facts were arriving (done by the next forward's first fact).
    pub fn close(&mut self) {
        if let Some(o) = self.open.take() {
            self.tally.push(o.row());
        }
    }

    /// The progress figure of everything that has arrived, the open forward included.
    pub fn figure(&self) -> Figure {
        match &self.open {
            None => self.tally.figure(),
            Some(o) => {
                let mut t = self.tally.clone();
                t.push(o.row());
                t.figure()
            }
        }
    }

    /// The tally underneath.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }
}

impl Open {
    fn row(&self) -> ProgressRow {
        ProgressRow {
            forward: self.forward,
            value: self.value,
            smoothed: None,
            took_us: self.end.saturating_sub(self.start).max(0) as u64,
            broke: self.error.is_some(),
            error: self.error.clone(),
        }
    }
}

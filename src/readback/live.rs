//! `Live`: a run drawn while it happens. A tally that receives forwards (index lines) or facts
//! as they arrive and gives the same figure `progress` draws from a store.
//!
//! One compact row of numbers per forward is kept, as the seed's Live does (forward, value,
//! time, whether it broke: 32 bytes, [`ROW_BYTES`]), and nothing else of it: no facts, no
//! fields, no tensors. Broken forwards keep their error text too (cut to 240 bytes). Drawing is
//! bounded instead: a figure draws at most `cap` points per line (default [`DEFAULT_CAP`]):
//! past that, every 2nd, 4th, … forward (the smallest power of two that fits), while the
//! rolling mean is computed over *every* forward. `progress` over a stored run feeds this same
//! tally, so both draw the same picture at any length.

use super::curve::value_in_facts;
use crate::store::fact::Field;
use crate::store::{Fact, IndexEntry};
use serde::Serialize;
use std::collections::VecDeque;

/// Points drawn per line by default before thinning.
pub const DEFAULT_CAP: usize = 10_000;
/// The longest error text kept per broken forward.
const MAX_ERROR: usize = 240;
/// Bytes held per forward (the compact row).
pub const ROW_BYTES: usize = std::mem::size_of::<Compact>();

/// What a live view draws and how much it may draw.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveOptions {
    /// The figure's title.
    pub title: String,
    /// The field drawn, `<kind>.<field>` (default `loss.value`).
    pub of: String,
    /// The rolling mean's window in forwards; 0 draws only what was measured.
    pub smooth: usize,
    /// The most points drawn per line (at least 2); beyond it, lines are thinned as described above.
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

/// The row kept per forward.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Compact {
    forward: u64,
    /// The value; meaningful when `flags & HAS_VALUE`.
    value: f64,
    took_us: u64,
    flags: u8,
}

const HAS_VALUE: u8 = 1;
const BROKE: u8 = 2;

/// The smallest power of two `stride` with `ceil(n / stride) < cap`: every `stride`-th of `n`
/// rows is drawn. (What keeping rows at a doubling stride while they arrive would keep.)
fn stride_for(n: usize, cap: usize) -> u64 {
    let mut stride: u64 = 1;
    while (n as u64).div_ceil(stride) >= cap as u64 {
        stride = stride.saturating_mul(2);
    }
    stride
}

/// The tally behind `progress` and `Live`: a compact row per forward, a rolling mean over
/// every forward, drawing thinned to `cap` points per line.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub options: LiveOptions,
    rows: Vec<Compact>,
    /// Broken forwards: forward and its error text.
    broke: Vec<(u64, Option<Box<str>>)>,
}

impl Tally {
    /// An empty tally.
    pub fn new(options: LiveOptions) -> Self {
        let cap = options.cap.max(2);
        Tally {
            rows: Vec::new(),
            broke: Vec::new(),
            options: LiveOptions {
                smooth: options.smooth.min(cap),
                cap,
                ..options
            },
        }
    }

    /// Add one forward (its `smoothed` is computed when drawn, over every forward).
    pub fn push(&mut self, row: ProgressRow) {
        let mut flags = 0;
        if row.value.is_some() {
            flags |= HAS_VALUE;
        }
        if row.broke {
            flags |= BROKE;
            let error = row.error.map(|mut e| {
                truncate(&mut e, MAX_ERROR);
                e.into_boxed_str()
            });
            self.broke.push((row.forward, error));
        }
        self.rows.push(Compact {
            forward: row.forward,
            value: row.value.unwrap_or(0.0),
            took_us: row.took_us,
            flags,
        });
    }

    /// Take the last forward off again (see [`Live::figure`]).
    fn pop(&mut self) {
        if let Some(c) = self.rows.pop() {
            if c.flags & BROKE != 0 {
                self.broke.pop();
            }
        }
    }

    /// Every forward's row in order, with its rolling mean (not thinned).
    pub fn all_rows(&self) -> impl Iterator<Item = ProgressRow> + '_ {
        let mut mean = Rolling::new(self.options.smooth);
        self.rows.iter().map(move |c| {
            let value = (c.flags & HAS_VALUE != 0).then_some(c.value);
            ProgressRow {
                forward: c.forward,
                value,
                smoothed: mean.push(value),
                took_us: c.took_us,
                broke: c.flags & BROKE != 0,
                error: None,
            }
        })
    }

    /// The rows drawn, in order: every `stride`-th forward (see [`Tally::seen`]).
    pub fn rows(&self) -> impl Iterator<Item = ProgressRow> + '_ {
        let stride = self.seen().1;
        self.all_rows()
            .enumerate()
            .filter(move |(i, _)| (*i as u64).is_multiple_of(stride))
            .map(|(_, r)| r)
    }

    /// The broken forwards drawn, in order (thinned by the same rule among themselves).
    pub fn broken(&self) -> impl Iterator<Item = ProgressRow> + '_ {
        let stride = stride_for(self.broke.len(), self.options.cap);
        self.broke
            .iter()
            .enumerate()
            .filter(move |(i, _)| (*i as u64).is_multiple_of(stride))
            .map(|(_, (forward, error))| ProgressRow {
                forward: *forward,
                value: None,
                smoothed: None,
                took_us: 0,
                broke: true,
                error: error.as_deref().map(str::to_string),
            })
    }

    /// Forwards seen, and the stride rows are drawn at (1 until there are `cap`).
    pub fn seen(&self) -> (u64, u64) {
        (
            self.rows.len() as u64,
            stride_for(self.rows.len(), self.options.cap),
        )
    }

    /// Rows held now: one per forward, plus one per broken forward.
    pub fn held(&self) -> usize {
        self.rows.len() + self.broke.len()
    }

    /// Bytes held by the rows (capacity included), error texts not counted.
    pub fn held_bytes(&self) -> usize {
        self.rows.capacity() * ROW_BYTES
            + self.broke.capacity() * std::mem::size_of::<(u64, Option<Box<str>>)>()
    }
}

/// A rolling mean over the last `w` finite values, added up again now and then so that
/// rounding cannot drift.
struct Rolling {
    w: usize,
    window: VecDeque<f64>,
    sum: f64,
    since_resum: usize,
}

impl Rolling {
    fn new(w: usize) -> Self {
        Rolling {
            w,
            window: VecDeque::new(),
            sum: 0.0,
            since_resum: 0,
        }
    }

    fn push(&mut self, value: Option<f64>) -> Option<f64> {
        let w = self.w;
        let v = value.filter(|v| v.is_finite() && w > 0)?;
        self.window.push_back(v);
        self.sum += v;
        if self.window.len() > w {
            self.sum -= self.window.pop_front().unwrap_or(0.0);
        }
        self.since_resum += 1;
        if self.since_resum >= w {
            self.sum = self.window.iter().sum();
            self.since_resum = 0;
        }
        Some(self.sum / self.window.len() as f64)
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
/// ([`Live::fact`]) as they arrive, and draw it (`figures::progress::live`) whenever.
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

    /// Everything that has arrived, the open forward included, handed to `f` as one tally
    /// (`figures::progress::live` draws it). The open forward is added for `f` and taken off
    /// again: nothing is copied.
    pub fn with_open<R>(&mut self, f: impl FnOnce(&Tally) -> R) -> R {
        match &self.open {
            None => f(&self.tally),
            Some(o) => {
                let row = o.row();
                self.tally.push(row);
                let r = f(&self.tally);
                self.tally.pop();
                r
            }
        }
    }

    /// Add one forward's row as it is (what a `Live` in another process tallied).
    pub fn row(&mut self, row: ProgressRow) {
        self.close();
        self.tally.push(row);
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

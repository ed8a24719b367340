//! A step's summaries: the sufficient statistics every health metric is derived from,
//! the same whoever read the tensors (Rust over whole tensors, torch on the device).
//!
//! DESIGN.md, "Measuring where the tensors are": a tensor is *summarised* where it lives
//! (sums in float64, counts, per-unit vectors along the unit axis, the singular values of a
//! bounded sample), only the summary crosses a process boundary, and [`super::metrics`] turns
//! summaries into the metric vocabulary once, in Rust, for every way in. A summary is
//! O(width) per node, never O(parameters).
//!
//! Keys follow the dump convention: `param.<path>`, `grad.<path>`, `update.<path>` per
//! tensor, the node's name for its output, spectra and CKA. [`WireSummary`] is the form a
//! frame carries (docs/recording.md, "Summaries"): its structure as JSON and its numbers in
//! one float64 tensor, which [`StepSummary::from_wire`] checks as hostile input.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Sums over one tensor's entries (a parameter's or a gradient's): non-finite entries are
/// counted and left out of every sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorSums {
    /// The tensor's shape (its count of entries is the product).
    pub shape: Vec<usize>,
    /// Finite entries.
    pub finite: u64,
    /// NaN entries (the other non-finite ones are infinities).
    pub nan: u64,
    /// Σx² over the finite entries.
    pub sum_sq: f64,
    /// Taken with the full summaries only (not on a norms-only step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<FullSums>,
    /// For a weight that reads a layer's units: its |w| per index of axis 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<Columns>,
}

/// The sums a full summary adds to a tensor's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FullSums {
    /// Σ|x| over the finite entries.
    pub sum_abs: f64,
    /// max |x| over the finite entries (0 when there are none).
    pub absmax: f64,
    /// Entries equal to zero (a gradient's; a parameter's may go without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zeros: Option<u64>,
}

/// A weight's |w| per index of its axis 1 (the unit of the layer before it that the column
/// reads), over axis 0 and every axis after 1, finite entries only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Columns {
    /// Σ|w| of each index of axis 1.
    pub abs: Vec<f64>,
    /// The finite entries of each index of axis 1.
    pub finite: Vec<f64>,
}

/// One optimiser step's applied update of a parameter, over the entries where the update
/// and the weight it was applied to are both finite.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UpdateSums {
    /// Σ ΔW².
    pub sum_sq: f64,
    /// Σ W² of the weights the step started from.
    pub base_sq: f64,
}

/// Per-unit sums of a node's output along its unit axis (every call of the node in the
/// step), finite values only, each vector one entry per unit. The sum and the sum of squares
/// are taken around `shift` (a value near the unit's, such as its first), so a large mean does
/// not cancel the spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitSums {
    /// Finite values of the unit.
    pub count: Vec<f64>,
    /// The value the sums are taken around.
    pub shift: Vec<f64>,
    /// Σ (x − shift).
    pub sum: Vec<f64>,
    /// Σ (x − shift)².
    pub sum_sq: Vec<f64>,
    /// Σ |x|.
    pub sum_abs: Vec<f64>,
    /// Values above zero.
    pub positive: Vec<f64>,
    /// Values equal to zero.
    pub zeros: Vec<f64>,
    /// Values past [`super::measure::SATURATED_OUTPUT`] on the tanh scale (y = x for a
    /// tanh-like kind, 2x − 1 for a sigmoid-like one); only for those kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturated: Option<Vec<f64>>,
}

/// A node's output summarised (all its calls of one step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSums {
    /// Entries, finite or not.
    pub elements: u64,
    /// NaN entries.
    pub nan: u64,
    /// Non-finite entries (NaN included).
    pub nonfinite: u64,
    /// Positions per unit (batch × tokens, batch × height × width), over every call: the
    /// samples a step's weight gradient sums over, which bound its rank.
    pub positions: u64,
    /// The per-unit sums.
    pub units: UnitSums,
}

/// The singular values of a bounded sample of a matrix (at most [`SPECTRUM_MAX_ROWS`] rows
/// and [`SPECTRUM_MAX_COLS`] columns at an even stride; [`super::rank`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spectrum {
    /// The sample's rows.
    pub rows: usize,
    /// The sample's columns.
    pub cols: usize,
    /// Its min(rows, cols) singular values, largest first.
    pub values: Vec<f64>,
}

/// The spectra of one node: its weight's update and gradient (the first parameter of two or
/// more axes, in key order, as a matrix of its first axis by the rest) and its output as a
/// (positions × units) matrix (the last call's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeSpectra {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<Spectrum>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grad: Option<Spectrum>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<Spectrum>,
}

/// The debiased HSIC estimates of two outputs of the same inputs
/// ([`crate::math::linalg::debiased_hsic`]); their CKA is xy / √(xx · yy).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CkaSums {
    pub xy: f64,
    pub xx: f64,
    pub yy: f64,
}

/// Everything one step's metrics are derived from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepSummary {
    /// `param.<path>` and `grad.<path>`.
    #[serde(default)]
    pub tensors: BTreeMap<String, TensorSums>,
    /// `update.<path>`: the update one optimiser step applied to `param.<path>`.
    #[serde(default)]
    pub updates: BTreeMap<String, UpdateSums>,
    /// By node.
    #[serde(default)]
    pub outputs: BTreeMap<String, OutputSums>,
    /// By node.
    #[serde(default)]
    pub spectra: BTreeMap<String, NodeSpectra>,
    /// By node: the second node of a pair declared apart (CKA is written on it).
    #[serde(default)]
    pub cka: BTreeMap<String, CkaSums>,
}

impl TensorSums {
    /// The tensor's entries (the product of its shape; `None` when it overflows).
    pub fn count(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
    }
}

impl UnitSums {
    /// The units.
    pub fn len(&self) -> usize {
        self.count.len()
    }

    /// Whether there are no units.
    pub fn is_empty(&self) -> bool {
        self.count.is_empty()
    }

    /// Each unit's count, mean and sum of squared deviations from it.
    fn moments(&self, u: usize) -> (f64, f64, f64) {
        let n = self.count[u];
        if n <= 0.0 {
            return (0.0, self.shift[u], 0.0);
        }
        let d = self.sum[u] / n;
        (
            n,
            self.shift[u] + d,
            (self.sum_sq[u] - self.sum[u] * d).max(0.0),
        )
    }

    /// Add another call's sums of the same units (Chan et al.'s pairwise update: the result
    /// is taken around each unit's merged mean).
    pub fn merge(&mut self, other: &UnitSums) -> Result<(), SummaryError> {
        if other.len() != self.len() || other.saturated.is_some() != self.saturated.is_some() {
            return Err(SummaryError::Inconsistent {
                entry: "output".into(),
                detail: format!(
                    "a call of {} units merged into one of {} (a module's output changed its \
                     unit count or kind between calls of one step)",
                    other.len(),
                    self.len()
                ),
            });
        }
        for u in 0..self.len() {
            let (na, ma, qa) = self.moments(u);
            let (nb, mb, qb) = other.moments(u);
            let n = na + nb;
            let (mean, q) = if n > 0.0 {
                let delta = mb - ma;
                (ma + delta * nb / n, qa + qb + delta * delta * na * nb / n)
            } else {
                (ma, 0.0)
            };
            self.count[u] = n;
            self.shift[u] = mean;
            self.sum[u] = 0.0;
            self.sum_sq[u] = q;
            self.sum_abs[u] += other.sum_abs[u];
            self.positive[u] += other.positive[u];
            self.zeros[u] += other.zeros[u];
        }
        if let (Some(a), Some(b)) = (self.saturated.as_mut(), other.saturated.as_ref()) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        Ok(())
    }
}

impl OutputSums {
    /// Add another call's summary of the same node.
    pub fn merge(&mut self, other: &OutputSums) -> Result<(), SummaryError> {
        self.units.merge(&other.units)?;
        self.elements = self.elements.saturating_add(other.elements);
        self.nan = self.nan.saturating_add(other.nan);
        self.nonfinite = self.nonfinite.saturating_add(other.nonfinite);
        self.positions = self.positions.saturating_add(other.positions);
        Ok(())
    }
}

/// Why a summary cannot be used. The sender built it wrong (or it is not a summary at all):
/// sending it again will not help, and the forward's other records are kept.
#[derive(Debug, Clone, PartialEq)]
pub enum SummaryError {
    /// The summary's numbers are missing: no `summary` tensor, or not float64.
    Values { detail: String },
    /// An entry points past the summary's numbers.
    OutOfRange {
        /// The entry's key or node.
        entry: String,
        at: usize,
        len: usize,
        /// How many numbers there are.
        values: usize,
    },
    /// An entry's numbers contradict each other or its shape: counts that are not whole
    /// numbers or exceed the entries, vectors of different lengths, a sample larger than
    /// the spectrum's bound.
    Inconsistent { entry: String, detail: String },
    /// An entry is larger than any summary may be (units, columns, a shape that overflows).
    TooLarge { entry: String, detail: String },
}

impl fmt::Display for SummaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SummaryError::Values { detail } => write!(f, "summary: {detail}"),
            SummaryError::OutOfRange {
                entry,
                at,
                len,
                values,
            } => write!(
                f,
                "summary entry {entry:?}: numbers {at}..{} are past the {values} given",
                at.saturating_add(*len)
            ),
            SummaryError::Inconsistent { entry, detail } => {
                write!(f, "summary entry {entry:?}: {detail}")
            }
            SummaryError::TooLarge { entry, detail } => {
                write!(f, "summary entry {entry:?}: {detail}")
            }
        }
    }
}

impl std::error::Error for SummaryError {}

/// The most units one output's summary may have.
pub const MAX_UNITS: usize = 1 << 24;

/// The most rows of the matrix whose singular values are taken: more rows (a weight's output
/// units, an output's positions) are read at an even stride (rows 0, s, 2s, … with
/// s = ⌈rows / 64⌉).
pub const SPECTRUM_MAX_ROWS: usize = 64;
/// The most columns (a weight's inputs, an output's units), read the same way. Every spectrum
/// then costs at most a 64 × 128 SVD however wide the layer: cheap enough to take at every
/// step on the device (issue 18: the 70-odd spectra of a 4M-parameter transformer in one
/// batched decomposition of a few tens of ms), and the same sample whether the whole tensor or
/// torch's summary is measured. A strided sample of a rank-k matrix has rank at most k, and
/// `rank_dims` is the sample's, so the fractions read against what the sample can hold. The
/// columns are the wider side so that up to 128 units are all kept: a layer whose units
/// mostly died keeps its few live ones in the sample (with 64 at a stride of 2, the live
/// units of a 128-wide layer could all fall between the samples).
pub const SPECTRUM_MAX_COLS: usize = 128;

/// Which matrix a spectrum is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpectrumOf {
    Update,
    Grad,
    Feature,
}

/// How an output's per-unit numbers are laid out on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitForm {
    /// `count, shift, sum, sum_sq, sum_abs, positive, zeros[, saturated]`, each `units` long.
    #[default]
    Counts,
    /// Every value finite (so each unit's count is `positions`): `shift, sum, sum_sq,
    /// sum_abs, sign_sum, nonzero[, saturated]`, each `units` long, with Σ sign(x) and the
    /// count of non-zero values (positives = (sign_sum + nonzero) / 2, zeros = count −
    /// nonzero): what sums of signs by a matrix product give without a comparison.
    Signs,
}

/// Tensors' sums on the wire, a block of numbers per field with one number per entry
/// (`keys.len()` of them from each offset): `finite`, `nan`, `sum_sq` and, on a full
/// summary, `sum_abs` and `absmax`, with `zeros` (a gradient's) or without. An entry is one tensor under
/// one or more keys (a weight two nodes share); `shapes` has one shape per entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTensors {
    pub keys: Vec<Vec<String>>,
    pub shapes: Vec<Vec<usize>>,
    pub finite: usize,
    pub nan: usize,
    pub sum_sq: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_abs: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absmax: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zeros: Option<usize>,
    /// Column sums of some entries (weights that read a layer's units).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<WireColumns>,
}

/// An entry's column sums on the wire: `shape[1]` numbers at `abs` and, unless every entry
/// of the weight is finite, at `finite`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireColumns {
    /// The entry's place in its [`WireTensors`].
    pub entry: usize,
    pub abs: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finite: Option<usize>,
}

/// Updates on the wire: `sum_sq` and `base_sq` blocks of `keys.len()` numbers, each entry
/// under its keys (`update.<path>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireUpdates {
    pub keys: Vec<Vec<String>>,
    pub sum_sq: usize,
    pub base_sq: usize,
}

/// One call's output on the wire: its entries and positions per unit; the per-unit vectors of
/// `form` at `at`, `units` numbers each; with `counts`, its NaN and non-finite counts there
/// (else none). A node named twice is merged (one entry per call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireOutput {
    pub node: String,
    pub units: usize,
    pub elements: u64,
    pub positions: u64,
    pub at: usize,
    #[serde(default)]
    pub form: UnitForm,
    #[serde(default)]
    pub saturated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<usize>,
}

/// A spectrum's sample on the wire: the `rows × cols` matrix (row-major) at `at` in the
/// frame's [`WIRE_SAMPLES`] tensor, whose singular values Rust takes ([`super::rank`]'s SVD,
/// the one whole tensors get); a sample with a non-finite entry has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireSample {
    pub node: String,
    pub of: SpectrumOf,
    pub rows: usize,
    pub cols: usize,
    pub at: usize,
}

/// CKA's sums on the wire: `xy, xx, yy` at `at` (non-finite: no CKA).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireCka {
    pub node: String,
    pub at: usize,
}

/// A step's summary as a frame carries it: this structure (JSON, in the frame's header), its
/// numbers (the frame's float64 tensor [`WIRE_VALUES`]) and its spectrum samples (the tensor
/// [`WIRE_SAMPLES`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WireSummary {
    #[serde(default)]
    pub tensors: Vec<WireTensors>,
    #[serde(default)]
    pub updates: Vec<WireUpdates>,
    #[serde(default)]
    pub outputs: Vec<WireOutput>,
    #[serde(default)]
    pub samples: Vec<WireSample>,
    #[serde(default)]
    pub cka: Vec<WireCka>,
}

/// The key of a frame's tensor holding its summary's numbers (float64), never stored.
pub const WIRE_VALUES: &str = "summary";
/// The key of a frame's tensor holding its summary's spectrum samples (float32 or float64),
/// never stored.
pub const WIRE_SAMPLES: &str = "summary.samples";

/// Reads numbers out of a summary's values, bounds-checked.
struct Values<'a>(&'a [f64]);

impl<'a> Values<'a> {
    fn get(&self, entry: &str, at: usize, len: usize) -> Result<&'a [f64], SummaryError> {
        at.checked_add(len)
            .and_then(|end| self.0.get(at..end))
            .ok_or_else(|| SummaryError::OutOfRange {
                entry: entry.to_string(),
                at,
                len,
                values: self.0.len(),
            })
    }
}

/// A count: a whole number from 0 to 2^53.
fn count(entry: &str, what: &str, x: f64) -> Result<u64, SummaryError> {
    crate::math::stats::count_of(x).ok_or_else(|| SummaryError::Inconsistent {
        entry: entry.to_string(),
        detail: format!("{what} {x} is not a count"),
    })
}

fn inconsistent(entry: &str, detail: String) -> SummaryError {
    SummaryError::Inconsistent {
        entry: entry.to_string(),
        detail,
    }
}

/// The first key of a wire entry, naming it in errors.
fn first(keys: &[String]) -> &str {
    keys.first().map_or("<no key>", String::as_str)
}

impl StepSummary {
    /// The summary a frame carries: `wire`'s structure over `values` and `samples`. Every
    /// offset, count and length is checked; a node's outputs named more than once are merged
    /// (one per call); each sample's singular values are taken here.
    pub fn from_wire(
        wire: &WireSummary,
        values: &[f64],
        samples: &[f64],
    ) -> Result<StepSummary, SummaryError> {
        let v = Values(values);
        let mut out = StepSummary::default();
        for group in &wire.tensors {
            for (keys, sums) in group.keys.iter().zip(wire_tensors(group, &v)?) {
                for key in keys {
                    out.tensors.insert(key.clone(), sums.clone());
                }
            }
        }
        for group in &wire.updates {
            let n = group.keys.len();
            let name = group.keys.first().map_or("<updates>", |k| first(k));
            let sq = v.get(name, group.sum_sq, n)?;
            let base = v.get(name, group.base_sq, n)?;
            for (i, keys) in group.keys.iter().enumerate() {
                for key in keys {
                    out.updates.insert(
                        key.clone(),
                        UpdateSums {
                            sum_sq: sq[i],
                            base_sq: base[i],
                        },
                    );
                }
            }
        }
        for o in &wire.outputs {
            let sums = wire_output(o, &v)?;
            match out.outputs.get_mut(&o.node) {
                Some(have) => have.merge(&sums).map_err(|e| match e {
                    SummaryError::Inconsistent { detail, .. } => inconsistent(&o.node, detail),
                    e => e,
                })?,
                None => {
                    out.outputs.insert(o.node.clone(), sums);
                }
            }
        }
        let samples = Values(samples);
        for s in &wire.samples {
            let entry = format!("{} ({:?})", s.node, s.of);
            let (max_rows, max_cols) = (SPECTRUM_MAX_ROWS, SPECTRUM_MAX_COLS);
            if s.rows == 0 || s.cols == 0 || s.rows > max_rows || s.cols > max_cols {
                return Err(inconsistent(
                    &entry,
                    format!(
                        "a {}×{} sample (at most {max_rows}×{max_cols}, none empty)",
                        s.rows, s.cols
                    ),
                ));
            }
            let m = samples.get(&entry, s.at, s.rows * s.cols)?;
            // A non-finite entry in the sample: no singular values (as rank.rs).
            let Ok(values) = crate::math::linalg::singular_values(m, s.rows, s.cols) else {
                continue;
            };
            let spectrum = Spectrum {
                rows: s.rows,
                cols: s.cols,
                values,
            };
            let node = out.spectra.entry(s.node.clone()).or_default();
            match s.of {
                SpectrumOf::Update => node.update = Some(spectrum),
                SpectrumOf::Grad => node.grad = Some(spectrum),
                SpectrumOf::Feature => node.feature = Some(spectrum),
            }
        }
        for c in &wire.cka {
            let s = v.get(&c.node, c.at, 3)?;
            out.cka.insert(
                c.node.clone(),
                CkaSums {
                    xy: s[0],
                    xx: s[1],
                    yy: s[2],
                },
            );
        }
        Ok(out)
    }
}

fn wire_tensors(g: &WireTensors, v: &Values) -> Result<Vec<TensorSums>, SummaryError> {
    let n = g.keys.len();
    let name = g.keys.first().map_or("<tensors>", |k| first(k)).to_string();
    if g.shapes.len() != n {
        return Err(inconsistent(
            &name,
            format!("{} keys and {} shapes", n, g.shapes.len()),
        ));
    }
    let [finite, nan, sum_sq] = [g.finite, g.nan, g.sum_sq].map(|at| v.get(&name, at, n));
    let (finite, nan, sum_sq) = (finite?, nan?, sum_sq?);
    let full = match (g.sum_abs, g.absmax) {
        (Some(a), Some(m)) => Some((
            v.get(&name, a, n)?,
            v.get(&name, m, n)?,
            g.zeros.map(|z| v.get(&name, z, n)).transpose()?,
        )),
        (None, None) if g.zeros.is_none() => None,
        _ => {
            return Err(inconsistent(
                &name,
                "sum_abs and absmax come together (zeros only with them)".into(),
            ))
        }
    };
    let mut out = Vec::with_capacity(n);
    for (i, (keys, shape)) in g.keys.iter().zip(&g.shapes).enumerate() {
        let key = first(keys);
        let total = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
            .filter(|n| *n <= 1 << 53)
            .ok_or_else(|| SummaryError::TooLarge {
                entry: key.into(),
                detail: format!("shape {shape:?} overflows"),
            })?;
        let f = count(key, "finite", finite[i])?;
        let nan = count(key, "nan", nan[i])?;
        if f.checked_add(nan).is_none_or(|n| n > total) {
            return Err(inconsistent(
                key,
                format!("{f} finite and {nan} NaN entries in {total}"),
            ));
        }
        let full = match full {
            Some((a, m, z)) => {
                let zeros = z.map(|z| count(key, "zeros", z[i])).transpose()?;
                if zeros.is_some_and(|z| z > f) {
                    return Err(inconsistent(
                        key,
                        format!("{zeros:?} zeros in {f} finite entries"),
                    ));
                }
                Some(FullSums {
                    sum_abs: a[i],
                    absmax: m[i],
                    zeros,
                })
            }
            None => None,
        };
        out.push(TensorSums {
            shape: shape.clone(),
            finite: f,
            nan,
            sum_sq: sum_sq[i],
            full,
            columns: None,
        });
    }
    for c in &g.columns {
        let Some(sums) = out.get_mut(c.entry) else {
            return Err(inconsistent(
                &name,
                format!("column sums of entry {} of {n}", c.entry),
            ));
        };
        let key = first(&g.keys[c.entry]).to_string();
        let cols = match sums.shape.as_slice() {
            [_, cols, ..] => *cols,
            _ => {
                return Err(inconsistent(
                    &key,
                    format!("column sums of a tensor of shape {:?}", sums.shape),
                ))
            }
        };
        if cols > MAX_UNITS {
            return Err(SummaryError::TooLarge {
                entry: key,
                detail: format!("{cols} columns (at most {MAX_UNITS})"),
            });
        }
        let abs = v.get(&key, c.abs, cols)?.to_vec();
        let per = sums
            .count()
            .unwrap_or(0)
            .checked_div(cols as u64)
            .unwrap_or(0);
        let finite = match c.finite {
            Some(at) => {
                let f = v.get(&key, at, cols)?;
                for &x in f {
                    if count(&key, "a column's finite", x)? > per {
                        return Err(inconsistent(
                            &key,
                            format!("{x} finite entries in a column of {per}"),
                        ));
                    }
                }
                f.to_vec()
            }
            None => vec![per as f64; cols],
        };
        sums.columns = Some(Columns { abs, finite });
    }
    Ok(out)
}

fn wire_output(o: &WireOutput, v: &Values) -> Result<OutputSums, SummaryError> {
    let node = o.node.as_str();
    if o.units > MAX_UNITS {
        return Err(SummaryError::TooLarge {
            entry: node.into(),
            detail: format!("{} units (at most {MAX_UNITS})", o.units),
        });
    }
    let (nan, nonfinite) = match o.counts {
        Some(at) => {
            let c = v.get(node, at, 2)?;
            (count(node, "nan", c[0])?, count(node, "nonfinite", c[1])?)
        }
        None => (0, 0),
    };
    let (elements, positions) = (o.elements, o.positions);
    if nan > nonfinite
        || nonfinite > elements
        || (o.units as u64).checked_mul(positions) != Some(elements)
    {
        return Err(inconsistent(
            node,
            format!(
                "{elements} entries, {nonfinite} non-finite ({nan} NaN), {} units of {positions} \
                 positions",
                o.units
            ),
        ));
    }
    let fields = 6 + usize::from(o.saturated) + usize::from(o.form == UnitForm::Counts);
    let n = o.units;
    let body = v.get(
        node,
        o.at,
        n.checked_mul(fields)
            .ok_or_else(|| SummaryError::TooLarge {
                entry: node.into(),
                detail: format!("{n} units"),
            })?,
    )?;
    let field = |i: usize| body[i * n..(i + 1) * n].to_vec();
    let units = match o.form {
        UnitForm::Counts => UnitSums {
            count: field(0),
            shift: field(1),
            sum: field(2),
            sum_sq: field(3),
            sum_abs: field(4),
            positive: field(5),
            zeros: field(6),
            saturated: o.saturated.then(|| field(7)),
        },
        UnitForm::Signs => {
            if nonfinite > 0 {
                return Err(inconsistent(
                    node,
                    format!("{nonfinite} non-finite entries in the all-finite form"),
                ));
            }
            let (signs, nonzero) = (field(4), field(5));
            let p = positions as f64;
            UnitSums {
                count: vec![p; n],
                shift: field(0),
                sum: field(1),
                sum_sq: field(2),
                sum_abs: field(3),
                positive: signs
                    .iter()
                    .zip(&nonzero)
                    .map(|(s, z)| (s + z) * 0.5)
                    .collect(),
                zeros: nonzero.iter().map(|z| p - z).collect(),
                saturated: o.saturated.then(|| field(6)),
            }
        }
    };
    let per = positions as f64;
    let bad = |name: &str, v: &[f64]| {
        v.iter()
            .find(|x| !(x.is_finite() && **x >= 0.0 && **x <= per && x.fract() == 0.0))
            .map(|x| {
                inconsistent(
                    node,
                    format!("a unit's {name} {x} is not a count of at most {per}"),
                )
            })
    };
    for (name, vec) in [
        ("count", &units.count),
        ("positive", &units.positive),
        ("zeros", &units.zeros),
    ] {
        if let Some(e) = bad(name, vec) {
            return Err(e);
        }
    }
    if let Some(e) = units.saturated.as_ref().and_then(|s| bad("saturated", s)) {
        return Err(e);
    }
    Ok(OutputSums {
        elements,
        nan,
        nonfinite,
        positions,
        units,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_calls_read_as_one_output_of_their_values() {
        // Unit 0 gets [1, 2] then [3, 4, 5]; unit 1 gets [10, 10] then [-10, 0, 10].
        let call = |xs: [&[f64]; 2]| {
            let n = xs[0].len() as f64;
            let shift: Vec<f64> = xs.iter().map(|x| x[0]).collect();
            UnitSums {
                count: vec![n; 2],
                sum: xs
                    .iter()
                    .zip(&shift)
                    .map(|(x, s)| x.iter().map(|v| v - s).sum())
                    .collect(),
                sum_sq: xs
                    .iter()
                    .zip(&shift)
                    .map(|(x, s)| x.iter().map(|v| (v - s) * (v - s)).sum())
                    .collect(),
                sum_abs: xs.iter().map(|x| x.iter().map(|v| v.abs()).sum()).collect(),
                positive: xs
                    .iter()
                    .map(|x| x.iter().filter(|v| **v > 0.0).count() as f64)
                    .collect(),
                zeros: xs
                    .iter()
                    .map(|x| x.iter().filter(|v| **v == 0.0).count() as f64)
                    .collect(),
                shift,
                saturated: None,
            }
        };
        let mut a = call([&[1.0, 2.0], &[10.0, 10.0]]);
        a.merge(&call([&[3.0, 4.0, 5.0], &[-10.0, 0.0, 10.0]]))
            .unwrap();
        let (n0, m0, q0) = a.moments(0);
        assert_eq!((n0, m0), (5.0, 3.0), "unit 0: {a:?}");
        assert!((q0 - 10.0).abs() < 1e-12, "unit 0's Σ(x − mean)²: {q0}");
        let (n1, m1, q1) = a.moments(1);
        assert_eq!((n1, m1), (5.0, 4.0));
        assert!((q1 - 320.0).abs() < 1e-12, "unit 1's Σ(x − mean)²: {q1}");
        assert_eq!(
            (a.positive.clone(), a.zeros.clone()),
            (vec![5.0, 3.0], vec![0.0, 1.0])
        );
        let mut wrong = a.clone();
        wrong.count.push(1.0);
        assert!(matches!(
            a.merge(&wrong),
            Err(SummaryError::Inconsistent { .. })
        ));
    }
}

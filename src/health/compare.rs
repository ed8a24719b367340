//! Many runs at a glance: one summary row per run (its verdict, the final and best of its
//! summarised loss, forwards, breaks, whether it ended), read from the store's
//! `summaries.jsonl` where a finished writer left one, else from the run itself.

use super::store::{read, HealthError};
use crate::readback::{Answer, ReadbackError, Result, Skip};
use crate::store::summary::{self, Sketch, SummaryLine};
use crate::store::{Store, StoreError, StoreFs};
use serde::{Deserialize, Serialize};
use somatize_verdict::{about, Thresholds};

/// The summarised field whose final and best values a summary holds.
pub const LOSS: &str = crate::readback::DEFAULT_FIELD;
/// A run of more forwards than this is judged over its last [`BIG_WINDOW`] (as the page does).
pub const BIG_RUN: u64 = 5000;
/// The forwards a long run is judged over.
pub const BIG_WINDOW: usize = 1000;

/// One fault of a run's verdict: its root flag, where and since when, and what to do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultSummary {
    /// The flag as raised (`DEAD`, `DEAD_CHANNELS(3)`).
    pub flag: String,
    /// Where the fault starts.
    pub node: String,
    /// The first forward judged whose own numbers raise it.
    pub since: u64,
    /// What to do about it (one sentence from `about(flag)`).
    pub advice: String,
}

/// One run at a glance: `compare`'s row and what `summaries.jsonl` holds. A key missing from
/// a summary line (one written before the key existed) reads as its default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSummary {
    pub run: String,
    /// No fault raised over the forwards judged (at the default thresholds). `None` only in a
    /// lazy answer, for a run not yet judged.
    pub healthy: Option<bool>,
    /// The faults' roots, in the verdict's order (the first NaN/Inf first).
    pub flags: Vec<FaultSummary>,
    /// The first forward where a number stopped being one.
    pub nonfinite_at: Option<u64>,
    /// How many forwards were judged, and over the last how many (`None`: all).
    pub judged: Option<u64>,
    pub judged_last: Option<usize>,
    /// Why the run could not be judged (no readable forward, a bad graph).
    pub error: Option<String>,
    /// The summarised field (`loss.value`), its last and lowest finite values.
    pub of: String,
    #[serde(rename = "final")]
    pub final_value: Option<f64>,
    pub best: Option<f64>,
    /// Distinct forwards over all writers, and how many broke.
    pub forwards: u64,
    pub broke: u64,
    pub writers: usize,
    /// When the first and last index lines were written (µs since the epoch).
    pub first_written_us: Option<i64>,
    pub last_written_us: Option<i64>,
    /// How long the forwards took, added up (a forward several writers recorded counts once,
    /// at the longest), and per forward (as `runs` gives them).
    pub took_us: u64,
    pub mean_took_us: f64,
    /// Every writer wrote an exit record that says it went well (`Some(true)`), one says it
    /// did not (`Some(false)`), or one has none: still being written, or cut off (`None`).
    pub ended_ok: Option<bool>,
    /// Where the row came from: `"summary"` (the store's summaries file), `"read"` (the run
    /// read now), `"index"` (a lazy row: the indexes only, not judged), `"live"` (a lazy row
    /// of a run being written: its indexes read now, its health from the latest summary a
    /// writer appended as it went).
    pub from: String,
    /// The run's recorded config (`runs/<run>/config.json`: its settings), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<crate::store::config::Config>,
}

impl RunSummary {
    /// `healthy`, or the faults as `FLAG at node (since forward N)`, for a table cell.
    pub fn verdict_text(&self) -> String {
        match (self.healthy, &self.error) {
            (None, _) => "not judged yet".into(),
            (Some(_), Some(e)) => format!("not judged: {e}"),
            (Some(true), None) => "healthy".into(),
            (Some(false), None) => self
                .flags
                .iter()
                .map(|f| format!("{} at {} (since {})", f.flag, f.node, f.since))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

/// Whether `name` matches a glob: `*` any run of characters, `?` one character, anything else
/// itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point (the last `*`): linear in practice.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        match p.get(i) {
            Some('*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(c) if *c == '?' || *c == n[j] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    i = si + 1;
                    j = sj + 1;
                    star = Some((si, sj + 1));
                }
                None => return false,
            },
        }
    }
    p[i.min(p.len())..].iter().all(|c| *c == '*')
}

/// What one walk of a run's indexes gives a summary.
struct IndexSummary {
    took_us: u64,
    forwards: u64,
    broke: u64,
    writers: usize,
    first: Option<i64>,
    last: Option<i64>,
    final_value: Option<f64>,
    best: Option<f64>,
    ended_ok: Option<bool>,
    /// The summarised loss downsampled (`None` when no forward's first line carries it).
    sketch: Option<Sketch>,
    config: Option<crate::store::config::Config>,
}

/// The sketch of `points` (forward, written, value of the first line of each forward that
/// carries the field): downsampled as the compare figure downsamples, to
/// [`summary::SKETCH_POINTS`].
pub(crate) fn sketch_of(of: &str, points: &[(u64, i64, f64)]) -> Option<Sketch> {
    let first = points.first()?;
    let ys: Vec<f64> = points.iter().map(|p| p.2).collect();
    let keep = crate::math::downsample::downsample(ys.len(), &[&ys], summary::SKETCH_POINTS);
    let start_us = first.1;
    Some(Sketch {
        of: of.to_string(),
        points: points.len() as u64,
        start_us,
        forwards: keep.iter().map(|&i| points[i].0).collect(),
        t_us: keep
            .iter()
            .map(|&i| points[i].1.saturating_sub(start_us))
            .collect(),
        values: keep
            .iter()
            .map(|&i| Some(points[i].2).filter(|v| v.is_finite()))
            .collect(),
    })
}

fn index_summary<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    skipped: &mut Vec<Skip>,
) -> Result<IndexSummary> {
    let ws = crate::readback::lines::writers(store, run)?;
    let ended_ok = crate::readback::runs::ended_ok(store, run, &ws)?;
    let mut s = IndexSummary {
        took_us: 0,
        forwards: 0,
        broke: 0,
        writers: ws.len(),
        first: None,
        last: None,
        final_value: None,
        best: None,
        ended_ok,
        sketch: None,
        // A config that cannot be read is no config (the run is still summarised).
        config: crate::store::config::read(store.fs(), run).ok().flatten(),
    };
    // The forward being added up: (number, broke, longest took).
    let mut current: Option<(u64, bool, u64)> = None;
    let mut value_of_current = false;
    // The sketch's points: the first line of each forward, when it carries the loss (as the
    // compare figure reads a line).
    let mut points: Vec<(u64, i64, f64)> = Vec::new();
    let mut sketched: Option<u64> = None;
    crate::readback::lines::walk(store, run, skipped, &mut |l| {
        if sketched != Some(l.forward) {
            sketched = Some(l.forward);
            if let Some(v) = l.fields.number(LOSS) {
                points.push((l.forward, l.written_us, v));
            }
        }
        s.first = Some(s.first.map_or(l.written_us, |f| f.min(l.written_us)));
        s.last = Some(s.last.map_or(l.written_us, |f| f.max(l.written_us)));
        match &mut current {
            Some((n, broke, took)) if *n == l.forward => {
                *broke |= l.broke;
                *took = (*took).max(l.took_us);
            }
            c => {
                if let Some((_, broke, took)) = c.replace((l.forward, l.broke, l.took_us)) {
                    s.forwards += 1;
                    s.broke += broke as u64;
                    s.took_us = s.took_us.saturating_add(took);
                }
                value_of_current = false;
            }
        }
        // The first writer's value of a forward counts, as `curve` takes it.
        if !value_of_current {
            if let Some(v) = l.fields.number(LOSS) {
                value_of_current = true;
                if v.is_finite() {
                    s.final_value = Some(v);
                    s.best = Some(s.best.map_or(v, |b| b.min(v)));
                }
            }
        }
    })?;
    if let Some((_, broke, took)) = current {
        s.forwards += 1;
        s.broke += broke as u64;
        s.took_us = s.took_us.saturating_add(took);
    }
    s.sketch = sketch_of(LOSS, &points);
    Ok(s)
}

fn row_of(run: &str, s: &IndexSummary, from: &str) -> RunSummary {
    RunSummary {
        run: run.to_string(),
        healthy: None,
        flags: Vec::new(),
        nonfinite_at: None,
        judged: None,
        judged_last: None,
        error: None,
        of: LOSS.to_string(),
        final_value: s.final_value,
        best: s.best,
        forwards: s.forwards,
        broke: s.broke,
        writers: s.writers,
        first_written_us: s.first,
        last_written_us: s.last,
        took_us: s.took_us,
        mean_took_us: if s.forwards > 0 {
            s.took_us as f64 / s.forwards as f64
        } else {
            0.0
        },
        ended_ok: s.ended_ok,
        from: from.to_string(),
        config: s.config.clone(),
    }
}

/// The run read now: its indexes walked once and its verdict taken at the default thresholds
/// over all its forwards (the last [`BIG_WINDOW`] of a run of over [`BIG_RUN`]), one blob
/// fetch per forward judged.
pub fn summarise<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    skipped: &mut Vec<Skip>,
) -> Result<RunSummary> {
    Ok(summarise_sketched(store, run, skipped)?.0)
}

/// [`summarise`], with the sketch of the run's summarised loss (what a summary line carries).
pub fn summarise_sketched<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    skipped: &mut Vec<Skip>,
) -> Result<(RunSummary, Option<Sketch>)> {
    let mut s = index_summary(store, run, skipped)?;
    let sketch = s.sketch.take();
    let mut row = row_of(run, &s, "read");
    let last = (s.forwards > BIG_RUN).then_some(BIG_WINDOW);
    row.judged_last = last;
    match read(store, run, last) {
        Ok(h) => {
            let d = h.diagnose(&Thresholds::default());
            let j = &d.judgement;
            row.healthy = Some(j.faults.is_empty());
            row.judged = Some(j.judged.len() as u64);
            row.nonfinite_at = j.nonfinite_at;
            row.flags = j
                .faults
                .iter()
                .map(|f| FaultSummary {
                    flag: f.root.flag.to_string(),
                    node: f.root.node.clone(),
                    since: f.root.since,
                    advice: about(f.root.flag.kind.name())
                        .map_or("", |a| a.todo)
                        .to_string(),
                })
                .collect();
        }
        Err(HealthError::Store(e)) => return Err(ReadbackError::in_run(run, e)),
        Err(e) => {
            row.healthy = Some(false);
            row.judged = Some(0);
            row.error = Some(e.to_string());
        }
    }
    Ok((row, sketch))
}

/// A run's summary from its latest line in `summaries.jsonl`, when that line stands for the
/// run: a summary (not an `open` line) taken after every writer of the run had ended.
pub(crate) fn from_line(line: &SummaryLine) -> Option<RunSummary> {
    let mut row: RunSummary = serde_json::from_value(line.summary.clone()?).ok()?;
    if line.open || row.ended_ok.is_none() || row.run != line.run || row.healthy.is_none() {
        return None;
    }
    row.from = "summary".into();
    Some(row)
}

/// The health a summary line gives of its run (live or final, standing or not).
fn health_of(line: &SummaryLine) -> Option<RunSummary> {
    let row: RunSummary = serde_json::from_value(line.summary.clone()?).ok()?;
    (row.run == line.run && row.healthy.is_some()).then_some(row)
}

/// Options of [`compare`].
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// Only runs whose names match this glob (`*`, `?`).
    pub runs: Option<String>,
    /// Do not judge a run that has no summary: give its index row (`healthy: None`,
    /// `from: "index"`), for a caller that judges it later (the page fills its column lazily).
    pub lazy: bool,
}

/// One summary row per run (those matching `options.runs`), newest (by last written line)
/// last: from the store's summaries file when a finished writer left one that stands for the
/// run (no read of its index or blobs), else read now (see [`summarise`]).
pub fn compare<F: StoreFs>(
    store: &Store<F>,
    options: &CompareOptions,
) -> Result<Answer<Vec<RunSummary>>> {
    let lines = match summary::read_runs(store.fs()) {
        Ok(l) => l,
        Err(e @ StoreError::Refused { .. }) | Err(e @ StoreError::Io { .. }) => {
            return Err(ReadbackError::Store(e))
        }
        // A summaries file that cannot be read as one is no summary: every run is read.
        Err(_) => Default::default(),
    };
    let mut answer = Answer::new(Vec::new());
    let runs = store.runs().map_err(ReadbackError::Store)?;
    for run in runs {
        if let Some(glob) = &options.runs {
            if !glob_match(glob, &run) {
                continue;
            }
        }
        let got = lines.get(&run);
        if let Some(row) = got.and_then(|l| from_line(&l.last)) {
            answer.rows.push(row);
            continue;
        }
        let row = if options.lazy {
            let s = index_summary(store, &run, &mut answer.skipped)?;
            let mut row = row_of(&run, &s, "index");
            // A run being written: its latest health a writer summarised as it went.
            if let Some(live) = got
                .and_then(|l| l.last_summary.as_ref())
                .and_then(health_of)
            {
                row.healthy = live.healthy;
                row.flags = live.flags;
                row.nonfinite_at = live.nonfinite_at;
                row.judged = live.judged;
                row.judged_last = live.judged_last;
                row.error = live.error;
                row.from = "live".into();
            }
            row
        } else {
            summarise(store, &run, &mut answer.skipped)?
        };
        answer.rows.push(row);
    }
    answer
        .rows
        .sort_by(|a, b| (a.last_written_us, &a.run).cmp(&(b.last_written_us, &b.run)));
    Ok(answer)
}

/// Runs grouped by the value of one recorded config field (`somatize compare --group-by FIELD`,
/// npm `compare({groupBy})`): how many were healthy, and their loss.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupSummary {
    /// The config field grouped by.
    pub field: String,
    /// Its value, as text (see `config::value_text`); `None` for the runs that record none.
    pub value: Option<String>,
    /// The group's runs, in `compare`'s order.
    pub runs: Vec<String>,
    /// How many of them were healthy, sick, and not judged (not yet, or could not be).
    pub healthy: usize,
    pub sick: usize,
    pub unjudged: usize,
    /// Their final loss: the mean, lowest and highest over the runs that have one.
    pub final_mean: Option<f64>,
    pub final_min: Option<f64>,
    pub final_max: Option<f64>,
    /// The lowest best loss of any of them.
    pub best: Option<f64>,
}

/// `rows` grouped by config field `field`: one group per value, in order of the value (as
/// numbers when every value is one, else as text), then the runs that record none.
pub fn group(rows: &[RunSummary], field: &str) -> Vec<GroupSummary> {
    let value_of = |r: &RunSummary| {
        r.config
            .as_ref()
            .and_then(|c| crate::store::config::value_text(c, field))
    };
    let mut groups: Vec<GroupSummary> = Vec::new();
    for r in rows {
        let value = value_of(r);
        let i = match groups.iter().position(|g| g.value == value) {
            Some(i) => i,
            None => {
                groups.push(GroupSummary {
                    field: field.to_string(),
                    value,
                    ..GroupSummary::default()
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[i];
        g.runs.push(r.run.clone());
        match (r.healthy, &r.error) {
            (Some(true), None) => g.healthy += 1,
            (Some(false), None) => g.sick += 1,
            _ => g.unjudged += 1,
        }
        if let Some(v) = r.final_value {
            g.final_min = Some(g.final_min.map_or(v, |m| m.min(v)));
            g.final_max = Some(g.final_max.map_or(v, |m| m.max(v)));
            // Summed here, divided below.
            g.final_mean = Some(g.final_mean.unwrap_or(0.0) + v);
        }
        if let Some(b) = r.best {
            g.best = Some(g.best.map_or(b, |m| m.min(b)));
        }
    }
    for g in &mut groups {
        let n = rows
            .iter()
            .filter(|r| g.runs.contains(&r.run) && r.final_value.is_some())
            .count();
        g.final_mean = g.final_mean.map(|sum| sum / n.max(1) as f64);
    }
    let numeric = groups
        .iter()
        .filter_map(|g| g.value.as_deref())
        .all(|v| v.parse::<f64>().is_ok());
    groups.sort_by(|a, b| match (&a.value, &b.value) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) if numeric => x
            .parse::<f64>()
            .unwrap_or(0.0)
            .total_cmp(&y.parse::<f64>().unwrap_or(0.0)),
        (Some(x), Some(y)) => x.cmp(y),
    });
    groups
}

/// Summarise run `run` of the store at `root` now and append the summary to its
/// `summaries.jsonl` as writer `writer` (what a recorder does when it finishes, and, `live`,
/// now and then while it writes).
#[cfg(not(target_arch = "wasm32"))]
pub fn write_summary(
    root: &std::path::Path,
    run: &str,
    writer: &str,
    durable: bool,
    live: bool,
) -> std::result::Result<RunSummary, StoreError> {
    let store = Store::open(crate::store::DirFs::new(root))?;
    let mut skipped = Vec::new();
    let (row, sketch) = summarise_sketched(&store, run, &mut skipped).map_err(|e| match e {
        ReadbackError::Store(e) => e,
        other => StoreError::Refused {
            what: format!("the summary of run {run:?}: {other}"),
        },
    })?;
    let line = SummaryLine {
        run: run.to_string(),
        writer: writer.to_string(),
        written_us: crate::store::writer::now_us(),
        open: false,
        live,
        summary: Some(serde_json::to_value(&row).unwrap_or_default()),
        sketch: sketch.as_ref().and_then(summary::RawSketch::of),
    };
    summary::append(root, &line, durable)?;
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_shells_do() {
        for (p, n, want) in [
            ("*", "anything", true),
            ("lr-*", "lr-0.1", true),
            ("lr-*", "xlr-0.1", false),
            ("*-seed?", "a-seed1", true),
            ("*-seed?", "a-seed12", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("exact", "exact", true),
            ("", "", true),
            ("", "x", false),
            ("**", "", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p:?} against {n:?}");
        }
    }
}

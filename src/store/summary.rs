//! `summaries.jsonl`: the store's append-only file of run summaries (format 2.1), so a reader
//! sees every run's health and progress in one read instead of a scan and a diagnosis per run.
//!
//! Each writer appends a line when it opens (`"open": true`: the run is being written), a
//! `"live": true` summary now and then as it writes (the run as judged then, see
//! `Recorder::live_summaries`), and one when it finishes (`"summary": {…}`, the run as judged
//! then). The latest line of a run decides whether a summary stands for the run: one taken
//! after every writer of the run had ended does; an `open` line, a summary of a run still being
//! written, or no line at all leaves the reader to read the run itself, and the run's latest
//! summary line (whichever writer wrote it, unless a writer opened after it) is its latest
//! known health, for a reader that does not judge it now. Lines are whole or ignored (a torn tail, a line that is not JSON).

use super::error::{Result, StoreError};
use super::fs::StoreFs;
use super::names;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The summaries file at the root of a store (format 2.1 and later; optional).
pub const SUMMARIES_FILE: &str = "summaries.jsonl";
/// The largest summaries file read.
pub const MAX_SUMMARIES: u64 = 256 << 20;

/// One line of `summaries.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryLine {
    pub run: String,
    /// The writer that appended the line.
    pub writer: String,
    /// When, µs since the epoch on the writer's clock.
    pub written_us: i64,
    /// `true` on the line a writer appends when it opens: the run is being written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open: bool,
    /// `true` on a summary a writer appends while it is still writing (its latest health).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
    /// The run as judged when the writer finished (the shape of `compare`'s rows); absent on
    /// an `open` line. Kept as JSON so that this module needs nothing of health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<serde_json::Value>,
    /// The run's summarised loss over every forward, downsampled for drawing (see [`Sketch`]),
    /// so that an overlay of finished runs reads no index. Beside `summary`, not in it: a
    /// table of runs does not carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sketch: Option<RawSketch>,
}

/// A sketch as the JSON text of its line, parsed only by a reader that draws it (a table of
/// runs reads the summaries file without building any: most of a line is its sketch). The
/// text is shared by its clones: a run's latest line and its latest summary are often the same
/// line, and a copy of each sketch was 9 MB more of the wasm memory (which never shrinks) for
/// a table of 1,000 runs.
#[derive(Debug, Clone)]
pub struct RawSketch(std::sync::Arc<serde_json::value::RawValue>);

impl Serialize for RawSketch {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawSketch {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        Box::<serde_json::value::RawValue>::deserialize(deserializer).map(|b| RawSketch(b.into()))
    }
}

impl PartialEq for RawSketch {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl RawSketch {
    /// The sketch's JSON text.
    pub fn of(sketch: &Sketch) -> Option<RawSketch> {
        serde_json::value::to_raw_value(sketch)
            .ok()
            .map(|b| RawSketch(b.into()))
    }

    /// The sketch, when its text is one with a value per point kept.
    pub fn parse(&self) -> Option<Sketch> {
        serde_json::from_str::<Sketch>(self.0.get())
            .ok()
            .filter(Sketch::is_whole)
    }
}

/// The most points a [`Sketch`] keeps: 128 buckets, each its lowest and highest point and its
/// first gap.
pub const SKETCH_POINTS: usize = 384;

/// A line of one summarised field over a run's forwards, downsampled as the compare figure
/// downsamples (each bucket of forwards keeps its lowest and highest value and its first
/// non-finite one, and the first and last points are kept), written in a summary line so that
/// drawing a finished run costs no read of its index. A line of up to [`SKETCH_POINTS`] points
/// is kept whole, exactly.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Sketch {
    /// The field (`loss.value`).
    pub of: String,
    /// How many forwards carried the field (the points before downsampling).
    pub points: u64,
    /// When the run's first line carrying the field was written (µs since the epoch).
    pub start_us: i64,
    /// The points kept, in order: their forwards, their times written (µs after `start_us`)
    /// and values (`null`: not a finite number).
    pub forwards: Vec<u64>,
    pub t_us: Vec<i64>,
    pub values: Vec<Option<f64>>,
}

impl Sketch {
    /// Whether the three columns have one entry per point kept.
    pub fn is_whole(&self) -> bool {
        self.forwards.len() == self.t_us.len() && self.forwards.len() == self.values.len()
    }

    /// The points' times written, µs since the epoch.
    pub fn written_us(&self) -> impl Iterator<Item = i64> + '_ {
        self.t_us.iter().map(|t| self.start_us.saturating_add(*t))
    }

    /// The points' values, a gap as NaN.
    pub fn values_f64(&self) -> impl Iterator<Item = f64> + '_ {
        self.values.iter().map(|v| v.unwrap_or(f64::NAN))
    }
}

impl SummaryLine {
    /// The line as written, with its newline.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// What a summaries file says of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLines {
    /// The run's latest line.
    pub last: SummaryLine,
    /// Its latest line with a summary (live or final; `last` itself when that has one), unless
    /// a writer opened after it (then the run's health is not known until the next).
    pub last_summary: Option<SummaryLine>,
}

/// The latest line of each run in a summaries file's bytes: whole lines only; lines that are
/// not JSON or name an invalid run or writer are skipped.
pub fn parse(bytes: &[u8]) -> BTreeMap<String, SummaryLine> {
    parse_runs(bytes)
        .into_iter()
        .map(|(run, l)| (run, l.last))
        .collect()
}

/// The latest line and the latest summary of each run in a summaries file's bytes, as
/// [`parse`] reads them.
pub fn parse_runs(bytes: &[u8]) -> BTreeMap<String, RunLines> {
    let whole = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => &bytes[..i],
        None => &[][..],
    };
    let mut out = BTreeMap::new();
    for line in whole.split(|&b| b == b'\n') {
        take_line(&mut out, line);
    }
    out
}

/// Take one line of a summaries file into `out` (see [`parse_runs`]).
fn take_line(out: &mut BTreeMap<String, RunLines>, line: &[u8]) {
    let Ok(l) = serde_json::from_slice::<SummaryLine>(line) else {
        return;
    };
    if names::run(&l.run).is_ok() && names::writer(&l.writer).is_ok() {
        let summary = l.summary.is_some().then(|| l.clone());
        match out.entry(l.run.clone()) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(RunLines {
                    last: l,
                    last_summary: summary,
                });
            }
            std::collections::btree_map::Entry::Occupied(mut e) => {
                let e = e.get_mut();
                if l.open {
                    e.last_summary = None;
                } else if summary.is_some() {
                    e.last_summary = summary;
                }
                e.last = l;
            }
        }
    }
}

/// How much of a summaries file is read at a time (2 MiB: a few requests over HTTP): its lines
/// are parsed as they come, so the whole file (9 MB for 1,000 runs with sketches) is never held
/// at once.
const READ_STEP: u64 = 2 << 20;

/// The latest line of each run of a store (none when it has no summaries file).
pub fn read<F: StoreFs + ?Sized>(fs: &F) -> Result<BTreeMap<String, SummaryLine>> {
    Ok(read_runs(fs)?
        .into_iter()
        .map(|(run, l)| (run, l.last))
        .collect())
}

/// The latest line and latest summary of each run of a store (none when it has no summaries
/// file).
pub fn read_runs<F: StoreFs + ?Sized>(fs: &F) -> Result<BTreeMap<String, RunLines>> {
    let len = match fs.len(SUMMARIES_FILE) {
        Err(StoreError::NotFound { .. }) => return Ok(BTreeMap::new()),
        other => other?,
    };
    if len > MAX_SUMMARIES {
        return Err(StoreError::Refused {
            what: format!("{SUMMARIES_FILE} is {len} bytes, over {MAX_SUMMARIES}"),
        });
    }
    if len == 0 {
        return Ok(BTreeMap::new());
    }
    // Whole lines only, as parse_runs: what follows the last newline is a line being written.
    let mut out = BTreeMap::new();
    let mut carry: Vec<u8> = Vec::new();
    let mut at = 0;
    while at < len {
        let chunk = fs.read_range(SUMMARIES_FILE, at, READ_STEP.min(len - at))?;
        if chunk.is_empty() {
            break; // the file is shorter than it was: what was read is what there is
        }
        at += chunk.len() as u64;
        let Some(last_newline) = chunk.iter().rposition(|&b| b == b'\n') else {
            carry.extend_from_slice(&chunk);
            continue;
        };
        let mut lines = chunk[..last_newline].split(|&b| b == b'\n');
        if let Some(first) = lines.next() {
            carry.extend_from_slice(first);
            take_line(&mut out, &carry);
            carry.clear();
        }
        for line in lines {
            take_line(&mut out, line);
        }
        carry.extend_from_slice(&chunk[last_newline + 1..]);
    }
    Ok(out)
}

/// Append one line to the summaries file of the store at `root` (one `write` with
/// `O_APPEND`, then synced when `durable`). A line begins with a newline when the file does
/// not end in one (a torn line a crash left), so that it is never glued to it.
#[cfg(not(target_arch = "wasm32"))]
pub fn append(root: &std::path::Path, line: &SummaryLine, durable: bool) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let path = root.join(SUMMARIES_FILE);
    let io = |op: &'static str| {
        let p = path.display().to_string();
        move |e| StoreError::io(p, op, e)
    };
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(&path)
        .map_err(io("open"))?;
    let len = f.metadata().map_err(io("stat"))?.len();
    let mut text = String::new();
    if len > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(len - 1)).map_err(io("seek"))?;
        f.read_exact(&mut last).map_err(io("read"))?;
        if last[0] != b'\n' {
            text.push('\n');
        }
    }
    text.push_str(&line.to_line());
    f.write_all(text.as_bytes()).map_err(io("append to"))?;
    if durable {
        f.sync_data().map_err(io("sync"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summaries file in memory, read in ranges as a store's is.
    struct Mem(Vec<u8>);
    impl StoreFs for Mem {
        fn list(&self, _: &str) -> Result<Vec<String>> {
            Ok(vec![])
        }
        fn read(&self, _: &str) -> Result<Vec<u8>> {
            Ok(self.0.clone())
        }
        fn read_range(&self, _: &str, o: u64, n: u64) -> Result<Vec<u8>> {
            let start = (o as usize).min(self.0.len());
            let end = start.saturating_add(n as usize).min(self.0.len());
            Ok(self.0[start..end].to_vec())
        }
        fn len(&self, _: &str) -> Result<u64> {
            Ok(self.0.len() as u64)
        }
    }

    #[test]
    fn a_file_read_in_steps_reads_as_one_read_at_once() {
        // Lines of several sizes over three steps of READ_STEP, a line across each step's end,
        // a line that is not JSON, and a torn last line; some runs' lines twice.
        let mut text = String::new();
        let mut k = 0u64;
        while (text.len() as u64) < 3 * READ_STEP + 1000 {
            let run = format!("r{}", k % 700);
            let pad = "x".repeat((k as usize * 37) % 3000);
            if k.is_multiple_of(11) {
                text.push_str("not json\n");
            }
            text.push_str(&format!(
                "{{\"run\":\"{run}\",\"writer\":\"w\",\"written_us\":{k},\"summary\":{{\"of\":\"{pad}\"}},\"sketch\":{{\"of\":\"{pad}\"}}}}\n"
            ));
            k += 1;
        }
        text.push_str("{\"run\":\"r1\",\"writer\":\"w\",\"written_us\":99999999,\"op");
        let fs = Mem(text.into_bytes());
        let stepped = read_runs(&fs).unwrap();
        assert_eq!(stepped, parse_runs(&fs.0));
        assert_eq!(stepped.len(), 700);
        assert!(
            stepped["r1"].last.written_us < 99999999,
            "the torn line is not read"
        );
    }

    #[test]
    fn the_latest_whole_line_of_each_run_counts() {
        let text = concat!(
            "{\"run\":\"a\",\"writer\":\"w\",\"written_us\":1,\"open\":true}\n",
            "not json\n",
            "{\"run\":\"b\",\"writer\":\"w\",\"written_us\":2,\"summary\":{\"healthy\":true}}\n",
            "{\"run\":\"../x\",\"writer\":\"w\",\"written_us\":3,\"open\":true}\n",
            "{\"run\":\"a\",\"writer\":\"w\",\"written_us\":4,\"summary\":{\"healthy\":false}}\n",
            "{\"run\":\"b\",\"writer\":\"w\",\"written_us\":5,\"op"
        );
        let got = parse(text.as_bytes());
        assert_eq!(got.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(got["a"].written_us, 4);
        assert_eq!(got["a"].summary.as_ref().unwrap()["healthy"], false);
        assert_eq!(got["b"].written_us, 2);
        assert!(!got["b"].open);
    }

    #[test]
    fn a_runs_latest_summary_holds_until_a_writer_opens_after_it() {
        let text = concat!(
            "{\"run\":\"a\",\"writer\":\"w0\",\"written_us\":1,\"open\":true}\n",
            "{\"run\":\"a\",\"writer\":\"w0\",\"written_us\":2,\"live\":true,\"summary\":{\"healthy\":true}}\n",
            "{\"run\":\"a\",\"writer\":\"w0\",\"written_us\":3,\"live\":true,\"summary\":{\"healthy\":false},\"sketch\":{\"of\":\"loss.value\",\"points\":1,\"start_us\":3,\"forwards\":[0],\"t_us\":[0],\"values\":[null]}}\n",
            "{\"run\":\"b\",\"writer\":\"w0\",\"written_us\":4,\"summary\":{\"healthy\":true}}\n",
            "{\"run\":\"b\",\"writer\":\"w1\",\"written_us\":5,\"open\":true}\n",
        );
        let got = parse_runs(text.as_bytes());
        let a = &got["a"];
        assert_eq!(a.last.written_us, 3);
        let latest = a.last_summary.as_ref().unwrap();
        assert!(latest.live);
        assert_eq!(latest.summary.as_ref().unwrap()["healthy"], false);
        let sketch = latest.sketch.as_ref().unwrap().parse().unwrap();
        assert_eq!((sketch.forwards, sketch.values), (vec![0], vec![None]));
        // Run b: w1 opened after w0's summary, so its health is not known.
        assert!(got["b"].last.open);
        assert_eq!(got["b"].last_summary, None);
    }
}

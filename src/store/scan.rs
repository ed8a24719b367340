//! Reading a store: its runs and writers, index lines merged per run, the last N forwards,
//! readings, exit records, and fetching one forward's blob.

use super::blob::Blob;
use super::error::{Result, StoreError};
use super::format::{self, FormatFile};
use super::fs::StoreFs;
use super::index::{self, IndexEntry, IndexLine, LineReader};
use super::names;
use super::reading::{ExitRecord, Reading};
use std::sync::Arc;

/// A store opened for reading through some [`StoreFs`].
pub struct Store<F: StoreFs> {
    fs: F,
    /// The format file it carries.
    pub format: FormatFile,
}

/// One forward as a merged scan hands it out: which writer wrote it, and its index line.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanItem {
    pub writer: Arc<str>,
    pub entry: IndexEntry,
}

impl<F: StoreFs> Store<F> {
    /// Open a store: read and check its format file (a newer major version is refused).
    pub fn open(fs: F) -> Result<Self> {
        let bytes = match fs.read(format::FORMAT_FILE) {
            Err(StoreError::NotFound { .. }) => {
                return Err(StoreError::NotAStore {
                    path: format::FORMAT_FILE.into(),
                    reason: format!("it has no {}", format::FORMAT_FILE),
                })
            }
            other => other?,
        };
        let format = FormatFile::parse(&bytes)?;
        Ok(Store { fs, format })
    }

    /// The file access underneath.
    pub fn fs(&self) -> &F {
        &self.fs
    }

    /// Every run name, sorted by name (folders under `runs/` whose names are valid).
    pub fn runs(&self) -> Result<Vec<String>> {
        match self.fs.list(format::RUNS_DIR) {
            Ok(v) => Ok(v.into_iter().filter(|n| names::run(n).is_ok()).collect()),
            Err(StoreError::NotFound { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// The writers of `run`, sorted (folders with an index).
    pub fn writers(&self, run: &str) -> Result<Vec<String>> {
        let mut out = self.writer_folders(run)?;
        out.retain(|w| self.fs.len(&index_path(run, w)).is_ok());
        Ok(out)
    }

    /// Every writer folder of `run`, sorted, with an index or not (a writer that has written
    /// only readings so far): the entries of `runs/<run>/` that are valid writer ids, less the
    /// run's own files ([`format::RUN_FILES`], e.g. `graph.json`).
    pub fn writer_folders(&self, run: &str) -> Result<Vec<String>> {
        names::run(run)?;
        let mut out = self.fs.list(&format::run_dir(run))?;
        out.retain(|w| !format::RUN_FILES.contains(&w.as_str()) && names::writer(w).is_ok());
        Ok(out)
    }

    /// Call `f` with each line of one writer's index, borrowed and in file order, streaming;
    /// unreadable lines go to `bad` and the scan goes on. The fastest way through an index.
    pub fn for_each_line(
        &self,
        run: &str,
        writer: &str,
        f: &mut dyn FnMut(&IndexLine<'_>),
        bad: &mut dyn FnMut(StoreError),
    ) -> Result<()> {
        names::run(run)?;
        names::writer(writer)?;
        index::for_each_line(&self.fs, &index_path(run, writer), run, writer, f, bad)
    }

    /// Every forward of `run`, all writers merged in order of (forward, writer), streaming.
    /// An unreadable line comes out as an `Err` item naming run, writer and line; iteration
    /// goes on after it.
    pub fn scan(&self, run: &str) -> Result<RunScan<'_, F>> {
        let mut heads = Vec::new();
        for w in self.writers(run)? {
            let reader = LineReader::open(&self.fs, &index_path(run, &w))?;
            heads.push(Head {
                writer: Arc::from(w.as_str()),
                reader,
                peeked: None,
                done: false,
            });
        }
        Ok(RunScan {
            run: run.to_string(),
            heads,
            pending_err: None,
        })
    }

    /// The last `n` forwards of `run` (by forward number, all writers merged), reading each
    /// index backwards from its end: the cost is proportional to `n`, not to the run.
    /// Unreadable lines are skipped and handed to `bad`.
    pub fn last(
        &self,
        run: &str,
        n: usize,
        bad: &mut dyn FnMut(StoreError),
    ) -> Result<Vec<ScanItem>> {
        let mut all = Vec::new();
        for w in self.writers(run)? {
            let writer: Arc<str> = Arc::from(w.as_str());
            for e in self.tail_of(run, &w, n, bad)? {
                all.push(ScanItem {
                    writer: writer.clone(),
                    entry: e,
                });
            }
        }
        all.sort_by(|a, b| (a.entry.forward, &a.writer).cmp(&(b.entry.forward, &b.writer)));
        let skip = all.len().saturating_sub(n);
        Ok(all.split_off(skip))
    }

    fn tail_of(
        &self,
        run: &str,
        writer: &str,
        n: usize,
        bad: &mut dyn FnMut(StoreError),
    ) -> Result<Vec<IndexEntry>> {
        let path = index_path(run, writer);
        let len = self.fs.len(&path)?;
        let mut end = len;
        let mut carry: Vec<u8> = Vec::new();
        let mut out: Vec<IndexEntry> = Vec::new();
        let mut first_chunk = true;
        while out.len() < n && end > 0 {
            let start = end.saturating_sub(index::CHUNK);
            let mut chunk = self.fs.read_range(&path, start, end - start)?;
            chunk.extend_from_slice(&carry);
            end = start;
            let mut lines: Vec<&[u8]> = chunk.split(|&b| b == b'\n').collect();
            // The piece after the last newline is torn (or being written) only in the first chunk.
            let tail = lines.pop().unwrap_or_default();
            if !first_chunk && !tail.is_empty() {
                return Err(StoreError::Refused {
                    what: format!("{path}: internal error reading backwards"),
                });
            }
            first_chunk = false;
            // The piece before the first newline may continue in the previous chunk.
            let head = if start > 0 && !lines.is_empty() {
                lines.remove(0).to_vec()
            } else {
                Vec::new()
            };
            for line in lines.iter().rev() {
                if out.len() >= n {
                    break;
                }
                match std::str::from_utf8(line)
                    .map_err(|e| e.to_string())
                    .and_then(|t| {
                        IndexLine::parse(t)
                            .map(|l| l.to_entry())
                            .map_err(|e| e.to_string())
                    }) {
                    Ok(e) => out.push(e),
                    Err(reason) => bad(StoreError::BadIndexLine {
                        run: run.to_string(),
                        writer: writer.to_string(),
                        line: 0,
                        reason,
                    }),
                }
            }
            carry = head;
            carry.push(b'\n');
            if carry.len() > index::MAX_LINE {
                return Err(StoreError::BadIndexLine {
                    run: run.to_string(),
                    writer: writer.to_string(),
                    line: 0,
                    reason: format!("a line longer than {} bytes", index::MAX_LINE),
                });
            }
        }
        out.reverse();
        Ok(out)
    }

    /// Every entry for forward `forward` of `run` (one per writer that recorded it), by a scan.
    pub fn find(&self, run: &str, forward: u64) -> Result<Vec<ScanItem>> {
        let mut out = Vec::new();
        for w in self.writers(run)? {
            let writer: Arc<str> = Arc::from(w.as_str());
            self.for_each_line(
                run,
                &w,
                &mut |l| {
                    if l.forward == forward {
                        out.push(ScanItem {
                            writer: writer.clone(),
                            entry: l.to_entry(),
                        })
                    }
                },
                &mut |_| {},
            )?;
        }
        Ok(out)
    }

    /// Fetch one forward's blob, checking its length and checksum against its index line.
    /// A forward with no blob (marked broke before it was written) is `NotFound`.
    pub fn fetch(&self, run: &str, writer: &str, entry: &IndexEntry) -> Result<Blob> {
        names::run(run)?;
        names::writer(writer)?;
        let (Some(blob), Some(len), Some(crc)) = (&entry.blob, entry.len, entry.crc32) else {
            return Err(StoreError::NotFound {
                path: format!(
                    "{}/<blob of forward {}>",
                    format::writer_dir(run, writer),
                    entry.forward
                ),
            });
        };
        names::relative_path(blob)?;
        let path = format!("{}/{blob}", format::writer_dir(run, writer));
        let short = |got: u64| StoreError::BlobLength {
            run: run.to_string(),
            forward: entry.forward,
            path: path.clone(),
            want: len,
            got,
        };
        let bytes = match entry.offset {
            // In a pack: one range read of exactly the blob (a pack cut short reads short).
            Some(offset) => {
                offset.checked_add(len).ok_or_else(|| short(0))?;
                let bytes = self.fs.read_range(&path, offset, len)?;
                if bytes.len() as u64 != len {
                    return Err(short(bytes.len() as u64));
                }
                bytes
            }
            // A blob file of its own (format 1.x, snapshots): its size must be the length.
            None => {
                let size = self.fs.len(&path)?;
                if size != len {
                    return Err(short(size));
                }
                self.fs.read(&path)?
            }
        };
        Blob::open(run, entry.forward, &path, bytes, len, crc)
    }

    /// Call `f` with each of one writer's machine readings, in order; bad lines go to `bad`.
    pub fn for_each_reading(
        &self,
        run: &str,
        writer: &str,
        f: &mut dyn FnMut(Reading),
        bad: &mut dyn FnMut(StoreError),
    ) -> Result<()> {
        names::run(run)?;
        names::writer(writer)?;
        let path = format!(
            "{}/{}",
            format::writer_dir(run, writer),
            format::READINGS_FILE
        );
        let mut lines = match LineReader::open(&self.fs, &path) {
            Ok(l) => l,
            Err(StoreError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        while let Some((line_no, text)) = lines.next_line()? {
            match text.and_then(|t| serde_json::from_str::<Reading>(t).map_err(|e| e.to_string())) {
                Ok(r) => f(r),
                Err(reason) => bad(StoreError::BadIndexLine {
                    run: run.to_string(),
                    writer: format!("{writer} (readings)"),
                    line: line_no,
                    reason,
                }),
            }
        }
        Ok(())
    }

    /// One writer's newest reading (reads its readings file backwards, one chunk at a time).
    pub fn newest_reading(&self, run: &str, writer: &str) -> Result<Option<Reading>> {
        let path = format!(
            "{}/{}",
            format::writer_dir(run, writer),
            format::READINGS_FILE
        );
        names::run(run)?;
        names::writer(writer)?;
        let len = match self.fs.len(&path) {
            Ok(l) => l,
            Err(StoreError::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let start = len.saturating_sub(64 << 10);
        let tail = self.fs.read_range(&path, start, len - start)?;
        let whole = match tail.iter().rposition(|&b| b == b'\n') {
            Some(i) => &tail[..i],
            None => return Ok(None),
        };
        Ok(whole
            .split(|&b| b == b'\n')
            .rev()
            .filter_map(|l| serde_json::from_slice::<Reading>(l).ok())
            .next())
    }

    /// How one writer's recording ended, if it has ended.
    pub fn exit(&self, run: &str, writer: &str) -> Result<Option<ExitRecord>> {
        names::run(run)?;
        names::writer(writer)?;
        let path = format!("{}/{}", format::writer_dir(run, writer), format::EXIT_FILE);
        match self.fs.read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| StoreError::BadEntry {
                        path,
                        entry: format::EXIT_FILE.into(),
                        reason: e.to_string(),
                    })
            }
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The index path of a writer.
pub fn index_path(run: &str, writer: &str) -> String {
    format!("{}/{}", format::writer_dir(run, writer), format::INDEX_FILE)
}

struct Head<'f, F: StoreFs> {
    writer: Arc<str>,
    reader: LineReader<'f, F>,
    peeked: Option<IndexEntry>,
    done: bool,
}

/// A merged, streaming scan of one run's index lines (see [`Store::scan`]).
pub struct RunScan<'f, F: StoreFs> {
    run: String,
    heads: Vec<Head<'f, F>>,
    pending_err: Option<StoreError>,
}

impl<F: StoreFs> RunScan<'_, F> {
    /// Fill `head.peeked` with its next good line; a bad line is returned as an error.
    fn fill(run: &str, head: &mut Head<'_, F>) -> Option<StoreError> {
        if head.peeked.is_some() || head.done {
            return None;
        }
        match head.reader.next_line() {
            Err(e) => {
                head.done = true;
                Some(e)
            }
            Ok(None) => {
                head.done = true;
                None
            }
            Ok(Some((line_no, text))) => {
                match text.and_then(|t| {
                    IndexLine::parse(t)
                        .map(|l| l.to_entry())
                        .map_err(|e| e.to_string())
                }) {
                    Ok(e) => {
                        head.peeked = Some(e);
                        None
                    }
                    Err(reason) => Some(StoreError::BadIndexLine {
                        run: run.to_string(),
                        writer: head.writer.to_string(),
                        line: line_no,
                        reason,
                    }),
                }
            }
        }
    }
}

impl<F: StoreFs> Iterator for RunScan<'_, F> {
    type Item = Result<ScanItem>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending_err.take() {
            return Some(Err(e));
        }
        for head in &mut self.heads {
            if let Some(e) = Self::fill(&self.run, head) {
                return Some(Err(e));
            }
        }
        let best = self
            .heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.peeked.as_ref().map(|e| (e.forward, i)))
            .min()?;
        let head = &mut self.heads[best.1];
        let entry = head.peeked.take()?;
        Some(Ok(ScanItem {
            writer: head.writer.clone(),
            entry,
        }))
    }
}

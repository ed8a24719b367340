//! Parallel blob syncing for a writer: blobs are fsynced and renamed by a small pool of
//! threads, and a sequencer thread appends their index lines strictly in order, each only
//! after its blob is durable, batching the folder and index syncs.
//!
//! Several fsyncs in flight keep the disk's queue full (on the benchmark machine 4 parallel
//! fsyncs of 1 MiB ran 5x faster than one at a time), and the caller's thread only writes
//! blobs into the page cache. The invariant of the format holds: an index line is written
//! only after its blob is synced, renamed and the blobs folder synced.

use super::error::{Result, StoreError};
use super::index::IndexEntry;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A blob written to its temporary name, waiting to be synced and renamed.
pub struct Job {
    pub file: File,
    pub tmp: PathBuf,
    pub path: PathBuf,
    pub entry: IndexEntry,
}

struct Done {
    seq: u64,
    entry: IndexEntry,
    result: Result<()>,
}

/// What the sequencer tells the writer: forwards consumed (indexed or failed) so far.
struct Report {
    consumed: u64,
    indexed: Vec<u64>,
    error: Option<StoreError>,
}

/// Where the sequencer appends.
pub struct Sink {
    pub index: File,
    pub index_path: PathBuf,
    pub blobs_dir: PathBuf,
    pub durable: bool,
}

/// The pool, the sequencer, and the writer's view of them.
pub struct Pipeline {
    jobs: Option<Sender<(u64, Job)>>,
    reports: Receiver<Report>,
    threads: Vec<JoinHandle<()>>,
    submitted: u64,
    consumed: u64,
    depth: usize,
}

fn io(p: &std::path::Path, op: &'static str) -> impl FnOnce(std::io::Error) -> StoreError {
    let p = p.display().to_string();
    move |e| StoreError::io(p, op, e)
}

fn sync_and_rename(job: Job) -> Result<()> {
    job.file.sync_all().map_err(io(&job.tmp, "sync"))?;
    drop(job.file);
    std::fs::rename(&job.tmp, &job.path).map_err(io(&job.path, "rename"))
}

/// Append `entries`' lines after syncing the blobs folder; then sync the index.
fn append(sink: &mut Sink, entries: &[IndexEntry]) -> Result<()> {
    if sink.durable {
        File::open(&sink.blobs_dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&sink.blobs_dir, "sync the folder"))?;
    }
    let mut text = String::new();
    for e in entries {
        text.push_str(&e.to_line());
        text.push('\n');
    }
    sink.index
        .write_all(text.as_bytes())
        .map_err(io(&sink.index_path, "append to"))?;
    if sink.durable {
        sink.index
            .sync_data()
            .map_err(io(&sink.index_path, "sync"))?;
    }
    Ok(())
}

fn sequencer(mut sink: Sink, done: Receiver<Done>, reports: Sender<Report>) {
    let mut ready = BTreeMap::new();
    let mut next = 0u64;
    while let Ok(d) = done.recv() {
        ready.insert(d.seq, d);
        while let Ok(d) = done.try_recv() {
            ready.insert(d.seq, d);
        }
        let mut batch = Vec::new();
        let mut error = None;
        let mut consumed = 0;
        while let Some(d) = ready.remove(&next) {
            next += 1;
            consumed += 1;
            match d.result {
                Ok(()) => batch.push(d.entry),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        if consumed == 0 {
            continue;
        }
        let indexed = match (batch.is_empty(), append(&mut sink, &batch)) {
            (true, _) => Vec::new(),
            (false, Ok(())) => batch.iter().map(|e| e.forward).collect(),
            (false, Err(e)) => {
                error = error.or(Some(e));
                Vec::new()
            }
        };
        let report = Report {
            consumed,
            indexed,
            error,
        };
        if reports.send(report).is_err() {
            return;
        }
    }
}

impl Pipeline {
    /// A pool of `depth` sync threads and a sequencer appending to `sink`; at most `depth`
    /// forwards are in flight at once.
    pub fn new(depth: usize, sink: Sink) -> Self {
        let depth = depth.max(1);
        let (jobs_tx, jobs_rx) = channel::<(u64, Job)>();
        let (done_tx, done_rx) = channel::<Done>();
        let (report_tx, report_rx) = channel::<Report>();
        let jobs_rx = Arc::new(Mutex::new(jobs_rx));
        let mut threads: Vec<JoinHandle<()>> = (0..depth)
            .map(|_| {
                let (rx, tx) = (jobs_rx.clone(), done_tx.clone());
                std::thread::spawn(move || loop {
                    let next = rx.lock().map(|r| r.recv());
                    let Ok(Ok((seq, job))) = next else { return };
                    let entry = job.entry.clone();
                    let result = sync_and_rename(job);
                    if tx.send(Done { seq, entry, result }).is_err() {
                        return;
                    }
                })
            })
            .collect();
        drop(done_tx);
        threads.push(std::thread::spawn(move || {
            sequencer(sink, done_rx, report_tx)
        }));
        Pipeline {
            jobs: Some(jobs_tx),
            reports: report_rx,
            threads,
            submitted: 0,
            consumed: 0,
            depth,
        }
    }

    /// Hand a written blob to the pool.
    pub fn submit(&mut self, job: Job) -> Result<()> {
        let seq = self.submitted;
        let sent = self.jobs.as_ref().map(|j| j.send((seq, job)).is_ok());
        match sent {
            Some(true) => {
                self.submitted += 1;
                Ok(())
            }
            _ => Err(StoreError::Refused {
                what: "the sync threads have stopped".into(),
            }),
        }
    }

    /// The most forwards in flight before `settle` waits.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Take the sequencer's reports, waiting until at most `max_in_flight` forwards are in
    /// flight. Returns the forwards indexed (in order) and the first error reported.
    pub fn settle(&mut self, max_in_flight: usize) -> (Vec<u64>, Option<StoreError>) {
        let mut indexed = Vec::new();
        let mut first_err = None;
        let mut take = |r: Report, consumed: &mut u64| {
            *consumed += r.consumed;
            indexed.extend(r.indexed);
            if first_err.is_none() {
                first_err = r.error;
            }
        };
        while let Ok(r) = self.reports.try_recv() {
            take(r, &mut self.consumed);
        }
        while self.submitted - self.consumed > max_in_flight as u64 {
            match self.reports.recv() {
                Ok(r) => take(r, &mut self.consumed),
                Err(_) => {
                    first_err = first_err.or(Some(StoreError::Refused {
                        what: "the sync threads stopped with forwards in flight".into(),
                    }));
                    break;
                }
            }
        }
        (indexed, first_err)
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.jobs = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

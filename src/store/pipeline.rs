//! Group commit for a writer: a syncer thread takes every forward written since its last
//! round, writes the bytes of theirs still pending (small blobs, see `pack.rs`) and syncs the
//! pack(s) they are in (and the `packs/` folder when one is new), then appends their index
//! lines in one write and syncs the index, while the caller goes on appending blobs.
//!
//! A round costs two fsyncs whatever it holds, so the more forwards arrive while one round
//! runs, the less each pays. The invariant of the format holds: an index line is written only
//! after the bytes of its blob are written and synced. After a failed round nothing more is
//! indexed (the state of the page cache after a failed fsync is not to be trusted); every
//! later forward reports the failure.

use super::error::{Result, StoreError};
use super::index::IndexEntry;
use super::pack::PackFile;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A blob appended to a pack, waiting for its pack to be synced and its line written.
pub struct Job {
    pub pack: Arc<PackFile>,
    /// The pack was created for this blob: the `packs/` folder must be synced too.
    pub fresh: bool,
    /// The index line's content but `blob`, which is the pack's name.
    pub entry: IndexEntry,
}

impl Job {
    /// What a job holds of `entry`: all but its `blob` (not copied per forward).
    pub fn entry_of(entry: &IndexEntry) -> IndexEntry {
        IndexEntry {
            error: entry.error.clone(),
            fields: entry.fields.clone(),
            blob: None,
            ..*entry
        }
    }

    /// The job's index line, exactly as [`IndexEntry::to_line`] gives it for the entry
    /// naming the job's pack, appended to `out`.
    fn line_into(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let e = &self.entry;
        let line = Line {
            forward: e.forward,
            written_us: e.written_us,
            took_us: e.took_us,
            broke: e.broke,
            error: e.error.as_deref(),
            fields: &e.fields,
            blob: &self.pack.name,
            offset: e.offset,
            len: e.len,
            crc32: e.crc32,
        };
        serde_json::to_writer(out, &line)
    }
}

/// An index line with a blob, borrowed: serialises as [`IndexEntry`] does (same keys, same
/// order, same omissions).
#[derive(serde::Serialize)]
struct Line<'a> {
    forward: u64,
    written_us: i64,
    took_us: u64,
    broke: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "no_fields")]
    fields: &'a super::index::FieldsOwned,
    blob: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    crc32: Option<u32>,
}

fn no_fields(f: &&super::index::FieldsOwned) -> bool {
    f.0.is_empty()
}

/// What the syncer tells the writer after a round.
struct Report {
    consumed: u64,
    bytes: u64,
    indexed: Vec<u64>,
    error: Option<StoreError>,
}

/// Where the syncer appends.
pub struct Sink {
    pub index: File,
    pub index_path: PathBuf,
    pub packs_dir: PathBuf,
    pub durable: bool,
    /// The lines of a round, reused from round to round.
    pub text: Vec<u8>,
}

/// The syncer thread and the writer's view of it.
pub struct Pipeline {
    jobs: Option<Sender<Job>>,
    reports: Receiver<Report>,
    thread: Option<JoinHandle<()>>,
    submitted: u64,
    consumed: u64,
    bytes_submitted: u64,
    bytes_consumed: u64,
    depth: usize,
}

fn io(p: &std::path::Path, op: &'static str) -> impl FnOnce(std::io::Error) -> StoreError {
    let p = p.display().to_string();
    move |e| StoreError::io(p, op, e)
}

/// One round: write what is pending of each pack the batch is in and sync it, sync the folder
/// if a pack is new, then append the lines and sync the index.
fn commit(sink: &mut Sink, batch: &[Job]) -> Result<()> {
    // Each pack and the end of the last of its blobs in the batch.
    let mut packs: Vec<(&Arc<PackFile>, u64)> = Vec::new();
    for job in batch {
        let end = job.entry.offset.unwrap_or(0) + job.entry.len.unwrap_or(0);
        match packs.iter_mut().find(|(f, _)| Arc::ptr_eq(f, &job.pack)) {
            Some((_, upto)) => *upto = (*upto).max(end),
            None => packs.push((&job.pack, end)),
        }
    }
    for (pack, upto) in packs {
        pack.write_pending(upto)?;
        if sink.durable {
            pack.file.sync_data().map_err(io(&pack.path, "sync"))?;
        }
    }
    if sink.durable && batch.iter().any(|j| j.fresh) {
        File::open(&sink.packs_dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&sink.packs_dir, "sync the folder"))?;
    }
    // Each line exactly as `IndexEntry::to_line` gives it, into the reused buffer.
    sink.text.clear();
    for job in batch {
        job.line_into(&mut sink.text)
            .map_err(|e| StoreError::Refused {
                what: format!("index line of forward {}: {e}", job.entry.forward),
            })?;
        sink.text.push(b'\n');
    }
    sink.index
        .write_all(&sink.text)
        .map_err(io(&sink.index_path, "append to"))?;
    if sink.durable {
        sink.index
            .sync_data()
            .map_err(io(&sink.index_path, "sync"))?;
    }
    Ok(())
}

/// How long the syncer lets forwards gather after a round before it waits on the channel
/// again: a writer sending to a syncer parked in `recv` pays a wake-up (a futex call) per
/// forward, one sending while it lingers does not. It delays an index line by at most this.
const LINGER: std::time::Duration = std::time::Duration::from_micros(200);

fn syncer(mut sink: Sink, jobs: Receiver<Job>, reports: Sender<Report>) {
    let mut failed: Option<String> = None;
    let mut batch = Vec::new();
    loop {
        batch.extend(jobs.try_iter());
        if batch.is_empty() {
            match jobs.recv() {
                Ok(first) => batch.push(first),
                Err(_) => return,
            }
            batch.extend(jobs.try_iter());
        }
        let bytes = batch.iter().filter_map(|j| j.entry.len).sum();
        let result = match &failed {
            Some(why) => Err(StoreError::Refused {
                what: format!("not indexed after an earlier failure: {why}"),
            }),
            None => commit(&mut sink, &batch),
        };
        let (indexed, error) = match result {
            Ok(()) => (batch.iter().map(|j| j.entry.forward).collect(), None),
            Err(e) => {
                failed.get_or_insert_with(|| e.to_string());
                (Vec::new(), Some(e))
            }
        };
        let report = Report {
            consumed: batch.len() as u64,
            bytes,
            indexed,
            error,
        };
        batch.clear();
        if reports.send(report).is_err() {
            return;
        }
        std::thread::sleep(LINGER);
    }
}

impl Pipeline {
    /// A syncer appending to `sink`; the writer keeps at most `depth` forwards in flight.
    pub fn new(depth: usize, sink: Sink) -> Self {
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let (report_tx, report_rx) = channel::<Report>();
        let thread = std::thread::spawn(move || syncer(sink, jobs_rx, report_tx));
        Pipeline {
            jobs: Some(jobs_tx),
            reports: report_rx,
            thread: Some(thread),
            submitted: 0,
            consumed: 0,
            bytes_submitted: 0,
            bytes_consumed: 0,
            depth: depth.max(1),
        }
    }

    /// Hand a written blob to the syncer.
    pub fn submit(&mut self, job: Job) -> Result<()> {
        let bytes = job.entry.len.unwrap_or(0);
        let sent = self.jobs.as_ref().map(|j| j.send(job).is_ok());
        match sent {
            Some(true) => {
                self.submitted += 1;
                self.bytes_submitted += bytes;
                Ok(())
            }
            _ => Err(StoreError::Refused {
                what: "the syncer thread has stopped".into(),
            }),
        }
    }

    /// The most forwards in flight.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Take the syncer's reports, waiting while forwards are in flight and either there are
    /// at least `max_forwards` of them or they hold at least `max_bytes` (so `(0, 0)` waits
    /// for all). Returns the forwards indexed, in order, and the first error reported.
    pub fn settle(
        &mut self,
        max_forwards: usize,
        max_bytes: u64,
    ) -> (Vec<u64>, Option<StoreError>) {
        let mut indexed = Vec::new();
        let mut first_err = None;
        let mut take = |r: Report, p: &mut Pipeline| {
            p.consumed += r.consumed;
            p.bytes_consumed += r.bytes;
            indexed.extend(r.indexed);
            if first_err.is_none() {
                first_err = r.error;
            }
        };
        while let Ok(r) = self.reports.try_recv() {
            take(r, self);
        }
        loop {
            let forwards = self.submitted - self.consumed;
            let bytes = self.bytes_submitted.saturating_sub(self.bytes_consumed);
            if forwards == 0 || (forwards < max_forwards as u64 && bytes < max_bytes) {
                break;
            }
            match self.reports.recv() {
                Ok(r) => take(r, self),
                Err(_) => {
                    first_err = first_err.or(Some(StoreError::Refused {
                        what: "the syncer thread stopped with forwards in flight".into(),
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
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fact::{Field, Fields};
    use std::borrow::Cow;

    #[test]
    fn a_job_writes_the_line_its_entry_gives() {
        let path = std::env::temp_dir().join(format!("somatize-line-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        let pack = Arc::new(PackFile::new(
            file,
            path.clone(),
            "packs/000007.pack".into(),
            0,
        ));
        let fields = Fields(vec![
            (Cow::Borrowed("loss.value"), Field::Num(0.25)),
            ("loss.name".into(), Field::Text("a\"b".into())),
            ("loss.inf".into(), Field::Num(f64::INFINITY)),
        ]);
        for (error, fields) in [(None, Fields::default()), (Some("fc1: boom"), fields)] {
            let entry = IndexEntry {
                forward: 12,
                written_us: 1_764_500_000_123_456,
                took_us: 834,
                broke: error.is_some(),
                error: error.map(str::to_string),
                fields,
                blob: Some(pack.name.clone()),
                offset: Some(902_292),
                len: Some(75_191),
                crc32: Some(330_314_095),
            };
            let job = Job {
                pack: pack.clone(),
                fresh: false,
                entry: Job::entry_of(&entry),
            };
            let mut out = Vec::new();
            job.line_into(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), entry.to_line());
        }
        let _ = std::fs::remove_file(&path);
    }
}

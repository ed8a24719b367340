//! `Recorder`: writes one record per forward into a store, summarising chosen kinds into the index.

use crate::math::stats::{Moments, Stats};
use crate::store::fact::Num;
use crate::store::{
    blob, names, ExitRecord, ForwardRecord, IndexEntry, NodeStats, Reading, StoreError,
    TensorBytes, Writer,
};
use crate::tensor::DType;
use std::path::Path;
use std::time::Instant;

type Result<T> = std::result::Result<T, StoreError>;

/// This machine's name (`/proc/sys/kernel/hostname`, `$HOSTNAME`, or `localhost`), made safe
/// as a path component.
pub fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let safe: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if safe.is_empty() {
        "localhost".into()
    } else {
        safe
    }
}

/// The writer id a process uses when not told one: `<host>-<pid>`.
pub fn default_writer_id() -> String {
    format!("{}-{}", host_name(), std::process::id())
}

/// The writer of a [`Recorder`]: a folder's, or one on object storage (`s3://…`).
pub struct StoreWriter {
    inner: Inner,
    /// Whether to sync blobs, folders and lines ([`Writer::durable`]; a put to object
    /// storage is durable when it returns). Set it before [`Self::set_pipeline`].
    pub durable: bool,
}

enum Inner {
    Dir(Writer),
    Object(crate::store::object::ObjectWriter),
}

/// Call `$body` with the writer underneath, whichever it is, its `durable` set first.
macro_rules! with {
    ($self:ident, $w:ident => $body:expr) => {{
        let durable = $self.durable;
        match &mut $self.inner {
            Inner::Dir($w) => {
                $w.durable = durable;
                $body
            }
            Inner::Object($w) => {
                $w.durable = durable;
                $body
            }
        }
    }};
}

impl StoreWriter {
    /// Open run `run` as writer `writer` in the store at `store`: a folder, or an object
    /// storage URL (`s3://bucket/prefix`, `gs://…`, `az://…`).
    pub fn open(store: &Path, run: &str, writer: &str) -> Result<Self> {
        let inner = match store.to_str().filter(|s| crate::store::object::is_url(s)) {
            Some(url) => Inner::Object(crate::store::object::ObjectWriter::open(url, run, writer)?),
            None => Inner::Dir(Writer::open(store, run, writer)?),
        };
        Ok(StoreWriter {
            inner,
            durable: true,
        })
    }

    /// Group commit ([`Writer::set_pipeline`]); a writer on object storage always puts its
    /// segments from a thread of its own.
    pub fn set_pipeline(&mut self, depth: usize) -> Result<()> {
        let durable = self.durable;
        match &mut self.inner {
            Inner::Dir(w) => {
                w.durable = durable;
                w.set_pipeline(depth)
            }
            Inner::Object(_) => Ok(()),
        }
    }

    /// [`Writer::set_pack_limit`]; on object storage, the size at which a segment is put.
    pub fn set_pack_limit(&mut self, bytes: u64) {
        match &mut self.inner {
            Inner::Dir(w) => w.set_pack_limit(bytes),
            Inner::Object(w) => w.set_segment(
                bytes.try_into().unwrap_or(usize::MAX),
                crate::store::object::SEGMENT_EVERY,
            ),
        }
    }

    /// Wait for every forward accepted to be stored.
    pub fn flush(&mut self) -> Result<()> {
        with!(self, w => w.flush())
    }

    /// Forwards written since the writer opened.
    pub fn written(&self) -> u64 {
        match &self.inner {
            Inner::Dir(w) => w.written(),
            Inner::Object(w) => w.written(),
        }
    }

    /// The last forward stored.
    pub fn last_forward(&self) -> Option<u64> {
        match &self.inner {
            Inner::Dir(w) => w.last_forward(),
            Inner::Object(w) => w.last_forward(),
        }
    }

    /// The folder writer, when the store is a folder.
    pub fn dir_writer(&mut self) -> Option<&mut Writer> {
        match &mut self.inner {
            Inner::Dir(w) => Some(w),
            Inner::Object(_) => None,
        }
    }

    /// The writer on object storage, when the store is there.
    pub fn object_writer(&mut self) -> Option<&mut crate::store::object::ObjectWriter> {
        match &mut self.inner {
            Inner::Dir(_) => None,
            Inner::Object(w) => Some(w),
        }
    }

    /// Write one forward ([`Writer::append`]).
    pub fn append(
        &mut self,
        rec: &ForwardRecord<'_>,
        fields: crate::store::Fields<'static>,
    ) -> Result<IndexEntry> {
        self.append_with_crcs(rec, fields, None)
    }

    pub(crate) fn append_with_crcs(
        &mut self,
        rec: &ForwardRecord<'_>,
        fields: crate::store::Fields<'static>,
        crcs: Option<&[u32]>,
    ) -> Result<IndexEntry> {
        with!(self, w => w.append_with_crcs(rec, fields, crcs))
    }

    /// Mark forward `forward` broke with no blob ([`Writer::append_broke`]).
    pub fn append_broke(&mut self, forward: u64, error: &str) -> Result<IndexEntry> {
        with!(self, w => w.append_broke(forward, error))
    }

    /// Append a machine reading ([`Writer::append_reading`]).
    pub fn append_reading(&mut self, r: &Reading) -> Result<()> {
        with!(self, w => w.append_reading(r))
    }

    /// Write how the recording ended ([`Writer::finish`]).
    pub fn finish(&mut self, exit: &ExitRecord) -> Result<()> {
        with!(self, w => w.finish(exit))
    }

    fn is_object(&self) -> bool {
        matches!(self.inner, Inner::Object(_))
    }
}

/// Writes one run as one writer: a blob and an index line per forward, readings on request.
pub struct Recorder {
    writer: StoreWriter,
    /// The store's folder, the run and this writer's id (for the summary at the end).
    root: std::path::PathBuf,
    run: String,
    writer_id: String,
    summarising: Vec<String>,
    started: Instant,
    machine: String,
    live: LiveSummaries,
}

/// The shortest time between two live summaries of a writer (see [`Recorder::live_summaries`]).
pub const LIVE_SUMMARY_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// When a writer next summarises its run as it goes, and the summary being taken.
struct LiveSummaries {
    /// At least this long between two (`None`: never).
    every: Option<std::time::Duration>,
    next: Option<Instant>,
    /// The summary being taken on its own thread: when it returns, how long it took.
    taking: Option<std::thread::JoinHandle<std::time::Duration>>,
    /// How long the last one took.
    took: std::time::Duration,
}

impl Recorder {
    /// Record run `run` in the store at `store` (created if missing), as writer `<host>-<pid>`.
    pub fn new(store: impl AsRef<Path>, run: &str) -> Result<Self> {
        Self::with_writer(store, run, &default_writer_id())
    }

    /// Record as the given writer id (a rank, a machine); one process per writer id.
    pub fn with_writer(store: impl AsRef<Path>, run: &str, writer: &str) -> Result<Self> {
        Ok(Recorder {
            writer: StoreWriter::open(store.as_ref(), run, writer)?,
            root: store.as_ref().to_path_buf(),
            run: run.to_string(),
            writer_id: writer.to_string(),
            summarising: Vec::new(),
            started: Instant::now(),
            machine: host_name(),
            live: LiveSummaries {
                every: Some(LIVE_SUMMARY_EVERY),
                next: None,
                taking: None,
                took: std::time::Duration::ZERO,
            },
        })
    }

    /// How often the run's summary is appended to `summaries.jsonl` while this writer writes
    /// (`None`: only when it finishes), so that a reader's scan of the store finds a live
    /// run's health without judging it. The first comes `every` after the writer opened; each
    /// is taken on its own thread (an index walk and a fetch per forward judged, as the final
    /// one), never two at once, and the next comes after the longest of `every`, twenty times
    /// the last one's cost and a tenth of the time recorded so far, so that a long run appends
    /// a number of lines that grows with the logarithm of its duration. Default:
    /// [`LIVE_SUMMARY_EVERY`].
    pub fn live_summaries(mut self, every: Option<std::time::Duration>) -> Self {
        self.live.every = every;
        self.live.next = None;
        self
    }

    /// Record the run's config (its settings, `runs/<run>/config.json`), replacing the one it
    /// had, so that runs can be grouped by them (`somatize compare --group-by FIELD`).
    pub fn config(&self, config: &crate::store::config::Config) -> Result<()> {
        crate::store::config::write(&self.root, &self.run, config)
    }

    /// Take a live summary when one is due and none is being taken.
    fn live_summary(&mut self) {
        // On object storage there is no summaries.jsonl to append to: readers read the run.
        let Some(every) = self.live.every.filter(|_| !self.writer.is_object()) else {
            return;
        };
        let now = Instant::now();
        let next = *self.live.next.get_or_insert(self.started + every);
        if now < next {
            return;
        }
        if let Some(t) = self.live.taking.take() {
            if !t.is_finished() {
                self.live.taking = Some(t);
                return;
            }
            self.live.took = t.join().unwrap_or_default();
        }
        let wait = every
            .max(self.live.took * 20)
            .max(now.duration_since(self.started) / 10);
        self.live.next = Some(now + wait);
        let (root, run, writer, durable) = (
            self.root.clone(),
            self.run.clone(),
            self.writer_id.clone(),
            self.writer.durable,
        );
        let spawned = std::thread::Builder::new()
            .name("somatize-summary".into())
            .spawn(move || {
                let t0 = Instant::now();
                // A convenience for readers: one that cannot be taken now is taken next time.
                let _ = crate::health::compare::write_summary(&root, &run, &writer, durable, true);
                t0.elapsed()
            });
        self.live.taking = spawned.ok();
    }

    /// Kinds whose first fact per forward is summarised into the index as `<kind>.<field>`
    /// (e.g. `["loss"]` gives `loss.value`), so `curve` needs no fetch.
    pub fn summarising<S: Into<String>>(mut self, kinds: impl IntoIterator<Item = S>) -> Self {
        self.summarising = kinds.into_iter().map(Into::into).collect();
        self
    }

    /// Keep up to `depth` forwards in flight, synced and indexed in batches by a syncer thread
    /// (group commit, see [`Writer::set_pipeline`]): much faster on most disks, and `record`
    /// then reports a failure on a later call or on [`Self::flush`].
    pub fn pipelined(mut self, depth: usize) -> Result<Self> {
        self.writer.set_pipeline(depth)?;
        Ok(self)
    }

    /// Wait for every forward in flight to be indexed; the first failure is returned.
    pub fn flush(&mut self) -> Result<()> {
        self.writer.flush()
    }

    /// Set the summarised kinds in place.
    pub fn set_summarising(&mut self, kinds: Vec<String>) {
        self.summarising = kinds;
    }

    /// Write one forward. On `Err`, nothing of it was indexed and earlier forwards are intact.
    pub fn record(&mut self, rec: &ForwardRecord<'_>) -> Result<IndexEntry> {
        self.record_with_crcs(rec, None)
    }

    /// [`Self::record`] with each tensor's CRC-32 already computed over exactly its bytes (the
    /// companion's reader thread hashes them as they arrive, so the writer does not).
    pub(crate) fn record_with_crcs(
        &mut self,
        rec: &ForwardRecord<'_>,
        crcs: Option<&[u32]>,
    ) -> Result<IndexEntry> {
        let fields = blob::summarise(&rec.facts, &self.summarising);
        let entry = self.writer.append_with_crcs(rec, fields, crcs)?;
        self.live_summary();
        Ok(entry)
    }

    /// Mark forward `forward` broke with no blob (what was in flight when the command died).
    pub fn broke(&mut self, forward: u64, error: &str) -> Result<IndexEntry> {
        self.writer.append_broke(forward, error)
    }

    /// A reading of this machine with the given values filled in by the caller; `served`,
    /// `up_us`, `machine` and `written_us` are filled here.
    pub fn reading(&mut self, mut r: Reading) -> Result<()> {
        r.written_us = crate::store::writer::now_us();
        r.machine = self.machine.clone();
        r.up_us = Some(self.started.elapsed().as_micros() as u64);
        r.served = Some(self.writer.written());
        self.writer.append_reading(&r)
    }

    /// Write how the recording ended, then the run's summary (its verdict at the default
    /// thresholds, loss, forwards: `compare`'s row) into the store's `summaries.jsonl`, read
    /// back from the store as `compare` reads it (a fetch per forward judged).
    /// The summary is a convenience for readers (a run without one is read instead), so a
    /// failure to write it does not fail the recording: it is said on stderr.
    /// A live summary being taken is waited for first, so that the final one is the last.
    pub fn finish(&mut self, exit: &ExitRecord) -> Result<()> {
        self.writer.finish(exit)?;
        if let Some(t) = self.live.taking.take() {
            let _ = t.join();
        }
        self.live.every = None;
        if self.writer.is_object() {
            return Ok(());
        }
        if let Err(e) = crate::health::compare::write_summary(
            &self.root,
            &self.run,
            &self.writer_id,
            self.writer.durable,
            false,
        ) {
            eprintln!(
                "somatize: run {:?}: its summary was not written to summaries.jsonl ({e}); readers will read the run instead",
                self.run
            );
        }
        Ok(())
    }

    /// The underlying writer.
    pub fn writer(&mut self) -> &mut StoreWriter {
        &mut self.writer
    }
}

/// Write one forward of an untrained model as forward 0 of run `id` (writer `probe`).
pub fn probe(store: impl AsRef<Path>, id: &str, rec: &ForwardRecord<'_>) -> Result<IndexEntry> {
    names::run(id)?;
    let mut r = Recorder::with_writer(store, id, "probe")?;
    let mut rec = rec.clone();
    rec.forward = 0;
    r.record(&rec)
}

/// One-pass statistics of a tensor's little-endian bytes (floats and integers; `None` for
/// half floats, which the caller converts first).
pub fn tensor_stats(t: &TensorBytes<'_>) -> Option<Stats> {
    fn run<const N: usize>(data: &[u8], conv: fn([u8; N]) -> f64) -> Stats {
        let mut m = Moments::new();
        let mut buf = [0f64; 4096];
        for chunk in data.chunks(4096 * N) {
            let mut n = 0;
            for c in chunk.chunks_exact(N) {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                buf[n] = conv(a);
                n += 1;
            }
            m.push_slice(&buf[..n]);
        }
        m.finish()
    }
    Some(match t.dtype {
        DType::F32 => run::<4>(&t.data, |a| f32::from_le_bytes(a) as f64),
        DType::F64 => run::<8>(&t.data, f64::from_le_bytes),
        DType::I32 => run::<4>(&t.data, |a| i32::from_le_bytes(a) as f64),
        DType::I64 => run::<8>(&t.data, |a| i64::from_le_bytes(a) as f64),
        DType::U8 => run::<1>(&t.data, |a| a[0] as f64),
        DType::I8 => run::<1>(&t.data, |a| a[0] as i8 as f64),
        DType::Bool => run::<1>(&t.data, |a| (a[0] != 0) as u8 as f64),
        DType::F16 => run::<2>(&t.data, |a| {
            crate::tensor::typed::f16_to_f64(u16::from_le_bytes(a))
        }),
        DType::BF16 => run::<2>(&t.data, |a| {
            crate::tensor::typed::bf16_to_f64(u16::from_le_bytes(a))
        }),
        _ => return None,
    })
}

/// Add `stats` of `key` to a node-stats table as `key -> metric -> number`.
pub fn put_stats(table: &mut NodeStats, key: &str, stats: &Stats) {
    let row = table.entry(key.to_string()).or_default();
    row.insert("count".into(), Num(stats.count as f64));
    row.insert("nonfinite".into(), Num(stats.nonfinite as f64));
    row.insert("nan".into(), Num(stats.nan as f64));
    for (name, v) in [
        ("l2", stats.l2),
        ("l1", stats.l1),
        ("mean", stats.mean),
        ("std", stats.std),
        ("min", stats.min),
        ("max", stats.max),
        ("absmax", stats.absmax),
        ("zero_fraction", stats.zero_fraction),
    ] {
        if let Some(v) = v {
            row.insert(name.into(), Num(v));
        }
    }
}

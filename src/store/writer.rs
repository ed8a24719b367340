//! The writer: one process's append-only index, packs of blobs and readings under one run,
//! crash-safe.
//!
//! A forward is written as: its blob appended to the writer's current pack
//! (`packs/<n>.pack`), the pack fsynced (and the `packs/` folder, once per new pack), then its
//! index line appended and fsynced. Pipelined, a syncer thread does the syncing and indexing
//! for whole batches at once (group commit, see `pipeline.rs`). On open, a torn last line (a
//! crash mid-append) is truncated away and a new pack is begun.

use super::blob::{self, FieldsAsJson, ForwardRecord, KeysOf, MetaRef};
use super::error::{Result, StoreError};
use super::fact::Fields;
use super::format::{self, FormatFile};
use super::index::{IndexEntry, IndexLine};
use super::names;
use super::pack::{PackFile, PackOut};
use super::reading::{ExitRecord, Reading};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Microseconds since the Unix epoch, this machine's clock.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// Refuse forward `forward` unless it is after `last`, the last one the writer accepted: the
/// rule both writers (a folder's and object storage's) keep.
pub(crate) fn check_after(run: &str, writer: &str, last: Option<u64>, forward: u64) -> Result<()> {
    match last {
        Some(last) if forward <= last => Err(StoreError::Refused {
            what: format!(
                "run {run:?}, writer {writer:?}: forward {forward} is not after forward {last}"
            ),
        }),
        _ => Ok(()),
    }
}

/// What a forward's blob and its index line both say of it, taken once as it is written.
pub(crate) struct Stamp {
    written_us: i64,
    took_us: u64,
    broke: bool,
    error: Option<String>,
}

impl Stamp {
    /// Stamp `rec` now.
    pub(crate) fn of(rec: &ForwardRecord<'_>) -> Self {
        Stamp {
            written_us: now_us(),
            took_us: rec.took(),
            broke: rec.is_broke(),
            error: rec.first_error(),
        }
    }

    /// The blob's `forward.json` for `rec` of `run`/`writer`.
    pub(crate) fn meta<'a>(
        &'a self,
        run: &'a str,
        writer: &'a str,
        rec: &'a ForwardRecord<'_>,
        fields: &'a Fields<'static>,
    ) -> MetaRef<'a> {
        MetaRef {
            run,
            writer,
            forward: rec.forward,
            written_us: self.written_us,
            took_us: self.took_us,
            broke: self.broke,
            error: self.error.as_deref(),
            fields: FieldsAsJson(fields),
            tensors: KeysOf(&rec.tensors),
        }
    }

    /// The index line of forward `forward`, its blob `blob` at `offset` (`len` bytes, `crc`).
    pub(crate) fn entry(
        self,
        forward: u64,
        fields: Fields<'static>,
        blob: String,
        (offset, len, crc): (u64, u64, u32),
    ) -> IndexEntry {
        IndexEntry {
            forward,
            written_us: self.written_us,
            took_us: self.took_us,
            broke: self.broke,
            error: self.error,
            fields,
            blob: Some(blob),
            offset: Some(offset),
            len: Some(len),
            crc32: Some(crc),
        }
    }
}

/// The index line of forward `forward`, broken (`error`) before it had a blob.
pub(crate) fn broke_entry(forward: u64, error: &str) -> IndexEntry {
    IndexEntry {
        forward,
        written_us: now_us(),
        took_us: 0,
        broke: true,
        error: Some(error.to_string()),
        fields: Fields::default(),
        blob: None,
        offset: None,
        len: None,
        crc32: None,
    }
}

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |e| StoreError::io(path.display().to_string(), op, e)
}

/// Create the store at `root` if it has no format file; check the one it has otherwise.
pub fn ensure_store(root: &Path) -> Result<()> {
    std::fs::create_dir_all(root).map_err(io(root, "create the store folder"))?;
    let path = root.join(format::FORMAT_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => FormatFile::parse(&bytes).map(|_| ()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let tmp = root.join(format!(
                "{}.{}.tmp",
                format::FORMAT_FILE,
                std::process::id()
            ));
            let text = serde_json::to_vec(&FormatFile::current()).unwrap_or_default();
            write_synced(&tmp, &text)?;
            std::fs::rename(&tmp, &path).map_err(io(&path, "rename the format file"))?;
            sync_dir(root)
        }
        Err(e) => Err(io(&path, "read")(e)),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::create(path).map_err(io(path, "create"))?;
    f.write_all(bytes).map_err(io(path, "write"))?;
    f.sync_all().map_err(io(path, "sync"))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir, "sync the folder"))
}

/// Open an append-only line file, truncating a torn last line; returns the file and the
/// last whole line that parses as JSON of the given kind, if any.
fn open_lines(path: &Path) -> Result<(File, Option<String>)> {
    let mut f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io(path, "open"))?;
    let len = f.metadata().map_err(io(path, "stat"))?.len();
    let tail_len = len.min(1 << 20);
    let mut tail = vec![0u8; tail_len as usize];
    f.seek(SeekFrom::Start(len - tail_len))
        .map_err(io(path, "seek"))?;
    f.read_exact(&mut tail).map_err(io(path, "read"))?;
    let keep = match tail.iter().rposition(|&b| b == b'\n') {
        Some(i) => len - tail_len + i as u64 + 1,
        None if len == tail_len => 0,
        None => {
            return Err(StoreError::Refused {
                what: format!("{}: last line is over 1 MiB; not repairing", path.display()),
            })
        }
    };
    if keep < len {
        f.set_len(keep).map_err(io(path, "truncate a torn line"))?;
        f.sync_all().map_err(io(path, "sync"))?;
    }
    let whole = &tail[..(keep - (len - tail_len)) as usize];
    let last = whole
        .split(|&b| b == b'\n')
        .rev()
        .filter_map(|l| std::str::from_utf8(l).ok())
        .find(|l| IndexLine::parse(l).is_ok())
        .map(str::to_string);
    Ok((f, last))
}

/// The largest a pack grows before the writer begins the next one (a blob is never split).
pub const PACK_LIMIT: u64 = 1 << 30;
/// The most payload bytes a pipelined writer has in flight (written, not yet indexed).
pub const WINDOW_BYTES: u64 = 64 << 20;

/// The pack a writer appends to.
struct Pack {
    /// `packs/<n>.pack`, as index lines name it.
    name: String,
    /// The open file and its path, shared with the syncer.
    file: std::sync::Arc<PackFile>,
    len: u64,
    /// Created since the `packs/` folder was last synced (its name is not yet durable).
    fresh: bool,
}

/// One process writing one run, as one writer id. Holds an OS lock on the writer's folder.
pub struct Writer {
    run: String,
    writer: String,
    dir: PathBuf,
    pack: Option<Pack>,
    next_pack: u64,
    pack_limit: u64,
    window_bytes: u64,
    index: File,
    readings: Option<File>,
    _lock: File,
    last_forward: Option<u64>,
    last_accepted: Option<u64>,
    written: u64,
    pipeline: Option<super::pipeline::Pipeline>,
    /// Buffers reused from forward to forward: blob JSON and headers.
    scratch: blob::Scratch,
    /// Whether to fsync blobs, folders and lines (on by default; off for scratch runs and
    /// benchmarks: `somatize record --no-fsync`).
    /// Set it before [`Writer::set_pipeline`], which takes it over.
    pub durable: bool,
}

impl Writer {
    /// Open (creating as needed) the store at `root`, run `run`, writer `writer`.
    pub fn open(root: &Path, run: &str, writer: &str) -> Result<Self> {
        names::run(run)?;
        names::writer(writer)?;
        ensure_store(root)?;
        let dir = root.join(format::writer_dir(run, writer));
        let packs = dir.join(format::PACKS_DIR);
        let made = !packs.exists();
        std::fs::create_dir_all(&packs).map_err(io(&packs, "create"))?;
        let lock_path = dir.join(format::LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path, "open"))?;
        if lock.try_lock().is_err() {
            return Err(StoreError::WriterBusy {
                path: dir.display().to_string(),
            });
        }
        let blobs = dir.join(format::BLOBS_DIR);
        if blobs.exists() {
            remove_temporaries(&blobs)?;
        }
        let next_pack = next_pack_number(&packs)?;
        let index_path = dir.join(format::INDEX_FILE);
        if !index_path.exists() || !root.join(super::listing::LISTING_FILE).exists() {
            super::listing::register(root, run, writer)?;
        }
        super::listing::upgrade_format(root)?;
        let (index, last) = open_lines(&index_path)?;
        // The run is being written: until a summary taken after it ends, readers read it.
        super::summary::append(
            root,
            &super::summary::SummaryLine {
                run: run.to_string(),
                writer: writer.to_string(),
                written_us: now_us(),
                open: true,
                live: false,
                summary: None,
                sketch: None,
            },
            true,
        )?;
        if made {
            sync_dir(&dir)?;
        }
        let last_forward = last
            .as_deref()
            .and_then(|l| IndexLine::parse(l).ok())
            .map(|l| l.forward);
        Ok(Writer {
            run: run.to_string(),
            writer: writer.to_string(),
            dir,
            pack: None,
            next_pack,
            pack_limit: PACK_LIMIT,
            window_bytes: WINDOW_BYTES,
            index,
            readings: None,
            _lock: lock,
            last_forward,
            last_accepted: last_forward,
            written: 0,
            pipeline: None,
            scratch: blob::Scratch::default(),
            durable: true,
        })
    }

    /// The last forward in the index, if any (forwards in flight are not yet in it).
    pub fn last_forward(&self) -> Option<u64> {
        self.last_forward
    }

    /// Forwards written by this writer since it was opened.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// This writer's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn check_next(&self, forward: u64) -> Result<()> {
        check_after(&self.run, &self.writer, self.last_accepted, forward)
    }

    /// Write one forward: its blob, then its index line. On `Err` nothing was indexed.
    pub fn append(
        &mut self,
        rec: &ForwardRecord<'_>,
        fields: Fields<'static>,
    ) -> Result<IndexEntry> {
        self.append_with_crcs(rec, fields, None)
    }

    /// [`Self::append`], with each tensor's CRC-32 already known (computed over exactly its
    /// `data`; see [`blob::write_with`]).
    pub(crate) fn append_with_crcs(
        &mut self,
        rec: &ForwardRecord<'_>,
        fields: Fields<'static>,
        crcs: Option<&[u32]>,
    ) -> Result<IndexEntry> {
        self.check_next(rec.forward)?;
        rec.tensors.iter().try_for_each(|t| t.check())?;
        let stamp = Stamp::of(rec);
        let (run, writer) = (
            std::mem::take(&mut self.run),
            std::mem::take(&mut self.writer),
        );
        let written = self.write_blob(&stamp.meta(&run, &writer, rec, &fields), rec, crcs);
        (self.run, self.writer) = (run, writer);
        let (pack_name, offset, len, crc) = written?;
        let entry = stamp.entry(rec.forward, fields, pack_name, (offset, len, crc));
        self.last_accepted = Some(rec.forward);
        let Some(pack) = self.pack.as_mut() else {
            return Err(StoreError::Refused {
                what: "internal error: no pack after writing a blob".into(),
            });
        };
        if let Some(pipe) = self.pipeline.as_mut() {
            // The syncer syncs the folder for the first forward of a new pack.
            let fresh = std::mem::take(&mut pack.fresh);
            pipe.submit(super::pipeline::Job {
                pack: pack.file.clone(),
                fresh,
                entry: super::pipeline::Job::entry_of(&entry),
            })?;
            let (forwards, bytes) = (pipe.depth(), self.window_bytes);
            self.index_ready(forwards, bytes)?;
            return Ok(entry);
        }
        if self.durable {
            pack.file
                .file
                .sync_data()
                .map_err(io(&pack.file.path, "sync"))?;
            if pack.fresh {
                sync_dir(&self.dir.join(format::PACKS_DIR))?;
            }
        }
        pack.fresh = false;
        self.append_lines(std::slice::from_ref(&entry))?;
        Ok(entry)
    }

    /// Begin a new pack once the current one has reached this many bytes (default
    /// [`PACK_LIMIT`]; a blob is never split, so a pack may end up larger).
    pub fn set_pack_limit(&mut self, bytes: u64) {
        self.pack_limit = bytes.max(1);
    }

    /// Group commit: a syncer thread syncs the pack and appends the index lines of every
    /// forward written since its last round, in order, each after its blob is durable, while
    /// the caller goes on writing blobs. `Ok` from [`Self::append`] then means *accepted*: a
    /// later call (or [`Self::flush`]) reports a failure, naming the file. At most `depth`
    /// forwards and [`Self::set_window_bytes`] bytes of payload are in flight (accepted, not
    /// yet indexed); a writer over either waits. `depth` of 0 or 1 turns it off.
    pub fn set_pipeline(&mut self, depth: usize) -> Result<()> {
        self.flush()?;
        self.pipeline = None;
        if depth > 1 {
            let index_path = self.dir.join(format::INDEX_FILE);
            let sink = super::pipeline::Sink {
                index: self.index.try_clone().map_err(io(&index_path, "reopen"))?,
                index_path,
                packs_dir: self.dir.join(format::PACKS_DIR),
                durable: self.durable,
                text: Vec::new(),
            };
            self.pipeline = Some(super::pipeline::Pipeline::new(depth, sink));
        }
        Ok(())
    }

    /// The most payload bytes a pipelined writer keeps in flight (default [`WINDOW_BYTES`]);
    /// one forward larger than this is still accepted, alone.
    pub fn set_window_bytes(&mut self, bytes: u64) {
        self.window_bytes = bytes.max(1);
    }

    /// Wait for every forward in flight and index it; the first failure is returned.
    pub fn flush(&mut self) -> Result<()> {
        self.index_ready(0, 0)
    }

    fn index_ready(&mut self, max_forwards: usize, max_bytes: u64) -> Result<()> {
        let Some(pipe) = self.pipeline.as_mut() else {
            return Ok(());
        };
        let (indexed, err) = pipe.settle(max_forwards, max_bytes);
        if let Some(&last) = indexed.last() {
            self.last_forward = Some(last);
        }
        self.written += indexed.len() as u64;
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Mark forward `forward` broke without a blob (the command died while it was in flight).
    pub fn append_broke(&mut self, forward: u64, error: &str) -> Result<IndexEntry> {
        self.flush()?;
        self.check_next(forward)?;
        let entry = broke_entry(forward, error);
        self.last_accepted = Some(forward);
        self.append_lines(std::slice::from_ref(&entry))?;
        Ok(entry)
    }

    /// The pack the next blob goes into: the current one, or a new one when there is none
    /// or the current one has reached the limit.
    fn pack_for_next(&mut self) -> Result<&mut Pack> {
        let full = self
            .pack
            .as_ref()
            .is_none_or(|p| p.len > 0 && p.len >= self.pack_limit);
        if full {
            let name = format::pack_name(self.next_pack);
            let path = self.dir.join(&name);
            let file = OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .map_err(io(&path, "create"))?;
            // Appends go to the end, wherever that is: offsets count from the file's length.
            let len = file.metadata().map_err(io(&path, "stat"))?.len();
            self.next_pack += 1;
            self.pack = Some(Pack {
                name: name.clone(),
                file: std::sync::Arc::new(PackFile::new(file, path, name, len)),
                len,
                fresh: true,
            });
        }
        self.pack.as_mut().ok_or_else(|| StoreError::Refused {
            what: "internal error: no pack".into(),
        })
    }

    /// Append a blob to the pack; returns the pack's name, the blob's offset, length and
    /// CRC-32. Pipelined, a small blob may stay pending for the syncer to write (see
    /// `pack.rs`). On a failed write the partial blob is cut off (as far as the disk allows)
    /// and the pack is left: the next blob begins a new one.
    fn write_blob(
        &mut self,
        meta: &MetaRef<'_>,
        rec: &ForwardRecord<'_>,
        crcs: Option<&[u32]>,
    ) -> Result<(String, u64, u64, u32)> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let keep = self.pipeline.is_some();
        let written = self.pack_for_next().and_then(|pack| {
            let out = PackOut {
                pack: &pack.file,
                keep,
                direct: false,
            };
            let offset = pack.len;
            match blob::write_with(out, meta, rec, &mut scratch, crcs, Some(offset))
                .and_then(|(mut out, len, crc)| out.flush().map(|_| (len, crc)))
            {
                Ok((len, crc)) => {
                    pack.len += len;
                    Ok((pack.name.clone(), offset, len, crc))
                }
                Err(e) => {
                    pack.file.cut_off(offset, &e);
                    Err(io(&pack.file.path, "append to")(e))
                }
            }
        });
        self.scratch = scratch;
        if written.is_err() {
            // The pack is left: the next blob begins a new one.
            self.pack = None;
        }
        written
    }

    /// Append index lines in one write (the blobs they name are durable already), then sync
    /// the index.
    fn append_lines(&mut self, entries: &[IndexEntry]) -> Result<()> {
        let Some(last) = entries.last() else {
            return Ok(());
        };
        let mut text = String::new();
        for e in entries {
            text.push_str(&e.to_line());
            text.push('\n');
        }
        let path = self.dir.join(format::INDEX_FILE);
        self.index
            .write_all(text.as_bytes())
            .map_err(io(&path, "append to"))?;
        if self.durable {
            self.index.sync_data().map_err(io(&path, "sync"))?;
        }
        self.last_forward = Some(last.forward);
        self.written += entries.len() as u64;
        Ok(())
    }

    /// Append a machine reading to this writer's `readings.jsonl`.
    pub fn append_reading(&mut self, reading: &Reading) -> Result<()> {
        let path = self.dir.join(format::READINGS_FILE);
        if self.readings.is_none() {
            self.readings = Some(open_lines(&path)?.0);
        }
        let mut line = serde_json::to_string(reading).unwrap_or_default();
        line.push('\n');
        let f = self.readings.as_mut().ok_or_else(|| StoreError::NotFound {
            path: path.display().to_string(),
        })?;
        f.write_all(line.as_bytes())
            .map_err(io(&path, "append to"))?;
        if self.durable {
            f.sync_data().map_err(io(&path, "sync"))?;
        }
        Ok(())
    }

    /// Write `exit.json` (replacing any earlier one).
    pub fn finish(&mut self, exit: &ExitRecord) -> Result<()> {
        self.flush()?;
        let path = self.dir.join(format::EXIT_FILE);
        let tmp = self.dir.join(format!("{}.tmp", format::EXIT_FILE));
        write_synced(&tmp, &serde_json::to_vec(exit).unwrap_or_default())?;
        std::fs::rename(&tmp, &path).map_err(io(&path, "rename"))?;
        sync_dir(&self.dir)
    }
}

impl Drop for Writer {
    /// Forwards still in flight are indexed; a failure can only be printed here, so callers
    /// that care call [`Writer::flush`] or [`Writer::finish`] first.
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            eprintln!(
                "somatize: run {:?}, writer {:?}: {e}",
                self.run, self.writer
            );
        }
    }
}

/// One more than the highest pack number in `packs` (0 when it has none): a writer reopened
/// after a crash begins a new pack, so bytes a killed writer left unindexed stay unreferenced.
fn next_pack_number(packs: &Path) -> Result<u64> {
    let mut next = 0;
    for entry in std::fs::read_dir(packs).map_err(io(packs, "list"))? {
        let entry = entry.map_err(io(packs, "list"))?;
        if let Some(n) = entry.file_name().to_str().and_then(format::pack_number) {
            next = next.max(n.saturating_add(1));
        }
    }
    Ok(next)
}

/// Remove the temporaries a format 1.x writer left in `blobs/`.
fn remove_temporaries(blobs: &Path) -> Result<()> {
    for entry in std::fs::read_dir(blobs).map_err(io(blobs, "list"))? {
        let entry = entry.map_err(io(blobs, "list"))?;
        if entry.file_name().to_string_lossy().ends_with(".tmp") {
            let p = entry.path();
            std::fs::remove_file(&p).map_err(io(&p, "remove a stray temporary"))?;
        }
    }
    Ok(())
}

//! The writer: one process's append-only index, blobs and readings under one run, crash-safe.
//!
//! A forward is written as: blob to `blobs/<n>.npz.tmp`, fsync, rename to `blobs/<n>.npz`,
//! fsync the folder, then its index line appended and fsynced. On open, a torn last line
//! (a crash mid-append) is truncated away and stray temporary blobs are removed.

use super::blob::{self, ForwardMeta, ForwardRecord};
use super::error::{Result, StoreError};
use super::fact::Fields;
use super::format::{self, FormatFile};
use super::index::{IndexEntry, IndexLine};
use super::names;
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

/// One process writing one run, as one writer id. Holds an OS lock on the writer's folder.
pub struct Writer {
    run: String,
    writer: String,
    dir: PathBuf,
    index: File,
    readings: Option<File>,
    _lock: File,
    last_forward: Option<u64>,
    last_accepted: Option<u64>,
    written: u64,
    pipeline: Option<super::pipeline::Pipeline>,
    /// Whether to fsync blobs, folders and lines (on by default; off only for benchmarks).
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
        let blobs = dir.join(format::BLOBS_DIR);
        std::fs::create_dir_all(&blobs).map_err(io(&blobs, "create"))?;
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
        remove_temporaries(&blobs)?;
        let index_path = dir.join(format::INDEX_FILE);
        if !index_path.exists() || !root.join(super::listing::LISTING_FILE).exists() {
            super::listing::register(root, run, writer)?;
        }
        let (index, last) = open_lines(&index_path)?;
        let last_forward = last
            .as_deref()
            .and_then(|l| IndexLine::parse(l).ok())
            .map(|l| l.forward);
        Ok(Writer {
            run: run.to_string(),
            writer: writer.to_string(),
            dir,
            index,
            readings: None,
            _lock: lock,
            last_forward,
            last_accepted: last_forward,
            written: 0,
            pipeline: None,
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
        match self.last_accepted {
            Some(last) if forward <= last => Err(StoreError::Refused {
                what: format!(
                    "run {:?}, writer {:?}: forward {forward} is not after forward {last}",
                    self.run, self.writer
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Write one forward: its blob, then its index line. On `Err` nothing was indexed.
    pub fn append(
        &mut self,
        rec: &ForwardRecord<'_>,
        fields: Fields<'static>,
    ) -> Result<IndexEntry> {
        self.check_next(rec.forward)?;
        rec.tensors.iter().try_for_each(|t| t.check())?;
        let written_us = now_us();
        let meta = ForwardMeta {
            run: self.run.clone(),
            writer: self.writer.clone(),
            forward: rec.forward,
            written_us,
            took_us: rec.took(),
            broke: rec.is_broke(),
            error: rec.first_error(),
            fields: fields
                .0
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_json()))
                .collect(),
            tensors: rec.tensors.iter().map(|t| t.key.to_string()).collect(),
        };
        let name = format::blob_name(rec.forward);
        let path = self.dir.join(&name);
        let (file, tmp, len, crc) = self.write_blob(&name, &meta, rec)?;
        let entry = IndexEntry {
            forward: rec.forward,
            written_us,
            took_us: meta.took_us,
            broke: meta.broke,
            error: meta.error,
            fields,
            blob: Some(name),
            len: Some(len),
            crc32: Some(crc),
        };
        self.last_accepted = Some(rec.forward);
        if let Some(pipe) = self.pipeline.as_mut() {
            pipe.submit(super::pipeline::Job {
                file,
                tmp,
                path,
                entry: entry.clone(),
            })?;
            let max = pipe.depth().saturating_sub(1);
            self.index_ready(max)?;
            return Ok(entry);
        }
        if self.durable {
            file.sync_all().map_err(io(&tmp, "sync"))?;
        }
        drop(file);
        std::fs::rename(&tmp, &path).map_err(io(&path, "rename"))?;
        self.append_lines(std::slice::from_ref(&entry))?;
        Ok(entry)
    }

    /// Sync blobs on `depth` threads at once; their index lines still go in in order, each
    /// after its blob is durable. `Ok` from [`Self::append`] then means *accepted*: a later
    /// call (or [`Self::flush`]) reports a blob that failed, naming it. Up to `depth`
    /// forwards are in flight at any time. `depth` of 0 or 1 turns it off.
    pub fn set_pipeline(&mut self, depth: usize) -> Result<()> {
        self.flush()?;
        self.pipeline = None;
        if depth > 1 {
            let index_path = self.dir.join(format::INDEX_FILE);
            let sink = super::pipeline::Sink {
                index: self.index.try_clone().map_err(io(&index_path, "reopen"))?,
                index_path,
                blobs_dir: self.dir.join(format::BLOBS_DIR),
                durable: self.durable,
            };
            self.pipeline = Some(super::pipeline::Pipeline::new(depth, sink));
        }
        Ok(())
    }

    /// Wait for every forward in flight and index it; the first failure is returned.
    pub fn flush(&mut self) -> Result<()> {
        self.index_ready(0)
    }

    fn index_ready(&mut self, max_in_flight: usize) -> Result<()> {
        let Some(pipe) = self.pipeline.as_mut() else {
            return Ok(());
        };
        let (indexed, err) = pipe.settle(max_in_flight);
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
        let entry = IndexEntry {
            forward,
            written_us: now_us(),
            took_us: 0,
            broke: true,
            error: Some(error.to_string()),
            fields: Fields::default(),
            blob: None,
            len: None,
            crc32: None,
        };
        self.last_accepted = Some(forward);
        self.append_lines(std::slice::from_ref(&entry))?;
        Ok(entry)
    }

    /// Write a blob to its temporary name; the caller syncs and renames it.
    fn write_blob(
        &mut self,
        name: &str,
        meta: &ForwardMeta,
        rec: &ForwardRecord<'_>,
    ) -> Result<(File, PathBuf, u64, u32)> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        let file = File::create(&tmp).map_err(io(&tmp, "create"))?;
        let out = std::io::BufWriter::with_capacity(256 << 10, file);
        let (out, len, crc) = blob::write(out, meta, rec).map_err(io(&tmp, "write"))?;
        let file = out
            .into_inner()
            .map_err(|e| io(&tmp, "write")(e.into_error()))?;
        Ok((file, tmp, len, crc))
    }

    /// Append index lines in one write: first sync the blobs folder (so every rename they
    /// name is durable), then the lines, then sync the index.
    fn append_lines(&mut self, entries: &[IndexEntry]) -> Result<()> {
        let Some(last) = entries.last() else {
            return Ok(());
        };
        if self.durable && entries.iter().any(|e| e.blob.is_some()) {
            sync_dir(&self.dir.join(format::BLOBS_DIR))?;
        }
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

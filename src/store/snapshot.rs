//! Export: a snapshot zip of a store's tree (entries stored), all of a run or its last N forwards.
//!
//! Blobs are written one entry per forward (`blobs/<forward>.npz`, the layout of a format 1.x
//! writer) whether they were in packs or files, and index lines name them so: a reader seeks
//! to one blob through the zip's directory, and `--last N` carries only N blobs' bytes.

use super::error::{Result, StoreError};
use super::format::{self, FormatFile};
use super::fs::StoreFs;
use super::index::{self, IndexEntry, LineReader};
use super::scan::Store;
use super::zipfile::ZipWriter;
use std::io::Write;
use std::path::Path;

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportSummary {
    pub runs: usize,
    pub writers: usize,
    pub forwards: u64,
    pub blobs: u64,
    pub bytes: u64,
}

/// Copy `len` bytes of `src` from `offset` into the zip as entry `dst`, reading them twice in
/// bounded chunks: once for the CRC, once into the zip.
fn copy_entry<F: StoreFs, W: Write>(
    fs: &F,
    z: &mut ZipWriter<W>,
    src: &str,
    offset: u64,
    len: u64,
    dst: &str,
) -> Result<()> {
    let mut crc = crc32fast::Hasher::new();
    each_chunk(fs, src, offset, len, &mut |chunk| {
        crc.update(chunk);
        Ok(())
    })?;
    z.add_with(dst, len, crc, &mut |out| {
        each_chunk(fs, src, offset, len, &mut |chunk| {
            out.write_all(chunk)
                .map_err(|e| StoreError::io(dst, "export", e))
        })
        .map_err(std::io::Error::other)
    })
    .map_err(|e| StoreError::io(dst, "export", e))
}

/// Call `f` with `len` bytes of `path` from `offset`, one chunk at a time; a file that ends
/// early is an error naming it.
fn each_chunk<F: StoreFs>(
    fs: &F,
    path: &str,
    offset: u64,
    len: u64,
    f: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let mut at = 0;
    while at < len {
        let chunk = fs.read_range(path, offset + at, index::CHUNK.min(len - at))?;
        if chunk.is_empty() {
            return Err(StoreError::BlobLength {
                run: String::new(),
                forward: 0,
                path: path.to_string(),
                want: len,
                got: at,
            });
        }
        f(&chunk)?;
        at += chunk.len() as u64;
    }
    Ok(())
}

/// An index line as the snapshot holds it: a blob in a pack is named by its own entry.
fn snapshot_entry(e: &IndexEntry) -> IndexEntry {
    let mut out = e.clone();
    if e.offset.is_some() {
        out.blob = Some(format::blob_name(e.forward));
        out.offset = None;
    }
    out
}

/// Write `entries`' lines (as the snapshot names their blobs) as the zip entry `path`.
fn add_index<W: Write>(z: &mut ZipWriter<W>, path: &str, entries: &[IndexEntry]) -> Result<()> {
    let line = |e: &IndexEntry| {
        let mut l = snapshot_entry(e).to_line();
        l.push('\n');
        l
    };
    let mut crc = crc32fast::Hasher::new();
    let mut len = 0u64;
    for e in entries {
        let l = line(e);
        crc.update(l.as_bytes());
        len += l.len() as u64;
    }
    z.add_with(path, len, crc, &mut |out| {
        entries
            .iter()
            .try_for_each(|e| out.write_all(line(e).as_bytes()))
    })
    .map_err(|e| StoreError::io(path, "export", e))
}

/// The length of `path` up to and including its last newline (a torn tail is left out).
fn whole_lines_len<F: StoreFs>(fs: &F, path: &str) -> Result<u64> {
    let mut lines = LineReader::open(fs, path)?;
    let mut len = 0u64;
    while let Some((_, text)) = lines.next_line()? {
        match text {
            Ok(t) => len += t.len() as u64 + 1,
            // Not UTF-8 or too long: its exact length is not known here; copy the file as is.
            Err(_) => return fs.len(path),
        }
    }
    Ok(len)
}

/// Write a snapshot of `runs` of `store` (all runs when empty) to `out`; with `last`, only
/// each run's last N forwards (merged over writers) and their blobs.
pub fn export<F: StoreFs>(
    store: &Store<F>,
    runs: &[String],
    last: Option<usize>,
    out: &Path,
) -> Result<ExportSummary> {
    let runs = if runs.is_empty() {
        store.runs()?
    } else {
        runs.to_vec()
    };
    let tmp = out.with_extension("zip.tmp");
    let file = std::fs::File::create(&tmp)
        .map_err(|e| StoreError::io(tmp.display().to_string(), "create", e))?;
    let mut z = ZipWriter::new(std::io::BufWriter::with_capacity(1 << 20, file));
    let mut sum = ExportSummary::default();
    let fmt = serde_json::to_vec(&FormatFile::current()).unwrap_or_default();
    let wrap = |e: std::io::Error| StoreError::io(out.display().to_string(), "write", e);
    z.add(format::FORMAT_FILE, &[&fmt]).map_err(wrap)?;
    let mut listing = String::new();
    for run in &runs {
        for w in store.writers(run)? {
            listing.push_str(
                &super::listing::ListingLine {
                    run: run.clone(),
                    writer: w,
                }
                .to_line(),
            );
        }
    }
    z.add(super::listing::LISTING_FILE, &[listing.as_bytes()])
        .map_err(wrap)?;
    for run in &runs {
        sum.runs += 1;
        let keep = match last {
            Some(n) => Some(store.last(run, n, &mut |_| {})?),
            None => None,
        };
        // The run's graph (docs/store-format.md), when it has one.
        let graph = format!("{}/graph.json", format::run_dir(run));
        if let Ok(len) = store.fs().len(&graph) {
            copy_entry(store.fs(), &mut z, &graph, 0, len, &graph)?;
        }
        for w in store.writers(run)? {
            sum.writers += 1;
            let dir = format::writer_dir(run, &w);
            let index_path = format!("{dir}/{}", format::INDEX_FILE);
            let mut entries = Vec::new();
            match &keep {
                Some(items) => entries.extend(
                    items
                        .iter()
                        .filter(|i| *i.writer == *w)
                        .map(|i| i.entry.clone()),
                ),
                None => store.for_each_line(
                    run,
                    &w,
                    &mut |l| entries.push(l.to_entry()),
                    &mut |_| {},
                )?,
            }
            add_index(&mut z, &index_path, &entries)?;
            for e in &entries {
                sum.forwards += 1;
                if let (Some(blob), Some(len)) = (&e.blob, e.len) {
                    super::names::relative_path(blob)?;
                    let src = format!("{dir}/{blob}");
                    let dst = match snapshot_entry(e).blob {
                        Some(b) => format!("{dir}/{b}"),
                        None => src.clone(),
                    };
                    copy_entry(store.fs(), &mut z, &src, e.offset.unwrap_or(0), len, &dst)?;
                    sum.blobs += 1;
                }
            }
            for extra in [format::READINGS_FILE, format::EXIT_FILE] {
                let p = format!("{dir}/{extra}");
                match whole_lines_len(store.fs(), &p) {
                    Ok(len) => {
                        let len = if extra == format::EXIT_FILE {
                            store.fs().len(&p)?
                        } else {
                            len
                        };
                        copy_entry(store.fs(), &mut z, &p, 0, len, &p)?
                    }
                    Err(StoreError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    let (w, len, _) = z.finish().map_err(wrap)?;
    let file = w.into_inner().map_err(|e| wrap(e.into_error()))?;
    file.sync_all().map_err(wrap)?;
    std::fs::rename(&tmp, out)
        .map_err(|e| StoreError::io(out.display().to_string(), "rename", e))?;
    sum.bytes = len;
    Ok(sum)
}

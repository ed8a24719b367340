//! Export: a snapshot zip of a store's tree (entries stored), all of a run or its last N forwards.
//!
//! A whole run is the same tree: its index as written, each pack its lines name (up to the
//! end of the last blob they name), each 1.x blob file. The last N forwards get, per writer,
//! one new pack of just their blobs and index lines naming it, so `--last N` carries N blobs.
//! A snapshot of whole runs carries their lines of `summaries.jsonl` (each run's latest summary
//! and its latest line: what a reader takes from it), so that it opens as fast as the folder;
//! one of the last N forwards carries none (a summary of the whole run would not be what the
//! snapshot holds: its runs are read).

use super::error::{Result, StoreError};
use super::format::{self, FormatFile};
use super::fs::StoreFs;
use super::index::{self, IndexEntry, LineReader};
use super::scan::Store;
use super::zipfile::ZipWriter;
use std::collections::BTreeMap;
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

/// A range of a file in the store: path, offset, length.
type Span = (String, u64, u64);

/// Write the ranges `spans`, one after another, as the zip entry `dst`, reading them twice
/// in bounded chunks: once for the CRC, once into the zip.
fn copy_spans<F: StoreFs, W: Write>(
    fs: &F,
    z: &mut ZipWriter<W>,
    spans: &[Span],
    dst: &str,
) -> Result<()> {
    let mut crc = crc32fast::Hasher::new();
    for (src, offset, len) in spans {
        each_chunk(fs, src, *offset, *len, &mut |chunk| {
            crc.update(chunk);
            Ok(())
        })?;
    }
    let total = spans.iter().map(|s| s.2).sum();
    z.add_with(dst, total, crc, &mut |out| {
        for (src, offset, len) in spans {
            each_chunk(fs, src, *offset, *len, &mut |chunk| {
                out.write_all(chunk)
                    .map_err(|e| StoreError::io(dst, "export", e))
            })
            .map_err(std::io::Error::other)?;
        }
        Ok(())
    })
    .map_err(|e| StoreError::io(dst, "export", e))
}

/// Copy `len` bytes of `path` from the start as the entry of the same name.
fn copy_entry<F: StoreFs, W: Write>(
    fs: &F,
    z: &mut ZipWriter<W>,
    path: &str,
    len: u64,
) -> Result<()> {
    copy_spans(fs, z, &[(path.to_string(), 0, len)], path)
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

/// Write `entries`' lines as the zip entry `path`.
fn add_index<W: Write>(z: &mut ZipWriter<W>, path: &str, entries: &[IndexEntry]) -> Result<()> {
    let line = |e: &IndexEntry| {
        let mut l = e.to_line();
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

/// One writer of a whole run: its index as written (whole lines), each pack its lines name
/// up to the end of the last blob they name, each 1.x blob file.
fn export_writer<F: StoreFs, W: Write>(
    store: &Store<F>,
    z: &mut ZipWriter<W>,
    run: &str,
    writer: &str,
    sum: &mut ExportSummary,
) -> Result<()> {
    let dir = format::writer_dir(run, writer);
    let index_path = format!("{dir}/{}", format::INDEX_FILE);
    let len = whole_lines_len(store.fs(), &index_path)?;
    copy_entry(store.fs(), z, &index_path, len)?;
    let mut packs: BTreeMap<String, u64> = BTreeMap::new();
    let mut files: Vec<(String, u64)> = Vec::new();
    let mut bad = None;
    store.for_each_line(
        run,
        writer,
        &mut |l| {
            sum.forwards += 1;
            let (Some(blob), Some(len)) = (&l.blob, l.len) else {
                return;
            };
            if let Err(e) = super::names::relative_path(&blob.0) {
                bad.get_or_insert(e);
                return;
            }
            sum.blobs += 1;
            let path = format!("{dir}/{}", blob.0);
            match l.offset {
                Some(offset) => {
                    let end = packs.entry(path).or_insert(0);
                    *end = (*end).max(offset.saturating_add(len));
                }
                None => files.push((path, len)),
            }
        },
        &mut |_| {},
    )?;
    if let Some(e) = bad {
        return Err(e);
    }
    for (path, end) in packs
        .iter()
        .map(|(p, e)| (p, *e))
        .chain(files.iter().map(|(p, l)| (p, *l)))
    {
        copy_entry(store.fs(), z, path, end)?;
    }
    Ok(())
}

/// One writer's share of the last N forwards: their blobs in one new pack (1.x blob files
/// as they are), and index lines naming where they now are.
fn export_last<F: StoreFs, W: Write>(
    store: &Store<F>,
    z: &mut ZipWriter<W>,
    dir: &str,
    entries: impl Iterator<Item = IndexEntry>,
    sum: &mut ExportSummary,
) -> Result<()> {
    let pack = format::pack_name(0);
    let (mut lines, mut spans, mut files) = (Vec::new(), Vec::new(), Vec::new());
    let mut at = 0u64;
    for mut e in entries {
        sum.forwards += 1;
        if let (Some(blob), Some(len)) = (&e.blob, e.len) {
            super::names::relative_path(blob)?;
            sum.blobs += 1;
            let path = format!("{dir}/{blob}");
            match e.offset {
                Some(offset) => {
                    spans.push((path, offset, len));
                    e.blob = Some(pack.clone());
                    e.offset = Some(at);
                    at += len;
                }
                None => files.push((path, len)),
            }
        }
        lines.push(e);
    }
    add_index(z, &format!("{dir}/{}", format::INDEX_FILE), &lines)?;
    if !spans.is_empty() {
        copy_spans(store.fs(), z, &spans, &format!("{dir}/{pack}"))?;
    }
    for (path, len) in &files {
        copy_entry(store.fs(), z, path, *len)?;
    }
    Ok(())
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

/// The lines of the store's summaries file a reader takes for `runs`: per run its latest summary
/// (unless a writer opened after it) and its latest line, so that the snapshot's file reads as
/// the store's does for them. A summaries file that is not one gives none.
fn summaries_of<F: StoreFs>(store: &Store<F>, runs: &[String]) -> Result<String> {
    let lines = match super::summary::read_runs(store.fs()) {
        Ok(l) => l,
        Err(e @ StoreError::Io { .. }) => return Err(e),
        Err(_) => return Ok(String::new()),
    };
    let mut text = String::new();
    for run in runs {
        let Some(l) = lines.get(run) else { continue };
        if let Some(s) = l.last_summary.as_ref().filter(|s| **s != l.last) {
            text.push_str(&s.to_line());
        }
        text.push_str(&l.last.to_line());
    }
    Ok(text)
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
    if last.is_none() {
        let summaries = summaries_of(store, &runs)?;
        if !summaries.is_empty() {
            z.add(super::summary::SUMMARIES_FILE, &[summaries.as_bytes()])
                .map_err(wrap)?;
        }
    }
    for run in &runs {
        sum.runs += 1;
        let keep = match last {
            Some(n) => Some(store.last(run, n, &mut |_| {})?),
            None => None,
        };
        // The run's graph and config (docs/store-format.md), when it has them.
        for file in [format::GRAPH_FILE, format::CONFIG_FILE] {
            let path = format!("{}/{file}", format::run_dir(run));
            if let Ok(len) = store.fs().len(&path) {
                copy_entry(store.fs(), &mut z, &path, len)?;
            }
        }
        for w in store.writers(run)? {
            sum.writers += 1;
            let dir = format::writer_dir(run, &w);
            match &keep {
                Some(items) => {
                    let mine = items.iter().filter(|i| *i.writer == *w);
                    export_last(store, &mut z, &dir, mine.map(|i| i.entry.clone()), &mut sum)?
                }
                None => export_writer(store, &mut z, run, &w, &mut sum)?,
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
                        copy_entry(store.fs(), &mut z, &p, len)?
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

//! Zip archives with stored (uncompressed) entries: a streaming writer and a range-read index.
//!
//! Blobs and snapshots are both such archives. The writer emits zip64 records only when an
//! offset, size or count needs them. They are read by the `zip` crate over the store's range
//! reads (a `Read + Seek` adapter), and compressed or encrypted entries, duplicate names and
//! local headers outside the archive are refused.

use super::error::{Result, StoreError};
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::Arc;

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const EOCD_SIG: u32 = 0x0605_4b50;
const EOCD64_SIG: u32 = 0x0606_4b50;
const LOCATOR64_SIG: u32 = 0x0706_4b50;
const LOCAL_LEN: u64 = 30;
const CENTRAL_LEN: usize = 46;
const EOCD_LEN: u64 = 22;
/// 1980-01-01 in MS-DOS date format; entries carry no time (timestamps are in the index).
const DOS_DATE: u16 = 0x0021;
const UTF8_FLAG: u16 = 0x0800;
const MAX32: u64 = 0xFFFF_FFFF;

struct Written {
    /// The name's range in the writer's `names`.
    name: std::ops::Range<usize>,
    crc: u32,
    size: u64,
    offset: u64,
}

/// The buffers of a [`ZipWriter`], kept from archive to archive so that writing one allocates
/// nothing once they have grown ([`ZipWriter::with_buffers`], [`ZipWriter::finish_keeping`]).
#[derive(Default)]
pub struct ZipBuffers {
    /// Bytes emitted and not yet hashed or handed to the output.
    buf: Vec<u8>,
    entries: Vec<Written>,
    /// Every entry's name, back to back.
    names: String,
}

/// A zip writer over any `Write`, with every entry stored; it tracks the CRC-32 of every
/// byte it emits, so the archive's own checksum comes for free.
///
/// Headers, names and small entries are gathered in a buffer and hashed into the archive's
/// CRC in one pass when the buffer goes out (when it is full, before a large entry's bytes,
/// and at the end): a small archive costs one CRC pass and one `write_all` of the whole
/// archive. A large entry's bytes go straight to the output and its CRC is combined in.
pub struct ZipWriter<W: Write> {
    out: W,
    /// Bytes emitted so far (handed to the output or in the buffer).
    offset: u64,
    /// The CRC-32 of the bytes handed to the output.
    file_crc: crc32fast::Hasher,
    bufs: ZipBuffers,
    /// Where the archive starts in the file it goes to, when entries may be page-aligned.
    base: Option<u64>,
    /// The next entry's content byte to land on a page boundary of that file, if any.
    align_at: Option<u64>,
}

/// The boundary [`ZipWriter::align_next`] aligns to.
pub const PAGE: u64 = 4096;
/// The extra field id of alignment padding (the one Android's zipalign uses): a `u16`
/// alignment, then zeros. Readers skip it by its length.
const ALIGN_EXTRA_ID: u16 = 0xD935;

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn clamp32(v: u64) -> u32 {
    v.min(MAX32) as u32
}

impl<W: Write> ZipWriter<W> {
    /// A writer emitting to `out`.
    pub fn new(out: W) -> Self {
        Self::with_buffers(out, ZipBuffers::default())
    }

    /// A writer emitting to `out`, reusing buffers an earlier writer left.
    pub fn with_buffers(out: W, mut bufs: ZipBuffers) -> Self {
        bufs.buf.clear();
        bufs.entries.clear();
        bufs.names.clear();
        ZipWriter {
            out,
            offset: 0,
            file_crc: crc32fast::Hasher::new(),
            bufs,
            base: None,
            align_at: None,
        }
    }

    /// The archive starts at byte `base` of the file it is written to (a blob in a pack), so
    /// [`Self::align_next`] can align within that file.
    pub fn set_base(&mut self, base: u64) {
        self.base = Some(base);
    }

    /// Pad the next entry's local header (an alignment extra field) so that byte `skew` of its
    /// content lands on a multiple of [`PAGE`] in the file: a large write there then copies
    /// whole pages. Does nothing unless [`Self::set_base`] was called.
    pub fn align_next(&mut self, skew: u64) {
        self.align_at = Some(skew);
    }

    /// Bytes of alignment padding for an entry whose local header (without padding) is
    /// `header` bytes long: 0, or 6 to 4101 (an extra block's 4-byte head, its `u16`
    /// alignment, then zeros).
    fn padding(&mut self, header: u64) -> u64 {
        let (Some(base), Some(skew)) = (self.base, self.align_at.take()) else {
            return 0;
        };
        let at = base
            .wrapping_add(self.offset)
            .wrapping_add(header + 6)
            .wrapping_add(skew);
        6 + (PAGE - at % PAGE) % PAGE
    }

    /// Hash the buffer into the archive's CRC and hand it to the output.
    fn send(&mut self) -> std::io::Result<()> {
        if !self.bufs.buf.is_empty() {
            self.file_crc.update(&self.bufs.buf);
            self.out.write_all(&self.bufs.buf)?;
            self.bufs.buf.clear();
        }
        Ok(())
    }

    /// Send the buffer once it holds [`SMALL_ENTRY`] bytes or more.
    fn send_if_full(&mut self) -> std::io::Result<()> {
        if self.bufs.buf.len() >= SMALL_ENTRY as usize {
            self.send()?;
        }
        Ok(())
    }

    /// Add an entry whose content is the concatenation of `parts`.
    pub fn add(&mut self, name: &str, parts: &[&[u8]]) -> std::io::Result<()> {
        let mut entry_crc = crc32fast::Hasher::new();
        let mut size = 0u64;
        for p in parts.iter().filter(|p| !p.is_empty()) {
            entry_crc.update(p);
            size += p.len() as u64;
        }
        self.add_with(name, size, entry_crc, &mut |out| {
            parts.iter().try_for_each(|p| out.write_all(p))
        })
    }

    /// Emit an entry's local header (with zip64 sizes and alignment padding as needed).
    fn local_header(&mut self, name: &str, size: u64, crc: u32) {
        let big = size >= MAX32;
        let zip64 = if big { 20u16 } else { 0 };
        let pad = self.padding(LOCAL_LEN + name.len() as u64 + u64::from(zip64));
        let b = &mut self.bufs.buf;
        let start = b.len();
        b.extend_from_slice(&packed::<{ LOCAL_LEN as usize }>(&[
            &LOCAL_SIG.to_le_bytes(),
            &(if big { 45u16 } else { 20 }).to_le_bytes(),
            &UTF8_FLAG.to_le_bytes(),
            &0u16.to_le_bytes(), // stored
            &0u16.to_le_bytes(),
            &DOS_DATE.to_le_bytes(),
            &crc.to_le_bytes(),
            &clamp32(size).to_le_bytes(),
            &clamp32(size).to_le_bytes(),
            &(name.len() as u16).to_le_bytes(),
            &(zip64 + pad as u16).to_le_bytes(),
        ]));
        b.extend_from_slice(name.as_bytes());
        if big {
            put16(b, 1);
            put16(b, 16);
            put64(b, size);
            put64(b, size);
        }
        if pad > 0 {
            put16(b, ALIGN_EXTRA_ID);
            put16(b, pad as u16 - 4);
            put16(b, PAGE as u16);
            b.resize(b.len() + pad as usize - 6, 0);
        }
        self.offset += (b.len() - start) as u64;
    }

    /// Add an entry of `size` bytes whose CRC-32 state is `entry_crc`, its content written by
    /// `body` (which must write exactly `size` bytes; checked).
    pub fn add_with(
        &mut self,
        name: &str,
        size: u64,
        entry_crc: crc32fast::Hasher,
        body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let crc = entry_crc.clone().finalize();
        let offset = self.offset;
        self.local_header(name, size, crc);
        // A small entry's bytes join the buffer and are hashed with it: cheaper than
        // combining its CRC in (a combine costs microseconds whatever the length).
        let small = size <= SMALL_ENTRY;
        if !small {
            self.send()?;
        }
        let written = if small {
            counted(&mut self.bufs.buf, body)?
        } else {
            counted(&mut self.out, body)?
        };
        if written != size {
            return Err(std::io::Error::other(format!(
                "zip entry {name}: {written} bytes written, {size} declared"
            )));
        }
        self.offset += size;
        if !small {
            self.file_crc.combine(&entry_crc);
        }
        let start = self.bufs.names.len();
        self.bufs.names.push_str(name);
        self.bufs.entries.push(Written {
            name: start..self.bufs.names.len(),
            crc,
            size,
            offset,
        });
        self.send_if_full()
    }

    /// Write the central directory; returns the output, the archive length and its CRC-32.
    pub fn finish(self) -> std::io::Result<(W, u64, u32)> {
        self.finish_keeping()
            .map(|(out, len, crc, _)| (out, len, crc))
    }

    /// [`Self::finish`], also handing back the buffers for the next archive.
    pub fn finish_keeping(mut self) -> std::io::Result<(W, u64, u32, ZipBuffers)> {
        let cd_start = self.offset;
        let at = self.bufs.buf.len();
        for e in &self.bufs.entries {
            let name = self.bufs.names.get(e.name.clone()).unwrap_or_default();
            central_record(&mut self.bufs.buf, e, name);
        }
        let cd_len = (self.bufs.buf.len() - at) as u64;
        let count = self.bufs.entries.len() as u64;
        end_records(&mut self.bufs.buf, count, cd_start, cd_len);
        self.offset += (self.bufs.buf.len() - at) as u64;
        self.send()?;
        let crc = self.file_crc.clone().finalize();
        Ok((self.out, self.offset, crc, self.bufs))
    }
}

/// `fields` back to back in an array of exactly `N` bytes (a fixed-size header built on the
/// stack and appended in one copy; fields beyond `N` bytes are dropped, a shortfall is zeros).
fn packed<const N: usize>(fields: &[&[u8]]) -> [u8; N] {
    let mut h = [0u8; N];
    let mut at = 0;
    for f in fields {
        if let Some(dst) = h.get_mut(at..at + f.len()) {
            dst.copy_from_slice(f);
        }
        at += f.len();
    }
    h
}

/// Append an entry's central directory record to `cd`.
fn central_record(cd: &mut Vec<u8>, e: &Written, name: &str) {
    let mut extra = Vec::new();
    if e.size >= MAX32 {
        put64(&mut extra, e.size);
        put64(&mut extra, e.size);
    }
    if e.offset >= MAX32 {
        put64(&mut extra, e.offset);
    }
    let extra_len = if extra.is_empty() {
        0
    } else {
        extra.len() as u16 + 4
    };
    cd.extend_from_slice(&packed::<CENTRAL_LEN>(&[
        &CENTRAL_SIG.to_le_bytes(),
        &((3u16 << 8) | 45).to_le_bytes(),
        &(if extra.is_empty() { 20u16 } else { 45 }).to_le_bytes(),
        &UTF8_FLAG.to_le_bytes(),
        &0u16.to_le_bytes(),
        &0u16.to_le_bytes(),
        &DOS_DATE.to_le_bytes(),
        &e.crc.to_le_bytes(),
        &clamp32(e.size).to_le_bytes(),
        &clamp32(e.size).to_le_bytes(),
        &(name.len() as u16).to_le_bytes(),
        &extra_len.to_le_bytes(),
        &0u16.to_le_bytes(),
        &0u16.to_le_bytes(),
        &0u16.to_le_bytes(),
        &(0o100644u32 << 16).to_le_bytes(),
        &clamp32(e.offset).to_le_bytes(),
    ]));
    cd.extend_from_slice(name.as_bytes());
    if !extra.is_empty() {
        put16(cd, 1);
        put16(cd, extra.len() as u16);
        cd.extend_from_slice(&extra);
    }
}

/// Append the end records after a central directory of `count` entries, `cd_len` bytes at
/// `cd_start` (zip64 ones first when a count, size or offset needs them).
fn end_records(cd: &mut Vec<u8>, count: u64, cd_start: u64, cd_len: u64) {
    let needs64 = count >= 0xFFFF || cd_start >= MAX32 || cd_len >= MAX32;
    if needs64 {
        let eocd64_at = cd_start + cd_len;
        put32(cd, EOCD64_SIG);
        put64(cd, 44);
        put16(cd, 45);
        put16(cd, 45);
        put32(cd, 0);
        put32(cd, 0);
        put64(cd, count);
        put64(cd, count);
        put64(cd, cd_len);
        put64(cd, cd_start);
        put32(cd, LOCATOR64_SIG);
        put32(cd, 0);
        put64(cd, eocd64_at);
        put32(cd, 1);
    }
    put32(cd, EOCD_SIG);
    put16(cd, 0);
    put16(cd, 0);
    put16(cd, count.min(0xFFFF) as u16);
    put16(cd, count.min(0xFFFF) as u16);
    put32(cd, clamp32(cd_len));
    put32(cd, clamp32(cd_start));
    put16(cd, 0);
}

/// Entries up to this size are gathered and hashed with the archive rather than combined
/// into its CRC; the buffer goes out once it holds this much.
const SMALL_ENTRY: u64 = 64 << 10;

/// Run `body` over `out`, returning how many bytes it wrote.
fn counted<W: Write>(
    out: &mut W,
    body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut counter = Counting { out, n: 0 };
    body(&mut counter)?;
    Ok(counter.n)
}

struct Counting<'a, W: Write> {
    out: &'a mut W,
    n: u64,
}

impl<W: Write> Write for Counting<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// One entry of an archive, as the central directory describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ZipEntry {
    pub name: String,
    /// Its place in the `zip` crate's directory.
    pub index: usize,
    /// Where its local header starts.
    pub header_offset: u64,
    /// Its length (stored, so compressed and uncompressed agree).
    pub size: u64,
    pub crc: u32,
}

/// The entries of a stored archive, by name (sorted), read from its central directory by the
/// `zip` crate (the one zip reader of the crate: `tensor::zipdir` reads NPZ and PyTorch zips
/// with it too).
#[derive(Debug, Clone)]
pub struct ZipIndex {
    pub entries: BTreeMap<String, ZipEntry>,
    /// The archive length.
    pub len: u64,
    /// The `zip` crate's directory, which finds where an entry's data starts.
    directory: Arc<zip::read::ZipArchiveMetadata>,
}

/// Range reads kept in aligned blocks of this many bytes while the directory is read: the
/// `zip` crate reads it in many small pieces, and a range read can be an HTTP request.
const DIRECTORY_BLOCK: u64 = 64 << 10;

/// Range reads through `read_at(offset, len)` as the `Read + Seek` the `zip` crate reads from.
/// With `block` > 0 a read is served from one aligned block of that many bytes, fetched when
/// the read falls outside it (reads of `block` bytes or more go straight through); with
/// `block` 0 every read is one range read of exactly what was asked.
struct RangeReader<F> {
    read_at: F,
    len: u64,
    pos: u64,
    block: u64,
    buf: Vec<u8>,
    buf_at: u64,
    /// The store's error behind a failed read, handed back instead of the `zip` crate's.
    failed: Option<StoreError>,
}

impl<F: FnMut(u64, u64) -> Result<Vec<u8>>> RangeReader<F> {
    fn new(read_at: F, len: u64, block: u64) -> Self {
        RangeReader {
            read_at,
            len,
            pos: 0,
            block,
            buf: Vec::new(),
            buf_at: 0,
            failed: None,
        }
    }

    fn fetch(&mut self, at: u64, n: u64) -> std::io::Result<Vec<u8>> {
        (self.read_at)(at, n).map_err(|e| {
            let io = std::io::Error::other(e.to_string());
            self.failed = Some(e);
            io
        })
    }
}

impl<F: FnMut(u64, u64) -> Result<Vec<u8>>> Read for RangeReader<F> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        if out.is_empty() || left == 0 {
            return Ok(0);
        }
        let in_buf = self.pos >= self.buf_at && self.pos - self.buf_at < self.buf.len() as u64;
        if !in_buf {
            let want = (out.len() as u64).min(left);
            if self.block == 0 || want >= self.block {
                let bytes = self.fetch(self.pos, want)?;
                let n = bytes.len().min(out.len());
                out[..n].copy_from_slice(&bytes[..n]);
                self.pos += n as u64;
                return Ok(n);
            }
            let start = self.pos / self.block * self.block;
            self.buf = self.fetch(start, self.block.min(self.len - start))?;
            self.buf_at = start;
        }
        let got = self
            .buf
            .get((self.pos - self.buf_at) as usize..)
            .unwrap_or_default();
        let n = got.len().min(out.len());
        out[..n].copy_from_slice(&got[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl<F> Seek for RangeReader<F> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let at = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = at.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        Ok(self.pos)
    }
}

impl ZipIndex {
    /// Read the central directory of an archive of `len` bytes through `read_at(offset, len)`.
    pub fn read(
        path: &str,
        len: u64,
        read_at: &mut dyn FnMut(u64, u64) -> Result<Vec<u8>>,
    ) -> Result<Self> {
        let bad = |entry: Option<&str>, reason: &str| StoreError::BadZip {
            path: path.to_string(),
            entry: entry.map(str::to_string),
            reason: reason.to_string(),
        };
        if len < EOCD_LEN {
            return Err(bad(None, "shorter than an end-of-directory record"));
        }
        let mut r = RangeReader::new(read_at, len, DIRECTORY_BLOCK);
        let read = Self::from_reader(path, len, &mut r);
        match r.failed.take() {
            Some(e) => Err(e),
            None => read,
        }
    }

    /// Read the central directory of an archive of `len` bytes from `r`.
    fn from_reader<R: Read + Seek>(path: &str, len: u64, r: R) -> Result<Self> {
        let bad = |entry: Option<&str>, reason: &str| StoreError::BadZip {
            path: path.to_string(),
            entry: entry.map(str::to_string),
            reason: reason.to_string(),
        };
        // Nothing is ever written before a store's archives: no offset to detect.
        let config = zip::read::Config {
            archive_offset: zip::read::ArchiveOffset::Known(0),
        };
        let (directory, cd_start) = match zip::ZipArchive::with_config(config, r) {
            Ok(a) => (a.metadata(), a.central_directory_start()),
            Err(e) => return Err(bad(None, &e.to_string())),
        };
        if directory.has_duplicate_names() {
            return Err(bad(None, "two entries share a name"));
        }
        let mut entries = BTreeMap::new();
        for index in 0..directory.len() {
            let e = directory
                .entry(index)
                .map_err(|e| bad(None, &e.to_string()))?;
            let name = std::str::from_utf8(e.name_raw())
                .map_err(|_| bad(None, "entry name is not UTF-8"))?
                .to_string();
            let bad = |reason: &str| bad(Some(&name), reason);
            if e.encrypted() {
                return Err(bad("encrypted entries are not supported"));
            }
            if e.compression() != zip::CompressionMethod::Stored {
                return Err(bad("entry is compressed; store entries are stored"));
            }
            if e.size() != e.compressed_size() {
                return Err(bad("stored sizes disagree"));
            }
            let header_offset = e.header_start();
            if header_offset
                .checked_add(LOCAL_LEN)
                .is_none_or(|end| end > cd_start)
            {
                return Err(bad("local header lies outside the archive"));
            }
            let entry = ZipEntry {
                name: name.clone(),
                index,
                header_offset,
                size: e.size(),
                crc: e.crc32(),
            };
            entries.insert(name, entry);
        }
        Ok(ZipIndex {
            entries,
            len,
            directory,
        })
    }

    /// Where the data of `entry` starts and how long it is: its local header read by the
    /// `zip` crate through `read_at` (one range read of the header's fixed 30 bytes).
    pub fn data_span(
        &self,
        path: &str,
        entry: &ZipEntry,
        read_at: &mut dyn FnMut(u64, u64) -> Result<Vec<u8>>,
    ) -> Result<(u64, u64)> {
        let mut r = RangeReader::new(read_at, self.len, 0);
        let span = self.span_in(path, entry, &mut r);
        match r.failed.take() {
            Some(e) => Err(e),
            None => span,
        }
    }

    /// [`Self::data_span`] with the local header read from `r`.
    fn span_in<R: Read + Seek>(
        &self,
        path: &str,
        entry: &ZipEntry,
        mut r: R,
    ) -> Result<(u64, u64)> {
        let bad = |reason: &str| StoreError::BadZip {
            path: path.to_string(),
            entry: Some(entry.name.clone()),
            reason: reason.to_string(),
        };
        let e = self
            .directory
            .entry(entry.index)
            .map_err(|e| bad(&e.to_string()))?;
        let start = e
            .with_reader(&mut r, zip::read::ZipReadOptions::new())
            .map(|file| file.data_start())
            .map_err(|e| bad(&e.to_string()))?
            .ok_or_else(|| bad("no local header"))?;
        start
            .checked_add(entry.size)
            .filter(|&end| end <= self.len)
            .ok_or_else(|| bad("entry data runs past the end of the archive"))?;
        Ok((start, entry.size))
    }
}

/// Read entry `name` of an archive held in memory, checking its CRC-32.
pub fn read_entry<'b>(
    path: &str,
    bytes: &'b [u8],
    index: &ZipIndex,
    name: &str,
) -> Result<&'b [u8]> {
    let entry = index.entries.get(name).ok_or_else(|| StoreError::BadZip {
        path: path.to_string(),
        entry: Some(name.to_string()),
        reason: "no such entry".into(),
    })?;
    let (start, len) = index.span_in(path, entry, std::io::Cursor::new(bytes))?;
    let data = slice(bytes, start, len);
    if data.len() as u64 != len {
        return Err(StoreError::BadZip {
            path: path.to_string(),
            entry: Some(name.to_string()),
            reason: "entry data runs past the end".into(),
        });
    }
    if crc32fast::hash(data) != entry.crc {
        return Err(StoreError::BadZip {
            path: path.to_string(),
            entry: Some(name.to_string()),
            reason: "entry CRC-32 does not match its data".into(),
        });
    }
    Ok(data)
}

/// Up to `n` bytes of `bytes` from `at` (fewer at the end, none past it).
fn slice(bytes: &[u8], at: u64, n: u64) -> &[u8] {
    let start = (at.min(bytes.len() as u64)) as usize;
    let end = (at.saturating_add(n).min(bytes.len() as u64)) as usize;
    bytes.get(start..end).unwrap_or_default()
}

/// The index of an archive held in memory.
pub fn index_of(path: &str, bytes: &[u8]) -> Result<ZipIndex> {
    let len = bytes.len() as u64;
    if len < EOCD_LEN {
        return Err(StoreError::BadZip {
            path: path.to_string(),
            entry: None,
            reason: "shorter than an end-of-directory record".into(),
        });
    }
    ZipIndex::from_reader(path, len, std::io::Cursor::new(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, &[u8])]) -> (Vec<u8>, u32) {
        let mut w = ZipWriter::new(Vec::new());
        for (name, data) in entries {
            w.add(name, &[data]).unwrap();
        }
        let (bytes, len, crc) = w.finish().unwrap();
        assert_eq!(len, bytes.len() as u64);
        (bytes, crc)
    }

    #[test]
    fn written_archives_read_back_with_their_crc() {
        let (bytes, crc) = archive(&[("a.json", b"{}"), ("b.npy", &[1, 2, 3, 4])]);
        assert_eq!(
            crc,
            crc32fast::hash(&bytes),
            "tracked crc differs from the bytes' crc"
        );
        let index = index_of("t.zip", &bytes).unwrap();
        assert_eq!(index.entries.len(), 2);
        assert_eq!(
            read_entry("t.zip", &bytes, &index, "b.npy").unwrap(),
            &[1, 2, 3, 4]
        );
        assert_eq!(
            read_entry("t.zip", &bytes, &index, "a.json").unwrap(),
            b"{}"
        );
        assert!(read_entry("t.zip", &bytes, &index, "c").is_err());
    }

    #[test]
    fn the_zip_crate_reads_what_we_write() {
        let (bytes, _) = archive(&[("x.txt", b"hello")]);
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut z.by_name("x.txt").unwrap(), &mut s).unwrap();
        assert_eq!(s, "hello");
    }

    #[test]
    fn zip64_directories_read_back() {
        let names: Vec<String> = (0..70_000).map(|i| format!("e{i}")).collect();
        let mut w = ZipWriter::new(Vec::new());
        for n in &names {
            w.add(n, &[n.as_bytes()]).unwrap();
        }
        let (bytes, _, _) = w.finish().unwrap();
        let index = index_of("big.zip", &bytes).unwrap();
        assert_eq!(
            index.entries.len(),
            70_000,
            "entries read from the zip64 directory"
        );
        assert_eq!(
            read_entry("big.zip", &bytes, &index, "e69999").unwrap(),
            b"e69999"
        );
    }

    #[test]
    fn no_truncation_or_flipped_byte_panics() {
        let (bytes, _) = archive(&[("a.json", b"{}"), ("b.npy", &[7; 100])]);
        let mut cases: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                cases.push(b);
            }
        }
        for case in &cases {
            if let Ok(index) = index_of("x.zip", case) {
                for name in ["a.json", "b.npy"] {
                    let _ = read_entry("x.zip", case, &index, name);
                }
            }
        }
    }

    #[test]
    fn damaged_archives_are_refused() {
        let (bytes, _) = archive(&[("a", b"0123456789")]);
        let mut flipped = bytes.clone();
        flipped[LOCAL_LEN as usize + 1 + 3] ^= 1;
        let index = index_of("f.zip", &flipped).unwrap();
        assert!(
            read_entry("f.zip", &flipped, &index, "a").is_err(),
            "flipped byte passed"
        );
        for cut in [0, 10, bytes.len() - 1] {
            assert!(
                index_of("cut.zip", &bytes[..cut]).is_err(),
                "cut at {cut} passed"
            );
        }
    }

    #[test]
    fn the_directory_and_an_entry_cost_few_range_reads() {
        // 3,000 entries: a central directory of ~170 KiB, read in 64 KiB blocks.
        let names: Vec<String> = (0..3000).map(|i| format!("runs/r/w/{i:05}.json")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"{}"[..])).collect();
        let (bytes, _) = archive(&entries);
        let reads = std::cell::Cell::new(0u64);
        let mut read_at = |at: u64, n: u64| {
            reads.set(reads.get() + 1);
            Ok(slice(&bytes, at, n).to_vec())
        };
        let index = ZipIndex::read("t.zip", bytes.len() as u64, &mut read_at).unwrap();
        assert_eq!(index.entries.len(), 3000);
        let cd_len = bytes.len() as u64 - index.entries[&names[2999]].header_offset;
        assert!(
            reads.get() <= cd_len / DIRECTORY_BLOCK + 3,
            "{} range reads for a {cd_len}-byte directory",
            reads.get()
        );
        reads.set(0);
        let e = &index.entries[&names[1234]];
        let (start, len) = index.data_span("t.zip", e, &mut read_at).unwrap();
        assert_eq!(slice(&bytes, start, len), b"{}");
        assert_eq!(reads.get(), 1, "one range read of the local header");
        index.data_span("t.zip", e, &mut read_at).unwrap();
        assert_eq!(reads.get(), 1, "the data's start is remembered");
    }
}

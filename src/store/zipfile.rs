//! Zip archives with stored (uncompressed) entries: a streaming writer and a range-read index.
//!
//! Blobs and snapshots are both such archives. The writer emits zip64 records only when an
//! offset, size or count needs them; the reader understands both and refuses compressed,
//! encrypted or overlapping entries.

use super::error::{Result, StoreError};
use std::collections::BTreeMap;
use std::io::Write;

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
    /// Where its local header starts.
    pub header_offset: u64,
    /// Its length (stored, so compressed and uncompressed agree).
    pub size: u64,
    pub crc: u32,
}

/// The entries of a stored archive, by name (sorted), read from its central directory.
#[derive(Debug, Clone, Default)]
pub struct ZipIndex {
    pub entries: BTreeMap<String, ZipEntry>,
    /// The archive length.
    pub len: u64,
}

/// A little-endian cursor over a byte slice that never reads past its end.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Some(u64::from_le_bytes(a))
    }
}

/// The longest central directory accepted (the index of a snapshot is held in memory).
const MAX_CD: u64 = 1 << 30;

impl ZipIndex {
    /// Read the central directory of an archive of `len` bytes through `read_at(offset, len)`.
    pub fn read(
        path: &str,
        len: u64,
        read_at: &mut dyn FnMut(u64, u64) -> Result<Vec<u8>>,
    ) -> Result<Self> {
        let bad = |reason: &str| StoreError::BadZip {
            path: path.to_string(),
            entry: None,
            reason: reason.to_string(),
        };
        if len < EOCD_LEN {
            return Err(bad("shorter than an end-of-directory record"));
        }
        let tail_len = len.min(EOCD_LEN + 0xFFFF);
        let tail = read_at(len - tail_len, tail_len)?;
        if tail.len() < EOCD_LEN as usize {
            return Err(bad("the archive shrank while being read"));
        }
        let pos = (0..=tail.len() - EOCD_LEN as usize)
            .rev()
            .find(|&i| tail[i..i + 4] == EOCD_SIG.to_le_bytes())
            .ok_or_else(|| bad("no end-of-central-directory record"))?;
        let eocd_at = len - tail_len + pos as u64;
        let mut c = Cursor {
            b: &tail[pos..],
            at: 4,
        };
        let short = || bad("truncated end-of-central-directory record");
        let (disk, cd_disk) = (c.u16().ok_or_else(short)?, c.u16().ok_or_else(short)?);
        let _ = c.u16().ok_or_else(short)?;
        let mut count = c.u16().ok_or_else(short)? as u64;
        let mut cd_len = c.u32().ok_or_else(short)? as u64;
        let mut cd_start = c.u32().ok_or_else(short)? as u64;
        if disk != 0 || cd_disk != 0 {
            return Err(bad("multi-disk archives are not supported"));
        }
        if count == 0xFFFF || cd_len == MAX32 || cd_start == MAX32 {
            (count, cd_len, cd_start) = Self::read_zip64_end(path, eocd_at, read_at)?;
        }
        let cd_end = cd_start
            .checked_add(cd_len)
            .filter(|&e| e <= eocd_at)
            .ok_or_else(|| bad("central directory lies outside the archive"))?;
        if cd_len > MAX_CD || count > cd_len / CENTRAL_LEN as u64 {
            return Err(bad("central directory size or entry count is implausible"));
        }
        let cd = read_at(cd_start, cd_len)?;
        let mut index = ZipIndex {
            entries: BTreeMap::new(),
            len,
        };
        let mut c = Cursor { b: &cd, at: 0 };
        for _ in 0..count {
            let e = Self::read_central(path, &mut c, cd_start)?;
            if index.entries.insert(e.name.clone(), e).is_some() {
                return Err(bad("two entries share a name"));
            }
        }
        let _ = cd_end;
        Ok(index)
    }

    fn read_zip64_end(
        path: &str,
        eocd_at: u64,
        read_at: &mut dyn FnMut(u64, u64) -> Result<Vec<u8>>,
    ) -> Result<(u64, u64, u64)> {
        let bad = |reason: &str| StoreError::BadZip {
            path: path.to_string(),
            entry: None,
            reason: reason.to_string(),
        };
        let loc_at = eocd_at
            .checked_sub(20)
            .ok_or_else(|| bad("zip64 locator missing"))?;
        let loc = read_at(loc_at, 20)?;
        let mut c = Cursor { b: &loc, at: 0 };
        if c.u32() != Some(LOCATOR64_SIG) {
            return Err(bad("zip64 locator missing"));
        }
        let _ = c.u32();
        let at = c.u64().ok_or_else(|| bad("zip64 locator truncated"))?;
        if at.checked_add(56).is_none_or(|end| end > loc_at) {
            return Err(bad("zip64 end record lies outside the archive"));
        }
        let rec = read_at(at, 56)?;
        let mut c = Cursor { b: &rec, at: 0 };
        if c.u32() != Some(EOCD64_SIG) {
            return Err(bad("zip64 end record missing"));
        }
        c.take(28)
            .ok_or_else(|| bad("zip64 end record truncated"))?;
        let count = c.u64().ok_or_else(|| bad("zip64 end record truncated"))?;
        let cd_len = c.u64().ok_or_else(|| bad("zip64 end record truncated"))?;
        let cd_start = c.u64().ok_or_else(|| bad("zip64 end record truncated"))?;
        Ok((count, cd_len, cd_start))
    }

    fn read_central(path: &str, c: &mut Cursor<'_>, cd_start: u64) -> Result<ZipEntry> {
        let bad = |entry: Option<&str>, reason: &str| StoreError::BadZip {
            path: path.to_string(),
            entry: entry.map(str::to_string),
            reason: reason.to_string(),
        };
        let short = || bad(None, "truncated central directory");
        let fixed = c.take(CENTRAL_LEN).ok_or_else(short)?;
        let mut f = Cursor { b: fixed, at: 0 };
        if f.u32() != Some(CENTRAL_SIG) {
            return Err(bad(None, "bad central directory signature"));
        }
        f.take(4).ok_or_else(short)?;
        let flags = f.u16().ok_or_else(short)?;
        let method = f.u16().ok_or_else(short)?;
        f.take(4).ok_or_else(short)?;
        let crc = f.u32().ok_or_else(short)?;
        let mut csize = f.u32().ok_or_else(short)? as u64;
        let mut size = f.u32().ok_or_else(short)? as u64;
        let name_len = f.u16().ok_or_else(short)? as usize;
        let extra_len = f.u16().ok_or_else(short)? as usize;
        let comment_len = f.u16().ok_or_else(short)? as usize;
        f.take(8).ok_or_else(short)?;
        let mut offset = f.u32().ok_or_else(short)? as u64;
        let name = c.take(name_len).ok_or_else(short)?;
        let name = std::str::from_utf8(name)
            .map_err(|_| bad(None, "entry name is not UTF-8"))?
            .to_string();
        let extra = c.take(extra_len).ok_or_else(short)?;
        c.take(comment_len).ok_or_else(short)?;
        if flags & 1 != 0 {
            return Err(bad(Some(&name), "encrypted entries are not supported"));
        }
        if method != 0 {
            return Err(bad(
                Some(&name),
                "entry is compressed; store entries are stored",
            ));
        }
        let mut x = Cursor { b: extra, at: 0 };
        while let (Some(id), Some(n)) = (x.u16(), x.u16()) {
            let body = x
                .take(n as usize)
                .ok_or_else(|| bad(Some(&name), "bad extra field"))?;
            if id == 1 {
                let mut z = Cursor { b: body, at: 0 };
                for v in [&mut size, &mut csize, &mut offset] {
                    if *v == MAX32 {
                        *v = z.u64().ok_or_else(|| bad(Some(&name), "bad zip64 field"))?;
                    }
                }
            }
        }
        if size != csize {
            return Err(bad(Some(&name), "stored sizes disagree"));
        }
        if offset.checked_add(LOCAL_LEN).is_none_or(|e| e > cd_start) {
            return Err(bad(Some(&name), "local header lies outside the archive"));
        }
        Ok(ZipEntry {
            name,
            header_offset: offset,
            size,
            crc,
        })
    }

    /// Where the data of `entry` starts and how long it is, given its local header bytes
    /// (`LOCAL_HEADER_READ` of them, or fewer at the end of the archive).
    pub fn data_span(&self, path: &str, entry: &ZipEntry, local: &[u8]) -> Result<(u64, u64)> {
        let bad = |reason: &str| StoreError::BadZip {
            path: path.to_string(),
            entry: Some(entry.name.clone()),
            reason: reason.to_string(),
        };
        let mut c = Cursor { b: local, at: 0 };
        if c.u32() != Some(LOCAL_SIG) {
            return Err(bad("bad local header signature"));
        }
        c.take(22).ok_or_else(|| bad("truncated local header"))?;
        let n = c.u16().ok_or_else(|| bad("truncated local header"))? as u64;
        let e = c.u16().ok_or_else(|| bad("truncated local header"))? as u64;
        let start = entry.header_offset + LOCAL_LEN + n + e;
        let end = start
            .checked_add(entry.size)
            .filter(|&end| end <= self.len)
            .ok_or_else(|| bad("entry data runs past the end of the archive"))?;
        let _ = end;
        Ok((start, entry.size))
    }
}

/// How many bytes of a local header to read to find where its data starts.
pub const LOCAL_HEADER_READ: u64 = LOCAL_LEN;

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
    let local = bytes
        .get(entry.header_offset as usize..)
        .unwrap_or_default();
    let (start, len) = index.data_span(path, entry, local)?;
    let data = bytes
        .get(start as usize..(start + len) as usize)
        .ok_or_else(|| StoreError::BadZip {
            path: path.to_string(),
            entry: Some(name.to_string()),
            reason: "entry data runs past the end".into(),
        })?;
    if crc32fast::hash(data) != entry.crc {
        return Err(StoreError::BadZip {
            path: path.to_string(),
            entry: Some(name.to_string()),
            reason: "entry CRC-32 does not match its data".into(),
        });
    }
    Ok(data)
}

/// The index of an archive held in memory.
pub fn index_of(path: &str, bytes: &[u8]) -> Result<ZipIndex> {
    ZipIndex::read(path, bytes.len() as u64, &mut |at, n| {
        Ok(bytes
            .get(at as usize..(at + n) as usize)
            .unwrap_or_default()
            .to_vec())
    })
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
}

//! Where an entry's bytes live (a plain range, a stored or deflated zip member) and streaming them out in chunks.

use super::crc::Crc;
use super::error::Problem;
use std::io::{self, Cursor, Read, Seek, SeekFrom};

/// Bytes handed to a consumer at a time when streaming from a reader.
pub const CHUNK_BYTES: usize = 1 << 20;

/// A random-access byte source: bytes in memory (read in place) or a seekable file.
pub trait Source: Read + Seek {
    /// All the bytes, when they are in memory.
    fn in_memory(&self) -> Option<&[u8]>;
    /// The total length in bytes.
    fn total_len(&mut self) -> io::Result<u64> {
        self.seek(SeekFrom::End(0))
    }
}

impl Source for Cursor<&[u8]> {
    fn in_memory(&self) -> Option<&[u8]> {
        Some(self.get_ref())
    }
}

impl Source for io::BufReader<std::fs::File> {
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }
}

/// How a blob's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// A plain range of the file (NPY, safetensors, legacy torch): no checksum.
    Plain,
    /// A stored (uncompressed) zip member with its CRC-32.
    Stored { crc: u32 },
    /// A deflated zip member: its compressed length, declared inflated length and CRC-32.
    Deflated { compressed: u64, crc: u32 },
}

/// A run of bytes in the source: `len` bytes (after inflating) starting at `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub start: u64,
    pub len: u64,
    pub packing: Packing,
}

/// Which part of a blob a consumer wants: `len` bytes after skipping `skip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub blob: Blob,
    pub skip: u64,
    pub len: u64,
}

/// Fill `buf` from `r` as far as it goes; the number of bytes read (short only at the end).
pub fn fill(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A reader that hashes and counts what passes through it.
struct Checked<R> {
    inner: R,
    crc: Crc,
    seen: u64,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.seen += n as u64;
        Ok(n)
    }
}

/// The raw (still packed) bytes of a blob as a reader.
fn raw_reader<'a, S: Source>(
    src: &'a mut S,
    start: u64,
    len: u64,
) -> Result<Box<dyn Read + 'a>, Problem> {
    let total = src.total_len()?;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= total)
        .ok_or_else(|| {
            Problem::Truncated(format!(
                "needs bytes up to {}, file has {total}",
                start.saturating_add(len)
            ))
        })?;
    if src.in_memory().is_some() {
        let bytes: &'a [u8] = src.in_memory().unwrap_or(&[]);
        let slice = bytes.get(start as usize..end as usize).unwrap_or(&[]);
        return Ok(Box::new(slice));
    }
    src.seek(SeekFrom::Start(start))?;
    Ok(Box::new(Read::take(src, len)))
}

/// Stream `extent` to `f` in chunks whose lengths are multiples of `align` (except perhaps
/// the last), checking every CRC and size on the way and inflating no more than declared.
pub fn stream<S: Source>(
    src: &mut S,
    extent: &Extent,
    align: usize,
    f: &mut dyn FnMut(&[u8]) -> Result<(), Problem>,
) -> Result<(), Problem> {
    let blob = extent.blob;
    let want_end = extent
        .skip
        .checked_add(extent.len)
        .filter(|&e| e <= blob.len)
        .ok_or(Problem::DataSize {
            expected: extent.skip.saturating_add(extent.len),
            found: blob.len,
        })?;
    match blob.packing {
        Packing::Plain => {
            if let Some(bytes) = in_place(src, blob.start + extent.skip, extent.len)? {
                return bytes.chunks(CHUNK_BYTES).try_for_each(f);
            }
        }
        Packing::Stored { .. } => {
            if let Some(bytes) = in_place(src, blob.start, blob.len)? {
                return stored_in_place(bytes, extent, f);
            }
        }
        Packing::Deflated { .. } => {}
    }
    let packed_len = match blob.packing {
        Packing::Deflated { compressed, .. } => compressed,
        _ => blob.len,
    };
    let raw = raw_reader(src, blob.start, packed_len)?;
    let inner: Box<dyn Read + '_> = match blob.packing {
        Packing::Deflated { .. } => Box::new(flate2::read::DeflateDecoder::new(raw)),
        _ => raw,
    };
    let mut r = Checked {
        inner,
        crc: Crc::new(),
        seen: 0,
    };
    io::copy(&mut Read::take(&mut r, extent.skip), &mut io::sink())?;
    let step = (CHUNK_BYTES / align.max(1)).max(1) * align.max(1);
    let mut buf = vec![0u8; step.min(to_usize(extent.len)).max(1)];
    let mut left = extent.len;
    while left > 0 {
        let want = buf.len().min(to_usize(left));
        let n = fill(&mut r, &mut buf[..want])?;
        if n == 0 {
            break;
        }
        f(&buf[..n])?;
        left -= n as u64;
    }
    // Read the rest of the blob (its CRC covers all of it), one byte past to catch overruns.
    let rest = blob.len - want_end;
    let extra = io::copy(
        &mut Read::take(&mut r, rest.saturating_add(1)),
        &mut io::sink(),
    )?;
    finish(&blob, r.seen, r.crc.finalize(), left, extra > rest)
}

/// A length as usize, saturating (on 32-bit targets a length past 4 GiB cannot be in memory anyway).
fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Check the totals after streaming a blob.
fn finish(blob: &Blob, seen: u64, computed: u32, left: u64, overran: bool) -> Result<(), Problem> {
    if overran {
        return Err(Problem::Bomb(format!(
            "the entry inflates past its declared {} bytes",
            blob.len
        )));
    }
    if left > 0 || seen < blob.len {
        return Err(Problem::Truncated(format!(
            "entry ends after {seen} of its {} bytes",
            blob.len
        )));
    }
    match blob.packing {
        Packing::Stored { crc } | Packing::Deflated { crc, .. } if crc != computed => {
            Err(Problem::Crc {
                stored: crc,
                computed,
            })
        }
        _ => Ok(()),
    }
}

/// Stream part of a stored member that is in memory, hashing all of it on the way.
fn stored_in_place(
    member: &[u8],
    extent: &Extent,
    f: &mut dyn FnMut(&[u8]) -> Result<(), Problem>,
) -> Result<(), Problem> {
    let (skip, len) = (extent.skip as usize, extent.len as usize);
    let (head, rest) = member.split_at(skip.min(member.len()));
    let (data, tail) = rest.split_at(len.min(rest.len()));
    let mut hasher = Crc::new();
    hasher.update(head);
    for chunk in data.chunks(CHUNK_BYTES) {
        hasher.update(chunk);
        f(chunk)?;
    }
    hasher.update(tail);
    finish(
        &extent.blob,
        member.len() as u64,
        hasher.finalize(),
        0,
        false,
    )
}

/// The bytes of a plain range, in place, when the source is in memory.
fn in_place<S: Source>(src: &mut S, start: u64, len: u64) -> Result<Option<&[u8]>, Problem> {
    let Some(bytes) = src.in_memory() else {
        return Ok(None);
    };
    let end = start.saturating_add(len);
    match bytes.get(start as usize..end.min(usize::MAX as u64) as usize) {
        Some(slice) if end <= bytes.len() as u64 => Ok(Some(slice)),
        _ => Err(Problem::Truncated(format!(
            "needs bytes up to {end}, file has {}",
            bytes.len()
        ))),
    }
}

/// Read a whole (small, already capped) blob prefix into memory: `len` bytes after `skip`.
pub fn read_small<S: Source>(src: &mut S, extent: &Extent) -> Result<Vec<u8>, Problem> {
    let mut out = Vec::with_capacity(extent.len.min(CHUNK_BYTES as u64) as usize);
    stream(src, extent, 1, &mut |c| {
        out.extend_from_slice(c);
        Ok(())
    })?;
    Ok(out)
}

/// Read up to `max` bytes from the start of a blob without checking its CRC (for headers;
/// the CRC is checked when the entry's data is read).
pub fn peek<S: Source>(src: &mut S, blob: &Blob, max: usize) -> Result<Vec<u8>, Problem> {
    let want = (blob.len.min(max as u64)) as usize;
    let packed_len = match blob.packing {
        Packing::Deflated { compressed, .. } => compressed,
        _ => blob.len,
    };
    let raw = raw_reader(src, blob.start, packed_len)?;
    let mut r: Box<dyn Read + '_> = match blob.packing {
        Packing::Deflated { .. } => Box::new(flate2::read::DeflateDecoder::new(raw)),
        _ => raw,
    };
    let mut buf = vec![0u8; want];
    let n = fill(&mut r, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

//! A pack being appended to, shared by its writer and the syncer: the file, the bytes appended
//! to it but not yet written (small blobs of a pipelined writer, which the syncer writes in
//! its round), and the buffered appender the writer writes blobs through.
//!
//! Every byte goes to the file in the order it was appended: whoever writes (the writer, for a
//! large tensor or a full buffer; the syncer, before it syncs) holds the pack's order lock and
//! writes what is pending first. The syncer swaps the pending bytes for an empty buffer and
//! writes them holding only the order lock, so the writer goes on gathering small blobs
//! meanwhile instead of waiting out the syncer's `write`.

use super::error::{Result, StoreError};
use std::fs::File;
use std::io::{IoSlice, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// How many bytes of small writes a blob gathers before they go out in one system call, and
/// the largest write that is gathered at all (a larger one goes out directly).
pub const GATHER: usize = 64 << 10;
/// The most bytes a pipelined writer leaves pending for the syncer before writing them itself.
pub const PENDING_LIMIT: usize = 1 << 20;

/// What is appended to a pack and not yet written to its file.
#[derive(Debug, Default)]
pub struct Pending {
    /// Bytes to go to the end of the file, in order.
    pub bytes: Vec<u8>,
    /// Why pending bytes were lost (a failed write): none of the blobs they belong to may be
    /// indexed.
    pub broken: Option<String>,
}

/// An open pack, its path (for messages) and its name as index lines give it
/// (`packs/<n>.pack`), shared by the writer and the syncer.
pub struct PackFile {
    pub file: File,
    pub path: PathBuf,
    pub name: String,
    pending: Mutex<Pending>,
    /// Held by whoever writes to the file, taken before `pending`, so that bytes reach the
    /// file in order; it holds the spare buffer the syncer swaps with the pending bytes.
    order: Mutex<Vec<u8>>,
    /// How far the file is written: every byte before this offset reached it (updated with
    /// the order lock held, read without it).
    written: AtomicU64,
}

impl PackFile {
    /// A pack open for appending, `len` bytes long, with nothing pending.
    pub fn new(file: File, path: PathBuf, name: String, len: u64) -> Self {
        PackFile {
            file,
            path,
            name,
            pending: Mutex::new(Pending {
                bytes: Vec::with_capacity(GATHER),
                broken: None,
            }),
            order: Mutex::new(Vec::with_capacity(GATHER)),
            written: AtomicU64::new(len),
        }
    }

    /// The lock of the pending bytes (taken after [`Self::order`] when both are needed).
    pub fn lock(&self) -> Result<MutexGuard<'_, Pending>> {
        self.pending.lock().map_err(|_| self.poisoned())
    }

    /// The order lock (and the spare buffer): nothing is written to the file without it.
    fn order(&self) -> Result<MutexGuard<'_, Vec<u8>>> {
        self.order.lock().map_err(|_| self.poisoned())
    }

    fn poisoned(&self) -> StoreError {
        StoreError::Refused {
            what: format!(
                "{}: a thread panicked while appending to it",
                self.path.display()
            ),
        }
    }

    /// How far the file is written.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Count `n` more bytes written (with the order lock held).
    fn wrote(&self, n: usize) {
        self.written.fetch_add(n as u64, Ordering::Release);
    }

    /// After a failed write of the blob starting at `offset`: when every byte before it
    /// reached the file, cut the file back to `offset` and drop the blob's pending bytes;
    /// otherwise bytes of earlier blobs are lost, so mark the pack broken and the syncer
    /// indexes none of them. (Nothing to do when a thread panicked holding a lock: the
    /// pack refuses every later write then.)
    pub fn cut_off(&self, offset: u64, e: &std::io::Error) {
        let (Ok(_order), Ok(mut pending)) = (self.order(), self.lock()) else {
            return;
        };
        if self.written() >= offset {
            let _ = self.file.set_len(offset);
            self.written.store(offset, Ordering::Release);
            pending.bytes.clear();
        } else {
            pending.broken = Some(format!("a write failed: {e}"));
        }
    }

    /// Make sure the file holds every byte before `upto` (the syncer, before it syncs the
    /// pack): write what is pending unless that is so already. Fails if bytes were lost.
    pub fn write_pending(&self, upto: u64) -> Result<()> {
        if self.written() >= upto {
            return Ok(());
        }
        let mut out = self.order()?;
        if self.written() >= upto {
            return Ok(());
        }
        {
            let mut p = self.lock()?;
            if let Some(why) = &p.broken {
                return Err(StoreError::Refused {
                    what: format!("{}: {why}", self.path.display()),
                });
            }
            std::mem::swap(&mut p.bytes, &mut *out);
        }
        let result = (&self.file).write_all(&out);
        let n = out.len();
        out.clear();
        if let Err(e) = result {
            if let Ok(mut p) = self.lock() {
                p.broken = Some(format!("a write failed: {e}"));
            }
            return Err(StoreError::io(
                self.path.display().to_string(),
                "append to",
                e,
            ));
        }
        self.wrote(n);
        if self.written() < upto {
            return Err(StoreError::Refused {
                what: format!(
                    "{}: internal error: a blob was never written",
                    self.path.display()
                ),
            });
        }
        Ok(())
    }
}

/// Appends one blob to a pack through its pending buffer, taking the pack's lock for each
/// write only (so the syncer is never kept waiting for a whole blob): small writes (headers,
/// JSON) are gathered, and a large one (a tensor) goes out together with what was pending in
/// one `writev`. With `keep`, a blob written wholly into the buffer stays pending for the
/// syncer (up to [`PENDING_LIMIT`]); otherwise [`Write::flush`] writes what is pending.
pub struct PackOut<'a> {
    pub pack: &'a PackFile,
    pub keep: bool,
    /// This blob went out in part directly (a large one): its tail goes out at the end too.
    pub direct: bool,
}

fn poisoned(e: StoreError) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl PackOut<'_> {
    fn limit(&self) -> usize {
        if self.keep {
            PENDING_LIMIT
        } else {
            GATHER
        }
    }
}

impl Write for PackOut<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if data.len() <= GATHER {
            let mut p = self.pack.lock().map_err(poisoned)?;
            if p.bytes.len() + data.len() <= self.limit() {
                p.bytes.extend_from_slice(data);
                return Ok(data.len());
            }
        }
        self.direct = true;
        let _order = self.pack.order().map_err(poisoned)?;
        let mut p = self.pack.lock().map_err(poisoned)?;
        let gather = &mut p.bytes;
        let mut file = &self.pack.file;
        while !gather.is_empty() {
            let held = gather.len();
            let n = file.write_vectored(&[IoSlice::new(gather), IoSlice::new(data)])?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.pack.wrote(n);
            if n > held {
                gather.clear();
                return Ok(n - held);
            }
            gather.drain(..n);
        }
        let n = (&self.pack.file).write(data)?;
        self.pack.wrote(n);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.keep && !self.direct {
            return Ok(());
        }
        let _order = self.pack.order().map_err(poisoned)?;
        let mut p = self.pack.lock().map_err(poisoned)?;
        let result = (&self.pack.file).write_all(&p.bytes);
        if result.is_ok() {
            self.pack.wrote(p.bytes.len());
        }
        p.bytes.clear();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn pack_of(len: usize, pending: &[u8]) -> (PackFile, PathBuf) {
        let path = std::env::temp_dir().join(format!(
            "somatize-cut-off-{}-{len}-{}.pack",
            std::process::id(),
            pending.len()
        ));
        std::fs::write(&path, vec![7u8; len]).unwrap();
        let file = OpenOptions::new().append(true).open(&path).unwrap();
        let pack = PackFile::new(file, path.clone(), "packs/000000.pack".into(), len as u64);
        pack.lock().unwrap().bytes.extend_from_slice(pending);
        (pack, path)
    }

    #[test]
    fn a_failed_blob_is_cut_off_when_every_byte_before_it_reached_the_file() {
        let (pack, path) = pack_of(100, b"part of the failed blob");
        let e = std::io::Error::other("disk full");
        pack.cut_off(60, &e);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 60);
        let p = pack.lock().unwrap();
        assert!(p.bytes.is_empty() && p.broken.is_none());
        drop(p);
        pack.write_pending(60 + 1).unwrap_err();
        pack.write_pending(60).unwrap();
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_failed_blob_after_lost_pending_bytes_breaks_the_pack() {
        let (pack, path) = pack_of(100, b"an earlier blob, never written");
        let e = std::io::Error::other("disk full");
        pack.cut_off(130, &e);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100);
        assert!(pack.lock().unwrap().broken.is_some());
        let err = pack.write_pending(130).unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100);
        let _ = std::fs::remove_file(&path);
    }
}

//! A pack being appended to, shared by its writer and the syncer: the file, the bytes appended
//! to it but not yet written (small blobs of a pipelined writer, which the syncer writes in
//! its round), and the buffered appender the writer writes blobs through.
//!
//! Every byte goes to the file in the order it was appended: whoever writes (the writer, for a
//! large tensor or a full buffer; the syncer, before it syncs) holds the pack's lock and
//! writes what is pending first.

use super::error::{Result, StoreError};
use std::fs::File;
use std::io::{IoSlice, Write};
use std::path::PathBuf;
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
}

impl PackFile {
    /// A pack open for appending, with nothing pending.
    pub fn new(file: File, path: PathBuf, name: String) -> Self {
        PackFile {
            file,
            path,
            name,
            pending: Mutex::new(Pending {
                bytes: Vec::with_capacity(GATHER),
                broken: None,
            }),
        }
    }

    /// The pack's lock and its pending bytes; nothing is written to the file without it.
    pub fn lock(&self) -> Result<MutexGuard<'_, Pending>> {
        self.pending.lock().map_err(|_| StoreError::Refused {
            what: format!(
                "{}: a thread panicked while appending to it",
                self.path.display()
            ),
        })
    }

    /// Write what is pending to the file (the syncer, before it syncs the pack). Fails if
    /// pending bytes were lost.
    pub fn write_pending(&self) -> Result<()> {
        let mut p = self.lock()?;
        if let Some(why) = &p.broken {
            return Err(StoreError::Refused {
                what: format!("{}: {why}", self.path.display()),
            });
        }
        if p.bytes.is_empty() {
            return Ok(());
        }
        if let Err(e) = (&self.file).write_all(&p.bytes) {
            p.broken = Some(format!("a write failed: {e}"));
            return Err(StoreError::io(
                self.path.display().to_string(),
                "append to",
                e,
            ));
        }
        p.bytes.clear();
        Ok(())
    }
}

/// Appends to a pack through its pending buffer, with the pack's lock held: small writes
/// (headers, JSON) are gathered, and a large one (a tensor) goes out together with what was
/// gathered in one `writev`. With `keep`, what is gathered at the end stays pending for the
/// syncer (up to [`PENDING_LIMIT`]); without, [`Write::flush`] writes it.
pub struct PackOut<'a> {
    pub file: &'a File,
    pub gather: &'a mut Vec<u8>,
    pub keep: bool,
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
        if data.len() <= GATHER && self.gather.len() + data.len() <= self.limit() {
            self.gather.extend_from_slice(data);
            return Ok(data.len());
        }
        while !self.gather.is_empty() {
            let held = self.gather.len();
            let n = self
                .file
                .write_vectored(&[IoSlice::new(self.gather), IoSlice::new(data)])?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            if n > held {
                self.gather.clear();
                return Ok(n - held);
            }
            self.gather.drain(..n);
        }
        self.file.write(data)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.keep {
            return Ok(());
        }
        let result = self.file.write_all(self.gather);
        self.gather.clear();
        result
    }
}

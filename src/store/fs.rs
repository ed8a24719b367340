//! `StoreFs`: the plain file access every reader goes through, over a folder or a snapshot zip.
//!
//! Paths are relative to the store root, `/`-separated, and checked so that none can escape it.
//! A wasm host supplies its own implementation (a dropped folder, HTTP range requests).

use super::error::{Result, StoreError};
use super::names;
use super::zipfile::ZipIndex;

/// Plain read access to a store's tree.
pub trait StoreFs {
    /// Names of the direct children (files and folders) of folder `dir` (`""` is the root), sorted.
    fn list(&self, dir: &str) -> Result<Vec<String>>;
    /// The whole of file `path`.
    fn read(&self, path: &str) -> Result<Vec<u8>>;
    /// Up to `len` bytes of file `path` from `offset` (fewer at its end).
    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>>;
    /// The length of file `path`.
    fn len(&self, path: &str) -> Result<u64>;
}

impl<T: StoreFs + ?Sized> StoreFs for &T {
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        (**self).list(dir)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>> {
        (**self).read(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        (**self).read_range(path, offset, len)
    }
    fn len(&self, path: &str) -> Result<u64> {
        (**self).len(path)
    }
}

impl<T: StoreFs + ?Sized> StoreFs for Box<T> {
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        (**self).list(dir)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>> {
        (**self).read(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        (**self).read_range(path, offset, len)
    }
    fn len(&self, path: &str) -> Result<u64> {
        (**self).len(path)
    }
}

fn check_dir(dir: &str) -> Result<()> {
    if dir.is_empty() {
        Ok(())
    } else {
        names::relative_path(dir)
    }
}

/// A store that is a folder on this machine.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug, Clone)]
pub struct DirFs {
    root: std::path::PathBuf,
}

#[cfg(not(target_arch = "wasm32"))]
impl DirFs {
    /// Read the folder `root`.
    pub fn new(root: impl Into<std::path::PathBuf>) -> Self {
        DirFs { root: root.into() }
    }

    fn path(&self, rel: &str) -> Result<std::path::PathBuf> {
        check_dir(rel)?;
        Ok(self.root.join(rel))
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl StoreFs for DirFs {
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let p = self.path(dir)?;
        let rd = std::fs::read_dir(&p).map_err(|e| StoreError::io(dir, "list", e))?;
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| StoreError::io(dir, "list", e))?;
            if let Ok(name) = entry.file_name().into_string() {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>> {
        std::fs::read(self.path(path)?).map_err(|e| StoreError::io(path, "read", e))
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f =
            std::fs::File::open(self.path(path)?).map_err(|e| StoreError::io(path, "open", e))?;
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| StoreError::io(path, "seek", e))?;
        // Sized once for the bytes the file holds there (never for what `len` merely asks),
        // so the read lands in place instead of growing the vector by doubling.
        let held = f.metadata().map_or(0, |m| m.len().saturating_sub(offset));
        let mut out = Vec::with_capacity(len.min(held).try_into().unwrap_or(0));
        f.take(len)
            .read_to_end(&mut out)
            .map_err(|e| StoreError::io(path, "read", e))?;
        Ok(out)
    }

    fn len(&self, path: &str) -> Result<u64> {
        std::fs::metadata(self.path(path)?)
            .map(|m| m.len())
            .map_err(|e| StoreError::io(path, "stat", e))
    }
}

/// Random access to the bytes of one archive: held in memory, or a file.
pub trait RangeSource {
    /// Its length.
    fn size(&self) -> u64;
    /// Up to `len` bytes from `offset`.
    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>>;
}

impl RangeSource for Vec<u8> {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let start = (offset.min(self.len() as u64)) as usize;
        let end = (offset.saturating_add(len).min(self.len() as u64)) as usize;
        Ok(self[start..end].to_vec())
    }
}

/// A snapshot file on this machine, read by ranges.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug)]
pub struct FileSource {
    file: std::sync::Mutex<std::fs::File>,
    len: u64,
    path: String,
}

#[cfg(not(target_arch = "wasm32"))]
impl FileSource {
    /// Open `path` for range reads.
    pub fn open(path: &std::path::Path) -> Result<Self> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| StoreError::io(&name, "open", e))?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io(&name, "stat", e))?
            .len();
        Ok(FileSource {
            file: std::sync::Mutex::new(file),
            len,
            path: name,
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl RangeSource for FileSource {
    fn size(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| StoreError::io(&self.path, "seek", e))?;
        let mut out = Vec::new();
        (&mut *f)
            .take(len)
            .read_to_end(&mut out)
            .map_err(|e| StoreError::io(&self.path, "read", e))?;
        Ok(out)
    }
}

/// A store that is a snapshot zip (entries stored), read by ranges: one blob costs one
/// read of its local header and one of its data.
pub struct ZipFs<R: RangeSource> {
    source: R,
    index: ZipIndex,
    name: String,
}

impl<R: RangeSource> ZipFs<R> {
    /// Read the snapshot's central directory; `name` is used in messages.
    pub fn new(source: R, name: &str) -> Result<Self> {
        let index = ZipIndex::read(name, source.size(), &mut |at, n| source.read_at(at, n))?;
        Ok(ZipFs {
            source,
            index,
            name: name.to_string(),
        })
    }

    fn span(&self, path: &str) -> Result<(u64, u64)> {
        check_dir(path)?;
        let entry = self
            .index
            .entries
            .get(path)
            .ok_or_else(|| StoreError::NotFound {
                path: path.to_string(),
            })?;
        self.index
            .data_span(&self.name, entry, &mut |at, n| self.source.read_at(at, n))
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ZipFs<FileSource> {
    /// Open a snapshot file.
    pub fn open(path: &std::path::Path) -> Result<Self> {
        let source = FileSource::open(path)?;
        Self::new(source, &path.display().to_string())
    }
}

impl<R: RangeSource> StoreFs for ZipFs<R> {
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        check_dir(dir)?;
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out: Vec<String> = Vec::new();
        for name in self.index.entries.range(prefix.clone()..).map(|(k, _)| k) {
            let Some(rest) = name.strip_prefix(&prefix) else {
                break;
            };
            let child = rest.split('/').next().unwrap_or_default();
            if !child.is_empty() && out.last().is_none_or(|l| l != child) {
                out.push(child.to_string());
            }
        }
        if out.is_empty() && !dir.is_empty() {
            return Err(StoreError::NotFound {
                path: dir.to_string(),
            });
        }
        Ok(out)
    }

    fn read(&self, path: &str) -> Result<Vec<u8>> {
        let (start, len) = self.span(path)?;
        let bytes = self.source.read_at(start, len)?;
        if bytes.len() as u64 != len {
            return Err(StoreError::BadZip {
                path: self.name.clone(),
                entry: Some(path.to_string()),
                reason: "entry is truncated".into(),
            });
        }
        Ok(bytes)
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let (start, size) = self.span(path)?;
        let offset = offset.min(size);
        let len = len.min(size - offset);
        self.source.read_at(start + offset, len)
    }

    fn len(&self, path: &str) -> Result<u64> {
        check_dir(path)?;
        self.index
            .entries
            .get(path)
            .map(|e| e.size)
            .ok_or_else(|| StoreError::NotFound {
                path: path.to_string(),
            })
    }
}

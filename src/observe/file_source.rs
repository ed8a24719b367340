//! `FileSource` and `CheckpointSource`: tensor files (NPZ dumps, torch checkpoints, safetensors) as observable sources.

use crate::observe::source::{SourceError, TensorSource};
use crate::tensor::bytes::Source;
use crate::tensor::{TensorError, TensorFile, TypedTensor};
use std::borrow::Cow;
use std::cell::RefCell;
use std::path::Path;

/// Arrays by key from a tensor file: an NPZ dump (`param.*`, `grad.*`, `act.*`, `loss`), a
/// lone `.npy`, or a checkpoint. Each `read` decodes its entry once; the runtime reads each
/// key at most once per step.
pub struct FileSource<S> {
    file: RefCell<TensorFile<S>>,
    keys: Vec<String>,
}

impl<S: Source> FileSource<S> {
    /// Every entry of an opened tensor file.
    pub fn new(file: TensorFile<S>) -> Self {
        let keys = file.entries().into_iter().map(|e| e.key).collect();
        FileSource {
            file: RefCell::new(file),
            keys,
        }
    }

    /// Only the entries whose key passes `keep`.
    fn filtered(file: TensorFile<S>, keep: impl Fn(&str) -> bool) -> Self {
        let mut source = Self::new(file);
        source.keys.retain(|k| keep(k));
        source
    }
}

impl FileSource<std::io::BufReader<std::fs::File>> {
    /// Open a file on disk (only the entries asked for are read).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TensorError> {
        Ok(Self::new(TensorFile::open_path(path)?))
    }
}

impl<S: Source> TensorSource for FileSource<S> {
    fn list(&self) -> Result<Vec<String>, SourceError> {
        Ok(self.keys.clone())
    }

    fn read(&self, key: &str) -> Result<Cow<'_, TypedTensor>, SourceError> {
        if !self.keys.iter().any(|k| k == key) {
            return Err(SourceError::NotFound {
                key: key.to_string(),
            });
        }
        let tensor = self
            .file
            .borrow_mut()
            .read(key)
            .map_err(|e| SourceError::Read {
                key: key.to_string(),
                message: e.to_string(),
            })?;
        Ok(Cow::Owned(tensor))
    }
}

/// The parameters (`param.*`) of a torch checkpoint or a safetensors file, as the seed's
/// CheckpointSource reads a state dict. Anything else in the file is not listed.
pub struct CheckpointSource<S>(FileSource<S>);

impl<S: Source> CheckpointSource<S> {
    /// The `param.*` entries of an opened file.
    pub fn new(file: TensorFile<S>) -> Self {
        CheckpointSource(FileSource::filtered(file, |k| k.starts_with("param.")))
    }
}

impl CheckpointSource<std::io::BufReader<std::fs::File>> {
    /// Open a checkpoint on disk.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TensorError> {
        Ok(Self::new(TensorFile::open_path(path)?))
    }
}

impl<S: Source> TensorSource for CheckpointSource<S> {
    fn list(&self) -> Result<Vec<String>, SourceError> {
        self.0.list()
    }

    fn read(&self, key: &str) -> Result<Cow<'_, TypedTensor>, SourceError> {
        self.0.read(key)
    }
}

//! The one error type of the store: what went wrong, and the run, forward or file it concerns.

use std::fmt;

/// Everything reading or writing a store can fail with. Each variant names what it concerns.
#[derive(Debug)]
pub enum StoreError {
    /// The operating system refused a read or write of `path` (missing file, permission,
    /// full disk, I/O error). Retrying helps only if the cause (space, permission) is fixed.
    Io {
        path: String,
        op: &'static str,
        source: std::io::Error,
    },
    /// `path` does not exist in the store. Retrying does not help unless something writes it.
    NotFound { path: String },
    /// The store has no format file, or it is not a somatize store. Not retryable.
    NotAStore { path: String, reason: String },
    /// The store was written by a newer major format version than this reader knows.
    /// Upgrade somatize to read it; retrying does not help.
    NewerFormat { found: String, supported: u32 },
    /// A run, writer or tensor key that is empty, too long, or could escape the store
    /// (`..`, `/`, `\`, NUL, control characters, a leading dot). Not retryable: rename it.
    BadName {
        what: &'static str,
        name: String,
        reason: &'static str,
    },
    /// An index line is not valid JSON or lacks a required field. Readers skip it and report
    /// it; the rest of the run still reads.
    BadIndexLine {
        run: String,
        writer: String,
        line: u64,
        reason: String,
    },
    /// A forward's blob is shorter or longer than the index says (truncated or replaced).
    BlobLength {
        run: String,
        forward: u64,
        path: String,
        want: u64,
        got: u64,
    },
    /// A forward's blob does not have the checksum its index line recorded: it is corrupt.
    BlobChecksum {
        run: String,
        forward: u64,
        path: String,
        want: u32,
        got: u32,
    },
    /// A zip container (blob or snapshot) is malformed; `entry` names the entry when known.
    BadZip {
        path: String,
        entry: Option<String>,
        reason: String,
    },
    /// A `.npy` entry, `facts.json`, `stats.json` or `forward.json` inside a blob is malformed.
    BadEntry {
        path: String,
        entry: String,
        reason: String,
    },
    /// The writer was asked for something the format does not allow (a forward number not
    /// above the last one, a tensor whose bytes do not match its shape, a blob over 4 GiB).
    Refused { what: String },
    /// Another process holds this writer's lock: two processes may not share one writer id.
    /// Retry after it exits, or give this process its own writer id.
    WriterBusy { path: String },
    /// A store on object storage (`s3://`, `gs://`, `az://`) failed; the inner error says
    /// how, and names the store URL and the run and writer it concerns.
    #[cfg(not(target_arch = "wasm32"))]
    Object(Box<super::object_error::ObjectError>),
}

impl StoreError {
    /// An I/O error on `path` during `op`, turned into `NotFound` when the file is missing.
    pub fn io(path: impl Into<String>, op: &'static str, source: std::io::Error) -> Self {
        let path = path.into();
        if source.kind() == std::io::ErrorKind::NotFound {
            return StoreError::NotFound { path };
        }
        StoreError::Io { path, op, source }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use StoreError::*;
        match self {
            Io { path, op, source } => write!(f, "{path}: could not {op}: {source}"),
            NotFound { path } => write!(f, "{path}: not found in the store"),
            NotAStore { path, reason } => write!(f, "{path}: not a somatize store: {reason}"),
            NewerFormat { found, supported } => write!(
                f,
                "this store is format version {found}, newer than this reader knows \
                 (major {supported}); upgrade somatize to read it"
            ),
            BadName { what, name, reason } => write!(f, "{what} name {name:?} refused: {reason}"),
            BadIndexLine {
                run,
                writer,
                line,
                reason,
            } => write!(
                f,
                "run {run:?}, writer {writer:?}: index line {line} unreadable: {reason}"
            ),
            BlobLength {
                run,
                forward,
                path,
                want,
                got,
            } => write!(
                f,
                "run {run:?}, forward {forward}: blob {path} is {got} bytes, the index says {want}"
            ),
            BlobChecksum {
                run,
                forward,
                path,
                want,
                got,
            } => write!(
                f,
                "run {run:?}, forward {forward}: blob {path} has crc32 {got:08x}, \
                 the index says {want:08x}: it is corrupt"
            ),
            BadZip {
                path,
                entry: Some(e),
                reason,
            } => write!(f, "{path}: zip entry {e:?}: {reason}"),
            BadZip {
                path,
                entry: None,
                reason,
            } => write!(f, "{path}: not a readable zip: {reason}"),
            BadEntry {
                path,
                entry,
                reason,
            } => write!(f, "{path}: entry {entry:?}: {reason}"),
            Refused { what } => write!(f, "refused: {what}"),
            WriterBusy { path } => write!(
                f,
                "{path}: another process is writing as this writer; give each process its own writer id"
            ),
            #[cfg(not(target_arch = "wasm32"))]
            Object(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            #[cfg(not(target_arch = "wasm32"))]
            StoreError::Object(e) => Some(&**e),
            _ => None,
        }
    }
}

/// Shorthand for results of the store.
pub type Result<T> = std::result::Result<T, StoreError>;

#[cfg(not(target_arch = "wasm32"))]
impl From<super::object_error::ObjectError> for StoreError {
    fn from(e: super::object_error::ObjectError) -> Self {
        StoreError::Object(Box::new(e))
    }
}

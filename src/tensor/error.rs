//! Errors from reading tensor files: which file, which entry, and what was wrong with it.

use std::fmt;

/// A tensor file could not be read: the file, the entry inside it (when one is concerned),
/// and the problem.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorError {
    /// The file (or the name given with the bytes).
    pub file: String,
    /// The entry (key) inside the file, when the problem concerns one.
    pub entry: Option<String>,
    /// What was wrong.
    pub problem: Problem,
}

/// What was wrong with a tensor file or one of its entries.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// Reading failed at the operating-system level; retrying may help if the cause was transient.
    Io(String),
    /// The bytes are not any format this reader knows (NPY, NPZ, PyTorch, safetensors); retrying will not help.
    UnknownFormat,
    /// The file or entry ends before the data it declares; the file is damaged or was cut short.
    Truncated(String),
    /// The zip archive (NPZ or PyTorch zip) is malformed; the file is damaged.
    Zip(String),
    /// An entry's CRC-32 does not match its bytes: the file is corrupted (a flipped byte).
    Crc { stored: u32, computed: u32 },
    /// A compressed entry would inflate past what its header declares, or far beyond its compressed size: refused as a zip bomb.
    Bomb(String),
    /// A header (NPY dict, safetensors JSON) is malformed or inconsistent; the file is damaged or not what it claims.
    Header(String),
    /// The entry holds values this reader refuses: object (pickled), structured, complex, string or unknown dtypes.
    Unsupported(String),
    /// The data is not the size the header declares (shape times item size); the header lies or the file is cut.
    DataSize { expected: u64, found: u64 },
    /// A size exceeds a fixed cap (header length, pickle length, dimensions); the file is hostile or damaged.
    TooLarge {
        what: &'static str,
        size: u64,
        cap: u64,
    },
    /// The pickle (PyTorch checkpoint) is malformed or uses an opcode a checkpoint does not need.
    Pickle(String),
    /// The pickle names a global that is not on the allow-list (e.g. `posix.system`); it is refused, never called.
    ForbiddenGlobal(String),
    /// A tensor's view (offset, sizes, strides) reaches outside its storage, or a storage is missing.
    View(String),
    /// No entry with this key exists in the file.
    NoSuchEntry,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Io(e) => write!(f, "read failed: {e}"),
            Problem::UnknownFormat => {
                write!(f, "not a tensor file (expected NPY, NPZ, PyTorch .pt or safetensors)")
            }
            Problem::Truncated(what) => write!(f, "truncated: {what}"),
            Problem::Zip(e) => write!(f, "bad zip archive: {e}"),
            Problem::Crc { stored, computed } => write!(
                f,
                "CRC-32 mismatch (stored {stored:08x}, computed {computed:08x}): the entry is corrupted"
            ),
            Problem::Bomb(e) => write!(f, "refused as a zip bomb: {e}"),
            Problem::Header(e) => write!(f, "bad header: {e}"),
            Problem::Unsupported(e) => write!(f, "unsupported: {e}"),
            Problem::DataSize { expected, found } => write!(
                f,
                "data is {found} bytes but the header's shape and dtype need {expected}"
            ),
            Problem::TooLarge { what, size, cap } => {
                write!(f, "{what} of {size} exceeds the cap of {cap}")
            }
            Problem::Pickle(e) => write!(f, "bad pickle: {e}"),
            Problem::ForbiddenGlobal(g) => write!(
                f,
                "pickle refers to global `{g}`, which a checkpoint does not need; refused, nothing was called"
            ),
            Problem::View(e) => write!(f, "bad tensor view: {e}"),
            Problem::NoSuchEntry => write!(f, "no such entry"),
        }
    }
}

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.entry {
            Some(entry) => write!(f, "{}: entry `{}`: {}", self.file, entry, self.problem),
            None => write!(f, "{}: {}", self.file, self.problem),
        }
    }
}

impl std::error::Error for TensorError {}

impl Problem {
    /// Attach the file (and entry) this problem concerns.
    pub fn at(self, file: &str, entry: Option<&str>) -> TensorError {
        TensorError {
            file: file.to_string(),
            entry: entry.map(str::to_string),
            problem: self,
        }
    }
}

impl From<std::io::Error> for Problem {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Problem::Truncated(e.to_string()),
            // What a deflate decoder reports for a corrupt stream.
            std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput => {
                Problem::Zip(format!("corrupt compressed data: {e}"))
            }
            _ => Problem::Io(e.to_string()),
        }
    }
}

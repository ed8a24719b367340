//! What reading back can fail with, and what it skipped on the way (reported beside the answer).

use crate::store::StoreError;
use serde::Serialize;
use std::fmt;

/// An answer and what was skipped to give it: unreadable index lines, and forwards whose blob
/// is missing, truncated or corrupt. A skip never stops the rest of the run from reading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer<T> {
    /// The rows (or figure) asked for.
    pub rows: T,
    /// What was left out, each naming its run, writer and line or forward.
    pub skipped: Vec<Skip>,
}

impl<T> Answer<T> {
    /// An answer with nothing skipped.
    pub fn new(rows: T) -> Self {
        Answer {
            rows,
            skipped: Vec::new(),
        }
    }
}

/// One thing left out of an answer, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skip {
    pub run: String,
    /// The writer whose index or blob it was, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
    /// The forward, when the skip is of one forward's blob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forward: Option<u64>,
    /// The index line (from 1), when the skip is of a line and its number is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Why, in words (the store's own message).
    pub reason: String,
}

impl Skip {
    /// A skip from a store error met while walking `run` (an unreadable index line or anything
    /// else the store said).
    pub fn from_store(run: &str, e: StoreError) -> Self {
        match e {
            StoreError::BadIndexLine {
                run,
                writer,
                line,
                reason,
            } => Skip {
                run,
                writer: Some(writer),
                forward: None,
                line: (line > 0).then_some(line),
                reason: format!("index line not readable: {reason}"),
            },
            other => Skip {
                run: run.to_string(),
                writer: None,
                forward: None,
                line: None,
                reason: other.to_string(),
            },
        }
    }

    /// A forward whose blob could not be read.
    pub fn forward(run: &str, writer: &str, forward: u64, e: &StoreError) -> Self {
        Skip {
            run: run.to_string(),
            writer: Some(writer.to_string()),
            forward: Some(forward),
            line: None,
            reason: e.to_string(),
        }
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run {:?}", self.run)?;
        if let Some(w) = &self.writer {
            write!(f, ", writer {w:?}")?;
        }
        if let Some(n) = self.forward {
            write!(f, ", forward {n}")?;
        }
        if let Some(n) = self.line {
            write!(f, ", index line {n}")?;
        }
        write!(f, ": skipped: {}", self.reason)
    }
}

/// Everything reading back can fail with (a skip is not a failure: see [`Answer`]).
#[derive(Debug)]
pub enum ReadbackError {
    /// The store itself could not be read: not a store, a newer format, an I/O error, a bad
    /// name. Retrying helps only for I/O errors once their cause is fixed.
    Store(StoreError),
    /// The store holds no run of this name. Not retryable: `runs` lists what is there.
    NoSuchRun { run: String },
    /// The run holds no forward of this number. Not retryable.
    NoSuchForward { run: String, forward: u64 },
    /// The one forward asked for could not be read (its blob is missing, truncated or
    /// corrupt). Not retryable unless the blob is restored.
    Forward {
        run: String,
        writer: String,
        forward: u64,
        source: Box<StoreError>,
    },
}

impl ReadbackError {
    /// A store error met while reading `run`: a missing run folder becomes `NoSuchRun`.
    pub fn in_run(run: &str, e: StoreError) -> Self {
        match e {
            StoreError::NotFound { .. } => ReadbackError::NoSuchRun {
                run: run.to_string(),
            },
            e => ReadbackError::Store(e),
        }
    }
}

impl From<StoreError> for ReadbackError {
    fn from(e: StoreError) -> Self {
        ReadbackError::Store(e)
    }
}

impl fmt::Display for ReadbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadbackError::Store(e) => write!(f, "{e}"),
            ReadbackError::NoSuchRun { run } => write!(f, "the store holds no run {run:?}"),
            ReadbackError::NoSuchForward { run, forward } => {
                write!(f, "run {run:?} holds no forward {forward}")
            }
            ReadbackError::Forward {
                run,
                writer,
                forward,
                source,
            } => write!(
                f,
                "run {run:?}, writer {writer:?}, forward {forward} could not be read: {source}"
            ),
        }
    }
}

impl std::error::Error for ReadbackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadbackError::Store(e) => Some(e),
            ReadbackError::Forward { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Shorthand for results of reading back.
pub type Result<T> = std::result::Result<T, ReadbackError>;

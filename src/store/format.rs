//! The format file at the root of a store, its version rule, and where everything lives.

use super::error::{Result, StoreError};
use serde::{Deserialize, Serialize};

/// The name of the format file at the root of every store.
pub const FORMAT_FILE: &str = "somatize-store.json";
/// The format name written in it.
pub const FORMAT_NAME: &str = "somatize-store";
/// The major version this code writes and the newest it reads.
pub const MAJOR: u32 = 1;
/// The minor version this code writes (readers accept any minor of a known major).
pub const MINOR: u32 = 1;
/// The folder under the root that holds one folder per run.
pub const RUNS_DIR: &str = "runs";
/// A run's graph, beside its writers' folders (`runs/<run>/graph.json`); never a writer.
pub const GRAPH_FILE: &str = "graph.json";
/// A writer's append-only index, one JSON line per forward.
pub const INDEX_FILE: &str = "index.jsonl";
/// A writer's machine readings, one JSON line per reading.
pub const READINGS_FILE: &str = "readings.jsonl";
/// How a writer's recording ended (written once, at the end).
pub const EXIT_FILE: &str = "exit.json";
/// A writer's lock file (held with an OS file lock while writing).
pub const LOCK_FILE: &str = "writer.lock";
/// The folder of a writer's blobs.
pub const BLOBS_DIR: &str = "blobs";

/// The content of the format file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormatFile {
    pub format: String,
    /// `"MAJOR.MINOR"`.
    pub version: String,
}

impl FormatFile {
    /// The format file this code writes.
    pub fn current() -> Self {
        FormatFile {
            format: FORMAT_NAME.into(),
            version: format!("{MAJOR}.{MINOR}"),
        }
    }

    /// Parse and check a format file: the right name and a major version not above [`MAJOR`].
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let not = |reason: String| StoreError::NotAStore {
            path: FORMAT_FILE.into(),
            reason,
        };
        let file: FormatFile =
            serde_json::from_slice(bytes).map_err(|e| not(format!("format file: {e}")))?;
        if file.format != FORMAT_NAME {
            return Err(not(format!(
                "format is {:?}, not {FORMAT_NAME:?}",
                file.format
            )));
        }
        let major = file
            .version
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok())
            .ok_or_else(|| not(format!("version {:?} is not MAJOR.MINOR", file.version)))?;
        if major > MAJOR {
            return Err(StoreError::NewerFormat {
                found: file.version,
                supported: MAJOR,
            });
        }
        Ok(file)
    }
}

/// `runs/<run>`.
pub fn run_dir(run: &str) -> String {
    format!("{RUNS_DIR}/{run}")
}

/// `runs/<run>/<writer>`.
pub fn writer_dir(run: &str, writer: &str) -> String {
    format!("{RUNS_DIR}/{run}/{writer}")
}

/// The blob name of a forward, relative to its writer's folder: `blobs/<forward, 12 digits>.npz`.
pub fn blob_name(forward: u64) -> String {
    format!("{BLOBS_DIR}/{forward:012}.npz")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_checked_by_major() {
        let table: &[(&str, &str)] = &[
            (r#"{"format":"somatize-store","version":"1.0"}"#, "ok"),
            (r#"{"format":"somatize-store","version":"1.7"}"#, "ok"),
            (r#"{"format":"somatize-store","version":"2.0"}"#, "newer"),
            (r#"{"format":"other","version":"1.0"}"#, "not"),
            (r#"{"format":"somatize-store","version":"x"}"#, "not"),
            ("not json", "not"),
        ];
        for &(text, want) in table {
            let got = match FormatFile::parse(text.as_bytes()) {
                Ok(_) => "ok",
                Err(StoreError::NewerFormat { .. }) => "newer",
                Err(StoreError::NotAStore { .. }) => "not",
                Err(e) => panic!("{text}: unexpected {e}"),
            };
            assert_eq!(got, want, "format file {text}");
        }
        let msg = FormatFile::parse(br#"{"format":"somatize-store","version":"2.0"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("upgrade"),
            "message {msg:?} does not say what to do"
        );
    }

    #[test]
    fn blob_names_sort_by_forward() {
        assert_eq!(blob_name(42), "blobs/000000000042.npz");
        assert!(blob_name(9) < blob_name(10));
    }
}

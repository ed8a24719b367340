//! The format file at the root of a store, its version rule, and where everything lives.

use super::error::{Result, StoreError};
use serde::{Deserialize, Serialize};

/// The name of the format file at the root of every store.
pub const FORMAT_FILE: &str = "somatize-store.json";
/// The format name written in it.
pub const FORMAT_NAME: &str = "somatize-store";
/// The major version this code writes and the newest it reads (2: blobs in packs; 1.x
/// stores, one blob file per forward, still read).
pub const MAJOR: u32 = 2;
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
/// The folder of a writer's blob files (format 1.x writers; snapshots).
pub const BLOBS_DIR: &str = "blobs";
/// The folder of a writer's packs (format 2): blobs appended one after another.
pub const PACKS_DIR: &str = "packs";
/// Files beside the writers' folders of a run (`runs/<run>/…`) that are never writers.
pub const RUN_FILES: &[&str] = &[GRAPH_FILE, CONFIG_FILE];
/// A run's config, beside its writers (`runs/<run>/config.json`, see `store::config`).
pub const CONFIG_FILE: &str = "config.json";

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

    /// `(major, minor)` of the version, when it reads as `MAJOR.MINOR`.
    pub fn version_numbers(&self) -> Option<(u32, u32)> {
        let (major, minor) = self.version.split_once('.')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    }

    /// Whether the version is older than the one this code writes (a writer raises it).
    pub fn older_than_current(&self) -> bool {
        self.version_numbers().is_some_and(|v| v < (MAJOR, MINOR))
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

/// A pack's name, relative to its writer's folder: `packs/<n, 6 digits>.pack`.
pub fn pack_name(n: u64) -> String {
    format!("{PACKS_DIR}/{n:06}.pack")
}

/// The number of a pack file name (`000012.pack` gives 12), if it is one.
pub fn pack_number(file_name: &str) -> Option<u64> {
    let digits = file_name.strip_suffix(".pack")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_checked_by_major() {
        let table: &[(&str, &str)] = &[
            (r#"{"format":"somatize-store","version":"1.0"}"#, "ok"),
            (r#"{"format":"somatize-store","version":"1.7"}"#, "ok"),
            (r#"{"format":"somatize-store","version":"2.0"}"#, "ok"),
            (r#"{"format":"somatize-store","version":"2.3"}"#, "ok"),
            (r#"{"format":"somatize-store","version":"3.0"}"#, "newer"),
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
        let msg = FormatFile::parse(br#"{"format":"somatize-store","version":"3.0"}"#)
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

    #[test]
    fn pack_names_round_trip() {
        assert_eq!(pack_name(12), "packs/000012.pack");
        let table: &[(&str, Option<u64>)] = &[
            ("000012.pack", Some(12)),
            ("1234567.pack", Some(1234567)),
            (".pack", None),
            ("x1.pack", None),
            ("000012.pack.tmp", None),
            ("-1.pack", None),
        ];
        for &(name, want) in table {
            assert_eq!(pack_number(name), want, "pack number of {name:?}");
        }
    }
}

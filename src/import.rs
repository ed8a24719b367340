//! `import`: per-step NPZ dumps (`step_<n>.npz` with `param.*`, `grad.*`, `act.*`, `update.*`,
//! `loss`, and an optional `graph.json` beside them) become a run in a store, each step one forward
//! carrying its facts, the loss summarised into the index and the per-node health metrics.

use crate::health::forward::Step;
use crate::health::record::{params_only, read_step_file, step_record, write_graph, Graph};
use crate::health::MeasureError;
use crate::record::Recorder;
use crate::store::StoreError;
use crate::tensor::{TensorError, TensorFile};
use std::fmt;
use std::path::{Path, PathBuf};

/// Why an import stopped. Forwards written before it stay in the store.
#[derive(Debug)]
pub enum ImportError {
    /// The dump folder could not be listed; retrying helps only if the cause was passing.
    Folder { path: String, detail: String },
    /// The folder holds no `step_<n>.npz` file.
    NoSteps { path: String },
    /// Two files name the same step number (`step_1.npz` and `step_001.npz`).
    SameStep { step: u64, a: String, b: String },
    /// The folder's `graph.json` is unreadable or not a graph; fix or remove it.
    Graph { path: String, reason: String },
    /// A step file could not be read (names the file and entry).
    Tensor(TensorError),
    /// A step's tensors could not be measured (a malformed shape, parameters that changed).
    Measure { path: String, error: MeasureError },
    /// The store refused or failed a write (names the file).
    Store(StoreError),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Folder { path, detail } => write!(f, "{path}: {detail}"),
            ImportError::NoSteps { path } => {
                write!(f, "{path}: no step_<n>.npz files to import")
            }
            ImportError::SameStep { step, a, b } => {
                write!(f, "{a} and {b} are both step {step}")
            }
            ImportError::Graph { path, reason } => write!(f, "{path}: {reason}"),
            ImportError::Tensor(e) => write!(f, "{e}"),
            ImportError::Measure { path, error } => write!(f, "{path}: {error}"),
            ImportError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ImportError {}

/// What an import did.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportReport {
    /// Forwards written (one per step file).
    pub forwards: u64,
    /// The first and last step numbers.
    pub steps: Option<(u64, u64)>,
    /// Whether the run got a `graph.json` (from the folder's).
    pub graph: bool,
}

/// The step number of a `step_<digits>.npz` file name.
fn step_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("step_")?.strip_suffix(".npz")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The step files of `dir`, sorted by step number.
pub fn step_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, ImportError> {
    let folder = |e: std::io::Error| ImportError::Folder {
        path: dir.display().to_string(),
        detail: e.to_string(),
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(folder)? {
        let entry = entry.map_err(folder)?;
        let name = entry.file_name();
        if let Some(n) = name.to_str().and_then(step_number) {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    for pair in out.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(ImportError::SameStep {
                step: pair[0].0,
                a: pair[0].1.display().to_string(),
                b: pair[1].1.display().to_string(),
            });
        }
    }
    if out.is_empty() {
        return Err(ImportError::NoSteps {
            path: dir.display().to_string(),
        });
    }
    Ok(out)
}

/// The folder's `graph.json`, if it has one.
pub fn folder_graph(dir: &Path) -> Result<Option<Graph>, ImportError> {
    let path = dir.join(crate::health::GRAPH_FILE);
    let name = path.display().to_string();
    match std::fs::read(&path) {
        Ok(bytes) => Graph::parse(&bytes, &name)
            .map(Some)
            .map_err(|reason| ImportError::Graph { path: name, reason }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ImportError::Graph {
            path: name,
            reason: e.to_string(),
        }),
    }
}

/// Every tensor of one step file, each read once ([`read_step_file`], which wasm's
/// `stepStats` reads a step's bytes with too).
pub fn read_step(path: &Path) -> Result<Step, ImportError> {
    let file = TensorFile::open_path(path).map_err(ImportError::Tensor)?;
    read_step_file(file).map_err(ImportError::Tensor)
}

/// Import the dumps in `dir` as run `run` of the store at `store` (created if missing),
/// writer `import`: one forward per step file numbered by its step, with facts (one per
/// graph node), the loss summarised as `loss.value`, the per-node metrics in `stats.json`
/// and, when `keep_tensors`, the tensors. The update metrics are those of one optimiser step:
/// from a file's `update.<node>.<leaf>` tensors when it has them, else from the previous
/// file's parameters only when that file is step n − 1 (dumps every k > 1 steps get no
/// update metrics, never a k-fold one); `update_steps` = 1 says so.
/// `on_step` is told each step as it is written.
pub fn import(
    dir: &Path,
    store: &Path,
    run: &str,
    keep_tensors: bool,
    on_step: &mut dyn FnMut(u64),
) -> Result<ImportReport, ImportError> {
    let files = step_files(dir)?;
    let graph = folder_graph(dir)?;
    let mut recorder = Recorder::with_writer(store, run, "import")
        .map_err(ImportError::Store)?
        .summarising(["loss"]);
    let has_graph = match &graph {
        Some(g) => {
            write_graph(store, run, g).map_err(ImportError::Store)?;
            true
        }
        None => false,
    };
    let graph = graph.unwrap_or_default();
    let mut previous: Option<(u64, Step)> = None;
    let mut forwards = 0;
    for (n, path) in &files {
        let step = read_step(path)?;
        // An update is one optimiser step: the dump's own `update.*` tensors, else the
        // difference against the previous file only when it is step n − 1. Across a gap of
        // more steps nothing is measured (a difference over k steps is about k times one).
        let before = previous
            .as_ref()
            .filter(|(p, _)| p.checked_add(1) == Some(*n))
            .map(|(_, s)| s);
        let rec = step_record(*n, &graph, &step, before, keep_tensors).map_err(|error| {
            ImportError::Measure {
                path: path.display().to_string(),
                error,
            }
        })?;
        recorder.record(&rec).map_err(ImportError::Store)?;
        forwards += 1;
        on_step(*n);
        previous = Some((*n, params_only(step)));
    }
    Ok(ImportReport {
        forwards,
        steps: files.first().zip(files.last()).map(|(a, b)| (a.0, b.0)),
        graph: has_graph,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_numbers_come_from_the_file_name_only() {
        for (name, want) in [
            ("step_000012.npz", Some(12)),
            ("step_7.npz", Some(7)),
            ("step_.npz", None),
            ("step_1a.npz", None),
            ("step_1.npy", None),
            ("ckpt_000001.pt", None),
            ("step_99999999999999999999999.npz", None),
        ] {
            assert_eq!(step_number(name), want, "{name}");
        }
    }
}

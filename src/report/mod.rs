//! `somatize report`: one self-contained HTML file that shows a run the way the page does, offline.
//!
//! The page's own modules, stylesheets and vendored plotly, the wasm core and the run's snapshot
//! (what `somatize export` writes) go into one file; every script is allowed by its hash and
//! nothing may be fetched (docs/report.md).

pub mod encode;
pub mod html;
pub mod modules;
pub mod page;

use crate::store::{snapshot, DirFs, Store, StoreFs, ZipFs};
use std::io;
use std::path::{Path, PathBuf};

/// Why a report could not be written.
#[derive(Debug)]
pub enum ReportError {
    /// A file the report embeds is missing (the page, its vendored plotly, the built package);
    /// build it as `hint` says, then retry.
    Assets {
        missing: PathBuf,
        hint: &'static str,
    },
    /// An asset exists but could not be read; retrying helps only if the cause was passing.
    Read { path: PathBuf, source: io::Error },
    /// The page's `index.html` lacks what the report needs; the page must be fixed.
    Page { path: PathBuf, why: String },
    /// An asset cannot sit inside the report as it is (e.g. a script containing `</script`).
    Inline { path: PathBuf, why: &'static str },
    /// An import of one of the page's modules cannot be linked; the page must be fixed.
    Module {
        module: String,
        specifier: String,
        why: &'static str,
    },
    /// The store could not be opened or read; the message is the store's.
    Store { store: PathBuf, message: String },
    /// The store holds no run of that name; `runs` are those it holds.
    NoRun {
        store: PathBuf,
        run: String,
        runs: Vec<String>,
    },
    /// Writing the report or its temporary snapshot failed (disk full, no permission).
    Write { path: PathBuf, source: io::Error },
}

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportError::Assets { missing, hint } => {
                write!(f, "{} is missing: {hint}", missing.display())
            }
            ReportError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            ReportError::Page { path, why } => write!(f, "{}: {why}", path.display()),
            ReportError::Inline { path, why } => {
                write!(f, "{} cannot be inlined: {why}", path.display())
            }
            ReportError::Module {
                module,
                specifier,
                why,
            } => write!(f, "{module}: cannot link import {specifier:?}: {why}"),
            ReportError::Store { store, message } => write!(f, "{}: {message}", store.display()),
            ReportError::NoRun { store, run, runs } => write!(
                f,
                "{}: no run {run:?} (the store holds: {})",
                store.display(),
                if runs.is_empty() {
                    "no runs".to_string()
                } else {
                    runs.join(", ")
                }
            ),
            ReportError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for ReportError {}

/// What to put in a report.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The folder holding `www/` and `pkg/` (the repository root).
    pub assets: PathBuf,
    /// The run shown (its name titles the report).
    pub run: String,
    /// Further runs the report holds (`report --runs GLOB`): the page's run table shows them
    /// all, with their health, to compare; the run shown first is the latest written.
    pub more: Vec<String>,
    /// Only the run's last N forwards (and their blobs).
    pub last: Option<usize>,
}

/// What a report holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSummary {
    /// Bytes of the HTML file.
    pub bytes: u64,
    /// Bytes of the embedded snapshot (before base64).
    pub snapshot_bytes: u64,
    /// Forwards in the snapshot.
    pub forwards: u64,
    /// ES modules linked into the import map.
    pub modules: usize,
}

/// Files the report cannot do without, and how to get them.
const NEEDED: [(&str, &str); 4] = [
    (
        "www/index.html",
        "the asset folder is the repository root (pass --assets)",
    ),
    (
        "pkg/wasm/somatize_bg.wasm",
        "build the package first: scripts/build-wasm.sh",
    ),
    (
        "pkg/wasm/somatize.js",
        "build the package first: scripts/build-wasm.sh",
    ),
    (
        "www/vendor/plotly.min.js",
        "build the page first: scripts/build-wasm.sh",
    ),
];

/// Check that the assets folder holds what a report embeds.
pub fn check_assets(assets: &Path) -> Result<(), ReportError> {
    for (rel, hint) in NEEDED {
        if !assets.join(rel).is_file() {
            return Err(ReportError::Assets {
                missing: assets.join(rel),
                hint,
            });
        }
    }
    Ok(())
}

/// A store from a folder or a snapshot zip.
fn open_store(path: &Path) -> Result<Store<Box<dyn StoreFs>>, ReportError> {
    let say = |e: crate::store::StoreError| ReportError::Store {
        store: path.to_path_buf(),
        message: e.to_string(),
    };
    let fs: Box<dyn StoreFs> = if path.is_file() {
        Box::new(ZipFs::open(path).map_err(say)?)
    } else if path.is_dir() {
        Box::new(DirFs::new(path))
    } else {
        return Err(ReportError::Store {
            store: path.to_path_buf(),
            message: "no such store folder or snapshot".into(),
        });
    };
    Store::open(fs).map_err(say)
}

/// Removes a temporary file when dropped.
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Write the report of `options.run` of the store at `store` to `out` (via a temporary file
/// renamed into place, so a failure leaves no half-written report).
pub fn write_report(
    store: &Path,
    options: &ReportOptions,
    out: &Path,
) -> Result<ReportSummary, ReportError> {
    check_assets(&options.assets)?;
    let opened = open_store(store)?;
    let runs = opened.runs().map_err(|e| ReportError::Store {
        store: store.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut wanted = vec![options.run.clone()];
    wanted.extend(options.more.iter().filter(|r| **r != options.run).cloned());
    if let Some(missing) = wanted.iter().find(|r| !runs.contains(r)) {
        return Err(ReportError::NoRun {
            store: store.to_path_buf(),
            run: missing.clone(),
            runs,
        });
    }
    let head = html::Head::build(&options.assets)?;
    let zip = Temp(sibling(out, "snapshot.zip"));
    let sum = snapshot::export(&opened, &wanted, options.last, &zip.0).map_err(|e| {
        ReportError::Store {
            store: store.to_path_buf(),
            message: e.to_string(),
        }
    })?;
    let about = html::About {
        run: if wanted.len() == 1 {
            options.run.clone()
        } else {
            format!("{} and {} more runs", options.run, wanted.len() - 1)
        },
        store: store.file_name().map_or_else(
            || store.display().to_string(),
            |n| n.to_string_lossy().into(),
        ),
        last: options.last,
        forwards: sum.forwards,
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let tmp = Temp(sibling(out, "tmp"));
    let wrote = html::write(&head, &about, &options.assets, &zip.0, &tmp.0)?;
    std::fs::rename(&tmp.0, out).map_err(|source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    Ok(ReportSummary {
        bytes: wrote.bytes,
        snapshot_bytes: wrote.snapshot_bytes,
        forwards: sum.forwards,
        modules: head.modules,
    })
}

/// Write the notebook widget's page (`somatize.show`'s view: the page and plotly, no store) to
/// `out`, and the wasm it runs beside it (`out` with the extension `wasm`: the kernel sends it
/// as bytes), each via a temporary file renamed into place. The bytes of the page.
pub fn write_widget_page(assets: &Path, out: &Path) -> Result<u64, ReportError> {
    check_assets(assets)?;
    let head = html::Head::build_as(assets, html::Flavour::Widget)?;
    let wasm_out = out.with_extension("wasm");
    let place = |tmp: &Temp, to: &Path| {
        std::fs::rename(&tmp.0, to).map_err(|source| ReportError::Write {
            path: to.to_path_buf(),
            source,
        })
    };
    let tmp = Temp(sibling(&wasm_out, "tmp"));
    std::fs::write(&tmp.0, html::widget_wasm(assets)?).map_err(|source| ReportError::Write {
        path: tmp.0.clone(),
        source,
    })?;
    place(&tmp, &wasm_out)?;
    let tmp = Temp(sibling(out, "tmp"));
    let bytes = html::write_widget(&head, &tmp.0)?;
    place(&tmp, out)?;
    Ok(bytes)
}

/// `out` with `.<pid>.<ext>` appended to its file name: a temporary file beside it.
fn sibling(out: &Path, ext: &str) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.{ext}", std::process::id()));
    out.with_file_name(name)
}

//! `listing.jsonl`: the store's append-only list of its runs and writers, for readers that
//! cannot list folders (a store behind a static HTTP server), and [`ListedFs`] which uses it.

use super::error::{Result, StoreError};
use super::format;
use super::fs::StoreFs;
use super::names;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The listing file at the root of a store (format 1.1 and later).
pub const LISTING_FILE: &str = "listing.jsonl";
/// The largest listing read (it holds one short line per writer).
pub const MAX_LISTING: u64 = 64 << 20;

/// One line of the listing: a writer of a run exists (or is about to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingLine {
    pub run: String,
    pub writer: String,
}

impl ListingLine {
    /// The line as written, with its newline.
    pub fn to_line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// Runs and their writers, sorted.
pub type Listing = BTreeMap<String, BTreeSet<String>>;

/// Parse a listing's bytes: whole lines only (a torn tail is ignored); lines that are not
/// JSON or name an invalid run or writer are skipped; repeated lines count once.
pub fn parse(bytes: &[u8]) -> Listing {
    let whole = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => &bytes[..i],
        None => &[][..],
    };
    let mut out = Listing::new();
    for line in whole.split(|&b| b == b'\n') {
        let Ok(l) = serde_json::from_slice::<ListingLine>(line) else {
            continue;
        };
        if names::run(&l.run).is_ok() && names::writer(&l.writer).is_ok() {
            out.entry(l.run).or_default().insert(l.writer);
        }
    }
    out
}

/// A [`StoreFs`] whose `list` answers from `listing.jsonl` (read afresh on each call, so a
/// store being written shows new runs); reads pass through to the inner one.
pub struct ListedFs<F: StoreFs> {
    inner: F,
}

impl<F: StoreFs> ListedFs<F> {
    /// List `inner` through its listing file.
    pub fn new(inner: F) -> Self {
        ListedFs { inner }
    }

    /// The listing as it is now.
    pub fn listing(&self) -> Result<Listing> {
        let missing = || StoreError::NotAStore {
            path: LISTING_FILE.into(),
            reason: format!(
                "it has no {LISTING_FILE} (written since format 1.1), which a reader that \
                 cannot list folders (HTTP) needs; open it as a folder or export a snapshot"
            ),
        };
        let len = match self.inner.len(LISTING_FILE) {
            Err(StoreError::NotFound { .. }) => return Err(missing()),
            other => other?,
        };
        if len > MAX_LISTING {
            return Err(StoreError::Refused {
                what: format!("{LISTING_FILE} is {len} bytes, over {MAX_LISTING}"),
            });
        }
        Ok(parse(&self.inner.read_range(LISTING_FILE, 0, len)?))
    }
}

impl<F: StoreFs> StoreFs for ListedFs<F> {
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let parts: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            names::relative_path(dir)?;
            dir.split('/').collect()
        };
        let not_found = || StoreError::NotFound {
            path: dir.to_string(),
        };
        match parts.as_slice() {
            [] => Ok(vec![
                LISTING_FILE.to_string(),
                format::RUNS_DIR.to_string(),
                format::FORMAT_FILE.to_string(),
            ]),
            [runs] if *runs == format::RUNS_DIR => Ok(self.listing()?.into_keys().collect()),
            [runs, run] if *runs == format::RUNS_DIR => self
                .listing()?
                .remove(*run)
                .map(|w| w.into_iter().collect())
                .ok_or_else(not_found),
            [runs, _, _] if *runs == format::RUNS_DIR => {
                let mut out = Vec::new();
                for name in [format::EXIT_FILE, format::INDEX_FILE, format::READINGS_FILE] {
                    if self.inner.len(&format!("{dir}/{name}")).is_ok() {
                        out.push(name.to_string());
                    }
                }
                Ok(out)
            }
            _ => Err(StoreError::Refused {
                what: format!("{dir}: this store can only be listed down to its writers"),
            }),
        }
    }

    fn read(&self, path: &str) -> Result<Vec<u8>> {
        self.inner.read(path)
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.inner.read_range(path, offset, len)
    }

    fn len(&self, path: &str) -> Result<u64> {
        self.inner.len(path)
    }
}

/// Append `run`/`writer` to the listing of the store at `root` (called by a writer opening a
/// writer folder that has no index yet). A store without a listing (format 1.0) first gets
/// every writer already on disk, and its format file is raised to the current version.
/// Lines go in with one append each; concurrent writers may repeat a line, which readers
/// count once.
#[cfg(not(target_arch = "wasm32"))]
pub fn register(root: &std::path::Path, run: &str, writer: &str) -> Result<()> {
    use std::io::Write;
    let path = root.join(LISTING_FILE);
    let io = |op: &'static str| {
        let p = path.display().to_string();
        move |e| StoreError::io(p, op, e)
    };
    let fresh = !path.exists();
    let mut text = String::new();
    if fresh {
        for (r, ws) in on_disk(root)? {
            for w in ws {
                text.push_str(
                    &ListingLine {
                        run: r.clone(),
                        writer: w,
                    }
                    .to_line(),
                );
            }
        }
    }
    text.push_str(
        &ListingLine {
            run: run.into(),
            writer: writer.into(),
        }
        .to_line(),
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .map_err(io("open"))?;
    f.write_all(text.as_bytes()).map_err(io("append to"))?;
    f.sync_data().map_err(io("sync"))?;
    if fresh {
        upgrade_format(root)?;
    }
    Ok(())
}

/// The writers on disk (folders with an index) of every run under `root`.
#[cfg(not(target_arch = "wasm32"))]
fn on_disk(root: &std::path::Path) -> Result<Listing> {
    let fs = super::fs::DirFs::new(root);
    let mut out = Listing::new();
    let runs = match fs.list(format::RUNS_DIR) {
        Err(StoreError::NotFound { .. }) => return Ok(out),
        other => other?,
    };
    for run in runs.into_iter().filter(|r| names::run(r).is_ok()) {
        for w in fs.list(&format::run_dir(&run))? {
            let index = format!("{}/{}", format::writer_dir(&run, &w), format::INDEX_FILE);
            if names::writer(&w).is_ok() && fs.len(&index).is_ok() {
                out.entry(run.clone()).or_default().insert(w);
            }
        }
    }
    Ok(out)
}

/// Raise the format file's version to the one this code writes when it is older (1.0 or 1.1
/// to 2.0), temp + rename; a newer one is left alone (writers refuse it before this).
#[cfg(not(target_arch = "wasm32"))]
pub fn upgrade_format(root: &std::path::Path) -> Result<()> {
    let path = root.join(format::FORMAT_FILE);
    let bytes = std::fs::read(&path).map_err(|e| StoreError::io(format::FORMAT_FILE, "read", e))?;
    let file = format::FormatFile::parse(&bytes)?;
    if !file.older_than_current() {
        return Ok(());
    }
    let tmp = root.join(format!(
        "{}.{}.tmp",
        format::FORMAT_FILE,
        std::process::id()
    ));
    let text = serde_json::to_vec(&format::FormatFile::current()).unwrap_or_default();
    std::fs::write(&tmp, text)
        .map_err(|e| StoreError::io(tmp.display().to_string(), "write", e))?;
    std::fs::rename(&tmp, &path).map_err(|e| StoreError::io(format::FORMAT_FILE, "rename", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_lines_parse_whole_valid_and_once() {
        let text = concat!(
            "{\"run\":\"a\",\"writer\":\"w1\"}\n",
            "not json\n",
            "{\"run\":\"../x\",\"writer\":\"w\"}\n",
            "{\"run\":\"a\",\"writer\":\"w1\"}\n",
            "{\"run\":\"b\",\"writer\":\"w2\"}\n",
            "{\"run\":\"c\",\"wri"
        );
        let got = parse(text.as_bytes());
        let want: Vec<(&str, Vec<&str>)> = vec![("a", vec!["w1"]), ("b", vec!["w2"])];
        let got: Vec<(&str, Vec<&str>)> = got
            .iter()
            .map(|(r, w)| (r.as_str(), w.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(got, want, "listing parsed to {got:?}, wanted {want:?}");
    }
}

//! Index lines already read (a run's last N), kept so that finding a forward among them reads no index.

use crate::store::{IndexEntry, ScanItem, Store, StoreError, StoreFs};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The last lines of every writer of one run, as a reader read them, kept so that the lines
/// of a forward among them are found without reading the index again (a gantt of a forward
/// the page offered costs its blob only, not a bisection of a 20 MB index over HTTP).
///
/// A kept answer is exact, not a guess: index files only grow, a writer's forward numbers
/// strictly increase, so once a writer's index holds a line past forward `f` no line for `f`
/// can be appended to it. [`KeptLines::find`] answers only for a forward within every writer's
/// kept lines, and only while the run's writer folders are those kept; otherwise it says it
/// does not know and the index is read as before.
#[derive(Debug, Default)]
pub struct KeptLines {
    kept: Option<Kept>,
}

#[derive(Debug)]
struct Kept {
    run: String,
    /// The run's writer folders, listed before its lines were read.
    folders: Vec<String>,
    /// Per writer its kept lines, a contiguous run of its index up to its last line, in order.
    lines: BTreeMap<String, Vec<IndexEntry>>,
}

impl KeptLines {
    /// Keep `items`, the last lines of `run` as [`Store::last`] read them with nothing skipped
    /// (an unreadable line could be a forward's line); `folders` is
    /// [`Store::writer_folders`] listed before they were read. Replaces what was kept.
    pub fn keep(&mut self, run: &str, folders: Vec<String>, items: &[ScanItem]) {
        let mut lines: BTreeMap<String, Vec<IndexEntry>> = BTreeMap::new();
        for i in items {
            lines
                .entry(i.writer.to_string())
                .or_default()
                .push(i.entry.clone());
        }
        self.kept = Some(Kept {
            run: run.to_string(),
            folders,
            lines,
        });
    }

    /// Forget what was kept.
    pub fn clear(&mut self) {
        self.kept = None;
    }

    /// The lines of forward `forward` of `run` (one per writer that wrote it, writers in order;
    /// none when no writer did) when the kept lines say so for certain, at the cost of listing
    /// the run's writer folders; `Ok(None)` when they cannot say (another run, a writer folder
    /// added or without kept lines, a forward outside a writer's kept lines): find it in the
    /// index instead. Nothing kept costs no read.
    pub fn find<F: StoreFs>(
        &self,
        store: &Store<F>,
        run: &str,
        forward: u64,
    ) -> Result<Option<Vec<ScanItem>>, StoreError> {
        let Some(k) = self.kept.as_ref().filter(|k| k.run == run) else {
            return Ok(None);
        };
        if !k.folders.iter().all(|w| k.lines.contains_key(w)) || !k.covers(forward) {
            return Ok(None);
        }
        if store.writer_folders(run)? != k.folders {
            return Ok(None);
        }
        Ok(Some(k.lines_of(forward)))
    }
}

impl Kept {
    /// Whether every writer's kept lines run from at or before `forward` to at or after it.
    fn covers(&self, forward: u64) -> bool {
        self.lines.values().all(|l| match (l.first(), l.last()) {
            (Some(a), Some(b)) => a.forward <= forward && forward <= b.forward,
            _ => false,
        })
    }

    fn lines_of(&self, forward: u64) -> Vec<ScanItem> {
        self.lines
            .iter()
            .filter_map(|(w, l)| {
                let at = l.binary_search_by_key(&forward, |e| e.forward).ok()?;
                Some(ScanItem {
                    writer: Arc::from(w.as_str()),
                    entry: l.get(at)?.clone(),
                })
            })
            .collect()
    }
}

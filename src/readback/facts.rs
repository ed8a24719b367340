//! `facts`: everything that happened in one forward, in the order it arrived (one fetch).

use super::error::{ReadbackError, Result};
use crate::store::{Fact, ScanItem, Store, StoreFs};
use std::sync::Arc;

/// The facts of forward `forward` of `run`, in arrival order; `None` when the run has no such
/// forward (not a failure). A forward marked broke before it was written has no blob and gives
/// `Some` of no facts. When several writers recorded it, their facts come writer by writer.
/// Finding the forward bisects each writer's index (a few small reads; a scan of that index if
/// an unreadable line is in the way); reading it is one fetch per writer. A blob that cannot be
/// read is an error naming run, writer and forward.
pub fn facts<F: StoreFs>(store: &Store<F>, run: &str, forward: u64) -> Result<Option<Vec<Fact>>> {
    let mut items = Vec::new();
    for w in super::lines::writers(store, run)? {
        match super::locate::locate(store, run, &w, forward) {
            Ok(Some(entry)) => items.push(ScanItem {
                writer: Arc::from(w.as_str()),
                entry,
            }),
            Ok(None) => {}
            Err(Some(e)) => return Err(ReadbackError::in_run(run, e)),
            // An unreadable line in the way: find it by a scan of this writer's index instead.
            Err(None) => items.extend(
                store
                    .find(run, forward)
                    .map_err(|e| ReadbackError::in_run(run, e))?
                    .into_iter()
                    .filter(|i| *i.writer == *w),
            ),
        }
    }
    facts_of(store, run, forward, items)
}

/// The facts of forward `forward` of `run` from its index lines `items` (one per writer that
/// recorded it, in writer order), as [`facts`] gives them: `None` when there are none.
pub fn facts_of<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    forward: u64,
    items: Vec<ScanItem>,
) -> Result<Option<Vec<Fact>>> {
    if items.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for item in items {
        if item.entry.blob.is_none() {
            continue;
        }
        let facts = store
            .fetch(run, &item.writer, &item.entry)
            .and_then(|b| b.facts())
            .map_err(|source| ReadbackError::Forward {
                run: run.to_string(),
                writer: item.writer.to_string(),
                forward,
                source: Box::new(source),
            })?;
        out.extend(facts);
    }
    Ok(Some(out))
}

//! Fetching the facts of a run's forwards (all of them, or only the last N), skipping and
//! reporting a forward whose blob cannot be read.

use super::error::{ReadbackError, Result, Skip};
use crate::store::{Fact, ScanItem, Store, StoreFs};

/// Call `f` with each forward's index entry and facts, in (forward, writer) order, one blob
/// at a time: every forward by a streaming merged scan, or only the last `n` (the indexes
/// read backwards, so the cost is proportional to `n`). A forward marked broke before it was
/// written has no blob and is passed over (that is not an error); a blob that cannot be read
/// is added to `skipped` and the rest still read.
pub(crate) fn each_forward<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
    skipped: &mut Vec<Skip>,
    f: &mut dyn FnMut(&ScanItem, Vec<Fact>),
) -> Result<()> {
    super::lines::writers(store, run)?;
    let mut one = |item: &ScanItem, skipped: &mut Vec<Skip>| {
        if item.entry.blob.is_none() {
            return;
        }
        match store
            .fetch(run, &item.writer, &item.entry)
            .and_then(|b| b.facts())
        {
            Ok(facts) => f(item, facts),
            Err(e) => skipped.push(Skip::forward(run, &item.writer, item.entry.forward, &e)),
        }
    };
    match last {
        Some(n) => {
            let items = store
                .last(run, n, &mut |e| skipped.push(Skip::from_store(run, e)))
                .map_err(|e| ReadbackError::in_run(run, e))?;
            for item in &items {
                one(item, skipped);
            }
        }
        None => {
            for item in store.scan(run).map_err(|e| ReadbackError::in_run(run, e))? {
                match item {
                    Ok(i) => one(&i, skipped),
                    Err(e) => skipped.push(Skip::from_store(run, e)),
                }
            }
        }
    }
    Ok(())
}

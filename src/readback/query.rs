//! `query`: one observed value read back by its exact spec id and step (the seed's
//! `ValueSink.query`), from the `values.json` that `observe` wrote into the forward's blob.

use super::error::{ReadbackError, Result};
use crate::store::{Store, StoreFs};

/// The value observable `id` took at step `step` of `run`, as `observe` wrote it (a number,
/// `null` for an undefined scalar, an array, or `{edges, counts}`); `None` when the run has no
/// such forward or the forward holds no value of that id (not a failure). Finding the forward
/// reads its index lines; reading it is one fetch per writer that recorded it, in writer order,
/// until one holds the id. Exact id and step only: no ranges, no prefixes.
pub fn query<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    id: &str,
    step: u64,
) -> Result<Option<serde_json::Value>> {
    let items = store
        .find(run, step)
        .map_err(|e| ReadbackError::in_run(run, e))?;
    for item in items {
        if item.entry.blob.is_none() {
            continue;
        }
        let values = store
            .fetch(run, &item.writer, &item.entry)
            .and_then(|b| b.values())
            .map_err(|source| ReadbackError::Forward {
                run: run.to_string(),
                writer: item.writer.to_string(),
                forward: step,
                source: Box::new(source),
            })?;
        if let Some(v) = values.get(id) {
            return Ok(Some(v.clone()));
        }
    }
    Ok(None)
}

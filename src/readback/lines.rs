//! Walking one run's index lines in (forward, writer) order, borrowed where it can be: the
//! fast borrowed reader for a run with one writer, the merged scan for several.

use super::error::{ReadbackError, Result, Skip};
use crate::store::{Fields, Store, StoreFs};

/// One index line as the walk hands it out, borrowed for the duration of the call.
pub(crate) struct Line<'a> {
    pub writer: &'a str,
    pub forward: u64,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    pub error: Option<&'a str>,
    pub fields: &'a Fields<'a>,
}

/// The writers of `run`, or `NoSuchRun`.
pub(crate) fn writers<F: StoreFs>(store: &Store<F>, run: &str) -> Result<Vec<String>> {
    store
        .writers(run)
        .map_err(|e| ReadbackError::in_run(run, e))
}

/// Call `f` with every index line of `run` in order of (forward, writer); unreadable lines are
/// added to `skipped` and the walk goes on. Reads only the indexes.
pub(crate) fn walk<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    skipped: &mut Vec<Skip>,
    f: &mut dyn FnMut(&Line<'_>),
) -> Result<()> {
    let writers = writers(store, run)?;
    if let [only] = writers.as_slice() {
        return store
            .for_each_line(
                run,
                only,
                &mut |l| {
                    f(&Line {
                        writer: only,
                        forward: l.forward,
                        written_us: l.written_us,
                        took_us: l.took_us,
                        broke: l.broke,
                        error: l.error.as_ref().map(|t| t.0.as_ref()),
                        fields: &l.fields,
                    })
                },
                &mut |e| skipped.push(Skip::from_store(run, e)),
            )
            .map_err(ReadbackError::from);
    }
    for item in store.scan(run).map_err(|e| ReadbackError::in_run(run, e))? {
        match item {
            Ok(item) => f(&Line {
                writer: &item.writer,
                forward: item.entry.forward,
                written_us: item.entry.written_us,
                took_us: item.entry.took_us,
                broke: item.entry.broke,
                error: item.entry.error.as_deref(),
                fields: &item.entry.fields,
            }),
            Err(e) => skipped.push(Skip::from_store(run, e)),
        }
    }
    Ok(())
}

//! The health cache: a second question over an unchanged run reuses the first read (no blob
//! is fetched again), a run that grew is read again, and another run or window is its own read.

use crate::common;

use common::temp_dir;
use somatize::health::store::read;
use somatize::health::HealthCache;
use somatize::record::Recorder;
use somatize::store::{DirFs, Fact, ForwardRecord, NodeStats, Num, Store, StoreError, StoreFs};
use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;

/// A folder store that counts blob reads: ranges of packs (format 2.0) and 1.x blob files.
struct Counting {
    inner: DirFs,
    reads: Cell<usize>,
}

impl StoreFs for Counting {
    fn list(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list(dir)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        if is_blob(path) {
            self.reads.set(self.reads.get() + 1);
        }
        self.inner.read(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        if is_blob(path) {
            self.reads.set(self.reads.get() + 1);
        }
        self.inner.read_range(path, offset, len)
    }
    fn len(&self, path: &str) -> Result<u64, StoreError> {
        self.inner.len(path)
    }
}

/// Whether `path` holds blobs: a pack, or a 1.x blob file.
fn is_blob(path: &str) -> bool {
    path.contains("/packs/") || path.contains("/blobs/")
}

/// Append forwards `from..to` of `run`, each with a stats row for node `fc`.
fn record(root: &Path, run: &str, from: u64, to: u64) {
    let mut rec = Recorder::with_writer(root, run, "w0").expect("a recorder");
    for forward in from..to {
        let mut stats = NodeStats::new();
        stats
            .entry("fc".into())
            .or_default()
            .insert("grad_norm".into(), Num(forward as f64));
        rec.record(&ForwardRecord {
            forward,
            took_us: Some(5),
            facts: vec![Fact::new("fc", "Linear")],
            stats,
            ..Default::default()
        })
        .expect("record");
    }
    rec.flush().expect("flush");
}

#[test]
fn an_unchanged_run_is_read_once_and_a_grown_one_again() {
    let root = temp_dir("health-cache");
    record(&root, "a", 0, 4);
    record(&root, "b", 0, 2);
    let store = Store::open(Counting {
        inner: DirFs::new(&root),
        reads: Cell::new(0),
    })
    .expect("open");
    let fetched = || store.fs().reads.get();
    let mut cache = HealthCache::default();

    let first = cache.read(&store, "a", None).unwrap();
    let after_first = fetched();
    assert!(
        after_first >= 4,
        "the first read fetches every blob: {after_first}"
    );
    let again = cache.read(&store, "a", None).unwrap();
    assert!(Arc::ptr_eq(&first, &again), "the same read is given again");
    assert_eq!(fetched(), after_first, "and nothing is fetched for it");
    assert_eq!(
        *again,
        read(&store, "a", None).unwrap(),
        "it is what a fresh read says"
    );

    // Each row: the question, and how many forwards it must see; each is a read of its own.
    for (run, last, forwards) in [("a", Some(2), 2), ("b", None, 2), ("a", None, 4)] {
        let before = fetched();
        let h = cache.read(&store, run, last).unwrap();
        assert_eq!(h.forwards.len(), forwards, "{run} last {last:?}");
        assert!(fetched() > before, "{run} last {last:?}: read afresh");
    }

    // The writer goes on: the kept read is stale and is replaced.
    record(&root, "a", 4, 6);
    let grown = cache.read(&store, "a", None).unwrap();
    let numbers: Vec<u64> = grown.forwards.iter().map(|f| f.number).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5], "the grown run is read again");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn read_at_asks_whether_the_run_grew_at_most_once_a_second() {
    use somatize::health::store::FRESH_MS;
    let root = temp_dir("health-cache-clock");
    record(&root, "a", 0, 3);
    let store = Store::open(Counting {
        inner: DirFs::new(&root),
        reads: Cell::new(0),
    })
    .expect("open");
    let mut cache = HealthCache::default();
    let numbers = |h: &somatize::health::store::RunHealth| -> Vec<u64> {
        h.forwards.iter().map(|f| f.number).collect()
    };
    let first = cache.read_at(&store, "a", None, 0.0).unwrap();
    record(&root, "a", 3, 5);
    // Within a second of the check, the kept read is trusted: the growth is not seen yet.
    let soon = cache.read_at(&store, "a", None, FRESH_MS - 1.0).unwrap();
    assert!(Arc::ptr_eq(&first, &soon), "trusted within a second");
    // A second later the store is asked and the grown run read again.
    let later = cache.read_at(&store, "a", None, FRESH_MS).unwrap();
    assert_eq!(numbers(&later), [0, 1, 2, 3, 4]);
    // recheck() (the store's files were refreshed) asks at once; so does `read`.
    record(&root, "a", 5, 6);
    cache.recheck();
    let now = cache.read_at(&store, "a", None, FRESH_MS + 1.0).unwrap();
    assert_eq!(numbers(&now), [0, 1, 2, 3, 4, 5]);
    record(&root, "a", 6, 7);
    assert_eq!(numbers(&cache.read(&store, "a", None).unwrap()).len(), 7);
    // Another window is its own read, whatever the clock.
    assert_eq!(
        cache
            .read_at(&store, "a", Some(2), FRESH_MS + 2.0)
            .unwrap()
            .forwards
            .len(),
        2
    );
    let _ = std::fs::remove_dir_all(&root);
}

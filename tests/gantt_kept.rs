//! The gantt of a forward among index lines already read (`KeptLines`): the same figure as a
//! bisection of the index finds, without reading the index; anything the kept lines cannot
//! vouch for (a forward a writer may still append, a new writer) reads the index as before.

use crate::common;

use common::temp_dir;
use somatize::figures::gantt::{gantt, gantt_kept};
use somatize::readback::{KeptLines, ReadbackError};
use somatize::record::Recorder;
use somatize::store::{DirFs, Fact, ForwardRecord, Store, StoreError, StoreFs};
use std::cell::Cell;
use std::path::Path;

/// A folder store that counts every read of an index (its length, a range, the whole).
struct Counting {
    inner: DirFs,
    index_reads: Cell<usize>,
}

impl Counting {
    fn count(&self, path: &str) {
        if path.ends_with("index.jsonl") {
            self.index_reads.set(self.index_reads.get() + 1);
        }
    }
}

impl StoreFs for Counting {
    fn list(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list(dir)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        self.count(path);
        self.inner.read(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        self.count(path);
        self.inner.read_range(path, offset, len)
    }
    fn len(&self, path: &str) -> Result<u64, StoreError> {
        self.count(path);
        self.inner.len(path)
    }
}

/// Writer `writer` of run `r` records `forwards`, each a fact of node `fc` on its machine.
fn record(root: &Path, writer: &str, forwards: &[u64]) {
    let mut rec = Recorder::with_writer(root, "r", writer).expect("a recorder");
    for &forward in forwards {
        let mut fact = Fact::new("fc", "Linear");
        fact.where_ = writer.to_string();
        fact.began_us = forward as i64;
        fact.took_us = 10 + forward;
        rec.record(&ForwardRecord {
            forward,
            took_us: Some(5),
            facts: vec![fact],
            ..Default::default()
        })
        .expect("record");
    }
    rec.flush().expect("flush");
}

/// The gantt both ways, with how many index reads the kept way made.
fn both(
    store: &Store<Counting>,
    kept: &KeptLines,
    forward: u64,
) -> (Result<String, String>, Result<String, String>, usize) {
    let show = |r: Result<somatize::figures::Figure, ReadbackError>| {
        r.map(|f| serde_json::to_string(&f).unwrap())
            .map_err(|e| e.to_string())
    };
    let before = store.fs().index_reads.get();
    let got = show(gantt_kept(store, "r", forward, kept));
    let reads = store.fs().index_reads.get() - before;
    (got, show(gantt(store, "r", forward)), reads)
}

#[test]
fn a_kept_forward_is_drawn_without_reading_the_index_and_the_same() {
    let root = temp_dir("gantt-kept");
    // Neither writer recorded forward 7; w1 is behind w0.
    record(&root, "w0", &[0, 1, 2, 3, 4, 5, 6, 8, 9]);
    record(&root, "w1", &[0, 1, 2, 3, 4, 5, 6, 8]);
    let store = Store::open(Counting {
        inner: DirFs::new(&root),
        index_reads: Cell::new(0),
    })
    .expect("open");
    let mut kept = KeptLines::default();
    let folders = store.writer_folders("r").unwrap();
    let items = store.last("r", 6, &mut |e| panic!("{e}")).unwrap();
    // The last 6: w1's 5, 6, 8 and w0's 6, 8, 9: both writers vouch for 6..=8.
    kept.keep("r", folders, &items);

    for forward in 0..12 {
        let (got, want, reads) = both(&store, &kept, forward);
        assert_eq!(got, want, "forward {forward}");
        let vouched = (6..=8).contains(&forward);
        assert_eq!(
            reads == 0,
            vouched,
            "forward {forward}: {reads} index reads"
        );
    }
    let (got, _, _) = both(&store, &kept, 7);
    assert!(
        got.unwrap_err().contains('7'),
        "a forward no writer wrote, within the kept lines, is no such forward"
    );

    // w1 catches up with forward 9: the kept lines could not vouch for 9 (w1's ended at 8),
    // so it was and is read from the index, now with both writers' facts.
    record(&root, "w1", &[9]);
    let (got, want, reads) = both(&store, &kept, 9);
    assert_eq!(got, want);
    assert!(reads > 0 && got.unwrap().matches("w1").count() > 0);

    // A new writer that also recorded forward 6: the folders changed, the index is read.
    record(&root, "w2", &[6]);
    let (got, want, reads) = both(&store, &kept, 6);
    assert_eq!(got, want);
    assert!(
        reads > 0 && got.unwrap().contains("w2"),
        "the new writer's facts are drawn"
    );

    // Another run, or nothing kept: the index is read.
    let (got, want, reads) = both(&store, &KeptLines::default(), 6);
    assert_eq!((got, reads > 0), (want, true));
    let _ = std::fs::remove_dir_all(&root);
}

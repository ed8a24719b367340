//! Packs (format 2) and the stores written before them (format 1.1, one blob file per
//! forward): packs roll at their limit, a reopened writer begins a new one, a fetch reads only
//! its blob's range of a pack, a 1.1 store reads, exports and is continued in packs, and a
//! snapshot is the same tree (its last N forwards: their blobs in one pack of their own).

use crate::common;

use common::{forward, temp_dir, values};
use somatize::record::Recorder;
use somatize::store::blob::{self, ForwardMeta};
use somatize::store::{format, snapshot, DirFs, IndexEntry, Store, StoreError, StoreFs, ZipFs};
use somatize::tensor::TensorData;
use std::cell::Cell;
use std::path::Path;

/// Write `forwards` as a format 1.1 writer did: `blobs/<forward>.npz` each, index lines
/// with no `offset`, format file 1.1, the writer listed. Built from the format page, with the
/// blob encoder (the blob layout did not change).
fn write_v1_1(root: &Path, run: &str, writer: &str, forwards: std::ops::Range<u64>) {
    std::fs::write(
        root.join("somatize-store.json"),
        r#"{"format":"somatize-store","version":"1.1"}"#,
    )
    .unwrap();
    let line = format!("{{\"run\":\"{run}\",\"writer\":\"{writer}\"}}\n");
    std::fs::write(root.join("listing.jsonl"), line).unwrap();
    let dir = root.join(format::writer_dir(run, writer));
    std::fs::create_dir_all(dir.join("blobs")).unwrap();
    let mut index = String::new();
    for f in forwards {
        let rec = forward(f, 2, 64);
        let fields = blob::summarise(&rec.facts, &["loss".into()]);
        let meta = ForwardMeta {
            run: run.into(),
            writer: writer.into(),
            forward: f,
            written_us: 1_700_000_000_000_000 + f as i64,
            took_us: rec.took(),
            broke: false,
            error: None,
            fields: Default::default(),
            tensors: vec!["act.layer0".into(), "act.layer1".into()],
        };
        let (bytes, len, crc) = blob::write(Vec::new(), &meta, &rec).unwrap();
        let name = format::blob_name(f);
        std::fs::write(dir.join(&name), bytes).unwrap();
        let entry = IndexEntry {
            forward: f,
            written_us: meta.written_us,
            took_us: meta.took_us,
            broke: false,
            error: None,
            fields,
            blob: Some(name),
            offset: None,
            len: Some(len),
            crc32: Some(crc),
        };
        index.push_str(&entry.to_line());
        index.push('\n');
    }
    std::fs::write(dir.join("index.jsonl"), index).unwrap();
}

/// Every forward of `run` in order is `want`, and each fetches with the tensors it was given.
fn check<F: StoreFs>(store: &Store<F>, run: &str, want: &[u64]) -> Vec<IndexEntry> {
    let items: Vec<_> = store.scan(run).unwrap().map(|i| i.unwrap()).collect();
    let got: Vec<u64> = items.iter().map(|i| i.entry.forward).collect();
    assert_eq!(got, want, "forwards of {run}");
    for item in &items {
        let f = item.entry.forward;
        let b = store
            .fetch(run, &item.writer, &item.entry)
            .unwrap_or_else(|e| panic!("forward {f}: {e}"));
        let t = b.tensor("act.layer1").unwrap().expect("act.layer1 kept");
        assert_eq!(t.data, TensorData::F32(values(f, 1, 64)), "forward {f}");
    }
    items.into_iter().map(|i| i.entry).collect()
}

fn record(root: &Path, run: &str, forwards: std::ops::Range<u64>, pack_limit: Option<u64>) {
    let mut r = Recorder::with_writer(root, run, "w")
        .unwrap()
        .summarising(["loss"]);
    if let Some(l) = pack_limit {
        r.writer().set_pack_limit(l);
    }
    for f in forwards {
        r.record(&forward(f, 2, 64)).unwrap();
    }
}

fn pack_lens(root: &Path, run: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = std::fs::read_dir(root.join(format!("runs/{run}/w/packs")))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn blobs_go_into_packs_that_roll_at_their_limit() {
    let root = temp_dir("packs-roll");
    record(&root, "r", 0..20, Some(2_000));
    let store = Store::open(DirFs::new(&root)).unwrap();
    let entries = check(&store, "r", &(0..20).collect::<Vec<_>>());
    let packs = pack_lens(&root, "r");
    assert!(
        packs.len() > 3,
        "20 forwards of ~1.3 KiB in 2 KB packs: {packs:?}"
    );
    for (name, len) in &packs {
        let inside: Vec<&IndexEntry> = entries
            .iter()
            .filter(|e| e.blob.as_deref() == Some(&format!("packs/{name}")))
            .collect();
        // Blobs follow each other from offset 0, and the pack is exactly their bytes.
        let mut at = 0;
        for e in &inside {
            assert_eq!(e.offset, Some(at), "{name}: forward {}", e.forward);
            at += e.len.unwrap();
        }
        assert_eq!(at, *len, "{name} holds {len} bytes, its blobs {at}");
        // A pack is begun only when the one before reached the limit.
        let before_last: u64 = inside.iter().rev().skip(1).map(|e| e.len.unwrap()).sum();
        assert!(before_last < 2_000, "{name} went on past its limit");
    }
}

#[test]
fn a_reopened_writer_begins_a_new_pack() {
    let root = temp_dir("packs-reopen");
    record(&root, "r", 0..3, None);
    record(&root, "r", 3..5, None);
    let names: Vec<String> = pack_lens(&root, "r").into_iter().map(|p| p.0).collect();
    assert_eq!(names, ["000000.pack", "000001.pack"]);
    let store = Store::open(DirFs::new(&root)).unwrap();
    let entries = check(&store, "r", &[0, 1, 2, 3, 4]);
    assert_eq!(entries[3].blob.as_deref(), Some("packs/000001.pack"));
    assert_eq!(entries[3].offset, Some(0));
}

/// Counts the bytes read from packs and the calls that read them.
struct Counting {
    inner: DirFs,
    calls: Cell<u64>,
    bytes: Cell<u64>,
}

impl StoreFs for Counting {
    fn list(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list(dir)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        assert!(!path.ends_with(".pack"), "a whole pack read: {path}");
        self.inner.read(path)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        let b = self.inner.read_range(path, offset, len)?;
        if path.ends_with(".pack") {
            self.calls.set(self.calls.get() + 1);
            self.bytes.set(self.bytes.get() + b.len() as u64);
        }
        Ok(b)
    }
    fn len(&self, path: &str) -> Result<u64, StoreError> {
        self.inner.len(path)
    }
}

#[test]
fn a_fetch_reads_one_range_of_its_pack_and_no_more() {
    let root = temp_dir("packs-range");
    record(&root, "r", 0..30, None);
    let store = Store::open(Counting {
        inner: DirFs::new(&root),
        calls: Cell::new(0),
        bytes: Cell::new(0),
    })
    .unwrap();
    let last = store.last("r", 7, &mut |e| panic!("{e}")).unwrap();
    let mut want = 0;
    for item in &last {
        store.fetch("r", &item.writer, &item.entry).unwrap();
        want += item.entry.len.unwrap();
    }
    let (calls, bytes) = (store.fs().calls.get(), store.fs().bytes.get());
    assert_eq!(
        (calls, bytes),
        (7, want),
        "(range reads, bytes) of 7 fetches"
    );
}

#[test]
fn a_pack_cut_short_or_flipped_is_reported_for_its_forwards_only() {
    let root = temp_dir("packs-damage");
    record(&root, "r", 0..4, None);
    let pack = root.join("runs/r/w/packs/000000.pack");
    let store = Store::open(DirFs::new(&root)).unwrap();
    let entries: Vec<IndexEntry> = store.scan("r").unwrap().map(|i| i.unwrap().entry).collect();
    let mut bytes = std::fs::read(&pack).unwrap();
    let mid = (entries[1].offset.unwrap() + entries[1].len.unwrap() / 2) as usize;
    bytes[mid] ^= 0x10;
    let cut = entries[3].offset.unwrap() + 5;
    std::fs::write(&pack, &bytes[..cut as usize]).unwrap();
    let got: Vec<&str> = entries
        .iter()
        .map(|e| match store.fetch("r", "w", e) {
            Ok(_) => "ok",
            Err(StoreError::BlobChecksum { .. }) => "checksum",
            Err(StoreError::BlobLength { got: 5, .. }) => "short",
            Err(err) => panic!("forward {}: {err}", e.forward),
        })
        .collect();
    assert_eq!(got, ["ok", "checksum", "ok", "short"]);
}

#[test]
fn a_1_1_store_reads_exports_and_is_continued_in_packs() {
    let root = temp_dir("packs-v1");
    write_v1_1(&root, "old", "w", 0..3);
    let store = Store::open(DirFs::new(&root)).unwrap();
    assert_eq!(store.format.version, "1.1");
    check(&store, "old", &[0, 1, 2]);
    let snap = root.join("v1.zip");
    snapshot::export(&store, &[], None, &snap).unwrap();
    check(
        &Store::open(ZipFs::open(&snap).unwrap()).unwrap(),
        "old",
        &[0, 1, 2],
    );

    // A writer continuing the run raises the format and packs what follows.
    let mut r = Recorder::with_writer(&root, "old", "w")
        .unwrap()
        .summarising(["loss"]);
    assert_eq!(r.writer().last_forward(), Some(2));
    for f in 3..5 {
        r.record(&forward(f, 2, 64)).unwrap();
    }
    drop(r);
    let store = Store::open(DirFs::new(&root)).unwrap();
    assert_eq!(store.format.version, "2.1");
    let entries = check(&store, "old", &[0, 1, 2, 3, 4]);
    let kinds: Vec<(Option<&str>, Option<u64>)> = entries
        .iter()
        .map(|e| (e.blob.as_deref(), e.offset))
        .collect();
    assert_eq!(kinds[2], (Some("blobs/000000000002.npz"), None));
    assert_eq!(kinds[3], (Some("packs/000000.pack"), Some(0)));

    // A snapshot of the whole mixed run is the same tree: the same index lines, the pack and
    // the 1.1 blob files.
    let out = root.join("mixed.zip");
    let sum = snapshot::export(&store, &[], None, &out).unwrap();
    assert_eq!(sum.blobs, 5);
    let snap = Store::open(ZipFs::open(&out).unwrap()).unwrap();
    assert_eq!(
        check(&snap, "old", &[0, 1, 2, 3, 4]),
        entries,
        "snapshot rows"
    );
    assert_eq!(snap.fs().list("runs/old/w/packs").unwrap(), ["000000.pack"]);
    assert_eq!(snap.fs().list("runs/old/w/blobs").unwrap().len(), 3);

    // The last 3: the 1.1 blob file as it is, the packed two in a pack of their own.
    let sum = snapshot::export(&store, &[], Some(3), &out).unwrap();
    assert_eq!(sum.blobs, 3);
    let snap = Store::open(ZipFs::open(&out).unwrap()).unwrap();
    let got = check(&snap, "old", &[2, 3, 4]);
    let spans: Vec<(Option<&str>, Option<u64>)> =
        got.iter().map(|e| (e.blob.as_deref(), e.offset)).collect();
    let len3 = entries[3].len.unwrap();
    assert_eq!(
        spans,
        [
            (Some("blobs/000000000002.npz"), None),
            (Some("packs/000000.pack"), Some(0)),
            (Some("packs/000000.pack"), Some(len3)),
        ]
    );
    let pack_len = snap.fs().len("runs/old/w/packs/000000.pack").unwrap();
    assert_eq!(
        pack_len,
        len3 + entries[4].len.unwrap(),
        "the last 3 carry 2 packed blobs"
    );
    assert_eq!(
        snap.fs().list("runs/old/w/blobs").unwrap(),
        ["000000000002.npz"]
    );
}

/// The tensor size of forward `f` in the mixed test: mostly small (left pending for the
/// syncer), some over the gathered size (64 KiB), some page-aligned (256 KiB and more).
fn mixed_size(f: u64) -> usize {
    match f % 7 {
        3 => 20_000,
        5 => 70_000,
        _ => 16 + f as usize % 50,
    }
}

#[test]
fn a_pipelined_writer_lands_small_and_large_blobs_in_order() {
    for durable in [false, true] {
        let root = temp_dir("packs-mixed");
        let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
        r.writer().durable = durable;
        r.writer().set_pipeline(16).unwrap();
        r.writer().set_pack_limit(600_000);
        for f in 0..60 {
            r.record(&forward(f, 2, mixed_size(f))).unwrap();
            if f % 20 == 19 {
                r.flush().unwrap();
            }
        }
        drop(r);
        let store = Store::open(DirFs::new(&root)).unwrap();
        let mut at: std::collections::BTreeMap<String, u64> = Default::default();
        for item in store.scan("r").unwrap() {
            let e = item.unwrap().entry;
            let pack = e.blob.clone().unwrap();
            let next = at.entry(pack.clone()).or_default();
            assert_eq!(e.offset, Some(*next), "{pack}: forward {}", e.forward);
            *next += e.len.unwrap();
            let b = store.fetch("r", "w", &e).unwrap();
            let t = b.tensor("act.layer1").unwrap().unwrap();
            let want = values(e.forward, 1, mixed_size(e.forward));
            assert_eq!(t.data, TensorData::F32(want), "forward {}", e.forward);
        }
        assert!(at.len() > 2, "packs {at:?}");
        for (name, len) in pack_lens(&root, "r") {
            assert_eq!(Some(&len), at.get(&format!("packs/{name}")), "{name}");
        }
    }
}

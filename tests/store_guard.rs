//! What the store refuses: names and keys that would escape it, blob paths in an index or
//! entries in a snapshot that point outside, and a full disk (an error, never a silent loss).
//!
//! The full disk is simulated with /dev/full (every write fails with ENOSPC): the index file,
//! or the temporary blob, is made a symlink to it. Skipped where /dev/full does not exist.

use crate::common;

use common::{forward, temp_dir};
use somatize::record::Recorder;
use somatize::store::{DirFs, IndexEntry, Store, StoreError, StoreFs, ZipFs};
use std::borrow::Cow;
use std::path::Path;

fn entries_outside(root: &Path) -> Vec<String> {
    let parent = root.parent().unwrap();
    ["evil", "x", "k"]
        .iter()
        .filter(|n| parent.join(n).exists())
        .map(|n| n.to_string())
        .collect()
}

#[test]
fn escaping_run_and_writer_names_are_refused() {
    // The store sits one level down in a folder of its own, so "outside the store" is a
    // place no other test or process writes to.
    let root = temp_dir("names").join("store");
    std::fs::create_dir_all(&root).unwrap();
    let table: &[(&str, &str)] = &[
        ("../evil", "w"),
        ("/tmp/evil", "w"),
        ("..", "w"),
        ("a/b", "w"),
        ("r\0x", "w"),
        ("r\n", "w"),
        ("r", "../x"),
        ("r", "a/b"),
        ("r", ".."),
        ("", "w"),
    ];
    for &(run, writer) in table {
        let got = Recorder::with_writer(&root, run, writer);
        assert!(
            matches!(got, Err(StoreError::BadName { .. })),
            "run {run:?} writer {writer:?}: wanted BadName, got {:?}",
            got.err()
        );
    }
    assert!(
        entries_outside(&root).is_empty(),
        "something was created outside the store"
    );
    assert!(
        !root.join("runs").exists(),
        "a refused name created a run folder"
    );
    somatize::store::writer::ensure_store(&root).unwrap();
    let store = Store::open(DirFs::new(&root)).unwrap();
    for run in ["../evil", "a/b", ".."] {
        assert!(
            matches!(store.scan(run), Err(StoreError::BadName { .. })),
            "scan of {run:?}"
        );
    }
}

#[test]
fn escaping_tensor_keys_are_refused_and_nothing_is_indexed() {
    let root = temp_dir("keys");
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    for key in ["../k", "a/b", "..", "/abs", "k\0", ".hidden"] {
        let mut rec = forward(0, 1, 4);
        rec.tensors[0].key = Cow::Owned(key.to_string());
        let err = r
            .record(&rec)
            .err()
            .unwrap_or_else(|| panic!("key {key:?} accepted"));
        assert!(
            matches!(err, StoreError::BadName { .. }),
            "key {key:?}: {err}"
        );
    }
    let store = Store::open(DirFs::new(&root)).unwrap();
    assert_eq!(
        store.scan("r").unwrap().count(),
        0,
        "a refused forward was indexed"
    );
}

#[test]
fn an_index_line_pointing_outside_is_not_followed() {
    let root = temp_dir("blobpath");
    std::fs::write(root.parent().unwrap().join("secret.npz"), b"x").ok();
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    r.record(&forward(0, 0, 0)).unwrap();
    let store = Store::open(DirFs::new(&root)).unwrap();
    for blob in ["../../../../secret.npz", "/etc/passwd", "blobs/../../x"] {
        let entry = IndexEntry {
            forward: 0,
            written_us: 0,
            took_us: 0,
            broke: false,
            error: None,
            fields: Default::default(),
            blob: Some(blob.into()),
            offset: None,
            len: Some(1),
            crc32: Some(0),
        };
        let err = store.fetch("r", "w", &entry).expect_err("fetched outside");
        assert!(
            matches!(err, StoreError::BadName { .. }),
            "blob {blob:?}: {err}"
        );
    }
}

#[test]
fn snapshot_paths_that_escape_are_refused() {
    let mut z = somatize::store::zipfile::ZipWriter::new(Vec::new());
    z.add(
        "somatize-store.json",
        &[br#"{"format":"somatize-store","version":"1.0"}"#],
    )
    .unwrap();
    z.add("runs/../../evil", &[b"x"]).unwrap();
    let (bytes, _, _) = z.finish().unwrap();
    let fs = ZipFs::new(bytes, "evil.zip").unwrap();
    assert!(matches!(
        fs.read("runs/../../evil"),
        Err(StoreError::BadName { .. })
    ));
    let store = Store::open(fs).unwrap();
    assert!(
        store.runs().unwrap().is_empty(),
        "an escaping entry listed as a run"
    );
}

fn dev_full() -> bool {
    let ok = Path::new("/dev/full").exists();
    if !ok {
        eprintln!("skipped: /dev/full does not exist here");
    }
    ok
}

#[test]
fn a_full_disk_under_the_index_is_an_error() {
    if !dev_full() {
        return;
    }
    let root = temp_dir("full-index");
    let dir = root.join("runs/r/w");
    std::fs::create_dir_all(dir.join("blobs")).unwrap();
    std::os::unix::fs::symlink("/dev/full", dir.join("index.jsonl")).unwrap();
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    let err = r
        .record(&forward(0, 1, 16))
        .expect_err("a write to a full disk succeeded");
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    assert!(
        err.to_string().contains("index.jsonl"),
        "error does not name the file: {err}"
    );
    assert!(
        err.to_string().to_lowercase().contains("no space"),
        "error does not say the disk is full: {err}"
    );
}

#[test]
fn a_full_disk_under_a_blob_is_an_error_and_nothing_is_indexed() {
    if !dev_full() {
        return;
    }
    let root = temp_dir("full-blob");
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    // One pack per forward, so the next forward's pack can be a full disk.
    r.writer().set_pack_limit(1);
    r.record(&forward(0, 1, 16)).unwrap();
    let tmp = root.join("runs/r/w/packs/000001.pack");
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    let err = r
        .record(&forward(1, 1, 4096))
        .expect_err("a blob write to a full disk succeeded");
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    assert!(err.to_string().to_lowercase().contains("no space"), "{err}");
    let got = common::indexed(&root, "r");
    assert_eq!(
        got,
        [0],
        "the failed forward was indexed, or the earlier one lost"
    );
    std::fs::remove_file(&tmp).unwrap();
    r.record(&forward(1, 1, 16)).unwrap();
}

#[test]
fn a_full_disk_under_a_pipelined_blob_is_an_error_by_flush_at_the_latest() {
    if !dev_full() {
        return;
    }
    let root = temp_dir("full-pipelined");
    let mut r = Recorder::with_writer(&root, "r", "w")
        .unwrap()
        .pipelined(3)
        .unwrap();
    r.writer().set_pack_limit(1);
    r.record(&forward(0, 1, 16)).unwrap();
    r.flush().unwrap();
    let tmp = root.join("runs/r/w/packs/000001.pack");
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    let now = r.record(&forward(1, 1, 4096));
    let err = match now {
        Err(e) => e,
        Ok(_) => r
            .flush()
            .expect_err("a blob write to a full disk was never reported"),
    };
    assert!(err.to_string().to_lowercase().contains("no space"), "{err}");
    drop(r);
    let got = common::indexed(&root, "r");
    assert_eq!(got, [0], "the failed forward was indexed");
}

#[test]
fn a_small_blob_lost_with_a_pipelined_write_is_never_indexed() {
    if !dev_full() {
        return;
    }
    let root = temp_dir("full-pending");
    let mut r = Recorder::with_writer(&root, "r", "w")
        .unwrap()
        .pipelined(64)
        .unwrap();
    r.writer().set_pack_limit(1);
    r.record(&forward(0, 1, 16)).unwrap();
    r.flush().unwrap();
    std::os::unix::fs::symlink("/dev/full", root.join("runs/r/w/packs/000001.pack")).unwrap();
    // Forward 1 is small: it is accepted into the new pack and left pending for the syncer.
    // Forward 2, in the same pack, is too large to gather: its write, with forward 1's bytes
    // first (unless the syncer's went first), fails.
    let mut errors = Vec::new();
    errors.extend(r.record(&forward(1, 1, 16)).err());
    r.writer().set_pack_limit(1 << 30);
    errors.extend(r.record(&forward(2, 1, 100_000)).err());
    errors.extend(r.flush().err());
    assert!(
        !errors.is_empty(),
        "a write to a full disk was never reported"
    );
    drop(r);
    let got = common::indexed(&root, "r");
    assert_eq!(got, [0], "a forward whose bytes were lost was indexed");
}

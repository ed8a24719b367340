//! The store's listing (`listing.jsonl`, format 1.1): writers append to it, a reader that
//! cannot list folders (`ListedFs`) sees the same runs, writers and forwards through it, an
//! old store gets one on its next writer, and a store without one is refused with a message.

use crate::common;

use common::{forward, temp_dir};
use somatize::store::{snapshot, DirFs, ListedFs, Store, StoreFs, Writer, ZipFs};

fn write(root: &std::path::Path, run: &str, writer: &str, forwards: std::ops::Range<u64>) {
    let mut w = Writer::open(root, run, writer).unwrap();
    for f in forwards {
        w.append(&forward(f, 1, 8), Default::default()).unwrap();
    }
}

/// Runs, each run's writers, and each run's scanned (forward, writer) pairs.
type Seen = Vec<(String, Vec<String>, Vec<(u64, String)>)>;

fn seen<F: StoreFs>(store: &Store<F>) -> Seen {
    let mut out = Vec::new();
    for run in store.runs().unwrap() {
        let writers = store.writers(&run).unwrap();
        let scanned = store
            .scan(&run)
            .unwrap()
            .map(|i| i.map(|i| (i.entry.forward, i.writer.to_string())).unwrap())
            .collect();
        out.push((run, writers, scanned));
    }
    out
}

#[test]
fn listing_gives_the_same_runs_writers_and_forwards_as_folders() {
    let root = temp_dir("listing");
    write(&root, "tuesday", "w0", 0..3);
    write(&root, "tuesday", "w1", 1..4);
    write(&root, "monday", "w0", 0..2);
    // Reopening an existing writer does not list it twice.
    write(&root, "monday", "w0", 2..3);
    let lines = std::fs::read_to_string(root.join("listing.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 3, "listing lines: {lines}");
    let format = std::fs::read_to_string(root.join("somatize-store.json")).unwrap();
    assert!(format.contains("\"2.1\""), "format file: {format}");

    let dir = seen(&Store::open(DirFs::new(&root)).unwrap());
    let listed = seen(&Store::open(ListedFs::new(DirFs::new(&root))).unwrap());
    assert_eq!(listed, dir, "through the listing vs listing folders");
    assert_eq!(dir.len(), 2, "runs seen: {dir:?}");

    let snap = root.join("snap.zip");
    snapshot::export(&Store::open(DirFs::new(&root)).unwrap(), &[], None, &snap).unwrap();
    let zip = ZipFs::open(&snap).unwrap();
    let in_zip = String::from_utf8(zip.read("listing.jsonl").unwrap()).unwrap();
    assert_eq!(in_zip.lines().count(), 3, "snapshot listing: {in_zip}");
    let from_zip_listing = seen(&Store::open(ListedFs::new(zip)).unwrap());
    assert_eq!(from_zip_listing, dir, "a snapshot through its listing");
}

#[test]
fn an_old_store_gets_a_listing_from_its_next_writer() {
    let root = temp_dir("listing-old");
    write(&root, "a", "w0", 0..2);
    write(&root, "b", "w0", 0..2);
    // Make it a 1.0 store: no listing, version 1.0.
    std::fs::remove_file(root.join("listing.jsonl")).unwrap();
    std::fs::write(
        root.join("somatize-store.json"),
        r#"{"format":"somatize-store","version":"1.0"}"#,
    )
    .unwrap();
    let err = Store::open(ListedFs::new(DirFs::new(&root)))
        .unwrap()
        .runs()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("listing.jsonl") && err.contains("snapshot"),
        "error for a store without a listing: {err}"
    );
    // Folders still read.
    assert_eq!(
        Store::open(DirFs::new(&root)).unwrap().runs().unwrap(),
        ["a", "b"]
    );
    write(&root, "b", "w0", 2..3);
    let listed = seen(&Store::open(ListedFs::new(DirFs::new(&root))).unwrap());
    let dir = seen(&Store::open(DirFs::new(&root)).unwrap());
    assert_eq!(listed, dir, "listing backfilled from the folders");
    let format = std::fs::read_to_string(root.join("somatize-store.json")).unwrap();
    assert!(format.contains("\"2.1\""), "format raised to 2.1: {format}");
}

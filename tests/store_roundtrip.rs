//! The store end to end: record, scan, fetch, last N, snapshot export and reading it back,
//! and the bad inputs readers must report (newer format, bad lines, corrupt or missing blobs).

use crate::common;

use common::{forward, temp_dir, values};
use somatize::record::{probe, Recorder};
use somatize::store::{snapshot, DirFs, Field, Store, StoreError, StoreFs, ZipFs};
use somatize::tensor::TensorData;

fn record_run(root: &std::path::Path, run: &str, writer: &str, forwards: u64) {
    let mut r = Recorder::with_writer(root, run, writer)
        .unwrap()
        .summarising(["loss"]);
    for f in 0..forwards {
        r.record(&forward(f, 2, 64)).unwrap();
    }
}

fn check_reads<F: StoreFs>(store: &Store<F>, run: &str, forwards: u64) {
    check_reads_from(store, run, 0..forwards);
}

/// The run holds exactly `forwards`, each scanned and fetched with what it was given.
fn check_reads_from<F: StoreFs>(store: &Store<F>, run: &str, forwards: std::ops::Range<u64>) {
    let items: Vec<_> = store.scan(run).unwrap().collect::<Result<_, _>>().unwrap();
    let got: Vec<u64> = items.iter().map(|i| i.entry.forward).collect();
    assert_eq!(got, forwards.collect::<Vec<_>>(), "forwards scanned");
    for item in &items {
        let f = item.entry.forward;
        let loss = item.entry.field("loss.value").and_then(Field::as_f64);
        assert_eq!(
            loss,
            Some(1.0 / (f as f64 + 1.0)),
            "loss.value of forward {f}"
        );
        let blob = store.fetch(run, &item.writer, &item.entry).unwrap();
        let facts = blob.facts().unwrap();
        assert_eq!(facts[0].node, "fc1", "first fact of forward {f}");
        assert_eq!(facts[0].took_us, 10 + f);
        assert_eq!(blob.stats().unwrap()["fc1"]["l2"].0, f as f64);
        let t = blob.tensor("act.layer1").unwrap().unwrap();
        assert_eq!(
            t.data,
            TensorData::F32(values(f, 1, 64)),
            "tensor of forward {f}"
        );
    }
}

#[test]
fn recorded_forwards_scan_and_fetch_back() {
    let root = temp_dir("roundtrip");
    record_run(&root, "tuesday", "w0", 20);
    let store = Store::open(DirFs::new(&root)).unwrap();
    assert_eq!(store.runs().unwrap(), ["tuesday"]);
    assert_eq!(store.writers("tuesday").unwrap(), ["w0"]);
    check_reads(&store, "tuesday", 20);
    let last: Vec<u64> = store
        .last("tuesday", 5, &mut |e| panic!("{e}"))
        .unwrap()
        .iter()
        .map(|i| i.entry.forward)
        .collect();
    assert_eq!(last, [15, 16, 17, 18, 19], "last 5");
    let found = store.find("tuesday", 7).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].entry.forward, 7);
    assert!(store.find("tuesday", 99).unwrap().is_empty());
}

#[test]
fn last_n_reads_backwards_across_chunks() {
    // Lines long enough that 1 MiB chunks split lines: last() must stitch them.
    let root = temp_dir("last");
    let mut r = Recorder::with_writer(&root, "r", "w")
        .unwrap()
        .summarising(["loss"]);
    for f in 0..3000u64 {
        let mut rec = forward(f, 0, 0);
        rec.facts[1].extra.insert(
            "note".into(),
            serde_json::Value::String("x".repeat((f % 700) as usize)),
        );
        rec.facts[1]
            .extra
            .insert("value".into(), serde_json::json!(f));
        r.writer().durable = false;
        r.record(&rec).unwrap();
    }
    let store = Store::open(DirFs::new(&root)).unwrap();
    for n in [0usize, 1, 7, 1500, 2999, 3000, 5000] {
        let got: Vec<u64> = store
            .last("r", n, &mut |e| panic!("{e}"))
            .unwrap()
            .iter()
            .map(|i| i.entry.forward)
            .collect();
        let want: Vec<u64> = (3000u64.saturating_sub(n as u64)..3000).collect();
        assert_eq!(got, want, "last {n}");
    }
}

#[test]
fn snapshots_read_like_the_folder() {
    let root = temp_dir("snapshot");
    record_run(&root, "a", "w0", 12);
    record_run(&root, "b", "w0", 3);
    let store = Store::open(DirFs::new(&root)).unwrap();
    let out = root.join("snap.zip");
    let sum = snapshot::export(&store, &["a".into()], None, &out).unwrap();
    assert_eq!((sum.runs, sum.forwards, sum.blobs), (1, 12, 12));
    let snap = Store::open(ZipFs::open(&out).unwrap()).unwrap();
    assert_eq!(snap.runs().unwrap(), ["a"], "only the exported run");
    check_reads(&snap, "a", 12);
    let bytes = std::fs::read(&out).unwrap();
    let mem = Store::open(ZipFs::new(bytes, "snap.zip").unwrap()).unwrap();
    check_reads(&mem, "a", 12);

    let last = root.join("last.zip");
    snapshot::export(&store, &["a".into()], Some(4), &last).unwrap();
    let snap = Store::open(ZipFs::open(&last).unwrap()).unwrap();
    let got: Vec<u64> = snap
        .scan("a")
        .unwrap()
        .map(|i| i.unwrap().entry.forward)
        .collect();
    assert_eq!(got, [8, 9, 10, 11], "--last 4 keeps the last four");
    // The four blobs in one pack of their own, nothing else.
    let packs = snap.fs().list("runs/a/w0/packs").unwrap();
    assert_eq!(packs, ["000000.pack"], "--last 4 packs");
    let four: u64 = snap
        .scan("a")
        .unwrap()
        .map(|i| i.unwrap().entry.len.unwrap())
        .sum();
    let pack_len = snap.fs().len("runs/a/w0/packs/000000.pack").unwrap();
    assert_eq!(
        pack_len, four,
        "--last 4 carries {pack_len} bytes of blobs, the four are {four}"
    );
    check_reads_from(&snap, "a", 8..12);
}

#[test]
fn a_newer_format_is_refused_with_a_clear_message() {
    let root = temp_dir("newer");
    std::fs::write(
        root.join("somatize-store.json"),
        r#"{"format":"somatize-store","version":"3.0"}"#,
    )
    .unwrap();
    let err = Store::open(DirFs::new(&root))
        .err()
        .expect("opened a 3.0 store");
    assert!(matches!(err, StoreError::NewerFormat { .. }), "{err}");
    assert!(err.to_string().contains("3.0"), "message: {err}");
    let err = Recorder::new(&root, "r")
        .err()
        .expect("wrote into a 3.0 store");
    assert!(matches!(err, StoreError::NewerFormat { .. }), "{err}");
    let empty = temp_dir("empty");
    assert!(matches!(
        Store::open(DirFs::new(&empty)),
        Err(StoreError::NotAStore { .. })
    ));
}

#[test]
fn bad_lines_and_bad_blobs_are_reported_and_the_rest_reads() {
    let root = temp_dir("bad");
    record_run(&root, "r", "w", 6);
    let dir = root.join("runs/r/w");
    // A line that is not JSON, between forwards 5 and 6.
    let mut index = std::fs::read_to_string(dir.join("index.jsonl")).unwrap();
    index.push_str("this is not json\n");
    std::fs::write(dir.join("index.jsonl"), &index).unwrap();
    record_run_more(&root, 6, 8);
    let store = Store::open(DirFs::new(&root)).unwrap();
    // Forward 2's blob corrupted in the first pack (forwards 0-5); the second pack (6, 7),
    // written by the reopened writer, removed.
    let e2 = store.find("r", 2).unwrap().remove(0).entry;
    let pack = dir.join(e2.blob.as_deref().unwrap());
    let mut bytes = std::fs::read(&pack).unwrap();
    let mid = (e2.offset.unwrap() + e2.len.unwrap() / 2) as usize;
    bytes[mid] ^= 0xff;
    std::fs::write(&pack, bytes).unwrap();
    std::fs::remove_file(dir.join("packs/000001.pack")).unwrap();

    let mut good = Vec::new();
    let mut errors = Vec::new();
    for item in store.scan("r").unwrap() {
        match item {
            Ok(i) => good.push(i),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(good.len(), 8, "forwards read around the bad line");
    assert_eq!(errors.len(), 1, "errors {errors:?}");
    assert!(
        errors[0].contains("\"r\"") && errors[0].contains("line 7"),
        "{}",
        errors[0]
    );
    let fetch = |f: u64| store.fetch("r", "w", &good[f as usize].entry);
    assert!(matches!(
        fetch(2),
        Err(StoreError::BlobChecksum { forward: 2, .. })
    ));
    assert!(fetch(3).is_ok(), "forward after the bad one, same pack");
    assert!(fetch(5).is_ok(), "last forward of the first pack");
    assert!(matches!(fetch(6), Err(StoreError::NotFound { .. })));
    assert!(matches!(fetch(7), Err(StoreError::NotFound { .. })));
}

fn record_run_more(root: &std::path::Path, from: u64, to: u64) {
    let mut r = Recorder::with_writer(root, "r", "w")
        .unwrap()
        .summarising(["loss"]);
    for f in from..to {
        r.record(&forward(f, 2, 64)).unwrap();
    }
}

#[test]
fn forwards_must_increase_per_writer() {
    let root = temp_dir("order");
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    r.record(&forward(5, 0, 0)).unwrap();
    for f in [5, 4] {
        let err = r.record(&forward(f, 0, 0)).unwrap_err();
        assert!(
            matches!(err, StoreError::Refused { .. }),
            "forward {f}: {err}"
        );
    }
    r.record(&forward(6, 0, 0)).unwrap();
}

#[test]
fn a_probe_is_forward_zero_of_its_run() {
    let root = temp_dir("probe");
    probe(&root, "abcdef0123456789", &forward(41, 1, 8)).unwrap();
    let store = Store::open(DirFs::new(&root)).unwrap();
    let items: Vec<_> = store
        .scan("abcdef0123456789")
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].entry.forward, 0);
    let blob = store
        .fetch("abcdef0123456789", &items[0].writer, &items[0].entry)
        .unwrap();
    assert_eq!(blob.meta().unwrap().forward, 0);
}

#[test]
fn readings_and_exit_records_read_back() {
    let root = temp_dir("readings");
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    r.record(&forward(0, 0, 0)).unwrap();
    for busy in [0.25, 0.5] {
        r.reading(somatize::store::Reading {
            busy: Some(busy),
            ..Default::default()
        })
        .unwrap();
    }
    r.finish(&somatize::store::ExitRecord {
        ok: true,
        code: Some(0),
        forwards: 1,
        ..Default::default()
    })
    .unwrap();
    let store = Store::open(DirFs::new(&root)).unwrap();
    let mut got = Vec::new();
    store
        .for_each_reading("r", "w", &mut |r| got.push(r), &mut |e| panic!("{e}"))
        .unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].served, Some(1), "served counts forwards written");
    assert!(got[1].up_us.is_some() && !got[1].machine.is_empty());
    let newest = store.newest_reading("r", "w").unwrap().unwrap();
    assert_eq!(newest.busy, Some(0.5));
    assert!(store.exit("r", "w").unwrap().unwrap().ok);
}

#[test]
fn pipelined_recording_indexes_in_order() {
    let root = temp_dir("pipelined");
    let mut r = Recorder::with_writer(&root, "p", "w0")
        .unwrap()
        .summarising(["loss"])
        .pipelined(3)
        .unwrap();
    for f in 0..25 {
        r.record(&forward(f, 2, 64)).unwrap();
    }
    r.flush().unwrap();
    assert_eq!(r.writer().last_forward(), Some(24));
    drop(r);
    let store = Store::open(DirFs::new(&root)).unwrap();
    check_reads(&store, "p", 25);
}

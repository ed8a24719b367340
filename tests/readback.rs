//! Reading a record back: stores written with the real `Recorder` (a run with facts from two
//! machines, a call between them, a broken forward and a forward killed in flight; a run whose
//! loss is not summarised; a damaged run), read through `somatize::readback`, the figures and
//! the CLI. No fixtures from ../shared are needed: every store is made here.

use crate::common;

use common::temp_dir;
use serde_json::{json, Value};
use somatize::figures::{gantt, machines, progress, spent, ALARM};
use somatize::readback::{self, Cost, Live, LiveOptions, ReadbackError};
use somatize::record::Recorder;
use somatize::store::{
    snapshot, DirFs, ExitRecord, Fact, ForwardRecord, Reading, Store, StoreError, StoreFs, ZipFs,
};
use std::cell::Cell;
use std::path::{Path, PathBuf};

/// The base of the fake epoch the readings are written at.
const T0: i64 = 1_764_500_000_000_000;

fn fact(node: &str, kind: &str, began: i64, took: u64, place: &str) -> Fact {
    let mut f = Fact::new(node, kind);
    f.began_us = began;
    f.took_us = took;
    f.where_ = place.into();
    f
}

/// Forward `n` of the two-machine run: `block` is a call to w1 whose slice (attn, mlp) is
/// timed on w1's clock from 1000 µs; `head` is read back on odd forwards and fails on 3.
fn two_machine_facts(n: u64) -> Vec<Fact> {
    let mut call = fact("block", "Remote", 100, 500, "local");
    call.extra.insert("calls".into(), json!("w1"));
    let mut head = fact("head", "Linear", 600, 50, "local");
    head.read_back = n % 2 == 1;
    if n == 3 {
        head.error = Some("out of memory".into());
    }
    let mut loss = Fact::loss(1.0 / (n as f64 + 1.0));
    loss.began_us = 650;
    loss.took_us = 5;
    vec![
        fact("embed", "Embedding", 0, 100, "local"),
        call,
        fact("attn", "Attention", 1000, 200, "w1"),
        fact("mlp", "Linear", 1050, 250, "w1"),
        head,
        loss,
    ]
}

fn fast(mut r: Recorder) -> Recorder {
    r.writer().durable = false;
    r
}

fn reading(machine: &str, at: i64, busy: f64) -> Reading {
    Reading {
        written_us: at,
        machine: machine.into(),
        busy: Some(busy),
        memory: Some(1 << 30),
        cores: Some(8),
        up_us: Some(5_000_000),
        served: Some(6),
    }
}

/// A store with run `two` (writers `home` and `w1`) and run `plain` (loss not summarised).
fn build_store(root: &Path) {
    let mut home = fast(
        Recorder::with_writer(root, "two", "home")
            .unwrap()
            .summarising(["loss"]),
    );
    let mut w1 = fast(Recorder::with_writer(root, "two", "w1").unwrap());
    for n in 0..6 {
        let rec = ForwardRecord {
            forward: n,
            facts: two_machine_facts(n),
            ..Default::default()
        };
        home.record(&rec).unwrap();
    }
    home.broke(6, "the command was killed by signal 9").unwrap();
    home.writer()
        .append_reading(&reading("home-host", T0, 0.9))
        .unwrap();
    w1.writer()
        .append_reading(&reading("w1", T0 - 4_000_000, 0.1))
        .unwrap();
    w1.writer()
        .append_reading(&reading("w1", T0 - 3_000_000, 0.5))
        .unwrap();
    let ok = ExitRecord {
        written_us: T0,
        ok: true,
        forwards: 6,
        ..Default::default()
    };
    home.finish(&ok).unwrap();
    w1.finish(&ok).unwrap();
    drop((home, w1));
    let mut plain = fast(Recorder::with_writer(root, "plain", "solo").unwrap());
    for n in 0..5 {
        let mut loss = Fact::loss(10.0 - n as f64);
        loss.began_us = 20;
        loss.took_us = 3;
        let rec = ForwardRecord {
            forward: n,
            facts: vec![fact("fc", "Linear", 0, 10 + n, "local"), loss],
            ..Default::default()
        };
        plain.record(&rec).unwrap();
    }
}

fn open(root: &Path) -> Store<DirFs> {
    Store::open(DirFs::new(root)).unwrap()
}

fn store_with_runs(name: &str) -> PathBuf {
    let root = temp_dir(name);
    build_store(&root);
    root
}

#[test]
fn runs_are_listed_newest_last_from_the_indexes() {
    let root = store_with_runs("rb-runs");
    let a = readback::runs(&open(&root)).unwrap();
    assert!(a.skipped.is_empty(), "skipped {:?}", a.skipped);
    let names: Vec<&str> = a.rows.iter().map(|r| r.run.as_str()).collect();
    assert_eq!(names, ["two", "plain"], "runs, newest last");
    let two = &a.rows[0];
    assert_eq!(
        (two.writers, two.forwards, two.broke),
        (2, 7, 2),
        "two: writers, forwards, broke (forward 3 failed, 6 was killed)"
    );
    assert_eq!(two.ended_ok, Some(true));
    assert_eq!(a.rows[1].ended_ok, None, "plain has no exit record");
    let fw = readback::forwards(&open(&root), "two").unwrap().rows;
    let took: u64 = fw.iter().map(|r| r.took_us).sum();
    assert_eq!(two.took_us, took, "runs took_us is the forwards' sum");
    assert_eq!(two.first_written_us, fw.first().map(|r| r.written_us));
    assert_eq!(two.last_written_us, fw.last().map(|r| r.written_us));
}

#[test]
fn forwards_carry_summarised_fields_as_text() {
    let root = store_with_runs("rb-fw");
    let a = readback::forwards(&open(&root), "two").unwrap();
    assert_eq!(a.rows.len(), 7);
    let fields: Vec<(&str, String)> = a.rows[1]
        .fields
        .iter()
        .map(|(k, v)| (k.as_ref(), v.to_text()))
        .collect();
    assert_eq!(fields, [("loss.value", "0.5".to_string())]);
    assert!(a.rows[3].broke && a.rows[3].error.as_deref() == Some("head: out of memory"));
    assert!(a.rows[6].broke && a.rows[6].fields.is_empty());
    let v = serde_json::to_value(&a.rows[1]).unwrap();
    assert_eq!(v["loss.value"], "0.5", "row JSON {v}");
    assert_eq!(v["writer"], "home");
    assert!(matches!(
        readback::forwards(&open(&root), "nope"),
        Err(ReadbackError::NoSuchRun { .. })
    ));
}

#[test]
fn curves_scan_when_summarised_and_fetch_otherwise() {
    let root = store_with_runs("rb-curve");
    let s = open(&root);
    type Case = (&'static str, &'static str, Cost, Vec<(u64, f64)>);
    let table: &[Case] = &[
        (
            "two",
            "loss.value",
            Cost::Scan,
            (0..6).map(|n| (n, 1.0 / (n as f64 + 1.0))).collect(),
        ),
        (
            "plain",
            "loss.value",
            Cost::Fetch,
            (0..5).map(|n| (n, 10.0 - n as f64)).collect(),
        ),
        (
            "plain",
            "Linear.took_us",
            Cost::Fetch,
            (0..5).map(|n| (n, 10.0 + n as f64)).collect(),
        ),
        ("two", "absent.value", Cost::Fetch, vec![]),
    ];
    for (run, of, cost, want) in table {
        let got_cost = readback::curve_costs(&s, run, of).unwrap();
        assert_eq!(got_cost, *cost, "curve_costs({run}, {of})");
        let got: Vec<(u64, f64)> = readback::curve(&s, run, of)
            .unwrap()
            .rows
            .iter()
            .map(|p| (p.forward, p.value))
            .collect();
        assert_eq!(&got, want, "curve({run}, {of})");
    }
    let json =
        serde_json::to_value(readback::curve(&s, "two", "loss.value").unwrap().rows).unwrap();
    assert_eq!(json[1], json!([1, 0.5]), "points are [forward, value]");
}

#[test]
fn facts_come_back_in_arrival_order_or_none() {
    let root = store_with_runs("rb-facts");
    let s = open(&root);
    assert_eq!(
        readback::facts(&s, "two", 2).unwrap(),
        Some(two_machine_facts(2))
    );
    assert_eq!(readback::facts(&s, "two", 99).unwrap(), None);
    assert_eq!(
        readback::facts(&s, "two", 6).unwrap(),
        Some(vec![]),
        "a forward killed in flight exists but has no facts"
    );
}

#[test]
fn nodes_add_up_per_node_and_place() {
    let root = store_with_runs("rb-nodes");
    let s = open(&root);
    let rows = readback::nodes(&s, "two", None).unwrap().rows;
    let got: Vec<(&str, &str, u64, u64, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r.node.as_str(),
                r.where_.as_str(),
                r.ran,
                r.read_back,
                r.failed,
                r.total_us,
            )
        })
        .collect();
    let want = [
        ("embed", "local", 6, 0, 0, 600),
        ("block", "local", 6, 0, 0, 3000),
        ("attn", "w1", 6, 0, 0, 1200),
        ("mlp", "w1", 6, 0, 0, 1500),
        ("head", "local", 3, 3, 1, 150),
        ("loss", "local", 6, 0, 0, 30),
    ];
    assert_eq!(got, want, "(node, where, ran, read back, failed, total_us)");
    assert_eq!(rows[0].mean_us, 100.0);
    // Forwards 5 and 6 are the last two; 6 has no blob, so only 5 is read.
    let last = readback::nodes(&s, "two", Some(2)).unwrap();
    assert!(last.skipped.is_empty());
    assert_eq!(last.rows[0].ran, 1, "nodes(last=2) read {:?}", last.rows);
}

#[test]
fn fleet_is_the_inverse_of_nodes_with_readings_and_waiting() {
    let root = store_with_runs("rb-fleet");
    let rows = readback::fleet(&open(&root), "two", None).unwrap().rows;
    assert_eq!(rows.len(), 2, "machines {rows:?}");
    let local = &rows[0];
    assert_eq!(local.machine, "local");
    assert_eq!(local.nodes, ["embed", "head", "loss"]);
    assert_eq!((local.ran, local.read_back, local.working_us), (15, 3, 780));
    assert_eq!((local.round_trip_us, local.waiting_us), (None, None));
    assert_eq!(
        local.busy, None,
        "no reading is from a machine called local"
    );
    let w1 = &rows[1];
    assert_eq!(w1.nodes, ["attn", "mlp"]);
    assert_eq!(
        (w1.calls, w1.round_trip_us, w1.working_us, w1.waiting_us),
        (6, Some(3000), 2700, Some(300))
    );
    assert_eq!(
        (w1.busy, w1.cores, w1.reading_written_us),
        (Some(0.5), Some(8), Some(T0 - 3_000_000)),
        "the newest of w1's readings"
    );
}

#[test]
fn standing_measures_quiet_writer_against_writer() {
    let root = store_with_runs("rb-standing");
    let st = readback::standing(&open(&root)).unwrap();
    let got: Vec<(&str, f64, Option<f64>)> = st
        .values()
        .map(|r| (r.machine.as_str(), r.quiet_s, r.busy))
        .collect();
    assert_eq!(got, [("home-host", 0.0, Some(0.9)), ("w1", 3.0, Some(0.5))]);
    assert_eq!(st["w1"].writer, "w1");
}

fn figure_json(f: &somatize::figures::Figure) -> Value {
    f.to_value()
}

fn no_alarm_and_titled(v: &Value, axes: &[&str]) {
    let text = v.to_string();
    assert!(
        !text.contains(ALARM),
        "a neutral figure uses the alarm colour"
    );
    for a in axes {
        let t = v["layout"][a]["title"]["text"].as_str().unwrap_or("");
        assert!(!t.is_empty(), "{a} has no title in {}", v["layout"]);
    }
}

#[test]
fn progress_draws_the_curve_the_time_and_the_breaks() {
    let root = store_with_runs("rb-progress");
    let s = open(&root);
    let opts = LiveOptions {
        smooth: 3,
        ..Default::default()
    };
    let fig = progress::progress(&s, "two", opts).unwrap().rows.to_value();
    no_alarm_and_titled(&fig, &["xaxis", "yaxis", "yaxis2"]);
    let loss = &fig["data"][0];
    assert_eq!(loss["x"], json!([0, 1, 2, 3, 4, 5, 6]));
    let want: Vec<Value> = (0..6)
        .map(|n| json!(1.0 / (n as f64 + 1.0)))
        .chain([Value::Null])
        .collect();
    assert_eq!(loss["y"], Value::Array(want), "loss per forward");
    let mean = &fig["data"][1];
    assert_eq!(mean["name"], "rolling mean of 3");
    let m2 = (1.0 + 0.5 + 1.0 / 3.0) / 3.0;
    assert!(
        (mean["y"][2].as_f64().unwrap() - m2).abs() < 1e-12,
        "{}",
        mean["y"]
    );
    let time = &fig["data"][2];
    assert_eq!(time["yaxis"], "y2");
    let took: Vec<Value> = readback::forwards(&s, "two")
        .unwrap()
        .rows
        .iter()
        .map(|r| json!(r.took_us as f64 / 1000.0))
        .collect();
    assert_eq!(time["y"], Value::Array(took));
    let broke = &fig["data"][3];
    assert_eq!(broke["x"], json!([3, 6]), "broken forwards marked");
    assert!(broke["text"][1].as_str().unwrap().contains("signal 9"));
    // The fetched path draws the same picture as the index would.
    let plain = progress::progress(&s, "plain", LiveOptions::default())
        .unwrap()
        .rows
        .to_value();
    assert_eq!(plain["data"][0]["y"], json!([10.0, 9.0, 8.0, 7.0, 6.0]));
}

#[test]
fn live_fed_a_run_draws_what_progress_draws() {
    let root = store_with_runs("rb-live");
    let s = open(&root);
    for (run, smooth) in [("two", 3), ("two", 0), ("plain", 2)] {
        let opts = LiveOptions {
            title: progress::title(run),
            smooth,
            ..Default::default()
        };
        let want = progress::progress(&s, run, opts.clone()).unwrap().rows;
        // Index lines as they are appended (they carry the loss only when it is summarised).
        if run == "two" {
            let mut live = Live::new(opts.clone());
            for item in s.scan(run).unwrap() {
                live.entry(&item.unwrap().entry);
            }
            assert_eq!(
                progress::live(&mut live),
                want,
                "{run}: Live fed index lines"
            );
        }
        // Facts as they arrive (a run with no sender-given times and no killed forward).
        if run == "plain" {
            let mut live = Live::new(opts);
            for n in 0..5 {
                for f in readback::facts(&s, run, n).unwrap().unwrap() {
                    live.fact(n, &f);
                }
            }
            assert_eq!(
                progress::live(&mut live),
                want,
                "{run}: Live fed facts (last one still open)"
            );
        }
    }
}

#[test]
fn live_keeps_a_compact_row_per_forward_and_draws_at_most_cap_points() {
    let opts = LiveOptions {
        cap: 64,
        smooth: 10,
        ..Default::default()
    };
    let mut live = Live::new(opts);
    for n in 0..100_000u64 {
        let mut e: somatize::store::IndexEntry = serde_json::from_value(json!({
            "forward": n, "written_us": n, "took_us": 10, "broke": n % 1000 == 0,
            "fields": {"loss.value": n as f64}
        }))
        .unwrap();
        e.error = e.broke.then(|| "x".repeat(10_000));
        live.entry(&e);
    }
    let t = live.tally();
    // One row per forward (and one per broken forward), each a few numbers: bounded by the
    // forwards seen, not by what they carried (10 kB of error text each broke).
    assert_eq!(t.held(), 100_000 + 100);
    assert_eq!(somatize::readback::live::ROW_BYTES, 32);
    assert!(
        t.held_bytes() <= 2 * 100_000 * 32 + 2 * 100 * 24,
        "held {} bytes",
        t.held_bytes()
    );
    let (seen, stride) = t.seen();
    assert_eq!(seen, 100_000);
    // The smallest power of two drawing fewer than 64 points.
    assert_eq!(stride, 2048);
    assert_eq!(t.rows().count(), 49);
    assert_eq!(t.all_rows().count(), 100_000);
    let xs: Vec<u64> = t.rows().map(|r| r.forward).collect();
    assert!(
        xs.iter().all(|x| x % stride == 0),
        "rows kept at stride {stride}: {xs:?}"
    );
    // The rolling mean is over every forward, not over the rows kept.
    let last = t.rows().last().unwrap();
    let want = (0..10).map(|k| (last.forward - k) as f64).sum::<f64>() / 10.0;
    assert_eq!(last.smoothed, Some(want));
    assert!(t.broken().all(|r| r.error.as_ref().unwrap().len() < 300));
    let fig = progress::live(&mut live).to_value();
    assert!(fig["layout"]["title"]["text"]
        .as_str()
        .unwrap()
        .contains("of 100000 forwards drawn"));
}

#[test]
fn gantt_aligns_the_other_machine_under_its_call() {
    let root = store_with_runs("rb-gantt");
    let s = open(&root);
    let fig = gantt::gantt(&s, "two", 2).unwrap().to_value();
    no_alarm_and_titled(&fig, &["xaxis", "yaxis"]);
    let traces = fig["data"].as_array().unwrap();
    assert_eq!(traces.len(), 2, "one trace per place");
    let bar = |trace: &Value, node: &str| -> (f64, f64) {
        let i = trace["y"]
            .as_array()
            .unwrap()
            .iter()
            .position(|y| y == node)
            .unwrap();
        (
            trace["base"][i].as_f64().unwrap(),
            trace["x"][i].as_f64().unwrap(),
        )
    };
    // The slice started at 1000 µs on w1's clock; its call began at 100 µs here.
    let table = [
        (0, "embed", (0.0, 0.1)),
        (0, "block", (0.1, 0.5)),
        (1, "attn", (0.1, 0.2)),
        (1, "mlp", (0.15, 0.25)),
        (0, "loss", (0.65, 0.005)),
    ];
    for (t, node, want) in table {
        assert_eq!(bar(&traces[t], node), want, "{node}: (start ms, length ms)");
    }
    let (a, m) = (bar(&traces[1], "attn"), bar(&traces[1], "mlp"));
    assert!(
        m.0 < a.0 + a.1,
        "attn and mlp ran at once and their bars overlap"
    );
    assert_eq!(fig["layout"]["barmode"], "overlay");
    assert!(matches!(
        gantt::gantt(&s, "two", 99),
        Err(ReadbackError::NoSuchForward { forward: 99, .. })
    ));
    // A call sent after its slice, and a second call to w1 with its own slice.
    let mut facts = two_machine_facts(0);
    facts.swap(1, 3); // embed, mlp, attn, block(call): the slice came first
    let mut call2 = fact("block2", "Remote", 2000, 300, "local");
    call2.extra.insert("calls".into(), json!("w1"));
    facts.push(call2);
    facts.push(fact("ffn", "Linear", 7000, 100, "w1"));
    facts.push(fact("ffn2", "Linear", 7040, 10, "w1"));
    let at = gantt::starts(&facts);
    let got: Vec<(&str, i64)> = facts.iter().map(|f| f.node.as_str()).zip(at).collect();
    assert_eq!(
        got,
        [
            ("embed", 0),
            ("mlp", 150),
            ("attn", 100),
            ("block", 100),
            ("head", 600),
            ("loss", 650),
            ("block2", 2000),
            ("ffn", 2000),
            ("ffn2", 2040),
        ],
        "(node, start µs on the caller's timeline)"
    );
}

#[test]
fn spent_and_machines_draw_nodes_and_fleet() {
    let root = store_with_runs("rb-spent");
    let s = open(&root);
    let fig = spent::spent(&s, "two", None).unwrap().rows.to_value();
    no_alarm_and_titled(&fig, &["xaxis", "yaxis"]);
    let names: Vec<&str> = fig["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["local", "w1"], "bars coloured by where");
    assert_eq!(fig["data"][1]["x"], json!(["attn", "mlp"]));
    assert_eq!(fig["data"][1]["y"], json!([1.2, 1.5]));
    let fig = machines::machines(&s, "two", None).unwrap().rows.to_value();
    no_alarm_and_titled(&fig, &["xaxis", "yaxis"]);
    assert_eq!(fig["data"][0]["x"], json!(["local", "w1"]));
    assert_eq!(fig["data"][0]["y"], json!([0.78, 2.7]), "working ms");
    assert_eq!(fig["data"][1]["y"], json!([0.0, 0.3]), "waited-on ms");
}

#[test]
fn a_snapshot_reads_as_the_folder_does() {
    let root = store_with_runs("rb-snap");
    let s = open(&root);
    let zip = root.with_extension("zip");
    snapshot::export(&s, &[], None, &zip).unwrap();
    let z = Store::open(ZipFs::open(&zip).unwrap()).unwrap();
    assert_eq!(
        readback::runs(&z).unwrap().rows,
        readback::runs(&s).unwrap().rows
    );
    assert_eq!(
        readback::forwards(&z, "two").unwrap().rows,
        readback::forwards(&s, "two").unwrap().rows
    );
    assert_eq!(
        readback::nodes(&z, "two", None).unwrap().rows,
        readback::nodes(&s, "two", None).unwrap().rows
    );
    assert_eq!(
        readback::fleet(&z, "two", None).unwrap().rows,
        readback::fleet(&s, "two", None).unwrap().rows
    );
    assert_eq!(
        readback::standing(&z).unwrap(),
        readback::standing(&s).unwrap()
    );
}

/// A store's file access that counts blob reads and the bytes read of everything else.
struct Counting<F> {
    inner: F,
    blob_reads: Cell<usize>,
    bytes: Cell<u64>,
}

/// A blob file (format 1.x, snapshots) or a pack (format 2).
fn is_blob(path: &str) -> bool {
    path.ends_with(".npz") || path.ends_with(".pack")
}

impl<F> Counting<F> {
    fn count_bytes(&self, path: &str, b: &[u8]) {
        if !is_blob(path) {
            self.bytes.set(self.bytes.get() + b.len() as u64);
        }
    }
}

impl<F: StoreFs> StoreFs for Counting<F> {
    fn list(&self, dir: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list(dir)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, StoreError> {
        if is_blob(path) {
            self.blob_reads.set(self.blob_reads.get() + 1);
        }
        let b = self.inner.read(path)?;
        self.count_bytes(path, &b);
        Ok(b)
    }
    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        if is_blob(path) {
            self.blob_reads.set(self.blob_reads.get() + 1);
        }
        let b = self.inner.read_range(path, offset, len)?;
        self.count_bytes(path, &b);
        Ok(b)
    }
    fn len(&self, path: &str) -> Result<u64, StoreError> {
        self.inner.len(path)
    }
}

#[test]
fn last_n_touches_n_blobs_and_index_reads_touch_none() {
    let root = temp_dir("rb-long");
    let mut r = fast(
        Recorder::with_writer(&root, "long", "w")
            .unwrap()
            .summarising(["loss"]),
    );
    const N: u64 = 12_000;
    for n in 0..N {
        let rec = ForwardRecord {
            forward: n,
            facts: two_machine_facts(n + 10),
            ..Default::default()
        };
        r.record(&rec).unwrap();
    }
    drop(r);
    let index_len = std::fs::metadata(root.join("runs/long/w/index.jsonl"))
        .unwrap()
        .len();
    let s = Store::open(Counting {
        inner: DirFs::new(&root),
        blob_reads: Cell::new(0),
        bytes: Cell::new(0),
    })
    .unwrap();
    let count = |what: &str, f: &dyn Fn()| {
        s.fs().blob_reads.set(0);
        s.fs().bytes.set(0);
        f();
        let got = (s.fs().blob_reads.get(), s.fs().bytes.get());
        eprintln!("{what}: {} blob reads, {} bytes", got.0, got.1);
        got
    };
    let (blobs, bytes) = count("nodes(last=100)", &|| {
        let a = readback::nodes(&s, "long", Some(100)).unwrap();
        assert_eq!(a.rows[0].ran, 100);
    });
    assert_eq!(blobs, 100, "nodes(last=100) read {blobs} blobs");
    // The index is read backwards one chunk at a time: one chunk here, whatever the run's length.
    assert!(
        index_len > 2 * (1 << 20) && bytes <= (1 << 20) + 65_536,
        "nodes(last=100) read {bytes} bytes besides blobs; the index is {index_len}"
    );
    // One forward: a bisection of the index and one blob.
    for n in [0, 1, 5_999, 6_000, N - 1] {
        let (blobs, bytes) = count("facts", &|| {
            assert_eq!(
                readback::facts(&s, "long", n).unwrap(),
                Some(two_machine_facts(n + 10)),
                "facts of forward {n}"
            );
        });
        assert_eq!(blobs, 1);
        assert!(
            bytes < 200_000,
            "facts({n}) read {bytes} bytes of the index"
        );
    }
    assert_eq!(readback::facts(&s, "long", N).unwrap(), None);
    let (blobs, _) = count("fleet(last=7)", &|| {
        readback::fleet(&s, "long", Some(7)).unwrap();
    });
    assert_eq!(blobs, 7);
    for (what, f) in [
        (
            "runs",
            &(|| {
                readback::runs(&s).unwrap();
            }) as &dyn Fn(),
        ),
        ("forwards", &|| {
            readback::forwards(&s, "long").unwrap();
        }),
        ("curve", &|| {
            assert_eq!(
                readback::curve(&s, "long", "loss.value")
                    .unwrap()
                    .rows
                    .len(),
                N as usize
            );
        }),
        ("standing", &|| {
            readback::standing(&s).unwrap();
        }),
    ] {
        let (blobs, bytes) = count(what, f);
        assert_eq!(blobs, 0, "{what} read blobs");
        assert!(
            bytes <= index_len + 65_536,
            "{what} read {bytes} bytes, index is {index_len} (+ 64 KiB for curve_costs)"
        );
    }
}

/// Damage a copy of a run: forward 1's blob gone, 2's cut short, 3's flipped, and a line of
/// garbage after the 4th index line.
fn damaged_store(name: &str) -> PathBuf {
    let root = temp_dir(name);
    let mut r = fast(
        Recorder::with_writer(&root, "bad", "w")
            .unwrap()
            .summarising(["loss"]),
    );
    // One pack per forward, so each forward's bytes can be damaged on their own.
    r.writer().set_pack_limit(1);
    for n in 0..6 {
        let rec = ForwardRecord {
            forward: n,
            facts: two_machine_facts(n + 10),
            ..Default::default()
        };
        r.record(&rec).unwrap();
    }
    drop(r);
    let w = root.join("runs/bad/w");
    let blob = |n: u64| w.join(format!("packs/{n:06}.pack"));
    std::fs::remove_file(blob(1)).unwrap();
    let b2 = std::fs::read(blob(2)).unwrap();
    std::fs::write(blob(2), &b2[..b2.len() / 2]).unwrap();
    let mut b3 = std::fs::read(blob(3)).unwrap();
    let mid = b3.len() / 2;
    b3[mid] ^= 0x20;
    std::fs::write(blob(3), b3).unwrap();
    let index = std::fs::read_to_string(w.join("index.jsonl")).unwrap();
    let mut lines: Vec<&str> = index.lines().collect();
    lines.insert(4, "this is not JSON {");
    std::fs::write(w.join("index.jsonl"), lines.join("\n") + "\n").unwrap();
    root
}

#[test]
fn damage_is_skipped_and_named_and_the_rest_reads() {
    let root = damaged_store("rb-bad");
    let s = open(&root);
    let a = readback::nodes(&s, "bad", None).unwrap();
    let mut skipped: Vec<(Option<u64>, Option<u64>, &str)> = a
        .skipped
        .iter()
        .map(|k| {
            assert_eq!(k.run, "bad");
            assert_eq!(k.writer.as_deref(), Some("w"));
            let what = if k.reason.contains("not found") {
                "missing"
            } else if k.reason.contains("bytes, the index says") {
                "truncated"
            } else if k.reason.contains("corrupt") {
                "checksum"
            } else if k.reason.contains("index line") {
                "not json"
            } else {
                "other"
            };
            (k.forward, k.line, what)
        })
        .collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            (None, Some(5), "not json"),
            (Some(1), None, "missing"),
            (Some(2), None, "truncated"),
            (Some(3), None, "checksum"),
        ],
        "(forward, line, what) skipped: {:?}",
        a.skipped
    );
    assert_eq!(a.rows[0].ran, 3, "forwards 0, 4 and 5 still read");
    let shown: Vec<String> = a.skipped.iter().map(|k| k.to_string()).collect();
    assert!(
        shown
            .iter()
            .any(|t| t.contains("run \"bad\"") && t.contains("forward 3")),
        "{shown:?}"
    );
    // Index-only reads lose only the garbage line.
    let c = readback::curve(&s, "bad", "loss.value").unwrap();
    assert_eq!(c.rows.len(), 6);
    assert_eq!(c.skipped.len(), 1);
    assert_eq!(readback::forwards(&s, "bad").unwrap().rows.len(), 6);
    assert_eq!(readback::runs(&s).unwrap().rows[0].forwards, 6);
    // The last N, read backwards, report the bad line too.
    let last = readback::nodes(&s, "bad", Some(10)).unwrap();
    assert_eq!(last.skipped.len(), 4, "{:?}", last.skipped);
    // One forward asked for by name is an error naming run, writer and forward.
    for n in [1, 2, 3] {
        let e = readback::facts(&s, "bad", n).unwrap_err();
        assert!(
            matches!(e, ReadbackError::Forward { forward, .. } if forward == n),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("\"bad\"") && text.contains(&format!("forward {n}")),
            "{text}"
        );
    }
    // Found past the garbage line (bisection falls back to a scan when it meets it).
    for n in [0, 4, 5] {
        assert_eq!(
            readback::facts(&s, "bad", n).unwrap(),
            Some(two_machine_facts(n + 10)),
            "facts of forward {n}"
        );
    }
    assert_eq!(readback::facts(&s, "bad", 6).unwrap(), None);
}

#[test]
fn a_newer_format_is_refused_clearly() {
    let root = store_with_runs("rb-newer");
    std::fs::write(
        root.join("somatize-store.json"),
        r#"{"format":"somatize-store","version":"3.0"}"#,
    )
    .unwrap();
    let e = Store::open(DirFs::new(&root))
        .err()
        .expect("a 3.0 store opened");
    assert!(matches!(e, StoreError::NewerFormat { .. }), "{e}");
    let out = cli(&["runs", root.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("version 3.0") && err.contains("upgrade"),
        "{err}"
    );
}

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(args)
        .output()
        .expect("run somatize")
}

#[test]
fn the_cli_prints_tables_json_and_figures() {
    let root = store_with_runs("rb-cli");
    let store = root.to_str().unwrap();
    let out = cli(&["runs", store]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("run") && lines[1].starts_with("two") && lines[2].starts_with("plain"),
        "{text}"
    );
    let table: &[(&[&str], Value)] = &[
        (
            &["curve", store, "--run", "two", "--json"],
            serde_json::to_value(
                readback::curve(&open(&root), "two", "loss.value")
                    .unwrap()
                    .rows,
            )
            .unwrap(),
        ),
        (
            &["nodes", store, "--run", "two", "--last", "3", "--json"],
            serde_json::to_value(readback::nodes(&open(&root), "two", Some(3)).unwrap().rows)
                .unwrap(),
        ),
        (
            &["fleet", store, "--run", "two", "--json"],
            serde_json::to_value(readback::fleet(&open(&root), "two", None).unwrap().rows).unwrap(),
        ),
        (
            &["facts", store, "--run", "two", "--forward", "2", "--json"],
            serde_json::to_value(two_machine_facts(2)).unwrap(),
        ),
        (
            &["facts", store, "--run", "two", "--forward", "99", "--json"],
            Value::Null,
        ),
        (
            &["standing", store, "--json"],
            serde_json::to_value(readback::standing(&open(&root)).unwrap()).unwrap(),
        ),
        (
            &["forwards", store, "--run", "plain", "--json"],
            serde_json::to_value(readback::forwards(&open(&root), "plain").unwrap().rows).unwrap(),
        ),
    ];
    for (args, want) in table {
        let out = cli(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(&got, want, "somatize {args:?}");
    }
    for cmd in ["forwards", "nodes", "fleet", "standing"] {
        let mut args = vec![cmd, store];
        if cmd != "standing" {
            args.extend(["--run", "two"]);
        }
        let out = cli(&args);
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "somatize {args:?}"
        );
    }
    let out = cli(&["forwards", store]);
    assert_eq!(out.status.code(), Some(2), "two runs and no --run");
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --run"));
    let out = cli(&["runs", store, "--of", "x"]);
    assert_eq!(out.status.code(), Some(2), "--of given to runs");
    for kind in ["progress", "spent", "gantt", "machines"] {
        let path = root.join(format!("{kind}.json"));
        let out = cli(&[
            "figure",
            kind,
            store,
            "--run",
            "two",
            "--forward",
            "2",
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "figure {kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fig: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(
            !fig["data"].as_array().unwrap().is_empty(),
            "figure {kind} has no traces"
        );
    }
    // A snapshot zip is a store too.
    let zip = root.with_extension("zip");
    snapshot::export(&open(&root), &[], None, &zip).unwrap();
    let out = cli(&["curve", zip.to_str().unwrap(), "--run", "two", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Damage is reported on stderr, naming run and forward, and the rest prints.
    let bad = damaged_store("rb-cli-bad");
    let out = cli(&["nodes", bad.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("run \"bad\", writer \"w\", forward 3: skipped"),
        "{err}"
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["ran"], 3);
}

#[test]
fn figure_json_is_plotly_shaped() {
    let root = store_with_runs("rb-shape");
    let s = open(&root);
    let v = figure_json(
        &progress::progress(&s, "two", LiveOptions::default())
            .unwrap()
            .rows,
    );
    for t in v["data"].as_array().unwrap() {
        assert!(t["type"].is_string() && t["x"].is_array(), "trace {t}");
    }
    assert_eq!(v["layout"]["yaxis"]["title"]["text"], "loss");
    assert_eq!(v["layout"]["yaxis2"]["overlaying"], "y");
}

#[test]
fn several_writers_merge_by_forward_and_count_each_forward_once() {
    let root = temp_dir("rb-ranks");
    for (w, slow) in [("r0", 0u64), ("r1", 5)] {
        let mut r = fast(
            Recorder::with_writer(&root, "ranks", w)
                .unwrap()
                .summarising(["loss"]),
        );
        for n in 0..4u64 {
            let mut f = fact("fc", "Linear", 0, 10 + slow, "local");
            if w == "r1" && n == 2 {
                f.error = Some("nan".into());
            }
            let rec = ForwardRecord {
                forward: n,
                facts: vec![f, Fact::loss(n as f64)],
                ..Default::default()
            };
            r.record(&rec).unwrap();
        }
    }
    let s = open(&root);
    let row = &readback::runs(&s).unwrap().rows[0];
    assert_eq!(
        (row.writers, row.forwards, row.broke, row.took_us),
        (2, 4, 1, 4 * 15),
        "(writers, forwards, broke, took_us): each forward once, at its longest"
    );
    let order: Vec<(u64, String)> = readback::forwards(&s, "ranks")
        .unwrap()
        .rows
        .iter()
        .map(|r| (r.forward, r.writer.to_string()))
        .collect();
    let want: Vec<(u64, String)> = (0..4)
        .flat_map(|n| [(n, "r0".to_string()), (n, "r1".to_string())])
        .collect();
    assert_eq!(order, want, "forwards in (forward, writer) order");
    assert_eq!(
        readback::curve(&s, "ranks", "loss.value")
            .unwrap()
            .rows
            .len(),
        8
    );
    let nodes = readback::nodes(&s, "ranks", Some(2)).unwrap().rows;
    assert_eq!(nodes[0].ran, 2, "last 2 = forward 3 of both writers");
    let skip = serde_json::to_value(readback::Skip {
        run: "r".into(),
        writer: Some("w".into()),
        forward: Some(3),
        line: None,
        reason: "gone".into(),
    })
    .unwrap();
    assert_eq!(
        skip,
        json!({"run": "r", "writer": "w", "forward": 3, "reason": "gone"})
    );
}

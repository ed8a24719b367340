//! Many runs at a glance: the summary a recorder leaves in `summaries.jsonl` when it finishes
//! is the row `compare` would read from the run itself; `somatize compare` and `figure compare`
//! (glob, groups, smoothing, downsampling). Runs are written here through the Recorder.

mod common;

use common::{somatize, temp_dir};
use somatize::figures::compare::{compare as overlay, ema, CompareFigure, Smooth};
use somatize::health::compare::{compare, CompareOptions, RunSummary};
use somatize::record::Recorder;
use somatize::store::{DirFs, ExitRecord, Fact, ForwardRecord, NodeStats, Num, Store};
use std::path::Path;

/// A forward with loss `loss` and a stats row for fc1 (a NaN counted when `nan`).
fn forward(n: u64, loss: f64, nan: bool) -> ForwardRecord<'static> {
    let mut stats = NodeStats::new();
    let row = stats.entry("fc1".into()).or_default();
    row.insert("nan".into(), Num(if nan { 1.0 } else { 0.0 }));
    row.insert("inf".into(), Num(0.0));
    ForwardRecord {
        forward: n,
        facts: vec![Fact::new("fc1", "Linear"), Fact::loss(loss)],
        stats,
        ..Default::default()
    }
}

/// Record `forwards` forwards of run `run` (loss 1/(f+1), a NaN in fc1 from `nan_from`), and
/// finish it unless `open`.
fn record(root: &Path, run: &str, forwards: u64, nan_from: Option<u64>, open: bool) {
    let mut r = Recorder::with_writer(root, run, "w0")
        .unwrap()
        .summarising(["loss"]);
    r.writer().durable = false;
    for f in 0..forwards {
        let nan = nan_from.is_some_and(|at| f >= at);
        r.record(&forward(f, 1.0 / (f as f64 + 1.0), nan)).unwrap();
    }
    if !open {
        r.finish(&ExitRecord {
            written_us: 0,
            ok: true,
            code: Some(0),
            signal: None,
            forwards,
            last_forward: forwards.checked_sub(1),
            error: None,
        })
        .unwrap();
    }
}

fn rows(root: &Path, runs: Option<&str>, lazy: bool) -> Vec<RunSummary> {
    let store = Store::open(DirFs::new(root)).unwrap();
    let options = CompareOptions {
        runs: runs.map(str::to_string),
        lazy,
    };
    compare(&store, &options).unwrap().rows
}

fn store_of_three() -> std::path::PathBuf {
    let root = temp_dir("compare");
    record(&root, "lr-a", 20, None, false);
    record(&root, "lr-b", 20, Some(3), false);
    record(&root, "other", 10, None, true);
    root
}

#[test]
fn a_finished_run_is_read_from_its_summary_and_it_says_what_reading_the_run_says() {
    let root = store_of_three();
    let got = rows(&root, None, false);
    let by = |run: &str| got.iter().find(|r| r.run == run).unwrap().clone();
    assert_eq!(by("lr-a").from, "summary");
    assert_eq!(by("lr-b").from, "summary");
    assert_eq!(by("other").from, "read", "a run being written is read");
    assert_eq!(by("lr-a").healthy, Some(true));
    assert!(by("lr-a").flags.is_empty());
    let b = by("lr-b");
    assert_eq!(b.healthy, Some(false));
    assert_eq!(
        (
            b.flags[0].flag.as_str(),
            b.flags[0].node.as_str(),
            b.flags[0].since
        ),
        ("NAN", "fc1", 3)
    );
    assert!(!b.flags[0].advice.is_empty());
    assert_eq!(b.forwards, 20);
    assert_eq!(b.final_value, Some(1.0 / 20.0));
    assert_eq!(b.best, Some(1.0 / 20.0));
    assert_eq!(b.ended_ok, Some(true));
    assert_eq!(by("other").ended_ok, None);
    // Without the summaries file every run is read, to the same answer.
    std::fs::remove_file(root.join("summaries.jsonl")).unwrap();
    let read = rows(&root, None, false);
    let strip = |rows: &[RunSummary]| {
        rows.iter()
            .map(|r| RunSummary {
                from: String::new(),
                ..r.clone()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&read), strip(&got));
    assert!(read.iter().all(|r| r.from == "read"));
}

#[test]
fn a_lazy_answer_judges_nothing_without_a_summary_and_a_reopened_run_is_read_again() {
    let root = store_of_three();
    let lazy = rows(&root, None, true);
    let other = lazy.iter().find(|r| r.run == "other").unwrap();
    assert_eq!((other.healthy, other.from.as_str()), (None, "index"));
    assert_eq!(other.forwards, 10);
    assert_eq!(other.final_value, Some(0.1));
    // A writer opening on a summarised run: the run is being written again, so it is read.
    let r = Recorder::with_writer(&root, "lr-a", "w1").unwrap();
    let again = rows(&root, Some("lr-a"), true);
    assert_eq!(again[0].from, "index");
    drop(r);
}

#[test]
fn compare_selects_runs_by_glob_and_prints_json_with_a_healthy_boolean() {
    let root = store_of_three();
    let dir = root.to_str().unwrap();
    let (code, out, err) = somatize(&["compare", dir, "--runs", "lr-*", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["run"], "lr-a");
    assert_eq!(list[0]["healthy"], true);
    assert_eq!(list[1]["healthy"], false);
    assert_eq!(list[1]["flags"][0]["flag"], "NAN");
    assert_eq!(list[1]["final"], 0.05);
    let (code, out, err) = somatize(&["compare", dir]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("NAN at fc1 (since 3)"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("lr-a") && l.contains("healthy")),
        "{out}"
    );
    assert!(out.contains("being written"), "{out}");
}

#[test]
fn figure_compare_overlays_groups_and_smooths() {
    let root = store_of_three();
    let store = Store::open(DirFs::new(&root)).unwrap();
    let fig = overlay(
        &store,
        &CompareFigure {
            group_by: vec!["lr-".into()],
            ..CompareFigure::default()
        },
    )
    .unwrap()
    .rows;
    let names: Vec<&str> = fig
        .data
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "lr-* (2 runs) max",
            "lr-* (2 runs) min–max",
            "lr-* (2 runs) mean",
            "other"
        ]
    );
    // Both runs have the same loss, so mean, min and max are it.
    let loss: Vec<f64> = (0..20).map(|f| 1.0 / (f as f64 + 1.0)).collect();
    let ys = |i: usize| -> Vec<f64> {
        fig.data[i]["y"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    assert_eq!(ys(2), loss);
    assert_eq!(fig.data[1]["fill"], "tonexty");
    // The CLI's figure is the library's; EMA as TensorBoard smooths.
    let (code, out, err) = somatize(&[
        "figure",
        "compare",
        root.to_str().unwrap(),
        "--runs",
        "lr-a",
        "--ema",
        "0.6",
        "--log-y",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let got: Vec<f64> = v["data"][0]["y"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got, ema(&loss, 0.6));
    assert_eq!(v["layout"]["yaxis"]["type"], "log");
    let lib = overlay(
        &store,
        &CompareFigure {
            runs: Some("lr-a".into()),
            smooth: Smooth::Ema(0.6),
            log_y: true,
            ..CompareFigure::default()
        },
    )
    .unwrap()
    .rows;
    assert_eq!(v, lib.to_value());
    let (code, _, err) = somatize(&["figure", "compare", root.to_str().unwrap(), "--ema", "1.5"]);
    assert_eq!(code, 2);
    assert!(err.contains("[0, 1)"), "{err}");
}

#[test]
fn a_long_line_is_downsampled_keeping_its_spike() {
    let root = temp_dir("compare-long");
    let mut r = Recorder::with_writer(&root, "long", "w0")
        .unwrap()
        .summarising(["loss"]);
    r.writer().durable = false;
    for f in 0..6000u64 {
        let loss = if f == 4321 {
            1e6
        } else {
            1.0 + (f % 10) as f64
        };
        r.record(&forward(f, loss, false)).unwrap();
    }
    drop(r);
    let store = Store::open(DirFs::new(&root)).unwrap();
    let fig = overlay(&store, &CompareFigure::default()).unwrap().rows;
    let x = fig.data[0]["x"].as_array().unwrap();
    let y = fig.data[0]["y"].as_array().unwrap();
    assert!(x.len() <= 2002 && x.len() > 500, "{} points", x.len());
    let at = x
        .iter()
        .position(|v| v.as_f64() == Some(4321.0))
        .expect("the spike kept");
    assert_eq!(y[at].as_f64(), Some(1e6));
    assert_eq!(x.last().unwrap().as_f64(), Some(5999.0));
}

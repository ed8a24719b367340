//! Many runs at a glance: the summary a recorder leaves in `summaries.jsonl` when it finishes
//! is the row `compare` would read from the run itself; `somatize compare` and `figure compare`
//! (glob, groups, smoothing, downsampling). Runs are written here through the Recorder.

use crate::common;

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

/// The exit record of a recording of `forwards` forwards that went well.
fn went_well(forwards: u64) -> ExitRecord {
    ExitRecord {
        written_us: 0,
        ok: true,
        code: Some(0),
        signal: None,
        forwards,
        last_forward: forwards.checked_sub(1),
        error: None,
    }
}

#[test]
fn a_finished_runs_line_is_drawn_from_its_summarys_sketch_without_reading_its_index() {
    let root = temp_dir("compare-sketch");
    let mut r = Recorder::with_writer(&root, "long", "w0")
        .unwrap()
        .summarising(["loss"]);
    r.writer().durable = false;
    for f in 0..6000u64 {
        let loss = match f {
            4321 => 1e6,
            777 => f64::NAN,
            _ => 1.0 + (f % 10) as f64,
        };
        r.record(&forward(f, loss, false)).unwrap();
    }
    r.finish(&went_well(6000)).unwrap();
    // A short run's sketch is its whole line: the figure is the same either way.
    record(&root, "short", 20, None, false);
    let store = Store::open(DirFs::new(&root)).unwrap();
    let short = |sketches: bool| {
        overlay(
            &store,
            &CompareFigure {
                runs: Some("short".into()),
                smooth: Smooth::Ema(0.6),
                sketches,
                ..CompareFigure::default()
            },
        )
        .unwrap()
        .rows
        .to_value()
    };
    assert_eq!(short(true), short(false));
    // The summary line carries the sketch: at most SKETCH_POINTS points, the spike and the gap kept.
    let text = std::fs::read_to_string(root.join("summaries.jsonl")).unwrap();
    let line: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|l| l["run"] == "long")
        .unwrap();
    let sketch = &line["sketch"];
    assert_eq!(sketch["of"], "loss.value");
    assert_eq!(sketch["points"], 6000);
    let forwards = sketch["forwards"].as_array().unwrap();
    assert!(
        forwards.len() <= somatize::store::summary::SKETCH_POINTS && forwards.len() > 200,
        "{} points",
        forwards.len()
    );
    let at = |f: u64| forwards.iter().position(|v| v.as_u64() == Some(f));
    assert_eq!(sketch["values"][at(4321).expect("the spike kept")], 1e6);
    assert!(sketch["values"][at(777).expect("the gap kept")].is_null());
    // The run's index emptied: its line is still drawn, from the sketch alone.
    let index = root.join("runs/long/w0/index.jsonl");
    std::fs::write(&index, "").unwrap();
    let store = Store::open(DirFs::new(&root)).unwrap();
    let fig = overlay(
        &store,
        &CompareFigure {
            runs: Some("long".into()),
            ..CompareFigure::default()
        },
    )
    .unwrap()
    .rows;
    let x: Vec<f64> = fig.data[0]["x"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(x.len(), forwards.len());
    assert_eq!((x[0], *x.last().unwrap()), (0.0, 5999.0));
    assert!(x.contains(&4321.0));
    // Told not to use sketches, the figure reads the (now empty) index.
    let read = overlay(
        &store,
        &CompareFigure {
            runs: Some("long".into()),
            sketches: false,
            ..CompareFigure::default()
        },
    )
    .unwrap()
    .rows;
    assert!(read.data[0]["x"].as_array().unwrap().is_empty());
}

/// Wait (up to 20 s) until the store's summaries file has `n` live lines of `run`.
fn wait_for_live_lines(root: &Path, run: &str, n: usize) {
    let t0 = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(root.join("summaries.jsonl")).unwrap_or_default();
        let live = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|l| l["run"] == run && l["live"] == true)
            .count();
        if live >= n {
            return;
        }
        assert!(
            t0.elapsed().as_secs() < 20,
            "{live} live summaries of {run} after 20 s:\n{text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_writer_summarises_its_run_as_it_goes_and_a_lazy_scan_finds_its_health() {
    let root = temp_dir("compare-live");
    let mut r = Recorder::with_writer(&root, "live", "w0")
        .unwrap()
        .summarising(["loss"])
        .live_summaries(Some(std::time::Duration::from_millis(50)));
    r.writer().durable = false;
    for f in 0..5 {
        r.record(&forward(f, 1.0, false)).unwrap();
    }
    // Before the first live summary: a scan knows nothing of its health.
    let first = rows(&root, Some("live"), true);
    assert_eq!((first[0].healthy, first[0].from.as_str()), (None, "index"));
    std::thread::sleep(std::time::Duration::from_millis(60));
    r.record(&forward(5, 1.0, false)).unwrap();
    wait_for_live_lines(&root, "live", 1);
    let healthy = rows(&root, Some("live"), true);
    assert_eq!(healthy[0].from, "live");
    assert_eq!(healthy[0].healthy, Some(true));
    assert_eq!(healthy[0].ended_ok, None, "still being written");
    assert_eq!(
        healthy[0].forwards, 6,
        "the counts are the index's, read now"
    );
    // A crash mid-append left a torn line: the next live line is still read.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join("summaries.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"run\":\"live\",\"writer\":\"w0\",\"writ").unwrap();
    drop(f);
    // The run turns sick; after the next interval its live summary says so.
    for f in 6..12 {
        r.record(&forward(f, 1.0, f >= 8)).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(150));
    r.record(&forward(12, 1.0, true)).unwrap();
    wait_for_live_lines(&root, "live", 2);
    let sick = rows(&root, Some("live"), true);
    assert_eq!(sick[0].from, "live");
    assert_eq!(sick[0].healthy, Some(false));
    assert_eq!(
        (sick[0].flags[0].flag.as_str(), sick[0].flags[0].since),
        ("NAN", 8)
    );
    // A reader that judges (the CLI's compare) reads the run now, to the same health.
    let (code, out, err) = somatize(&["compare", root.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v[0]["from"].as_str(), v[0]["healthy"].as_bool()),
        (Some("read"), Some(false))
    );
    // Finished: the final summary stands, after every live one.
    r.finish(&went_well(13)).unwrap();
    let done = rows(&root, Some("live"), true);
    assert_eq!(
        (done[0].from.as_str(), done[0].ended_ok),
        ("summary", Some(true))
    );
    assert_eq!(done[0].forwards, 13);
}

#[test]
fn a_snapshot_of_whole_runs_carries_their_summaries_and_one_of_the_last_forwards_none() {
    let root = store_of_three();
    let dir = temp_dir("compare-snapshots");
    let whole = dir.join("whole.zip");
    let last = dir.join("last.zip");
    let (code, _, err) = somatize(&[
        "export",
        root.to_str().unwrap(),
        "-o",
        whole.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = somatize(&[
        "export",
        root.to_str().unwrap(),
        "--last",
        "5",
        "-o",
        last.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let json = |store: &Path, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["compare", store.to_str().unwrap(), "--json"];
        args.extend(extra);
        let (code, out, err) = somatize(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    // The whole runs: the same rows as the folder, the finished ones from the summaries.
    let folder = json(&root, &[]);
    let snap = json(&whole, &[]);
    assert_eq!(snap, folder);
    let from: Vec<&str> = snap
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["from"].as_str().unwrap())
        .collect();
    assert_eq!(from, ["summary", "summary", "read"]);
    // Their lines are the folder's latest (a summary, or an open line of the run being written).
    let zip = somatize::store::ZipFs::open(&whole).unwrap();
    let lines = somatize::store::summary::read_runs(&zip).unwrap();
    let mine = somatize::store::summary::read_runs(&DirFs::new(&root)).unwrap();
    assert_eq!(lines, mine);
    // And the overlay drawn from the snapshot is the folder's.
    let figure = |store: &Path| {
        let (code, out, err) =
            somatize(&["figure", "compare", store.to_str().unwrap(), "--ema", "0.5"]);
        assert_eq!(code, 0, "{err}");
        out
    };
    assert_eq!(figure(&whole), figure(&root));
    // The last 5 forwards: no summary (the whole run's would not be what it holds); read.
    let sliced = json(&last, &[]);
    assert!(sliced
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["from"] == "read" && r["forwards"] == 5));
}

#[test]
fn runs_recorded_with_a_config_are_grouped_by_one_of_its_fields() {
    let root = temp_dir("compare-config");
    for (run, lr, nan) in [
        ("a", Some("0.1"), None),
        ("b", Some("0.1"), Some(2)),
        ("c", Some("0.01"), None),
        ("d", None, None),
    ] {
        if let Some(lr) = lr {
            let mut config = somatize::store::config::Config::new();
            config.insert("lr".into(), serde_json::from_str(lr).unwrap());
            config.insert("optim".into(), serde_json::json!({"name": "adam"}));
            somatize::store::config::write(&root, run, &config).unwrap();
        }
        record(&root, run, 10, nan, false);
    }
    // `somatize record --config` writes one too (here for a command that records nothing).
    let (code, _, err) = somatize(&[
        "record",
        "--store",
        root.to_str().unwrap(),
        "--run",
        "e",
        "--config",
        "lr=0.5",
        "--config",
        "optim=sgd",
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{err}");
    let e = somatize::store::config::read(&DirFs::new(&root), "e")
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::Value::Object(e),
        serde_json::json!({"lr": 0.5, "optim": "sgd"})
    );
    let dir = root.to_str().unwrap();
    // Each row carries its run's config (the summary read it when the run finished).
    let rows = rows(&root, None, false);
    let a = rows.iter().find(|r| r.run == "a").unwrap();
    assert_eq!(
        serde_json::to_value(&a.config).unwrap(),
        serde_json::json!({"lr": 0.1, "optim": {"name": "adam"}})
    );
    assert!(rows.iter().find(|r| r.run == "d").unwrap().config.is_none());
    assert_eq!(a.writers, 1, "the config file is no writer");
    // A snapshot carries the configs: grouped the same.
    let snap = temp_dir("compare-config-snap").join("s.zip");
    let (code, _, err) = somatize(&["export", dir, "-o", snap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let group_json = |store: &str| {
        let (code, out, err) = somatize(&["compare", store, "--group-by", "lr", "--json"]);
        assert_eq!(code, 0, "{err}");
        out
    };
    assert_eq!(group_json(snap.to_str().unwrap()), group_json(dir));
    // compare --group-by: one row per value, numbers in order, the runs without it last.
    let (code, out, err) = somatize(&["compare", dir, "--runs", "?", "--group-by", "lr", "--json"]);
    assert_eq!(code, 0, "{err}");
    let groups: serde_json::Value = serde_json::from_str(&out).unwrap();
    let got: Vec<(serde_json::Value, serde_json::Value, u64, u64)> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["value"].clone(),
                g["runs"].clone(),
                g["healthy"].as_u64().unwrap(),
                g["sick"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (serde_json::json!("0.01"), serde_json::json!(["c"]), 1, 0),
            (
                serde_json::json!("0.1"),
                serde_json::json!(["a", "b"]),
                1,
                1
            ),
            (serde_json::json!("0.5"), serde_json::json!(["e"]), 0, 0),
            (serde_json::Value::Null, serde_json::json!(["d"]), 1, 0),
        ]
    );
    assert_eq!(groups[1]["final_mean"], 0.1);
    let (code, out, err) = somatize(&["compare", dir, "--group-by", "optim.name"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().next().unwrap().starts_with("optim.name"),
        "{out}"
    );
    assert!(out.contains("adam"), "{out}");
    // figure compare --group-config: one group per value, the runs without it alone.
    let (code, out, err) = somatize(&["figure", "compare", dir, "--group-config", "lr"]);
    assert_eq!(code, 0, "{err}");
    let fig: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = fig["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "lr=0.01 (1 runs) max",
            "lr=0.01 (1 runs) min–max",
            "lr=0.01 (1 runs) mean",
            "lr=0.1 (2 runs) max",
            "lr=0.1 (2 runs) min–max",
            "lr=0.1 (2 runs) mean",
            "lr=0.5 (1 runs) max",
            "lr=0.5 (1 runs) min–max",
            "lr=0.5 (1 runs) mean",
            "d"
        ]
    );
    let (code, _, err) = somatize(&[
        "figure",
        "compare",
        dir,
        "--group-config",
        "lr",
        "--group-by",
        "a",
    ]);
    assert_eq!(code, 2, "{err}");
}

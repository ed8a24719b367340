//! `somatize record` end to end with the Python helper: the numpy example trains under the
//! companion and its forwards read back; a command that fails marks the run broke at the
//! forward it reached. The numpy tests need python3 with numpy (scripts/test.sh installs it)
//! and fail without it; the torch test runs with the torch venv's Python and fails without it.

use crate::common;

use common::temp_dir;
use somatize::store::{DirFs, Field, Store};
use std::path::Path;
use std::process::Command;

/// python3 with numpy, which these tests need (scripts/test.sh installs it): a failure, not a
/// skip, when it is not there.
fn need_python_with_numpy() {
    let ok = Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "python3 with numpy is needed (scripts/test.sh installs it)"
    );
}

fn record(root: &Path, run: &str, extra: &[&str]) -> std::process::Output {
    record_with(root, run, &[], extra)
}

/// `somatize record FLAGS…` of the numpy example with `extra` arguments to the script.
fn record_with(root: &Path, run: &str, flags: &[&str], extra: &[&str]) -> std::process::Output {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/train_numpy.py");
    Command::new(env!("CARGO_BIN_EXE_somatize"))
        .arg("record")
        .args(flags)
        .arg("--store")
        .arg(root)
        .args(["--run", run, "--every", "5", "--readings", "0.05", "--"])
        .args(["python3", example])
        .args(extra)
        .output()
        .expect("run somatize record")
}

#[test]
fn the_numpy_example_records_and_reads_back() {
    need_python_with_numpy();
    let root = temp_dir("py");
    let out = record(&root, "mlp", &["--steps", "12"]);
    assert!(
        out.status.success(),
        "somatize record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(DirFs::new(&root)).unwrap();
    let items: Vec<_> = store.scan("mlp").unwrap().map(Result::unwrap).collect();
    assert_eq!(
        items.iter().map(|i| i.entry.forward).collect::<Vec<_>>(),
        (0..12).collect::<Vec<_>>()
    );
    let mut losses = Vec::new();
    for item in &items {
        let loss = item
            .entry
            .field("loss.value")
            .and_then(Field::as_f64)
            .expect("loss.value summarised");
        losses.push(loss);
        let blob = store.fetch("mlp", &item.writer, &item.entry).unwrap();
        let nodes: Vec<String> = blob.facts().unwrap().into_iter().map(|f| f.node).collect();
        assert_eq!(
            nodes,
            ["fc1", "relu", "fc2", "loss"],
            "facts of forward {}",
            item.entry.forward
        );
        let keys = blob.tensor_keys();
        if item.entry.forward % 5 == 0 {
            assert!(
                keys.contains(&"grad.fc1.weight") && keys.contains(&"act.relu"),
                "keys {keys:?}"
            );
            let w = blob.tensor("param.fc1.weight").unwrap().unwrap();
            assert_eq!(w.shape, [8, 32]);
            let stats = blob.stats().unwrap();
            assert_eq!(
                stats["act.relu"]["count"].0,
                (256 * 32) as f64,
                "stats computed on ingest"
            );
        } else {
            assert!(
                keys.is_empty(),
                "--every 5 kept tensors of forward {}",
                item.entry.forward
            );
        }
    }
    assert!(
        losses.last() < losses.first(),
        "the example did not train: {losses:?}"
    );
    let writer = &items[0].writer;
    let exit = store.exit("mlp", writer).unwrap().expect("exit record");
    assert!(exit.ok && exit.code == Some(0), "{exit:?}");
    let reading = store
        .newest_reading("mlp", writer)
        .unwrap()
        .expect("a reading");
    assert!(
        reading.cores.is_some_and(|c| c >= 1) && reading.served == Some(12),
        "{reading:?}"
    );
}

#[test]
fn a_recording_without_fsync_reads_back_the_same() {
    need_python_with_numpy();
    let root = temp_dir("py-nofsync");
    for (run, flags) in [("mlp", &[][..]), ("fast", &["--no-fsync"][..])] {
        let out = record_with(&root, run, flags, &["--steps", "6"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "record {flags:?}: {err}");
    }
    let store = Store::open(DirFs::new(&root)).unwrap();
    let read = |run: &str| -> Vec<(u64, Option<f64>, Vec<String>)> {
        let items: Vec<_> = store.scan(run).unwrap().map(Result::unwrap).collect();
        items
            .iter()
            .map(|i| {
                let blob = store.fetch(run, &i.writer, &i.entry).unwrap();
                let keys = blob.tensor_keys().into_iter().map(String::from).collect();
                let loss = i.entry.field("loss.value").and_then(Field::as_f64);
                (i.entry.forward, loss.map(|l| (l * 1e6).round()), keys)
            })
            .collect()
    };
    let (durable, fast) = (read("mlp"), read("fast"));
    assert_eq!(fast.len(), 6, "{fast:?}");
    assert_eq!(
        fast, durable,
        "the same forwards, losses (to 1e-6) and tensors"
    );
}

#[test]
fn a_failing_command_marks_the_run_broke_where_it_stopped() {
    need_python_with_numpy();
    let root = temp_dir("py-fail");
    let out = record(&root, "mlp", &["--steps", "20", "--fail-at", "7"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the command's status is passed on"
    );
    let store = Store::open(DirFs::new(&root)).unwrap();
    let items: Vec<_> = store.scan("mlp").unwrap().map(Result::unwrap).collect();
    assert_eq!(items.len(), 8, "forwards 0..6 and the broke 7th");
    assert!(items[..7]
        .iter()
        .all(|i| !i.entry.broke && store.fetch("mlp", &i.writer, &i.entry).is_ok()));
    let last = &items[7].entry;
    assert_eq!((last.forward, last.broke), (7, true));
    assert!(
        last.error.as_deref().unwrap_or("").contains("status 3"),
        "{last:?}"
    );
    let exit = store.exit("mlp", &items[0].writer).unwrap().unwrap();
    assert!(
        !exit.ok && exit.code == Some(3) && exit.last_forward == Some(7),
        "{exit:?}"
    );
}

#[test]
fn a_command_that_cannot_start_is_an_error() {
    let root = temp_dir("nostart");
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(["record", "--store"])
        .arg(&root)
        .args(["--run", "r", "--", "/nonexistent/command"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not start"));
}

/// The Python of the torch venv (`SOMATIZE_VENV`, default `~/.cache/somatize/torch-venv`,
/// which `scripts/test.sh` creates with torch in it). Without it the test fails.
fn torch_python() -> std::path::PathBuf {
    let venv = std::env::var_os("SOMATIZE_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/somatize/torch-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.is_file(),
        "no torch venv at {venv:?}: run scripts/test.sh python (it creates it) or set SOMATIZE_VENV"
    );
    python
}

#[test]
fn the_torch_watch_records_under_the_companion() {
    let root = temp_dir("torch");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/train_torch.py");
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(["record", "--store"])
        .arg(&root)
        .args([
            "--run",
            "t",
            "--",
            torch_python().to_str().unwrap(),
            example,
        ])
        .args(["--steps", "4", "--every", "2", "--keep-tensors-every", "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(DirFs::new(&root)).unwrap();
    let items: Vec<_> = store.scan("t").unwrap().map(Result::unwrap).collect();
    assert_eq!(items.len(), 4);
    let blob = store.fetch("t", &items[2].writer, &items[2].entry).unwrap();
    let keys = blob.tensor_keys();
    for k in ["act.0", "act.1", "act.2", "param.0.weight", "grad.0.weight"] {
        assert!(keys.contains(&k), "forward 2 lacks {k}: {keys:?}");
    }
    let kinds: Vec<String> = blob.facts().unwrap().into_iter().map(|f| f.kind).collect();
    assert_eq!(kinds, ["Linear", "ReLU", "Linear", "loss"]);
    // Forward 2 is a full one: torch's numbers include the update and the outputs'.
    let stats = blob.stats().unwrap();
    for metric in ["update_ratio", "act_var", "grad_mean_abs"] {
        assert!(
            stats["0"].contains_key(metric),
            "0 lacks {metric}: {stats:?}"
        );
    }
    // Forward 3 carries numbers only, the every-step ones: measured by torch, no tensors.
    let blob = store.fetch("t", &items[3].writer, &items[3].entry).unwrap();
    assert!(blob.tensor_keys().is_empty());
    let stats = blob.stats().unwrap();
    for metric in ["grad_norm", "param_norm", "nonfinite"] {
        assert!(
            stats["0"].contains_key(metric),
            "0 lacks {metric}: {stats:?}"
        );
    }
    assert!(!stats["0"].contains_key("act_var"));
    assert!(stats["loss"]["loss"].0 > 0.0);
}

#[test]
fn export_writes_a_snapshot_the_reader_opens() {
    let root = temp_dir("export-cli");
    let mut r = somatize::record::Recorder::with_writer(&root, "r", "w")
        .unwrap()
        .summarising(["loss"]);
    for f in 0..6 {
        let rec = somatize::store::ForwardRecord {
            forward: f,
            facts: vec![somatize::store::Fact::loss(f as f64)],
            ..Default::default()
        };
        r.record(&rec).unwrap();
    }
    drop(r);
    let snap = root.join("snap.zip");
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .arg("export")
        .arg(&root)
        .args(["--run", "r", "--last", "2", "-o"])
        .arg(&snap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(somatize::store::ZipFs::open(&snap).unwrap()).unwrap();
    let got: Vec<(u64, Option<f64>)> = store
        .scan("r")
        .unwrap()
        .map(|i| {
            let i = i.unwrap();
            (
                i.entry.forward,
                i.entry.field("loss.value").and_then(Field::as_f64),
            )
        })
        .collect();
    assert_eq!(got, [(4, Some(4.0)), (5, Some(5.0))]);
    let missing = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .arg("export")
        .arg(root.join("nowhere"))
        .args(["-o"])
        .arg(root.join("x.zip"))
        .output()
        .unwrap();
    assert_eq!(
        missing.status.code(),
        Some(2),
        "exporting a missing store succeeded"
    );
}

/// `somatize record --listen PATH` with no command, as `somatize.torch.watch` starts it: the
/// sender connects, sends forwards whose statistics it measured itself (no tensors) and an
/// `end` frame; the run's graph comes from the facts, stats.json holds the sender's numbers,
/// and the exit record is clean. A second recording whose sender closes without `end` is
/// marked broke at the forward after its last.
#[test]
fn a_listening_companion_records_the_process_that_connects() {
    use somatize::record::frame::encode;
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    let root = temp_dir("listen");
    for (run, end) in [("clean", true), ("killed", false)] {
        let socket = root.join(format!("{run}.sock"));
        let mut companion = Command::new(env!("CARGO_BIN_EXE_somatize"))
            .args(["record", "--store"])
            .arg(&root)
            .args(["--run", run, "--readings", "0.05", "--listen"])
            .arg(&socket)
            .spawn()
            .unwrap();
        let mut waited = 0;
        while !socket.exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
            waited += 1;
            assert!(waited < 1000, "the companion never opened {socket:?}");
        }
        let mut conn = UnixStream::connect(&socket).unwrap();
        for forward in 0..3u64 {
            let header = serde_json::json!({
                "forward": forward,
                "facts": [{"node": "fc1", "kind": "Linear", "began_us": 0, "took_us": 5,
                           "layout": "ND"},
                          {"node": "loss", "kind": "loss", "value": 1.0 / (forward as f64 + 1.0)}],
                "stats": {"fc1": {"grad_norm": 0.5 + forward as f64, "units": 16.0}},
            });
            conn.write_all(&encode(&header, &[])).unwrap();
        }
        if end {
            conn.write_all(&encode(&serde_json::json!({"type": "end"}), &[]))
                .unwrap();
        }
        drop(conn);
        let status = companion.wait().unwrap();
        assert_eq!(status.success(), end, "{run}: exit {status:?}");
        let store = Store::open(DirFs::new(&root)).unwrap();
        let items: Vec<_> = store.scan(run).unwrap().map(Result::unwrap).collect();
        let forwards: Vec<u64> = items.iter().map(|i| i.entry.forward).collect();
        let blob = store.fetch(run, &items[2].writer, &items[2].entry).unwrap();
        let stats = blob.stats().unwrap();
        assert_eq!(stats["fc1"]["grad_norm"].0, 2.5);
        assert_eq!(stats["loss"]["loss"].0, 1.0 / 3.0);
        let graph =
            std::fs::read_to_string(root.join("runs").join(run).join("graph.json")).unwrap();
        assert!(
            graph.contains("\"fc1\"") && graph.contains("Linear"),
            "{graph}"
        );
        let exit = store.exit(run, &items[0].writer).unwrap().unwrap();
        if end {
            assert_eq!(forwards, [0, 1, 2]);
            assert!(exit.ok, "{exit:?}");
        } else {
            assert!(!exit.ok);
            assert!(
                exit.error
                    .as_deref()
                    .unwrap_or("")
                    .contains("without ending"),
                "{exit:?}"
            );
        }
    }
}

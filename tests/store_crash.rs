//! Crash safety: kill -9 a writing process (the Recorder, and the `somatize record` companion)
//! at random points; every forward whose index line is whole reads back intact with its
//! checksum, a torn line is ignored and repaired on reopen, and two writer processes on one
//! run never corrupt each other.
//!
//! The writing processes are this test binary re-run with `SOMATIZE_TEST_ROLE` set (see the
//! ignored `child_role` test). `SOMATIZE_KILL_TRIALS` lowers the number of trials (default 50).

use crate::common;

use common::{forward, temp_dir, trials, values, Rng};
use somatize::record::Recorder;
use somatize::store::{DirFs, Store};
use somatize::tensor::TensorData;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ROLE: &str = "SOMATIZE_TEST_ROLE";

/// The child role's test name in this binary (tests/native.rs makes this file a module, so the
/// name carries the module's path: `store_crash::child_role`).
fn child_role_name() -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::child_role"),
        None => "child_role".to_string(),
    }
}

/// Run this binary as a child in `role` with extra environment.
fn spawn_role(role: &str, env: &[(&str, String)]) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        &child_role_name(),
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("spawn the child role")
}

/// The body of the child processes. Not a test on its own: without the role it does nothing.
#[test]
#[ignore]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let store = PathBuf::from(std::env::var("STORE").unwrap());
    let run = std::env::var("RUN").unwrap();
    let writer = std::env::var("WRITER").unwrap_or_else(|_| "w".into());
    let count: u64 = std::env::var("COUNT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(u64::MAX);
    match role.as_str() {
        // Write forwards through the Recorder, continuing after the last one in the index.
        "writer" => {
            let depth = std::env::var("PIPELINE")
                .ok()
                .and_then(|p| p.parse().ok())
                .unwrap_or(1);
            let mut r = Recorder::with_writer(&store, &run, &writer)
                .unwrap()
                .summarising(["loss"])
                .pipelined(depth)
                .unwrap();
            if let Some(limit) = std::env::var("PACK_LIMIT")
                .ok()
                .and_then(|l| l.parse().ok())
            {
                r.writer().set_pack_limit(limit);
            }
            let start = r.writer().last_forward().map_or(0, |f| f + 1);
            let mut rng = Rng(start * 7919 + 1);
            for f in start..start.saturating_add(count) {
                let n = 256 + rng.below(8192) as usize;
                r.record(&forward(f, 3, n)).unwrap();
            }
        }
        // Send frames to the companion's channel until it goes away.
        "producer" => {
            let addr = std::env::var("SOMATIZE_CHANNEL").unwrap();
            let path = addr.strip_prefix("unix:").unwrap();
            let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
            let mut rng = Rng(3);
            for f in 0..count {
                let n = 256 + rng.below(8192) as usize;
                let data: Vec<u8> = values(f, 0, n)
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                let header = serde_json::json!({
                    "forward": f,
                    "facts": [{"node": "loss", "kind": "loss", "value": f as f64}],
                    "tensors": [{"key": "act.layer0", "dtype": "float32", "shape": [n]}],
                });
                if s.write_all(&somatize::record::frame::encode(&header, &[&data]))
                    .is_err()
                {
                    return;
                }
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// Every whole index line of `run` fetches with a good checksum and the tensors it was given.
/// Returns how many forwards it checked.
fn check_intact(root: &Path, run: &str, key: &str) -> u64 {
    let store = Store::open(DirFs::new(root)).unwrap();
    let mut n = 0;
    let mut expect_next = 0;
    for item in store.scan(run).unwrap() {
        let item = item.unwrap_or_else(|e| panic!("run {run}: {e}"));
        let f = item.entry.forward;
        assert_eq!(f, expect_next, "run {run}: forwards not consecutive");
        expect_next = f + 1;
        let blob = store
            .fetch(run, &item.writer, &item.entry)
            .unwrap_or_else(|e| panic!("run {run}, forward {f}: {e}"));
        let t = blob.tensor(key).unwrap().expect("tensor kept");
        let len = t.shape[0];
        assert_eq!(
            t.data,
            TensorData::F32(values(f, 0, len)),
            "run {run}, forward {f}: tensor"
        );
        n += 1;
    }
    n
}

#[test]
fn killing_the_recorder_loses_at_most_the_forward_in_flight() {
    kill_trials("kill-recorder", 1, None);
}

#[test]
fn killing_a_pipelined_recorder_loses_only_forwards_in_flight() {
    // Small packs, so kills also land while a pack is begun.
    kill_trials("kill-pipelined", 64, Some(64 << 10));
}

/// The files in the writer's `packs/` folder, and how many of them end in `.tmp`.
fn packs(root: &Path) -> (usize, usize) {
    std::fs::read_dir(root.join("runs/r/w/packs")).map_or((0, 0), |d| {
        let names: Vec<String> = d
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let tmp = names.iter().filter(|n| n.ends_with(".tmp")).count();
        (names.len(), tmp)
    })
}

fn kill_trials(name: &str, depth: usize, pack_limit: Option<u64>) {
    let root = temp_dir(name);
    let mut rng = Rng(0x5eed);
    let mut before = 0;
    let mut torn = 0;
    let n = trials(50);
    for trial in 0..n {
        let mut env = vec![
            ("STORE", root.display().to_string()),
            ("RUN", "r".into()),
            ("PIPELINE", depth.to_string()),
        ];
        if let Some(limit) = pack_limit {
            env.push(("PACK_LIMIT", limit.to_string()));
        }
        let mut child = spawn_role("writer", &env);
        std::thread::sleep(Duration::from_millis(10 + rng.below(150)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let index = std::fs::read(root.join("runs/r/w/index.jsonl")).unwrap_or_default();
        torn += index.last().is_some_and(|&b| b != b'\n') as u32;
        let now = check_intact(&root, "r", "act.layer0");
        assert!(
            now >= before,
            "trial {trial}: forwards went from {before} to {now}"
        );
        before = now;
    }
    assert!(before > 0, "no forward was ever written in {n} trials");
    // The writer repairs any torn tail on open: afterwards the index ends with a newline.
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    let next = r.writer().last_forward().map_or(0, |f| f + 1);
    r.record(&forward(next, 1, 4)).unwrap();
    drop(r);
    let index = std::fs::read(root.join("runs/r/w/index.jsonl")).unwrap();
    assert_eq!(index.last(), Some(&b'\n'));
    assert_eq!(check_intact(&root, "r", "act.layer0"), before + 1);
    let (files, tmp) = packs(&root);
    assert_eq!(tmp, 0, "a temporary in packs/");
    eprintln!(
        "{n} kills, {before} forwards intact in {files} packs; {torn} torn tails left by kills"
    );
}

#[test]
fn a_torn_line_is_ignored_then_repaired() {
    let root = temp_dir("torn");
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    for f in 0..3 {
        r.record(&forward(f, 1, 8)).unwrap();
    }
    drop(r);
    let index = root.join("runs/r/w/index.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&index)
        .unwrap();
    f.write_all(br#"{"forward":3,"written_us":17,"took"#)
        .unwrap();
    drop(f);
    let got = common::indexed(&root, "r");
    assert_eq!(got, [0, 1, 2], "the torn line was not ignored");
    let mut r = Recorder::with_writer(&root, "r", "w").unwrap();
    assert_eq!(r.writer().last_forward(), Some(2));
    r.record(&forward(3, 1, 8)).unwrap();
    let text = std::fs::read_to_string(&index).unwrap();
    assert_eq!(text.lines().count(), 4, "index after repair:\n{text}");
    assert!(
        !text.contains("\"took\n") && !text.contains("\"took{"),
        "torn bytes kept:\n{text}"
    );
    assert_eq!(check_intact(&root, "r", "act.layer0"), 4);
}

#[test]
fn two_writer_processes_on_one_run_do_not_collide() {
    let root = temp_dir("two-writers");
    let kids: Vec<Child> = ["a", "b"]
        .iter()
        .map(|w| {
            spawn_role(
                "writer",
                &[
                    ("STORE", root.display().to_string()),
                    ("RUN", "shared".into()),
                    ("WRITER", w.to_string()),
                    ("COUNT", "60".into()),
                ],
            )
        })
        .collect();
    for mut k in kids {
        assert!(k.wait().unwrap().success(), "a writer failed");
    }
    let store = Store::open(DirFs::new(&root)).unwrap();
    assert_eq!(store.writers("shared").unwrap(), ["a", "b"]);
    let items: Vec<_> = store.scan("shared").unwrap().map(Result::unwrap).collect();
    assert_eq!(items.len(), 120);
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item.entry.forward, i as u64 / 2, "merged order at {i}");
        assert_eq!(
            &*item.writer,
            if i % 2 == 0 { "a" } else { "b" },
            "writer order at {i}"
        );
        let blob = store.fetch("shared", &item.writer, &item.entry).unwrap();
        let t = blob.tensor("act.layer2").unwrap().unwrap();
        assert_eq!(
            t.data,
            TensorData::F32(values(item.entry.forward, 2, t.shape[0]))
        );
    }
}

#[test]
fn one_writer_id_cannot_be_shared_by_two_writers() {
    let root = temp_dir("busy");
    let _a = Recorder::with_writer(&root, "r", "w").unwrap();
    let err = Recorder::with_writer(&root, "r", "w")
        .err()
        .expect("second writer opened");
    assert!(
        matches!(err, somatize::store::StoreError::WriterBusy { .. }),
        "{err}"
    );
}

#[test]
fn killing_the_companion_keeps_every_whole_forward() {
    let root = temp_dir("kill-companion");
    let exe = env!("CARGO_BIN_EXE_somatize");
    let me = std::env::current_exe().unwrap();
    let mut rng = Rng(0xc0ffee);
    let n = trials(50);
    let mut total = 0;
    for trial in 0..n {
        let run = format!("t{trial}");
        let mut companion = Command::new(exe)
            .args(["record", "--store"])
            .arg(&root)
            .args(["--run", &run, "--writer", "w", "--"])
            .arg(&me)
            .args([
                "--ignored",
                "--exact",
                &child_role_name(),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE, "producer")
            .env("STORE", &root)
            .env("RUN", &run)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20 + rng.below(150)));
        companion.kill().unwrap();
        companion.wait().unwrap();
        if !root.join(format!("runs/{run}/w/index.jsonl")).exists() {
            continue; // killed before it opened the run
        }
        total += check_intact(&root, &run, "act.layer0");
    }
    eprintln!("{n} companion kills, {total} forwards intact");
    assert!(total > 0, "no forward was ever written");
}

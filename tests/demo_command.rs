//! `somatize demo` run as the built binary into a temporary store: every run raises exactly
//! the flags its condition names (`Condition.raises`, one row each, nothing else; the
//! exploding run shows `Condition.before` folded under its NaN), the healthy one raises none,
//! progress goes to stderr and the output says how to look further. The debug build trains
//! the full 300 steps and measures activations every 100th; the README's exact command
//! (default steps and recording) and `--every 1` and `--every 100` are the ignored test:
//! scripts/test.sh runs it against the release binary (`SOMATIZE_BIN=target/release/somatize`),
//! as the README's `cargo run --release -- demo` builds it.

use crate::common;

use common::temp_dir;
use somatize::health::store::diagnose;
use somatize::store::{DirFs, Store};
use somatize::verdict::{FlagKind, Thresholds};
use std::path::Path;
use std::process::Command;

/// The binary under test: `SOMATIZE_BIN` when set (the release build), else this build's.
fn binary() -> String {
    std::env::var("SOMATIZE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_somatize").to_string())
}

fn demo(store: &Path, extra: &[&str]) -> (String, String) {
    let out = Command::new(binary())
        .arg("demo")
        .arg("--store")
        .arg(store)
        .args(extra)
        .output()
        .expect("the binary runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "somatize demo failed: {stderr}");
    (stdout, stderr)
}

/// Every demo run in `store` judged at the default thresholds: exactly the flags each names,
/// one row each, and what must come before a NaN folded under it.
fn check_runs(store: &Path) {
    let s = Store::open(DirFs::new(store)).expect("the demo wrote a store");
    for c in somatize::demo::conditions() {
        let d = diagnose(&s, c.name, &Thresholds::default(), None).expect("diagnoses");
        let mut raised: Vec<&str> = d
            .verdict
            .iter()
            .flat_map(|(_, f)| f.iter().map(|f| f.kind.name()))
            .collect();
        raised.sort();
        let mut want: Vec<&str> = c.raises.to_vec();
        want.sort();
        assert_eq!(
            raised,
            want,
            "{}: raised {:?}, wanted exactly {:?}: {:#?}",
            c.name,
            d.verdict.to_names(),
            c.raises,
            d.judgement.faults
        );
        assert_eq!(
            d.judgement.faults.len(),
            c.raises.len(),
            "{}: one row per fault: {:#?}",
            c.name,
            d.judgement.faults
        );
        for early in c.before {
            let head = &d.judgement.faults[0];
            assert!(
                matches!(head.root.flag.kind, FlagKind::Nan | FlagKind::Inf)
                    && head.folded.iter().any(|f| f.flag.kind.name() == *early),
                "{}: wanted {early} before the NaN, folded under it: {head:#?}",
                c.name
            );
        }
    }
}

#[test]
fn the_demo_command_records_runs_that_raise_their_flags() {
    let store = temp_dir("demo-command").join("demo");
    let (out, err) = demo(&store, &["--every", "100"]);
    for c in somatize::demo::conditions() {
        assert!(
            err.contains(c.name),
            "no progress line for {}: {err}",
            c.name
        );
        assert!(out.contains(c.description), "no diagnosis of {}", c.name);
    }
    assert!(out.contains("somatize diagnose"), "{out}");
    assert!(
        out.contains("VANISHING") && out.contains("what to do"),
        "{out}"
    );
    check_runs(&store);
    every_suggested_command_runs(&out, &store);
    // The demo again into the same store replaces its earlier recording, not mixing into it.
    let (_, err) = demo(&store, &["--steps", "4", "--every", "1"]);
    assert!(
        err.contains("replacing the earlier demo recording"),
        "{err}"
    );
    let reader = Store::open(DirFs::new(&store)).unwrap();
    let forwards = reader.scan("healthy").unwrap().count();
    assert_eq!(forwards, 4, "steps 0..3 of the second demo only");
    // A run of the same name that the demo did not write is left alone and refused.
    let mut other = somatize::record::Recorder::with_writer(&store, "stalled", "mine").unwrap();
    other.record(&Default::default()).unwrap();
    drop(other);
    let again = Command::new(binary())
        .args(["demo", "--steps", "2", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a run"));
    assert!(
        store.join("runs/stalled/mine/index.jsonl").is_file(),
        "the other run is kept"
    );
}

/// Each command under "Look further:" run as printed, in a scratch folder: it succeeds, says
/// something, and writes the file it names with `-o`. `serve` is skipped here (it serves until
/// stopped; tests/serve.rs runs it); `report` takes the stand-in assets (no wasm build needed).
fn every_suggested_command_runs(out: &str, store: &Path) {
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != "Look further:")
        .skip(1)
        .collect();
    assert!(
        lines.len() >= 6,
        "no suggestions after 'Look further:': {out}"
    );
    let scratch = temp_dir("demo-suggestions");
    let assets = common::report_assets::assets();
    let mut ran = 0;
    for line in lines {
        // "  somatize ARGS   what it does": the command ends where two spaces begin.
        let command = line.trim_start().split("  ").next().unwrap_or_default();
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words.first(), Some(&"somatize"), "not a command: {line:?}");
        assert!(
            command.contains(&*store.display().to_string()) || words[1] == "about",
            "the suggestion does not name the demo's store: {line:?}"
        );
        if words[1] == "serve" {
            continue;
        }
        let run = Command::new(binary())
            .args(&words[1..])
            .current_dir(&scratch)
            .env("SOMATIZE_ASSETS", &assets)
            .output()
            .expect("the binary runs");
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            run.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        match words.iter().position(|w| *w == "-o") {
            Some(i) => assert!(
                scratch
                    .join(words[i + 1])
                    .metadata()
                    .map(|m| m.len() > 0)
                    .unwrap_or(false),
                "{command} wrote no {}",
                words[i + 1]
            ),
            None => assert!(!stdout.trim().is_empty(), "{command} printed nothing"),
        }
        ran += 1;
    }
    assert!(ran >= 6, "ran {ran} suggested commands");
}

/// The README's command exactly (`somatize demo --store DIR`): slow in a debug build, so
/// run it with `cargo test --release --test demo_command -- --ignored`.
#[test]
#[ignore]
fn the_readme_command_end_to_end() {
    let store = temp_dir("demo-readme").join("somatize-demo");
    demo(&store, &[]);
    check_runs(&store);
    // The same contract whatever the sampling of the activations.
    for every in ["1", "100"] {
        let store = temp_dir(&format!("demo-every-{every}")).join("somatize-demo");
        demo(&store, &["--every", every]);
        check_runs(&store);
    }
}

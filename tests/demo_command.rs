//! `somatize demo` run as the built binary into a temporary store: every run raises the
//! flags its condition should (`Condition.raises`, and nothing outside `raises` and
//! `may_also`), the healthy one raises none, progress goes to stderr and the output says how
//! to look further. The debug build trains the full 300 steps and records every 100th; the
//! README's exact command (default steps and recording) is the ignored test, for release.

mod common;

use common::temp_dir;
use somatize::health::store::diagnose;
use somatize::store::{DirFs, Store};
use somatize::verdict::{FlagKind, Thresholds};
use std::path::Path;
use std::process::Command;

fn demo(store: &Path, extra: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
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

/// Every demo run in `store` judged at the default thresholds: what each must and may raise.
fn check_runs(store: &Path) {
    let s = Store::open(DirFs::new(store)).expect("the demo wrote a store");
    for c in somatize::demo::conditions() {
        let d = diagnose(&s, c.name, &Thresholds::default(), None).expect("diagnoses");
        let raised: Vec<FlagKind> = d
            .verdict
            .iter()
            .flat_map(|(_, f)| f.iter().map(|f| f.kind))
            .collect();
        for want in c.raises {
            assert!(
                raised.iter().any(|k| k.name() == *want),
                "{}: wanted {want}, got {:?}",
                c.name,
                d.verdict.to_names()
            );
        }
        for k in &raised {
            assert!(
                c.raises.contains(&k.name()) || c.may_also.contains(&k.name()),
                "{}: raised {} which it should not: {:?}",
                c.name,
                k.name(),
                d.verdict.to_names()
            );
        }
        if c.name == "healthy" {
            assert!(
                d.verdict.is_empty(),
                "healthy raised {:?}",
                d.verdict.to_names()
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
    // A second demo into the same store is refused, not mixed into the first.
    let again = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .arg("demo")
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a run"));
}

/// The README's command exactly (`somatize demo --store DIR`): slow in a debug build, so
/// run it with `cargo test --release --test demo_command -- --ignored`.
#[test]
#[ignore]
fn the_readme_command_end_to_end() {
    let store = temp_dir("demo-readme").join("somatize-demo");
    demo(&store, &[]);
    check_runs(&store);
}

//! Every command that prints, run as the built binary with its stdout a pipe whose reader is
//! already gone (`somatize seen S --run R | head -1`): it ends quietly, status 0, nothing on
//! stderr, never a panic. The store is four forwards of tests/common's pattern recorded here,
//! the tensor file ../shared/fixtures/state_dict.pt.

use crate::common;

use common::{somatize, temp_dir};
use std::path::PathBuf;
use std::process::{Command, Stdio};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");

/// ../shared (or `SOMATIZE_SHARED`).
fn shared() -> PathBuf {
    PathBuf::from(std::env::var("SOMATIZE_SHARED").unwrap_or_else(|_| SHARED.to_string()))
}

/// Run the binary with stdout a pipe already closed at its reading end: exit code and stderr.
fn into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_printing_command_exits_quietly_into_a_closed_pipe() {
    let root = temp_dir("closed-pipe");
    let mut rec = somatize::record::Recorder::with_writer(&root, "cnn", "w").unwrap();
    for f in 0..4 {
        rec.record(&common::forward(f, 1, 8)).unwrap();
    }
    drop(rec);
    let store = root.display().to_string();
    let pt = shared()
        .join("fixtures/state_dict.pt")
        .display()
        .to_string();
    let s = store.as_str();
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["runs", s],
        vec!["forwards", s, "--run", "cnn"],
        vec!["curve", s, "--run", "cnn"],
        vec!["facts", s, "--run", "cnn", "--forward", "0"],
        vec!["nodes", s, "--run", "cnn"],
        vec!["fleet", s, "--run", "cnn"],
        vec!["standing", s],
        vec!["seen", s, "--run", "cnn"],
        vec!["diagnose", s, "--run", "cnn"],
        vec!["figure", "progress", s, "--run", "cnn"],
        vec!["compare", s],
        vec!["figure", "compare", s],
        vec!["stats", &pt],
        vec!["thresholds"],
        vec!["about", "VANISHING"],
        vec![
            "spec-id",
            "--source",
            "param",
            "--selector",
            "fc1.weight",
            "--reduction",
            "l2",
            "--canonical",
        ],
    ];
    let json: Vec<Vec<&str>> = commands
        .iter()
        .filter(|c| !matches!(c[0], "figure" | "spec-id"))
        .map(|c| c.iter().copied().chain(["--json"]).collect())
        .collect();
    commands.extend(json);
    for args in &commands {
        // Each prints something when read, so the closed pipe is met for real.
        let (code, out, err) = somatize(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.is_empty(), "{args:?} printed nothing");
        let (code, err) = into_closed_pipe(args);
        assert_eq!(code, Some(0), "{args:?} into a closed pipe: {err}");
        assert!(
            !err.contains("panic") && !err.contains("Broken pipe") && !err.contains("os error"),
            "{args:?} into a closed pipe: {err}"
        );
        let err: Vec<&str> = err.lines().filter(|l| !l.starts_with("somatize")).collect();
        assert!(err.is_empty(), "{args:?} into a closed pipe: {err:?}");
    }
}

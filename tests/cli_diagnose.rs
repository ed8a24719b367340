//! `somatize import`, `diagnose`, `seen` and `figure profile|flags|overlaid`, run as the built binary over
//! ../shared/runs/example_cnn imported into a temporary store: exit statuses (`--fail-on`,
//! a bad thresholds file, an unknown flag, an empty folder) and what each prints.

use crate::common;

use common::{somatize, temp_dir};
use std::path::{Path, PathBuf};

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");

/// ../shared/runs/example_cnn; `SOMATIZE_SHARED` overrides where `shared/` is.
fn example_cnn() -> PathBuf {
    let shared = std::env::var("SOMATIZE_SHARED").unwrap_or_else(|_| SHARED.to_string());
    Path::new(&shared).join("runs/example_cnn")
}

/// example_cnn imported (statistics only) into a fresh store; returns the store's path.
fn imported(name: &str) -> String {
    let root = temp_dir(name);
    let store = root.join("store").display().to_string();
    let dir = example_cnn().display().to_string();
    let (code, _, err) = somatize(&[
        "import",
        &dir,
        "--store",
        &store,
        "--run",
        "cnn",
        "--no-tensors",
    ]);
    assert_eq!(code, 0, "import failed: {err}");
    assert!(err.contains("12 forwards (steps 0..11)"), "{err}");
    store
}

#[test]
fn diagnose_seen_and_figures_over_an_imported_run() {
    let store = imported("cli-diagnose");
    let (code, out, err) = somatize(&["diagnose", &store, "--run", "cnn"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("12 forwards read"), "{out}");
    let (code, out, _) = somatize(&[
        "diagnose",
        &store,
        "--run",
        "cnn",
        "--with-bounds",
        "--last",
        "3",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["forwards"]["count"], 3);
    assert_eq!(v["forwards"]["last"], 11);
    assert_eq!(v["thresholds"]["exploding_ratio"], 70.0);
    assert!(v["diagnosis"].is_object());
    let (code, out, _) = somatize(&["seen", &store, "--run", "cnn", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["0"]["kind"], "Conv2d");
    assert!(
        v["0"]["grad_norm"].as_f64().is_some_and(|g| g > 0.0),
        "{}",
        v["0"]
    );
    assert!(v["loss"]["loss"].as_f64().is_some());
    // A snapshot zip reads the same, graph included.
    let snap = format!("{store}.zip");
    let (code, _, err) = somatize(&["export", &store, "--run", "cnn", "-o", &snap]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = somatize(&["seen", &snap, "--run", "cnn", "--json"]);
    assert_eq!(code, 0, "{err}");
    let z: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(z, v, "the snapshot reads as the folder");
    for kind in ["profile", "flags", "overlaid"] {
        let (code, out, err) = somatize(&["figure", kind, &store, "--run", "cnn"]);
        assert_eq!(code, 0, "{kind}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("figure JSON");
        assert!(
            v["data"].as_array().is_some_and(|d| !d.is_empty()),
            "{kind}"
        );
    }
    let (_, out, _) = somatize(&["figure", "overlaid", &snap, "--run", "cnn"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("figure JSON");
    let boxes = v["layout"]["shapes"].as_array().unwrap();
    assert_eq!(
        boxes.iter().filter(|s| s["type"] == "rect").count(),
        9,
        "one box per graph node"
    );
}

#[test]
fn fail_on_sets_the_exit_status_only_when_a_named_flag_is_raised() {
    let store = imported("cli-fail-on");
    let dir = temp_dir("cli-thresholds");
    // A stalled bound of 1 makes every update stall: STALLED is raised.
    let strict = dir.join("strict.json");
    std::fs::write(&strict, r#"{"stalled_update_ratio": 1.0}"#).unwrap();
    let strict = strict.display().to_string();
    // Each row: the --fail-on list and the wanted exit status.
    for (fail_on, want) in [("STALLED", 1), ("NAN,STALLED", 1), ("NAN,INF", 0)] {
        let (code, out, err) = somatize(&[
            "diagnose",
            &store,
            "--run",
            "cnn",
            "--thresholds",
            &strict,
            "--fail-on",
            fail_on,
        ]);
        assert_eq!(code, want, "--fail-on {fail_on}: {out}{err}");
        assert!(out.contains("STALLED"), "{out}");
        assert!(out.contains(&strict), "names its thresholds: {out}");
    }
    // Without --fail-on, flags raised still exit 0.
    let (code, _, _) = somatize(&["diagnose", &store, "--run", "cnn", "--thresholds", &strict]);
    assert_eq!(code, 0);
    // A bad thresholds file and an unknown flag are errors (exit 2) that say what is wrong.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"stalled": 1}"#).unwrap();
    let bad = bad.display().to_string();
    for (args, want) in [
        (
            vec!["diagnose", &store, "--run", "cnn", "--thresholds", &bad],
            "unknown threshold \"stalled\"",
        ),
        (
            vec!["diagnose", &store, "--run", "cnn", "--fail-on", "SICK"],
            "unknown flag \"SICK\"",
        ),
        (vec!["diagnose", &store, "--run", "nope"], "nope"),
    ] {
        let (code, _, err) = somatize(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
    }
}

#[test]
fn import_refuses_a_folder_without_steps() {
    let dir = temp_dir("cli-import-empty");
    let store = dir.join("store").display().to_string();
    let (code, _, err) = somatize(&[
        "import",
        &dir.display().to_string(),
        "--store",
        &store,
        "--run",
        "r",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no step_<n>.npz files"), "{err}");
}

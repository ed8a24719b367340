//! Tensor-file readers against the real fixtures in ../shared/fixtures (written by numpy 2.4,
//! torch 2.15 and safetensors 0.8; `expected.json` holds numpy's float64 statistics).

use serde_json::Value;
use somatize::tensor::{Problem, TensorFile};
use std::collections::BTreeSet;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures");

/// A fixture's path; `SOMATIZE_FIXTURES` overrides the folder (for worktrees not beside `shared/`).
fn fixture(name: &str) -> String {
    let dir = std::env::var("SOMATIZE_FIXTURES").unwrap_or_else(|_| FIXTURES.to_string());
    format!("{dir}/{name}")
}

fn expected() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(fixture("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

const STATS: [&str; 8] = [
    "l2",
    "l1",
    "mean",
    "std",
    "min",
    "max",
    "absmax",
    "zero_fraction",
];
const COUNTS: [&str; 3] = ["count", "nonfinite", "nan"];

/// Compare one file's `{key: summary}` JSON with expected.json's entry; a list of mismatches.
fn compare(file: &str, got: &Value, want: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    let (Some(got), Some(want)) = (got.as_object(), want.as_object()) else {
        return vec![format!("{file}: not objects")];
    };
    let got_keys: BTreeSet<_> = got.keys().collect();
    let want_keys: BTreeSet<_> = want.keys().collect();
    if got_keys != want_keys {
        bad.push(format!("{file}: keys {got_keys:?}, wanted {want_keys:?}"));
    }
    for (key, w) in want {
        let Some(g) = got.get(key) else { continue };
        for field in ["shape", "dtype"].into_iter().chain(COUNTS) {
            if g.get(field) != w.get(field) {
                bad.push(format!(
                    "{file} {key} {field}: got {:?}, wanted {:?}",
                    g.get(field),
                    w.get(field)
                ));
            }
        }
        for field in STATS {
            match (
                g.get(field).and_then(Value::as_f64),
                w.get(field).and_then(Value::as_f64),
            ) {
                (None, None) => {}
                (Some(a), Some(b)) if (a - b).abs() <= 1e-6 * b.abs().max(1e-300) || a == b => {}
                (a, b) => bad.push(format!("{file} {key} {field}: got {a:?}, wanted {b:?}")),
            }
        }
    }
    bad
}

#[test]
fn every_good_fixture_matches_numpy_from_a_path() {
    let mut bad = Vec::new();
    for (file, want) in expected() {
        match TensorFile::open_path(fixture(&file)).and_then(|mut f| f.summarize()) {
            Ok(s) => bad.extend(compare(&file, &serde_json::to_value(&s).unwrap(), &want)),
            Err(e) => bad.push(format!("{file}: {e}")),
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn every_good_fixture_matches_numpy_from_bytes() {
    let mut bad = Vec::new();
    for (file, want) in expected() {
        let bytes = std::fs::read(fixture(&file)).unwrap();
        match TensorFile::open_bytes(&file, &bytes).and_then(|mut f| f.summarize()) {
            Ok(s) => bad.extend(compare(&file, &serde_json::to_value(&s).unwrap(), &want)),
            Err(e) => bad.push(format!("{file}: {e}")),
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

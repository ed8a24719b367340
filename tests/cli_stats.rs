//! `somatize stats` end to end on fixtures from ../shared/fixtures (see its README.md).

use std::process::Command;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures");

/// A fixture's path; `SOMATIZE_FIXTURES` overrides the folder (for worktrees not beside `shared/`).
fn fixture(name: &str) -> String {
    let dir = std::env::var("SOMATIZE_FIXTURES").unwrap_or_else(|_| FIXTURES.to_string());
    format!("{dir}/{name}")
}

fn stats(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .arg("stats")
        .args(args)
        .output()
        .expect("runs");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8");
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[test]
fn json_output_has_the_fields_of_expected_json() {
    let (ok, out, err) = stats(&[&fixture("dtypes.pt"), "--json"]);
    assert!(ok, "failed: {err}");
    let got: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("expected.json")).unwrap()).unwrap();
    let (got, want) = (&got["param.bf16"], &want["dtypes.pt"]["param.bf16"]);
    for field in [
        "shape",
        "dtype",
        "count",
        "nonfinite",
        "nan",
        "min",
        "max",
        "absmax",
        "zero_fraction",
    ] {
        assert_eq!(got[field], want[field], "{field}");
    }
    let (a, b) = (got["std"].as_f64().unwrap(), want["std"].as_f64().unwrap());
    assert!((a - b).abs() <= 1e-6 * b, "std {a} vs {b}");
}

#[test]
fn table_has_a_header_and_one_row_per_tensor() {
    let (ok, out, err) = stats(&[&fixture("step_stored.npz")]);
    assert!(ok, "failed: {err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert!(
        lines[0].starts_with("key") && lines[0].ends_with("zero_fraction"),
        "{}",
        lines[0]
    );
    assert!(
        lines[2].starts_with("param.fc1.bias") && lines[2].contains("(16,)"),
        "{}",
        lines[2]
    );
}

#[test]
fn errors_exit_non_zero_with_the_message() {
    for (file, words) in [
        ("bad_evil.pt", "posix.system"),
        ("bad_crc.npz", "CRC-32"),
        ("missing.npy", "read failed"),
    ] {
        let (ok, out, err) = stats(&[&fixture(file)]);
        assert!(!ok, "{file} succeeded: {out}");
        assert!(
            err.contains(file) && err.contains(words),
            "{file}: stderr {err:?}, wanted {words:?}"
        );
    }
}

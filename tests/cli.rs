//! The native CLI end to end: --help, --version, and spec ids equal to the golden ones.

use std::process::Command;

fn somatize(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(args)
        .output()
        .expect("the somatize binary runs")
}

#[test]
fn help_and_version_answer() {
    let out = somatize(&["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim(),
        format!("somatize {}", env!("CARGO_PKG_VERSION"))
    );
    let out = somatize(&["--help"]);
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("spec-id"));
}

#[test]
fn spec_id_prints_the_golden_ids() {
    // tests/golden/spec_ids.json is shared with the wasm, Node and browser tests.
    let golden: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("golden/spec_ids.json")).unwrap();
    for case in golden {
        let out = somatize(&["spec-id", &case["spec"].to_string()]);
        let got = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            got.trim(),
            case["id"].as_str().unwrap(),
            "spec {}",
            case["spec"]
        );
    }
}

#[test]
fn the_id_is_sha256_of_the_canonical_form() {
    // Reference digest from Python: hashlib.sha256(canonical.encode()).hexdigest()[:16].
    let out = somatize(&[
        "spec-id",
        "--source=param",
        "--selector=fc1.weight",
        "--reduction=l2",
        "--canonical",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "c20fbee7e79167b0",
            r#"{"source":"param","selector":"fc1.weight","transforms":[],"reduction":"l2","temporal":null,"frequency":1,"budget_hint":null}"#
        ]
    );
}

#[test]
fn a_bad_spec_exits_2_with_the_reason() {
    let out = somatize(&[
        "spec-id",
        r#"{"source":"param","selector":"w","reduction":"l2","colour":1}"#,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("colour"), "stderr: {err}");
}

//! Golden spec ids: the ids in tests/golden/spec_ids.json must never change.
//!
//! The golden file was written once by `somatize spec-id --canonical` and each id checked
//! independently with Python's hashlib (`sha256(canonical).hexdigest()[:16]`). Node and
//! browser tests read the same file, so every build computes the same ids.

use serde::Deserialize;
use somatize::observe::spec::{BudgetHint, Temporal};
use somatize::ObservableSpec;

#[derive(Deserialize)]
struct Golden {
    spec: serde_json::Value,
    canonical: String,
    id: String,
}

fn golden() -> Vec<Golden> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/spec_ids.json");
    let text = std::fs::read_to_string(path).expect("golden file");
    serde_json::from_str(&text).expect("golden JSON")
}

#[test]
fn golden_ids_and_canonical_forms_hold() {
    let cases = golden();
    assert!(cases.len() >= 10, "only {} golden specs", cases.len());
    for case in cases {
        let spec = ObservableSpec::from_json(&case.spec.to_string()).unwrap();
        assert_eq!(
            spec.canonical_json().unwrap(),
            case.canonical,
            "for {}",
            case.spec
        );
        assert_eq!(spec.id().unwrap(), case.id, "for {}", case.spec);
    }
}

#[test]
fn equal_meanings_share_an_id() {
    let base = ObservableSpec::new("param", "fc1.weight", "sparsity(0.000001)");
    let mut variants = vec![
        ObservableSpec::new("param", "fc1.weight", "sparsity"),
        ObservableSpec::new(" param ", "fc1.weight", "Sparsity(1e-6)"),
    ];
    let mut zero = base.clone();
    zero.budget_hint = Some(BudgetHint { compute_ms: -0.0 });
    let mut plus_zero = base.clone();
    plus_zero.budget_hint = Some(BudgetHint { compute_ms: 0.0 });
    assert_eq!(
        zero.id().unwrap(),
        plus_zero.id().unwrap(),
        "-0 ms and 0 ms"
    );
    variants.push(ObservableSpec::from_json(
        r#"{"reduction":"sparsity","frequency":1,"selector":"fc1.weight","source":"param","transforms":[]}"#,
    ).unwrap());
    for v in variants {
        assert_eq!(v.id().unwrap(), base.id().unwrap(), "{v:?}");
    }
    let mut ema = base.clone();
    ema.temporal = Some(Temporal::Ema { alpha: 0.1 });
    let mut ema2 = base.clone();
    ema2.temporal = Some(Temporal::Ema { alpha: 0.2 });
    assert_ne!(ema.id().unwrap(), ema2.id().unwrap(), "alpha is identity");
}

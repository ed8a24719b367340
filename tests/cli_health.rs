//! `somatize about` and `somatize thresholds`, run as the built binary.

use crate::common;

use common::somatize;

#[test]
fn about_says_what_a_flag_means_beside_its_bounds() {
    // Each row: the flag asked for, and what the answer must contain.
    for (flag, wants) in [
        (
            "VANISHING",
            &["vanishing_ratio = 1e-3", "published", "grad_norm"][..],
        ),
        (
            "DEAD_CHANNELS(3)",
            &["DEAD_CHANNELS", "dead_channels_min = 1", "ours"][..],
        ),
        ("INF", &["no threshold"][..]),
    ] {
        let (code, out, err) = somatize(&["about", flag]);
        assert_eq!(code, 0, "about {flag}: {err}");
        for want in wants {
            assert!(
                out.contains(want),
                "about {flag}: wanted {want:?} in\n{out}"
            );
        }
    }
    let (code, out, _) = somatize(&["about", "LEAKAGE", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["bounds"][0]["name"], "leakage_cka");
    assert_eq!(v["metrics"][0], "cka");
}

#[test]
fn about_an_unknown_flag_fails_naming_the_flags() {
    let (code, out, err) = somatize(&["about", "HEALTHY"]);
    assert_eq!(code, 2, "stdout {out}");
    assert!(
        err.contains("unknown flag \"HEALTHY\"") && err.contains("LOSING_PLASTICITY"),
        "{err}"
    );
}

#[test]
fn thresholds_json_reads_back_as_the_defaults() {
    let (code, out, err) = somatize(&["thresholds", "--json"]);
    assert_eq!(code, 0, "{err}");
    let t = somatize::health::thresholds::from_json(&out).expect("reads back");
    assert_eq!(t, somatize::verdict::Thresholds::default());
    let (code, table, _) = somatize(&["thresholds"]);
    assert_eq!(code, 0);
    for b in somatize::verdict::BOUNDS {
        assert!(table.contains(b.name), "{} missing from\n{table}", b.name);
    }
}

//! Summaries as a frame carries them (src/health/summary.rs): a hand-built one whose metrics
//! are worked out here by hand, the same metrics as the whole tensors it summarises give, a
//! real one captured from `somatize.torch.watch`, hostile ones refused with what is wrong, and
//! the companion recording a forward whose summary it cannot use.

use serde_json::{json, Value};
use somatize::health::record::{step_stats, summary_stats, Graph};
use somatize::health::summary::{StepSummary, SummaryError, WireSummary};
use somatize::health::Step;
use somatize::record::frame::{encode, read_frame};
use somatize::store::{DirFs, NodeStats, Store};
use somatize::tensor::TypedTensor;
use std::path::Path;

fn wire(v: Value) -> WireSummary {
    serde_json::from_value(v).expect("a summary's structure")
}

fn graph() -> Graph {
    Graph::of([("fc", "Linear"), ("act", "Tanh")])
}

/// `fc`: W = [[3, 4]] (b = [0]), gradient [[0.5, 0]] and [0]; the update ΔW = [[0, 0.3]]
/// applied to it. `act` (Tanh) on 2 units × 3 positions: unit 0 = [0.1, 0.2, 0.3] (around
/// shift 0.1: sums 0.3, Σd² 0.05), unit 1 = [0.99, 0.98, -0.99] (signs form: sign sum 1,
/// non-zero 3; Σ|x| 2.96; saturated 3).
fn hand_built() -> (WireSummary, Vec<f64>) {
    let values = vec![
        // params (2 entries): finite, nan, sum_sq, sum_abs, absmax
        2.0,
        1.0,
        0.0,
        0.0,
        25.0,
        0.0,
        7.0,
        0.0,
        4.0,
        0.0, //
        // grads: finite, nan, sum_sq, sum_abs, absmax, zeros
        2.0,
        1.0,
        0.0,
        0.0,
        0.25,
        0.0,
        0.5,
        0.0,
        0.5,
        0.0,
        1.0,
        1.0, //
        // updates: sum_sq, base_sq
        0.09,
        0.0,
        25.0,
        0.0, //
        // act body, signs form: shift, sum, sum_sq, sum_abs, sign_sum, nonzero, saturated
        0.1,
        0.99,
        0.3,
        -0.01 - 1.98,
        0.05,
        0.0001 + 3.9204,
        0.6,
        2.96,
        3.0,
        1.0,
        3.0,
        3.0,
        0.0,
        3.0,
    ];
    let w = wire(json!({
        "tensors": [
            {"keys": [["param.fc.weight"], ["param.fc.bias"]], "shapes": [[1, 2], [1]],
             "finite": 0, "nan": 2, "sum_sq": 4, "sum_abs": 6, "absmax": 8},
            {"keys": [["grad.fc.weight"], ["grad.fc.bias"]], "shapes": [[1, 2], [1]],
             "finite": 10, "nan": 12, "sum_sq": 14, "sum_abs": 16, "absmax": 18, "zeros": 20}
        ],
        "updates": [{"keys": [["update.fc.weight"], ["update.fc.bias"]], "sum_sq": 22,
                     "base_sq": 24}],
        "outputs": [{"node": "act", "units": 2, "elements": 6, "positions": 3, "at": 26,
                     "form": "signs", "saturated": true}]
    }));
    (w, values)
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-12 * want.abs().max(1.0)
}

fn expect(stats: &NodeStats, node: &str, want: &[(&str, f64)]) {
    let row = &stats[node];
    for (metric, value) in want {
        let got = row.get(*metric).map(|n| n.0);
        assert!(
            got.is_some_and(|g| close(g, *value)),
            "{node}.{metric}: got {got:?}, wanted {value}; all: {row:?}"
        );
    }
}

#[test]
fn a_hand_built_summary_gives_the_metrics_worked_out_by_hand() {
    let (w, values) = hand_built();
    let summary = StepSummary::from_wire(&w, &values, &[]).unwrap();
    let stats = summary_stats(&graph(), &summary);
    expect(
        &stats,
        "fc",
        &[
            ("param_norm", 5.0),
            ("param_absmax", 4.0),
            ("param_mean_abs", 7.0 / 3.0),
            ("update_norm", 0.3),
            ("update_ratio", 0.3 / 5.0),
            ("update_steps", 1.0),
            ("grad_norm", 0.5),
            ("grad_mean_abs", 0.5 / 3.0),
            ("grad_zero_fraction", 2.0 / 3.0),
            ("nan", 0.0),
            ("nonfinite", 0.0),
        ],
    );
    let mean1 = (0.99 + 0.98 - 0.99) / 3.0;
    let var0 = 0.02 / 3.0; // population variance of [0.1, 0.2, 0.3]
    let var1 = [0.99f64, 0.98, -0.99]
        .iter()
        .map(|x| (x - mean1).powi(2))
        .sum::<f64>()
        / 3.0;
    expect(
        &stats,
        "act",
        &[
            ("act_mean", (0.6 + 0.98) / 6.0),
            ("act_zero_fraction", 0.0),
            ("units", 2.0),
            ("unit_samples", 3.0),
            ("act_var", (var0 + var1) / 2.0),
            ("act_mean_sq", (0.04 + mean1 * mean1) / 2.0),
            ("dead_units", 0.0),
            ("act_saturated_fraction", 0.5),
            ("saturated_units", 1.0),
            ("saturated_unit_fraction", 0.5),
        ],
    );
    // A Linear kind is not saturating: the same output there has no saturation metrics.
    let stats = summary_stats(&Graph::of([("act", "Linear")]), &summary);
    assert!(!stats["act"].contains_key("saturated_units"), "{stats:?}");
}

/// The same numbers as whole tensors, measured as import measures a dump: the same metrics.
#[test]
fn the_hand_built_summary_is_what_the_whole_tensors_give() {
    let t = |key: &str, v: Vec<f32>, shape: &[usize]| {
        (
            key.to_string(),
            TypedTensor::from_f32(key, v, shape.to_vec()).unwrap(),
        )
    };
    let step: Step = [
        t("param.fc.weight", vec![3.0, 4.0], &[1, 2]),
        t("param.fc.bias", vec![0.0], &[1]),
        t("grad.fc.weight", vec![0.5, 0.0], &[1, 2]),
        t("grad.fc.bias", vec![0.0], &[1]),
        t("update.fc.weight", vec![0.0, 0.3], &[1, 2]),
        t("update.fc.bias", vec![0.0], &[1]),
        // (N=3, units 2): rows are positions
        t("act.act", vec![0.1, 0.99, 0.2, 0.98, 0.3, -0.99], &[3, 2]),
    ]
    .into_iter()
    .collect();
    let whole = step_stats(&graph(), &step, None).unwrap();
    let (w, values) = hand_built();
    let from_summary = summary_stats(&graph(), &StepSummary::from_wire(&w, &values, &[]).unwrap());
    for node in ["fc", "act"] {
        for (metric, want) in &whole[node] {
            // (The whole tensors also give the gradient's and the output's spectra, which the
            // hand-built summary leaves out.)
            if metric.contains("rank") || metric == "rank_dims" {
                continue;
            }
            let got = from_summary[node].get(metric).map(|n| n.0);
            // float32 tensors against the hand's decimal numbers
            assert!(
                got.is_some_and(|g| (g - want.0).abs() <= 1e-6 * want.0.abs().max(1.0)),
                "{node}.{metric}: summary {got:?}, whole tensors {}",
                want.0
            );
        }
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// fuzz/corpus/frame/summary_frame.bin: step 1 of `watch(every=1, apart=[("0", "2")])` over
/// `Sequential(Linear(4, 6), Tanh(), Linear(6, 2))` with Adam, as the channel sent it
/// (fuzz/corpus/README.md).
#[test]
fn a_summary_torch_sent_reads_back_whole() {
    let bytes = fixture("fuzz/corpus/frame/summary_frame.bin");
    let frame = read_frame(&mut &bytes[..]).unwrap().unwrap();
    let summary = frame.summary().expect("a summary").unwrap();
    let graph = Graph::of([("0", "Linear"), ("1", "Tanh"), ("2", "Linear")]);
    let stats = summary_stats(&graph, &summary);
    for (node, metrics) in [
        (
            "0",
            &[
                "param_norm",
                "grad_norm",
                "update_ratio",
                "act_var",
                "update_erank",
            ][..],
        ),
        (
            "1",
            &["act_saturated_fraction", "ignored_units", "feature_erank"],
        ),
        ("2", &["cka", "grad_zero_fraction", "rank_dims"]),
    ] {
        for m in metrics {
            assert!(stats[node].contains_key(*m), "{node} lacks {m}: {stats:?}");
        }
    }
    // Its numbers are never stored as a tensor of the forward.
    assert!(frame.record(1, true).tensors.is_empty());
}

/// Each change to the hand-built summary, and the error it must give.
#[test]
fn hostile_summaries_are_refused_with_what_is_wrong() {
    type Change = fn(&mut Value, &mut Vec<f64>);
    let cases: [(&str, Change, &str); 11] = [
        (
            "an offset past the numbers",
            |w, _| w["tensors"][0]["sum_sq"] = json!(1000),
            "past the",
        ),
        (
            "more finite entries than the tensor has",
            |_, v| v[0] = 3.0,
            "finite",
        ),
        (
            "a count that is not whole",
            |_, v| v[2] = 0.5,
            "not a count",
        ),
        (
            "keys and shapes that differ in number",
            |w, _| w["tensors"][0]["shapes"] = json!([[1, 2]]),
            "shapes",
        ),
        (
            "sum_abs without absmax",
            |w, _| {
                w["tensors"][0].as_object_mut().unwrap().remove("absmax");
            },
            "together",
        ),
        (
            "units by positions that are not the entries",
            |w, _| w["outputs"][0]["elements"] = json!(7),
            "positions",
        ),
        (
            "non-finite entries in the all-finite form",
            |w, v| {
                w["outputs"][0]["counts"] = json!(v.len());
                v.extend([0.0, 1.0]);
            },
            "all-finite",
        ),
        (
            "a spectrum larger than the sample's bound",
            |w, v| {
                let _ = v;
                w["samples"] = json!([{"node": "fc", "of": "grad", "rows": 65, "cols": 2,
                                      "at": 0}]);
            },
            "at most 64",
        ),
        (
            "a sample past the samples",
            |w, _| {
                w["samples"] = json!([{"node": "fc", "of": "grad", "rows": 12, "cols": 12,
                                      "at": 0}]);
            },
            "past the",
        ),
        (
            "column sums of a tensor of one axis",
            |w, _| w["tensors"][0]["columns"] = json!([{"entry": 1, "abs": 0}]),
            "column sums",
        ),
        (
            "a unit's positives over its count",
            |_, v| v[26 + 9] = 9.0, // unit 1's sign sum: positives (9 + 3) / 2 > 3
            "positive",
        ),
    ];
    for (what, change, wanted) in cases {
        let (w, mut values) = hand_built();
        let mut w = serde_json::to_value(&w).unwrap();
        change(&mut w, &mut values);
        // 130 samples' numbers: room for a 65 x 2 sample, not a 12 x 12 one.
        let got = StepSummary::from_wire(&wire(w), &values, &[0.5; 130]);
        match got {
            Err(e) => assert!(
                e.to_string().contains(wanted),
                "{what}: got {e}, wanted one saying {wanted:?}"
            ),
            Ok(_) => panic!("{what}: accepted"),
        }
    }
    // A non-finite sample has no spectrum, and is no error; a finite one's singular values
    // are taken in Rust: [3, 4] has the one singular value 5.
    let (w, values) = hand_built();
    let mut w = serde_json::to_value(&w).unwrap();
    w["samples"] = json!([{"node": "fc", "of": "grad", "rows": 1, "cols": 2, "at": 0}]);
    let s = StepSummary::from_wire(&wire(w.clone()), &values, &[f64::NAN, 1.0]).unwrap();
    assert!(s.spectra.is_empty(), "{s:?}");
    let s = StepSummary::from_wire(&wire(w), &values, &[3.0, 4.0]).unwrap();
    let sv = &s.spectra["fc"]
        .grad
        .as_ref()
        .expect("a gradient spectrum")
        .values;
    assert!(sv.len() == 1 && (sv[0] - 5.0).abs() < 1e-12, "{sv:?}");
    // The numbers must be a float64 tensor named `summary`.
    let (w, values) = hand_built();
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|x| (*x as f32).to_le_bytes())
        .collect();
    let header = json!({"forward": 0, "summary": w,
                        "tensors": [{"key": "summary", "dtype": "float32",
                                     "shape": [values.len()]}]});
    let frame = read_frame(&mut &encode(&header, &[&bytes])[..])
        .unwrap()
        .unwrap();
    assert!(matches!(
        frame.summary(),
        Some(Err(SummaryError::Values { .. }))
    ));
    let header = json!({"forward": 0, "summary": serde_json::to_value(hand_built().0).unwrap()});
    let frame = read_frame(&mut &encode(&header, &[])[..]).unwrap().unwrap();
    let err = frame.summary().unwrap().unwrap_err();
    assert!(err.to_string().contains("no tensor"), "{err}");
    // The samples: float64 or float32, read alike; another dtype, or none when the summary
    // names samples, is refused.
    let (w, values) = hand_built();
    let mut w = serde_json::to_value(&w).unwrap();
    w["samples"] = json!([{"node": "fc", "of": "grad", "rows": 1, "cols": 2, "at": 0}]);
    let numbers: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    let frame_with = |samples: Option<(&str, Vec<u8>)>| {
        let mut tensors = vec![json!({"key": "summary", "dtype": "float64",
                                      "shape": [values.len()]})];
        let mut parts: Vec<Vec<u8>> = vec![numbers.clone()];
        if let Some((dtype, bytes)) = samples {
            tensors.push(json!({"key": "summary.samples", "dtype": dtype, "shape": [2]}));
            parts.push(bytes);
        }
        let header = json!({"forward": 0, "summary": w, "tensors": tensors});
        let parts: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        read_frame(&mut &encode(&header, &parts)[..])
            .unwrap()
            .unwrap()
    };
    let f64s: Vec<u8> = [3.0f64, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let f32s: Vec<u8> = [3.0f32, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    for (dtype, bytes) in [("float64", f64s), ("float32", f32s)] {
        let s = frame_with(Some((dtype, bytes))).summary().unwrap().unwrap();
        let sv = &s.spectra["fc"]
            .grad
            .as_ref()
            .expect("a gradient spectrum")
            .values;
        assert!(
            sv.len() == 1 && (sv[0] - 5.0).abs() < 1e-12,
            "{dtype}: {sv:?}"
        );
    }
    let i32s: Vec<u8> = [3i32, 4].iter().flat_map(|x| x.to_le_bytes()).collect();
    let err = frame_with(Some(("int32", i32s)))
        .summary()
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("not float64 or float32"), "{err}");
    let err = frame_with(None).summary().unwrap().unwrap_err();
    assert!(err.to_string().contains("summary's samples"), "{err}");
}

/// A listening companion takes a frame's summary as the forward's metrics; one whose summary
/// it cannot use is recorded all the same, with a message saying so.
#[test]
fn the_companion_records_a_summary_and_survives_a_bad_one() {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::process::{Command, Stdio};
    let root = crate::common::temp_dir("summary-companion");
    let socket = root.join("s.sock");
    let companion = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(["record", "--store"])
        .arg(&root)
        .args(["--run", "r", "--readings", "0.05", "--listen"])
        .arg(&socket)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while !socket.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
        waited += 1;
        assert!(waited < 1000, "the companion never opened {socket:?}");
    }
    let mut conn = UnixStream::connect(&socket).unwrap();
    let (w, values) = hand_built();
    for forward in 0..2u64 {
        let mut summary = serde_json::to_value(&w).unwrap();
        if forward == 1 {
            summary["outputs"][0]["at"] = json!(10_000);
        }
        let header = json!({
            "forward": forward,
            "facts": [{"node": "fc", "kind": "Linear"}, {"node": "act", "kind": "Tanh"},
                      {"node": "loss", "kind": "loss", "value": 0.5}],
            "summary": summary,
            "tensors": [{"key": "summary", "dtype": "float64", "shape": [values.len()]}],
        });
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        conn.write_all(&encode(&header, &[&bytes])).unwrap();
    }
    conn.write_all(&encode(&json!({"type": "end"}), &[]))
        .unwrap();
    drop(conn);
    let out = companion.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("forward 1: the summary was NOT used") && err.contains("past the"),
        "{err}"
    );
    let store = Store::open(DirFs::new(&root)).unwrap();
    let items: Vec<_> = store.scan("r").unwrap().map(Result::unwrap).collect();
    assert_eq!(items.len(), 2, "both forwards recorded");
    let first = store.fetch("r", &items[0].writer, &items[0].entry).unwrap();
    let stats = first.stats().unwrap();
    expect(&stats, "fc", &[("param_norm", 5.0), ("update_ratio", 0.06)]);
    expect(&stats, "act", &[("saturated_units", 1.0)]);
    expect(&stats, "loss", &[("loss", 0.5), ("nonfinite", 0.0)]);
    assert!(first.tensor_keys().is_empty(), "{:?}", first.tensor_keys());
    let second = store.fetch("r", &items[1].writer, &items[1].entry).unwrap();
    let stats = second.stats().unwrap();
    assert!(
        !stats.contains_key("act") && stats.contains_key("loss"),
        "{stats:?}"
    );
}

/// An output whose one unit is non-finite throughout (seen on the benchmark's nan-cnn: a
/// channel of 1e29s gone to inf) still has the mean of its finite entries, and its other
/// metrics over the live unit.
#[test]
fn a_unit_with_no_finite_output_leaves_the_mean_of_the_rest() {
    let act = TypedTensor::from_f32(
        "act.act",
        vec![1.0, f32::NAN, 2.0, f32::INFINITY, 6.0, f32::NAN],
        vec![3, 2],
    )
    .unwrap();
    let step: Step = [("act.act".to_string(), act)].into_iter().collect();
    let stats = step_stats(&Graph::of([("act", "Linear")]), &step, None).unwrap();
    let row = &stats["act"];
    for (metric, want) in [
        ("act_mean", 3.0),
        ("act_mean_sq", 9.0),
        ("act_var", 14.0 / 3.0),
        ("nonfinite", 3.0),
        ("units", 2.0),
    ] {
        let got = row.get(metric).map(|n| n.0);
        assert!(
            got.is_some_and(|g| close(g, want)),
            "{metric}: got {got:?}, wanted {want}; all: {row:?}"
        );
    }
}

//! The moment reductions agree with numpy float64 on the real .npy fixtures within 1e-6
//! relative. The arrays come from ../shared/fixtures (written by numpy; `expected.json`
//! holds numpy's float64 statistics of each). They are loaded here with the `npyz` crate
//! only to get at the values; somatize's own readers are tested elsewhere. `f16.npy` is left
//! out (npyz is built without its `half` feature).

use somatize::ops;
use somatize::registry;
use somatize::tensor::{Provenance, TensorData, TypedTensor};
use somatize::{ObservableSpec, Value};

/// ../shared/fixtures beside the repo (or beside the worktrees' parent, for a worktree).
fn fixtures() -> String {
    let beside = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/");
    if std::path::Path::new(beside).is_dir() {
        beside.to_string()
    } else {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/").to_string()
    }
}

fn load(name: &str) -> TypedTensor {
    let bytes = std::fs::read(format!("{}{name}", fixtures())).expect("fixture");
    let npy = npyz::NpyFile::new(&bytes[..]).expect("npy header");
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let descr = npy.dtype().descr().trim_matches('\'').to_string();
    let data = match &descr[1..] {
        "f4" => TensorData::F32(npy.into_vec().unwrap()),
        "f8" => TensorData::F64(npy.into_vec().unwrap()),
        "i4" => TensorData::I32(npy.into_vec().unwrap()),
        "i8" => TensorData::I64(npy.into_vec().unwrap()),
        "i1" => TensorData::I8(npy.into_vec().unwrap()),
        "u1" => TensorData::U8(npy.into_vec().unwrap()),
        "b1" => TensorData::Bool(npy.into_vec().unwrap()),
        other => panic!("{name}: no case for dtype {other}"),
    };
    TypedTensor::new(data, shape, Provenance::default()).expect("shape fits")
}

#[test]
fn moment_reductions_match_numpy_on_every_npy_fixture() {
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}expected.json", fixtures())).unwrap(),
    )
    .unwrap();
    let names = [
        "count",
        "nonfinite",
        "nan",
        "l2",
        "l1",
        "mean",
        "std",
        "min",
        "max",
        "absmax",
        "zero_fraction",
    ];
    let plans: Vec<_> = names
        .iter()
        .map(|r| registry::plan(&ObservableSpec::new("param", "x", r)).unwrap())
        .collect();
    let mut checked = 0;
    for (file, arrays) in expected.as_object().unwrap() {
        if !file.ends_with(".npy") || file == "f16.npy" {
            continue;
        }
        let stats = arrays.as_object().unwrap().values().next().unwrap();
        let tensor = load(file);
        let got = ops::reduce(&tensor, &plans);
        for (name, value) in names.iter().zip(got) {
            let got = match value.unwrap() {
                Value::Scalar(v) => v,
                other => panic!("{file} {name}: not a scalar: {other:?}"),
            };
            let want = stats.get(*name).and_then(|v| v.as_f64());
            match (got, want) {
                (Some(g), Some(w)) => assert!(
                    (g - w).abs() <= 1e-6 * w.abs() || g == w,
                    "{file} {name}: got {g}, numpy {w}"
                ),
                (g, w) => assert_eq!(g, w, "{file} {name}"),
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 15, "npy fixtures checked");
}

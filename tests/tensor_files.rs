//! Tensor-file readers against the real fixtures in ../shared/fixtures (written by numpy 2.4,
//! torch 2.15 and safetensors 0.8; `expected.json` holds numpy's float64 statistics).

use serde_json::Value;
use somatize::math::stats::Stats;
use somatize::tensor::{Problem, TensorData, TensorFile};
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
        for field in ["shape", "dtype"].into_iter().chain(Stats::COUNTS) {
            if g.get(field) != w.get(field) {
                bad.push(format!(
                    "{file} {key} {field}: got {:?}, wanted {:?}",
                    g.get(field),
                    w.get(field)
                ));
            }
        }
        for field in Stats::FLOATS {
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

/// Every good fixture summarised by `summarize(file name)`, compared with numpy's values; every
/// mismatch or error listed at once.
fn every_good_fixture_matches_numpy(
    summarize: impl Fn(&str) -> Result<somatize::tensor::Summaries, somatize::tensor::TensorError>,
) {
    let mut bad = Vec::new();
    for (file, want) in expected() {
        match summarize(&file) {
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
fn every_good_fixture_matches_numpy_from_a_path() {
    every_good_fixture_matches_numpy(|file| TensorFile::open_path(fixture(file))?.summarize());
}

#[test]
fn every_good_fixture_matches_numpy_from_bytes() {
    every_good_fixture_matches_numpy(|file| {
        let bytes = std::fs::read(fixture(file)).unwrap();
        TensorFile::open_bytes(file, &bytes)?.summarize()
    });
}

/// Open `name` (bytes given) and read the stats of every entry; the first error.
fn first_error(name: &str, bytes: &[u8]) -> Option<somatize::tensor::TensorError> {
    let mut f = match TensorFile::open_bytes(name, bytes) {
        Ok(f) => f,
        Err(e) => return Some(e),
    };
    f.summarize().err()
}

#[test]
fn bad_fixtures_are_refused_naming_file_entry_and_problem() {
    // (file, entry named in the error, words the message must hold)
    let cases = [
        ("bad_object.npy", Some("bad_object"), "object array"),
        ("bad_structured.npy", Some("bad_structured"), "structured"),
        ("bad_complex.npy", Some("bad_complex"), "complex array"),
        ("bad_truncated.npz", None, "truncated"),
        ("bad_crc.npz", Some("grad.fc1.weight"), "CRC-32 mismatch"),
        ("bad_bomb.npz", Some("w"), "zip bomb"),
        ("bad_evil.pt", None, "posix.system"),
    ];
    for (file, entry, words) in cases {
        for from_path in [true, false] {
            let err = if from_path {
                TensorFile::open_path(fixture(file))
                    .and_then(|mut f| f.summarize())
                    .err()
            } else {
                first_error(file, &std::fs::read(fixture(file)).unwrap())
            };
            let Some(err) = err else {
                panic!("{file} (from_path={from_path}) was read; wanted an error with {words:?}");
            };
            let msg = err.to_string();
            assert!(
                msg.contains(file),
                "{file}: message {msg:?} does not name the file"
            );
            assert_eq!(err.entry.as_deref(), entry, "{file}: entry in {msg:?}");
            assert!(msg.contains(words), "{file}: got {msg:?}, wanted {words:?}");
        }
    }
    assert!(
        !std::path::Path::new("/tmp/somatize_pwned").exists(),
        "the evil pickle ran"
    );
}

/// An NPY file: header dict then data.
fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A safetensors file: length, JSON header, data.
fn safetensors(json: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn made_up_bad_files_are_refused() {
    let state_dict = std::fs::read(fixture("state_dict.pt")).unwrap();
    let legacy = std::fs::read(fixture("legacy_format.pt")).unwrap();
    let model = std::fs::read(fixture("model.safetensors")).unwrap();
    let cases: Vec<(&str, Vec<u8>, Option<&str>, &str)> = vec![
        (
            "short.npy",
            npy(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000), }",
                &[0; 16],
            ),
            Some("short"),
            "need 4000000",
        ),
        (
            "huge.npy",
            npy(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 8), }",
                &[0; 16],
            ),
            Some("huge"),
            "overflows",
        ),
        (
            "lying.safetensors",
            safetensors(
                r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
                &[0; 8],
            ),
            None,
            "outside",
        ),
        (
            "huge_header.safetensors",
            {
                let mut b = safetensors("{}", &[]);
                b[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                b
            },
            None,
            "not a tensor file",
        ),
        (
            "cut.pt",
            state_dict[..state_dict.len() / 2].to_vec(),
            None,
            "truncated",
        ),
        (
            "cut_legacy.pt",
            legacy[..legacy.len() - 100].to_vec(),
            None,
            "truncated",
        ),
        (
            "cut_pickle_legacy.pt",
            legacy[..500].to_vec(),
            None,
            "truncated",
        ),
        (
            "cut.safetensors",
            model[..model.len() - 4].to_vec(),
            None,
            "outside",
        ),
        ("empty.bin", Vec::new(), None, "not a tensor file"),
        (
            "text.txt",
            b"hello, world".to_vec(),
            None,
            "not a tensor file",
        ),
    ];
    for (name, bytes, entry, words) in cases {
        let Some(err) = first_error(name, &bytes) else {
            panic!("{name} was read; wanted an error with {words:?}");
        };
        let msg = err.to_string();
        assert!(
            msg.starts_with(name),
            "{name}: message {msg:?} does not name the file"
        );
        assert_eq!(err.entry.as_deref(), entry, "{name}: entry in {msg:?}");
        assert!(msg.contains(words), "{name}: got {msg:?}, wanted {words:?}");
    }
}

#[test]
fn every_truncation_of_every_good_fixture_is_an_error_not_a_panic() {
    for (file, _) in expected() {
        let bytes = std::fs::read(fixture(&file)).unwrap();
        for cut in (0..bytes.len()).step_by(7) {
            let _ = first_error(&file, &bytes[..cut]);
        }
    }
}

#[test]
fn fortran_arrays_come_out_in_c_order() {
    // numpy: np.load("f32_fortran.npy").ravel(order="C")[:8]
    let want = [
        -0.658058762550354f64,
        -0.9990430474281311,
        -0.8866418600082397,
        0.1954079121351242,
        -0.7829746007919312,
        0.3560662865638733,
        0.33975592255592346,
        2.025161027908325,
    ];
    let t = TensorFile::open_path(fixture("f32_fortran.npy"))
        .unwrap()
        .read("f32_fortran")
        .unwrap();
    assert_eq!(t.shape, vec![9, 6]);
    assert_eq!(t.provenance.dtype, "<f4");
    assert!(
        matches!(t.data, TensorData::F32(_)),
        "dtype {:?}",
        t.data.dtype()
    );
    assert_eq!(&t.data.to_f64()[..8], &want);
}

#[test]
fn torch_views_of_one_storage_gather_the_right_values() {
    let mut f = TensorFile::open_path(fixture("views.pt")).unwrap();
    let get = |f: &mut TensorFile<_>, k: &str| f.read(k).unwrap().data.to_f64();
    let (w, w_t, rows, col) = (
        get(&mut f, "param.w"),
        get(&mut f, "param.w_t"),
        get(&mut f, "param.w_rows"),
        get(&mut f, "param.w_col"),
    );
    for i in 0..6 {
        for j in 0..10 {
            assert_eq!(w_t[j * 6 + i], w[i * 10 + j], "w_t[{j}][{i}]");
        }
        assert_eq!(col[i], w[i * 10 + 3], "w_col[{i}]");
    }
    assert_eq!(&rows[..], &w[20..50], "w_rows is rows 2..5");
    assert_eq!(get(&mut f, "param.tied_a"), get(&mut f, "param.tied_b"));
    let t = f.read("param.w_t").unwrap();
    assert_eq!(
        (t.shape.as_slice(), t.provenance.key.as_str()),
        (&[10usize, 6][..], "param.w_t")
    );
}

#[test]
fn listing_gives_keys_shapes_and_writer_dtypes() {
    let f = TensorFile::open_path(fixture("step_deflated.npz")).unwrap();
    let got: Vec<_> = f
        .entries()
        .into_iter()
        .map(|e| (e.key, e.shape, e.dtype))
        .collect();
    let want = [
        ("param.fc1.weight", vec![16, 8]),
        ("param.fc1.bias", vec![16]),
        ("grad.fc1.weight", vec![16, 8]),
        ("act.fc1", vec![32, 16]),
        ("loss", vec![]),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|(k, s)| (k.to_string(), s.clone(), "<f4".to_string()))
        .collect();
    assert_eq!(got, want);
    let err = TensorFile::open_path(fixture("step_deflated.npz"))
        .unwrap()
        .read("nope")
        .unwrap_err();
    assert_eq!(err.problem, Problem::NoSuchEntry);
}

#[test]
fn flipped_bytes_in_every_good_fixture_give_values_or_errors_never_panics() {
    for (file, _) in expected() {
        let bytes = std::fs::read(fixture(&file)).unwrap();
        for at in (0..bytes.len()).step_by(13) {
            for flip in [0xff, 0x01] {
                let mut b = bytes.clone();
                b[at] ^= flip;
                let _ = first_error(&file, &b);
            }
        }
    }
}

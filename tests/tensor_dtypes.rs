//! Every numeric NPY dtype, both byte orders, in stored, deflated and zip64 NPZ archives built here
//! (the numpy fixtures cover f2/f4/f8, i1/i4/i8, u1, b1; these cover the rest).

use somatize::tensor::{DType, TensorFile};
use std::io::Write;
use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

/// An NPY v1 file with this header dict and data.
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// (descr, raw bytes of [-2, 0, 3] or [0, 1, 3] in that type, values, dtype).
fn cases() -> Vec<(&'static str, Vec<u8>, Vec<f64>, DType)> {
    let signed = [-2.0, 0.0, 3.0];
    let unsigned = [0.0, 1.0, 3.0];
    macro_rules! enc {
        ($t:ty, $vals:expr, $be:expr) => {
            $vals
                .iter()
                .flat_map(|&v| {
                    let x = v as $t;
                    if $be {
                        x.to_be_bytes().to_vec()
                    } else {
                        x.to_le_bytes().to_vec()
                    }
                })
                .collect::<Vec<u8>>()
        };
    }
    vec![
        ("<i2", enc!(i16, signed, false), signed.to_vec(), DType::I16),
        (">i2", enc!(i16, signed, true), signed.to_vec(), DType::I16),
        (">i4", enc!(i32, signed, true), signed.to_vec(), DType::I32),
        (">i8", enc!(i64, signed, true), signed.to_vec(), DType::I64),
        (
            "<u2",
            enc!(u16, unsigned, false),
            unsigned.to_vec(),
            DType::U16,
        ),
        (
            ">u4",
            enc!(u32, unsigned, true),
            unsigned.to_vec(),
            DType::U32,
        ),
        (
            "<u8",
            enc!(u64, unsigned, false),
            unsigned.to_vec(),
            DType::U64,
        ),
        (
            ">u8",
            enc!(u64, unsigned, true),
            unsigned.to_vec(),
            DType::U64,
        ),
        ("|i1", enc!(i8, signed, false), signed.to_vec(), DType::I8),
        ("|b1", vec![0, 1, 1], vec![0.0, 1.0, 1.0], DType::Bool),
        (
            ">f2",
            vec![0xc0, 0x00, 0x00, 0x00, 0x42, 0x00],
            signed.to_vec(),
            DType::F16,
        ),
        (">f4", enc!(f32, signed, true), signed.to_vec(), DType::F32),
        ("<f8", enc!(f64, signed, false), signed.to_vec(), DType::F64),
    ]
}

fn archive(method: CompressionMethod, zip64: bool) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(method)
        .large_file(zip64);
    for (i, (descr, data, _, _)) in cases().into_iter().enumerate() {
        zip.start_file(
            format!("a{i}{}.npy", descr.replace(['<', '>', '|'], "_")),
            options,
        )
        .unwrap();
        zip.write_all(&npy(descr, "(3,)", &data)).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[test]
fn every_dtype_reads_in_every_kind_of_archive() {
    for (method, zip64) in [
        (CompressionMethod::Stored, false),
        (CompressionMethod::Deflated, false),
        (CompressionMethod::Stored, true),
        (CompressionMethod::Deflated, true),
    ] {
        let bytes = archive(method, zip64);
        let mut f = TensorFile::open_bytes("made.npz", &bytes)
            .unwrap_or_else(|e| panic!("{method:?} zip64={zip64}: {e}"));
        let entries = f.entries();
        assert_eq!(entries.len(), cases().len());
        for (entry, (descr, _, want, dtype)) in entries.iter().zip(cases()) {
            let label = format!("{descr} in {method:?} zip64={zip64}");
            assert_eq!(entry.dtype, descr, "{label}");
            let t = f
                .read(&entry.key)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(
                (t.data.dtype(), t.data.to_f64()),
                (dtype, want.clone()),
                "{label}"
            );
            let s = f.stats(&entry.key).unwrap();
            let mean = want.iter().sum::<f64>() / 3.0;
            assert_eq!((s.count, s.mean), (3, Some(mean)), "{label}");
        }
    }
}

#[test]
fn zero_d_and_empty_arrays_read() {
    for (shape, data, want_shape, want) in [
        ("()", vec![0, 0, 0x80, 0x3f], vec![], vec![1.0]),
        ("(0, 4)", vec![], vec![0, 4], vec![]),
    ] {
        let bytes = npy("<f4", shape, &data);
        let mut f = TensorFile::open_bytes("x.npy", &bytes).unwrap();
        let t = f.read("x").unwrap();
        assert_eq!(
            (t.shape, t.data.to_f64()),
            (want_shape, want),
            "shape {shape}"
        );
    }
}

#[test]
fn a_deflated_entry_longer_than_its_header_says_is_refused() {
    // The header says 3 floats; the member holds 1000 more bytes (a would-be bomb).
    let mut data = npy("<f4", "(3,)", &[0; 12]);
    data.extend_from_slice(&[0; 1000]);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file(
        "w.npy",
        SimpleFileOptions::default().compression_method(CompressionMethod::Deflated),
    )
    .unwrap();
    zip.write_all(&data).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let err = TensorFile::open_bytes("long.npz", &bytes)
        .err()
        .expect("refused");
    assert_eq!(err.entry.as_deref(), Some("w"));
    assert!(err.to_string().contains("need 12"), "{err}");
}

#[test]
fn a_member_inflating_past_its_declared_size_is_refused_while_reading() {
    // The zip directory and the NPY header agree on 3 floats, but the deflated stream holds
    // 1 MB more: reading must stop one byte past the declared size and refuse.
    let good_len = npy("<f4", "(3,)", &[0; 12]).len() as u32;
    let mut data = npy("<f4", "(3,)", &[0; 12]);
    data.extend_from_slice(&vec![0; 1 << 20]);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file(
        "w.npy",
        SimpleFileOptions::default().compression_method(CompressionMethod::Deflated),
    )
    .unwrap();
    zip.write_all(&data).unwrap();
    let mut bytes = zip.finish().unwrap().into_inner();
    // Patch the uncompressed size in the local header (offset 22) and the central directory (24).
    let local = bytes.windows(4).position(|w| w == b"PK\x03\x04").unwrap();
    let central = bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
    bytes[local + 22..local + 26].copy_from_slice(&good_len.to_le_bytes());
    bytes[central + 24..central + 28].copy_from_slice(&good_len.to_le_bytes());
    let mut f =
        TensorFile::open_bytes("lying.npz", &bytes).expect("the directory looks consistent");
    let err = f.stats("w").expect_err("refused");
    assert!(
        err.to_string().contains("inflates past its declared"),
        "{err}"
    );
}

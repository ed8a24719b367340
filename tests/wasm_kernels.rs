//! wasm-bindgen tests: the 128-bit SIMD kernels (statistics, sum of squares, CRC-32) give the portable answers.
#![cfg(target_arch = "wasm32")]

use somatize::math::stats::stats_of;
use somatize::observe::ops;
use somatize::observe::registry;
use somatize::tensor::TypedTensor;
use somatize::ObservableSpec;
use wasm_bindgen_test::*;

/// Mean, population std, l1, l2, min, max and zero count of `values`, two-pass in f64.
fn reference(values: &[f64]) -> [f64; 7] {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let l1 = values.iter().map(|x| x.abs()).sum::<f64>();
    let l2 = values.iter().map(|x| x * x).sum::<f64>().sqrt();
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let zeros = values.iter().filter(|&&x| x == 0.0).count() as f64;
    [mean, var.sqrt(), l1, l2, min, max, zeros]
}

/// Values with zeros, both signs, a mean away from zero and lengths that leave tails.
fn values(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| match i % 11 {
            0 => 0.0,
            k => (k as f32 - 4.0) * 0.37 + (i % 7) as f32 * 1e-3 + 3.0,
        })
        .collect()
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-12 * want.abs().max(1.0)
}

#[wasm_bindgen_test]
fn stats_of_f32_and_f64_match_a_two_pass_reference() {
    for n in [1, 3, 4, 5, 7, 8, 9, 31, 1027, 70_001] {
        let v32 = values(n);
        let v64: Vec<f64> = v32.iter().map(|&x| f64::from(x)).collect();
        let want = reference(&v64);
        for (dtype, s) in [("f32", stats_of(&v32)), ("f64", stats_of(&v64))] {
            let zeros = s.zero_fraction.unwrap_or(f64::NAN) * n as f64;
            let got = [s.mean, s.std, s.l1, s.l2, s.min, s.max].map(|x| x.unwrap_or(f64::NAN));
            for (name, g, w) in ["mean", "std", "l1", "l2", "min", "max"]
                .iter()
                .zip(got)
                .zip(want)
                .map(|((name, g), w)| (name, g, w))
            {
                assert!(close(g, w), "{dtype} n={n} {name}: got {g}, want {w}");
            }
            assert_eq!(zeros.round(), want[6], "{dtype} n={n} zeros");
            assert_eq!((s.count, s.nonfinite), (n as u64, 0), "{dtype} n={n}");
        }
    }
}

#[wasm_bindgen_test]
fn a_value_that_is_not_finite_falls_back_to_the_masked_pass() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut v = values(1001);
        v[500] = bad;
        let finite: Vec<f64> = v
            .iter()
            .filter(|x| x.is_finite())
            .map(|&x| f64::from(x))
            .collect();
        let want = reference(&finite);
        let s = stats_of(&v);
        assert_eq!(
            (s.count, s.nonfinite, s.nan),
            (1001, 1, u64::from(bad.is_nan()))
        );
        let mean = s.mean.unwrap_or(f64::NAN);
        assert!(close(mean, want[0]), "{bad}: mean {mean}, want {}", want[0]);
        let l2 = s.l2.unwrap_or(f64::NAN);
        assert!(close(l2, want[3]), "{bad}: l2 {l2}, want {}", want[3]);
    }
}

#[wasm_bindgen_test]
fn l2_alone_matches_the_reference() {
    for n in [0, 1, 5, 1027, 70_001] {
        let v = values(n);
        let want = reference(&v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>())[3];
        let t = TypedTensor::from_f32("w", v, vec![n]).expect("1-d");
        let plan = registry::plan(&ObservableSpec::new("param", "w", "l2")).expect("l2");
        let got = ops::reduce(&t, &[plan])
            .remove(0)
            .expect("l2 runs")
            .as_scalar();
        match got {
            Some(g) => assert!(close(g, want), "n={n}: got {g}, want {want}"),
            None => assert_eq!(n, 0, "only an empty tensor has no l2"),
        }
    }
}

#[wasm_bindgen_test]
fn the_interleaved_crc_matches_crc32fast() {
    let data: Vec<u8> = (0..200_003u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    for len in [0, 15, 4096, 4097, 65_536 + 9, data.len()] {
        let bytes = &data[..len];
        let want = crc32fast::hash(bytes);
        assert_eq!(somatize::tensor::crc::hash(bytes), want, "{len} bytes");
        assert_eq!(
            somatize::tensor::crc::interleaved(bytes),
            want,
            "{len} bytes"
        );
    }
}

#[wasm_bindgen_test]
fn a_mean_large_against_the_spread_is_summed_around_the_shift() {
    // The three-sum kernel declines these (mean 1e6 spread 0.5; mean 8x the spread) and the
    // five-sum kernel takes them, as the two-pass reference says.
    for (base, step) in [(1e6f64, 1.0f64), (8.0, 1.0), (-3.0, 0.25)] {
        let v: Vec<f64> = (0..10_001).map(|i| base + step * (i % 2) as f64).collect();
        let want = reference(&v);
        let s = stats_of(&v);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let s32 = stats_of(&v32);
        for (dtype, s) in [("f64", s), ("f32", s32)] {
            let (mean, std) = (s.mean.unwrap_or(f64::NAN), s.std.unwrap_or(f64::NAN));
            assert!(
                close(mean, want[0]),
                "{dtype} {base}: mean {mean}, want {}",
                want[0]
            );
            assert!(
                close(std, want[1]),
                "{dtype} {base}: std {std}, want {}",
                want[1]
            );
        }
    }
}

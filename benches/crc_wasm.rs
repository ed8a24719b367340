//! CRC-32 in wasm: `tensor::crc::interleaved` (slicing-by-16 over four interleaved parts,
//! used in wasm when the host offers no kernel, i.e. in browsers) against crc32fast's own
//! wasm code (slicing-by-16, one stream), over 64 MiB, medians of 9 runs each in turn.
//! The interleaved tables are kept only while this ratio stays above 1.
//!
//! Run in wasm (Node, through wasm-bindgen-test-runner): `scripts/bench-crc.sh`, i.e.
//! `cargo bench --target wasm32-unknown-unknown --bench crc_wasm -- --nocapture`.
//! Natively it only says so: natively crc32fast uses carry-less multiply and the tables are
//! never used.

#[cfg(target_arch = "wasm32")]
mod wasm {
    use wasm_bindgen_test::{console_log, wasm_bindgen_bench, Criterion};

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// Timed by hand rather than by `Criterion`, to print the ratio of the two medians.
    #[wasm_bindgen_bench]
    fn crc_kernels_timed(_: &mut Criterion) {
        let mib = 64u32;
        let data: Vec<u8> = (0..(mib << 20))
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..9 {
            let t = js_sys::Date::now();
            let a = somatize::tensor::crc::interleaved(&data);
            ours.push(js_sys::Date::now() - t);
            let t = js_sys::Date::now();
            let mut h = crc32fast::Hasher::new();
            h.update(&data);
            let b = h.finalize();
            theirs.push(js_sys::Date::now() - t);
            assert_eq!(a, b, "the two kernels disagree");
        }
        let (a, b) = (median(ours), median(theirs));
        let rate = |ms: f64| f64::from(mib) / ms * 1000.0;
        console_log!(
            "crc32 of {mib} MiB in wasm, medians of 9: tensor::crc::interleaved {a:.1} ms ({:.0} MiB/s), \
             crc32fast::Hasher {b:.1} ms ({:.0} MiB/s); crc32fast time / interleaved time = {:.2}x",
            rate(a),
            rate(b),
            b / a
        );
    }
}

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    println!(
        "crc_wasm measures the wasm build: cargo bench --target wasm32-unknown-unknown --bench crc_wasm -- --nocapture"
    );
}

//! Helpers shared by the integration tests: fresh temporary folders, deterministic forwards, the built binary.
#![allow(dead_code)]

pub mod mlp;
pub mod report_assets;

use somatize::store::{Fact, ForwardRecord, NodeStats, Num, TensorBytes};
use somatize::tensor::DType;
use somatize::verdict::FlagKind;
use std::borrow::Cow;
use std::path::PathBuf;

/// A fresh, empty folder under the system temp folder, named for the test.
pub fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "somatize-test-{name}-{}-{nanos}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temp folder");
    dir
}

/// The f32 values forward `forward` carries in tensor `k` (`n` of them): a pattern any
/// corruption would break.
pub fn values(forward: u64, k: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| forward as f32 * 1000.0 + k as f32 + i as f32 * 0.5)
        .collect()
}

/// A forward with a loss fact, a Linear fact, a stats row and `tensors` f32 tensors of `n`.
pub fn forward(forward: u64, tensors: usize, n: usize) -> ForwardRecord<'static> {
    let mut stats = NodeStats::new();
    stats
        .entry("fc1".into())
        .or_default()
        .insert("l2".into(), Num(forward as f64));
    let mut fc1 = Fact::new("fc1", "Linear");
    fc1.took_us = 10 + forward;
    ForwardRecord {
        forward,
        facts: vec![fc1, Fact::loss(1.0 / (forward as f64 + 1.0))],
        stats,
        tensors: (0..tensors)
            .map(|k| TensorBytes {
                key: Cow::Owned(format!("act.layer{k}")),
                dtype: DType::F32,
                shape: vec![n],
                data: Cow::Owned(
                    values(forward, k, n)
                        .iter()
                        .flat_map(|v| v.to_le_bytes())
                        .collect(),
                ),
            })
            .collect(),
        ..Default::default()
    }
}

/// The forwards a run's index names, in order, as a reader scans them from the store at `root`.
pub fn indexed(root: &std::path::Path, run: &str) -> Vec<u64> {
    let store = somatize::store::Store::open(somatize::store::DirFs::new(root)).unwrap();
    store
        .scan(run)
        .unwrap()
        .map(|i| i.unwrap().entry.forward)
        .collect()
}

/// The number of kill trials: `SOMATIZE_KILL_TRIALS`, or `default`.
pub fn trials(default: usize) -> usize {
    std::env::var("SOMATIZE_KILL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic pseudo-random sequence (xorshift), so failures can be replayed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Run the built `somatize` binary: its exit code (-1 if killed), stdout and stderr.
pub fn somatize(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The eight flags read from one node's own statistics (NAN … OVERSTEPPING), as opposed to the
/// channel and cross-layer ones: what a healthy run must raise none of.
pub const BASIC_FLAGS: [FlagKind; 8] = [
    FlagKind::Nan,
    FlagKind::Inf,
    FlagKind::Vanishing,
    FlagKind::Exploding,
    FlagKind::Dead,
    FlagKind::Saturated,
    FlagKind::Stalled,
    FlagKind::Overstepping,
];

//! Every fuzz target's body (fuzz/fuzz_targets/bodies.rs, shared with the fuzzer) run over its
//! committed seeds (fuzz/corpus/<target>/) and over every input that once made it fail
//! (tests/fuzz-regressions/<target>/, each with the fix it led to: docs/fuzzing.md). The
//! fuzzer itself needs nightly: scripts/fuzz.sh.

#[path = "../fuzz/fuzz_targets/bodies.rs"]
mod bodies;

use std::path::Path;

/// The files of `dir` (none when it does not exist), sorted.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_target_survives_its_seeds_and_past_failures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for (name, body) in bodies::TARGETS {
        let seeds = files(&root.join("fuzz/corpus").join(name));
        assert!(!seeds.is_empty(), "no seeds for {name}");
        let regressions = files(&root.join("tests/fuzz-regressions").join(name));
        for file in seeds.iter().chain(&regressions) {
            let bytes = std::fs::read(file).unwrap();
            let run = std::panic::catch_unwind(|| body(&bytes));
            assert!(run.is_ok(), "{name} failed on {}", file.display());
            seen += 1;
        }
    }
    assert!(seen >= 30, "only {seen} inputs");
}

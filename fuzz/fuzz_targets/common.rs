//! What every tensor-file target does with a file once its bytes parsed: list, read and
//! summarise every entry, as `somatize stats` does.

use somatize::tensor::file::TensorFile;

/// Open `bytes` as a tensor file named `name` and read everything in it; errors are fine,
/// panics, hangs and runaway allocations are what the fuzzer looks for.
pub fn read_all(name: &str, bytes: &[u8]) {
    let Ok(mut file) = TensorFile::open_bytes(name, bytes) else {
        return;
    };
    let _ = file.format();
    for info in file.entries() {
        let _ = file.read(&info.key);
        let _ = file.stats(&info.key);
    }
    let _ = file.summarize();
}

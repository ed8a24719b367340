//! Tensor files from JS: listing and statistics of NPY/NPZ/.pt/safetensors bytes.

use super::*;

/// Bytes left in JS memory: read by copying only the ranges asked for into wasm memory, so
/// a large file is neither copied whole nor held twice.
struct JsBytes {
    array: js_sys::Uint8Array,
    len: u64,
    pos: u64,
}

impl std::io::Read for JsBytes {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let start = self.pos.min(self.len);
        let end = start.saturating_add(buf.len() as u64).min(self.len);
        let n = (end - start) as usize;
        // Both ends are at most the array's length, which is a u32.
        self.array
            .subarray(start as u32, end as u32)
            .copy_to(&mut buf[..n]);
        self.pos = end;
        Ok(n)
    }
}

impl std::io::Seek for JsBytes {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(p) => Some(p),
            std::io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        self.pos = target;
        Ok(target)
    }
}

/// A buffered [`JsBytes`] as a tensor-file source.
pub(super) struct JsSource(std::io::BufReader<JsBytes>);

impl JsSource {
    /// A source over a `Uint8Array` (a Node `Buffer` is one); anything else is an error.
    pub(super) fn new(bytes: JsValue, caller: &str) -> Result<Self, JsError> {
        let array = bytes.dyn_into::<js_sys::Uint8Array>().map_err(|_| {
            JsError::new(&format!("{caller} takes the file's bytes as a Uint8Array"))
        })?;
        let len = u64::from(array.length());
        let reader = JsBytes { array, len, pos: 0 };
        Ok(JsSource(std::io::BufReader::with_capacity(1 << 16, reader)))
    }
}

impl std::io::Read for JsSource {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::io::Seek for JsSource {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.0.seek(to)
    }
}

impl crate::tensor::source::Source for JsSource {
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }
}

/// Shape, dtype and statistics of every tensor in a .npy/.npz/.pt/.safetensors file's bytes,
/// as `{key: {shape, dtype, count, nonfinite, nan, l2, l1, mean, std, min, max, absmax, zero_fraction}}`.
#[wasm_bindgen(js_name = tensorStats)]
pub fn tensor_stats(bytes: JsValue, name: &str) -> Result<JsValue, JsError> {
    let source = JsSource::new(bytes, "tensorStats")?;
    let mut file = crate::tensor::TensorFile::open(name, source).map_err(js_err)?;
    to_js(&file.summarize().map_err(js_err)?)
}

/// The tensors in a file's bytes, in file order: `[{key, shape, dtype}]`.
#[wasm_bindgen(js_name = tensorKeys)]
pub fn tensor_keys(bytes: JsValue, name: &str) -> Result<JsValue, JsError> {
    let source = JsSource::new(bytes, "tensorKeys")?;
    let file = crate::tensor::TensorFile::open(name, source).map_err(js_err)?;
    to_js(&file.entries())
}

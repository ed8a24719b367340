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

/// A file behind a JS object `{size, readAtInto(offset, target) -> number}` (Node's
/// `snapshotFile`): every read is one call that writes straight into wasm memory, so the file
/// is never held, nor copied, in JS.
struct JsFileAt {
    this: JsValue,
    read_at_into: js_sys::Function,
    len: u64,
    pos: u64,
}

impl std::io::Read for JsFileAt {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let room = &mut buf[..want];
        // SAFETY: the view covers `room`, initialised bytes borrowed for this call, and lives
        // only while `readAtInto` runs: no wasm code runs then (the memory cannot grow and
        // detach it), and `room` is not touched until the view is dropped.
        let view = unsafe { js_sys::Uint8Array::view_mut_raw(room.as_mut_ptr(), room.len()) };
        let answer =
            self.read_at_into
                .call2(&self.this, &JsValue::from_f64(self.pos as f64), &view);
        drop(view);
        let wrote = match answer.map(|a| a.as_f64()) {
            Ok(Some(n)) if n >= 0.0 && n.fract() == 0.0 => (n as usize).min(want),
            Ok(other) => {
                let message = format!("readAtInto answered {other:?}, not a number of bytes");
                return Err(std::io::Error::other(message));
            }
            Err(e) => return Err(std::io::Error::other(format!("readAtInto threw {e:?}"))),
        };
        self.pos += wrote as u64;
        Ok(wrote)
    }
}

impl std::io::Seek for JsFileAt {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(p) => Some(p),
            std::io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")
        })?;
        Ok(self.pos)
    }
}

/// Where a [`JsSource`] reads from: bytes in JS memory, or a file read range by range.
enum JsReader {
    Bytes(JsBytes),
    FileAt(JsFileAt),
}

impl std::io::Read for JsReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            JsReader::Bytes(r) => r.read(buf),
            JsReader::FileAt(r) => r.read(buf),
        }
    }
}

impl std::io::Seek for JsReader {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        match self {
            JsReader::Bytes(r) => r.seek(to),
            JsReader::FileAt(r) => r.seek(to),
        }
    }
}

/// A buffered [`JsReader`] as a tensor-file source. Reads of a whole chunk bypass the buffer.
pub(super) struct JsSource(std::io::BufReader<JsReader>);

impl JsSource {
    /// A source over a `Uint8Array` (a Node `Buffer` is one), or over an object with `size`
    /// and `readAtInto(offset, target)`; anything else is an error.
    pub(super) fn new(bytes: JsValue, caller: &str) -> Result<Self, JsError> {
        let reader = match bytes.dyn_into::<js_sys::Uint8Array>() {
            Ok(array) => {
                let len = u64::from(array.length());
                JsReader::Bytes(JsBytes { array, len, pos: 0 })
            }
            Err(this) => JsReader::FileAt(file_at(this).ok_or_else(|| {
                JsError::new(&format!(
                    "{caller} takes the file's bytes as a Uint8Array, or {{size, readAtInto}}"
                ))
            })?),
        };
        Ok(JsSource(std::io::BufReader::with_capacity(1 << 16, reader)))
    }
}

/// A [`JsFileAt`] over `this`, when it has a whole-number `size` and a `readAtInto` method.
fn file_at(this: JsValue) -> Option<JsFileAt> {
    let read_at_into = super::js_fs::js_method(&this, "readAtInto")?;
    let size = js_sys::Reflect::get(&this, &JsValue::from_str("size")).ok()?;
    let len = size
        .as_f64()
        .filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n <= 9_007_199_254_740_992.0)?;
    Some(JsFileAt {
        this,
        read_at_into,
        len: len as u64,
        pos: 0,
    })
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

impl crate::tensor::bytes::Source for JsSource {
    fn in_memory(&self) -> Option<&[u8]> {
        None
    }
}

/// Shape, dtype and statistics of every tensor in a .npy/.npz/.pt/.safetensors file's bytes
/// (or a file behind `{size, readAtInto}`, read straight into wasm memory a chunk at a time),
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

thread_local! {
    /// The host's CRC-32 function (Node's `zlib.crc32`), once registered.
    static HOST_CRC: std::cell::RefCell<Option<js_sys::Function>> =
        const { std::cell::RefCell::new(None) };
}

/// The registered JS CRC-32 function over bytes in wasm memory; `None` if it is missing,
/// throws or answers something else than a 32-bit number.
fn host_crc(crc: u32, bytes: &[u8]) -> Option<u32> {
    HOST_CRC.with(|f| {
        let f = f.borrow();
        // SAFETY: the view covers `bytes`, borrowed for this call, and lives only while the
        // JS function runs: no wasm code runs then, so the memory cannot grow and detach it.
        let view = unsafe { js_sys::Uint8Array::view(bytes) };
        let answer = f
            .as_ref()?
            .call2(&JsValue::NULL, &view, &JsValue::from(crc));
        drop(view);
        let n = answer.ok()?.as_f64()?;
        (n >= 0.0 && n <= f64::from(u32::MAX) && n.fract() == 0.0).then_some(n as u32)
    })
}

/// Hand the core a faster CRC-32 for zip entries: `crc32(bytes: Uint8Array, crc: number) ->
/// number` in zlib's convention (Node's `zlib.crc32`, which uses the CPU's carry-less
/// multiply). Answers whether it passed the check value and is used; wasm's own kernel stays
/// for short runs and when it is not.
#[wasm_bindgen(js_name = useHostCrc32)]
pub fn use_host_crc32(crc32: js_sys::Function) -> bool {
    HOST_CRC.with(|f| *f.borrow_mut() = Some(crc32));
    crate::tensor::crc::set_host_kernel(host_crc)
}

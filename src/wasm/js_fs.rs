//! Stores reachable from JS through synchronous reads: plain files (`JsFs`) and snapshots (`JsRange`).

use super::*;

/// The message of a thrown JS value: an `Error`'s message, a string, or its debug form.
fn thrown_message(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// A method of a JS object, if it has one by that name.
pub(super) fn js_method(obj: &JsValue, name: &str) -> Option<js_sys::Function> {
    js_sys::Reflect::get(obj, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
}

/// A JS failure on `path` during `op` as a store error carrying the JS message.
fn js_io(path: &str, op: &'static str, message: String) -> StoreError {
    StoreError::Io {
        path: path.to_string(),
        op,
        source: std::io::Error::other(message),
    }
}

/// Call `f` on `this`; a throw becomes `Io`, a `null`/`undefined` answer `NotFound`.
fn js_call(
    f: &js_sys::Function,
    this: &JsValue,
    args: &[JsValue],
    path: &str,
    op: &'static str,
) -> crate::store::error::Result<JsValue> {
    let array: js_sys::Array = args.iter().collect();
    let v = f
        .apply(this, &array)
        .map_err(|e| js_io(path, op, thrown_message(&e)))?;
    if v.is_null() || v.is_undefined() {
        return Err(StoreError::NotFound {
            path: path.to_string(),
        });
    }
    Ok(v)
}

/// Bytes answered by JS (a `Uint8Array` or an `ArrayBuffer`), at most `cap` of them.
fn js_bytes(
    v: JsValue,
    path: &str,
    op: &'static str,
    cap: u64,
) -> crate::store::error::Result<Vec<u8>> {
    let array = if let Some(a) = v.dyn_ref::<js_sys::Uint8Array>() {
        a.clone()
    } else if v.is_instance_of::<js_sys::ArrayBuffer>() {
        js_sys::Uint8Array::new(&v)
    } else {
        return Err(js_io(path, op, "the source answered no Uint8Array".into()));
    };
    let n = u64::from(array.length()).min(cap) as u32;
    Ok(array.subarray(0, n).to_vec())
}

/// The most bytes one call of a source's `…Into` method is handed room for: a read longer than
/// this (a large blob) takes several calls, so a length the index merely claims never becomes
/// one allocation before the source has shown it has those bytes.
const INTO_STEP: u64 = 8 << 20;

/// Up to `len` bytes read by JS straight into wasm memory: `fill(at, view)` writes the bytes
/// from `at` (relative to the read's start) into `view` and answers how many it wrote; fewer
/// than the view holds means the end was reached. No copy is made on the way in.
fn read_into(
    len: u64,
    path: &str,
    mut fill: impl FnMut(u64, &js_sys::Uint8Array) -> crate::store::error::Result<JsValue>,
) -> crate::store::error::Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::new();
    while (out.len() as u64) < len {
        let start = out.len();
        // Below INTO_STEP, so it fits a usize and a u32.
        let want = (len - start as u64).min(INTO_STEP) as usize;
        // Room grows at most twofold (as a Vec would) but never past `len`: a summaries file of
        // 9 MiB read in steps of 8 had its Vec doubled to 16 MiB, and the wasm memory, which
        // never shrinks, kept the high-water mark of both (36 MiB for one table of 1,000 runs).
        let room_to =
            (len.min(usize::MAX as u64) as usize).min(start.saturating_mul(2).max(start + want));
        out.reserve_exact(room_to.saturating_sub(out.len()));
        out.resize(start + want, 0);
        let room = &mut out[start..];
        // SAFETY: the view covers `room`, initialised bytes owned by `out`, and lives only for
        // the call to `fill`: nothing in wasm runs during that call (no allocation can grow
        // the memory and move or detach what the view covers), and `out` is not touched
        // until the view is dropped.
        let view = unsafe { js_sys::Uint8Array::view_mut_raw(room.as_mut_ptr(), room.len()) };
        let answer = fill(start as u64, &view);
        drop(view);
        let answer = answer?;
        let wrote = match answer.as_f64() {
            Some(n) if n >= 0.0 && n.fract() == 0.0 => (n as u64).min(want as u64) as usize,
            _ => {
                let message = format!("the source answered {answer:?}, not a number of bytes");
                return Err(js_io(path, "read", message));
            }
        };
        out.truncate(start + wrote);
        if wrote < want {
            break;
        }
    }
    Ok(out)
}

/// A length answered by JS: a whole number from 0 to 2^53.
fn js_len(v: JsValue, path: &str) -> crate::store::error::Result<u64> {
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0 => Ok(n as u64),
        _ => Err(js_io(
            path,
            "stat",
            format!("the source answered size {v:?}"),
        )),
    }
}

/// A store's plain files through a JS object with synchronous methods `list?(dir) ->
/// string[]`, `read(path) -> Uint8Array`, `readRange(path, offset, len) -> Uint8Array`,
/// `size(path) -> number`; `null` means the file (or folder) does not exist, a throw is an
/// error carrying its message. Without `list` the store's `listing.jsonl` is used (HTTP).
/// With `readRangeInto(path, offset, target: Uint8Array) -> number | null` (bytes written
/// into `target` from `offset`; fewer than it holds at the end of the file) ranges are read
/// straight into wasm memory instead of through `readRange`.
pub(super) struct JsFs {
    this: JsValue,
    pub(super) list: Option<js_sys::Function>,
    read: js_sys::Function,
    read_range: js_sys::Function,
    read_range_into: Option<js_sys::Function>,
    size: js_sys::Function,
}

impl JsFs {
    pub(super) fn new(this: JsValue) -> Result<Self, JsError> {
        let need = |name: &str| {
            js_method(&this, name).ok_or_else(|| {
                JsError::new(&format!(
                    "a store source needs a {name} method (read, readRange, size; list optional)"
                ))
            })
        };
        Ok(JsFs {
            list: js_method(&this, "list"),
            read: need("read")?,
            read_range: need("readRange")?,
            read_range_into: js_method(&this, "readRangeInto"),
            size: need("size")?,
            this,
        })
    }
}

impl StoreFs for JsFs {
    fn list(&self, dir: &str) -> crate::store::error::Result<Vec<String>> {
        let Some(list) = &self.list else {
            return Err(js_io(dir, "list", "this source cannot list folders".into()));
        };
        let v = js_call(list, &self.this, &[JsValue::from_str(dir)], dir, "list")?;
        let array = v
            .dyn_into::<js_sys::Array>()
            .map_err(|_| js_io(dir, "list", "the source answered no array".into()))?;
        let mut out: Vec<String> = array.iter().filter_map(|n| n.as_string()).collect();
        out.sort();
        Ok(out)
    }

    fn read(&self, path: &str) -> crate::store::error::Result<Vec<u8>> {
        let v = js_call(
            &self.read,
            &self.this,
            &[JsValue::from_str(path)],
            path,
            "read",
        )?;
        js_bytes(v, path, "read", u64::MAX)
    }

    fn read_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
    ) -> crate::store::error::Result<Vec<u8>> {
        if let Some(into) = &self.read_range_into {
            let name = JsValue::from_str(path);
            return read_into(len, path, |at, view| {
                let at = JsValue::from_f64(offset.saturating_add(at) as f64);
                let args = [name.clone(), at, view.into()];
                js_call(into, &self.this, &args, path, "read")
            });
        }
        let args = [
            JsValue::from_str(path),
            JsValue::from_f64(offset as f64),
            JsValue::from_f64(len as f64),
        ];
        let v = js_call(&self.read_range, &self.this, &args, path, "read")?;
        js_bytes(v, path, "read", len)
    }

    fn len(&self, path: &str) -> crate::store::error::Result<u64> {
        let v = js_call(
            &self.size,
            &self.this,
            &[JsValue::from_str(path)],
            path,
            "stat",
        )?;
        js_len(v, path)
    }
}

/// A snapshot's bytes through JS: `{size: number, readAt(offset, len) -> Uint8Array}` (and
/// optionally `readAtInto(offset, target: Uint8Array) -> number`, reading straight into wasm
/// memory as `readRangeInto` does for `JsFs`), or a `Uint8Array` holding the zip (read range
/// by range in place, never copied whole).
pub(super) enum JsRange {
    Reader {
        this: JsValue,
        read_at: js_sys::Function,
        read_at_into: Option<js_sys::Function>,
        size: u64,
        name: String,
    },
    Bytes(js_sys::Uint8Array),
}

impl JsRange {
    pub(super) fn new(source: JsValue, name: &str) -> Result<Self, JsError> {
        if let Some(a) = source.dyn_ref::<js_sys::Uint8Array>() {
            return Ok(JsRange::Bytes(a.clone()));
        }
        let read_at = js_method(&source, "readAt").ok_or_else(|| {
            JsError::new("a snapshot is a Uint8Array or an object {size, readAt(offset, len)}")
        })?;
        let size = js_sys::Reflect::get(&source, &JsValue::from_str("size"))
            .map_err(|e| JsError::new(&thrown_message(&e)))?;
        let size = js_len(size, name).map_err(js_err)?;
        Ok(JsRange::Reader {
            read_at_into: js_method(&source, "readAtInto"),
            this: source,
            read_at,
            size,
            name: name.to_string(),
        })
    }
}

impl RangeSource for JsRange {
    fn size(&self) -> u64 {
        match self {
            JsRange::Reader { size, .. } => *size,
            JsRange::Bytes(a) => u64::from(a.length()),
        }
    }

    fn read_at(&self, offset: u64, len: u64) -> crate::store::error::Result<Vec<u8>> {
        match self {
            JsRange::Reader {
                this,
                read_at_into: Some(into),
                name,
                ..
            } => read_into(len, name, |at, view| {
                let at = JsValue::from_f64(offset.saturating_add(at) as f64);
                js_call(into, this, &[at, view.into()], name, "read")
            }),
            JsRange::Reader {
                this,
                read_at,
                name,
                ..
            } => {
                let args = [
                    JsValue::from_f64(offset as f64),
                    JsValue::from_f64(len as f64),
                ];
                let v = js_call(read_at, this, &args, name, "read")?;
                js_bytes(v, name, "read", len)
            }
            JsRange::Bytes(a) => {
                let size = u64::from(a.length());
                let start = offset.min(size);
                let end = offset.saturating_add(len).min(size);
                // Both ends are at most the array's length, which is a u32.
                Ok(a.subarray(start as u32, end as u32).to_vec())
            }
        }
    }
}

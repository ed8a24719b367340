//! `TypedTensor`: a tensor's values in their stored dtype, its shape and axes, and where it came from.

use serde::{Deserialize, Serialize};

/// The element types a tensor can hold, named as numpy names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F16,
    BF16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// The name numpy (or torch, for bfloat16) gives this dtype.
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::Bool => "bool",
        }
    }
}

/// The values of a tensor, in the type they were stored in (half floats as their bits).
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    F16(Vec<u16>),
    BF16(Vec<u16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
}

/// IEEE half-precision bits to f64 (exact).
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((bits >> 10) & 0x1f) as i32;
    let frac = (bits & 0x3ff) as f64;
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// bfloat16 bits to f64 (exact): the top half of an f32.
pub fn bf16_to_f64(bits: u16) -> f64 {
    f32::from_bits((bits as u32) << 16) as f64
}

/// Chunk length for converting values to f64 on the way into a reduction.
pub const CHUNK: usize = 4096;

fn in_chunks<T: Copy>(values: &[T], convert: impl Fn(T) -> f64, f: &mut dyn FnMut(&[f64])) {
    let mut buf = [0f64; CHUNK];
    for chunk in values.chunks(CHUNK) {
        for (out, &v) in buf.iter_mut().zip(chunk) {
            *out = convert(v);
        }
        f(&buf[..chunk.len()]);
    }
}

impl TensorData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F16(v) | TensorData::BF16(v) | TensorData::U16(v) => v.len(),
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
            TensorData::I8(v) => v.len(),
            TensorData::I16(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::I64(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::U32(v) => v.len(),
            TensorData::U64(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored dtype.
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F16(_) => DType::F16,
            TensorData::BF16(_) => DType::BF16,
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
            TensorData::I8(_) => DType::I8,
            TensorData::I16(_) => DType::I16,
            TensorData::I32(_) => DType::I32,
            TensorData::I64(_) => DType::I64,
            TensorData::U8(_) => DType::U8,
            TensorData::U16(_) => DType::U16,
            TensorData::U32(_) => DType::U32,
            TensorData::U64(_) => DType::U64,
            TensorData::Bool(_) => DType::Bool,
        }
    }

    /// Hand every value, converted to f64, to `f` in chunks of at most [`CHUNK`], in order.
    /// This is the one pass every reduction rides on.
    pub fn for_each_chunk(&self, f: &mut dyn FnMut(&[f64])) {
        match self {
            TensorData::F16(v) => in_chunks(v, f16_to_f64, f),
            TensorData::BF16(v) => in_chunks(v, bf16_to_f64, f),
            TensorData::F32(v) => in_chunks(v, f64::from, f),
            TensorData::F64(v) => v.chunks(CHUNK).for_each(f),
            TensorData::I8(v) => in_chunks(v, f64::from, f),
            TensorData::I16(v) => in_chunks(v, f64::from, f),
            TensorData::I32(v) => in_chunks(v, f64::from, f),
            TensorData::I64(v) => in_chunks(v, |x| x as f64, f),
            TensorData::U8(v) => in_chunks(v, f64::from, f),
            TensorData::U16(v) => in_chunks(v, f64::from, f),
            TensorData::U32(v) => in_chunks(v, f64::from, f),
            TensorData::U64(v) => in_chunks(v, |x| x as f64, f),
            TensorData::Bool(v) => in_chunks(v, |x| if x { 1.0 } else { 0.0 }, f),
        }
    }

    /// An empty vector of `dtype`, with room for `capacity` values.
    pub fn with_capacity(dtype: DType, capacity: usize) -> Self {
        match dtype {
            DType::F16 => TensorData::F16(Vec::with_capacity(capacity)),
            DType::BF16 => TensorData::BF16(Vec::with_capacity(capacity)),
            DType::F32 => TensorData::F32(Vec::with_capacity(capacity)),
            DType::F64 => TensorData::F64(Vec::with_capacity(capacity)),
            DType::I8 => TensorData::I8(Vec::with_capacity(capacity)),
            DType::I16 => TensorData::I16(Vec::with_capacity(capacity)),
            DType::I32 => TensorData::I32(Vec::with_capacity(capacity)),
            DType::I64 => TensorData::I64(Vec::with_capacity(capacity)),
            DType::U8 => TensorData::U8(Vec::with_capacity(capacity)),
            DType::U16 => TensorData::U16(Vec::with_capacity(capacity)),
            DType::U32 => TensorData::U32(Vec::with_capacity(capacity)),
            DType::U64 => TensorData::U64(Vec::with_capacity(capacity)),
            DType::Bool => TensorData::Bool(Vec::with_capacity(capacity)),
        }
    }

    /// An empty vector of `dtype`.
    pub fn empty(dtype: DType) -> Self {
        Self::with_capacity(dtype, 0)
    }

    /// The strided view (`offset`, `sizes`, `strides`, all in elements) of these values,
    /// gathered into a new C-order vector; `None` when the view reaches outside them.
    pub fn gather(&self, offset: usize, sizes: &[usize], strides: &[usize]) -> Option<TensorData> {
        Some(match self {
            TensorData::F16(v) => TensorData::F16(gather(v, offset, sizes, strides)?),
            TensorData::BF16(v) => TensorData::BF16(gather(v, offset, sizes, strides)?),
            TensorData::F32(v) => TensorData::F32(gather(v, offset, sizes, strides)?),
            TensorData::F64(v) => TensorData::F64(gather(v, offset, sizes, strides)?),
            TensorData::I8(v) => TensorData::I8(gather(v, offset, sizes, strides)?),
            TensorData::I16(v) => TensorData::I16(gather(v, offset, sizes, strides)?),
            TensorData::I32(v) => TensorData::I32(gather(v, offset, sizes, strides)?),
            TensorData::I64(v) => TensorData::I64(gather(v, offset, sizes, strides)?),
            TensorData::U8(v) => TensorData::U8(gather(v, offset, sizes, strides)?),
            TensorData::U16(v) => TensorData::U16(gather(v, offset, sizes, strides)?),
            TensorData::U32(v) => TensorData::U32(gather(v, offset, sizes, strides)?),
            TensorData::U64(v) => TensorData::U64(gather(v, offset, sizes, strides)?),
            TensorData::Bool(v) => TensorData::Bool(gather(v, offset, sizes, strides)?),
        })
    }

    /// Reorder values stored in Fortran (column-major) order of `shape` into C order, in
    /// place (one bit of bookkeeping per value); false, leaving them, when the count differs.
    pub fn fortran_to_c(&mut self, shape: &[usize]) -> bool {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if n != Some(self.len()) || shape.len() > 64 {
            return false;
        }
        let src = |c: usize| fortran_index(c, shape);
        match self {
            TensorData::F16(v) | TensorData::BF16(v) | TensorData::U16(v) => permute(v, src),
            TensorData::F32(v) => permute(v, src),
            TensorData::F64(v) => permute(v, src),
            TensorData::I8(v) => permute(v, src),
            TensorData::I16(v) => permute(v, src),
            TensorData::I32(v) => permute(v, src),
            TensorData::I64(v) => permute(v, src),
            TensorData::U8(v) => permute(v, src),
            TensorData::U32(v) => permute(v, src),
            TensorData::U64(v) => permute(v, src),
            TensorData::Bool(v) => permute(v, src),
        }
        true
    }

    /// Every value as f64 (allocates; prefer [`Self::for_each_chunk`] on hot paths).
    pub fn to_f64(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each_chunk(&mut |c| out.extend_from_slice(c));
        out
    }
}

/// The largest element index a strided view touches, or `None` on overflow (or `Some(None)`
/// for a view with no elements).
pub fn view_extent(offset: usize, sizes: &[usize], strides: &[usize]) -> Option<Option<usize>> {
    if sizes.len() != strides.len() {
        return None;
    }
    if sizes.contains(&0) {
        return Some(None);
    }
    let mut last = offset;
    for (&n, &s) in sizes.iter().zip(strides) {
        last = last.checked_add((n - 1).checked_mul(s)?)?;
    }
    Some(Some(last))
}

/// The Fortran-order position of the element at C-order position `c` of `shape`.
fn fortran_index(mut c: usize, shape: &[usize]) -> usize {
    let (mut f, mut stride) = (0, 1);
    let mut strides = [0usize; 64];
    for (s, &d) in strides.iter_mut().zip(shape) {
        *s = stride;
        stride *= d;
    }
    for (k, &d) in shape.iter().enumerate().rev() {
        f += (c % d) * strides[k];
        c /= d;
    }
    f
}

/// Permute `v` in place so that `new[i] = old[src(i)]`, following cycles.
fn permute<T: Copy>(v: &mut [T], src: impl Fn(usize) -> usize) {
    let mut done = vec![0u64; v.len().div_ceil(64)];
    for start in 0..v.len() {
        if done[start / 64] >> (start % 64) & 1 == 1 {
            continue;
        }
        let first = v[start];
        let mut i = start;
        loop {
            done[i / 64] |= 1 << (i % 64);
            let j = src(i);
            if j == start {
                v[i] = first;
                break;
            }
            v[i] = v[j];
            i = j;
        }
    }
}

/// Gather a strided view of `values` into C order (an odometer over the index space).
fn gather<T: Copy>(
    values: &[T],
    offset: usize,
    sizes: &[usize],
    strides: &[usize],
) -> Option<Vec<T>> {
    let Some(last) = view_extent(offset, sizes, strides)? else {
        return Some(Vec::new());
    };
    if last >= values.len() {
        return None;
    }
    let n: usize = sizes.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut index = vec![0usize; sizes.len()];
    let (inner_n, inner_s) = match (sizes.last(), strides.last()) {
        (Some(&n), Some(&s)) => (n, s),
        _ => (1, 1),
    };
    let outer = sizes.len().saturating_sub(1);
    let mut base = offset;
    loop {
        out.extend((0..inner_n).map(|i| values[base + i * inner_s]));
        // Advance the outer odometer.
        let mut d = outer;
        loop {
            if d == 0 {
                return Some(out);
            }
            d -= 1;
            index[d] += 1;
            base += strides[d];
            if index[d] < sizes[d] {
                break;
            }
            base -= strides[d] * sizes[d];
            index[d] = 0;
        }
    }
}

/// Where a tensor came from: the file, the key inside it, and the dtype it was stored as.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// The file (or `<bytes>` / `<live>`) it was read from.
    pub file: String,
    /// The key inside the file, e.g. `param.fc1.weight`.
    pub key: String,
    /// The dtype as the file named it, e.g. `<f4` or `torch.bfloat16`.
    pub dtype: String,
}

/// A tensor with its shape, optional axis names, training stage and provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedTensor {
    pub data: TensorData,
    /// Row-major (C order) shape; empty for a 0-d scalar.
    pub shape: Vec<usize>,
    /// Axis names, one per dimension, when known (e.g. `["out", "in"]`).
    pub axes: Option<Vec<String>>,
    /// The training stage it was captured at (e.g. `forward`, `backward`, `after_step`).
    pub stage: Option<String>,
    pub provenance: Provenance,
}

impl TypedTensor {
    /// A tensor with no axis names or stage; `None` when the shape does not match the data.
    pub fn new(data: TensorData, shape: Vec<usize>, provenance: Provenance) -> Option<Self> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        (n == data.len()).then_some(TypedTensor {
            data,
            shape,
            axes: None,
            stage: None,
            provenance,
        })
    }

    /// A live f32 tensor handed in by a hook, keyed `key`.
    pub fn from_f32(key: &str, values: Vec<f32>, shape: Vec<usize>) -> Option<Self> {
        let provenance = Provenance {
            file: "<live>".into(),
            key: key.into(),
            dtype: "float32".into(),
        };
        Self::new(TensorData::F32(values), shape, provenance)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_convert_exactly() {
        for (bits, want) in [
            (0x3c00u16, 1.0),
            (0xc000, -2.0),
            (0x0001, 2f64.powi(-24)),
            (0x7bff, 65504.0),
            (0x7c00, f64::INFINITY),
        ] {
            assert_eq!(f16_to_f64(bits), want, "f16 bits {bits:#06x}");
        }
        assert!(f16_to_f64(0x7e00).is_nan());
        assert_eq!(bf16_to_f64(0x3f80), 1.0);
        assert_eq!(bf16_to_f64(0xbfd9), -1.6953125);
    }

    #[test]
    fn chunks_cover_every_value_in_order() {
        let v: Vec<i32> = (0..(CHUNK as i32 * 2 + 5)).collect();
        let data = TensorData::I32(v.clone());
        let got = data.to_f64();
        assert_eq!(got.len(), v.len());
        assert!(got.iter().zip(&v).all(|(a, &b)| *a == b as f64));
    }

    #[test]
    fn gather_follows_strides_into_c_order() {
        // A 2x3 matrix [[0,1,2],[3,4,5]]; its transpose, a column and a row slice.
        let data = TensorData::I32((0..6).collect());
        type Case<'a> = (usize, &'a [usize], &'a [usize], Vec<i32>);
        let cases: [Case; 5] = [
            (0, &[3, 2], &[1, 3], vec![0, 3, 1, 4, 2, 5]),
            (1, &[2], &[3], vec![1, 4]),
            (3, &[1, 3], &[3, 1], vec![3, 4, 5]),
            (2, &[], &[], vec![2]),
            (0, &[0, 3], &[3, 1], vec![]),
        ];
        for (offset, sizes, strides, want) in cases {
            let got = data.gather(offset, sizes, strides);
            assert_eq!(
                got,
                Some(TensorData::I32(want.clone())),
                "view {offset} {sizes:?} {strides:?}"
            );
        }
        assert_eq!(
            data.gather(1, &[2, 3], &[3, 1]),
            None,
            "reaches past the end"
        );
    }

    #[test]
    fn fortran_order_is_reordered_in_place() {
        // numpy: np.arange(24).reshape(2, 3, 4).ravel(order="F") holds these, in this order.
        let f_order = [
            0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23,
        ];
        let mut data = TensorData::I32(f_order.to_vec());
        assert!(data.fortran_to_c(&[2, 3, 4]));
        assert_eq!(data, TensorData::I32((0..24).collect()));
        assert!(!data.fortran_to_c(&[5, 5]), "count mismatch is refused");
    }

    #[test]
    fn shape_must_match_the_data() {
        assert!(TypedTensor::from_f32("w", vec![0.0; 6], vec![2, 3]).is_some());
        assert!(TypedTensor::from_f32("w", vec![0.0; 6], vec![4, 2]).is_none());
        assert!(TypedTensor::from_f32("w", vec![0.0; 1], vec![]).is_some());
        assert!(TypedTensor::from_f32("w", vec![], vec![usize::MAX, 2]).is_none());
    }
}

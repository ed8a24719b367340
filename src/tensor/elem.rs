//! Element decoding: raw little- or big-endian bytes of one dtype into f64 chunks or typed vectors.

use super::typed::{bf16_to_f64, f16_to_f64, DType, TensorData};

/// Values converted to f64 at a time: 8 KiB, so the buffer stays in L1 cache while reduced.
const FEED: usize = 1024;

/// How one element is stored: its dtype and byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elem {
    pub dtype: DType,
    pub big_endian: bool,
}

/// Decode every whole element of `bytes` with `conv`, handing chunks of at most [`FEED`]
/// values to `f`. A trailing partial element is ignored (callers check sizes).
#[inline(always)]
fn each<const N: usize, T: Copy + Default>(
    bytes: &[u8],
    conv: impl Fn([u8; N]) -> T,
    f: &mut dyn FnMut(&[T]),
) {
    let mut buf = [T::default(); FEED];
    for chunk in bytes.chunks(FEED * N) {
        let mut k = 0;
        for (out, b) in buf.iter_mut().zip(chunk.chunks_exact(N)) {
            *out = conv(<[u8; N]>::try_from(b).unwrap_or([0; N]));
            k += 1;
        }
        f(&buf[..k]);
    }
}

/// A run of decoded values: f32 as stored, everything else widened to f64.
#[derive(Debug, Clone, Copy)]
pub enum Floats<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// Append every whole element of `bytes`, converted by `conv`, to `out`.
#[inline(always)]
fn append<const N: usize, T>(bytes: &[u8], conv: impl Fn([u8; N]) -> T, out: &mut Vec<T>) {
    out.extend(
        bytes
            .chunks_exact(N)
            .map(|b| conv(<[u8; N]>::try_from(b).unwrap_or([0; N]))),
    );
}

macro_rules! by_order {
    ($big:expr, $t:ty, $then:ident, $bytes:expr, $post:expr, $out:expr) => {
        if $big {
            $then($bytes, |b| $post(<$t>::from_be_bytes(b)), $out)
        } else {
            $then($bytes, |b| $post(<$t>::from_le_bytes(b)), $out)
        }
    };
}

impl Elem {
    /// A little-endian element of `dtype`.
    pub fn le(dtype: DType) -> Self {
        Elem {
            dtype,
            big_endian: false,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        self.dtype.size()
    }

    /// Hand every element of `bytes`, as f64, to `f` in chunks.
    pub fn feed_f64(self, bytes: &[u8], f: &mut dyn FnMut(&[f64])) {
        let big = self.big_endian;
        match self.dtype {
            DType::F16 => by_order!(big, u16, each, bytes, f16_to_f64, f),
            DType::BF16 => by_order!(big, u16, each, bytes, bf16_to_f64, f),
            DType::F32 => by_order!(big, f32, each, bytes, f64::from, f),
            DType::F64 => by_order!(big, f64, each, bytes, |x| x, f),
            DType::I8 => each(bytes, |b: [u8; 1]| f64::from(b[0] as i8), f),
            DType::U8 => each(bytes, |b: [u8; 1]| f64::from(b[0]), f),
            DType::Bool => each(bytes, |b: [u8; 1]| f64::from(u8::from(b[0] != 0)), f),
            DType::I16 => by_order!(big, i16, each, bytes, f64::from, f),
            DType::I32 => by_order!(big, i32, each, bytes, f64::from, f),
            DType::I64 => by_order!(big, i64, each, bytes, |x| x as f64, f),
            DType::U16 => by_order!(big, u16, each, bytes, f64::from, f),
            DType::U32 => by_order!(big, u32, each, bytes, f64::from, f),
            DType::U64 => by_order!(big, u64, each, bytes, |x| x as f64, f),
        }
    }

    /// Hand every element of `bytes` to `f` in chunks: f32 values as f32 (so the statistics
    /// can take them four to a vector, without widening them first), the rest as f64.
    pub fn feed_floats(self, bytes: &[u8], f: &mut dyn FnMut(Floats<'_>)) {
        match self.dtype {
            DType::F32 => by_order!(self.big_endian, f32, each, bytes, |x| x, &mut |c| f(
                Floats::F32(c)
            )),
            _ => self.feed_f64(bytes, &mut |c| f(Floats::F64(c))),
        }
    }

    /// Append every element of `bytes` to `out`, which must hold this dtype
    /// (returns false, appending nothing, when it does not).
    pub fn append_to(self, bytes: &[u8], out: &mut TensorData) -> bool {
        let big = self.big_endian;
        match (self.dtype, out) {
            (DType::F16, TensorData::F16(v)) => by_order!(big, u16, append, bytes, |x| x, v),
            (DType::BF16, TensorData::BF16(v)) => by_order!(big, u16, append, bytes, |x| x, v),
            (DType::F32, TensorData::F32(v)) => by_order!(big, f32, append, bytes, |x| x, v),
            (DType::F64, TensorData::F64(v)) => by_order!(big, f64, append, bytes, |x| x, v),
            (DType::I8, TensorData::I8(v)) => append(bytes, |b: [u8; 1]| b[0] as i8, v),
            (DType::U8, TensorData::U8(v)) => append(bytes, |b: [u8; 1]| b[0], v),
            (DType::Bool, TensorData::Bool(v)) => append(bytes, |b: [u8; 1]| b[0] != 0, v),
            (DType::I16, TensorData::I16(v)) => by_order!(big, i16, append, bytes, |x| x, v),
            (DType::I32, TensorData::I32(v)) => by_order!(big, i32, append, bytes, |x| x, v),
            (DType::I64, TensorData::I64(v)) => by_order!(big, i64, append, bytes, |x| x, v),
            (DType::U16, TensorData::U16(v)) => by_order!(big, u16, append, bytes, |x| x, v),
            (DType::U32, TensorData::U32(v)) => by_order!(big, u32, append, bytes, |x| x, v),
            (DType::U64, TensorData::U64(v)) => by_order!(big, u64, append, bytes, |x| x, v),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_byte_orders_decode_to_the_same_values() {
        let le = [0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0]; // 1.0, -2.0 as <f4
        let be = [0x3f, 0x80, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00]; // the same as >f4
        for (bytes, big) in [(&le, false), (&be, true)] {
            let mut got = Vec::new();
            let elem = Elem {
                dtype: DType::F32,
                big_endian: big,
            };
            elem.feed_f64(bytes, &mut |c| got.extend_from_slice(c));
            assert_eq!(got, vec![1.0, -2.0], "big_endian={big}");
            let mut data = TensorData::empty(DType::F32);
            assert!(elem.append_to(bytes, &mut data));
            assert_eq!(data, TensorData::F32(vec![1.0, -2.0]), "big_endian={big}");
        }
    }

    #[test]
    fn integers_and_bools_convert() {
        let cases: [(DType, &[u8], Vec<f64>); 4] = [
            (DType::I8, &[0xff, 0x02], vec![-1.0, 2.0]),
            (DType::U16, &[0xff, 0xff], vec![65535.0]),
            (DType::I64, &[0xfe; 8], vec![-72340172838076674.0]),
            (DType::Bool, &[0, 1, 7], vec![0.0, 1.0, 1.0]),
        ];
        for (dtype, bytes, want) in cases {
            let mut got = Vec::new();
            Elem::le(dtype).feed_f64(bytes, &mut |c| got.extend_from_slice(c));
            assert_eq!(got, want, "{dtype:?}");
        }
    }

    #[test]
    fn a_mismatched_target_is_refused() {
        let mut data = TensorData::empty(DType::F64);
        assert!(!Elem::le(DType::F32).append_to(&[0; 4], &mut data));
        assert!(data.is_empty());
    }
}

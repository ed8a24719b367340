//! The `.npy` entries of a blob: header writing for raw little-endian tensors, and reading back
//! exactly what this writer produces (little-endian, C order, numeric dtypes) through the one
//! NPY header parser, `tensor::npy`.

use crate::tensor::npy::parse_header;
use crate::tensor::{DType, Provenance, TensorData, TypedTensor};

/// The numpy `descr` of a dtype as this store writes it; bfloat16 has none.
pub fn descr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::Bool => "|b1",
        DType::BF16 => return None,
    })
}

fn dtype_of(descr: &str) -> Option<DType> {
    Some(match descr {
        "<f2" => DType::F16,
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        "|i1" | "<i1" => DType::I8,
        "<i2" => DType::I16,
        "<i4" => DType::I32,
        "<i8" => DType::I64,
        "|u1" | "<u1" => DType::U8,
        "<u2" => DType::U16,
        "<u4" => DType::U32,
        "<u8" => DType::U64,
        "|b1" => DType::Bool,
        _ => return None,
    })
}

/// The `.npy` header (magic, version, length, dict, padding) for a C-order array.
pub fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    header_into(&mut out, descr, shape);
    out
}

/// Append the `.npy` header of a C-order array to `out` (what [`header`] returns), without
/// allocating beyond `out`'s growth: the writer reuses one buffer for every tensor.
pub fn header_into(out: &mut Vec<u8>, descr: &str, shape: &[usize]) {
    let start = out.len();
    // Version 1 first (10-byte prefix); rewritten as version 2 if the dict is too long.
    out.extend_from_slice(b"\x93NUMPY\x01\x00\x00\x00");
    out.extend_from_slice(b"{'descr': '");
    out.extend_from_slice(descr.as_bytes());
    out.extend_from_slice(b"', 'fortran_order': False, 'shape': (");
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        push_decimal(out, *d as u64);
    }
    if shape.len() == 1 {
        out.push(b',');
    }
    out.extend_from_slice(b"), }");
    let dict_len = out.len() - start - 10;
    let prefix = if dict_len + 11 < 65_000 {
        10
    } else {
        out[start + 6] = 2;
        // Two more length bytes after the version: shift the dict right by two.
        out.splice(start + 10..start + 10, [0u8, 0u8]);
        12
    };
    let total = (prefix + dict_len + 1).div_ceil(64) * 64;
    let hlen = total - prefix;
    out.resize(start + total - 1, b' ');
    out.push(b'\n');
    if prefix == 10 {
        out[start + 8..start + 10].copy_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        out[start + 8..start + 12].copy_from_slice(&(hlen as u32).to_le_bytes());
    }
}

/// Append `v` in decimal.
fn push_decimal(out: &mut Vec<u8>, v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = v;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Parse a `.npy` entry this store wrote into a tensor; `Err` says what is wrong. The header
/// is read by the tensor readers' parser ([`crate::tensor::npy::parse_header`]); past that,
/// only what this store writes is taken: the dtypes of [`descr`], little-endian, C order.
pub fn parse(bytes: &[u8], key: &str, file: &str) -> Result<TypedTensor, String> {
    let h = parse_header(bytes).map_err(|e| e.to_string())?;
    let descr = h.descr.as_str();
    let dtype =
        dtype_of(descr).ok_or_else(|| format!("dtype {descr:?} is not one this store writes"))?;
    if h.fortran {
        return Err("Fortran-order arrays are not written by this store".into());
    }
    let data = bytes
        .get(h.data_offset..)
        .ok_or("header runs past the entry")?;
    let count = h.count().ok_or("shape overflows")?;
    if count.checked_mul(dtype.size()) != Some(data.len()) {
        return Err(format!(
            "shape {:?} of {descr} needs {} bytes, the entry has {}",
            h.shape,
            count.saturating_mul(dtype.size()),
            data.len()
        ));
    }
    let provenance = Provenance {
        file: file.to_string(),
        key: key.to_string(),
        dtype: descr.to_string(),
    };
    TypedTensor::new(decode(dtype, data), h.shape, provenance)
        .ok_or_else(|| "shape does not match data".into())
}

fn le<const N: usize, T>(data: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    data.chunks_exact(N)
        .map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            f(a)
        })
        .collect()
}

/// Little-endian bytes of `dtype` into tensor data (length already checked).
pub fn decode(dtype: DType, data: &[u8]) -> TensorData {
    match dtype {
        DType::F16 => TensorData::F16(le(data, u16::from_le_bytes)),
        DType::BF16 => TensorData::BF16(le(data, u16::from_le_bytes)),
        DType::F32 => TensorData::F32(le(data, f32::from_le_bytes)),
        DType::F64 => TensorData::F64(le(data, f64::from_le_bytes)),
        DType::I8 => TensorData::I8(data.iter().map(|&b| b as i8).collect()),
        DType::I16 => TensorData::I16(le(data, i16::from_le_bytes)),
        DType::I32 => TensorData::I32(le(data, i32::from_le_bytes)),
        DType::I64 => TensorData::I64(le(data, i64::from_le_bytes)),
        DType::U8 => TensorData::U8(data.to_vec()),
        DType::U16 => TensorData::U16(le(data, u16::from_le_bytes)),
        DType::U32 => TensorData::U32(le(data, u32::from_le_bytes)),
        DType::U64 => TensorData::U64(le(data, u64::from_le_bytes)),
        DType::Bool => TensorData::Bool(data.iter().map(|&b| b != 0).collect()),
    }
}

/// Tensor data as little-endian bytes.
pub fn encode(data: &TensorData) -> Vec<u8> {
    fn flat<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    match data {
        TensorData::F16(v) | TensorData::BF16(v) | TensorData::U16(v) => flat(v, u16::to_le_bytes),
        TensorData::F32(v) => flat(v, f32::to_le_bytes),
        TensorData::F64(v) => flat(v, f64::to_le_bytes),
        TensorData::I8(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::I16(v) => flat(v, i16::to_le_bytes),
        TensorData::I32(v) => flat(v, i32::to_le_bytes),
        TensorData::I64(v) => flat(v, i64::to_le_bytes),
        TensorData::U8(v) => v.clone(),
        TensorData::U32(v) => flat(v, u32::to_le_bytes),
        TensorData::U64(v) => flat(v, u64::to_le_bytes),
        TensorData::Bool(v) => v.iter().map(|&b| b as u8).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_aligned_and_parse_back() {
        for shape in [vec![], vec![3], vec![2, 3], vec![1, 0, 4]] {
            let h = header("<f4", &shape);
            assert_eq!(h.len() % 64, 0, "header for {shape:?} is {} bytes", h.len());
            let n: usize = shape.iter().product();
            let mut bytes = h.clone();
            bytes.extend(encode(&TensorData::F32((0..n).map(|i| i as f32).collect())));
            let t = parse(&bytes, "k", "f").unwrap();
            assert_eq!(t.shape, shape);
            assert_eq!(t.data.len(), n);
        }
    }

    /// The header as numpy's own `format!`-style text would be, for comparison.
    fn header_by_format(descr: &str, shape: &[usize]) -> Vec<u8> {
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        let shape_text = match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        let dict =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
        let prefix = if dict.len() + 11 < 65_000 { 10 } else { 12 };
        let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
        let hlen = total - prefix;
        let mut out = b"\x93NUMPY".to_vec();
        if prefix == 10 {
            out.extend([1, 0]);
            out.extend((hlen as u16).to_le_bytes());
        } else {
            out.extend([2, 0]);
            out.extend((hlen as u32).to_le_bytes());
        }
        out.extend(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        out
    }

    #[test]
    fn headers_match_the_formatted_text_byte_for_byte() {
        let long = vec![7usize; 22_000];
        for shape in [
            vec![],
            vec![0],
            vec![3],
            vec![2, 3],
            vec![usize::MAX, 10],
            long,
        ] {
            for descr in ["<f4", "|b1"] {
                let mut reused = b"before".to_vec();
                header_into(&mut reused, descr, &shape);
                let want = header_by_format(descr, &shape);
                assert_eq!(
                    &reused[6..],
                    &want[..],
                    "{descr} {:?}",
                    &shape[..shape.len().min(4)]
                );
                assert_eq!(header(descr, &shape), want);
            }
        }
    }

    #[test]
    fn lying_headers_are_refused() {
        let mut bytes = header("<f8", &[1000, 1000]);
        bytes.extend([0u8; 16]);
        assert!(parse(&bytes, "k", "f").unwrap_err().contains("needs"));
        let mut big = header(">f8", &[2]);
        big.extend([0u8; 16]);
        assert!(parse(&big, "k", "f").is_err(), "big-endian accepted");
        assert!(parse(b"\x93NUMPY\x01", "k", "f").is_err());
    }
}

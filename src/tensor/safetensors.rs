//! safetensors: an 8-byte header length, a JSON header of dtype/shape/offsets, then the data; every length checked.

use super::elem::Elem;
use super::error::Problem;
use super::typed::DType;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Longest JSON header read (the safetensors library uses the same cap).
pub const MAX_HEADER: u64 = 100 << 20;

/// One tensor of a safetensors file: its name, shape, element type and absolute byte range.
#[derive(Debug, Clone, PartialEq)]
pub struct SafeTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub elem: Elem,
    pub start: u64,
    pub len: u64,
}

#[derive(Deserialize)]
struct RawEntry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: [u64; 2],
}

/// Whether the bytes could start a safetensors file: a plausible length then `{`.
pub fn looks_like_safetensors(head: &[u8]) -> bool {
    match (head.get(..8), head.get(8)) {
        (Some(len), Some(b'{')) => {
            let n = u64::from_le_bytes(len.try_into().unwrap_or([0xff; 8]));
            (2..=MAX_HEADER).contains(&n)
        }
        _ => false,
    }
}

/// The header length stated in the first 8 bytes, checked against the cap and the file.
pub fn header_len(head: &[u8], total: u64) -> Result<u64, Problem> {
    let b = head
        .get(..8)
        .ok_or_else(|| Problem::Truncated("shorter than the 8-byte header length".into()))?;
    let n = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    if n > MAX_HEADER {
        return Err(Problem::TooLarge {
            what: "safetensors header length",
            size: n,
            cap: MAX_HEADER,
        });
    }
    if n.saturating_add(8) > total {
        return Err(Problem::Truncated(format!(
            "header says {n} bytes, the file has {total}"
        )));
    }
    Ok(n)
}

/// Parse the JSON header (`json` is exactly the header bytes) of a file `total` bytes long.
pub fn parse(json: &[u8], total: u64) -> Result<Vec<SafeTensor>, Problem> {
    let raw: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(json).map_err(|e| Problem::Header(format!("header JSON: {e}")))?;
    let data_start = 8 + json.len() as u64;
    // Checked: a caller may hand a header longer than the file it says it came from.
    let data_len = total.checked_sub(data_start).ok_or_else(|| {
        Problem::Truncated(format!(
            "a {}-byte header does not fit in a {total}-byte file",
            json.len()
        ))
    })?;
    let mut out = Vec::with_capacity(raw.len());
    for (name, value) in raw {
        if name == "__metadata__" {
            continue;
        }
        let e: RawEntry = serde_json::from_value(value)
            .map_err(|err| Problem::Header(format!("tensor `{name}`: {err}")))?;
        out.push(check(name, e, data_start, data_len)?);
    }
    out.sort_by_key(|t| t.start);
    Ok(out)
}

/// Check one entry's dtype, shape and offsets against the data section.
fn check(name: String, e: RawEntry, data_start: u64, data_len: u64) -> Result<SafeTensor, Problem> {
    let dtype = dtype(&e.dtype).map_err(|p| Problem::Header(format!("tensor `{name}`: {p}")))?;
    let [begin, end] = e.data_offsets;
    let bad = |what: String| Problem::Header(format!("tensor `{name}`: {what}"));
    if begin > end || end > data_len {
        return Err(bad(format!(
            "data_offsets [{begin}, {end}] lie outside the {data_len}-byte data section"
        )));
    }
    let count = e.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let need = count.and_then(|c| c.checked_mul(dtype.size() as u64));
    if need != Some(end - begin) {
        return Err(Problem::DataSize {
            expected: need.unwrap_or(u64::MAX),
            found: end - begin,
        });
    }
    let shape = e
        .shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad("dimension too large".into())))
        .collect::<Result<_, _>>()?;
    Ok(SafeTensor {
        name,
        shape,
        elem: Elem::le(dtype),
        start: data_start + begin,
        len: end - begin,
    })
}

/// A safetensors dtype name as an element type.
fn dtype(name: &str) -> Result<DType, String> {
    Ok(match name {
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F32" => DType::F32,
        "F64" => DType::F64,
        "I8" => DType::I8,
        "I16" => DType::I16,
        "I32" => DType::I32,
        "I64" => DType::I64,
        "U8" => DType::U8,
        "U16" => DType::U16,
        "U32" => DType::U32,
        "U64" => DType::U64,
        "BOOL" => DType::Bool,
        other => return Err(format!("unsupported dtype `{other}`")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_sizes_are_checked() {
        let cases = [
            (
                r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                8,
                Ok(1),
            ),
            (
                r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                4,
                Err("outside"),
            ),
            (
                r#"{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                8,
                Err("need 12"),
            ),
            (
                r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}"#,
                8,
                Err("outside"),
            ),
            (
                r#"{"w":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}"#,
                8,
                Err("unsupported dtype"),
            ),
            (
                r#"{"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}}"#,
                8,
                Err("need"),
            ),
            (r#"{"__metadata__":{"a":"b"}}"#, 0, Ok(0)),
            (r#"[1]"#, 0, Err("header JSON")),
        ];
        for (json, data, want) in cases {
            let total = 8 + json.len() as u64 + data;
            let got = parse(json.as_bytes(), total)
                .map(|v| v.len())
                .map_err(|e| e.to_string());
            match (&got, want) {
                (Ok(n), Ok(w)) => assert_eq!(*n, w, "{json}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{json}: got {e:?}, wanted {w:?}"),
                _ => panic!("{json}: got {got:?}, wanted {want:?}"),
            }
        }
    }

    /// Found by the `safetensors_header` fuzz target (tests/fuzz-regressions/): a header
    /// longer than the file it is said to come from was an arithmetic overflow.
    #[test]
    fn a_header_longer_than_the_file_is_refused() {
        for total in [0, 9] {
            let e = parse(b"{}", total).unwrap_err().to_string();
            assert!(e.contains("does not fit"), "{total}: {e}");
        }
        assert_eq!(parse(b"{}", 10).unwrap().len(), 0);
    }
}

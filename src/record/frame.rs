//! The companion's channel protocol: length-prefixed frames of a JSON header and raw tensor bytes.
//!
//! A frame is `u32` little-endian header length, the header (UTF-8 JSON), then the tensors'
//! bytes back to back, little-endian, C order, each exactly `itemsize * prod(shape)` long.
//! See docs/recording.md.

use crate::health::summary::{StepSummary, SummaryError, WireSummary, WIRE_SAMPLES, WIRE_VALUES};
use crate::store::{Fact, ForwardRecord, NodeStats, TensorBytes};
use crate::tensor::elem::Elem;
use crate::tensor::DType;
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;
use std::io::Read;

/// The longest header accepted.
pub const MAX_HEADER: u32 = 64 << 20;
/// The most tensor bytes one frame may carry.
pub const MAX_PAYLOAD: u64 = 64 << 30;

/// A tensor as a frame header declares it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TensorSpec {
    pub key: String,
    /// numpy's name (`float32`) or descr (`<f4`).
    pub dtype: String,
    pub shape: Vec<usize>,
}

/// A frame header. `type` is `forward` (the default) or `hello`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct FrameHeader {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// The forward (training step) this frame records.
    #[serde(default)]
    pub forward: Option<u64>,
    #[serde(default)]
    pub took_us: Option<u64>,
    #[serde(default)]
    pub broke: bool,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub facts: Vec<Fact>,
    #[serde(default)]
    pub stats: NodeStats,
    #[serde(default)]
    pub tensors: Vec<TensorSpec>,
    /// The step's summary (torch's, measured on the device): its structure here, its numbers
    /// in the float64 tensor keyed [`WIRE_VALUES`], which is never stored. The companion
    /// derives the node metrics from it (docs/recording.md, "Summaries").
    #[serde(default)]
    pub summary: Option<WireSummary>,
    /// `hello`: a name for this connection's writer (appended to the base writer id).
    #[serde(default)]
    pub writer: Option<String>,
    /// `hello`: kinds to summarise into the index.
    #[serde(default)]
    pub summarising: Option<Vec<String>>,
}

/// One frame read off the channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub header: FrameHeader,
    /// Each declared tensor's dtype and its byte range in `payload`.
    pub layout: Vec<(DType, std::ops::Range<usize>)>,
    pub payload: Vec<u8>,
    /// The CRC-32 of each declared tensor's bytes, computed as the frame was read (on the
    /// reader's thread, while the bytes are fresh in cache).
    pub crcs: Vec<u32>,
}

/// What can go wrong reading a frame.
#[derive(Debug)]
pub enum FrameError {
    /// The channel failed or closed in the middle of a frame (the sender died mid-send).
    /// The frame is lost; earlier frames are not affected.
    Truncated { got: u64, want: u64 },
    /// The header is not valid JSON of the frame header's shape. Not retryable.
    BadHeader(String),
    /// A declared tensor has a dtype the store cannot hold, or sizes that overflow the caps.
    BadTensor { key: String, reason: String },
    /// Reading the channel failed.
    Io(std::io::Error),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Truncated { got, want } => {
                write!(f, "frame cut short: {got} of {want} bytes arrived")
            }
            FrameError::BadHeader(r) => write!(f, "frame header unreadable: {r}"),
            FrameError::BadTensor { key, reason } => write!(f, "frame tensor {key:?}: {reason}"),
            FrameError::Io(e) => write!(f, "channel read failed: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// The dtype named by numpy's name or descr (little-endian or byte-sized only).
pub fn parse_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "float16" | "<f2" => DType::F16,
        "bfloat16" => DType::BF16,
        "float32" | "<f4" => DType::F32,
        "float64" | "<f8" => DType::F64,
        "int8" | "|i1" | "<i1" => DType::I8,
        "int16" | "<i2" => DType::I16,
        "int32" | "<i4" => DType::I32,
        "int64" | "<i8" => DType::I64,
        "uint8" | "|u1" | "<u1" => DType::U8,
        "uint16" | "<u2" => DType::U16,
        "uint32" | "<u4" => DType::U32,
        "uint64" | "<u8" => DType::U64,
        "bool" | "|b1" => DType::Bool,
        _ => return None,
    })
}

/// The most a frame's buffer is sized for ahead of its bytes arriving (a header may lie).
const RESERVE_AHEAD: u64 = 256 << 20;

fn read_exactly(r: &mut dyn Read, n: u64, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let before = out.len() as u64;
    // Sized once: the bytes are read straight into place, never moved by the Vec growing.
    out.reserve_exact(n.min(RESERVE_AHEAD) as usize);
    r.take(n).read_to_end(out).map_err(FrameError::Io)?;
    let got = out.len() as u64 - before;
    if got != n {
        return Err(FrameError::Truncated { got, want: n });
    }
    Ok(())
}

/// Read the next frame; `Ok(None)` at a clean end of the channel (between frames).
pub fn read_frame(r: &mut dyn Read) -> Result<Option<Frame>, FrameError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(FrameError::Truncated {
                    got: got as u64,
                    want: 4,
                })
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    let hlen = u32::from_le_bytes(len);
    if hlen > MAX_HEADER {
        return Err(FrameError::BadHeader(format!(
            "header of {hlen} bytes is over the cap"
        )));
    }
    let mut header_bytes = Vec::new();
    read_exactly(r, hlen as u64, &mut header_bytes)?;
    let header: FrameHeader =
        serde_json::from_slice(&header_bytes).map_err(|e| FrameError::BadHeader(e.to_string()))?;
    let mut layout = Vec::with_capacity(header.tensors.len().min(4096));
    let mut total: u64 = 0;
    for t in &header.tensors {
        let bad = |reason: String| FrameError::BadTensor {
            key: t.key.clone(),
            reason,
        };
        let dtype =
            parse_dtype(&t.dtype).ok_or_else(|| bad(format!("unknown dtype {:?}", t.dtype)))?;
        let n = t
            .shape
            .iter()
            .try_fold(dtype.size() as u64, |a, &d| a.checked_mul(d as u64))
            .ok_or_else(|| bad("shape overflows".into()))?;
        let start = total;
        total = total
            .checked_add(n)
            .filter(|&t| t <= MAX_PAYLOAD)
            .ok_or_else(|| bad(format!("frame payload over {MAX_PAYLOAD} bytes")))?;
        layout.push((dtype, start as usize..total as usize));
    }
    let mut payload = Vec::new();
    read_exactly(r, total, &mut payload)?;
    let crcs = layout
        .iter()
        .map(|(_, range)| crc32fast::hash(payload.get(range.clone()).unwrap_or_default()))
        .collect();
    Ok(Some(Frame {
        header,
        layout,
        payload,
        crcs,
    }))
}

impl Frame {
    /// Whether this is a `hello` frame.
    pub fn is_hello(&self) -> bool {
        self.header.kind.as_deref() == Some("hello")
    }

    /// Whether declared tensor `i` holds the summary's numbers or samples (never stored).
    fn is_summary_values(&self, i: usize) -> bool {
        self.header.summary.is_some()
            && self
                .header
                .tensors
                .get(i)
                .is_some_and(|t| t.key == WIRE_VALUES || t.key == WIRE_SAMPLES)
    }

    /// The numbers of the summary tensor `key`, as f64: float64 (or, with `f32`, float32)
    /// bytes; `Ok(None)` when the frame has no such tensor.
    fn summary_tensor(&self, key: &str, f32: bool) -> Result<Option<Vec<f64>>, SummaryError> {
        let Some(i) = (0..self.header.tensors.len())
            .find(|&i| self.is_summary_values(i) && self.header.tensors[i].key == key)
        else {
            return Ok(None);
        };
        let Some((dtype, range)) = self.layout.get(i) else {
            return Ok(None);
        };
        if !(*dtype == DType::F64 || (f32 && *dtype == DType::F32)) {
            return Err(SummaryError::Values {
                detail: format!(
                    "tensor {key:?} is {dtype:?}, not float64{}",
                    if f32 { " or float32" } else { "" }
                ),
            });
        }
        let bytes = self.payload.get(range.clone()).unwrap_or_default();
        let mut out = Vec::with_capacity(bytes.len() / dtype.size());
        Elem::le(*dtype).feed_f64(bytes, &mut |c| out.extend_from_slice(c));
        Ok(Some(out))
    }

    /// The step's summary, when the frame carries one: its structure over the numbers of its
    /// [`WIRE_VALUES`] tensor (float64) and the samples of its [`WIRE_SAMPLES`] tensor
    /// (float32 or float64), every offset and count checked.
    pub fn summary(&self) -> Option<Result<StepSummary, SummaryError>> {
        let wire = self.header.summary.as_ref()?;
        let read = || -> Result<StepSummary, SummaryError> {
            let values = match self.summary_tensor(WIRE_VALUES, false)? {
                Some(v) => v,
                None if wire.tensors.is_empty()
                    && wire.updates.is_empty()
                    && wire.outputs.is_empty()
                    && wire.cka.is_empty() =>
                {
                    Vec::new()
                }
                None => {
                    return Err(SummaryError::Values {
                        detail: format!("no tensor {WIRE_VALUES:?} holds the summary's numbers"),
                    })
                }
            };
            let samples = match self.summary_tensor(WIRE_SAMPLES, true)? {
                Some(v) => v,
                None if wire.samples.is_empty() => Vec::new(),
                None => {
                    return Err(SummaryError::Values {
                        detail: format!("no tensor {WIRE_SAMPLES:?} holds the summary's samples"),
                    })
                }
            };
            StepSummary::from_wire(wire, &values, &samples)
        };
        Some(read())
    }

    /// The frame as a forward record borrowing its tensor bytes; `keep_tensors` false drops them
    /// (the summary's numbers are never kept).
    pub fn record(&self, forward: u64, keep_tensors: bool) -> ForwardRecord<'_> {
        let tensors = if keep_tensors {
            self.header
                .tensors
                .iter()
                .zip(&self.layout)
                .enumerate()
                .filter(|(i, _)| !self.is_summary_values(*i))
                .map(|(_, (spec, (dtype, range)))| TensorBytes {
                    key: Cow::Borrowed(spec.key.as_str()),
                    dtype: *dtype,
                    shape: spec.shape.clone(),
                    data: Cow::Borrowed(&self.payload[range.clone()]),
                })
                .collect()
        } else {
            Vec::new()
        };
        ForwardRecord {
            forward,
            took_us: self.header.took_us,
            broke: self.header.broke,
            error: self.header.error.clone(),
            facts: self.header.facts.clone(),
            stats: self.header.stats.clone(),
            tensors,
            values: Default::default(),
        }
    }
}

/// Encode a frame (for tests, benchmarks and Rust senders).
pub fn encode(header: &serde_json::Value, tensors: &[&[u8]]) -> Vec<u8> {
    let h = serde_json::to_vec(header).unwrap_or_default();
    let mut out = Vec::with_capacity(4 + h.len() + tensors.iter().map(|t| t.len()).sum::<usize>());
    out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    out.extend_from_slice(&h);
    for t in tensors {
        out.extend_from_slice(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_round_trip() {
        let data: Vec<u8> = [1.0f32, 2.0, 3.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let h = json!({"forward": 4, "facts": [{"node":"loss","kind":"loss","value":0.5}],
                       "tensors": [{"key":"act.fc1","dtype":"float32","shape":[3]}]});
        let bytes = encode(&h, &[&data]);
        let mut r = &bytes[..];
        let f = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(f.header.forward, Some(4));
        let rec = f.record(4, true);
        assert_eq!(rec.tensors[0].data.as_ref(), &data[..]);
        assert!(read_frame(&mut r).unwrap().is_none(), "clean end not seen");
    }

    #[test]
    fn cut_and_lying_frames_are_errors() {
        let h =
            json!({"forward": 1, "tensors": [{"key":"k","dtype":"float64","shape":[1000000000]}]});
        let bytes = encode(&h, &[&[0u8; 16]]);
        let err = read_frame(&mut &bytes[..]).unwrap_err();
        assert!(
            matches!(err, FrameError::Truncated { got: 16, .. }),
            "{err}"
        );
        let bytes = encode(
            &json!({"tensors": [{"key":"k","dtype":"object","shape":[1]}]}),
            &[],
        );
        assert!(matches!(
            read_frame(&mut &bytes[..]),
            Err(FrameError::BadTensor { .. })
        ));
        let mut huge = (MAX_HEADER + 1).to_le_bytes().to_vec();
        huge.extend(b"{}");
        assert!(matches!(
            read_frame(&mut &huge[..]),
            Err(FrameError::BadHeader(_))
        ));
        assert!(matches!(
            read_frame(&mut &[1u8, 0][..]),
            Err(FrameError::Truncated { .. })
        ));
    }
}

//! One forward's blob: writing it as a stored zip (`forward.json`, `facts.json`, `stats.json`,
//! `<key>.npy`), and reading it back with its checksum checked.

use super::error::{Result, StoreError};
use super::fact::{Fact, Fields, NodeStats};
use super::{names, npy, zipfile};
use crate::tensor::{DType, TypedTensor};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io::Write;

/// The entry holding the forward's own description.
pub const FORWARD_ENTRY: &str = "forward.json";
/// The entry holding the facts, in arrival order.
pub const FACTS_ENTRY: &str = "facts.json";
/// The entry holding per-node statistics.
pub const STATS_ENTRY: &str = "stats.json";
/// The entry holding observed values by observable spec id.
pub const VALUES_ENTRY: &str = "values.json";

/// Observed values by observable spec id, as JSON (`values.json` in a blob).
pub type ObservedValues = std::collections::BTreeMap<String, serde_json::Value>;

/// A tensor handed to the writer as raw little-endian bytes, C order.
#[derive(Debug, Clone)]
pub struct TensorBytes<'a> {
    /// The key, e.g. `act.fc1`, `grad.fc1.weight`, `param.fc1.weight`, `loss`.
    pub key: Cow<'a, str>,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Cow<'a, [u8]>,
}

impl TensorBytes<'static> {
    /// The bytes of a typed tensor (copied into little-endian order).
    pub fn from_typed(key: &str, t: &TypedTensor) -> Self {
        TensorBytes {
            key: Cow::Owned(key.to_string()),
            dtype: t.data.dtype(),
            shape: t.shape.clone(),
            data: Cow::Owned(npy::encode(&t.data)),
        }
    }
}

impl TensorBytes<'_> {
    /// Check the key and that the bytes match dtype and shape.
    pub fn check(&self) -> Result<()> {
        names::key(&self.key)?;
        if npy::descr(self.dtype).is_none() {
            return Err(StoreError::Refused {
                what: format!(
                    "tensor {:?}: {} has no .npy dtype; send it as float32",
                    self.key,
                    self.dtype.name()
                ),
            });
        }
        let want = self
            .shape
            .iter()
            .try_fold(self.dtype.size(), |a, &d| a.checked_mul(d));
        if want != Some(self.data.len()) {
            return Err(StoreError::Refused {
                what: format!(
                    "tensor {:?}: shape {:?} of {} does not match {} bytes",
                    self.key,
                    self.shape,
                    self.dtype.name(),
                    self.data.len()
                ),
            });
        }
        Ok(())
    }
}

/// What one forward holds, as handed to the writer.
#[derive(Debug, Clone, Default)]
pub struct ForwardRecord<'a> {
    /// The forward's number (the training step); strictly increasing per writer.
    pub forward: u64,
    /// How long the forward took; when `None`, the span of its facts.
    pub took_us: Option<u64>,
    /// Whether it broke (also true when any fact carries an error).
    pub broke: bool,
    /// Why it broke, when it did.
    pub error: Option<String>,
    /// The facts in arrival order.
    pub facts: Vec<Fact>,
    /// Per-node statistics, node -> metric -> number.
    pub stats: NodeStats,
    /// Tensors to keep.
    pub tensors: Vec<TensorBytes<'a>>,
    /// Observed values by observable spec id (what a store-backed sink writes).
    pub values: ObservedValues,
}

impl ForwardRecord<'_> {
    /// The forward's duration: as given, or from its facts' earliest start to latest end.
    pub fn took(&self) -> u64 {
        self.took_us.unwrap_or_else(|| {
            let start = self.facts.iter().map(|f| f.began_us).min().unwrap_or(0);
            let end = self
                .facts
                .iter()
                .map(|f| {
                    f.began_us
                        .saturating_add(f.took_us.min(i64::MAX as u64) as i64)
                })
                .max()
                .unwrap_or(0);
            end.saturating_sub(start).max(0) as u64
        })
    }

    /// Whether it broke: said so, or a fact carries an error.
    pub fn is_broke(&self) -> bool {
        self.broke || self.facts.iter().any(|f| f.error.is_some())
    }

    /// The error it broke with: as given, or the first fact's error.
    pub fn first_error(&self) -> Option<String> {
        self.error.clone().or_else(|| {
            self.facts
                .iter()
                .find_map(|f| f.error.as_ref().map(|e| format!("{}: {e}", f.node)))
        })
    }
}

/// `forward.json`: the blob's own description, so a blob read alone says what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForwardMeta {
    pub run: String,
    pub writer: String,
    pub forward: u64,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub fields: serde_json::Map<String, serde_json::Value>,
    /// The tensor keys held, in entry order.
    #[serde(default)]
    pub tensors: Vec<String>,
}

/// `forward.json` as the writer emits it, borrowing from the forward: serialises exactly as a
/// [`ForwardMeta`] holding the same values would, without copying them first.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MetaRef<'a> {
    pub run: &'a str,
    pub writer: &'a str,
    pub forward: u64,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    pub fields: FieldsAsJson<'a>,
    pub tensors: KeysOf<'a>,
}

/// Summarised fields as `forward.json` holds them (each as [`super::fact::Field::to_json`]).
#[derive(Debug, Clone, Copy)]
pub struct FieldsAsJson<'a>(pub &'a Fields<'a>);

impl Serialize for FieldsAsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use super::fact::Field;
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0 .0.len()))?;
        for (k, v) in &self.0 .0 {
            match v {
                Field::Num(x) if x.is_finite() => m.serialize_entry(k, x)?,
                Field::Num(_) => m.serialize_entry(k, &v.to_json())?,
                Field::Text(t) => m.serialize_entry(k, t)?,
                Field::Bool(b) => m.serialize_entry(k, b)?,
                Field::Null => m.serialize_entry(k, &())?,
            }
        }
        m.end()
    }
}

/// The keys of a forward's tensors, in entry order, as a JSON list.
#[derive(Debug, Clone, Copy)]
pub struct KeysOf<'a>(pub &'a [TensorBytes<'a>]);

impl Serialize for KeysOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| t.key.as_ref()))
    }
}

/// Buffers a writer reuses from blob to blob (JSON text, an entry name, an `.npy` header, the
/// zip writer's).
#[derive(Default)]
pub struct Scratch {
    json: Vec<u8>,
    name: String,
    header: Vec<u8>,
    zip: zipfile::ZipBuffers,
}

/// Write a blob to `out`; returns its length and CRC-32.
pub fn write<W: Write>(
    out: W,
    meta: &ForwardMeta,
    rec: &ForwardRecord<'_>,
) -> std::io::Result<(W, u64, u32)> {
    write_with(out, meta, rec, &mut Scratch::default(), None, None)
}

/// Tensors at least this large have their bytes page-aligned in the pack (see
/// [`write_with`]); smaller ones are not worth up to 4 KiB of padding.
pub const ALIGN_FROM: usize = 256 << 10;

/// Write a blob to `out` whose `forward.json` is `meta`, reusing `scratch`; returns its length
/// and CRC-32. `crcs`, when given, holds the CRC-32 of each tensor's `data`, in order, already
/// computed over exactly those bytes (the companion's reader hashes them as they arrive), so
/// they are not read a second time here; ignored unless there is one per tensor. `base`, when
/// given, is where the blob starts in its pack: the bytes of each tensor of [`ALIGN_FROM`] or
/// more then start on a page boundary of the pack (padding in the zip entry's extra field,
/// which every zip reader skips), so writing them copies whole pages.
pub fn write_with<W: Write, M: Serialize>(
    out: W,
    meta: &M,
    rec: &ForwardRecord<'_>,
    scratch: &mut Scratch,
    crcs: Option<&[u32]>,
    base: Option<u64>,
) -> std::io::Result<(W, u64, u32)> {
    let crcs = crcs.filter(|c| c.len() == rec.tensors.len());
    let Scratch {
        json,
        name,
        header,
        zip,
    } = scratch;
    let mut z = zipfile::ZipWriter::with_buffers(out, std::mem::take(zip));
    if let Some(b) = base {
        z.set_base(b);
    }
    let mut add_json = |z: &mut zipfile::ZipWriter<W>, entry: &str, value: &dyn erased::Json| {
        json.clear();
        value.write_to(json)?;
        z.add(entry, &[json])
    };
    add_json(&mut z, FORWARD_ENTRY, &erased::Of(meta))?;
    add_json(&mut z, FACTS_ENTRY, &erased::Of(&rec.facts))?;
    if !rec.stats.is_empty() {
        add_json(&mut z, STATS_ENTRY, &erased::Of(&rec.stats))?;
    }
    if !rec.values.is_empty() {
        add_json(&mut z, VALUES_ENTRY, &erased::Of(&rec.values))?;
    }
    for (i, t) in rec.tensors.iter().enumerate() {
        let descr = npy::descr(t.dtype).unwrap_or("|u1");
        header.clear();
        npy::header_into(header, descr, &t.shape);
        name.clear();
        name.push_str(&t.key);
        name.push_str(".npy");
        if t.data.len() >= ALIGN_FROM {
            z.align_next(header.len() as u64);
        }
        match crcs.and_then(|c| c.get(i)) {
            Some(&data_crc) => {
                let mut crc = crc32fast::Hasher::new();
                crc.update(header);
                crc.combine(&crc32fast::Hasher::new_with_initial_len(
                    data_crc,
                    t.data.len() as u64,
                ));
                let size = (header.len() + t.data.len()) as u64;
                z.add_with(name, size, crc, &mut |out| {
                    out.write_all(header)?;
                    out.write_all(&t.data)
                })?;
            }
            None => z.add(name, &[header, &t.data])?,
        }
    }
    let (out, len, crc, bufs) = z.finish_keeping()?;
    *zip = bufs;
    Ok((out, len, crc))
}

/// A value serialised as JSON into a buffer, whatever its type (so one closure adds them all).
mod erased {
    use serde::Serialize;

    pub trait Json {
        fn write_to(&self, out: &mut Vec<u8>) -> std::io::Result<()>;
    }

    pub struct Of<'a, T: Serialize + ?Sized>(pub &'a T);

    impl<T: Serialize + ?Sized> Json for Of<'_, T> {
        fn write_to(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
            serde_json::to_writer(out, self.0).map_err(std::io::Error::from)
        }
    }
}

/// A blob read back: its bytes, checked against the index, and its entries.
#[derive(Debug, Clone)]
pub struct Blob {
    /// The blob's path in the store (for messages).
    pub path: String,
    bytes: Vec<u8>,
    index: zipfile::ZipIndex,
}

impl Blob {
    /// Check `bytes` against the length and CRC-32 the index recorded, then read its directory.
    pub fn open(
        run: &str,
        forward: u64,
        path: &str,
        bytes: Vec<u8>,
        len: u64,
        crc: u32,
    ) -> Result<Self> {
        if bytes.len() as u64 != len {
            return Err(StoreError::BlobLength {
                run: run.to_string(),
                forward,
                path: path.to_string(),
                want: len,
                got: bytes.len() as u64,
            });
        }
        let got = crc32fast::hash(&bytes);
        if got != crc {
            return Err(StoreError::BlobChecksum {
                run: run.to_string(),
                forward,
                path: path.to_string(),
                want: crc,
                got,
            });
        }
        Self::unchecked(path, bytes)
    }

    /// Read a blob's directory without an index to check it against (a blob on its own).
    pub fn unchecked(path: &str, bytes: Vec<u8>) -> Result<Self> {
        let index = zipfile::index_of(path, &bytes)?;
        Ok(Blob {
            path: path.to_string(),
            bytes,
            index,
        })
    }

    fn entry(&self, name: &str) -> Result<&[u8]> {
        zipfile::read_entry(&self.path, &self.bytes, &self.index, name)
    }

    fn json<T: for<'d> Deserialize<'d>>(&self, name: &str) -> Result<T> {
        serde_json::from_slice(self.entry(name)?).map_err(|e| StoreError::BadEntry {
            path: self.path.clone(),
            entry: name.to_string(),
            reason: e.to_string(),
        })
    }

    /// `forward.json`.
    pub fn meta(&self) -> Result<ForwardMeta> {
        self.json(FORWARD_ENTRY)
    }

    /// The facts in arrival order.
    pub fn facts(&self) -> Result<Vec<Fact>> {
        self.json(FACTS_ENTRY)
    }

    /// Per-node statistics (empty when the blob has none).
    pub fn stats(&self) -> Result<NodeStats> {
        if !self.index.entries.contains_key(STATS_ENTRY) {
            return Ok(NodeStats::new());
        }
        self.json(STATS_ENTRY)
    }

    /// Observed values by spec id (empty when the blob has none).
    pub fn values(&self) -> Result<ObservedValues> {
        if !self.index.entries.contains_key(VALUES_ENTRY) {
            return Ok(Default::default());
        }
        self.json(VALUES_ENTRY)
    }

    /// The tensor keys held (entries ending in `.npy`, without the suffix), sorted.
    pub fn tensor_keys(&self) -> Vec<&str> {
        self.index
            .entries
            .keys()
            .filter_map(|n| n.strip_suffix(".npy"))
            .collect()
    }

    /// The tensor under `key`, or `None` when the blob has no such key.
    pub fn tensor(&self, key: &str) -> Result<Option<TypedTensor>> {
        let name = format!("{key}.npy");
        if !self.index.entries.contains_key(&name) {
            return Ok(None);
        }
        let bytes = self.entry(&name)?;
        npy::parse(bytes, key, &self.path)
            .map(Some)
            .map_err(|reason| StoreError::BadEntry {
                path: self.path.clone(),
                entry: name,
                reason,
            })
    }

    /// The blob's length in bytes.
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Whether the blob is empty (never, for a valid one).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// The summarised fields of a forward: for each summarised kind, the first fact of that kind
/// gives `<kind>.<field>` for each of its extra fields that is a number, text or boolean.
pub fn summarise(facts: &[Fact], kinds: &[String]) -> Fields<'static> {
    let mut out = Vec::new();
    for kind in kinds {
        let Some(f) = facts.iter().find(|f| &f.kind == kind) else {
            continue;
        };
        for (name, value) in &f.extra {
            if let Some(v) = super::fact::Field::from_json(value) {
                let mut key = String::with_capacity(kind.len() + 1 + name.len());
                key.extend([kind.as_str(), ".", name.as_str()]);
                out.push((Cow::Owned(key), v));
            }
        }
    }
    Fields(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorData;

    fn sample() -> (ForwardMeta, ForwardRecord<'static>) {
        let mut stats = NodeStats::new();
        stats
            .entry("fc1".into())
            .or_default()
            .insert("l2".into(), super::super::fact::Num(3.5));
        let t =
            TypedTensor::from_f32("act.fc1", vec![1.0, -2.0, 3.0, f32::NAN], vec![2, 2]).unwrap();
        let rec = ForwardRecord {
            forward: 7,
            facts: vec![Fact::new("fc1", "Linear"), Fact::loss(0.5)],
            stats,
            tensors: vec![TensorBytes::from_typed("act.fc1", &t)],
            ..Default::default()
        };
        let meta = ForwardMeta {
            run: "r".into(),
            writer: "w".into(),
            forward: 7,
            written_us: 1,
            took_us: 0,
            broke: false,
            error: None,
            fields: Default::default(),
            tensors: vec!["act.fc1".into()],
        };
        (meta, rec)
    }

    #[test]
    fn blobs_round_trip_and_numpy_layout_holds() {
        let (meta, rec) = sample();
        let (bytes, len, crc) = write(Vec::new(), &meta, &rec).unwrap();
        let blob = Blob::open("r", 7, "b.npz", bytes, len, crc).unwrap();
        assert_eq!(blob.meta().unwrap(), meta);
        assert_eq!(blob.facts().unwrap(), rec.facts);
        assert_eq!(blob.stats().unwrap(), rec.stats);
        assert_eq!(blob.tensor_keys(), ["act.fc1"]);
        let t = blob.tensor("act.fc1").unwrap().unwrap();
        assert_eq!(t.shape, [2, 2]);
        match t.data {
            TensorData::F32(v) => {
                assert_eq!(&v[..3], &[1.0, -2.0, 3.0]);
                assert!(v[3].is_nan());
            }
            other => panic!("got {other:?}, wanted f32"),
        }
        assert!(blob.tensor("act.none").unwrap().is_none());
    }

    #[test]
    fn borrowed_meta_writes_the_same_blob_as_forward_meta() {
        let (_, mut rec) = sample();
        rec.tensors.push(TensorBytes {
            key: "grad.fc1.weight".into(),
            dtype: DType::F64,
            shape: vec![1, 2],
            data: Cow::Owned(vec![0; 16]),
        });
        let fields = Fields(vec![
            (
                Cow::Borrowed("loss.value"),
                super::super::fact::Field::Num(3.0),
            ),
            ("loss.x".into(), super::super::fact::Field::Num(0.1)),
            (
                "loss.inf".into(),
                super::super::fact::Field::Num(f64::NEG_INFINITY),
            ),
            (
                "loss.name".into(),
                super::super::fact::Field::Text("a\"b".into()),
            ),
            ("loss.ok".into(), super::super::fact::Field::Bool(true)),
            ("loss.none".into(), super::super::fact::Field::Null),
        ]);
        let owned = ForwardMeta {
            run: "r".into(),
            writer: "w".into(),
            forward: 7,
            written_us: -5,
            took_us: 9,
            broke: true,
            error: Some("fc1: boom".into()),
            fields: fields
                .0
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_json()))
                .collect(),
            tensors: rec.tensors.iter().map(|t| t.key.to_string()).collect(),
        };
        let borrowed = MetaRef {
            run: "r",
            writer: "w",
            forward: 7,
            written_us: -5,
            took_us: 9,
            broke: true,
            error: Some("fc1: boom"),
            fields: FieldsAsJson(&fields),
            tensors: KeysOf(&rec.tensors),
        };
        let (a, ..) = write(Vec::new(), &owned, &rec).unwrap();
        let mut scratch = Scratch::default();
        for _ in 0..2 {
            let (b, ..) =
                write_with(Vec::new(), &borrowed, &rec, &mut scratch, None, None).unwrap();
            assert_eq!(a, b);
            let crcs: Vec<u32> = rec
                .tensors
                .iter()
                .map(|t| crc32fast::hash(&t.data))
                .collect();
            let (c, ..) =
                write_with(Vec::new(), &borrowed, &rec, &mut scratch, Some(&crcs), None).unwrap();
            assert_eq!(a, c, "known CRCs give the same blob");
        }
        let blob = Blob::unchecked("b", a).unwrap();
        assert_eq!(blob.meta().unwrap(), owned);
    }

    #[test]
    fn large_tensors_start_on_a_page_of_the_pack_and_read_back() {
        let (meta, mut rec) = sample();
        let big: Vec<u8> = (0..ALIGN_FROM + 8).map(|i| (i % 253) as u8).collect();
        rec.tensors.push(TensorBytes {
            key: "act.big".into(),
            dtype: DType::U8,
            shape: vec![big.len()],
            data: Cow::Borrowed(&big),
        });
        for base in [0u64, 1, 4095, 12_345] {
            let mut scratch = Scratch::default();
            let (bytes, len, crc) =
                write_with(Vec::new(), &meta, &rec, &mut scratch, None, Some(base)).unwrap();
            let at = bytes
                .windows(64)
                .position(|w| w == &big[..64])
                .expect("the tensor's bytes") as u64;
            assert_eq!((base + at) % zipfile::PAGE, 0, "base {base}");
            let blob = Blob::open("r", 7, "b", bytes, len, crc).unwrap();
            let t = blob.tensor("act.big").unwrap().unwrap();
            assert_eq!(t.shape, [big.len()]);
            assert_eq!(blob.tensor("act.fc1").unwrap().unwrap().shape, [2, 2]);
            assert_eq!(blob.meta().unwrap(), meta);
        }
    }

    #[test]
    fn checksum_and_length_are_checked() {
        let (meta, rec) = sample();
        let (mut bytes, len, crc) = write(Vec::new(), &meta, &rec).unwrap();
        let short = bytes[..bytes.len() - 1].to_vec();
        assert!(matches!(
            Blob::open("r", 7, "b", short, len, crc),
            Err(StoreError::BlobLength { .. })
        ));
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        let err = Blob::open("r", 7, "b", bytes, len, crc).unwrap_err();
        assert!(
            matches!(err, StoreError::BlobChecksum { forward: 7, .. }),
            "{err}"
        );
    }

    #[test]
    fn bad_tensors_are_refused() {
        let t = TensorBytes {
            key: "k".into(),
            dtype: DType::F32,
            shape: vec![3],
            data: Cow::Owned(vec![0; 8]),
        };
        assert!(t.check().is_err(), "8 bytes for 3 f32 accepted");
        let t = TensorBytes {
            key: "../x".into(),
            dtype: DType::F32,
            shape: vec![2],
            data: Cow::Owned(vec![0; 8]),
        };
        assert!(t.check().is_err(), "escaping key accepted");
    }

    #[test]
    fn summaries_name_kind_dot_field() {
        let facts = vec![Fact::new("fc1", "Linear"), Fact::loss(0.25)];
        let f = summarise(&facts, &["loss".into(), "absent".into()]);
        assert_eq!(
            f.get("loss.value"),
            Some(&super::super::fact::Field::Num(0.25))
        );
        assert_eq!(f.0.len(), 1, "fields {f:?}");
    }
}

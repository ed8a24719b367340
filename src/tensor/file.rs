//! `TensorFile`: the front door. Sniffs the format, lists entries, reads one as a `TypedTensor`, or streams its statistics.

use super::bytes::{self, Blob, Extent, Packing, Source};
use super::elem::{Elem, Floats};
use super::error::{Problem, TensorError};
use super::npy::{self, NpyHeader};
use super::safetensors;
use super::torch::{self, TorchTensor};
use super::typed::{view_extent, Provenance, TensorData, TypedTensor};
use super::zipdir;
use crate::math::stats::{Moments, Stats};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::io::{BufReader, Cursor};
use std::path::Path;

/// A deflated entry bigger than this must not inflate more than [`BOMB_RATIO`] times its
/// compressed size.
pub const BOMB_FLOOR: u64 = 64 << 20;
/// The most a large deflated entry may inflate relative to its compressed size.
pub const BOMB_RATIO: u64 = 100;

/// The file formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Npy,
    Npz,
    /// A PyTorch zip checkpoint (`torch.save` since 1.6).
    TorchZip,
    /// A PyTorch legacy (pre-zip) checkpoint.
    TorchLegacy,
    Safetensors,
}

/// One entry as listed: its key, shape and the dtype as its writer names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryInfo {
    pub key: String,
    pub shape: Vec<usize>,
    pub dtype: String,
}

/// How the entry's elements are laid out in its extent.
#[derive(Debug, Clone, PartialEq)]
enum View {
    /// Row-major and contiguous.
    C,
    /// Column-major (NPY `fortran_order`).
    Fortran,
    /// Strides in elements, from the extent's first element (torch views).
    Strided(Vec<usize>),
}

/// Everything needed to read one entry.
#[derive(Debug, Clone)]
struct Plan {
    info: EntryInfo,
    elem: Elem,
    extent: Extent,
    view: View,
}

/// An open tensor file: its name, format, entries, and the source its bytes come from.
pub struct TensorFile<S> {
    name: String,
    format: Format,
    plans: Vec<Plan>,
    src: S,
}

/// A tensor file read from bytes in memory (entries are read in place).
pub type BytesFile<'a> = TensorFile<Cursor<&'a [u8]>>;
/// A tensor file read from disk by seeking to the entries asked for.
pub type PathFile = TensorFile<BufReader<std::fs::File>>;

impl<'a> TensorFile<Cursor<&'a [u8]>> {
    /// Open a tensor file held in memory; `name` is used for keys of a lone `.npy` and in errors.
    pub fn open_bytes(name: &str, bytes: &'a [u8]) -> Result<Self, TensorError> {
        Self::open(name, Cursor::new(bytes))
    }
}

impl TensorFile<BufReader<std::fs::File>> {
    /// Open a tensor file on disk, reading only its directory and headers.
    pub fn open_path(path: impl AsRef<Path>) -> Result<Self, TensorError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| Problem::from(e).at(&name, None))?;
        Self::open(&name, BufReader::with_capacity(1 << 16, file))
    }
}

impl<S: Source> TensorFile<S> {
    /// Sniff the format of `src` and plan every entry.
    pub fn open(name: &str, mut src: S) -> Result<Self, TensorError> {
        let fail = |p: Problem| p.at(name, None);
        let total = src.total_len().map_err(|e| fail(e.into()))?;
        let head = bytes::peek(
            &mut src,
            &Blob {
                start: 0,
                len: total,
                packing: Packing::Plain,
            },
            64,
        )
        .map_err(fail)?;
        let (format, plans) = if npy::looks_like_npy(&head) {
            (Format::Npy, plan_npy(&mut src, name, total)?)
        } else if zipdir::looks_like_zip(&head) {
            plan_zip(&mut src, name)?
        } else if torch::looks_like_legacy(&head) {
            let tensors = torch::from_legacy(&mut src).map_err(fail)?;
            (Format::TorchLegacy, plan_torch(name, tensors)?)
        } else if safetensors::looks_like_safetensors(&head) {
            (
                Format::Safetensors,
                plan_safetensors(&mut src, name, &head, total).map_err(fail)?,
            )
        } else {
            return Err(fail(Problem::UnknownFormat));
        };
        Ok(TensorFile {
            name: name.to_string(),
            format,
            plans,
            src,
        })
    }

    /// The file's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The format sniffed.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> Vec<EntryInfo> {
        self.plans.iter().map(|p| p.info.clone()).collect()
    }

    fn plan(&self, key: &str) -> Result<Plan, TensorError> {
        self.plans
            .iter()
            .find(|p| p.info.key == key)
            .cloned()
            .ok_or_else(|| Problem::NoSuchEntry.at(&self.name, Some(key)))
    }

    /// Read one entry as a C-order typed tensor, with its provenance.
    pub fn read(&mut self, key: &str) -> Result<TypedTensor, TensorError> {
        let plan = self.plan(key)?;
        let fail = |p: Problem| p.at(&self.name, Some(key));
        let count = usize::try_from(plan.extent.len / plan.elem.size() as u64).unwrap_or(0);
        let mut data = TensorData::with_capacity(plan.elem.dtype, count);
        bytes::stream(
            &mut self.src,
            &plan.extent,
            plan.elem.size(),
            &mut |chunk| {
                plan.elem.append_to(chunk, &mut data);
                Ok(())
            },
        )
        .map_err(fail)?;
        let data = match &plan.view {
            View::C => Some(data),
            View::Fortran => {
                let mut data = data;
                data.fortran_to_c(&plan.info.shape).then_some(data)
            }
            View::Strided(strides) => data.gather(0, &plan.info.shape, strides),
        }
        .ok_or_else(|| fail(Problem::View("the view reaches outside its data".into())))?;
        let provenance = Provenance {
            file: self.name.clone(),
            key: key.to_string(),
            dtype: plan.info.dtype.clone(),
        };
        TypedTensor::new(data, plan.info.shape.clone(), provenance).ok_or_else(|| {
            fail(Problem::View(
                "element count does not match the shape".into(),
            ))
        })
    }

    /// The statistics of one entry, streamed in chunks (strided torch views are gathered first).
    pub fn stats(&mut self, key: &str) -> Result<Stats, TensorError> {
        let plan = self.plan(key)?;
        let mut moments = Moments::new();
        if let View::Strided(_) = plan.view {
            self.read(key)?
                .data
                .for_each_chunk(&mut |c| moments.push_f64(c));
            return Ok(moments.finish());
        }
        // Element order does not change the statistics, so Fortran data streams as stored.
        bytes::stream(
            &mut self.src,
            &plan.extent,
            plan.elem.size(),
            &mut |chunk| {
                plan.elem.feed_floats(chunk, &mut |c| match c {
                    Floats::F32(v) => moments.push_slice(v),
                    Floats::F64(v) => moments.push_slice(v),
                });
                Ok(())
            },
        )
        .map_err(|p| p.at(&self.name, Some(key)))?;
        Ok(moments.finish())
    }

    /// Shape, dtype and statistics of every entry, in file order.
    pub fn summarize(&mut self) -> Result<Summaries, TensorError> {
        let mut out = Vec::with_capacity(self.plans.len());
        for info in self.entries() {
            let stats = self.stats(&info.key)?;
            out.push((
                info.key,
                TensorSummary {
                    shape: info.shape,
                    dtype: info.dtype,
                    stats,
                },
            ));
        }
        Ok(Summaries(out))
    }
}

/// One entry's shape, dtype and statistics (the fields of `expected.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorSummary {
    pub shape: Vec<usize>,
    pub dtype: String,
    #[serde(flatten)]
    pub stats: Stats,
}

/// Every entry's summary in file order; serialises as `{key: summary}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Summaries(pub Vec<(String, TensorSummary)>);

impl Serialize for Summaries {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The key of a lone `.npy`: its file stem.
fn stem(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.strip_suffix(".npy").unwrap_or(base).to_string()
}

/// Plan an NPY array stored in `blob`, keyed `key`; the data must fill the blob exactly.
fn plan_npy_blob(header: NpyHeader, blob: Blob, key: String) -> Result<Plan, Problem> {
    let len = header
        .data_len()
        .ok_or_else(|| Problem::Header(format!("shape {:?} overflows", header.shape)))?;
    let found = blob.len.saturating_sub(header.data_offset as u64);
    if found != len {
        return Err(Problem::DataSize {
            expected: len,
            found,
        });
    }
    if let Packing::Deflated { compressed, .. } = blob.packing {
        if blob.len > BOMB_FLOOR && blob.len / compressed.max(1) > BOMB_RATIO {
            return Err(Problem::Bomb(format!(
                "{compressed} compressed bytes would inflate to {} (more than {BOMB_RATIO}x)",
                blob.len
            )));
        }
    }
    let view = if header.fortran && header.shape.len() > 1 {
        View::Fortran
    } else {
        View::C
    };
    Ok(Plan {
        info: EntryInfo {
            key,
            shape: header.shape,
            dtype: header.descr,
        },
        elem: header.elem,
        extent: Extent {
            blob,
            skip: header.data_offset as u64,
            len,
        },
        view,
    })
}

fn plan_npy<S: Source>(src: &mut S, name: &str, total: u64) -> Result<Vec<Plan>, TensorError> {
    let key = stem(name);
    let fail = |p: Problem| p.at(name, Some(&key));
    let blob = Blob {
        start: 0,
        len: total,
        packing: Packing::Plain,
    };
    let head = bytes::peek(src, &blob, npy::MAX_HEADER + 12).map_err(fail)?;
    let header = npy::parse_header(&head).map_err(fail)?;
    Ok(vec![plan_npy_blob(header, blob, key.clone()).map_err(fail)?])
}

fn plan_zip<S: Source>(src: &mut S, name: &str) -> Result<(Format, Vec<Plan>), TensorError> {
    let members = zipdir::members(src).map_err(|p| p.at(name, None))?;
    let total = src
        .total_len()
        .map_err(|e| Problem::from(e).at(name, None))?;
    for m in &members {
        let packed = match m.blob.packing {
            Packing::Deflated { compressed, .. } => compressed,
            _ => m.blob.len,
        };
        if m.blob.start.checked_add(packed).is_none_or(|e| e > total) {
            let p = Problem::Truncated(format!(
                "member data ends past the end of the {total}-byte file"
            ));
            return Err(p.at(name, Some(&m.name)));
        }
    }
    if members.iter().any(|m| m.name.ends_with("data.pkl")) {
        let tensors = torch::from_zip(src, &members).map_err(|p| p.at(name, None))?;
        return Ok((Format::TorchZip, plan_torch(name, tensors)?));
    }
    let mut plans = Vec::new();
    for m in members.iter().filter(|m| m.name.ends_with(".npy")) {
        let key = m.name.strip_suffix(".npy").unwrap_or(&m.name).to_string();
        let fail = |p: Problem| p.at(name, Some(&key));
        let head = bytes::peek(src, &m.blob, npy::MAX_HEADER + 12).map_err(fail)?;
        let header = npy::parse_header(&head).map_err(fail)?;
        plans.push(plan_npy_blob(header, m.blob, key.clone()).map_err(fail)?);
    }
    if plans.is_empty() {
        return Err(
            Problem::Zip("archive holds no .npy members and no data.pkl".into()).at(name, None),
        );
    }
    Ok((Format::Npz, plans))
}

fn plan_torch(name: &str, tensors: Vec<TorchTensor>) -> Result<Vec<Plan>, TensorError> {
    tensors
        .into_iter()
        .map(|t| {
            let key = t.key.clone();
            plan_torch_tensor(t).map_err(|p| p.at(name, Some(&key)))
        })
        .collect()
}

/// Plan a torch view: the part of its storage it spans, contiguous or strided.
fn plan_torch_tensor(t: TorchTensor) -> Result<Plan, Problem> {
    let elem = Elem {
        dtype: t.view.storage.dtype,
        big_endian: t.big_endian,
    };
    let size = elem.size() as u64;
    let too_big = || Problem::View("sizes overflow".into());
    let shape: Vec<usize> = t
        .view
        .sizes
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| too_big()))
        .collect::<Result<_, _>>()?;
    let strides: Vec<usize> = t
        .view
        .strides
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| too_big()))
        .collect::<Result<_, _>>()?;
    let offset = usize::try_from(t.view.offset).map_err(|_| too_big())?;
    let last = view_extent(offset, &shape, &strides).ok_or_else(too_big)?;
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(too_big)?;
    let (first, span) = match last {
        Some(last) => (offset as u64, (last - offset) as u64 + 1),
        None => (0, 0),
    };
    let storage_elems = t.storage.len / size;
    if first + span > storage_elems {
        return Err(Problem::View(format!(
            "elements {first}..{} lie outside the {storage_elems}-element storage",
            first + span
        )));
    }
    let contiguous = span == count as u64 && is_c_contiguous(&shape, &strides);
    let view = if contiguous {
        View::C
    } else {
        View::Strided(strides)
    };
    let extent = Extent {
        blob: t.storage,
        skip: first * size,
        len: span * size,
    };
    let dtype = elem.dtype.name().to_string();
    Ok(Plan {
        info: EntryInfo {
            key: t.key,
            shape,
            dtype,
        },
        elem,
        extent,
        view,
    })
}

/// Whether strides are row-major for `shape` (dimensions of size one may have any stride).
fn is_c_contiguous(shape: &[usize], strides: &[usize]) -> bool {
    let mut expect = 1usize;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if n != 1 && s != expect {
            return false;
        }
        expect = expect.saturating_mul(n);
    }
    true
}

fn plan_safetensors<S: Source>(
    src: &mut S,
    _name: &str,
    head: &[u8],
    total: u64,
) -> Result<Vec<Plan>, Problem> {
    let n = safetensors::header_len(head, total)?;
    let blob = Blob {
        start: 0,
        len: total,
        packing: Packing::Plain,
    };
    let json = bytes::read_small(
        src,
        &Extent {
            blob,
            skip: 8,
            len: n,
        },
    )?;
    let tensors = safetensors::parse(&json, total)?;
    Ok(tensors
        .into_iter()
        .map(|t| Plan {
            info: EntryInfo {
                key: format!("param.{}", t.name),
                shape: t.shape,
                dtype: t.elem.dtype.name().to_string(),
            },
            elem: t.elem,
            extent: Extent {
                blob: Blob {
                    start: t.start,
                    len: t.len,
                    packing: Packing::Plain,
                },
                skip: 0,
                len: t.len,
            },
            view: View::C,
        })
        .collect())
}

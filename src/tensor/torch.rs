//! PyTorch checkpoints: the zip format (`*/data.pkl` + `data/<key>` storages) and the legacy pre-zip format, as named tensor views.

use super::bytes::{fill, Blob, Packing, Source};
use super::error::Problem;
use super::pickle::{self, Obj, Pickle, TensorRef};
use super::zipdir::Member;
use std::collections::{HashMap, HashSet};
use std::io::{Read, SeekFrom};

/// The legacy protocol version torch writes.
const LEGACY_PROTOCOL: i64 = 1001;
/// Deepest container nesting followed when naming tensors.
const MAX_DEPTH: usize = 64;

/// A named tensor of a checkpoint: its key, its view, and the bytes of its storage.
#[derive(Debug, Clone)]
pub struct TorchTensor {
    pub key: String,
    pub view: TensorRef,
    pub storage: Blob,
    pub big_endian: bool,
}

/// The tensors of a zip-format checkpoint, given the archive's members.
pub fn from_zip<S: Source>(src: &mut S, members: &[Member]) -> Result<Vec<TorchTensor>, Problem> {
    let pkl = members
        .iter()
        .find(|m| m.name.ends_with("data.pkl") && m.name.matches('/').count() <= 1)
        .ok_or_else(|| {
            Problem::Header(
                "zip archive has no `data.pkl` (not an NPZ or a torch checkpoint)".into(),
            )
        })?;
    let prefix = &pkl.name[..pkl.name.len() - "data.pkl".len()];
    let by_name: HashMap<&str, &Member> = members.iter().map(|m| (m.name.as_str(), m)).collect();
    let big_endian = match by_name.get(format!("{prefix}byteorder").as_str()) {
        Some(m) => super::bytes::read_small(src, &whole(m.blob, 16)?)? == b"big",
        None => false,
    };
    let data = super::bytes::read_small(src, &whole(pkl.blob, pickle::MAX_PICKLE)?)?;
    let (pk, _) = pickle::load(&data)?;
    let mut out = Vec::new();
    for (key, view) in named_tensors(&pk) {
        let name = format!("{prefix}data/{}", view.storage.key);
        let m = by_name.get(name.as_str()).ok_or_else(|| {
            Problem::View(format!(
                "`{key}` uses storage `{name}`, which the archive lacks"
            ))
        })?;
        out.push(TorchTensor {
            key,
            view,
            storage: m.blob,
            big_endian,
        });
    }
    Ok(out)
}

/// An extent covering a whole (capped) blob.
fn whole(blob: Blob, cap: u64) -> Result<super::bytes::Extent, Problem> {
    if blob.len > cap {
        return Err(Problem::TooLarge {
            what: "pickle length",
            size: blob.len,
            cap,
        });
    }
    Ok(super::bytes::Extent {
        blob,
        skip: 0,
        len: blob.len,
    })
}

/// Whether the bytes could start a legacy checkpoint (a pickle of the magic number).
pub fn looks_like_legacy(head: &[u8]) -> bool {
    head.starts_with(b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19")
}

/// The tensors of a legacy (pre-zip) checkpoint: five pickles, then each storage as
/// an 8-byte element count and its raw bytes, in the order the last pickle lists them.
pub fn from_legacy<S: Source>(src: &mut S) -> Result<Vec<TorchTensor>, Problem> {
    let total = src.total_len()?;
    let (head, pickles) = read_pickles(src, total)?;
    let [_magic, protocol, sys_info, main, keys] = &pickles[..] else {
        return Err(Problem::Pickle(
            "legacy checkpoint needs five pickles".into(),
        ));
    };
    check_protocol(protocol)?;
    let big_endian = !legacy_little_endian(sys_info);
    let order = string_list(keys)?;
    let tensors = named_tensors(main);
    let sizes = element_sizes(&tensors)?;
    let blobs = locate_storages(src, head, total, &order, &sizes)?;
    tensors
        .into_iter()
        .map(|(key, mut view)| {
            if let Some((root, offset)) = view.storage.view_of.clone() {
                view.storage.key = root;
                view.offset = view
                    .offset
                    .checked_add(offset)
                    .ok_or_else(|| Problem::View("offset overflows".into()))?;
            }
            let storage = *blobs.get(&view.storage.key).ok_or_else(|| {
                Problem::View(format!(
                    "`{key}` uses storage `{}`, which the file lacks",
                    view.storage.key
                ))
            })?;
            Ok(TorchTensor {
                key,
                view,
                storage,
                big_endian,
            })
        })
        .collect()
}

/// Read the five leading pickles, growing the read window until they fit; returns where
/// the storages begin.
fn read_pickles<S: Source>(src: &mut S, total: u64) -> Result<(u64, Vec<Pickle>), Problem> {
    let mut window = (1u64 << 20).min(total);
    loop {
        src.seek(SeekFrom::Start(0))?;
        let mut buf = vec![0u8; window as usize];
        let n = fill(&mut Read::take(&mut *src, window), &mut buf)?;
        buf.truncate(n);
        match parse_five(&buf) {
            Err(Problem::Truncated(_)) if window < total.min(pickle::MAX_PICKLE) => {
                window = (window * 4).min(total).min(pickle::MAX_PICKLE);
            }
            other => return other,
        }
    }
}

fn parse_five(buf: &[u8]) -> Result<(u64, Vec<Pickle>), Problem> {
    let mut at = 0usize;
    let mut out = Vec::with_capacity(5);
    for _ in 0..5 {
        let rest = buf.get(at..).unwrap_or(&[]);
        let (p, used) = pickle::load(rest)?;
        at += used;
        out.push(p);
    }
    Ok((at as u64, out))
}

/// The second pickle must be protocol 1001 (the magic was checked by [`looks_like_legacy`]).
fn check_protocol(protocol: &Pickle) -> Result<(), Problem> {
    match &protocol.objs[protocol.root] {
        Obj::Int(LEGACY_PROTOCOL) => Ok(()),
        other => Err(Problem::Header(format!(
            "legacy protocol version {other:?}, expected 1001"
        ))),
    }
}

fn legacy_little_endian(sys_info: &Pickle) -> bool {
    let Obj::Dict(items) = &sys_info.objs[sys_info.root] else {
        return true;
    };
    items.iter().all(|&(k, v)| {
        !matches!(&sys_info.objs[k], Obj::Str(s) if s == "little_endian")
            || sys_info.objs[v] != Obj::Bool(false)
    })
}

fn string_list(p: &Pickle) -> Result<Vec<String>, Problem> {
    let Obj::List(items) = &p.objs[p.root] else {
        return Err(Problem::Pickle(
            "legacy storage key list is not a list".into(),
        ));
    };
    items
        .iter()
        .map(|&i| match &p.objs[i] {
            Obj::Str(s) => Ok(s.clone()),
            _ => Err(Problem::Pickle("legacy storage key is not a string".into())),
        })
        .collect()
}

/// Bytes per element of every storage the tensors use.
fn element_sizes(tensors: &[(String, TensorRef)]) -> Result<HashMap<String, (u64, u64)>, Problem> {
    let mut out = HashMap::new();
    for (_, t) in tensors {
        let key = t
            .storage
            .view_of
            .as_ref()
            .map_or(&t.storage.key, |(root, _)| root);
        out.insert(
            key.clone(),
            (t.storage.dtype.size() as u64, t.storage.numel),
        );
    }
    Ok(out)
}

/// Walk the storage records after the pickles: count, then bytes, for each key in order.
fn locate_storages<S: Source>(
    src: &mut S,
    mut at: u64,
    total: u64,
    order: &[String],
    sizes: &HashMap<String, (u64, u64)>,
) -> Result<HashMap<String, Blob>, Problem> {
    let mut out = HashMap::new();
    for key in order {
        let &(itemsize, _) = sizes.get(key).ok_or_else(|| {
            Problem::View(format!("storage `{key}` is listed but no tensor uses it"))
        })?;
        let mut count = [0u8; 8];
        src.seek(SeekFrom::Start(at))?;
        if fill(&mut *src, &mut count)? < 8 {
            return Err(Problem::Truncated(format!(
                "storage `{key}` record at byte {at} is cut short"
            )));
        }
        let count = u64::from_le_bytes(count);
        let len = count
            .checked_mul(itemsize)
            .ok_or(Problem::View("storage size overflows".into()))?;
        let start = at + 8;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= total)
            .ok_or_else(|| {
                Problem::Truncated(format!(
                    "storage `{key}` needs {len} bytes at {start}, the file has {total}"
                ))
            })?;
        out.insert(
            key.clone(),
            Blob {
                start,
                len,
                packing: Packing::Plain,
            },
        );
        at = end;
    }
    Ok(out)
}

/// Every tensor reachable from the root, named `param.<dotted path>`, skipping optimizer
/// state dicts (dicts with `state` and `param_groups`) and non-tensor values.
pub fn named_tensors(p: &Pickle) -> Vec<(String, TensorRef)> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut names = HashSet::new();
    walk(p, p.root, "param", 0, &mut seen, &mut names, &mut out);
    out
}

fn walk(
    p: &Pickle,
    id: pickle::Id,
    path: &str,
    depth: usize,
    seen: &mut HashSet<pickle::Id>,
    names: &mut HashSet<String>,
    out: &mut Vec<(String, TensorRef)>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match &p.objs[id] {
        Obj::Tensor(t) if names.insert(path.to_string()) => out.push((path.to_string(), t.clone())),
        Obj::Dict(items) if !is_optimizer(p, items) && seen.insert(id) => {
            for &(k, v) in items {
                if let Some(k) = key_text(&p.objs[k]) {
                    walk(p, v, &format!("{path}.{k}"), depth + 1, seen, names, out);
                }
            }
        }
        Obj::List(items) | Obj::Tuple(items) if seen.insert(id) => {
            for (i, &v) in items.iter().enumerate() {
                walk(p, v, &format!("{path}.{i}"), depth + 1, seen, names, out);
            }
        }
        _ => {}
    }
}

fn key_text(o: &Obj) -> Option<String> {
    match o {
        Obj::Str(s) => Some(s.clone()),
        Obj::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// An optimizer's state dict: has both `state` and `param_groups` keys.
fn is_optimizer(p: &Pickle, items: &[(pickle::Id, pickle::Id)]) -> bool {
    let has = |name: &str| {
        items
            .iter()
            .any(|&(k, _)| matches!(&p.objs[k], Obj::Str(s) if s == name))
    };
    has("state") && has("param_groups")
}

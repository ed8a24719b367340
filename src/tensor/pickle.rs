//! A restricted pickle reader for PyTorch checkpoints: the opcodes and globals a state dict needs, nothing is ever called.

use super::error::Problem;
use super::typed::DType;
use std::collections::HashMap;

/// Longest pickle read into memory.
pub const MAX_PICKLE: u64 = 256 << 20;
/// Most objects one pickle may build (a guard against memo and container blow-ups).
pub const MAX_OBJECTS: usize = 16 << 20;
/// Longest string or bytes object.
const MAX_STR: usize = 64 << 20;

/// An index into the object arena.
pub type Id = usize;

/// The few callables a checkpoint may name; anything else is refused when named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    /// `torch._utils._rebuild_tensor_v2` and `_rebuild_tensor`.
    RebuildTensor,
    /// `torch._utils._rebuild_parameter` (and `_with_state`): returns its tensor argument.
    RebuildParameter,
    /// `torch._tensor._rebuild_from_type_v2(func, type, args, state)`: applies `func` to `args`.
    RebuildFromType,
    /// `collections.OrderedDict`: an empty dict.
    OrderedDict,
    /// A typed storage class such as `torch.FloatStorage`, with its dtype.
    Storage(DType),
    /// `torch.device`, `torch.Size`, `torch.nn.parameter.Parameter`, `torch.Tensor`: inert values.
    Inert,
}

/// A reference to a storage from a persistent id: its dtype, key and element count.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageRef {
    pub dtype: DType,
    pub key: String,
    pub numel: u64,
    /// Legacy format only: a view of another storage (`root key`, element offset).
    pub view_of: Option<(String, u64)>,
}

/// A tensor rebuilt from a storage: the storage and the view into it (in elements).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRef {
    pub storage: StorageRef,
    pub offset: u64,
    pub sizes: Vec<u64>,
    pub strides: Vec<u64>,
}

/// One unpickled object.
#[derive(Debug, Clone, PartialEq)]
pub enum Obj {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Tuple(Vec<Id>),
    List(Vec<Id>),
    Dict(Vec<(Id, Id)>),
    Global(Global),
    Storage(StorageRef),
    Tensor(TensorRef),
    /// A value the reader keeps but does not interpret (a big integer, a device).
    Opaque,
}

/// The result of one pickle: its object arena and the root object.
#[derive(Debug, Default)]
pub struct Pickle {
    pub objs: Vec<Obj>,
    pub root: Id,
}

/// Which global names map to which allowed callables; everything else is refused.
fn allowed(module: &str, name: &str) -> Result<Global, Problem> {
    let storage = |d| Ok(Global::Storage(d));
    match (module, name) {
        ("torch._utils", "_rebuild_tensor_v2" | "_rebuild_tensor") => Ok(Global::RebuildTensor),
        ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => {
            Ok(Global::RebuildParameter)
        }
        ("torch._tensor", "_rebuild_from_type_v2") => Ok(Global::RebuildFromType),
        ("collections", "OrderedDict") => Ok(Global::OrderedDict),
        ("torch", "device" | "Size" | "Tensor") | ("torch.nn.parameter", "Parameter") => {
            Ok(Global::Inert)
        }
        ("torch", "FloatStorage") => storage(DType::F32),
        ("torch", "DoubleStorage") => storage(DType::F64),
        ("torch", "HalfStorage") => storage(DType::F16),
        ("torch", "BFloat16Storage") => storage(DType::BF16),
        ("torch", "LongStorage") => storage(DType::I64),
        ("torch", "IntStorage") => storage(DType::I32),
        ("torch", "ShortStorage") => storage(DType::I16),
        ("torch", "CharStorage") => storage(DType::I8),
        ("torch", "ByteStorage") => storage(DType::U8),
        ("torch", "BoolStorage") => storage(DType::Bool),
        ("torch", n) if n.ends_with("Storage") => Err(Problem::Unsupported(format!(
            "storage type `torch.{n}` (complex, quantized or untyped storages are not read)"
        ))),
        _ => Err(Problem::ForbiddenGlobal(format!("{module}.{name}"))),
    }
}

/// The interpreter's state while reading one pickle.
struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    objs: Vec<Obj>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
}

/// Read one pickle from the start of `data`; returns it and the number of bytes it took.
pub fn load(data: &[u8]) -> Result<(Pickle, usize), Problem> {
    let mut m = Machine {
        data,
        pos: 0,
        objs: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
    };
    let root = m.run()?;
    Ok((Pickle { objs: m.objs, root }, m.pos))
}

impl Machine<'_> {
    fn bad(&self, what: impl std::fmt::Display) -> Problem {
        Problem::Pickle(format!("{what} (at byte {})", self.pos))
    }

    fn take(&mut self, n: usize) -> Result<&[u8], Problem> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| {
            Problem::Truncated(format!("pickle ends inside an opcode at byte {}", self.pos))
        })?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, Problem> {
        Ok(self.take(1)?[0])
    }

    fn le<const N: usize>(&mut self) -> Result<[u8; N], Problem> {
        let b = self.take(N)?;
        <[u8; N]>::try_from(b).map_err(|_| Problem::Pickle("short read".into()))
    }

    fn line(&mut self) -> Result<String, Problem> {
        let rest = &self.data[self.pos..];
        let n = rest
            .iter()
            .take(4096)
            .position(|&c| c == b'\n')
            .ok_or_else(|| self.bad("unterminated text line"))?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }

    fn alloc(&mut self, o: Obj) -> Result<Id, Problem> {
        if self.objs.len() >= MAX_OBJECTS {
            return Err(Problem::TooLarge {
                what: "pickle object count",
                size: self.objs.len() as u64,
                cap: MAX_OBJECTS as u64,
            });
        }
        self.objs.push(o);
        Ok(self.objs.len() - 1)
    }

    fn push(&mut self, o: Obj) -> Result<(), Problem> {
        let id = self.alloc(o)?;
        self.stack.push(id);
        Ok(())
    }

    fn pop(&mut self) -> Result<Id, Problem> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.bad("stack underflow"));
        }
        self.stack.pop().ok_or_else(|| self.bad("stack underflow"))
    }

    fn top(&self) -> Result<Id, Problem> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| self.bad("empty stack"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Id>, Problem> {
        let mark = self.marks.pop().ok_or_else(|| self.bad("no mark"))?;
        if mark > self.stack.len() {
            return Err(self.bad("mark above the stack"));
        }
        Ok(self.stack.split_off(mark))
    }

    fn string(&mut self, n: usize) -> Result<String, Problem> {
        if n > MAX_STR {
            return Err(Problem::TooLarge {
                what: "pickle string",
                size: n as u64,
                cap: MAX_STR as u64,
            });
        }
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| Problem::Pickle("string is not UTF-8".into()))
    }

    fn bytes(&mut self, n: usize) -> Result<Vec<u8>, Problem> {
        if n > MAX_STR {
            return Err(Problem::TooLarge {
                what: "pickle bytes",
                size: n as u64,
                cap: MAX_STR as u64,
            });
        }
        Ok(self.take(n)?.to_vec())
    }

    fn long(&mut self, n: usize) -> Result<Obj, Problem> {
        let b = self.take(n)?;
        if n == 0 {
            return Ok(Obj::Int(0));
        }
        if n > 8 {
            return Ok(Obj::Opaque);
        }
        let neg = b[n - 1] & 0x80 != 0;
        let mut buf = if neg { [0xffu8; 8] } else { [0u8; 8] };
        buf[..n].copy_from_slice(b);
        Ok(Obj::Int(i64::from_le_bytes(buf)))
    }

    fn memo_put(&mut self, key: u64) -> Result<(), Problem> {
        let id = self.top()?;
        self.memo.insert(key, id);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Result<(), Problem> {
        let id = *self
            .memo
            .get(&key)
            .ok_or_else(|| self.bad(format!("memo {key} unset")))?;
        self.stack.push(id);
        Ok(())
    }

    fn run(&mut self) -> Result<Id, Problem> {
        loop {
            let op = self.u8()?;
            match op {
                b'.' => return self.pop(),
                _ => self.step(op)?,
            }
        }
    }

    fn step(&mut self, op: u8) -> Result<(), Problem> {
        match op {
            0x80 => {
                self.u8()?;
            }
            0x95 => {
                self.take(8)?;
            }
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let t = self.top()?;
                self.stack.push(t);
            }
            b'N' => self.push(Obj::None)?,
            0x88 => self.push(Obj::Bool(true))?,
            0x89 => self.push(Obj::Bool(false))?,
            b'J' => {
                let v = i32::from_le_bytes(self.le()?);
                self.push(Obj::Int(v.into()))?
            }
            b'K' => {
                let v = self.u8()?;
                self.push(Obj::Int(v.into()))?
            }
            b'M' => {
                let v = u16::from_le_bytes(self.le()?);
                self.push(Obj::Int(v.into()))?
            }
            0x8a => {
                let n = self.u8()? as usize;
                let v = self.long(n)?;
                self.push(v)?
            }
            0x8b => {
                let n = u32::from_le_bytes(self.le()?) as usize;
                let v = self.long(n.min(MAX_STR + 1))?;
                self.push(v)?
            }
            b'I' | b'L' => {
                let line = self.line()?;
                let t = line.trim_end_matches('L');
                let v = match t {
                    "00" => Obj::Bool(false),
                    "01" => Obj::Bool(true),
                    _ => t.parse().map(Obj::Int).unwrap_or(Obj::Opaque),
                };
                self.push(v)?
            }
            b'G' => {
                let v = f64::from_be_bytes(self.le()?);
                self.push(Obj::Float(v))?
            }
            b'F' => {
                let line = self.line()?;
                let v = line.trim().parse().map_err(|_| self.bad("bad float"))?;
                self.push(Obj::Float(v))?
            }
            b'X' => {
                let n = u32::from_le_bytes(self.le()?) as usize;
                let s = self.string(n)?;
                self.push(Obj::Str(s))?
            }
            0x8c => {
                let n = self.u8()? as usize;
                let s = self.string(n)?;
                self.push(Obj::Str(s))?
            }
            0x8d => {
                let n = usize::try_from(u64::from_le_bytes(self.le()?)).unwrap_or(usize::MAX);
                let s = self.string(n)?;
                self.push(Obj::Str(s))?
            }
            b'V' => {
                let s = self.line()?;
                self.push(Obj::Str(s))?
            }
            b'T' | b'B' => {
                let n = u32::from_le_bytes(self.le()?) as usize;
                let b = self.bytes(n)?;
                self.push(Obj::Bytes(b))?
            }
            b'U' | b'C' => {
                let n = self.u8()? as usize;
                let b = self.bytes(n)?;
                self.push(Obj::Bytes(b))?
            }
            0x8e => {
                let n = usize::try_from(u64::from_le_bytes(self.le()?)).unwrap_or(usize::MAX);
                let b = self.bytes(n)?;
                self.push(Obj::Bytes(b))?
            }
            b')' => self.push(Obj::Tuple(Vec::new()))?,
            b't' => {
                let items = self.pop_mark()?;
                self.push(Obj::Tuple(items))?
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.pop()?);
                }
                items.reverse();
                self.push(Obj::Tuple(items))?
            }
            b']' | 0x8f => self.push(Obj::List(Vec::new()))?,
            b'l' => {
                let items = self.pop_mark()?;
                self.push(Obj::List(items))?
            }
            b'a' => {
                let v = self.pop()?;
                self.extend_list(vec![v])?
            }
            b'e' | 0x90 => {
                let items = self.pop_mark()?;
                self.extend_list(items)?
            }
            0x91 => {
                let items = self.pop_mark()?;
                self.push(Obj::List(items))?
            }
            b'}' => self.push(Obj::Dict(Vec::new()))?,
            b'd' => {
                let items = self.pop_mark()?;
                let pairs = pairs(&items).ok_or_else(|| self.bad("odd number of dict items"))?;
                self.push(Obj::Dict(pairs))?
            }
            b's' => {
                let v = self.pop()?;
                let k = self.pop()?;
                self.set_items(vec![(k, v)])?
            }
            b'u' => {
                let items = self.pop_mark()?;
                let pairs = pairs(&items).ok_or_else(|| self.bad("odd number of dict items"))?;
                self.set_items(pairs)?
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                let g = allowed(&module, &name)?;
                self.push(Obj::Global(g))?
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                match (&self.objs[module], &self.objs[name]) {
                    (Obj::Str(m), Obj::Str(n)) => {
                        let g = allowed(m, n)?;
                        self.push(Obj::Global(g))?
                    }
                    _ => return Err(self.bad("STACK_GLOBAL without two strings")),
                }
            }
            b'R' => {
                let args = self.pop()?;
                let func = self.pop()?;
                let v = self.reduce(func, args)?;
                self.push(v)?
            }
            b'b' => {
                // BUILD: setting state on a dict (OrderedDict `_metadata`) or tensor is ignored.
                self.pop()?;
                self.top()?;
            }
            b'Q' => {
                let pid = self.pop()?;
                let v = self.persistent(pid)?;
                self.push(v)?
            }
            b'P' => return Err(self.bad("text persistent ids are not used by torch")),
            b'q' => {
                let k = self.u8()?;
                self.memo_put(k.into())?
            }
            b'r' => {
                let k = u32::from_le_bytes(self.le()?);
                self.memo_put(k.into())?
            }
            b'p' => {
                let k = self
                    .line()?
                    .trim()
                    .parse()
                    .map_err(|_| self.bad("bad memo key"))?;
                self.memo_put(k)?
            }
            0x94 => {
                let k = self.memo.len() as u64;
                self.memo_put(k)?
            }
            b'h' => {
                let k = self.u8()?;
                self.memo_get(k.into())?
            }
            b'j' => {
                let k = u32::from_le_bytes(self.le()?);
                self.memo_get(k.into())?
            }
            b'g' => {
                let k = self
                    .line()?
                    .trim()
                    .parse()
                    .map_err(|_| self.bad("bad memo key"))?;
                self.memo_get(k)?
            }
            b'i' | b'o' | 0x81 | 0x92 => {
                return Err(self.bad(format!(
                    "opcode 0x{op:02x} would instantiate an object; refused"
                )))
            }
            other => {
                return Err(self.bad(format!("opcode 0x{other:02x} is not used by checkpoints")))
            }
        }
        Ok(())
    }

    fn extend_list(&mut self, items: Vec<Id>) -> Result<(), Problem> {
        let top = self.top()?;
        match &mut self.objs[top] {
            Obj::List(v) => {
                v.extend(items);
                Ok(())
            }
            _ => Err(self.bad("APPEND to a non-list")),
        }
    }

    fn set_items(&mut self, items: Vec<(Id, Id)>) -> Result<(), Problem> {
        let top = self.top()?;
        match &mut self.objs[top] {
            Obj::Dict(v) => {
                v.extend(items);
                Ok(())
            }
            _ => Err(self.bad("SETITEM on a non-dict")),
        }
    }

    fn tuple(&self, id: Id) -> Result<&[Id], Problem> {
        match &self.objs[id] {
            Obj::Tuple(v) | Obj::List(v) => Ok(v),
            _ => Err(self.bad("expected a tuple")),
        }
    }

    fn int(&self, id: Id) -> Result<u64, Problem> {
        match self.objs[id] {
            Obj::Int(v) => u64::try_from(v).map_err(|_| self.bad(format!("negative size {v}"))),
            _ => Err(self.bad("expected an integer")),
        }
    }

    fn ints(&self, id: Id) -> Result<Vec<u64>, Problem> {
        self.tuple(id)?.iter().map(|&i| self.int(i)).collect()
    }

    fn str(&self, id: Id) -> Result<String, Problem> {
        match &self.objs[id] {
            Obj::Str(s) => Ok(s.clone()),
            Obj::Int(i) => Ok(i.to_string()),
            _ => Err(self.bad("expected a string")),
        }
    }

    /// Apply one of the allowed callables to its arguments; nothing else can be applied.
    fn reduce(&mut self, func: Id, args: Id) -> Result<Obj, Problem> {
        let Obj::Global(g) = self.objs[func] else {
            return Err(self.bad("REDUCE of something that is not an allowed global"));
        };
        let args = self.tuple(args)?.to_vec();
        match g {
            Global::OrderedDict => Ok(Obj::Dict(Vec::new())),
            Global::Inert => Ok(Obj::Opaque),
            Global::RebuildParameter => {
                let data = *args
                    .first()
                    .ok_or_else(|| self.bad("parameter without data"))?;
                Ok(self.objs[data].clone())
            }
            Global::RebuildFromType => {
                let (f, inner) = match args.as_slice() {
                    [f, _, inner, ..] => (*f, *inner),
                    _ => return Err(self.bad("_rebuild_from_type_v2 needs four arguments")),
                };
                if matches!(self.objs[f], Obj::Global(Global::RebuildFromType)) {
                    return Err(self.bad("nested _rebuild_from_type_v2"));
                }
                self.reduce(f, inner)
            }
            Global::RebuildTensor => self.rebuild_tensor(&args),
            Global::Storage(_) => Err(self.bad("storage classes are not called")),
        }
    }

    /// `_rebuild_tensor_v2(storage, offset, size, stride, ...)`.
    fn rebuild_tensor(&self, args: &[Id]) -> Result<Obj, Problem> {
        let [storage, offset, size, stride, ..] = args else {
            return Err(self.bad("_rebuild_tensor needs storage, offset, size and stride"));
        };
        let Obj::Storage(storage) = &self.objs[*storage] else {
            return Err(self.bad("_rebuild_tensor without a storage"));
        };
        let (sizes, strides) = (self.ints(*size)?, self.ints(*stride)?);
        if sizes.len() != strides.len() || sizes.len() > 64 {
            return Err(self.bad("tensor sizes and strides disagree"));
        }
        Ok(Obj::Tensor(TensorRef {
            storage: storage.clone(),
            offset: self.int(*offset)?,
            sizes,
            strides,
        }))
    }

    /// `('storage', StorageType, key, location, numel[, view_metadata])`.
    fn persistent(&self, pid: Id) -> Result<Obj, Problem> {
        let t = self.tuple(pid)?;
        let (kind, ty, key, numel) = match t {
            [kind, ty, key, _location, numel, ..] => (*kind, *ty, *key, *numel),
            _ => return Err(self.bad("persistent id is not a storage tuple")),
        };
        if self.str(kind)? != "storage" {
            return Err(self.bad("persistent id is not a storage"));
        }
        let Obj::Global(Global::Storage(dtype)) = self.objs[ty] else {
            return Err(self.bad("storage without a storage type"));
        };
        let view_of = match t.get(5).map(|&v| &self.objs[v]) {
            Some(Obj::Tuple(v)) => match v.as_slice() {
                [root, offset, _size] => Some((self.str(*root)?, self.int(*offset)?)),
                _ => return Err(self.bad("bad storage view metadata")),
            },
            _ => None,
        };
        Ok(Obj::Storage(StorageRef {
            dtype,
            key: self.str(key)?,
            numel: self.int(numel)?,
            view_of,
        }))
    }
}

fn pairs(items: &[Id]) -> Option<Vec<(Id, Id)>> {
    items
        .len()
        .is_multiple_of(2)
        .then(|| items.chunks_exact(2).map(|p| (p[0], p[1])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_globals_are_named_and_never_called() {
        let cases: [(&[u8], &str); 3] = [
            (
                b"\x80\x02cposix\nsystem\nX\x02\x00\x00\x00lsq\x00\x85R.",
                "posix.system",
            ),
            (b"\x80\x02cbuiltins\neval\n.", "builtins.eval"),
            (b"\x80\x04\x8c\x02os\x8c\x05popen\x93.", "os.popen"),
        ];
        for (bytes, name) in cases {
            let got = load(bytes).map(|_| ());
            assert_eq!(got, Err(Problem::ForbiddenGlobal(name.into())), "{name}");
        }
    }

    #[test]
    fn containers_and_memo_build_one_shared_object() {
        // {'a': [1, 2], 'b': <memo of the list>} then APPEND 3 to the list through the memo.
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00a]q\x01(K\x01K\x02eX\x01\x00\x00\x00bh\x01u.";
        let (pk, used) = load(p).expect("parses");
        assert_eq!(used, p.len());
        let Obj::Dict(items) = &pk.objs[pk.root] else {
            panic!("root {:?}", pk.objs[pk.root])
        };
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].1, items[1].1, "both keys share one list");
        assert!(matches!(&pk.objs[items[0].1], Obj::List(v) if v.len() == 2));
    }

    #[test]
    fn malformed_pickles_are_errors() {
        let cases: [&[u8]; 5] = [
            b"",
            b"\x80\x02",
            b"\x80\x02s.",
            b"\x80\x02(K\x01d.",
            b"\x80\x02\xff.",
        ];
        for bytes in cases {
            assert!(load(bytes).is_err(), "{bytes:?} should be refused");
        }
    }
}

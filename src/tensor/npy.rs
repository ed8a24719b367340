//! NPY headers: the magic, the version, and the Python-literal dict giving dtype, order and shape.

use super::elem::Elem;
use super::error::Problem;
use super::typed::DType;

/// Longest header read (numpy itself refuses headers past 10 000 bytes by default).
pub const MAX_HEADER: usize = 65536;
/// Most dimensions an array may have (numpy's own limit is 64).
pub const MAX_DIMS: usize = 64;

/// What an NPY header says about the array that follows it.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    /// The dtype string as numpy wrote it, e.g. `<f4`, `>f8`, `|b1`.
    pub descr: String,
    pub elem: Elem,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran: bool,
    pub shape: Vec<usize>,
    /// Bytes before the data: magic, version, length field and the dict.
    pub data_offset: usize,
}

impl NpyHeader {
    /// Number of elements, when it does not overflow.
    pub fn count(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// Bytes of data the shape and dtype need, when that does not overflow.
    pub fn data_len(&self) -> Option<u64> {
        (self.count()? as u64).checked_mul(self.elem.size() as u64)
    }
}

/// Whether the bytes start with the NPY magic.
pub fn looks_like_npy(head: &[u8]) -> bool {
    head.starts_with(b"\x93NUMPY")
}

/// Parse the header at the start of `bytes` (at least the header; data may follow).
pub fn parse_header(bytes: &[u8]) -> Result<NpyHeader, Problem> {
    let short = || Problem::Truncated("NPY header is cut short".into());
    if !looks_like_npy(bytes) {
        return Err(Problem::Header("missing the \\x93NUMPY magic".into()));
    }
    let major = *bytes.get(6).ok_or_else(short)?;
    let (len, start) = match major {
        1 => {
            let b = bytes.get(8..10).ok_or_else(short)?;
            (u16::from_le_bytes([b[0], b[1]]) as usize, 10)
        }
        2 | 3 => {
            let b = bytes.get(8..12).ok_or_else(short)?;
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        v => return Err(Problem::Header(format!("unknown NPY version {v}"))),
    };
    if len > MAX_HEADER {
        return Err(Problem::TooLarge {
            what: "NPY header length",
            size: len as u64,
            cap: MAX_HEADER as u64,
        });
    }
    let text = bytes.get(start..start + len).ok_or_else(short)?;
    let text =
        std::str::from_utf8(text).map_err(|_| Problem::Header("header is not UTF-8".into()))?;
    let dict = Literal::parse(text)?;
    let mut header = interpret(&dict)?;
    header.data_offset = start + len;
    Ok(header)
}

/// Read the dict's three fields into a header.
fn interpret(dict: &Literal) -> Result<NpyHeader, Problem> {
    let Literal::Dict(items) = dict else {
        return Err(Problem::Header("header is not a dict".into()));
    };
    let get = |k: &str| items.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(Literal::Str(s)) => s.clone(),
        Some(Literal::List(_)) => {
            return Err(Problem::Unsupported(
                "structured array (record dtype); only plain numeric arrays are read".into(),
            ))
        }
        _ => return Err(Problem::Header("no string `descr`".into())),
    };
    let fortran = match get("fortran_order") {
        Some(Literal::Bool(b)) => *b,
        _ => return Err(Problem::Header("no boolean `fortran_order`".into())),
    };
    let shape = match get("shape") {
        Some(Literal::Tuple(dims)) if dims.len() <= MAX_DIMS => dims
            .iter()
            .map(|d| match d {
                Literal::Int(n) => usize::try_from(*n)
                    .map_err(|_| Problem::Header(format!("negative dimension {n}"))),
                _ => Err(Problem::Header("shape holds a non-integer".into())),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(Literal::Tuple(dims)) => {
            return Err(Problem::TooLarge {
                what: "dimension count",
                size: dims.len() as u64,
                cap: MAX_DIMS as u64,
            })
        }
        _ => return Err(Problem::Header("no tuple `shape`".into())),
    };
    let elem = parse_descr(&descr)?;
    Ok(NpyHeader {
        descr,
        elem,
        fortran,
        shape,
        data_offset: 0,
    })
}

/// A numpy type string (`<f4`, `>i8`, `|b1`) as an element type; refuses everything else.
pub fn parse_descr(descr: &str) -> Result<Elem, Problem> {
    let mut chars = descr.chars();
    let (big_endian, rest) = match chars.next() {
        Some('<') | Some('|') | Some('=') => (false, chars.as_str()),
        Some('>') => (true, chars.as_str()),
        _ => (false, descr),
    };
    let dtype = match rest {
        "f2" | "e" => DType::F16,
        "f4" | "f" => DType::F32,
        "f8" | "d" => DType::F64,
        "i1" | "b" => DType::I8,
        "i2" | "h" => DType::I16,
        "i4" | "i" => DType::I32,
        "i8" | "q" => DType::I64,
        "u1" | "B" => DType::U8,
        "u2" | "H" => DType::U16,
        "u4" | "I" => DType::U32,
        "u8" | "Q" => DType::U64,
        "b1" | "?" => DType::Bool,
        _ => return Err(Problem::Unsupported(refusal(rest, descr))),
    };
    Ok(Elem { dtype, big_endian })
}

/// Why a type string is refused, in words.
fn refusal(kind: &str, descr: &str) -> String {
    let what = match kind.chars().next() {
        Some('O') => "object array (pickled Python objects, never unpickled)",
        Some('c') => "complex array",
        Some('V') => "structured or void array",
        Some('S') | Some('U') | Some('a') => "string array",
        Some('M') | Some('m') => "datetime array",
        _ => "unknown dtype",
    };
    format!("{what} `{descr}`; only real numeric and boolean arrays are read")
}

/// The subset of Python literals an NPY header uses.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Tuple(Vec<Literal>),
    List(Vec<Literal>),
    Dict(Vec<(String, Literal)>),
}

/// Deepest nesting the literal parser follows.
const MAX_DEPTH: usize = 16;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Literal {
    fn parse(text: &str) -> Result<Literal, Problem> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value(0)?;
        p.ws();
        if p.i != p.s.len() {
            return Err(p.err("trailing text after the dict"));
        }
        Ok(v)
    }
}

impl Parser<'_> {
    fn err(&self, what: &str) -> Problem {
        Problem::Header(format!("{what} at byte {} of the header dict", self.i))
    }

    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Literal, Problem> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.peek() {
            Some(b'{') => self.dict(depth),
            Some(b'(') => Ok(Literal::Tuple(self.seq(b')', depth)?)),
            Some(b'[') => Ok(Literal::List(self.seq(b']', depth)?)),
            Some(b'\'') | Some(b'"') => Ok(Literal::Str(self.string()?)),
            Some(c) if c == b'-' || c.is_ascii_digit() => self.int(),
            Some(_) => self.word(),
            None => Err(self.err("unexpected end")),
        }
    }

    fn word(&mut self) -> Result<Literal, Problem> {
        for (w, v) in [
            ("True", Literal::Bool(true)),
            ("False", Literal::Bool(false)),
            ("None", Literal::None),
        ] {
            if self.s[self.i..].starts_with(w.as_bytes()) {
                self.i += w.len();
                return Ok(v);
            }
        }
        Err(self.err("unexpected token"))
    }

    fn int(&mut self) -> Result<Literal, Problem> {
        let start = self.i;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        // Python 2 era headers may write `3L`.
        let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        if self.s.get(self.i) == Some(&b'L') {
            self.i += 1;
        }
        digits
            .parse()
            .map(Literal::Int)
            .map_err(|_| self.err("bad integer"))
    }

    fn string(&mut self) -> Result<String, Problem> {
        let quote = self.s[self.i];
        let start = self.i + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == quote)
            .ok_or_else(|| self.err("unterminated string"))?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn seq(&mut self, close: u8, depth: usize) -> Result<Vec<Literal>, Problem> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {}
                _ => return Err(self.err("expected `,` or a closing bracket")),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Literal, Problem> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Literal::Dict(items));
                }
                Some(b'\'') | Some(b'"') => {}
                _ => return Err(self.err("expected a string key")),
            }
            let key = self.string()?;
            if self.peek() != Some(b':') {
                return Err(self.err("expected `:`"));
            }
            self.i += 1;
            items.push((key, self.value(depth + 1)?));
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                _ => return Err(self.err("expected `,` or `}`")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(dict: &str) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out
    }

    #[test]
    fn headers_parse_to_dtype_order_and_shape() {
        let cases = [
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
                "<f4",
                false,
                vec![3, 4],
            ),
            (
                "{'descr': '>f8', 'fortran_order': True, 'shape': (2,), }",
                ">f8",
                true,
                vec![2],
            ),
            (
                "{'descr': '|b1', 'fortran_order': False, 'shape': (), }",
                "|b1",
                false,
                vec![],
            ),
            (
                "{\"shape\": (0, 3L), \"fortran_order\": False, \"descr\": \"<i8\"}",
                "<i8",
                false,
                vec![0, 3],
            ),
        ];
        for (dict, descr, fortran, shape) in cases {
            let h = parse_header(&npy(dict)).unwrap_or_else(|e| panic!("{dict}: {e}"));
            assert_eq!(
                (h.descr.as_str(), h.fortran, &h.shape),
                (descr, fortran, &shape),
                "{dict}"
            );
            assert_eq!(h.data_offset, 10 + dict.len());
        }
    }

    #[test]
    fn bad_headers_are_refused_with_a_reason() {
        let cases = [
            (
                "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
                "object array",
            ),
            (
                "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
                "complex array",
            ),
            (
                "{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                "structured",
            ),
            (
                "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }",
                "string array",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",
                "negative dimension",
            ),
            ("{'descr': '<f4', 'shape': (2,), }", "fortran_order"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,",
                "unexpected end",
            ),
        ];
        for (dict, want) in cases {
            let got = parse_header(&npy(dict))
                .map(|h| h.descr)
                .map_err(|e| e.to_string());
            assert!(
                matches!(&got, Err(e) if e.contains(want)),
                "{dict}: got {got:?}, wanted an error with {want:?}"
            );
        }
        let mut cut = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
        cut.truncate(30);
        assert!(matches!(parse_header(&cut), Err(Problem::Truncated(_))));
    }
}

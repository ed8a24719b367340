//! Walking one run's index lines in (forward, writer) order, borrowed where it can be: over
//! the one index of a single-writer run, 1 MiB chunks whose lines the fast path reads in
//! place (serde takes the rest); the store's merged scan for several writers.

use super::error::{ReadbackError, Result, Skip};
use crate::store::index::{view_at, LineView, RawFields, CHUNK, MAX_LINE};
use crate::store::scan::index_path;
use crate::store::{Field, Fields, IndexLine, Store, StoreError, StoreFs};

/// One index line as the walk hands it out, borrowed for the duration of the call.
pub(crate) struct Line<'a> {
    pub writer: &'a str,
    pub forward: u64,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    pub error: Option<&'a str>,
    pub fields: LineFields<'a>,
}

/// A line's summarised fields: checked text decoded on demand (the fast path), or parsed.
#[derive(Clone, Copy)]
pub(crate) enum LineFields<'a> {
    Raw(RawFields<'a>),
    Parsed(&'a Fields<'a>),
}

impl<'a> LineFields<'a> {
    /// The value of field `name`; only that one is decoded.
    pub fn get(&self, name: &str) -> Option<Field<'a>> {
        match self {
            LineFields::Raw(r) => r.get(name),
            LineFields::Parsed(f) => f.get(name).cloned(),
        }
    }

    /// Field `name` when it is a number.
    pub fn number(&self, name: &str) -> Option<f64> {
        self.get(name)?.as_f64()
    }

    /// Call `f(name, value)` for each field, in the order written.
    pub fn each(&self, f: &mut dyn FnMut(&'a str, Field<'a>)) {
        match self {
            LineFields::Raw(r) => r.iter().for_each(|(k, v)| f(k, v)),
            LineFields::Parsed(p) => p.0.iter().for_each(|(k, v)| f(k.as_ref(), v.clone())),
        }
    }
}

/// One whole index line: taken by the fast path, or parsed by serde (boxed: the usual line
/// is not, and is not copied at the size of the other).
pub(crate) enum Parsed<'a> {
    Fast(LineView<'a>),
    Full(Box<IndexLine<'a>>),
}

impl Parsed<'_> {
    /// The line as the walk hands it out, written by `writer`.
    fn line<'s>(&'s self, writer: &'s str) -> Line<'s> {
        match self {
            Parsed::Fast(v) => Line {
                writer,
                forward: v.forward,
                written_us: v.written_us,
                took_us: v.took_us,
                broke: v.broke,
                error: v.error(),
                fields: LineFields::Raw(v.fields),
            },
            Parsed::Full(l) => Line {
                writer,
                forward: l.forward,
                written_us: l.written_us,
                took_us: l.took_us,
                broke: l.broke,
                error: l.error.as_ref().map(|t| t.0.as_ref()),
                fields: LineFields::Parsed(&l.fields),
            },
        }
    }
}

/// The writers of `run`, or `NoSuchRun`.
pub(crate) fn writers<F: StoreFs>(store: &Store<F>, run: &str) -> Result<Vec<String>> {
    store
        .writers(run)
        .map_err(|e| ReadbackError::in_run(run, e))
}

/// Call `f` with every index line of `run` in order of (forward, writer); unreadable lines are
/// added to `skipped` and the walk goes on. Reads only the indexes.
pub(crate) fn walk<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    skipped: &mut Vec<Skip>,
    f: &mut dyn FnMut(&Line<'_>),
) -> Result<()> {
    let writers = writers(store, run)?;
    if let [only] = writers.as_slice() {
        let path = index_path(run, only);
        return each_parsed(
            store.fs(),
            &path,
            CHUNK,
            &mut |line_no, parsed| match parsed {
                Ok(p) => f(&p.line(only)),
                Err(reason) => skipped.push(Skip::from_store(
                    run,
                    StoreError::BadIndexLine {
                        run: run.to_string(),
                        writer: only.clone(),
                        line: line_no,
                        reason,
                    },
                )),
            },
        )
        .map_err(|e| ReadbackError::in_run(run, e));
    }
    for item in store.scan(run).map_err(|e| ReadbackError::in_run(run, e))? {
        match item {
            Ok(item) => f(&Line {
                writer: &item.writer,
                forward: item.entry.forward,
                written_us: item.entry.written_us,
                took_us: item.entry.took_us,
                broke: item.entry.broke,
                error: item.entry.error.as_deref(),
                fields: LineFields::Parsed(&item.entry.fields),
            }),
            Err(e) => skipped.push(Skip::from_store(run, e)),
        }
    }
    Ok(())
}

/// One line's bytes parsed (the fast path first unless it has been tried), or why not.
fn parse(text: &[u8], fast_tried: bool) -> std::result::Result<Parsed<'_>, String> {
    if !fast_tried {
        if let Some(v) = crate::store::index::view(text) {
            return Ok(Parsed::Fast(v));
        }
    }
    let t = std::str::from_utf8(text).map_err(|_| "not UTF-8".to_string())?;
    if t.trim().is_empty() {
        return Err("empty line".into());
    }
    serde_json::from_str(t)
        .map(|l| Parsed::Full(Box::new(l)))
        .map_err(|e| e.to_string())
}

/// A line as [`each_parsed`] gives it: parsed, or why not (not UTF-8, not JSON, too long).
pub(crate) type ParsedLine<'a> = std::result::Result<Parsed<'a>, String>;

/// Call `f(line number from 1, line)` with each whole line of `path` up to the length it has
/// now, parsed, reading `chunk` bytes at a time. Lines are parsed where they lie in the chunk
/// (no copy, no separate newline search) unless one spans two chunks. Bytes after the last
/// newline (a torn or unfinished line) are not given; a line longer than [`MAX_LINE`] is
/// given as an `Err`.
pub(crate) fn each_parsed<F: StoreFs + ?Sized>(
    fs: &F,
    path: &str,
    chunk: u64,
    f: &mut dyn FnMut(u64, ParsedLine<'_>),
) -> std::result::Result<(), StoreError> {
    let len = fs.len(path)?;
    let mut at = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut line_no = 0u64;
    while at < len {
        let bytes = fs.read_range(path, at, chunk.max(1).min(len - at))?;
        if bytes.is_empty() {
            break;
        }
        at += bytes.len() as u64;
        let mut start = 0;
        if !carry.is_empty() || too_long {
            let Some(nl) = find_newline(&bytes) else {
                keep(&mut carry, &mut too_long, &bytes);
                continue;
            };
            keep(&mut carry, &mut too_long, &bytes[..nl]);
            line_no += 1;
            if too_long {
                f(line_no, Err(LONG.into()));
            } else {
                f(line_no, parse(&carry, false));
            }
            carry.clear();
            too_long = false;
            start = nl + 1;
        }
        let rest = &bytes[start..];
        let whole = rest.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        lines_in(&rest[..whole], &mut line_no, f);
        keep(&mut carry, &mut too_long, &rest[whole..]);
    }
    Ok(())
}

/// Each line of `whole` (whole lines, each ending in `\n`), parsed in place.
fn lines_in(whole: &[u8], line_no: &mut u64, f: &mut dyn FnMut(u64, ParsedLine<'_>)) {
    let mut at = 0;
    while at < whole.len() {
        *line_no += 1;
        if let Some((v, end)) = view_at(whole, at) {
            if whole.get(end) == Some(&b'\n') {
                f(*line_no, Ok(Parsed::Fast(v)));
                at = end + 1;
                continue;
            }
        }
        let rest = &whole[at..];
        let nl = find_newline(rest).unwrap_or(rest.len());
        f(*line_no, parse(&rest[..nl], true));
        at += nl + 1;
    }
}

/// Why a line over [`MAX_LINE`] is not read.
const LONG: &str = "longer than the longest index line accepted (16 MiB)";

fn keep(carry: &mut Vec<u8>, too_long: &mut bool, more: &[u8]) {
    if *too_long {
        return;
    }
    if carry.len().saturating_add(more.len()) > MAX_LINE {
        carry.clear();
        *too_long = true;
    } else {
        carry.extend_from_slice(more);
    }
}

/// The first `\n` in `b`, eight bytes at a time.
pub(crate) fn find_newline(b: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = ONES * b'\n' as u64;
    let mut i = 0;
    while let Some(word) = b.get(i..i + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(word);
        let w = u64::from_le_bytes(a) ^ NL;
        // The lowest high bit set marks the first zero byte (false hits only come after it).
        let zero = w.wrapping_sub(ONES) & !w & HIGH;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b.get(i..)?.iter().position(|&c| c == b'\n').map(|p| i + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_are_found_where_they_are() {
        for text in [
            "",
            "\n",
            "abc",
            "abcdefgh\n",
            "abcdefghijklmnop\nq",
            "\u{80}\u{ff}x\n",
            "a\nb\n",
        ] {
            let b = text.as_bytes();
            assert_eq!(
                find_newline(b),
                b.iter().position(|&c| c == b'\n'),
                "in {text:?}"
            );
        }
        let mut long = vec![b'x'; 1000];
        for at in [0, 7, 8, 9, 63, 64, 999] {
            long[at] = b'\n';
            assert_eq!(find_newline(&long), Some(at), "newline at {at}");
            long[at] = 0x8a; // a byte with the high bit set, not a newline
        }
        assert_eq!(find_newline(&long), None);
    }

    struct Mem(Vec<u8>);
    impl StoreFs for Mem {
        fn list(&self, _: &str) -> crate::store::error::Result<Vec<String>> {
            Ok(vec![])
        }
        fn read(&self, _: &str) -> crate::store::error::Result<Vec<u8>> {
            Ok(self.0.clone())
        }
        fn read_range(&self, _: &str, o: u64, n: u64) -> crate::store::error::Result<Vec<u8>> {
            self.0.read_at(o, n)
        }
        fn len(&self, _: &str) -> crate::store::error::Result<u64> {
            Ok(self.0.len() as u64)
        }
    }
    use crate::store::RangeSource;

    /// A line as a walk gave it: its number, and its forward and whether the fast path took
    /// it, or why it was not read.
    type Walked = (u64, std::result::Result<(u64, bool), String>);

    /// What a walk over `text` gives, line by line: the forward and the fast path's say, or
    /// why the line was not read.
    fn walked(text: &[u8], chunk: u64) -> Vec<Walked> {
        let mut got = Vec::new();
        each_parsed(&Mem(text.to_vec()), "i", chunk, &mut |n, l| {
            got.push((
                n,
                l.map(|p| match p {
                    Parsed::Fast(v) => (v.forward, true),
                    Parsed::Full(l) => (l.forward, false),
                }),
            ))
        })
        .unwrap();
        got
    }

    #[test]
    fn lines_parse_the_same_at_every_chunk_size() {
        let text = concat!(
            r#"{"forward":1,"written_us":5,"took_us":2,"broke":false,"fields":{"loss.value":0.5}}"#,
            "\n\nnot json\n",
            r#"{"forward":4,"written_us":5,"error":"esc\"aped","broke":true}"#,
            "\n",
            r#"{"forward":5,"written_us":5}"#,
            "\n",
            r#"{"forward":6,"written_us":5} trailing"#,
            "\n",
        );
        // A line that is not UTF-8, then a torn one (no newline) that is never given.
        let text = [
            text.as_bytes(),
            b"\xff\n",
            br#"{"forward":8,"written_us":5}"#,
        ]
        .concat();
        let want: Vec<Walked> = vec![
            (1, Ok((1, true))),
            (2, Err("empty line".into())),
            (3, Err("expected ident at line 1 column 2".into())),
            (4, Ok((4, false))),
            (5, Ok((5, true))),
            (6, Err("trailing characters at line 1 column 30".into())),
            (7, Err("not UTF-8".into())),
        ];
        for chunk in [1, 2, 3, 7, 8, 64, 1 << 20] {
            let got = walked(&text, chunk);
            assert_eq!(got, want, "chunk {chunk}: got (left), wanted (right)");
        }
    }

    #[test]
    fn a_line_over_the_limit_is_reported_and_the_next_one_read() {
        let mut text = vec![b'x'; MAX_LINE + 1];
        text.extend_from_slice(b"\n{\"forward\":2,\"written_us\":1}\n");
        let got = walked(&text, CHUNK);
        let want = vec![(1, Err(LONG.to_string())), (2, Ok((2, true)))];
        assert_eq!(got, want, "got (left), wanted (right)");
    }
}

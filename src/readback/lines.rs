//! Walking one run's index lines in (forward, writer) order, borrowed where it can be: a
//! chunked line splitter (a word at a time) over the one index of a single-writer run, the
//! store's merged scan for several writers.

use super::error::{ReadbackError, Result, Skip};
use crate::store::index::{CHUNK, MAX_LINE};
use crate::store::scan::index_path;
use crate::store::{Fields, IndexLine, Store, StoreError, StoreFs};

/// One index line as the walk hands it out, borrowed for the duration of the call.
pub(crate) struct Line<'a> {
    pub writer: &'a str,
    pub forward: u64,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    pub error: Option<&'a str>,
    pub fields: &'a Fields<'a>,
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
        return each_line(store.fs(), &path, CHUNK, &mut |line_no, text| match text
            .map_err(str::to_string)
            .and_then(parse)
        {
            Ok(l) => f(&Line {
                writer: only,
                forward: l.forward,
                written_us: l.written_us,
                took_us: l.took_us,
                broke: l.broke,
                error: l.error.as_ref().map(|t| t.0.as_ref()),
                fields: &l.fields,
            }),
            Err(reason) => skipped.push(Skip::from_store(
                run,
                StoreError::BadIndexLine {
                    run: run.to_string(),
                    writer: only.clone(),
                    line: line_no,
                    reason,
                },
            )),
        })
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
                fields: &item.entry.fields,
            }),
            Err(e) => skipped.push(Skip::from_store(run, e)),
        }
    }
    Ok(())
}

/// One index line's text parsed, or why not.
fn parse(text: &[u8]) -> std::result::Result<IndexLine<'_>, String> {
    let t = std::str::from_utf8(text).map_err(|_| "not UTF-8".to_string())?;
    if t.trim().is_empty() {
        return Err("empty line".into());
    }
    IndexLine::parse(t).map_err(|e| e.to_string())
}

/// Call `f(line number from 1, bytes)` with each whole line of `path` up to the length it has
/// now, reading `chunk` bytes at a time; bytes after the last newline (a torn or unfinished
/// line) are not given, and a line longer than [`MAX_LINE`] is given as an `Err`.
pub(crate) fn each_line<F: StoreFs + ?Sized>(
    fs: &F,
    path: &str,
    chunk: u64,
    f: &mut dyn FnMut(u64, LineBytes<'_>),
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
                f(line_no, Err(LONG));
            } else {
                f(line_no, Ok(&carry));
            }
            carry.clear();
            too_long = false;
            start = nl + 1;
        }
        while let Some(nl) = find_newline(&bytes[start..]) {
            line_no += 1;
            f(line_no, Ok(&bytes[start..start + nl]));
            start += nl + 1;
        }
        keep(&mut carry, &mut too_long, &bytes[start..]);
    }
    Ok(())
}

/// A whole line's bytes, or why it is not given (it is too long).
pub(crate) type LineBytes<'a> = std::result::Result<&'a [u8], &'static str>;

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

    #[test]
    fn lines_split_the_same_at_every_chunk_size() {
        let text = b"first line\n\nthird, a longer one than the chunk\nfourth\ntorn tail";
        let want: Vec<(u64, Vec<u8>)> = vec![
            (1, b"first line".to_vec()),
            (2, b"".to_vec()),
            (3, b"third, a longer one than the chunk".to_vec()),
            (4, b"fourth".to_vec()),
        ];
        for chunk in [1, 2, 3, 7, 8, 64, 1 << 20] {
            let mut got = Vec::new();
            each_line(&Mem(text.to_vec()), "i", chunk, &mut |n, l| {
                got.push((n, l.unwrap().to_vec()))
            })
            .unwrap();
            assert_eq!(got, want, "chunk {chunk}");
        }
    }
}

//! Finding one forward's index line by bisecting the index (forward numbers strictly increase
//! within one writer's index), so reading one forward costs a few small reads, not a scan.

use super::lines::find_newline;
use crate::store::index::MAX_LINE;
use crate::store::scan::index_path;
use crate::store::{IndexEntry, IndexLine, Store, StoreError, StoreFs};

/// Below this many bytes the rest of the range is read and scanned in one go.
const SCAN_BELOW: u64 = 64 << 10;
/// The first read at a probe; a longer line is read again whole.
const PROBE: u64 = 4 << 10;

/// What a probe found: the first whole line starting after an offset.
enum Probe {
    /// A line starting at `start`, ending (after its newline) at `end`.
    Line {
        start: u64,
        end: u64,
        entry: IndexEntry,
    },
    /// No whole line starts in the range (a very long line): scan what is left.
    None,
    /// A line that does not parse: bisection cannot trust the order, fall back to a scan.
    Bad,
}

/// Forward `forward`'s line in `writer`'s index, bisecting by byte offset. `Ok(None)`: no such
/// line. `Err(None)`: an unreadable line was met, so the caller must scan instead.
pub(crate) fn locate<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    writer: &str,
    forward: u64,
) -> Result<Option<IndexEntry>, Option<StoreError>> {
    let fs = store.fs();
    let path = index_path(run, writer);
    let (mut lo, mut hi) = (0u64, fs.len(&path)?);
    while hi - lo > SCAN_BELOW {
        let mid = lo + (hi - lo) / 2;
        match probe(fs, &path, mid, hi)? {
            Probe::Line { entry, .. } if entry.forward == forward => return Ok(Some(entry)),
            Probe::Line { end, entry, .. } if entry.forward < forward => lo = end,
            Probe::Line { start, .. } => hi = start,
            Probe::None => break,
            Probe::Bad => return Err(None),
        }
    }
    scan_range(fs, &path, lo, hi, forward)
}

/// The first whole line starting after `at` (and before `hi`).
fn probe<F: StoreFs>(fs: &F, path: &str, at: u64, hi: u64) -> Result<Probe, StoreError> {
    let window = fs.read_range(path, at, PROBE.min(hi - at))?;
    let Some(nl) = find_newline(&window) else {
        return Ok(Probe::None);
    };
    let start = at + nl as u64 + 1;
    if start >= hi {
        return Ok(Probe::None);
    }
    let rest = &window[nl + 1..];
    let owned;
    let line = match find_newline(rest) {
        Some(n) => &rest[..n],
        None => {
            owned = fs.read_range(path, start, (MAX_LINE as u64).min(hi - start))?;
            match find_newline(&owned) {
                Some(n) => &owned[..n],
                None => return Ok(Probe::None),
            }
        }
    };
    Ok(match parse(line) {
        Some(l) => Probe::Line {
            start,
            end: start + line.len() as u64 + 1,
            entry: l.to_entry(),
        },
        None => Probe::Bad,
    })
}

/// Read `[lo, hi)` (whole lines from `lo`) and find the line of `forward`.
fn scan_range<F: StoreFs>(
    fs: &F,
    path: &str,
    lo: u64,
    hi: u64,
    forward: u64,
) -> Result<Option<IndexEntry>, Option<StoreError>> {
    let bytes = fs.read_range(path, lo, hi - lo)?;
    let mut rest = &bytes[..];
    while let Some(n) = find_newline(rest) {
        match parse(&rest[..n]) {
            Some(l) if l.forward == forward => return Ok(Some(l.to_entry())),
            Some(_) => {}
            None => return Err(None),
        }
        rest = &rest[n + 1..];
    }
    Ok(None)
}

fn parse(line: &[u8]) -> Option<IndexLine<'_>> {
    IndexLine::parse(std::str::from_utf8(line).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::error::Result as StoreResult;
    use crate::store::RangeSource;

    /// A store in memory: the format file and one index.
    struct Mem(Vec<u8>);
    impl StoreFs for Mem {
        fn list(&self, dir: &str) -> StoreResult<Vec<String>> {
            Ok(match dir {
                "runs" => vec!["r".into()],
                "runs/r" => vec!["w".into()],
                _ => vec![],
            })
        }
        fn read(&self, path: &str) -> StoreResult<Vec<u8>> {
            match path {
                "somatize-store.json" => {
                    Ok(br#"{"format":"somatize-store","version":"1.0"}"#.to_vec())
                }
                _ => Ok(self.0.clone()),
            }
        }
        fn read_range(&self, _: &str, o: u64, n: u64) -> StoreResult<Vec<u8>> {
            self.0.read_at(o, n)
        }
        fn len(&self, _: &str) -> StoreResult<u64> {
            Ok(self.0.len() as u64)
        }
    }

    /// Even forwards 0..20000, optionally a garbage line after forward 9000, and a torn tail.
    fn index(garbage: bool) -> Vec<u8> {
        let mut text = String::new();
        for f in (0..20_000u64).step_by(2) {
            text.push_str(&format!(
                "{{\"forward\":{f},\"written_us\":{f},\"took_us\":1,\"broke\":false}}\n"
            ));
            if garbage && f == 9000 {
                text.push_str("not json at all\n");
            }
        }
        text.push_str("{\"forward\":20000,\"writ");
        text.into_bytes()
    }

    #[test]
    fn bisection_finds_every_line_and_nothing_else() {
        let store = Store::open(Mem(index(false))).unwrap();
        for f in [
            0, 1, 2, 998, 9_000, 9_001, 15_554, 19_998, 19_999, 20_000, 99_999,
        ] {
            let got = locate(&store, "r", "w", f)
                .ok()
                .flatten()
                .map(|e| e.forward);
            let want = (f % 2 == 0 && f < 20_000).then_some(f);
            assert_eq!(got, want, "forward {f}");
        }
    }

    #[test]
    fn a_bad_line_gives_the_right_answer_or_asks_for_a_scan() {
        let store = Store::open(Mem(index(true))).unwrap();
        for f in (0..20_002u64).step_by(97) {
            let want = (f % 2 == 0 && f < 20_000).then_some(f);
            match locate(&store, "r", "w", f) {
                Ok(got) => assert_eq!(got.map(|e| e.forward), want, "forward {f}"),
                Err(None) => {}
                Err(Some(e)) => panic!("forward {f}: {e}"),
            }
        }
    }
}

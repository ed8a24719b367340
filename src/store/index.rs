//! A writer's index: one JSON line per forward, parsed without copying, read in bounded chunks.

use super::error::{Result, StoreError};
use super::fact::{Fields, Text};
use super::fs::StoreFs;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

pub use super::fastline::{view, view_at, LineView, RawFields};

/// One index line, borrowing its text from the line where it can.
///
/// Written as `{"forward":N,"written_us":T,"took_us":D,"broke":B,"fields":{…},
/// "blob":"packs/….pack","offset":O,"len":L,"crc32":C}` with `"error":"…"` after `broke` when
/// it broke; a forward with no blob (broke before it was written) has no `blob`, `offset`,
/// `len` or `crc32`. Without `offset` (format 1.x, snapshots) `blob` is a file of its own.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IndexLine<'a> {
    pub forward: u64,
    /// When the line was written, microseconds since the Unix epoch, the writer's clock.
    pub written_us: i64,
    #[serde(default)]
    pub took_us: u64,
    #[serde(default)]
    pub broke: bool,
    #[serde(default, borrow)]
    pub error: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub fields: Fields<'a>,
    #[serde(default, borrow)]
    pub blob: Option<Text<'a>>,
    /// Where the blob starts in its pack (format 2); absent: `blob` is the whole file.
    #[serde(default)]
    pub offset: Option<u64>,
    #[serde(default)]
    pub len: Option<u64>,
    #[serde(default)]
    pub crc32: Option<u32>,
}

/// One index line, owned (what merged scans hand out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEntry {
    pub forward: u64,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "fields_empty",
        deserialize_with = "owned_fields"
    )]
    pub fields: FieldsOwned,
    /// The blob's path relative to its writer's folder: a pack, or a blob file of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Where the blob starts in its pack; `None`: the file `blob` is the blob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32: Option<u32>,
}

/// Summarised fields that own their text.
pub type FieldsOwned = Fields<'static>;

fn fields_empty(f: &FieldsOwned) -> bool {
    f.0.is_empty()
}

fn owned_fields<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<FieldsOwned, D::Error> {
    Ok(<Fields<'de> as Deserialize<'de>>::deserialize(d)?.into_owned())
}

impl<'a> LineView<'a> {
    /// The same line as the store's [`IndexLine`] (here, so that the scanner knows nothing of it), its text still borrowed.
    pub fn to_index_line(&self) -> IndexLine<'a> {
        let text = |s: &'a str| Text(Cow::Borrowed(s));
        IndexLine {
            forward: self.forward,
            written_us: self.written_us,
            took_us: self.took_us,
            broke: self.broke,
            error: self.error().map(text),
            fields: Fields(
                self.fields
                    .iter()
                    .map(|(k, v)| (Cow::Borrowed(k), v))
                    .collect(),
            ),
            blob: self.blob().map(text),
            offset: self.offset,
            len: self.len,
            crc32: self.crc32,
        }
    }
}

impl IndexLine<'_> {
    /// Parse one line (without its newline): the writer's exact layout on a fast path,
    /// anything else through serde_json.
    pub fn parse(line: &str) -> std::result::Result<IndexLine<'_>, serde_json::Error> {
        match view(line.as_bytes()) {
            Some(l) => Ok(l.to_index_line()),
            None => serde_json::from_str(line),
        }
    }

    /// The same entry, owned.
    pub fn to_entry(&self) -> IndexEntry {
        IndexEntry {
            forward: self.forward,
            written_us: self.written_us,
            took_us: self.took_us,
            broke: self.broke,
            error: self.error.as_ref().map(|t| t.0.to_string()),
            fields: self.fields.clone().into_owned(),
            blob: self.blob.as_ref().map(|t| t.0.to_string()),
            offset: self.offset,
            len: self.len,
            crc32: self.crc32,
        }
    }
}

impl IndexEntry {
    /// The line as written (no newline): keys in the documented order.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A summarised field.
    pub fn field(&self, name: &str) -> Option<&super::fact::Field<'static>> {
        self.fields.get(name)
    }
}

/// How much of an index is read at a time.
pub const CHUNK: u64 = 1 << 20;
/// The longest index line accepted; a longer one is reported and skipped.
pub const MAX_LINE: usize = 16 << 20;

/// Reads one file line by line through `StoreFs`, `CHUNK` bytes at a time, up to the length
/// it had when opened. A last line without its newline (torn, or being written) is not given.
pub struct LineReader<'f, F: StoreFs + ?Sized> {
    fs: &'f F,
    path: String,
    len: u64,
    next_read: u64,
    buf: Vec<u8>,
    pos: usize,
    line_no: u64,
    /// Bytes after the last newline, seen at the end (a torn or in-progress line).
    pub torn_tail: u64,
    skipping: bool,
}

impl<'f, F: StoreFs + ?Sized> LineReader<'f, F> {
    /// Open `path`; its current length bounds what is read.
    pub fn open(fs: &'f F, path: &str) -> Result<Self> {
        let len = fs.len(path)?;
        Ok(Self::with_len(fs, path, len))
    }

    /// Read `path` up to `len` bytes.
    pub fn with_len(fs: &'f F, path: &str, len: u64) -> Self {
        LineReader {
            fs,
            path: path.to_string(),
            len,
            next_read: 0,
            buf: Vec::new(),
            pos: 0,
            line_no: 0,
            torn_tail: 0,
            skipping: false,
        }
    }

    /// The next whole line as `(line number from 1, text)`; `Ok(None)` at the end. A line
    /// that is not UTF-8 or longer than [`MAX_LINE`] comes back as an `Err` text.
    #[allow(clippy::type_complexity)]
    pub fn next_line(&mut self) -> Result<Option<(u64, std::result::Result<&str, String>)>> {
        loop {
            if let Some(nl) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let start = self.pos;
                self.pos += nl + 1;
                self.line_no += 1;
                if self.skipping {
                    self.skipping = false;
                    return Ok(Some((
                        self.line_no,
                        Err(format!("longer than {MAX_LINE} bytes")),
                    )));
                }
                let raw = &self.buf[start..start + nl];
                let text = std::str::from_utf8(raw).map_err(|_| "not UTF-8".to_string());
                return Ok(Some((self.line_no, text)));
            }
            if self.next_read >= self.len {
                self.torn_tail = (self.buf.len() - self.pos) as u64;
                return Ok(None);
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
            if self.buf.len() > MAX_LINE {
                self.buf.clear();
                self.skipping = true;
            }
            let want = CHUNK.min(self.len - self.next_read);
            let chunk = self.fs.read_range(&self.path, self.next_read, want)?;
            if chunk.is_empty() {
                self.len = self.next_read;
                continue;
            }
            self.next_read += chunk.len() as u64;
            self.buf.extend_from_slice(&chunk);
        }
    }
}

/// Call `f` with each parsed line of a writer's index, borrowed; unreadable lines go to
/// `bad` (as errors naming the run, writer and line) and the scan goes on.
pub fn for_each_line<F: StoreFs + ?Sized>(
    fs: &F,
    path: &str,
    run: &str,
    writer: &str,
    f: &mut dyn FnMut(&IndexLine<'_>),
    bad: &mut dyn FnMut(StoreError),
) -> Result<()> {
    let mut lines = LineReader::open(fs, path)?;
    while let Some((line_no, text)) = lines.next_line()? {
        let parsed = text.and_then(|t| {
            if t.trim().is_empty() {
                return Err("empty line".into());
            }
            IndexLine::parse(t).map_err(|e| e.to_string())
        });
        match parsed {
            Ok(line) => f(&line),
            Err(reason) => bad(StoreError::BadIndexLine {
                run: run.to_string(),
                writer: writer.to_string(),
                line: line_no,
                reason,
            }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn lines_parse_borrowed_and_round_trip() {
        let line = r#"{"forward":3,"written_us":1700000000000000,"took_us":12,"broke":false,"fields":{"loss.value":0.5},"blob":"blobs/000000000003.npz","len":100,"crc32":4294967295}"#;
        let parsed = IndexLine::parse(line).unwrap();
        assert!(matches!(parsed.blob.as_ref().unwrap().0, Cow::Borrowed(_)));
        let entry = parsed.to_entry();
        assert_eq!(
            entry.to_line(),
            line,
            "owned entry does not write the same line"
        );
        assert_eq!(
            entry.field("loss.value").and_then(|f| f.as_f64()),
            Some(0.5)
        );
        let packed = r#"{"forward":5,"written_us":1,"took_us":0,"broke":false,"blob":"packs/000001.pack","offset":81920,"len":100,"crc32":7}"#;
        let e = IndexLine::parse(packed).unwrap().to_entry();
        assert_eq!((e.offset, e.len), (Some(81920), Some(100)));
        assert_eq!(e.to_line(), packed, "a pack line does not round-trip");
        let broke =
            r#"{"forward":4,"written_us":1,"took_us":0,"broke":true,"error":"killed by signal 9"}"#;
        let e = IndexLine::parse(broke).unwrap().to_entry();
        assert_eq!(e.to_line(), broke);
        assert!(e.blob.is_none());
    }

    #[test]
    fn required_fields_are_required() {
        for bad in [
            r#"{"written_us":1}"#,
            r#"{"forward":1}"#,
            "[1]",
            "{",
            r#"{"forward":-1,"written_us":1}"#,
        ] {
            assert!(IndexLine::parse(bad).is_err(), "{bad} parsed");
        }
    }
}

//! The index-line fast path: one pass over a line's bytes that checks it is JSON and decodes
//! the top-level keys, leaving the summarised fields as checked text decoded only when asked.
//!
//! Keys may come in any order, with JSON whitespace between tokens, and unknown keys (with any
//! value, nested or not) are checked and passed over. A line the fast path does not take gives
//! `None` and is left to serde, which decides: escapes in text it hands out (keys, `error`,
//! `blob`, field names and text), a nested value in `fields`, a repeated known key, a number
//! out of range or written against the grammar, a missing `forward` or `written_us`, a
//! `null` where a value is expected. So whatever the fast path accepts, serde would read the
//! same (the tests below pit the two against each other).

use super::fact::Field;
use std::borrow::Cow;

/// One index line the fast path took, borrowed from the line's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineView<'a> {
    pub forward: u64,
    pub written_us: i64,
    pub took_us: u64,
    pub broke: bool,
    /// `error`'s checked bytes (no escapes, UTF-8), turned into text when asked.
    error: Option<&'a [u8]>,
    pub fields: RawFields<'a>,
    /// `blob`'s checked bytes.
    blob: Option<&'a [u8]>,
    /// Where the blob starts in its pack (format 2.0); absent for a 1.x blob file.
    pub offset: Option<u64>,
    pub len: Option<u64>,
    pub crc32: Option<u32>,
}

/// A line's summarised fields as checked JSON text — an object of scalar values whose names
/// and text have no escapes — decoded on demand; empty when the line has none.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RawFields<'a> {
    /// The object's text (`{…}`), empty when the line has none.
    text: &'a [u8],
    /// The first [`HELD`] fields' names and value texts, as the check found them.
    held: [(&'a [u8], &'a [u8]); HELD],
    /// How many of `held` are filled.
    n_held: usize,
    /// Where in `text` the fields after the held ones begin.
    rest_at: usize,
}

/// How many fields a line's view holds found (more are found again in the text when asked).
const HELD: usize = 2;

/// Nesting deeper than this in an unknown key's value is left to serde (whose limit is 128).
const MAX_DEPTH: u32 = 64;
/// Numbers with an exponent or longer than this are parsed while checking: they may be out
/// of range, which serde refuses. Shorter ones without an exponent cannot be.
const LONG_NUMBER: usize = 300;

/// Parse a whole line (without its newline); `None` when the fast path does not take it.
pub fn view(line: &[u8]) -> Option<LineView<'_>> {
    let (v, end) = view_at(line, 0)?;
    (end == line.len()).then_some(v)
}

/// Parse the line that starts at `at` in `buf`: the view and where the line ends (the index
/// of its `\n`, or the end of `buf`). Never reads past a `\n`: JSON text has none inside
/// strings, and here it is not whitespace. `None` when the fast path does not take it.
pub fn view_at(buf: &[u8], at: usize) -> Option<(LineView<'_>, usize)> {
    let mut p = P { b: buf, at };
    let v = p.line()?;
    p.ws();
    match buf.get(p.at) {
        None | Some(b'\n') => Some((v, p.at)),
        Some(_) => None,
    }
}

impl<'a> LineView<'a> {
    /// Why the forward broke, when the line says.
    pub fn error(&self) -> Option<&'a str> {
        std::str::from_utf8(self.error?).ok()
    }

    /// The blob's path relative to the writer's folder, when the line names one.
    pub fn blob(&self) -> Option<&'a str> {
        std::str::from_utf8(self.blob?).ok()
    }
}

impl<'a> RawFields<'a> {
    /// The value of field `name` (the first, if repeated); only that value is decoded.
    pub fn get(&self, name: &str) -> Option<Field<'a>> {
        self.pairs()
            .find(|(k, _)| *k == name.as_bytes())
            .map(|(_, v)| decode(v))
    }

    /// Each field in the order written, decoded.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, Field<'a>)> + '_ {
        self.pairs()
            .filter_map(|(k, v)| Some((std::str::from_utf8(k).ok()?, decode(v))))
    }

    /// Each field's name and value text, in order.
    fn pairs(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + '_ {
        let rest = Pairs {
            b: self.text,
            at: self.rest_at,
        };
        self.held.iter().take(self.n_held).copied().chain(rest)
    }
}

/// Walks checked fields text: a `"` starts each name; a value runs to the next `,`, `}` or
/// whitespace outside a string (text values have no escapes, so a string ends at its next
/// quote).
struct Pairs<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.b;
        let k0 = self.at + quote_in(b.get(self.at..)?)? + 1;
        let k1 = k0 + quote_in(b.get(k0..)?)?;
        let colon = k1 + b.get(k1..)?.iter().position(|&c| c == b':')?;
        let mut v0 = colon + 1;
        while matches!(b.get(v0), Some(b' ' | b'\t' | b'\r')) {
            v0 += 1;
        }
        let v1 = if b.get(v0) == Some(&b'"') {
            v0 + 2 + quote_in(b.get(v0 + 1..)?)?
        } else {
            let rest = b.get(v0..)?;
            v0 + rest
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r'))
                .unwrap_or(rest.len())
        };
        self.at = v1;
        Some((b.get(k0..k1)?, b.get(v0..v1)?))
    }
}

fn quote_in(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'"')
}

/// A checked scalar's value: text (non-finite numbers as their names), a boolean, null or a
/// number.
fn decode(value: &[u8]) -> Field<'_> {
    match value.first() {
        Some(b'"') => {
            let t = value
                .get(1..value.len() - 1)
                .and_then(|t| std::str::from_utf8(t).ok())
                .unwrap_or_default();
            match t {
                "NaN" => Field::Num(f64::NAN),
                "Infinity" => Field::Num(f64::INFINITY),
                "-Infinity" => Field::Num(f64::NEG_INFINITY),
                _ => Field::Text(Cow::Borrowed(t)),
            }
        }
        Some(b't') => Field::Bool(true),
        Some(b'f') => Field::Bool(false),
        Some(b'n') => Field::Null,
        // Checked in range when the line was taken.
        _ => Field::Num(to_f64(value).unwrap_or(f64::NAN)),
    }
}

/// A number's value, correctly rounded as serde_json (with `float_roundtrip`) reads it,
/// `-0` as negative zero as serde does; `None` out of range.
#[inline]
fn to_f64(tok: &[u8]) -> Option<f64> {
    if let Some(v) = exact_f64(tok) {
        return Some(v);
    }
    let v: f64 = std::str::from_utf8(tok).ok()?.parse().ok()?;
    v.is_finite().then_some(v)
}

/// Powers of ten that an f64 holds exactly.
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Clinger's fast path: a plain decimal (`-?digits[.digits]`, no exponent) of at most 19
/// digits whose digits, read as an integer, are at most 2^53, with at most 22 after the
/// point, is that integer divided by an exactly held power of ten: one correctly rounded
/// division, the same f64 as the full parse. `None` for anything else (the full parse).
#[inline]
fn exact_f64(tok: &[u8]) -> Option<f64> {
    let (neg, body) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, tok),
    };
    let (mut m, mut n, mut frac) = (0u64, 0usize, None::<usize>);
    for &c in body {
        if c == b'.' && frac.is_none() {
            frac = Some(n);
            continue;
        }
        let d = c.wrapping_sub(b'0');
        if d > 9 || n >= 19 {
            return None;
        }
        m = m * 10 + u64::from(d);
        n += 1;
    }
    let scale = n - frac.unwrap_or(n);
    if n == 0 || m > 1 << 53 {
        return None;
    }
    let v = m as f64 / *EXACT_POW10.get(scale)?;
    Some(if neg { -v } else { v })
}

/// A top-level key.
#[derive(Clone, Copy)]
enum Key {
    Forward,
    WrittenUs,
    TookUs,
    Broke,
    Error,
    Fields,
    Blob,
    Offset,
    Len,
    Crc32,
    Other,
}

impl Key {
    /// Its bit in [`Seen`].
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// Which known keys a line has had: a repeated one is left to serde (which refuses it).
#[derive(Default)]
struct Seen(u16);

impl Seen {
    fn first(&mut self, key: Key) -> Option<()> {
        let fresh = self.0 & key.bit() == 0;
        self.0 |= key.bit();
        fresh.then_some(())
    }

    fn required(&self) -> bool {
        let both = Key::Forward.bit() | Key::WrittenUs.bit();
        self.0 & both == both
    }
}

/// The parser: the bytes and where it is.
struct P<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> P<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    /// JSON whitespace other than `\n` (which ends the line).
    #[inline]
    fn ws(&mut self) {
        if self.peek().is_some_and(|c| c > b' ') {
            return;
        }
        self.ws_slow();
    }

    fn ws_slow(&mut self) {
        while let Some(&c) = self.b.get(self.at) {
            if c > b' ' || !(c == b' ' || c == b'\t' || c == b'\r') {
                return;
            }
            self.at += 1;
        }
    }

    /// `c`, after any whitespace.
    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() != Some(c) {
            self.ws();
        }
        (self.peek()? == c).then(|| self.at += 1)
    }

    /// Whether `c` comes next (after any whitespace), taking it if so.
    #[inline]
    fn eat_if(&mut self, c: u8) -> bool {
        if self.peek() != Some(c) {
            self.ws();
        }
        let hit = self.peek() == Some(c);
        self.at += usize::from(hit);
        hit
    }

    /// After a member or element: `,` (more follow: `Some(false)`) or `close` (`Some(true)`).
    #[inline]
    fn comma_or(&mut self, close: u8) -> Option<bool> {
        let mut c = self.peek()?;
        if c <= b' ' {
            self.ws();
            c = self.peek()?;
        }
        self.at += 1;
        if c == b',' {
            Some(false)
        } else {
            (c == close).then_some(true)
        }
    }

    fn line(&mut self) -> Option<LineView<'a>> {
        let mut v = LineView {
            forward: 0,
            written_us: 0,
            took_us: 0,
            broke: false,
            error: None,
            fields: RawFields::default(),
            blob: None,
            offset: None,
            len: None,
            crc32: None,
        };
        let mut seen = Seen::default();
        if self.next_is(b"{\"forward\":") {
            self.in_order(&mut v, &mut seen)?;
        } else {
            self.eat(b'{')?;
            if self.eat_if(b'}') {
                return None; // no `forward`
            }
            self.member(&mut v, &mut seen)?;
        }
        while !self.comma_or(b'}')? {
            self.member(&mut v, &mut seen)?;
        }
        seen.required().then_some(v)
    }

    /// Whether `l` comes next, taking it if so.
    #[inline]
    fn next_is(&mut self, l: &[u8]) -> bool {
        let hit = self.b.get(self.at..self.at + l.len()) == Some(l);
        if hit {
            self.at += l.len();
        }
        hit
    }

    /// The members in the order writers write them (after `{"forward":`), each read straight
    /// after its expected name; where the next is not the expected one, the general loop
    /// takes over (so other orders, whitespace and unknown keys still read).
    fn in_order(&mut self, v: &mut LineView<'a>, seen: &mut Seen) -> Option<()> {
        v.forward = self.uint()?;
        seen.0 |= Key::Forward.bit();
        if !self.next_is(b",\"written_us\":") {
            return Some(());
        }
        v.written_us = self.int()?;
        seen.0 |= Key::WrittenUs.bit();
        if !self.next_is(b",\"took_us\":") {
            return Some(());
        }
        v.took_us = self.uint()?;
        seen.0 |= Key::TookUs.bit();
        if !self.next_is(b",\"broke\":") {
            return Some(());
        }
        v.broke = self.bool()?;
        seen.0 |= Key::Broke.bit();
        if self.next_is(b",\"error\":") {
            v.error = Some(self.text()?);
            seen.0 |= Key::Error.bit();
        }
        if self.next_is(b",\"fields\":") {
            v.fields = self.fields()?;
            seen.0 |= Key::Fields.bit();
        }
        if !self.next_is(b",\"blob\":") {
            return Some(());
        }
        v.blob = Some(self.text()?);
        seen.0 |= Key::Blob.bit();
        if self.next_is(b",\"offset\":") {
            v.offset = Some(self.uint()?);
            seen.0 |= Key::Offset.bit();
        }
        if !self.next_is(b",\"len\":") {
            return Some(());
        }
        v.len = Some(self.uint()?);
        seen.0 |= Key::Len.bit();
        if !self.next_is(b",\"crc32\":") {
            return Some(());
        }
        v.crc32 = Some(u32::try_from(self.uint()?).ok()?);
        seen.0 |= Key::Crc32.bit();
        Some(())
    }

    /// One `"key":value` of the line's object.
    fn member(&mut self, v: &mut LineView<'a>, seen: &mut Seen) -> Option<()> {
        self.ws();
        let key = self.key()?;
        self.eat(b':')?;
        self.ws();
        if !matches!(key, Key::Other) {
            seen.first(key)?;
        }
        match key {
            Key::Forward => v.forward = self.uint()?,
            Key::WrittenUs => v.written_us = self.int()?,
            Key::TookUs => v.took_us = self.uint()?,
            Key::Broke => v.broke = self.bool()?,
            Key::Error => v.error = Some(self.text()?),
            Key::Fields => v.fields = self.fields()?,
            Key::Blob => v.blob = Some(self.text()?),
            Key::Offset => v.offset = Some(self.uint()?),
            Key::Len => v.len = Some(self.uint()?),
            Key::Crc32 => v.crc32 = Some(u32::try_from(self.uint()?).ok()?),
            Key::Other => self.skip_value(0)?,
        }
        Some(())
    }

    /// A top-level key: a known name (compared whole, with its closing quote) or any other
    /// string, checked; an escaped key is left to serde (it may spell a known one).
    #[inline(always)]
    fn key(&mut self) -> Option<Key> {
        let rest = self.b.get(self.at..)?;
        let known = match rest.get(1) {
            Some(b'f') if rest.starts_with(b"\"forward\"") => Some((Key::Forward, 9)),
            Some(b'f') if rest.starts_with(b"\"fields\"") => Some((Key::Fields, 8)),
            Some(b'w') if rest.starts_with(b"\"written_us\"") => Some((Key::WrittenUs, 12)),
            Some(b't') if rest.starts_with(b"\"took_us\"") => Some((Key::TookUs, 9)),
            Some(b'b') if rest.starts_with(b"\"broke\"") => Some((Key::Broke, 7)),
            Some(b'b') if rest.starts_with(b"\"blob\"") => Some((Key::Blob, 6)),
            Some(b'e') if rest.starts_with(b"\"error\"") => Some((Key::Error, 7)),
            Some(b'l') if rest.starts_with(b"\"len\"") => Some((Key::Len, 5)),
            Some(b'o') if rest.starts_with(b"\"offset\"") => Some((Key::Offset, 8)),
            Some(b'c') if rest.starts_with(b"\"crc32\"") => Some((Key::Crc32, 7)),
            _ => None,
        };
        if let Some((k, n)) = known {
            self.at += n;
            return Some(k);
        }
        let (_, escaped) = self.string()?;
        (!escaped).then_some(Key::Other)
    }

    /// A string's bytes between its quotes and whether it has escapes. Escapes are checked,
    /// control characters refused, and UTF-8 checked where there are non-ASCII bytes.
    #[inline(always)]
    fn string(&mut self) -> Option<(&'a [u8], bool)> {
        (self.peek()? == b'"').then_some(())?;
        self.at += 1;
        let start = self.at;
        let (mut escaped, mut high) = (false, false);
        loop {
            // Eight plain bytes at a time, up to the first that is not.
            if let Some(word) = self.b.get(self.at..self.at + 8) {
                let m = special(u64::from_le_bytes(word.try_into().ok()?));
                if m == 0 {
                    self.at += 8;
                    continue;
                }
                self.at += (m.trailing_zeros() / 8) as usize;
            }
            match self.peek()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                    continue;
                }
                0..=0x1f => return None,
                0x80.. => high = true,
                _ => {}
            }
            self.at += 1;
        }
        let raw = self.b.get(start..self.at)?;
        self.at += 1;
        if high {
            std::str::from_utf8(raw).ok()?;
        }
        Some((raw, escaped))
    }

    /// One escape sequence, at its `\`.
    fn escape(&mut self) -> Option<()> {
        self.at += 1;
        match self.peek()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
            b'u' => {
                let hex = self.b.get(self.at + 1..self.at + 5)?;
                // Surrogates (`\uD800`–`\uDFFF`) must pair up: left to serde.
                let surrogate = matches!(hex.first(), Some(b'd' | b'D'));
                (hex.iter().all(u8::is_ascii_hexdigit) && !surrogate).then_some(())?;
                self.at += 5;
            }
            _ => return None,
        }
        Some(())
    }

    /// A string handed out as text: its checked bytes, without escapes (serde unescapes).
    #[inline(always)]
    fn text(&mut self) -> Option<&'a [u8]> {
        let (raw, escaped) = self.string()?;
        (!escaped).then_some(raw)
    }

    /// A JSON integer (no empty one, no leading zero) that fits a u64. A fraction or exponent
    /// after it is refused: serde refuses a float where an integer is wanted.
    #[inline(always)]
    fn uint(&mut self) -> Option<u64> {
        let start = self.at;
        let mut v: u64 = 0;
        // A word at a time: its leading digits, all eight (more may follow) or fewer (the end).
        while let Some(word) = self.b.get(self.at..self.at + 8) {
            let w = u64::from_le_bytes(word.try_into().ok()?);
            let n = leading_digits(w);
            if n > 0 {
                v = v.wrapping_mul(POW10[n]).wrapping_add(digits_value(w, n));
                self.at += n;
            }
            if n < 8 {
                break;
            }
        }
        // The last few bytes of the buffer, one at a time (none when a word found the end).
        while let Some(&c) = self.b.get(self.at) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            self.at += 1;
        }
        let digits = self.b.get(start..self.at)?;
        if digits.len() > 19 {
            // Twenty digits or more may not fit: again, checked.
            v = digits.iter().try_fold(0u64, |v, &c| {
                v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
            })?;
        }
        let leading_zero = digits.len() > 1 && digits.first() == Some(&b'0');
        let float_follows = matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        (!digits.is_empty() && !leading_zero && !float_follows).then_some(v)
    }

    /// A JSON integer that fits an i64.
    #[inline(always)]
    fn int(&mut self) -> Option<i64> {
        if self.peek() != Some(b'-') {
            return i64::try_from(self.uint()?).ok();
        }
        self.at += 1;
        let m = self.uint()?;
        // serde reads `-0` as a float, which an integer refuses.
        (m != 0 && m <= 1 << 63).then(|| (m as i64).wrapping_neg())
    }

    #[inline(always)]
    fn bool(&mut self) -> Option<bool> {
        if self.literal(b"true").is_some() {
            Some(true)
        } else {
            self.literal(b"false").map(|_| false)
        }
    }

    #[inline(always)]
    fn literal(&mut self, l: &[u8]) -> Option<()> {
        (self.b.get(self.at..self.at + l.len())? == l).then(|| self.at += l.len())
    }

    /// A number checked against JSON's grammar (and range, where it may be out of it).
    #[inline(always)]
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let int_start = self.at;
        let int_len = self.digits();
        let leading_zero = int_len > 1 && self.b.get(int_start) == Some(&b'0');
        if int_len == 0 || leading_zero {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            (self.digits() > 0).then_some(())?;
        }
        let exp = matches!(self.peek(), Some(b'e' | b'E'));
        if exp {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            (self.digits() > 0).then_some(())?;
        }
        let tok = self.b.get(start..self.at)?;
        if exp || tok.len() > LONG_NUMBER {
            to_f64(tok)?;
        }
        Some(())
    }

    /// How many ASCII digits come next (taking them).
    #[inline(always)]
    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        self.at - start
    }

    /// The `fields` object: names and text without escapes, scalar values; kept as text.
    fn fields(&mut self) -> Option<RawFields<'a>> {
        let start = self.at;
        let mut f = RawFields::default();
        self.eat(b'{')?;
        if !self.eat_if(b'}') {
            loop {
                self.ws();
                let name = self.text()?;
                self.eat(b':')?;
                self.ws();
                let v0 = self.at;
                match self.peek()? {
                    b'"' => self.text().map(|_| ())?,
                    b't' | b'f' => self.bool().map(|_| ())?,
                    b'n' => self.literal(b"null")?,
                    _ => self.number()?,
                }
                if let Some(slot) = f.held.get_mut(f.n_held) {
                    *slot = (name, self.b.get(v0..self.at)?);
                    f.n_held += 1;
                    f.rest_at = self.at - start;
                }
                if self.comma_or(b'}')? {
                    break;
                }
            }
        }
        f.text = self.b.get(start..self.at)?;
        f.rest_at = if f.n_held < HELD {
            f.text.len()
        } else {
            f.rest_at
        };
        Some(f)
    }

    /// Any JSON value (an unknown key's), checked and passed over.
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'{' => self.skip_members(depth, b'}', true),
            b'[' => self.skip_members(depth, b']', false),
            _ => self.number(),
        }
    }

    /// The members of an object (`named`) or the elements of an array, up to `close`.
    fn skip_members(&mut self, depth: u32, close: u8, named: bool) -> Option<()> {
        self.at += 1;
        if self.eat_if(close) {
            return Some(());
        }
        loop {
            self.ws();
            if named {
                self.string()?;
                self.eat(b':')?;
                self.ws();
            }
            self.skip_value(depth + 1)?;
            if self.comma_or(close)? {
                return Some(());
            }
        }
    }
}

/// The high bit of each byte of `w` that is `"`, `\`, a control character or not ASCII. The
/// lowest one set is exact (borrows only make false marks above a true one).
#[inline]
fn special(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    let quote = zero(w ^ (ONES * u64::from(b'"')));
    let slash = zero(w ^ (ONES * u64::from(b'\\')));
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    (quote | slash | control | w) & HIGH
}

/// Powers of ten up to 10^8.
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of the eight bytes of `w` (the first is the lowest) are ASCII digits before the
/// first that is not, all at once.
#[inline]
fn leading_digits(w: u64) -> usize {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    const TOP: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const LOW: u64 = 0x0F0F_0F0F_0F0F_0F0F;
    const SEVENS: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Non-zero in each byte that is not a digit: its high nibble is not 3, or its low one
    // is over 9 (no carry crosses a byte in either sum).
    let bad = ((w & TOP) ^ ZEROS) | (((w & LOW) + 0x0606_0606_0606_0606) & TOP);
    let marks = (bad | ((bad & SEVENS) + SEVENS)) & HIGH;
    (marks.trailing_zeros() / 8) as usize
}

/// The value of the first `n` bytes of `w` (1 to 8 ASCII digits, the first is the lowest
/// byte), a word at a time: the digits are moved up to the top bytes, zeros below them.
#[inline]
fn digits_value(w: u64, n: usize) -> u64 {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // Pairs, then fours, then all eight (the first digit is the lowest byte). Bytes past the
    // digits may borrow in the subtraction, but only upwards, and are shifted out.
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    let v = w.wrapping_sub(ZEROS) << (8 * (8 - n as u32));
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let high = (v & MASK).wrapping_mul(100 + (1_000_000 << 32));
    let low = ((v >> 16) & MASK).wrapping_mul(1 + (10_000 << 32));
    high.wrapping_add(low) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::index::IndexLine;

    /// Whether the fast path takes a line, and whether serde reads it.
    #[derive(Debug, PartialEq)]
    struct Say {
        fast: bool,
        serde: bool,
    }

    const BOTH: Say = Say {
        fast: true,
        serde: true,
    };
    const SERDE_ONLY: Say = Say {
        fast: false,
        serde: true,
    };
    const NEITHER: Say = Say {
        fast: false,
        serde: false,
    };

    /// A line in a form where NaN equals NaN and -0 differs from 0: numbers as their bits.
    fn comparable(l: &IndexLine) -> String {
        let fields: Vec<String> = l
            .fields
            .0
            .iter()
            .map(|(k, v)| format!("{k}={}", field(v)))
            .collect();
        format!(
            "{} {} {} {} {:?} [{}] {:?} {:?} {:?}",
            l.forward,
            l.written_us,
            l.took_us,
            l.broke,
            l.error.as_ref().map(|t| &t.0),
            fields.join(", "),
            l.blob.as_ref().map(|t| &t.0),
            l.len,
            l.crc32
        )
    }

    fn field(v: &Field) -> String {
        match v {
            Field::Num(x) => format!("num:{:#x}", x.to_bits()),
            other => format!("{other:?}"),
        }
    }

    /// Pit the fast path against serde on `line`: what each said, and (when the fast path
    /// took it) whether they read the same.
    fn check(line: &str, want: &Say) {
        let slow: Option<IndexLine> = serde_json::from_str(line).ok();
        let fast = view(line.as_bytes());
        let got = Say {
            fast: fast.is_some(),
            serde: slow.is_some(),
        };
        assert_eq!(&got, want, "{line}: got (left), wanted (right)");
        if let (Some(f), Some(s)) = (fast, slow) {
            let (f, s) = (comparable(&f.to_index_line()), comparable(&s));
            assert_eq!(f, s, "{line}: fast path read (left), serde read (right)");
        }
    }

    const CANONICAL: &str = r#"{"forward":3,"written_us":1700000000000000,"took_us":12,"broke":false,"fields":{"loss.value":0.5},"blob":"blobs/000000000003.npz","len":100,"crc32":4294967295}"#;

    #[test]
    fn the_fast_path_reads_what_serde_reads() {
        let cases: &[(&str, Say)] = &[
            (CANONICAL, BOTH),
            (r#"{"forward":4,"written_us":-1,"took_us":0,"broke":true,"error":"killed by signal 9"}"#, BOTH),
            // Numbers in fields: non-finite as text, exponents, -0, huge and long integers.
            (r#"{"forward":5,"written_us":1,"fields":{"a":"NaN","b":"-Infinity","c":"Infinity","d":1e-7,"e":-0.0,"f":-0,"g":12345678901234567890,"h":123456789012345678901234567890,"i":0.1,"j":1E5,"k":2.5e+3,"l":-7e-400,"m":0.30000000000000004,"n":-9223372036854775809}}"#, BOTH),
            (r#"{"forward":5,"written_us":1,"fields":{"big":1e400}}"#, NEITHER),
            (r#"{"forward":5,"written_us":1,"fields":{"x":1.5e}}"#, NEITHER),
            (r#"{"forward":5,"written_us":1,"fields":{"x":1.}}"#, NEITHER),
            (r#"{"forward":5,"written_us":1,"fields":{"x":.5}}"#, NEITHER),
            (r#"{"forward":5,"written_us":1,"fields":{"x":+5}}"#, NEITHER),
            (r#"{"forward":5,"written_us":1,"fields":{"x":-}}"#, NEITHER),
            (r#"{"forward":5,"written_us":1,"fields":{"x":inf}}"#, NEITHER),
            (r#"{"forward":5,"written_us":1,"fields":{"x":01}}"#, NEITHER),
            // Other field values: text, booleans, null, repeated names, none at all.
            (r#"{"forward":6,"written_us":1,"fields":{"tag":"warm, up}","ok":true,"no":false,"gone":null,"a":1,"a":2}}"#, BOTH),
            (r#"{"forward":6,"written_us":1,"took_us":0,"broke":false,"fields":{}}"#, BOTH),
            (r#"{"forward":6,"written_us":1,"fields":{"nested":[1]}}"#, NEITHER),
            (r#"{"forward":6,"written_us":1,"fields":{"o":{}}}"#, NEITHER),
            (r#"{"forward":6,"written_us":1,"fields":{"t":"a\"b"}}"#, SERDE_ONLY),
            (r#"{"forward":6,"written_us":1,"fields":{"a\u0062":1}}"#, SERDE_ONLY),
            (r#"{"forward":6,"written_us":1,"fields":null}"#, NEITHER),
            // Escapes in text handed out go to serde; in a passed-over value they are checked.
            (r#"{"forward":9,"written_us":1,"error":"a\"b"}"#, SERDE_ONLY),
            (r#"{"forward":9,"written_us":1,"blob":"blobs\/9.npz"}"#, SERDE_ONLY),
            (r#"{"forw\u0061rd":9,"written_us":1}"#, SERDE_ONLY),
            (r#"{"forward":9,"written_us":1,"note":"tab\there \u00e9 \\ \/ \" \n"}"#, BOTH),
            (r#"{"forward":9,"written_us":1,"n\u00f6te":1}"#, SERDE_ONLY),
            (r#"{"forward":9,"written_us":1,"note":"\x"}"#, NEITHER),
            (r#"{"forward":9,"written_us":1,"note":"\u12"}"#, NEITHER),
            (r#"{"forward":9,"written_us":1,"note":"\ud83d\ude00"}"#, SERDE_ONLY),
            ("{\"forward\":9,\"written_us\":1,\"note\":\"raw\ttab\"}", NEITHER),
            // Unicode where text is handed out and where it is passed over.
            (r#"{"forward":10,"written_us":1,"error":"nan in 損失","fields":{"損失.value":0.25,"tag":"ünïcödé 🎉"},"blob":"blobs/é.npz","note":"ℵ"}"#, BOTH),
            // Keys in another order, unknown keys with any value (the pack-file helper may add some).
            (r#"{"crc32":7,"len":3,"blob":"b","fields":{"loss.value":1},"error":"e","broke":true,"took_us":2,"written_us":5,"forward":11}"#, BOTH),
            // Format 2.0: a blob in a pack, at an offset.
            (r#"{"forward":3,"written_us":1,"took_us":12,"broke":false,"fields":{},"blob":"packs/000000.pack","offset":0,"len":100,"crc32":1}"#, BOTH),
            (r#"{"forward":3,"written_us":1,"took_us":12,"broke":false,"blob":"packs/000000.pack","offset":18446744073709551615,"len":100,"crc32":1}"#, BOTH),
            (r#"{"offset":7,"forward":3,"written_us":1}"#, BOTH),
            (r#"{"forward":3,"written_us":1,"blob":"packs/000000.pack","offset":01,"len":100}"#, NEITHER),
            (r#"{"forward":3,"written_us":1,"offset":1,"offset":2}"#, NEITHER),
            (r#"{"forward":3,"written_us":1,"offset":-1}"#, NEITHER),
            (r#"{"forward":3,"written_us":1700000000000000,"took_us":12,"broke":false,"fields":{"loss.value":0.5},"blob":"blobs/000000000003.npz","len":100,"crc32":4294967295,"pack":{"file":"p1.pack","at":[0,75191]}}"#, BOTH),
            (r#"{"forward":3,"written_us":1,"took_us":12,"pack":"p1","broke":true,"fields":{"a":1},"blob":"b","len":1,"crc32":2}"#, BOTH),
            (r#"{"forward":3,"written_us":1,"took_us":12,"broke":false,"blob":"b","fields":{"a":1},"len":1}"#, BOTH),
            (r#"{"forward":3,"written_us":1,"took_us":12,"broke":false,"fields":{"a":1},"blob":"b","fields":{}}"#, NEITHER),
            (r#"{"forward":12,"pack":{"file":"p1.pack","offset":123,"list":[1,-2.5e3,{"a":null},[],{}],"ok":true},"written_us":5,"z":"","y":[false]}"#, BOTH),
            // Whitespace between tokens, before and after.
            (r#"{"forward":13,"written_us":5,"fields":{"a":1, "b" :2,"c":"3","d":4 ,"e":5,"f" : "six","g":null}}"#, BOTH),
            (" {\t\"forward\" : 13 ,\r\"written_us\":5 , \"fields\" : { \"a\" : 1 , \"b\" : \"x\" } } \t", BOTH),
            (r#"{"forward":13,"written_us":5}x"#, NEITHER),
            (r#"{"forward":13,"written_us":5"#, NEITHER),
            (r#"{"forward":13,"written_us":5,}"#, NEITHER),
            (r#"{"forward":13,,"written_us":5}"#, NEITHER),
            // Integers at and past their limits; floats, signs and leading zeros where an
            // integer is wanted.
            (r#"{"forward":18446744073709551615,"written_us":-9223372036854775808}"#, BOTH),
            (r#"{"forward":18446744073709551616,"written_us":1}"#, NEITHER),
            (r#"{"forward":1,"written_us":9223372036854775807}"#, BOTH),
            (r#"{"forward":1,"written_us":9223372036854775808}"#, NEITHER),
            (r#"{"forward":1,"written_us":-9223372036854775809}"#, NEITHER),
            (r#"{"forward":1,"written_us":-0}"#, NEITHER),
            (r#"{"forward":-0,"written_us":1}"#, NEITHER),
            (r#"{"forward":01,"written_us":1}"#, NEITHER),
            (r#"{"forward":1.0,"written_us":1}"#, NEITHER),
            (r#"{"forward":1e2,"written_us":1}"#, NEITHER),
            (r#"{"forward":12345678,"written_us":1234567890123456,"len":00000000}"#, NEITHER),
            (r#"{"forward":1,"written_us":1,"crc32":4294967296}"#, NEITHER),
            // Wrong types, nulls, missing and repeated keys.
            (r#"{"forward":1,"written_us":1,"broke":1}"#, NEITHER),
            (r#"{"forward":1,"written_us":1,"took_us":null}"#, NEITHER),
            (r#"{"forward":1,"written_us":1,"error":null,"blob":null,"len":null}"#, SERDE_ONLY),
            (r#"{"forward":1}"#, NEITHER),
            (r#"{"written_us":1}"#, NEITHER),
            (r#"{"forward":1,"written_us":1,"forward":2}"#, NEITHER),
            (r#"{"forward":1,"written_us":1,"x":1,"x":2}"#, BOTH),
            ("{}", NEITHER),
            ("[1]", NEITHER),
            ("", NEITHER),
        ];
        for (line, want) in cases {
            check(line, want);
        }
    }

    #[test]
    fn integers_of_every_length_read_at_every_offset() {
        for len in 1..=20 {
            let digits: String = (0..len)
                .map(|i| char::from(b'1' + (i * 7 % 9) as u8))
                .collect();
            for pad in 0..9 {
                for after in ["", ",", "}", "x", "9", ".5"] {
                    let text = format!("{}{digits}{after}", " ".repeat(pad));
                    let mut p = P {
                        b: text.as_bytes(),
                        at: pad,
                    };
                    let got = p.uint();
                    let all: String = format!("{digits}{after}")
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    let want = all.parse::<u64>().ok().filter(|_| !after.starts_with('.'));
                    assert_eq!(got, want, "{text:?} from {pad}");
                    if want.is_some() {
                        assert_eq!(p.at, pad + all.len(), "{text:?}: where it stopped");
                    }
                }
            }
        }
        for n in 0..=8u32 {
            let w = u64::from_le_bytes(*b"12345678");
            let bytes = [b"12345678".get(..n as usize).unwrap(), b"a:b/ 9.z"].concat();
            let w2 = u64::from_le_bytes(bytes[..8].try_into().unwrap());
            assert_eq!(leading_digits(w2), n as usize, "{bytes:?}");
            assert_eq!(leading_digits(w), 8);
        }
    }

    #[test]
    fn deep_nesting_is_left_to_serde() {
        let deep = |n: usize| {
            format!(
                r#"{{"forward":1,"written_us":1,"x":{}1{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        check(&deep(MAX_DEPTH as usize), &BOTH);
        check(&deep(MAX_DEPTH as usize + 2), &SERDE_ONLY);
    }

    #[test]
    fn fields_decode_on_demand_and_in_order() {
        let v = view(CANONICAL.as_bytes()).expect("canonical line not fast");
        assert_eq!(v.fields.get("loss.value"), Some(Field::Num(0.5)));
        assert_eq!(v.fields.get("loss"), None, "a prefix matched a name");
        assert_eq!(v.blob(), Some("blobs/000000000003.npz"));
        let line = r#"{"forward":1,"written_us":1,"fields":{"a":"x","b":2,"a":3}}"#;
        let v = view(line.as_bytes()).expect("line not fast");
        let got: Vec<(&str, Field)> = v.fields.iter().collect();
        let want = vec![
            ("a", Field::Text("x".into())),
            ("b", Field::Num(2.0)),
            ("a", Field::Num(3.0)),
        ];
        assert_eq!(got, want, "got (left), wanted (right)");
        assert_eq!(v.fields.get("a"), Some(Field::Text("x".into())));
    }

    /// Every damaged form of a few lines (each byte dropped, doubled, or replaced by one of a
    /// few that matter to JSON): whatever the fast path takes, serde reads the same.
    #[test]
    fn damaged_lines_are_never_read_differently() {
        let lines = [
            CANONICAL,
            r#"{"forward":4,"written_us":-1,"broke":true,"error":"nan","fields":{"a":"t","b":-1.5e-3,"c":null},"x":[{"y":"\n"}]}"#,
        ];
        let mut tried = 0;
        for line in lines {
            let b = line.as_bytes();
            for i in 0..b.len() {
                let mut forms = vec![[&b[..i], &b[i + 1..]].concat()];
                forms.push([&b[..=i], &b[i..]].concat());
                for c in b"\"\\{}[],:0-e.n \t" {
                    forms.push([&b[..i], &[*c][..], &b[i + 1..]].concat());
                }
                for form in forms {
                    let Ok(text) = std::str::from_utf8(&form) else {
                        continue;
                    };
                    tried += 1;
                    if let Some(f) = view(&form) {
                        let s: IndexLine = serde_json::from_str(text).unwrap_or_else(|e| {
                            panic!("{text}: fast path took it, serde refused it: {e}")
                        });
                        let (f, s) = (comparable(&f.to_index_line()), comparable(&s));
                        assert_eq!(f, s, "{text}: fast path read (left), serde read (right)");
                    }
                }
            }
        }
        assert!(tried > 1000, "only {tried} damaged lines tried");
    }

    #[test]
    fn numbers_read_in_one_pass_are_bit_identical_to_the_full_parse() {
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1",
            "0.1",
            "0.3",
            "-2.5",
            "9007199254740992",
            "9007199254740993",
            "0.9007199254740993",
            "1234567890123456789",
            "12345678901234567890",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "1.7976931348623157",
            "4.9406564584124654",
            "123456.789",
            "1e5",
            "2.5E-3",
            "-1e22",
            "1e23",
            "0.41",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Pseudo-random decimals of every length and scale (a fixed seed: the same each run).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = format!("{}", x >> (x % 40));
            let point = (x >> 50) as usize % (digits.len() + 1);
            let (int, frac) = digits.split_at(point);
            let int = if int.is_empty() {
                "0"
            } else {
                int.trim_start_matches('0')
            };
            let int = if int.is_empty() { "0" } else { int };
            let sign = if x & 1 == 1 { "-" } else { "" };
            let n = if frac.is_empty() {
                format!("{sign}{int}")
            } else {
                format!("{sign}{int}.{frac}")
            };
            cases.push(n);
        }
        let mut fast = 0;
        for c in &cases {
            let want: f64 = c.parse().unwrap();
            let got = to_f64(c.as_bytes()).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{c}");
            fast += usize::from(exact_f64(c.as_bytes()).is_some());
        }
        assert!(fast > 50_000, "only {fast} numbers took the one-pass path");
    }
}

//! A fast path for index lines in the exact layout writers produce; anything else (other key
//! order, escapes in strings, unknown keys, whitespace) returns `None` and is left to serde.

use super::fact::{Field, Fields, Text};
use super::index::IndexLine;
use std::borrow::Cow;

struct P<'a> {
    s: &'a str,
    b: &'a [u8],
    at: usize,
}

impl<'a> P<'a> {
    fn lit(&mut self, l: &str) -> Option<()> {
        let end = self.at.checked_add(l.len())?;
        (self.b.get(self.at..end)? == l.as_bytes()).then(|| self.at = end)
    }
    fn peek_lit(&self, l: &str) -> bool {
        self.b
            .get(self.at..self.at + l.len())
            .is_some_and(|x| x == l.as_bytes())
    }
    fn digits(&mut self) -> Option<&'a str> {
        let start = self.at;
        while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let d = &self.s[start..self.at];
        // JSON: no empty integer, no leading zero.
        (!d.is_empty() && (d == "0" || !d.starts_with('0'))).then_some(d)
    }
    fn u64(&mut self) -> Option<u64> {
        self.digits()?.parse().ok()
    }
    fn i64(&mut self) -> Option<i64> {
        let neg = self.lit("-").is_some();
        let d = self.digits()?;
        let v: i64 = d.parse().ok()?;
        Some(if neg { -v } else { v })
    }
    fn bool(&mut self) -> Option<bool> {
        if self.lit("true").is_some() {
            Some(true)
        } else {
            self.lit("false").map(|_| false)
        }
    }
    /// A string with no escapes or control characters (else `None`: serde decodes it).
    fn string(&mut self) -> Option<&'a str> {
        self.lit("\"")?;
        let start = self.at;
        loop {
            match *self.b.get(self.at)? {
                b'"' => break,
                b'\\' => return None,
                c if c < 0x20 => return None,
                _ => self.at += 1,
            }
        }
        let s = &self.s[start..self.at];
        self.at += 1;
        Some(s)
    }
    /// A JSON number, checked against the grammar, parsed correctly rounded.
    fn number(&mut self) -> Option<f64> {
        let start = self.at;
        self.lit("-");
        self.digits()?;
        if self.lit(".").is_some() {
            let s = self.at;
            while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
            if self.at == s {
                return None;
            }
        }
        if matches!(self.b.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.b.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            let s = self.at;
            while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
            if self.at == s {
                return None;
            }
        }
        self.s[start..self.at].parse().ok()
    }
    fn field(&mut self) -> Option<Field<'a>> {
        match *self.b.get(self.at)? {
            b'"' => {
                let t = self.string()?;
                Some(match t {
                    "NaN" => Field::Num(f64::NAN),
                    "Infinity" => Field::Num(f64::INFINITY),
                    "-Infinity" => Field::Num(f64::NEG_INFINITY),
                    _ => Field::Text(Cow::Borrowed(t)),
                })
            }
            b't' | b'f' => self.bool().map(Field::Bool),
            b'n' => self.lit("null").map(|_| Field::Null),
            _ => self.number().map(Field::Num),
        }
    }
    fn fields(&mut self) -> Option<Fields<'a>> {
        self.lit("{")?;
        let mut out = Vec::new();
        if self.lit("}").is_some() {
            return Some(Fields(out));
        }
        loop {
            let k = self.string()?;
            self.lit(":")?;
            out.push((Cow::Borrowed(k), self.field()?));
            if self.lit("}").is_some() {
                return Some(Fields(out));
            }
            self.lit(",")?;
        }
    }
}

/// Parse a line in the writer's exact layout, or `None` to fall back to serde.
pub fn parse(line: &str) -> Option<IndexLine<'_>> {
    let mut p = P {
        s: line,
        b: line.as_bytes(),
        at: 0,
    };
    p.lit("{\"forward\":")?;
    let forward = p.u64()?;
    p.lit(",\"written_us\":")?;
    let written_us = p.i64()?;
    p.lit(",\"took_us\":")?;
    let took_us = p.u64()?;
    p.lit(",\"broke\":")?;
    let broke = p.bool()?;
    let mut line_out = IndexLine {
        forward,
        written_us,
        took_us,
        broke,
        error: None,
        fields: Fields::default(),
        blob: None,
        offset: None,
        len: None,
        crc32: None,
    };
    if p.peek_lit(",\"error\":") {
        p.lit(",\"error\":")?;
        line_out.error = Some(Text(Cow::Borrowed(p.string()?)));
    }
    if p.peek_lit(",\"fields\":") {
        p.lit(",\"fields\":")?;
        line_out.fields = p.fields()?;
    }
    if p.peek_lit(",\"blob\":") {
        p.lit(",\"blob\":")?;
        line_out.blob = Some(Text(Cow::Borrowed(p.string()?)));
    }
    if p.peek_lit(",\"offset\":") {
        p.lit(",\"offset\":")?;
        line_out.offset = Some(p.u64()?);
    }
    if p.peek_lit(",\"len\":") {
        p.lit(",\"len\":")?;
        line_out.len = Some(p.u64()?);
    }
    if p.peek_lit(",\"crc32\":") {
        p.lit(",\"crc32\":")?;
        line_out.crc32 = Some(u32::try_from(p.u64()?).ok()?);
    }
    p.lit("}")?;
    (p.at == p.b.len()).then_some(line_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(line: &str) {
        let slow: Option<IndexLine> = serde_json::from_str(line).ok();
        let fast = parse(line);
        match (&fast, &slow) {
            (Some(f), Some(s)) => {
                let (fe, se) = (f.to_entry(), s.to_entry());
                // NaN != NaN: compare the written forms.
                assert_eq!(fe.to_line(), se.to_line(), "line {line}");
            }
            (Some(_), None) => panic!("fast path accepted what serde refuses: {line}"),
            _ => {}
        }
    }

    #[test]
    fn the_fast_path_agrees_with_serde() {
        let lines = [
            r#"{"forward":3,"written_us":1700000000000000,"took_us":12,"broke":false,"fields":{"loss.value":0.5},"blob":"blobs/000000000003.npz","len":100,"crc32":4294967295}"#,
            r#"{"forward":3,"written_us":1,"took_us":12,"broke":false,"fields":{},"blob":"packs/000000.pack","offset":0,"len":100,"crc32":1}"#,
            r#"{"forward":3,"written_us":1,"took_us":12,"broke":false,"blob":"packs/000000.pack","offset":01,"len":100,"crc32":1}"#,
            r#"{"forward":4,"written_us":-1,"took_us":0,"broke":true,"error":"killed by signal 9"}"#,
            r#"{"forward":5,"written_us":1,"took_us":0,"broke":false,"fields":{"a":"NaN","b":"-Infinity","c":1e-7,"d":-0.0,"e":12345678901234567890,"f":"text","g":true,"h":null,"i":0.1}}"#,
            r#"{"forward":6,"written_us":1,"took_us":0,"broke":false,"fields":{}}"#,
            r#"{"forward":01,"written_us":1,"took_us":0,"broke":false}"#,
            r#"{"forward":7,"written_us":1,"took_us":0,"broke":false,"fields":{"x":1.}}"#,
            r#"{"forward":7,"written_us":1,"took_us":0,"broke":false,"fields":{"x":.5}}"#,
            r#"{"forward":7,"written_us":1,"took_us":0,"broke":false,"fields":{"x":+5}}"#,
            r#"{"forward":7,"written_us":1,"took_us":0,"broke":false,"fields":{"x":inf}}"#,
            r#"{"forward":8,"written_us":1,"took_us":0,"broke":false,"crc32":4294967296}"#,
            r#"{"forward":9,"written_us":1,"took_us":0,"broke":false,"error":"a\"b"}"#,
            r#"{"forward":9,"written_us":1,"took_us":0,"broke":false} "#,
            r#"{"forward":9,"written_us":1,"took_us":0,"broke":false}x"#,
            r#"{"forward":9,"written_us":1,"took_us":0,"broke":false"#,
        ];
        for l in lines {
            same(l);
        }
        assert!(
            parse(lines[0]).is_some() && parse(lines[1]).is_some() && parse(lines[4]).is_some(),
            "canonical lines not fast"
        );
        assert!(
            parse(lines[12]).is_none(),
            "escaped string not left to serde"
        );
    }
}

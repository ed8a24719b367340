//! Encodings the report needs: base64 (standard, padded), CSP/SRI hashes, and text safe inside HTML.

use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `bytes` in standard base64 with `=` padding, appended to `out`.
pub fn base64_into(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

/// `bytes` in standard base64 with `=` padding.
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    base64_into(bytes, &mut out);
    out
}

/// Copy everything `from` gives to `to` as base64, a bounded chunk at a time; the bytes read.
pub fn base64_stream<R: Read, W: Write>(from: &mut R, to: &mut W) -> io::Result<u64> {
    const CHUNK: usize = 3 << 16; // a multiple of 3: no padding until the end
    let mut buf = vec![0u8; CHUNK];
    let mut text = String::with_capacity(CHUNK / 3 * 4);
    let mut total = 0u64;
    loop {
        let mut filled = 0;
        while filled < CHUNK {
            match from.read(&mut buf[filled..])? {
                0 => break,
                n => filled += n,
            }
        }
        if filled == 0 {
            return Ok(total);
        }
        text.clear();
        base64_into(&buf[..filled], &mut text);
        to.write_all(text.as_bytes())?;
        total += filled as u64;
        if filled < CHUNK {
            return Ok(total);
        }
    }
}

/// The CSP hash-source / SRI value of `text`: `sha256-<base64 of its SHA-256>`.
pub fn sha256_source(text: &[u8]) -> String {
    format!("sha256-{}", base64(&Sha256::digest(text)))
}

/// `s` with `&`, `<`, `>`, `"` and `'` as character references, for HTML text and attributes.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON text that can sit inside a `<script>` element: `<`, `>` and `&` as `\u` escapes (they
/// only occur inside JSON strings, where the escape means the same character).
pub fn json_for_script(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        // RFC 4648 §10 test vectors.
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, want) in cases {
            assert_eq!(base64(input.as_bytes()), want, "base64({input:?})");
        }
    }

    #[test]
    fn base64_stream_equals_base64_of_the_whole() {
        // Lengths around the chunk size, so chunk joins and the padded tail are both crossed.
        for len in [
            0usize,
            1,
            2,
            (3 << 16) - 1,
            3 << 16,
            (3 << 16) + 1,
            (3 << 17) + 2,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut out = Vec::new();
            let n = base64_stream(&mut bytes.as_slice(), &mut out).unwrap();
            assert_eq!(n, len as u64);
            assert_eq!(String::from_utf8(out).unwrap(), base64(&bytes), "len {len}");
        }
    }

    #[test]
    fn sha256_source_matches_a_known_digest() {
        // SHA-256("abc") from FIPS 180-2, base64 of ba7816bf…f20015ad.
        assert_eq!(
            sha256_source(b"abc"),
            "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
    }

    #[test]
    fn script_json_and_html_text_cannot_close_their_element() {
        assert_eq!(
            json_for_script(r#"{"run":"</script><b>&"}"#),
            r#"{"run":"\u003c/script\u003e\u003cb\u003e\u0026"}"#
        );
        assert_eq!(
            html_escape(r#"<img src=x onerror='a'>&"#),
            "&lt;img src=x onerror=&#39;a&#39;&gt;&amp;"
        );
    }
}

//! What a request asks of `somatize serve`: its percent-decoded path and its byte range (the HTTP itself is hyper's).

/// Percent-decode a path; `None` for bad escapes or bytes that are not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` against a length: the inclusive span, or `None`
/// when unsatisfiable or not a single range.
pub fn parse_range(header: &str, len: u64) -> Option<(u64, u64)> {
    let spec = header.strip_prefix("bytes=")?;
    if spec.contains(',') || len == 0 {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: u64 = n.parse().ok()?;
            (len.saturating_sub(n), len - 1)
        }
        (a, "") => (a.parse().ok()?, len - 1),
        (a, b) => (a.parse().ok()?, b.parse::<u64>().ok()?.min(len - 1)),
    };
    (start <= end && start < len).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_clamped_or_refused() {
        for (header, len, want) in [
            ("bytes=0-9", 100, Some((0, 9))),
            ("bytes=90-", 100, Some((90, 99))),
            ("bytes=-10", 100, Some((90, 99))),
            ("bytes=50-500", 100, Some((50, 99))),
            ("bytes=100-", 100, None),
            ("bytes=9-0", 100, None),
            ("bytes=0-1,5-6", 100, None),
            ("items=0-1", 100, None),
            ("bytes=0-0", 0, None),
        ] {
            assert_eq!(parse_range(header, len), want, "{header} of {len}");
        }
    }

    #[test]
    fn percent_decoding_refuses_bad_escapes() {
        assert_eq!(percent_decode("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(percent_decode("/%2e%2e/x").as_deref(), Some("/../x"));
        assert_eq!(percent_decode("/%zz"), None);
        assert_eq!(percent_decode("/%4"), None);
    }
}

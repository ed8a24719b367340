//! A minimal HTTP/1.1 reader and writer for `somatize serve`: GET and HEAD, byte ranges, nothing else.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// The longest request head (request line and headers) accepted, in bytes.
const MAX_HEAD: usize = 16 * 1024;

/// A parsed request: method, decoded path, query, and the two headers we use.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    pub range: Option<String>,
    /// The `Host` header (checked against the server's own address: DNS rebinding).
    pub host: Option<String>,
}

/// Why a request could not be read.
#[derive(Debug)]
pub enum RequestError {
    /// The connection failed or closed early; nothing to answer.
    Io(io::Error),
    /// The request is not HTTP we understand (answered 400).
    Bad(&'static str),
}

impl From<io::Error> for RequestError {
    fn from(e: io::Error) -> Self {
        RequestError::Io(e)
    }
}

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

/// Read one request head from a connection.
pub fn read_request(stream: &TcpStream) -> Result<Request, RequestError> {
    let mut reader = BufReader::new(stream.take(MAX_HEAD as u64));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(RequestError::Bad("malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(RequestError::Bad("only HTTP/1.x"));
    }
    let mut range = None;
    let mut host = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            return Err(RequestError::Bad("headers cut short"));
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("range") {
                range = Some(value.trim().to_string());
            } else if name.trim().eq_ignore_ascii_case("host") {
                host = Some(value.trim().to_string());
            }
        }
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = percent_decode(path).ok_or(RequestError::Bad("bad percent-encoding"))?;
    Ok(Request {
        method: method.to_string(),
        path,
        query: query.to_string(),
        range,
        host,
    })
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

/// Write a response head.
pub fn head(
    out: &mut impl Write,
    status: &str,
    headers: &[(&str, String)],
    len: u64,
) -> io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Length: {len}\r\nConnection: close\r\n"
    )?;
    write!(
        out,
        "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n"
    )?;
    for (name, value) in headers {
        write!(out, "{name}: {value}\r\n")?;
    }
    write!(out, "\r\n")
}

/// A short plain-text answer (errors, redirects).
pub fn text(
    out: &mut impl Write,
    status: &str,
    body: &str,
    extra: &[(&str, String)],
) -> io::Result<()> {
    let mut headers = vec![("Content-Type", "text/plain; charset=utf-8".to_string())];
    headers.extend(extra.iter().cloned());
    head(out, status, &headers, body.len() as u64)?;
    out.write_all(body.as_bytes())
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

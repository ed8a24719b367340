//! `somatize serve`: the page, the package and one store over HTTP on 127.0.0.1 only.
//!
//! Routes: `/` redirects to the page with `?store=/store/`; `/www/…` and `/pkg/…` are the
//! page and the npm package from the asset folder; `/store/…` is the store folder as plain
//! files with byte ranges, exactly what any static host would serve. GET and HEAD only;
//! nothing outside those folders is reachable, no symlink is followed, and a request whose
//! `Host` is not this server's own address (DNS rebinding) is refused. HTTP itself (parsing,
//! keep-alive, one thread per connection) is `tiny_http`'s.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{SocketAddr, TcpListener};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use tiny_http::{Header, Method, Request, Response, StatusCode};

/// Threads answering requests (each connection also has its own reading thread in `tiny_http`).
const WORKERS: usize = 4;

/// What is served: the folder holding `www/` and `pkg/`, and the store folder (both as
/// canonical paths, so that a symlink anywhere below them is told apart).
#[derive(Debug, Clone)]
pub struct Site {
    pub assets: PathBuf,
    pub store: PathBuf,
}

/// Why the server could not start.
#[derive(Debug)]
pub enum ServeError {
    /// The asset folder lacks the page or the built package; names what is missing.
    Assets {
        missing: PathBuf,
        hint: &'static str,
    },
    /// The store folder does not exist or is not a folder.
    Store { path: PathBuf },
    /// The port could not be bound (in use, or not allowed); try another `--port`.
    Bind { port: u16, source: io::Error },
    /// The HTTP server could not be started over the bound socket.
    Start { reason: String },
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Assets { missing, hint } => {
                write!(f, "{} is missing: {hint}", missing.display())
            }
            ServeError::Store { path } => write!(f, "{} is not a store folder", path.display()),
            ServeError::Bind { port, source } => {
                write!(f, "cannot listen on 127.0.0.1:{port}: {source}")
            }
            ServeError::Start { reason } => write!(f, "cannot start the server: {reason}"),
        }
    }
}

impl std::error::Error for ServeError {}

impl Site {
    /// Check the folders before serving anything.
    pub fn new(assets: PathBuf, store: PathBuf) -> Result<Site, ServeError> {
        let need = [
            (
                "www/index.html",
                "the asset folder is the repository root (pass --assets)",
            ),
            (
                "pkg/wasm/somatize_bg.wasm",
                "build the package first: scripts/build-wasm.sh",
            ),
            (
                "www/vendor/plotly.min.js",
                "build the page first: scripts/build-wasm.sh",
            ),
        ];
        for (rel, hint) in need {
            if !assets.join(rel).is_file() {
                return Err(ServeError::Assets {
                    missing: assets.join(rel),
                    hint,
                });
            }
        }
        if !store.is_dir() {
            return Err(ServeError::Store { path: store });
        }
        let canonical = |p: PathBuf| p.canonicalize().map_err(|_| ServeError::Store { path: p });
        Ok(Site {
            assets: canonical(assets)?,
            store: canonical(store)?,
        })
    }

    /// The file a request path names, or `None` when it names nothing servable: outside the
    /// served folders, not a plain relative path, not a regular file, or reached through a
    /// symlink (the canonical path must be the path asked for, so no link is followed, in or
    /// out of the tree).
    pub fn resolve(&self, path: &str) -> Option<PathBuf> {
        let (root, rest) = if let Some(rest) = path.strip_prefix("/store/") {
            (&self.store, rest)
        } else if path.starts_with("/www/") || path.starts_with("/pkg/") {
            (&self.assets, path.get(1..)?)
        } else {
            return None;
        };
        let rel = Path::new(rest);
        let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || rest.is_empty() || rest.contains('\\') || rest.contains('\0') {
            return None;
        }
        let file = root.join(rel);
        let real = file.canonicalize().ok()?;
        (real == file && real.is_file()).then_some(real)
    }
}

/// Percent-decode a path; `None` for bad escapes or bytes that are not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
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
    let last = len - 1;
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: u64 = n.parse().ok()?;
            (len.saturating_sub(n), last)
        }
        (a, "") => (a.parse().ok()?, last),
        (a, b) => (a.parse().ok()?, b.parse::<u64>().ok()?.min(last)),
    };
    (start <= end && start < len).then_some((start, end))
}

/// The `Host` values this server answers to: its own address, and `localhost` on its port
/// (without the port too when that is 80, as a browser then sends it).
pub fn allowed_hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let own = match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    };
    let mut hosts = vec![format!("{own}:{port}"), format!("localhost:{port}")];
    if port == 80 {
        hosts.extend([own, "localhost".to_string()]);
    }
    hosts
}

/// The media type by extension.
fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "jsonl" => "application/json",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

fn header(name: &str, value: &str) -> Header {
    // Every name and value here is ASCII built by this module, which `from_bytes` accepts.
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("an ASCII header")
}

/// Headers every answer carries.
fn common(content_type: &str) -> Vec<Header> {
    vec![
        header("Content-Type", content_type),
        header("X-Content-Type-Options", "nosniff"),
        header("Cache-Control", "no-store"),
    ]
}

/// A body of known length, never sent chunked, so `Content-Length` is always exact.
type Answer = Response<Box<dyn Read + Send>>;

fn answer(status: u16, headers: Vec<Header>, body: Box<dyn Read + Send>, len: u64) -> Answer {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    Response::new(StatusCode(status), headers, body, Some(len), None)
        .with_chunked_threshold(usize::MAX)
}

/// A short plain-text answer (errors, redirects).
fn text(status: u16, body: &str, extra: Vec<Header>) -> Answer {
    let mut headers = common("text/plain; charset=utf-8");
    headers.extend(extra);
    let bytes = body.as_bytes().to_vec();
    let len = bytes.len() as u64;
    answer(status, headers, Box::new(io::Cursor::new(bytes)), len)
}

fn header_value<'a>(req: &'a Request, name: &'static str) -> Option<&'a str> {
    req.headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// The answer to one request.
fn respond(site: &Site, hosts: &[String], req: &Request) -> Answer {
    let host = header_value(req, "Host").map(str::trim);
    if !host.is_some_and(|h| hosts.iter().any(|ok| ok.eq_ignore_ascii_case(h))) {
        let why = format!(
            "this server answers only to Host {} (got {:?})\n",
            hosts.join(" or "),
            host.unwrap_or("")
        );
        return text(421, &why, vec![]);
    }
    let method = req.method();
    if *method != Method::Get && *method != Method::Head {
        return text(
            405,
            "GET or HEAD only\n",
            vec![header("Allow", "GET, HEAD")],
        );
    }
    let target = req.url();
    let raw_path = target.split_once('?').map_or(target, |(p, _)| p);
    let Some(path) = percent_decode(raw_path) else {
        return text(400, "bad percent-encoding\n", vec![]);
    };
    if path == "/" {
        let to = "/www/index.html?store=/store/&live=1";
        return text(
            302,
            "the page is at /www/index.html\n",
            vec![header("Location", to)],
        );
    }
    let Some(file) = site.resolve(&path) else {
        return text(404, "no such file\n", vec![]);
    };
    match open(&file, header_value(req, "Range")) {
        Ok(a) => a,
        Err(_) => text(404, "no such file\n", vec![]),
    }
}

/// The file's answer: whole, or the one byte range asked for.
fn open(path: &Path, range: Option<&str>) -> io::Result<Answer> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut headers = common(content_type(path));
    headers.push(header("Accept-Ranges", "bytes"));
    let Some(range) = range else {
        return Ok(answer(200, headers, Box::new(file), len));
    };
    let Some((start, end)) = parse_range(range, len) else {
        let extra = vec![header("Content-Range", &format!("bytes */{len}"))];
        return Ok(text(416, "bad range\n", extra));
    };
    headers.push(header(
        "Content-Range",
        &format!("bytes {start}-{end}/{len}"),
    ));
    file.seek(SeekFrom::Start(start))?;
    let count = end - start + 1;
    Ok(answer(206, headers, Box::new(file.take(count)), count))
}

/// Bind 127.0.0.1 (`port` 0 picks a free one).
pub fn bind(port: u16) -> Result<TcpListener, ServeError> {
    TcpListener::bind(("127.0.0.1", port)).map_err(|source| ServeError::Bind { port, source })
}

/// Serve until the process ends: connections kept alive, [`WORKERS`] threads answering.
pub fn serve(site: Site, listener: TcpListener) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(|e| ServeError::Start {
        reason: e.to_string(),
    })?;
    let hosts = Arc::new(allowed_hosts(addr));
    // No Nagle: a kept-alive connection otherwise waits out the client's delayed ACK (about
    // 40 ms) between a response's head and body, which made the page's thousand small range
    // reads take 50 s instead of a second. Set on the listener, accepted sockets inherit it.
    socket2::SockRef::from(&listener)
        .set_tcp_nodelay(true)
        .map_err(|e| ServeError::Start {
            reason: e.to_string(),
        })?;
    let server = tiny_http::Server::from_listener(listener, None)
        .map_err(|e| ServeError::Start {
            reason: e.to_string(),
        })
        .map(Arc::new)?;
    let site = Arc::new(site);
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (server, site, hosts) = (server.clone(), site.clone(), hosts.clone());
            std::thread::spawn(move || {
                while let Ok(req) = server.recv() {
                    let response = respond(&site, &hosts, &req);
                    // A client that went away mid-answer is no concern of the others.
                    let _ = req.respond(response);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    Ok(())
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

    #[test]
    fn only_the_own_address_and_localhost_are_hosts() {
        let v4: SocketAddr = "127.0.0.1:8750".parse().unwrap();
        assert_eq!(
            allowed_hosts(v4),
            ["127.0.0.1:8750", "localhost:8750"].map(String::from)
        );
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(
            allowed_hosts(v6),
            ["[::1]:80", "localhost:80", "[::1]", "localhost"].map(String::from)
        );
    }
}

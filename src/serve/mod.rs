//! `somatize serve`: the page, the package and one store over HTTP on 127.0.0.1 only.
//!
//! Routes: `/` redirects to the page with `?store=/store/`; `/www/…` and `/pkg/…` are the
//! page and the npm package from the asset folder; `/store/…` is the store folder as plain
//! files with byte ranges, exactly what any static host would serve. GET and HEAD only;
//! nothing outside those folders is reachable, no symlink is followed (in or out of the tree),
//! and a request whose `Host` is not this server's own address (DNS rebinding) is refused
//! (421). One connection per request (`Connection: close`): the `tiny_http` crate with
//! keep-alive was tried (2026-12-01) and, on a page's first load, left a request unanswered
//! for a minute (docs/serve.md); this small reader stays until that is understood.

pub mod http;

use http::{Request, RequestError};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Connections answered at once; more wait for a 503 rather than a thread each.
const MAX_CONNECTIONS: usize = 64;

/// What is served: the folder holding `www/` and `pkg/`, and the store folder.
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

/// Answer one request: only to a `Host` that is this server's own address (a page elsewhere
/// that rebinds its name to 127.0.0.1 reaches the socket, not the store).
fn answer(site: &Site, hosts: &[String], req: &Request, out: &mut TcpStream) -> io::Result<()> {
    let host = req.host.as_deref().map(str::trim);
    if !host.is_some_and(|h| hosts.iter().any(|ok| ok.eq_ignore_ascii_case(h))) {
        let why = format!(
            "this server answers only to Host {} (got {:?})\n",
            hosts.join(" or "),
            host.unwrap_or("")
        );
        return http::text(out, "421 Misdirected Request", &why, &[]);
    }
    if req.method != "GET" && req.method != "HEAD" {
        return http::text(
            out,
            "405 Method Not Allowed",
            "GET or HEAD only\n",
            &[("Allow", "GET, HEAD".into())],
        );
    }
    if req.path == "/" {
        let to = "/www/index.html?store=/store/&live=1".to_string();
        return http::text(
            out,
            "302 Found",
            "the page is at /www/index.html\n",
            &[("Location", to)],
        );
    }
    let Some(path) = site.resolve(&req.path) else {
        return http::text(out, "404 Not Found", "no such file\n", &[]);
    };
    let mut file = File::open(&path)?;
    let len = file.metadata()?.len();
    let mut headers = vec![
        ("Content-Type", content_type(&path).to_string()),
        ("Accept-Ranges", "bytes".to_string()),
    ];
    let (status, start, count) = match &req.range {
        None => ("200 OK", 0, len),
        Some(range) => match http::parse_range(range, len) {
            Some((a, b)) => {
                headers.push(("Content-Range", format!("bytes {a}-{b}/{len}")));
                ("206 Partial Content", a, b - a + 1)
            }
            None => {
                let extra = [("Content-Range", format!("bytes */{len}"))];
                return http::text(out, "416 Range Not Satisfiable", "bad range\n", &extra);
            }
        },
    };
    http::head(out, status, &headers, count)?;
    if req.method == "GET" {
        file.seek(SeekFrom::Start(start))?;
        io::copy(&mut file.take(count), out)?;
    }
    Ok(())
}

fn handle(site: &Site, hosts: &[String], mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    match http::read_request(&stream) {
        Ok(req) => {
            let _ = answer(site, hosts, &req, &mut stream);
        }
        Err(RequestError::Bad(why)) => {
            let _ = http::text(&mut stream, "400 Bad Request", &format!("{why}\n"), &[]);
        }
        Err(RequestError::Io(_)) => {}
    }
    let _ = stream.flush();
}

/// Bind 127.0.0.1 (`port` 0 picks a free one).
pub fn bind(port: u16) -> Result<TcpListener, ServeError> {
    TcpListener::bind(("127.0.0.1", port)).map_err(|source| ServeError::Bind { port, source })
}

/// Serve until the process ends, a thread per connection up to [`MAX_CONNECTIONS`].
pub fn serve(site: Site, listener: TcpListener) {
    let hosts: Arc<Vec<String>> = Arc::new(match listener.local_addr() {
        Ok(addr) => allowed_hosts(addr),
        Err(_) => Vec::new(),
    });
    let site = Arc::new(site);
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming().flatten() {
        if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            let mut stream = stream;
            let _ = http::text(&mut stream, "503 Service Unavailable", "busy\n", &[]);
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (site, open, hosts) = (site.clone(), open.clone(), hosts.clone());
        std::thread::spawn(move || {
            handle(&site, &hosts, stream);
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

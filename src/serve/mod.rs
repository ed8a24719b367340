//! `somatize serve`: the page, the package and one store over HTTP on 127.0.0.1 only.
//!
//! Routes: `/` redirects to the page with `?store=/store/`; `/www/…` and `/pkg/…` are the
//! page and the npm package from the asset folder; `/store/…` is the store folder as plain
//! files with byte ranges, exactly what any static host would serve. GET and HEAD only;
//! nothing outside those folders is reachable, no symlink is followed (in or out of the tree),
//! and a request whose `Host` is not this server's own address (DNS rebinding) is refused
//! (421). HTTP/1.1 is hyper's, on a small tokio runtime: connections are kept alive (a page's
//! thousand range reads share a few sockets), with `TCP_NODELAY` so that no answer waits out the
//! client's delayed ACK, and a connection idle or slow past [`HEADER_TIMEOUT`] is closed.

pub mod request;

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::io::{self, SeekFrom};
use std::net::{SocketAddr, TcpListener};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Connections open at once; one more is answered 503 and closed. A browser opens about six
/// per host, so this only bounds a misbehaving client.
pub const MAX_CONNECTIONS: usize = 256;

/// How long a connection may take to send a request's head, and how long a kept-alive
/// connection may sit idle before it is closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// What a server allows a client ([`serve_with`]); `somatize serve` uses the defaults.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once (default [`MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Time to send a request's head, and to sit idle between requests (default
    /// [`HEADER_TIMEOUT`]).
    pub header_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: MAX_CONNECTIONS,
            header_timeout: HEADER_TIMEOUT,
        }
    }
}

/// Spans up to this many bytes are read whole and sent at once; longer ones are streamed.
const WHOLE_READ: u64 = 1 << 20;

/// The body of every answer: whole bytes, nothing, or a file's span read as it is sent.
type Body = BoxBody<Bytes, io::Error>;

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
    /// The server's threads or its listening socket could not be set up (out of threads or
    /// file descriptors); retrying after others are freed may help.
    Runtime(io::Error),
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
            ServeError::Runtime(e) => write!(f, "cannot start the server: {e}"),
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

/// A short plain-text answer (errors, redirects) with extra headers.
fn text(status: StatusCode, body: &str, extra: &[(HeaderName, String)]) -> Response<Body> {
    let mut answer = Response::new(
        Full::new(Bytes::copy_from_slice(body.as_bytes()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name.clone(), value);
        }
    }
    answer
}

/// Whether a request is addressed to this server: its `Host` (and the authority of an
/// absolute request target, when one is given) must be one of `hosts`.
fn addressed_here(req: &Request<Incoming>, hosts: &[String]) -> Result<(), String> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::trim);
    let ok = |h: &str| hosts.iter().any(|want| want.eq_ignore_ascii_case(h));
    let authority_ok = req.uri().authority().is_none_or(|a| ok(a.as_str()));
    if host.is_some_and(ok) && authority_ok {
        return Ok(());
    }
    Err(format!(
        "this server answers only to Host {} (got {:?})\n",
        hosts.join(" or "),
        host.unwrap_or("")
    ))
}

/// Answer one request: only to a `Host` that is this server's own address (a page elsewhere
/// that rebinds its name to 127.0.0.1 reaches the socket, not the store).
async fn answer(site: &Arc<Site>, hosts: &[String], req: &Request<Incoming>) -> Response<Body> {
    if let Err(why) = addressed_here(req, hosts) {
        return text(StatusCode::MISDIRECTED_REQUEST, &why, &[]);
    }
    let head_only = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head_only {
        let allow = [(header::ALLOW, "GET, HEAD".to_string())];
        return text(StatusCode::METHOD_NOT_ALLOWED, "GET or HEAD only\n", &allow);
    }
    if req.uri().path() == "/" {
        let to = [(
            header::LOCATION,
            "/www/index.html?store=/store/&live=1".to_string(),
        )];
        return text(StatusCode::FOUND, "the page is at /www/index.html\n", &to);
    }
    let Some(path) = request::percent_decode(req.uri().path()) else {
        return text(StatusCode::BAD_REQUEST, "bad percent-encoding\n", &[]);
    };
    let site = site.clone();
    let resolved = tokio::task::spawn_blocking(move || site.resolve(&path)).await;
    let Ok(Some(file)) = resolved else {
        return text(StatusCode::NOT_FOUND, "no such file\n", &[]);
    };
    let range = match req.headers().get(header::RANGE) {
        None => None,
        Some(value) => match value.to_str() {
            Ok(value) => Some(value.to_string()),
            Err(_) => Some(String::new()),
        },
    };
    match send_file(&file, range.as_deref(), head_only).await {
        Ok(answer) => answer,
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot read the file: {e}\n"),
            &[],
        ),
    }
}

/// A file, or the span of it a `Range` header asks for: read whole when short, streamed
/// otherwise, always with its `Content-Length` (never chunked).
async fn send_file(
    path: &Path,
    range: Option<&str>,
    head_only: bool,
) -> io::Result<Response<Body>> {
    let mut file = tokio::fs::File::open(path).await?;
    let len = file.metadata().await?.len();
    let mut headers = vec![
        (header::CONTENT_TYPE, content_type(path).to_string()),
        (header::ACCEPT_RANGES, "bytes".to_string()),
    ];
    let (status, start, count) = match range {
        None => (StatusCode::OK, 0, len),
        Some(range) => match request::parse_range(range, len) {
            Some((a, b)) => {
                headers.push((header::CONTENT_RANGE, format!("bytes {a}-{b}/{len}")));
                (StatusCode::PARTIAL_CONTENT, a, b - a + 1)
            }
            None => {
                let extra = [(header::CONTENT_RANGE, format!("bytes */{len}"))];
                return Ok(text(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "bad range\n",
                    &extra,
                ));
            }
        },
    };
    let body: Body = if head_only || count == 0 {
        Empty::new().map_err(|never| match never {}).boxed()
    } else {
        file.seek(SeekFrom::Start(start)).await?;
        if count <= WHOLE_READ {
            let mut bytes = vec![0; count as usize];
            file.read_exact(&mut bytes).await?;
            Full::new(Bytes::from(bytes))
                .map_err(|never| match never {})
                .boxed()
        } else {
            let stream = tokio_util::io::ReaderStream::new(file.take(count));
            StreamBody::new(stream.map_ok(Frame::data)).boxed()
        }
    };
    let mut answer = Response::new(body);
    *answer.status_mut() = status;
    headers.push((header::CONTENT_LENGTH, count.to_string()));
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            answer.headers_mut().insert(name, value);
        }
    }
    Ok(answer)
}

/// Every answer: nothing sniffed, nothing cached (the store changes while it is served).
async fn handle(
    site: Arc<Site>,
    hosts: Arc<Vec<String>>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let mut answer = answer(&site, &hosts, &req).await;
    let headers = answer.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(answer)
}

/// Bind 127.0.0.1 (`port` 0 picks a free one).
pub fn bind(port: u16) -> Result<TcpListener, ServeError> {
    TcpListener::bind(("127.0.0.1", port)).map_err(|source| ServeError::Bind { port, source })
}

/// Serve until the process ends: a task per connection, kept alive, up to
/// [`MAX_CONNECTIONS`] at once.
pub fn serve(site: Site, listener: TcpListener) -> Result<(), ServeError> {
    serve_with(site, listener, Limits::default())
}

/// [`serve`] within `limits`.
pub fn serve_with(site: Site, listener: TcpListener, limits: Limits) -> Result<(), ServeError> {
    let hosts: Arc<Vec<String>> = Arc::new(match listener.local_addr() {
        Ok(addr) => allowed_hosts(addr),
        Err(_) => Vec::new(),
    });
    let site = Arc::new(site);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    runtime.block_on(async move {
        listener.set_nonblocking(true).map_err(ServeError::Runtime)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Runtime)?;
        let open = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                // Out of file descriptors, most likely: give the open ones time to close.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            let Ok(permit) = open.clone().try_acquire_owned() else {
                tokio::spawn(async move {
                    let busy = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n";
                    let _ = stream.write_all(busy).await;
                    let _ = stream.shutdown().await;
                });
                continue;
            };
            let (site, hosts) = (site.clone(), hosts.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    handle(site.clone(), hosts.clone(), req)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.header_timeout)
                    .title_case_headers(true)
                    .max_buf_size(16 * 1024)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                drop(permit);
            });
        }
    })
}

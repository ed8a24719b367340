//! `somatize serve`: the page, the package and a store over HTTP on 127.0.0.1, with ranges,
//! kept-alive connections, and nothing outside those folders reachable.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn temp_dir(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir =
        std::env::temp_dir().join(format!("somatize-serve-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An asset folder with a page and a (stand-in) package, and a real one-forward store.
fn site() -> (PathBuf, PathBuf) {
    let assets = temp_dir("assets");
    std::fs::create_dir_all(assets.join("www")).unwrap();
    std::fs::create_dir_all(assets.join("pkg/wasm")).unwrap();
    std::fs::write(
        assets.join("www/index.html"),
        "<!doctype html><title>t</title>",
    )
    .unwrap();
    std::fs::write(assets.join("pkg/wasm/somatize_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::create_dir_all(assets.join("www/vendor")).unwrap();
    std::fs::write(assets.join("www/vendor/plotly.min.js"), "/* plotly */").unwrap();
    std::fs::write(assets.join("secret.txt"), "not served").unwrap();
    let store = temp_dir("store");
    let mut rec = somatize::record::Recorder::with_writer(&store, "r", "w").unwrap();
    let fwd = somatize::store::ForwardRecord {
        forward: 0,
        facts: vec![somatize::store::Fact::loss(0.5)],
        ..Default::default()
    };
    rec.record(&fwd).unwrap();
    (assets, store)
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(assets: &Path, store: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(["serve", store.to_str().unwrap(), "--port", "0", "--assets"])
        .arg(assets)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{line}");
    Server(child, addr)
}

/// Read one response from a kept-alive connection: the status line, the headers and the
/// body (`Content-Length` bytes; none for a HEAD).
fn read_response(s: &mut impl BufRead, head_only: bool) -> (String, String, Vec<u8>) {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(s.read_line(&mut line).unwrap() > 0, "closed after {head:?}");
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let (status, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    let len: usize = headers
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; if head_only { 0 } else { len }];
    s.read_exact(&mut body).unwrap();
    (status.to_string(), headers.to_string(), body)
}

/// One kept-alive connection to the server: requests are written on one side and the
/// answers read, in order, from the other.
struct Conn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(server: &Server) -> Conn {
        let stream = TcpStream::connect(&server.1).unwrap();
        Conn {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
        }
    }

    /// Write raw request bytes (one request, or several pipelined) without reading.
    fn write(&mut self, requests: &str) {
        self.writer.write_all(requests.as_bytes()).unwrap();
    }

    /// Read the next answer on the connection (`head_only`: the request was a HEAD).
    fn read(&mut self, head_only: bool) -> (String, String, Vec<u8>) {
        read_response(&mut self.reader, head_only)
    }

    /// Send one raw request and read its answer: the status line, the headers and the body.
    fn send(&mut self, request: &str) -> (String, String, Vec<u8>) {
        self.write(request);
        self.read(request.starts_with("HEAD "))
    }
}

/// Send a raw request on a new connection; the status line, the headers and the body.
fn get(server: &Server, request: &str) -> (String, String, Vec<u8>) {
    Conn::open(server).send(request)
}

/// The answer says its length (`len` bytes) up front and is never chunked.
fn assert_sized(headers: &str, len: usize) {
    assert!(
        headers.contains(&format!("Content-Length: {len}")),
        "{headers}"
    );
    assert!(
        !headers.to_ascii_lowercase().contains("chunked"),
        "{headers}"
    );
}

/// A request as a browser on this server's own page sends it.
fn req(server: &Server, method: &str, path: &str, extra: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{extra}\r\n",
        server.1
    )
}

#[test]
fn serves_the_page_the_package_and_the_store_with_ranges() {
    let (assets, store) = site();
    let server = start(&assets, &store);
    let (status, headers, _) = get(&server, &req(&server, "GET", "/", ""));
    assert!(status.contains("302"), "{status}");
    assert!(
        headers.contains("Location: /www/index.html?store=/store/&live=1"),
        "{headers}"
    );
    let (status, headers, body) = get(&server, &req(&server, "GET", "/www/index.html", ""));
    assert!(
        status.contains("200") && headers.contains("text/html"),
        "{status} {headers}"
    );
    assert!(body.starts_with(b"<!doctype html>"));
    let (status, headers, _) = get(
        &server,
        &req(&server, "GET", "/pkg/wasm/somatize_bg.wasm", ""),
    );
    assert!(
        status.contains("200") && headers.contains("application/wasm"),
        "{headers}"
    );
    let format = std::fs::read(store.join("somatize-store.json")).unwrap();
    let (status, _, body) = get(
        &server,
        &req(&server, "GET", "/store/somatize-store.json", ""),
    );
    assert!(status.contains("200"));
    assert_eq!(body, format);
    let (status, headers, body) = get(
        &server,
        &req(
            &server,
            "GET",
            "/store/somatize-store.json",
            "Range: bytes=2-5\r\n",
        ),
    );
    assert!(status.contains("206"), "{status}");
    assert!(
        headers.contains(&format!("Content-Range: bytes 2-5/{}", format.len())),
        "{headers}"
    );
    assert_eq!(body, &format[2..6]);
    let (status, _, body) = get(
        &server,
        &req(&server, "HEAD", "/store/somatize-store.json", ""),
    );
    assert!(status.contains("200") && body.is_empty());
}

#[test]
fn nothing_outside_the_served_folders_is_reachable() {
    let (assets, store) = site();
    let server = start(&assets, &store);
    for (got, want) in [
        (req(&server, "GET", "/secret.txt", ""), "404"),
        (req(&server, "GET", "/store/../secret.txt", ""), "404"),
        (req(&server, "GET", "/www/%2e%2e/secret.txt", ""), "404"),
        (req(&server, "GET", "/store//etc/passwd", ""), "404"),
        (req(&server, "GET", "/www/%zz", ""), "400"),
        (req(&server, "POST", "/www/index.html", ""), "405"),
        (
            req(
                &server,
                "GET",
                "/store/somatize-store.json",
                "Range: bytes=999999-\r\n",
            ),
            "416",
        ),
        ("garbage\r\n\r\n".to_string(), "400"),
    ] {
        let (status, _, _) = get(&server, &got);
        assert!(
            status.contains(want),
            "request {got:?}: got {status:?}, want {want}"
        );
    }
}

#[test]
fn a_missing_package_is_a_clear_error() {
    let (assets, store) = site();
    std::fs::remove_file(assets.join("pkg/wasm/somatize_bg.wasm")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(["serve", store.to_str().unwrap(), "--port", "0", "--assets"])
        .arg(&assets)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scripts/build-wasm.sh"));
}

#[test]
fn a_rebinding_host_is_refused() {
    let (assets, store) = site();
    let server = start(&assets, &store);
    let port = server.1.rsplit(':').next().unwrap().to_string();
    let path = "/store/somatize-store.json";
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1:{}", port.parse::<u32>().unwrap() + 1),
        "127.0.0.1".to_string(),
        String::new(),
    ] {
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
        let (status, _, body) = get(&server, &request);
        assert!(status.contains("421"), "Host {host:?}: {status}");
        assert!(
            !String::from_utf8_lossy(&body).contains("somatize"),
            "{host}"
        );
    }
    let (status, _, _) = get(&server, &format!("GET {path} HTTP/1.0\r\n\r\n"));
    assert!(status.contains("421"), "no Host: {status}");
    for host in [
        server.1.clone(),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
    ] {
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
        let (status, _, _) = get(&server, &request);
        assert!(status.contains("200"), "Host {host:?}: {status}");
    }
}

#[cfg(unix)]
#[test]
fn symlinks_are_not_followed() {
    use std::os::unix::fs::symlink;
    let (assets, store) = site();
    let outside = temp_dir("outside");
    std::fs::write(outside.join("secret.txt"), "outside the tree").unwrap();
    symlink(outside.join("secret.txt"), store.join("out.txt")).unwrap();
    symlink(&outside, store.join("outdir")).unwrap();
    symlink(store.join("somatize-store.json"), store.join("inside.json")).unwrap();
    symlink(assets.join("secret.txt"), assets.join("www/secret.txt")).unwrap();
    let server = start(&assets, &store);
    for path in [
        "/store/out.txt",
        "/store/outdir/secret.txt",
        "/store/inside.json",
        "/www/secret.txt",
    ] {
        let (status, _, body) = get(&server, &req(&server, "GET", path, ""));
        assert!(status.contains("404"), "{path}: {status}");
        assert!(!String::from_utf8_lossy(&body).contains("tree"), "{path}");
    }
    // The store itself may be named through a link: what is below it is still plain files.
    let linked = temp_dir("linked").join("store");
    symlink(&store, &linked).unwrap();
    drop(server);
    let server = start(&assets, &linked);
    let (status, _, _) = get(
        &server,
        &req(&server, "GET", "/store/somatize-store.json", ""),
    );
    assert!(status.contains("200"), "{status}");
}

/// A small deterministic generator (xorshift) for the test's bytes and ranges.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A server over a site whose store also holds `name`: `len` deterministic bytes from `seed`.
fn serve_blob(name: &str, seed: u64, len: usize) -> (Server, Vec<u8>) {
    let (assets, store) = site();
    let mut state = seed;
    let blob: Vec<u8> = (0..len).map(|_| xorshift(&mut state) as u8).collect();
    std::fs::write(store.join(name), &blob).unwrap();
    (start(&assets, &store), blob)
}

#[test]
fn many_concurrent_range_readers_get_their_bytes() {
    let (server, blob) = serve_blob("blob.bin", 0x9e37_79b9_7f4a_7c15, 300_000);
    let (readers, each) = (16, 40);
    std::thread::scope(|scope| {
        for reader in 0..readers {
            let (server, blob) = (&server, &blob);
            scope.spawn(move || {
                let mut state = 1 + reader as u64;
                // Even readers keep one connection for all their requests; odd ones open one each.
                let mut kept = Conn::open(server);
                for i in 0..each {
                    let len = blob.len() as u64;
                    let a = xorshift(&mut state) % len;
                    let b = (a + xorshift(&mut state) % 70_000).min(len - 1);
                    let (range, want) = if i % 10 == 9 {
                        (String::new(), &blob[..])
                    } else {
                        (
                            format!("Range: bytes={a}-{b}\r\n"),
                            &blob[a as usize..=b as usize],
                        )
                    };
                    let method = if i % 7 == 3 { "HEAD" } else { "GET" };
                    let request = req(server, method, "/store/blob.bin", &range);
                    let (status, headers, body) = if reader % 2 == 0 {
                        kept.send(&request)
                    } else {
                        get(server, &request)
                    };
                    if range.is_empty() {
                        assert!(status.contains("200"), "{status}");
                    } else {
                        assert!(status.contains("206"), "{status}");
                        assert!(
                            headers.contains(&format!("Content-Range: bytes {a}-{b}/{len}")),
                            "{headers}"
                        );
                    }
                    assert_sized(&headers, want.len());
                    if method == "GET" {
                        assert!(body == want, "reader {reader} request {i}: wrong bytes");
                    }
                }
            });
        }
    });
}

#[test]
fn one_connection_answers_request_after_request() {
    let (server, blob) = serve_blob("blob.bin", 0x2545_f491_4f6c_dd1d, 100_000);
    let mut conn = Conn::open(&server);
    // One after another on the same socket: answers of every kind leave it open.
    for i in 0..60u64 {
        let (a, b) = (i * 1_500, i * 1_500 + 999);
        let (request, want_status) = match i % 6 {
            0 => (req(&server, "GET", "/store/blob.bin", ""), "200"),
            1 => (req(&server, "HEAD", "/store/blob.bin", ""), "200"),
            2 => (req(&server, "GET", "/store/no-such-file", ""), "404"),
            3 => (
                req(
                    &server,
                    "GET",
                    "/store/blob.bin",
                    "Range: bytes=999999-\r\n",
                ),
                "416",
            ),
            _ => (
                req(
                    &server,
                    "GET",
                    "/store/blob.bin",
                    &format!("Range: bytes={a}-{b}\r\n"),
                ),
                "206",
            ),
        };
        let (status, _, body) = conn.send(&request);
        assert!(status.contains(want_status), "request {i}: {status}");
        match want_status {
            "200" if i % 6 == 0 => assert!(body == blob, "request {i}: wrong bytes"),
            "206" => assert!(body == blob[a as usize..=b as usize], "request {i}"),
            _ => {}
        }
    }
    // Pipelined: three requests written at once are answered in order.
    let ranges = [(0u64, 9u64), (50_000, 50_099), (99_990, 99_999)];
    let mut all = String::new();
    for (a, b) in ranges {
        all += &req(
            &server,
            "GET",
            "/store/blob.bin",
            &format!("Range: bytes={a}-{b}\r\n"),
        );
    }
    conn.write(&all);
    for (a, b) in ranges {
        let (status, headers, body) = conn.read(false);
        assert!(status.contains("206"), "{status}");
        assert!(headers.contains(&format!("Content-Range: bytes {a}-{b}/100000")));
        assert!(body == blob[a as usize..=b as usize], "pipelined {a}-{b}");
    }
    // `Connection: close` is honoured: the answer, then the end of the stream.
    let request = req(&server, "GET", "/store/blob.bin", "Connection: close\r\n");
    let (status, _, body) = conn.send(&request);
    assert!(status.contains("200") && body == blob, "{status}");
    let mut rest = Vec::new();
    conn.reader.read_to_end(&mut rest).unwrap();
    assert!(
        rest.is_empty(),
        "bytes after a closing answer: {}",
        rest.len()
    );
}

#[test]
fn long_files_stream_whole_and_in_ranges() {
    // Past the whole-read limit (1 MiB), so the answer is streamed from the file.
    let (server, blob) = serve_blob("big.bin", 0x1234_5678_9abc_def1, 3_500_000);
    let mut conn = Conn::open(&server);
    for (range, want) in [
        (String::new(), &blob[..]),
        (
            "Range: bytes=100-2500099\r\n".to_string(),
            &blob[100..2_500_100],
        ),
        ("Range: bytes=-1200000\r\n".to_string(), &blob[2_300_000..]),
    ] {
        let (status, headers, body) = conn.send(&req(&server, "GET", "/store/big.bin", &range));
        assert!(status.contains(if range.is_empty() { "200" } else { "206" }));
        assert_sized(&headers, want.len());
        assert!(body == want, "{range:?}: wrong bytes");
    }
}

#[test]
fn an_absolute_target_for_another_host_is_refused() {
    let (assets, store) = site();
    let server = start(&assets, &store);
    let request = format!(
        "GET http://evil.example/store/somatize-store.json HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.1
    );
    let (status, _, _) = get(&server, &request);
    assert!(status.contains("421"), "{status}");
    let request = format!(
        "GET http://{0}/store/somatize-store.json HTTP/1.1\r\nHost: {0}\r\n\r\n",
        server.1
    );
    let (status, _, _) = get(&server, &request);
    assert!(status.contains("200"), "{status}");
}

/// A server in this process within `limits` (its thread lives as long as the test binary).
fn start_within(limits: somatize::serve::Limits) -> String {
    let (assets, store) = site();
    let listener = somatize::serve::bind(0).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let site = somatize::serve::Site::new(assets, store).unwrap();
    std::thread::spawn(move || somatize::serve::serve_with(site, listener, limits));
    addr
}

#[test]
fn past_its_limit_the_server_answers_busy_and_idle_connections_are_closed() {
    let addr = start_within(somatize::serve::Limits {
        max_connections: 3,
        header_timeout: std::time::Duration::from_millis(800),
    });
    let request = format!("GET /www/index.html HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    // Three connections, each answered once and kept alive: the limit is reached.
    let held: Vec<BufReader<TcpStream>> = (0..3)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(request.as_bytes()).unwrap();
            let mut r = BufReader::new(s);
            let (status, _, body) = read_response(&mut r, false);
            assert!(status.contains(" 200 "), "{status}");
            assert_eq!(body, b"<!doctype html><title>t</title>");
            r
        })
        .collect();
    // One more is answered 503 and closed, without its request being read.
    let mut busy = TcpStream::connect(&addr).unwrap();
    busy.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    busy.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.ends_with("busy\n"), "{answer}");
    // The idle ones are closed by the server after the header timeout (end of stream, not
    // the 10 s read timeout), which frees their places: a new connection is served again.
    for mut r in held {
        r.get_ref()
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut rest = Vec::new();
        let n = r
            .read_to_end(&mut rest)
            .expect("closed by the server, not timed out");
        assert_eq!(n, 0, "nothing more was sent: {rest:?}");
    }
    let mut again = None;
    for _ in 0..50 {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let (status, _, _) = read_response(&mut BufReader::new(s), false);
        if status.contains(" 200 ") {
            again = Some(status);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        again.is_some(),
        "served again once the idle connections were closed"
    );
}

//! `somatize serve`: the page, the package and a store over HTTP on 127.0.0.1, with ranges,
//! and nothing outside those folders reachable.

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

/// Send a raw request; the status line, the headers and the body.
fn get(server: &Server, request: &str) -> (String, String, Vec<u8>) {
    let mut s = TcpStream::connect(&server.1).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    (
        status.to_string(),
        headers.to_string(),
        raw[split + 4..].to_vec(),
    )
}

fn req(method: &str, path: &str, extra: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n")
}

#[test]
fn serves_the_page_the_package_and_the_store_with_ranges() {
    let (assets, store) = site();
    let server = start(&assets, &store);
    let (status, headers, _) = get(&server, &req("GET", "/", ""));
    assert!(status.contains("302"), "{status}");
    assert!(
        headers.contains("Location: /www/index.html?store=/store/&live=1"),
        "{headers}"
    );
    let (status, headers, body) = get(&server, &req("GET", "/www/index.html", ""));
    assert!(
        status.contains("200") && headers.contains("text/html"),
        "{status} {headers}"
    );
    assert!(body.starts_with(b"<!doctype html>"));
    let (status, headers, _) = get(&server, &req("GET", "/pkg/wasm/somatize_bg.wasm", ""));
    assert!(
        status.contains("200") && headers.contains("application/wasm"),
        "{headers}"
    );
    let format = std::fs::read(store.join("somatize-store.json")).unwrap();
    let (status, _, body) = get(&server, &req("GET", "/store/somatize-store.json", ""));
    assert!(status.contains("200"));
    assert_eq!(body, format);
    let (status, headers, body) = get(
        &server,
        &req("GET", "/store/somatize-store.json", "Range: bytes=2-5\r\n"),
    );
    assert!(status.contains("206"), "{status}");
    assert!(
        headers.contains(&format!("Content-Range: bytes 2-5/{}", format.len())),
        "{headers}"
    );
    assert_eq!(body, &format[2..6]);
    let (status, _, body) = get(&server, &req("HEAD", "/store/somatize-store.json", ""));
    assert!(status.contains("200") && body.is_empty());
}

#[test]
fn nothing_outside_the_served_folders_is_reachable() {
    let (assets, store) = site();
    let server = start(&assets, &store);
    for (got, want) in [
        (req("GET", "/secret.txt", ""), "404"),
        (req("GET", "/store/../secret.txt", ""), "404"),
        (req("GET", "/www/%2e%2e/secret.txt", ""), "404"),
        (req("GET", "/store//etc/passwd", ""), "404"),
        (req("GET", "/www/%zz", ""), "400"),
        (req("POST", "/www/index.html", ""), "405"),
        (
            req(
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

//! Stores on object storage against a real S3 API on 127.0.0.1: moto's server, started by
//! this test binary from `SOMATIZE_MOTO_SERVER` (the path of `moto_server`; scripts/test.sh
//! installs moto and sets it) and stopped when the binary exits. Without the variable every
//! test here fails: a skipped test proves nothing.
//!
//! Covered: conditional puts (a second writer of one writer id takes it over and the first
//! stops with a clear error), a multipart upload of a large segment, an interrupted upload and
//! stray segments (never visible), a killed writer (readable up to its last segment put), two
//! writers of one run, a reader during writing, the CLI over `s3://`, and `somatize share`'s links.

mod common;

use common::{forward, somatize, values, Rng};
use somatize::record::Recorder;
use somatize::store::object::{Bucket, ObjectFs, ObjectWriter};
use somatize::store::{Store, StoreFs};
use somatize::tensor::TensorData;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BUCKET: &str = "somatize-test";
const ROLE: &str = "SOMATIZE_TEST_ROLE";

/// The moto server of this test binary: its port, and the pipe whose closing stops it.
struct Moto {
    port: u16,
    _child: std::sync::Mutex<Child>,
}

/// Start moto once for the binary (on a free port), create the bucket, and point the
/// `object_store` crate at it through the environment, as a user would.
fn moto() -> &'static Moto {
    static MOTO: OnceLock<Moto> = OnceLock::new();
    MOTO.get_or_init(|| {
        // A child role inherits the parent's environment and server.
        if let Ok(port) = std::env::var("SOMATIZE_TEST_MOTO_PORT") {
            let child = Command::new("true").spawn().expect("spawn true");
            return Moto {
                port: port.parse().expect("port"),
                _child: std::sync::Mutex::new(child),
            };
        }
        let server = std::env::var("SOMATIZE_MOTO_SERVER").unwrap_or_else(|_| {
            panic!(
                "SOMATIZE_MOTO_SERVER is not set: give the path of moto's server \
                 (pip install 'moto[server]'; scripts/test.sh sets it)"
            )
        });
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        // The shell stops moto when our end of its stdin closes: when this process exits,
        // however it exits.
        let child = Command::new("sh")
            .args([
                "-c",
                "\"$0\" -H 127.0.0.1 -p \"$1\" >/dev/null 2>&1 & m=$!; cat >/dev/null; kill $m",
                &server,
                &port.to_string(),
            ])
            .stdin(Stdio::piped())
            .spawn()
            .expect("start moto_server");
        let t0 = Instant::now();
        loop {
            if http(port, "PUT", &format!("/{BUCKET}")).is_some_and(|s| s.contains(" 200 ")) {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "moto_server at {server} did not answer on port {port}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        for (k, v) in [
            ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("SOMATIZE_TEST_MOTO_PORT", port.to_string()),
        ] {
            std::env::set_var(k, v);
        }
        Moto {
            port,
            _child: std::sync::Mutex::new(child),
        }
    })
}

/// One plain HTTP request to moto (bucket creation needs no signature there): the status line.
fn http(port: u16, method: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.lines().next().map(str::to_string)
}

/// A store URL of its own for each test.
fn url(name: &str) -> String {
    let _ = moto();
    format!("s3://{BUCKET}/{name}")
}

fn reader(url: &str) -> Store<ObjectFs> {
    Store::open(ObjectFs::open(url).unwrap()).unwrap()
}

/// Every forward of `run` in order, each blob fetched and checked (its CRC, tensor 0's values).
fn check_intact(store: &Store<ObjectFs>, run: &str, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    for item in store.scan(run).unwrap() {
        let item = item.unwrap_or_else(|e| panic!("run {run}: {e}"));
        let f = item.entry.forward;
        let blob = store
            .fetch(run, &item.writer, &item.entry)
            .unwrap_or_else(|e| panic!("run {run}, forward {f}: {e}"));
        if n > 0 {
            let t = blob.tensor("act.layer0").unwrap().expect("tensor kept");
            let len = t.shape[0];
            assert_eq!(t.data, TensorData::F32(values(f, 0, len)), "forward {f}");
        }
        out.push(f);
    }
    out
}

#[test]
fn a_run_reads_back_whole_through_the_store_reader() {
    let u = url("roundtrip");
    let mut r = Recorder::with_writer(&u, "tuesday", "rank0")
        .unwrap()
        .summarising(["loss"]);
    for f in 0..20 {
        r.record(&forward(f, 2, 300)).unwrap();
    }
    r.finish(&Default::default()).unwrap();
    drop(r);
    let store = reader(&u);
    assert_eq!(store.runs().unwrap(), vec!["tuesday".to_string()]);
    assert_eq!(store.writers("tuesday").unwrap(), vec!["rank0".to_string()]);
    assert_eq!(
        check_intact(&store, "tuesday", 300),
        (0..20).collect::<Vec<_>>()
    );
    assert!(store.exit("tuesday", "rank0").unwrap().is_some());
    // The manifest is not part of the tree a reader sees.
    let listed = store.fs().list("runs/tuesday/rank0").unwrap();
    assert!(!listed.iter().any(|n| n == "manifest.json"), "{listed:?}");
}

#[test]
fn a_second_writer_of_one_writer_id_takes_it_over_and_the_first_stops_clearly() {
    let u = url("race");
    let mut a = ObjectWriter::open(&u, "r", "w").unwrap();
    for f in 0..5 {
        a.append(&forward(f, 1, 64), Default::default()).unwrap();
    }
    a.flush().unwrap();
    // B opens the same writer: its conditional put replaces A's manifest.
    let mut b = ObjectWriter::open(&u, "r", "w").unwrap();
    assert_eq!(b.last_forward(), Some(4));
    // A's next manifest put loses its condition and A stops, saying why.
    a.append(&forward(5, 1, 64), Default::default()).unwrap();
    let e = a.flush().unwrap_err().to_string();
    assert!(e.contains("another process took this writer over"), "{e}");
    assert!(e.contains(&u), "the error names the store: {e}");
    a.abandon();
    for f in 5..9 {
        b.append(&forward(f, 1, 64), Default::default()).unwrap();
    }
    b.flush().unwrap();
    drop(b);
    // What A gathered after B took over is nowhere; B's forwards follow A's first five.
    assert_eq!(
        check_intact(&reader(&u), "r", 64),
        (0..9).collect::<Vec<_>>()
    );
}

#[test]
fn writers_racing_to_create_one_manifest_leave_one_owner() {
    let u = url("create-race");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let u = u.clone();
            std::thread::spawn(move || {
                // Each opens (creating the manifest, or taking it over) and writes forward 0;
                // a loser fails at its open or at its flush, saying why.
                let mut w = ObjectWriter::open(&u, "r", "w").map_err(|e| e.to_string())?;
                w.append(&forward(0, 1, 8), Default::default())
                    .map_err(|e| e.to_string())?;
                let got = w.flush().map_err(|e| e.to_string());
                w.abandon();
                got
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let won = results.iter().filter(|r| r.is_ok()).count();
    assert!(won >= 1, "{results:?}");
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        // Taken over while writing, or opened after forward 0 was stored by another.
        let clear =
            r.contains("another process took this writer over") || r.contains("is not after");
        assert!(clear, "{r}");
    }
    // Whoever won, the writer's record is forward 0 that reads, once.
    assert_eq!(check_intact(&reader(&u), "r", 8), vec![0]);
}

#[test]
fn a_large_segment_goes_by_multipart_upload() {
    let u = url("multipart");
    let mut w = ObjectWriter::open(&u, "r", "w").unwrap();
    // Two forwards of 3 × 3 MiB: the segment is over MULTIPART_FROM (16 MiB).
    let n = 3 << 18;
    for f in 0..2 {
        w.append(&forward(f, 3, n), Default::default()).unwrap();
    }
    let before = w.bucket().requests();
    w.flush().unwrap();
    let made = w.bucket().requests() - before;
    drop(w);
    let store = reader(&u);
    assert_eq!(check_intact(&store, "r", n), vec![0, 1]);
    // A multipart object's e-tag is `"<md5 of the parts' md5s>-<parts>"`.
    let packs = store.fs().list("runs/r/w/segments").unwrap();
    assert_eq!(packs.len(), 1, "{packs:?}");
    let head = http_head_etag(&format!("multipart/runs/r/w/segments/{}", packs[0]));
    assert!(
        head.contains("-3\""),
        "the pack is 3 parts of 8 MiB: {head}"
    );
    assert!(
        made >= 5,
        "begin, 3 parts, complete, index, manifest: {made}"
    );
}

/// The `ETag` header of an object of the test bucket (moto answers unsigned requests).
fn http_head_etag(key: &str) -> String {
    let port = moto().port;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "HEAD /{BUCKET}/{key} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.lines()
        .find(|l| l.to_ascii_lowercase().starts_with("etag:"))
        .unwrap_or_else(|| panic!("no etag for {key}: {out}"))
        .to_string()
}

#[test]
fn an_interrupted_upload_and_stray_segments_are_never_seen() {
    let u = url("interrupted");
    let mut w = ObjectWriter::open(&u, "r", "w").unwrap();
    for f in 0..3 {
        w.append(&forward(f, 1, 32), Default::default()).unwrap();
    }
    w.flush().unwrap();
    // Gathered, never put: the writer "dies" between segments.
    w.append(&forward(3, 1, 32), Default::default()).unwrap();
    w.abandon();
    // A multipart upload begun and never completed, and whole segment objects (a pack and
    // index lines naming it) that no manifest names: a writer killed between its puts.
    let b = Bucket::open(&u).unwrap();
    let mut junk = Vec::new();
    for f in 3..6u64 {
        junk.extend_from_slice(
            format!(
                "{{\"forward\":{f},\"written_us\":1,\"blob\":\"segments/000009-dead.pack\",\"offset\":0,\"len\":4,\"crc32\":0}}\n"
            )
            .as_bytes(),
        );
    }
    b.put("runs/r/w/segments/000009-dead.jsonl", junk.into())
        .unwrap();
    b.put("runs/r/w/segments/000009-dead.pack", vec![0u8; 4].into())
        .unwrap();
    begin_an_upload_and_leave_it(&u, "runs/r/w/segments/000010-dead.pack");
    let store = reader(&u);
    assert_eq!(check_intact(&store, "r", 32), vec![0, 1, 2]);
    let packs = store.fs().list("runs/r/w/segments").unwrap();
    assert!(!packs.iter().any(|p| p.contains("dead")), "{packs:?}");
    // A writer reopened continues after the last forward stored, not the one gathered.
    let w = ObjectWriter::open(&u, "r", "w").unwrap();
    assert_eq!(w.last_forward(), Some(2));
}

/// Begin a multipart upload of `key` through the crate and put one part, never completing it.
fn begin_an_upload_and_leave_it(store_url: &str, key: &str) {
    use object_store::{ObjectStoreExt, PutPayload};
    let (_, prefix) = store_url.split_at(format!("s3://{BUCKET}/").len());
    let s3 = object_store::aws::AmazonS3Builder::from_env()
        .with_url(format!("s3://{BUCKET}"))
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let path = object_store::path::Path::from(format!("{prefix}/{key}"));
        let mut up = s3.put_multipart(&path).await.unwrap();
        up.put_part(PutPayload::from(vec![7u8; 5 << 20]))
            .await
            .unwrap();
        // Dropped here: neither completed nor aborted, as when a process is killed.
    });
}

#[test]
fn a_killed_writer_reads_up_to_its_last_segment() {
    let u = url("killed");
    let port = moto().port;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "child_role", "--nocapture"])
        .env(ROLE, "writer")
        .env("STORE", &u)
        .env("SOMATIZE_TEST_MOTO_PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Let it put a few segments (one every 200 ms), then kill -9 it mid-write.
    let store_fs = ObjectFs::open(&u).unwrap();
    let t0 = Instant::now();
    loop {
        let n = store_fs.read("runs/k/w/index.jsonl").map_or(0, |b| b.len());
        if n > 0 && t0.elapsed() > Duration::from_millis(1500) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the child wrote nothing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let store = reader(&u);
    let got = check_intact(&store, "k", 1);
    assert!(!got.is_empty());
    assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>());
    // Reopened, the writer continues after the last forward a manifest named.
    let w = ObjectWriter::open(&u, "k", "w").unwrap();
    assert_eq!(w.last_forward(), got.last().copied());
}

/// The body of the child process of the killed-writer test. Not a test on its own.
#[test]
#[ignore]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    assert_eq!(role, "writer");
    let u = std::env::var("STORE").unwrap();
    let mut w = ObjectWriter::open(&u, "k", "w").unwrap();
    w.set_segment(usize::MAX, Duration::from_millis(200));
    let mut rng = Rng(5);
    for f in 0.. {
        let n = 1 + rng.below(4096) as usize;
        w.append(&forward(f, 1, n), Default::default()).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn two_writers_of_one_run_read_together() {
    let u = url("two-writers");
    let threads: Vec<_> = (0..2)
        .map(|rank| {
            let u = u.clone();
            std::thread::spawn(move || {
                let mut r = Recorder::with_writer(&u, "r", &format!("rank{rank}"))
                    .unwrap()
                    .summarising(["loss"]);
                for f in 0..30 {
                    r.record(&forward(f, 1, 16)).unwrap();
                }
                r.finish(&Default::default()).unwrap();
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let store = reader(&u);
    assert_eq!(
        store.writers("r").unwrap(),
        vec!["rank0".to_string(), "rank1".into()]
    );
    let got = check_intact(&store, "r", 16);
    assert_eq!(got.len(), 60);
    assert!(got.windows(2).all(|p| p[0] <= p[1]), "merged in order");
}

#[test]
fn a_reader_during_writing_sees_a_growing_prefix_that_always_reads() {
    let u = url("live");
    let u2 = u.clone();
    let writer = std::thread::spawn(move || {
        let mut w = ObjectWriter::open(&u2, "r", "w").unwrap();
        w.set_segment(usize::MAX, Duration::from_millis(50));
        for f in 0..300 {
            w.append(&forward(f, 1, 128), Default::default()).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        w.flush().unwrap();
    });
    let (mut seen, mut reads) = (0, 0);
    while !writer.is_finished() {
        // Until the writer has made the store and its manifest, there is no run yet.
        let Ok(store) = Store::open(ObjectFs::open(&u).unwrap()) else {
            continue;
        };
        if store.runs().unwrap().contains(&"r".to_string()) {
            let got = check_intact(&store, "r", 128);
            assert_eq!(got, (0..got.len() as u64).collect::<Vec<_>>());
            assert!(got.len() >= seen, "the prefix never shrinks");
            seen = got.len();
            reads += 1;
        }
    }
    writer.join().unwrap();
    assert_eq!(check_intact(&reader(&u), "r", 128).len(), 300);
    assert!(
        reads >= 2,
        "the reader read while the writer wrote: {reads}"
    );
}

#[test]
fn the_cli_reads_imports_and_exports_over_s3() {
    let u = url("cli");
    let mut r = Recorder::with_writer(&u, "tuesday", "w")
        .unwrap()
        .summarising(["loss"]);
    for f in 0..12 {
        r.record(&forward(f, 1, 64)).unwrap();
    }
    r.finish(&Default::default()).unwrap();
    drop(r);
    let (code, out, err) = somatize(&["runs", &u]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tuesday"), "{out}");
    let (code, out, err) = somatize(&["curve", &u, "--json"]);
    assert_eq!(code, 0, "{err}");
    let curve: Vec<(u64, f64)> = serde_json::from_str(&out).unwrap();
    assert_eq!(curve.len(), 12, "{out}");
    assert_eq!(curve[3], (3, 0.25));
    let (code, _, err) = somatize(&["diagnose", &u, "--run", "tuesday"]);
    assert!(code == 0 || code == 1, "{err}");
    let dir = common::temp_dir("objstore-export");
    let zip = dir.join("snap.zip");
    let (code, _, err) = somatize(&["export", &u, "-o", zip.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = somatize(&["forwards", zip.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().count() >= 12, "{out}");
    // A URL with credentials in it is refused, and says nothing of them.
    let (code, _, err) = somatize(&["runs", "s3://AKIAEXAMPLE:sekrit@somatize-test/cli"]);
    assert_ne!(code, 0);
    assert!(!err.contains("sekrit"), "{err}");
}

#[test]
fn a_long_index_stays_a_few_objects_and_merged_ones_are_deleted() {
    let u = url("merge");
    let mut w = ObjectWriter::open(&u, "r", "w").unwrap();
    w.set_segment(usize::MAX, Duration::from_secs(3600));
    for f in 0..45 {
        w.append(&forward(f, 0, 0), Default::default()).unwrap();
        w.flush().unwrap();
    }
    drop(w);
    // 45 segments = 32 + 8 + 4 + 1: the manifest names 4 index objects.
    let b = Bucket::open(&u).unwrap();
    let m: serde_json::Value =
        serde_json::from_slice(&b.get("runs/r/w/manifest.json").unwrap()).unwrap();
    let index = m["index"].as_array().unwrap();
    let segs: Vec<u64> = index
        .iter()
        .map(|p| p["segments"].as_u64().unwrap())
        .collect();
    assert_eq!(segs, vec![32, 8, 4, 1]);
    // What was merged away is deleted a manifest later: only those the last put retired remain.
    let (_, files) = b.list_dir("runs/r/w/segments").unwrap();
    let lines = files.iter().filter(|f| f.ends_with(".jsonl")).count();
    let retired = m["retired"].as_array().unwrap().len();
    assert_eq!(lines, index.len() + retired, "{files:?}");
    assert_eq!(
        check_intact(&reader(&u), "r", 0),
        (0..45).collect::<Vec<_>>()
    );
}

/// A plain GET of `url` (an http://127.0.0.1 link, as a browser would send it): status and body.
fn get(url: &str) -> (u16, Vec<u8>) {
    let u = url::Url::parse(url).unwrap();
    let mut s = std::net::TcpStream::connect((u.host_str().unwrap(), u.port().unwrap())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let target = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    };
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\n\r\n",
        u.host_str().unwrap(),
        u.port().unwrap()
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let head_end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&out[..head_end]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, out[head_end + 4..].to_vec())
}

#[test]
fn a_share_links_every_file_of_its_runs_and_the_parts_make_the_file() {
    use somatize::store::share::{Share, SHARE_FORMAT};
    let u = url("share");
    // Eleven segments: the index is three objects (8 + 2 + 1), each with a link of its own.
    let mut w = ObjectWriter::open(&u, "r", "w").unwrap();
    w.set_segment(usize::MAX, Duration::from_secs(3600));
    for f in 0..11 {
        w.append(&forward(f, 1, 32), Default::default()).unwrap();
        w.flush().unwrap();
    }
    drop(w);
    let mut other = Recorder::with_writer(&u, "other", "w").unwrap();
    other.record(&forward(0, 1, 8)).unwrap();
    other.finish(&Default::default()).unwrap();
    drop(other);

    let dir = common::temp_dir("objstore-share");
    let file = dir.join("share.json");
    let (code, out, err) = somatize(&["share", &u, "--run", "r", "-o", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "the document went to the file: {out}");
    assert!(err.contains("1 runs"), "{err}");
    let doc: Share = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(doc.format, SHARE_FORMAT);
    assert_eq!(doc.store, u);
    assert!(
        doc.expires_s.unwrap() > doc.created_s + 86000,
        "a day by default"
    );
    let store = reader(&u);
    let fs = store.fs();
    let mut paths: Vec<&str> = doc.files.keys().map(String::as_str).collect();
    paths.sort();
    let packs = fs.list("runs/r/w/segments").unwrap();
    let mut want = vec![
        "runs/r/w/index.jsonl".to_string(),
        "somatize-store.json".into(),
    ];
    want.extend(packs.iter().map(|p| format!("runs/r/w/segments/{p}")));
    want.sort();
    assert_eq!(
        paths, want,
        "the format file and every file of run r, nothing of run other"
    );
    assert_eq!(doc.files["runs/r/w/index.jsonl"].parts.len(), 3);
    for (path, f) in &doc.files {
        let mut bytes = Vec::new();
        for p in &f.parts {
            assert!(p.url.contains("X-Amz-Signature="), "presigned: {}", p.url);
            let (status, body) = get(&p.url);
            assert_eq!(status, 200, "{path}: {}", p.url);
            assert_eq!(body.len() as u64, p.len, "{path}");
            bytes.extend(body);
        }
        assert_eq!(
            bytes,
            fs.read(path).unwrap(),
            "{path}: the parts make the file"
        );
        assert_eq!(f.len, bytes.len() as u64);
    }

    // --put: the document goes into the store, and one link reads it.
    let (code, out, err) = somatize(&["share", &u, "--runs", "o*", "--put", "--expires", "2h"]);
    assert_eq!(code, 0, "{err}");
    let (status, body) = get(out.trim());
    assert_eq!(status, 200, "{out}");
    let put: Share = serde_json::from_slice(&body).unwrap();
    assert!(
        put.files.keys().any(|k| k.starts_with("runs/other/")),
        "{:?}",
        put.files.keys()
    );
    assert!(!put.files.keys().any(|k| k.starts_with("runs/r/")));
    assert!(put.expires_s.unwrap() <= put.created_s + 7200);

    // --public-url: plain links under the public root, without signatures or expiry. The prefix
    // is made public-read as on S3, by a bucket policy (moto refuses anonymous reads without).
    let port = moto().port;
    let base = format!("http://127.0.0.1:{port}/{BUCKET}/share");
    assert_eq!(
        get(&format!("{base}/somatize-store.json")).0,
        403,
        "private until the policy"
    );
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::{BUCKET}/share/*"}}]}}"#
    );
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        c,
        "PUT /{BUCKET}?policy HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{policy}",
        policy.len()
    )
    .unwrap();
    let mut answer = String::new();
    c.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 20"), "{answer}");
    let (code, out, err) = somatize(&["share", &u, "--run", "r", "--public-url", &base]);
    assert_eq!(code, 0, "{err}");
    let public: Share = serde_json::from_str(&out).unwrap();
    assert_eq!(public.expires_s, None);
    let part = &public.files["somatize-store.json"].parts[0];
    assert_eq!(part.url, format!("{base}/somatize-store.json"));
    assert_eq!(get(&part.url).1, fs.read("somatize-store.json").unwrap());

    // What cannot be shared says why.
    let table: [(&[&str], &str); 3] = [
        (&["share", &u, "--expires", "8d"], "from 1 s to 7 days"),
        (&["share", &u, "--run", "nope"], "no run \"nope\""),
        (
            &["share", dir.to_str().unwrap()],
            "share takes a store on object storage",
        ),
    ];
    for (args, said) in table {
        let (code, out, err) = somatize(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(err.contains(said), "{args:?}: got {err:?}, wanted {said:?}");
        assert!(out.is_empty(), "{args:?}: nothing on stdout: {out}");
    }
}

#[test]
fn the_demo_records_into_s3_and_reads_its_verdicts_back_and_never_overwrites() {
    let u = url("demo");
    let (code, out, err) = somatize(&["demo", "--store", &u, "--steps", "30"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("run vanishing: 30 forwards read"), "{out}");
    let (code, out, err) = somatize(&["demo", "--store", &u, "--steps", "30"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("is already there") && err.contains("new prefix"),
        "{err}"
    );
}

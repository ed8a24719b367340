//! `somatize report` run as the built binary: the file is written, self-contained (no URL to
//! fetch, every script allowed by its hash), holds the run's snapshot, and fails by name for a
//! missing run, a missing store and unbuilt assets.
//!
//! The assets are a stand-in folder (`common::report_assets`): the real page and package sources
//! with small stand-ins for what `scripts/build-wasm.sh` builds, so this test needs no wasm build.

use crate::common;

use common::report_assets::assets;
use common::temp_dir;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn somatize(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_somatize"))
        .args(args)
        .env_remove("SOMATIZE_ASSETS")
        .output()
        .expect("run somatize")
}

/// A store with run `healthy` (the demo network, 20 steps, recorded at 0, 10, 19) and
/// `stalled` (5 steps), written once for every test here (only read after that).
fn store() -> PathBuf {
    static STORE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    STORE
        .get_or_init(|| {
            let store = temp_dir("report-store").join("store");
            let healthy = somatize::demo::condition("healthy").unwrap();
            let stalled = somatize::demo::condition("stalled").unwrap();
            somatize::record::demo::record_condition(&store, healthy, 20, 10).unwrap();
            somatize::record::demo::record_condition(&store, stalled, 5, 5).unwrap();
            store
        })
        .clone()
}

fn report(store: &Path, assets: &Path, extra: &[&str]) -> (Output, PathBuf) {
    let out = temp_dir("report-out").join("report.html");
    let mut args = vec![
        "report",
        store.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--assets",
        assets.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    (somatize(&args), out)
}

/// The text of the element `<script …id="ID">…</script>`.
fn block<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!("id=\"{id}\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no #{id}")) + open.len();
    let len = html[start..].find("</script>").unwrap();
    &html[start..start + len]
}

fn unbase64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let clean: Vec<u8> = text.bytes().filter(|b| *b != b'=').collect();
    let mut out = Vec::new();
    for chunk in clean.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, c)| n | (u32::from(value(*c)) << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

fn hash(bytes: &[u8]) -> String {
    format!(
        "sha256-{}",
        somatize::report::encode::base64(&Sha256::digest(bytes))
    )
}

/// Every value of attribute `name` in `html`.
fn attribute_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!(" {name}=\"");
    html.match_indices(&key)
        .map(|(i, _)| {
            let v = &html[i + key.len()..];
            &v[..v.find('"').unwrap()]
        })
        .collect()
}

#[test]
fn a_report_is_self_contained_and_holds_the_runs_snapshot() {
    let (store, assets) = (store(), assets());
    let (out, path) = report(&store, &assets, &["--run", "healthy"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(html.starts_with("<!doctype html>"));

    // Nothing is fetched: no src or href names a URL, and the CSP allows no origin.
    for name in ["src", "href"] {
        for v in attribute_values(&html, name) {
            assert!(
                v.starts_with('#') || v.starts_with("data:"),
                "{name}={v:?} would be fetched"
            );
        }
    }
    let csp = attribute_values(&html, "content")
        .into_iter()
        .find(|c| c.starts_with("default-src"))
        .expect("a CSP meta");
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    for word in [
        "http",
        "'self'",
        "*",
        "'unsafe-inline'",
        "'unsafe-eval'",
        " data: 'wasm",
    ] {
        assert!(!csp.contains(word), "the CSP allows {word}: {csp}");
    }
    assert!(csp.contains("connect-src 'none'"), "{csp}");
    for (directive, extra) in [("script-src", "'wasm-unsafe-eval'"), ("style-src", "")] {
        let sources = csp
            .split(';')
            .map(str::trim)
            .find(|d| d.starts_with(directive))
            .unwrap_or_else(|| panic!("no {directive} in {csp}"));
        for token in sources.split_whitespace().skip(1) {
            assert!(
                token.starts_with("'sha256-") || token == extra,
                "{directive} allows {token}, not a hash"
            );
        }
    }

    // Every inline script and style is allowed by its hash; every module by its integrity.
    let inline = |tag: &str| -> Vec<String> {
        let open = format!("<{tag}");
        let mut out = Vec::new();
        for (i, _) in html.match_indices(&open) {
            let gt = i + html[i..].find('>').unwrap();
            if html[i..gt].contains("type=\"application/") {
                continue; // data blocks are never run
            }
            let close = format!("</{tag}>");
            let end = gt + html[gt..].find(&close).unwrap();
            out.push(html[gt + 1..end].to_string());
        }
        out
    };
    let scripts = inline("script");
    assert!(
        scripts.len() >= 4,
        "plotly-csp, plotly, import map, boot: {}",
        scripts.len()
    );
    for s in scripts.iter().chain(inline("style").iter()) {
        assert!(
            csp.contains(&hash(s.as_bytes())),
            "an inline element not in the CSP: {:.80}",
            s
        );
    }
    let start = html.find("<script type=\"importmap\">").unwrap() + 25;
    let end = start + html[start..].find("</script>").unwrap();
    let map: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    let imports = map["imports"].as_object().unwrap();
    for key in [
        "somatize/www/app.js",
        "somatize/www/store-page.js",
        "somatize/pkg/report.js",
        "somatize/pkg/api.js",
        "somatize/pkg/wasm/somatize.js",
    ] {
        assert!(imports.contains_key(key), "the import map lacks {key}");
    }
    assert!(
        !imports.contains_key("somatize/pkg/browser.js"),
        "the report replaces the worker entry"
    );
    for (key, url) in imports {
        let url = url.as_str().unwrap();
        let source = unbase64(url.strip_prefix("data:text/javascript;base64,").unwrap());
        let text = String::from_utf8(source.clone()).unwrap();
        assert!(
            !text.contains("from \"./") && !text.contains("from \"../"),
            "{key} kept a relative import"
        );
        let want = hash(&source);
        assert_eq!(
            map["integrity"][url].as_str(),
            Some(want.as_str()),
            "integrity of {key}"
        );
        assert!(csp.contains(&want), "{key} is not allowed by the CSP");
    }

    // The snapshot is the one `somatize export` writes for that run, and the run is named.
    let embedded = unbase64(block(&html, "somatize-snapshot").trim());
    let zip = path.with_file_name("export.zip");
    let exported = somatize(&[
        "export",
        store.to_str().unwrap(),
        "--run",
        "healthy",
        "-o",
        zip.to_str().unwrap(),
    ]);
    assert!(exported.status.success());
    assert_eq!(
        embedded,
        std::fs::read(&zip).unwrap(),
        "the embedded snapshot is the export"
    );
    let about: serde_json::Value = serde_json::from_str(block(&html, "somatize-report")).unwrap();
    assert_eq!(about["run"], "healthy");
    assert_eq!(
        about["forwards"], 20,
        "a forward per step; activations at 0, 10 and 19"
    );
    let wasm = unbase64(block(&html, "somatize-wasm").trim());
    assert_eq!(
        wasm,
        std::fs::read(assets.join("pkg/wasm/somatize_bg.wasm")).unwrap()
    );
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "report.html" && n != "export.zip")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn last_n_keeps_only_the_last_forwards() {
    let (store, assets) = (store(), assets());
    let (out, path) = report(&store, &assets, &["--run", "healthy", "--last", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&path).unwrap();
    let about: serde_json::Value = serde_json::from_str(block(&html, "somatize-report")).unwrap();
    assert_eq!(
        (about["forwards"].as_u64(), about["last"].as_u64()),
        (Some(1), Some(1))
    );
}

#[test]
fn failures_name_what_is_wrong_and_write_nothing() {
    let (store, good) = (store(), assets());
    let no_wasm = assets();
    std::fs::remove_file(no_wasm.join("pkg/wasm/somatize_bg.wasm")).unwrap();
    let no_plotly = assets();
    std::fs::remove_file(no_plotly.join("www/vendor/plotly.min.js")).unwrap();
    let no_css = assets();
    std::fs::remove_file(no_css.join("www/vendor/plotly.css")).unwrap();
    let missing = store.with_file_name("no-such-store");
    let cases: [(&Path, &Path, &str, &[&str]); 5] = [
        (
            &store,
            &good,
            "nope",
            &["no run \"nope\"", "healthy, stalled"],
        ),
        (
            &store,
            &no_wasm,
            "healthy",
            &[
                "pkg/wasm/somatize_bg.wasm is missing",
                "scripts/build-wasm.sh",
            ],
        ),
        (
            &store,
            &no_plotly,
            "healthy",
            &[
                "www/vendor/plotly.min.js is missing",
                "scripts/build-wasm.sh",
            ],
        ),
        (
            &store,
            &no_css,
            "healthy",
            &["www/vendor/plotly.css is missing", "scripts/build-wasm.sh"],
        ),
        (
            &missing,
            &good,
            "healthy",
            &["no-such-store", "no such store"],
        ),
    ];
    for (store, assets, run, want) in cases {
        let (out, path) = report(store, assets, &["--run", run]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "run {run}: {err}");
        for w in want {
            assert!(
                err.contains(w),
                "run {run}: got {err:?}, wanted it to contain {w:?}"
            );
        }
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .collect();
        assert!(left.is_empty(), "run {run}: a failed report left {left:?}");
    }
}

#[test]
fn a_hostile_run_name_is_text_in_the_title_and_data() {
    const HOSTILE: &str = "<img src=x onerror=alert(1)>&\"'";
    let store = temp_dir("report-hostile").join("store");
    let mut rec = somatize::record::Recorder::with_writer(&store, HOSTILE, "w").unwrap();
    let fwd = somatize::store::ForwardRecord {
        forward: 0,
        facts: vec![somatize::store::Fact::loss(0.5)],
        ..Default::default()
    };
    rec.record(&fwd).unwrap();
    drop(rec);
    let (out, path) = report(&store, &assets(), &["--run", HOSTILE]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(!html.contains("<img"), "the name made a tag");
    assert!(html.contains(
        "<title>somatize report: &lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;</title>"
    ));
    let about: serde_json::Value = serde_json::from_str(block(&html, "somatize-report")).unwrap();
    assert_eq!(
        about["run"], HOSTILE,
        "the JSON block gives the name back exactly"
    );
}

#[test]
fn runs_glob_puts_every_matching_run_in_one_file() {
    let (store, assets) = (store(), assets());
    let (out, path) = report(&store, &assets, &["--runs", "*l*"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&path).unwrap();
    let about: serde_json::Value = serde_json::from_str(block(&html, "somatize-report")).unwrap();
    // The run shown is the latest written of those matched; the title says how many more.
    assert_eq!(about["run"], "stalled and 1 more runs");
    let snapshot = unbase64(block(&html, "somatize-snapshot").trim());
    let zip = path.with_file_name("runs.zip");
    std::fs::write(&zip, snapshot).unwrap();
    let opened = somatize::store::Store::open(somatize::store::ZipFs::open(&zip).unwrap()).unwrap();
    assert_eq!(opened.runs().unwrap(), ["healthy", "stalled"]);
    let (out, _) = report(&store, &assets, &["--runs", "nothing*"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run matches \"nothing*\""));
    let (out, _) = report(&store, &assets, &[]);
    assert!(!out.status.success(), "--run or --runs is needed");
}

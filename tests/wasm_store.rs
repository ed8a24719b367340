//! wasm-bindgen tests: `StoreHandle` over JS sources (files with and without `list`, a snapshot's
//! bytes) gives the same answers; JS failures and bad stores are JS errors with the core's message.
//! The store is built here in memory with the crate's own blob and zip writers.
#![cfg(target_arch = "wasm32")]

use somatize::store::blob::{self, ForwardMeta};
use somatize::store::zipfile::ZipWriter;
use somatize::store::{Fact, ForwardRecord};
use somatize::wasm::StoreHandle;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

/// A store of run `r`, writer `w0`: three forwards (one with a blob), one unreadable line.
fn files(format_version: &str) -> Vec<(String, Vec<u8>)> {
    let meta = ForwardMeta {
        run: "r".into(),
        writer: "w0".into(),
        forward: 1,
        written_us: 11,
        took_us: 5,
        broke: false,
        error: None,
        fields: Default::default(),
        tensors: vec![],
    };
    let rec = ForwardRecord {
        forward: 1,
        facts: vec![Fact::new("fc1", "Linear")],
        ..Default::default()
    };
    let (blob, len, crc) = blob::write(Vec::new(), &meta, &rec).unwrap();
    let index = format!(
        "{{\"forward\":0,\"written_us\":10,\"took_us\":1,\"broke\":false}}\n\
         not json\n\
         {{\"forward\":1,\"written_us\":11,\"took_us\":5,\"broke\":false,\"fields\":{{\"loss.value\":0.5}},\"blob\":\"blobs/000000000001.npz\",\"len\":{len},\"crc32\":{crc}}}\n\
         {{\"forward\":2,\"written_us\":12,\"took_us\":1,\"broke\":true,\"error\":\"killed\"}}\n"
    );
    vec![
        (
            "somatize-store.json".into(),
            format!("{{\"format\":\"somatize-store\",\"version\":\"{format_version}\"}}")
                .into_bytes(),
        ),
        (
            "listing.jsonl".into(),
            b"{\"run\":\"r\",\"writer\":\"w0\"}\n".to_vec(),
        ),
        ("runs/r/w0/index.jsonl".into(), index.into_bytes()),
        ("runs/r/w0/blobs/000000000001.npz".into(), blob),
    ]
}

/// A JS source over the files: `list` only when `listable`; `failing` makes every read throw.
fn js_source(files: &[(String, Vec<u8>)], listable: bool, failing: bool) -> JsValue {
    let map = js_sys::Map::new();
    for (path, bytes) in files {
        map.set(
            &JsValue::from_str(path),
            &js_sys::Uint8Array::from(&bytes[..]),
        );
    }
    let make = js_sys::Function::new_with_args(
        "files, listable, failing",
        r#"
        const src = {
          read: (p) => { if (failing) throw new Error("disk on fire"); return files.get(p) ?? null; },
          readRange: (p, o, n) => { const b = files.get(p); return b ? b.subarray(o, o + n) : null; },
          size: (p) => files.get(p)?.length ?? null,
        };
        if (listable) src.list = (dir) => {
          const prefix = dir === "" ? "" : dir + "/";
          const out = new Set();
          for (const k of files.keys()) if (k.startsWith(prefix)) out.add(k.slice(prefix.length).split("/")[0]);
          return out.size || dir === "" ? [...out] : null;
        };
        return src;"#,
    );
    make.call3(
        &JsValue::NULL,
        &map,
        &JsValue::from_bool(listable),
        &JsValue::from_bool(failing),
    )
    .unwrap()
}

fn snapshot(files: &[(String, Vec<u8>)]) -> JsValue {
    let mut z = ZipWriter::new(Vec::new());
    for (path, bytes) in files {
        z.add(path, &[bytes]).unwrap();
    }
    let (zip, _, _) = z.finish().unwrap();
    js_sys::Uint8Array::from(&zip[..]).into()
}

fn opts(json: &str) -> JsValue {
    js_sys::JSON::parse(json).unwrap()
}

fn message(e: impl Into<JsValue>) -> String {
    let e: JsValue = e.into();
    String::from(e.unchecked_into::<js_sys::Error>().message())
}

/// The stable `code` a JS error carries (src/wasm/errors.rs), or "" for none.
fn code(e: &JsValue) -> String {
    js_sys::Reflect::get(e, &"code".into())
        .ok()
        .and_then(|c| c.as_string())
        .unwrap_or_default()
}

/// The answers compared across sources, as JSON text.
fn answers(h: &StoreHandle) -> String {
    let calls = [
        ("format", "{}"),
        ("listRuns", "{}"),
        ("writers", r#"{"run":"r"}"#),
        ("scan", r#"{"run":"r"}"#),
        ("scan", r#"{"run":"r","last":1}"#),
        ("fetch", r#"{"run":"r","forward":1}"#),
    ];
    let out: Vec<String> = calls
        .iter()
        .map(|(name, o)| {
            let v = h.call(name, opts(o)).map_err(message).unwrap();
            String::from(js_sys::JSON::stringify(&v).unwrap())
        })
        .collect();
    out.join("\n")
}

#[wasm_bindgen_test]
fn every_source_gives_the_same_answers() {
    let f = files("1.1");
    let listed = answers(&StoreHandle::open_files(js_source(&f, true, false), "listed").unwrap());
    let unlisted =
        answers(&StoreHandle::open_files(js_source(&f, false, false), "unlisted").unwrap());
    let zipped = answers(&StoreHandle::open_snapshot(snapshot(&f), "snap.zip").unwrap());
    assert_eq!(unlisted, listed, "through listing.jsonl vs list()");
    assert_eq!(zipped, listed, "snapshot vs files");
    for want in [
        r#"["r"]"#,
        r#""bad":["run \"r\", writer \"w0\": index line 2 unreadable"#,
        r#""error":"killed""#,
        r#""facts":[{"node":"fc1","kind":"Linear""#,
    ] {
        assert!(listed.contains(want), "answers lack {want}:\n{listed}");
    }
}

#[wasm_bindgen_test]
fn failures_are_js_errors_with_the_core_message() {
    let newer = StoreHandle::open_files(js_source(&files("3.0"), true, false), "new").err();
    let newer = newer.expect("a newer major is refused");
    assert_eq!(code(&newer), "NEWER_FORMAT");
    let m = message(newer);
    assert!(m.contains("newer than this reader knows"), "{m}");
    let failing = StoreHandle::open_files(js_source(&files("1.1"), true, true), "hot").err();
    let failing = failing.expect("a throwing source fails");
    assert_eq!(code(&failing), "IO");
    let file = js_sys::Reflect::get(&failing, &"file".into()).unwrap();
    assert_eq!(file.as_string().as_deref(), Some("somatize-store.json"));
    let m = message(failing);
    assert_eq!(m, "hot: somatize-store.json: could not read: disk on fire");
    let h = StoreHandle::open_files(js_source(&files("1.1"), true, false), "s").unwrap();
    for (name, o, want, want_code) in [
        (
            "nope",
            "{}",
            "no store function \"nope\"",
            "NO_SUCH_FUNCTION",
        ),
        (
            "scan",
            r#"{"run":"r","lsat":1}"#,
            "unknown field `lsat`",
            "UNKNOWN_OPTION",
        ),
        (
            "fetch",
            r#"{"run":"r","forward":7}"#,
            "run \"r\" has no forward 7",
            "NO_SUCH_FORWARD",
        ),
        ("writers", r#"{"run":"../x"}"#, "refused", "BAD_NAME"),
    ] {
        let e = h.call(name, opts(o)).expect_err("refused");
        assert_eq!(code(&e), want_code, "{name} {o}");
        let m = message(e);
        assert!(m.contains(want), "{name} {o}: {m:?} lacks {want:?}");
    }
    let bad = StoreHandle::open_files(opts(r#"{"read": 1}"#), "x").err();
    assert!(message(bad.expect("no methods")).contains("needs a read method"));
}

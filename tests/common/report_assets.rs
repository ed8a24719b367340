//! A stand-in asset folder for `somatize report`: the real page (`www/`) and package sources
//! (`pkg/*.js`) of this repository, with small stand-ins for what `scripts/build-wasm.sh` builds
//! (the wasm, its glue and the vendored plotly), so native tests need no wasm build.

use super::temp_dir;
use std::path::{Path, PathBuf};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn copy_dir(from: &Path, to: &Path, ext: &str) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_file() && p.extension().is_some_and(|x| x == ext) {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// A fresh stand-in asset folder (described in the header).
pub fn assets() -> PathBuf {
    let dir = temp_dir("report-assets");
    let repo = Path::new(REPO);
    for ext in ["js", "html", "css"] {
        copy_dir(&repo.join("www"), &dir.join("www"), ext);
    }
    copy_dir(&repo.join("pkg"), &dir.join("pkg"), "js");
    let files: [(&str, &[u8]); 5] = [
        ("pkg/wasm/somatize_bg.wasm", b"\0asm\x01\0\0\0"),
        (
            "pkg/wasm/somatize.js",
            b"// stand-in glue\nexport default async function init() {}\nexport const version = () => \"0\";\n",
        ),
        ("www/vendor/plotly.min.js", b"/* stand-in plotly */ window.Plotly = {};\n"),
        ("www/vendor/plotly.css", b".js-plotly-plot { position: relative; }\n"),
        ("www/vendor/plotly-csp.js", b"/* stand-in */\n"),
    ];
    for (rel, bytes) in files {
        std::fs::create_dir_all(dir.join(rel).parent().unwrap()).unwrap();
        std::fs::write(dir.join(rel), bytes).unwrap();
    }
    dir
}

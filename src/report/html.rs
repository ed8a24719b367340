//! Writing the report's HTML: the page's head with every asset inlined and hashed, its body,
//! and the data blocks (what the report is about, the wasm, the snapshot) in base64.

use super::encode::{base64, base64_stream, html_escape, json_for_script, sha256_source};
use super::modules::{key_of, Linker};
use super::page::{HeadItem, Page};
use super::ReportError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The page's folder and entry under the assets.
const PAGE: &str = "www/index.html";
/// The package entry the page imports, and the report's own entry used in its place.
const PKG_ENTRY: &str = "pkg/browser.js";
const REPORT_ENTRY: &str = "pkg/report.js";
/// The wasm the report embeds.
const WASM: &str = "pkg/wasm/somatize_bg.wasm";
/// The page's plotly.js, and the widget's own (only the trace types the figures draw; built by
/// scripts/build-widget-plotly.mjs).
const PLOTLY: &str = "vendor/plotly.min.js";
const WIDGET_PLOTLY: &str = "vendor/plotly-widget.min.js";

/// The report's boot module: opens the embedded snapshot in the page (keys of [`key_of`]).
const BOOT: &str = include_str!("boot.js");
/// The package entry of a report (see its header for why it runs on the main thread).
const ENTRY: &str = include_str!("entry.js");
/// A report shows its own run: the page's pickers are hidden (dropping a file still works).
const REPORT_CSS: &str = "#drop, #open-title { display: none; }\n";
/// The notebook widget's boot module: talks to the widget's module in the parent window.
const WIDGET_BOOT: &str = include_str!("widget-boot.js");
/// The package entry of the notebook widget: a store's bytes come from the kernel.
const WIDGET_ENTRY: &str = include_str!("widget-entry.js");
/// The notebook widget's first script: asks the parent for the wasm and compiles it early.
const WIDGET_WASM: &str = include_str!("widget-wasm.js");
/// The notebook widget's plotly loader: runs plotly's text (kept, not run, in the page) from a
/// blob: URL, compiled off the frame's main thread.
const WIDGET_PLOTLY_LOADER: &str = include_str!("widget-plotly.js");
/// The widget shows the store its kernel reads: no pickers, no drop zone, no spec box; in a
/// narrow cell the thresholds go under the verdict rather than beside it.
const WIDGET_CSS: &str = "#drop, #open-title, header, .skip, section[aria-labelledby=\"spec-title\"] { display: none; }\nbody[data-mode=\"live\"] main > section { display: none; }\n@media (max-width: 1100px) { .verdict-layout { grid-template-columns: minmax(0, 1fr); } }\n";

/// What the page is inlined for: a report of one run, or the notebook widget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// `somatize report`: a run's snapshot embedded.
    Report,
    /// `somatize.show`: the store's bytes asked of the kernel.
    Widget,
}

impl Flavour {
    fn entry(self) -> &'static str {
        match self {
            Flavour::Report => ENTRY,
            Flavour::Widget => WIDGET_ENTRY,
        }
    }
    fn boot(self) -> &'static str {
        match self {
            Flavour::Report => BOOT,
            Flavour::Widget => WIDGET_BOOT,
        }
    }
    fn css(self) -> &'static str {
        match self {
            Flavour::Report => REPORT_CSS,
            Flavour::Widget => WIDGET_CSS,
        }
    }
    /// The script the page links at `src`, or the one this flavour uses in its place.
    fn script(self, src: &str) -> &str {
        match self {
            Flavour::Widget if src == PLOTLY => WIDGET_PLOTLY,
            _ => src,
        }
    }
}

/// The head of a report, ready to write, with the hashes its CSP allows.
pub struct Head {
    /// Elements after the CSP and title, in the page's order.
    elements: Vec<String>,
    script_hashes: Vec<String>,
    style_hashes: Vec<String>,
    /// The page's `<body…>` up to `</body>`.
    body: String,
    /// ES modules linked into the import map.
    pub modules: usize,
}

/// What the report is about, embedded as JSON (`#somatize-report`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct About {
    pub run: String,
    pub store: String,
    pub last: Option<usize>,
    pub forwards: u64,
    pub version: String,
}

/// What [`write`] wrote.
pub struct Written {
    pub bytes: u64,
    pub snapshot_bytes: u64,
}

/// Text of an asset that becomes the content of an inline element: line ends as the HTML
/// parser will see them (CR LF and CR become LF, so the hash matches), and refused when it
/// could end its element early (`</tag`) or holds a NUL.
fn inline_text(path: &Path, tag: &str) -> Result<String, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let refuse = |why| ReportError::Inline {
        path: path.to_path_buf(),
        why,
    };
    if text.contains('\0') {
        return Err(refuse("it contains a NUL character"));
    }
    if text.to_ascii_lowercase().contains(&format!("</{tag}")) {
        return Err(refuse("it contains its own closing tag"));
    }
    Ok(text)
}

/// An asset the page links (`href`/`src` relative to the page) as a path under the assets;
/// missing ones name the build step.
fn linked(assets: &Path, link: &str) -> Result<PathBuf, ReportError> {
    let rel = super::modules::resolve(PAGE, link).ok_or_else(|| ReportError::Page {
        path: assets.join(PAGE),
        why: format!("{link:?} points outside the assets"),
    })?;
    let path = assets.join(&rel);
    if !path.is_file() {
        let hint = if rel.ends_with(WIDGET_PLOTLY) {
            "build the widget's page first: scripts/build-widget.sh"
        } else if rel.contains("/vendor/") || rel.starts_with("pkg/") {
            "build the page and package first: scripts/build-wasm.sh"
        } else {
            "the page links a file that is not there"
        };
        return Err(ReportError::Assets {
            missing: path,
            hint,
        });
    }
    Ok(path)
}

fn attr(name: &str, value: &Option<String>) -> String {
    value
        .as_ref()
        .map_or_else(String::new, |v| format!(" {name}=\"{}\"", html_escape(v)))
}

impl Head {
    /// Read the page and inline what its head links.
    pub fn build(assets: &Path) -> Result<Head, ReportError> {
        Head::build_as(assets, Flavour::Report)
    }

    /// Read the page and inline what its head links, for `flavour`.
    pub fn build_as(assets: &Path, flavour: Flavour) -> Result<Head, ReportError> {
        let index = assets.join(PAGE);
        let html = std::fs::read_to_string(&index).map_err(|source| ReportError::Read {
            path: index.clone(),
            source,
        })?;
        let page = Page::parse(&index, &html)?;
        let mut head = Head {
            elements: Vec::new(),
            script_hashes: Vec::new(),
            style_hashes: Vec::new(),
            body: page.body,
            modules: 0,
        };
        if flavour == Flavour::Widget {
            head.script_hashes
                .push(sha256_source(WIDGET_WASM.as_bytes()));
            head.elements
                .push(format!("<script>{WIDGET_WASM}</script>"));
        }
        let mut entry = None;
        for item in page.head {
            match item {
                HeadItem::Stylesheet { href, id, class } => {
                    let css = inline_text(&linked(assets, &href)?, "style")?;
                    head.style(&css, attr("id", &id) + &attr("class", &class));
                }
                HeadItem::Script { src } => {
                    let js = inline_text(&linked(assets, flavour.script(&src))?, "script")?;
                    let hash = sha256_source(js.as_bytes());
                    head.script_hashes.push(hash.clone());
                    if flavour == Flavour::Widget && src == PLOTLY {
                        // Kept as text and run from a blob: URL whose integrity the policy's
                        // hash allows (widget-plotly.js).
                        head.elements.push(format!(
                            "<script type=\"text/plain\" id=\"somatize-plotly\" data-integrity=\"{hash}\">{js}</script>"
                        ));
                        head.script_hashes
                            .push(sha256_source(WIDGET_PLOTLY_LOADER.as_bytes()));
                        head.elements
                            .push(format!("<script>{WIDGET_PLOTLY_LOADER}</script>"));
                    } else {
                        head.elements.push(format!("<script>{js}</script>"));
                    }
                }
                HeadItem::Module { src } => {
                    linked(assets, &src)?;
                    entry = super::modules::resolve(PAGE, &src);
                }
                HeadItem::Other(raw) if !raw.is_empty() && !raw.contains("charset") => {
                    head.elements.push(raw)
                }
                HeadItem::Csp | HeadItem::Title | HeadItem::Other(_) => {}
            }
        }
        head.style(flavour.css(), String::new());
        let entry = entry.ok_or_else(|| ReportError::Page {
            path: index.clone(),
            why: "no <script type=\"module\" src> to start the page".into(),
        })?;
        head.link_modules(assets, &entry, flavour)?;
        Ok(head)
    }

    fn style(&mut self, css: &str, attrs: String) {
        self.style_hashes.push(sha256_source(css.as_bytes()));
        self.elements.push(format!("<style{attrs}>{css}</style>"));
    }

    /// The import map of the page's modules (data: URLs, each with its integrity) and the boot.
    fn link_modules(
        &mut self,
        assets: &Path,
        entry: &str,
        flavour: Flavour,
    ) -> Result<(), ReportError> {
        let linker = Linker {
            assets,
            virtuals: &[(REPORT_ENTRY, flavour.entry())],
            substitutes: &[(PKG_ENTRY, REPORT_ENTRY)],
        };
        let mut modules = linker.link(entry)?;
        if !modules.iter().any(|m| m.key == key_of(REPORT_ENTRY)) {
            modules.extend(linker.link(REPORT_ENTRY)?);
        }
        let mut imports = serde_json::Map::new();
        let mut integrity = serde_json::Map::new();
        for m in &modules {
            let url = format!(
                "data:text/javascript;base64,{}",
                base64(m.source.as_bytes())
            );
            let hash = sha256_source(m.source.as_bytes());
            self.script_hashes.push(hash.clone());
            integrity.insert(url.clone(), hash.into());
            imports.insert(m.key.clone(), url.into());
        }
        let map = serde_json::json!({ "imports": imports, "integrity": integrity });
        let map = json_for_script(&map.to_string());
        self.script_hashes.push(sha256_source(map.as_bytes()));
        self.elements
            .push(format!("<script type=\"importmap\">{map}</script>"));
        let boot = flavour
            .boot()
            .replace("somatize/www/app.js", &key_of(entry))
            .replace("somatize/pkg/report.js", &key_of(REPORT_ENTRY));
        self.script_hashes.push(sha256_source(boot.as_bytes()));
        self.elements
            .push(format!("<script type=\"module\">{boot}</script>"));
        self.modules = modules.len();
        Ok(())
    }

    /// The report's Content-Security-Policy: its own scripts and styles by hash, the wasm, and
    /// images from data: and blob: (plotly's downloads); no origin at all.
    pub fn csp(&self) -> String {
        let quoted = |h: &[String]| {
            h.iter()
                .map(|h| format!("'{h}'"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        format!(
            "default-src 'none'; script-src {} 'wasm-unsafe-eval'; style-src {}; \
             img-src data: blob:; font-src data:; connect-src 'none'; worker-src 'none'; \
             object-src 'none'; base-uri 'none'; form-action 'none'",
            quoted(&self.script_hashes),
            quoted(&self.style_hashes)
        )
    }
}

/// Write the report to `out`: head, body, then the data blocks; the snapshot at `zip` is
/// streamed in bounded chunks.
pub fn write(
    head: &Head,
    about: &About,
    assets: &Path,
    zip: &Path,
    out: &Path,
) -> Result<Written, ReportError> {
    let werr = |source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    };
    let wasm = read_wasm(assets)?;
    let file = File::create(out).map_err(werr)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let about_json = json_for_script(&serde_json::to_string(about).unwrap_or_default());
    let mut text = page_start(
        head,
        &format!("somatize report: {}", html_escape(&about.run)),
    );
    text.push_str(&format!(
        "\n<script type=\"application/json\" id=\"somatize-report\">{about_json}</script>\n"
    ));
    text.push_str("<script type=\"application/wasm+base64\" id=\"somatize-wasm\">");
    text.push_str(&base64(&wasm));
    text.push_str("</script>\n<script type=\"application/zip+base64\" id=\"somatize-snapshot\">");
    w.write_all(text.as_bytes()).map_err(werr)?;
    let mut snap = File::open(zip).map_err(|source| ReportError::Read {
        path: zip.to_path_buf(),
        source,
    })?;
    let snapshot_bytes = base64_stream(&mut snap, &mut w).map_err(werr)?;
    w.write_all(b"</script>\n</body>\n</html>\n")
        .map_err(werr)?;
    let file = w.into_inner().map_err(|e| werr(e.into_error()))?;
    file.sync_all().map_err(werr)?;
    let bytes = file.metadata().map_err(werr)?.len();
    Ok(Written {
        bytes,
        snapshot_bytes,
    })
}

/// The package's wasm under `assets`.
fn read_wasm(assets: &Path) -> Result<Vec<u8>, ReportError> {
    let path = assets.join(WASM);
    std::fs::read(&path).map_err(|source| ReportError::Read { path, source })
}

/// A page up to the end of its body's markup: the doctype, the head (its Content-Security-Policy,
/// `title` as given, already escaped, and its elements) and the body.
fn page_start(head: &Head, title: &str) -> String {
    let mut text = String::new();
    text.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    text.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n",
        head.csp().replace('&', "&amp;").replace('"', "&quot;")
    ));
    text.push_str(&format!("<title>{title}</title>\n"));
    for e in &head.elements {
        text.push_str(e);
        text.push('\n');
    }
    text.push_str("</head>\n");
    text.push_str(&head.body);
    text
}

/// Write the notebook widget's page to `out`: the head and the body, no store (its bytes come
/// from the kernel) and no wasm (the kernel sends it as bytes: see [`widget_wasm`]). The bytes
/// written.
pub fn write_widget(head: &Head, out: &Path) -> Result<u64, ReportError> {
    let werr = |source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    };
    let mut text = page_start(head, "somatize");
    text.push_str("\n</body>\n</html>\n");
    std::fs::write(out, text.as_bytes()).map_err(werr)?;
    Ok(text.len() as u64)
}

/// The wasm the widget's page runs (the package's), sent by the kernel beside the page.
pub fn widget_wasm(assets: &Path) -> Result<Vec<u8>, ReportError> {
    read_wasm(assets)
}

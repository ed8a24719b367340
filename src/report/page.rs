//! Reading the page's `index.html`: the tags of its head (stylesheets, classic scripts, the module
//! entry, metas) and its body, so the report can inline each asset the page links.

use super::ReportError;
use std::path::Path;

/// One element of the page's head, as the report needs it.
#[derive(Debug, Clone, PartialEq)]
pub enum HeadItem {
    /// `<link rel="stylesheet" href>`: inlined as a `<style>` keeping `id` and `class`.
    Stylesheet {
        href: String,
        id: Option<String>,
        class: Option<String>,
    },
    /// `<script src>` (classic): inlined, allowed by its hash.
    Script { src: String },
    /// `<script type="module" src>`: the page's entry module, linked into the import map.
    Module { src: String },
    /// The page's own Content-Security-Policy (the report writes its own).
    Csp,
    /// `<title>…</title>` (the report writes its own).
    Title,
    /// Anything else (`<meta charset>`, the viewport, a `data:` icon), kept as written.
    Other(String),
}

/// The page split for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub head: Vec<HeadItem>,
    /// From `<body…>` up to (not including) `</body>`.
    pub body: String,
}

/// The attributes of a start tag's inside (`link rel="…" href=…`), names lower-cased.
pub fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = tag.trim_start_matches(|c: char| !c.is_whitespace()); // the tag name
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '/');
        if rest.is_empty() {
            return out;
        }
        let name_end = rest
            .find(|c: char| c.is_whitespace() || c == '=' || c == '/')
            .unwrap_or(rest.len());
        let name = rest[..name_end].to_ascii_lowercase();
        rest = rest[name_end..].trim_start();
        let mut value = String::new();
        if let Some(after) = rest.strip_prefix('=') {
            let after = after.trim_start();
            let (v, r) = match after.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let body = &after[1..];
                    let end = body.find(q).unwrap_or(body.len());
                    (&body[..end], body.get(end + 1..).unwrap_or(""))
                }
                _ => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            value = v.to_string();
            rest = r;
        }
        out.push((name, value));
    }
}

fn attr(attrs: &[(String, String)], name: &str) -> Option<String> {
    attrs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}

/// One head tag (its inside, without `<` and `>`) as a [`HeadItem`]; `raw` is the whole tag.
fn item(inside: &str, raw: &str) -> HeadItem {
    let name = inside
        .split(|c: char| c.is_whitespace() || c == '/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let a = attributes(inside);
    let has = |n: &str, v: &str| attr(&a, n).is_some_and(|x| x.eq_ignore_ascii_case(v));
    match name.as_str() {
        "link" if has("rel", "stylesheet") => HeadItem::Stylesheet {
            href: attr(&a, "href").unwrap_or_default(),
            id: attr(&a, "id"),
            class: attr(&a, "class"),
        },
        "link" if attr(&a, "href").is_some_and(|h| !h.starts_with("data:")) => {
            HeadItem::Other(String::new()) // a linked icon or the like: nothing is fetched
        }
        "meta" if has("http-equiv", "content-security-policy") => HeadItem::Csp,
        "script" if has("type", "module") => HeadItem::Module {
            src: attr(&a, "src").unwrap_or_default(),
        },
        "script" => HeadItem::Script {
            src: attr(&a, "src").unwrap_or_default(),
        },
        "title" => HeadItem::Title,
        _ => HeadItem::Other(raw.to_string()),
    }
}

impl Page {
    /// Split `html` (the page at `path`, named in errors).
    pub fn parse(path: &Path, html: &str) -> Result<Page, ReportError> {
        let bad = |why: &str| ReportError::Page {
            path: path.to_path_buf(),
            why: why.to_string(),
        };
        let lower = html.to_ascii_lowercase();
        let head_start = lower.find("<head").ok_or_else(|| bad("no <head>"))?;
        let head_open = lower[head_start..]
            .find('>')
            .map(|i| head_start + i + 1)
            .ok_or_else(|| bad("an unclosed <head"))?;
        let head_end = lower.find("</head>").ok_or_else(|| bad("no </head>"))?;
        let body_start = lower.find("<body").ok_or_else(|| bad("no <body>"))?;
        let body_end = lower.rfind("</body>").ok_or_else(|| bad("no </body>"))?;
        if !(head_open <= head_end && head_end <= body_start && body_start <= body_end) {
            return Err(bad("<head> and <body> out of order"));
        }
        let mut head = Vec::new();
        let mut at = head_open;
        while let Some(lt) = lower[at..head_end].find('<').map(|i| at + i) {
            if lower[lt..].starts_with("<!--") {
                at = lower[lt..head_end]
                    .find("-->")
                    .map_or(head_end, |i| lt + i + 3);
                continue;
            }
            let gt = lower[lt..head_end]
                .find('>')
                .map(|i| lt + i)
                .ok_or_else(|| bad("an unclosed tag in <head>"))?;
            let inside = &html[lt + 1..gt];
            let mut end = gt + 1;
            for closing in ["script", "title"] {
                if inside.to_ascii_lowercase().starts_with(closing) {
                    let close = format!("</{closing}>");
                    end = lower[end..head_end]
                        .find(&close)
                        .map(|i| end + i + close.len())
                        .ok_or_else(|| bad("an unclosed <script> or <title> in <head>"))?;
                }
            }
            head.push(item(inside, &html[lt..end]));
            at = end;
        }
        Ok(Page {
            head,
            body: html[body_start..body_end].to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_take_every_quoting() {
        let got = attributes(r#"link rel="stylesheet" id='a b' class=c defer href="x.css" /"#);
        let want: Vec<(String, String)> = [
            ("rel", "stylesheet"),
            ("id", "a b"),
            ("class", "c"),
            ("defer", ""),
            ("href", "x.css"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_head_is_sorted_into_what_the_report_inlines() {
        let html = r#"<!doctype html><html><head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'self'">
<title>t</title>
<link rel="icon" href="data:,">
<!-- a comment <script src="no.js"></script> -->
<link rel="stylesheet" href="style.css">
<link rel="stylesheet" id="p" class="q" href="vendor/p.css">
<script src="vendor/a.js" defer></script>
<script type="module" src="app.js"></script>
</head><body class="x"><p>hi</p></body></html>"#;
        let page = Page::parse(Path::new("index.html"), html).unwrap();
        let want = vec![
            HeadItem::Other(r#"<meta charset="utf-8">"#.into()),
            HeadItem::Csp,
            HeadItem::Title,
            HeadItem::Other(r#"<link rel="icon" href="data:,">"#.into()),
            HeadItem::Stylesheet {
                href: "style.css".into(),
                id: None,
                class: None,
            },
            HeadItem::Stylesheet {
                href: "vendor/p.css".into(),
                id: Some("p".into()),
                class: Some("q".into()),
            },
            HeadItem::Script {
                src: "vendor/a.js".into(),
            },
            HeadItem::Module {
                src: "app.js".into(),
            },
        ];
        assert_eq!(page.head, want);
        assert_eq!(page.body, r#"<body class="x"><p>hi</p>"#);
    }

    #[test]
    fn a_page_without_a_body_is_refused_by_name() {
        let err = Page::parse(Path::new("www/index.html"), "<html><head></head></html>");
        let msg = err.unwrap_err().to_string();
        assert!(
            msg.contains("www/index.html") && msg.contains("<body>"),
            "{msg}"
        );
    }
}

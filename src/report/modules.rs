//! Linking the page's ES modules for the report: every relative import becomes a bare key of an import map.
//!
//! A module inlined as a `data:` URL has no hierarchical base, so `./x.js` cannot be resolved
//! from it. The report therefore rewrites each relative specifier (`from "./x.js"`,
//! `import "./x.js"`, `import("./x.js")`) to the bare key `somatize/<path from the assets>`,
//! and the import map maps each key to its module.

use super::ReportError;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

/// The prefix of every import-map key.
pub const KEY_PREFIX: &str = "somatize/";

/// One linked module: its key in the import map and its rewritten source.
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    pub key: String,
    pub source: String,
}

/// Where the page's modules come from: files under the assets folder, and modules the report
/// supplies itself (`virtuals`, by path), and paths taken by another (`substitutes`: a path the
/// page imports → the path used instead).
pub struct Linker<'a> {
    pub assets: &'a Path,
    pub virtuals: &'a [(&'a str, &'a str)],
    pub substitutes: &'a [(&'a str, &'a str)],
}

/// The key a module path gets in the import map.
pub fn key_of(path: &str) -> String {
    format!("{KEY_PREFIX}{path}")
}

impl Linker<'_> {
    /// Every module reachable from `entry` (a path under the assets, e.g. `www/app.js`),
    /// rewritten, entry first then in the order they were found.
    pub fn link(&self, entry: &str) -> Result<Vec<Module>, ReportError> {
        let entry = self.substitute(entry).to_string();
        let mut done: BTreeMap<String, usize> = BTreeMap::new();
        let mut out = Vec::new();
        let mut todo = VecDeque::from([entry]);
        while let Some(path) = todo.pop_front() {
            if done.contains_key(&path) {
                continue;
            }
            let text = self.source(&path)?;
            let (source, deps) = self.rewrite(&path, &text)?;
            done.insert(path.clone(), out.len());
            out.push(Module {
                key: key_of(&path),
                source,
            });
            todo.extend(deps.into_iter().filter(|d| !done.contains_key(d)));
        }
        Ok(out)
    }

    fn substitute<'p>(&self, path: &'p str) -> &'p str
    where
        Self: 'p,
    {
        self.substitutes
            .iter()
            .find(|(from, _)| *from == path)
            .map_or(path, |(_, to)| to)
    }

    /// The text of the module at `path`: a virtual one, or the file under the assets.
    fn source(&self, path: &str) -> Result<String, ReportError> {
        if let Some((_, text)) = self.virtuals.iter().find(|(p, _)| *p == path) {
            return Ok((*text).to_string());
        }
        let file = self.assets.join(path);
        std::fs::read_to_string(&file).map_err(|source| ReportError::Read { path: file, source })
    }

    /// `text` with each relative specifier replaced by its key, and the paths it imports.
    fn rewrite(&self, path: &str, text: &str) -> Result<(String, Vec<String>), ReportError> {
        let mut out = String::with_capacity(text.len());
        let mut deps = Vec::new();
        let mut at = 0;
        for (start, end) in specifiers(text) {
            let spec = &text[start..end];
            let bad = |why: &'static str| ReportError::Module {
                module: path.to_string(),
                specifier: spec.to_string(),
                why,
            };
            if !(spec.starts_with("./") || spec.starts_with("../")) {
                return Err(bad("only relative imports can be linked into a report"));
            }
            let target = resolve(path, spec).ok_or_else(|| bad("it points outside the assets"))?;
            let target = self.substitute(&target).to_string();
            let known = self.virtuals.iter().any(|(p, _)| *p == target);
            if !known && !self.assets.join(&target).is_file() {
                return Err(bad("no such file"));
            }
            out.push_str(&text[at..start]);
            out.push_str(&key_of(&target));
            at = end;
            deps.push(target);
        }
        out.push_str(&text[at..]);
        Ok((out, deps))
    }
}

/// `spec` resolved against the folder of module `path` (both relative to the assets), or
/// `None` when it climbs above the assets.
pub fn resolve(path: &str, spec: &str) -> Option<String> {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop(); // the module's own file name
    for seg in spec.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// Byte ranges of the string literals that are import specifiers: after the word `from` or
/// `import` (or `import(`), single- or double-quoted, without escapes.
pub fn specifiers(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for word in ["from", "import"] {
        let mut from = 0;
        while let Some(i) = text
            .get(from..)
            .and_then(|t| t.find(word))
            .map(|i| i + from)
        {
            from = i + word.len();
            let before = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b"_$.".contains(&b)) {
                continue;
            }
            let mut j = from;
            let skip = |j: &mut usize| {
                while bytes.get(*j).is_some_and(|b| b.is_ascii_whitespace()) {
                    *j += 1;
                }
            };
            skip(&mut j);
            if word == "import" && bytes.get(j) == Some(&b'(') {
                j += 1;
                skip(&mut j);
            }
            let Some(&quote) = bytes.get(j).filter(|q| **q == b'"' || **q == b'\'') else {
                continue;
            };
            let start = j + 1;
            let Some(len) = bytes
                .get(start..)
                .and_then(|r| r.iter().position(|b| *b == quote))
            else {
                continue;
            };
            let lit = &bytes[start..start + len];
            if lit.contains(&b'\\') || lit.contains(&b'\n') {
                continue;
            }
            found.push((start, start + len));
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specifiers_are_found_in_every_import_form() {
        let cases: &[(&str, &[&str])] = &[
            (r#"import { a } from "./a.js";"#, &["./a.js"]),
            ("import * as b from '../pkg/b.js';", &["../pkg/b.js"]),
            ("import {\n  a,\n  b,\n} from \"./x.js\";", &["./x.js"]),
            (r#"export * from "./api.js";"#, &["./api.js"]),
            (r#"export { Store } from "./store.js";"#, &["./store.js"]),
            (r#"import "./side.js";"#, &["./side.js"]),
            (r#"import{a}from"./min.js";"#, &["./min.js"]),
            (r#"const m = await import( "./lazy.js" );"#, &["./lazy.js"]),
            // Not imports: a method named from, a word ending in "from", escapes.
            (
                r#"Array.from("./a.js"); const datefrom = 1; x.import("./b.js");"#,
                &[],
            ),
            (r#"import x from "./a\".js";"#, &[]),
        ];
        for (text, want) in cases {
            let got: Vec<&str> = specifiers(text).iter().map(|&(a, b)| &text[a..b]).collect();
            assert_eq!(&got, want, "specifiers of {text:?}");
        }
    }

    #[test]
    fn resolve_stays_inside_the_assets() {
        let cases = [
            ("www/app.js", "./dom.js", Some("www/dom.js")),
            ("www/app.js", "../pkg/browser.js", Some("pkg/browser.js")),
            (
                "pkg/report.js",
                "./wasm/somatize.js",
                Some("pkg/wasm/somatize.js"),
            ),
            ("www/app.js", "../../etc/passwd", None),
        ];
        for (path, spec, want) in cases {
            assert_eq!(resolve(path, spec).as_deref(), want, "{spec} from {path}");
        }
    }
}

//! Validation of run names, writer ids and tensor keys, so that none can escape the store.

use super::error::{Result, StoreError};

/// The longest name accepted, in bytes.
pub const MAX_NAME: usize = 200;

/// Why `name` cannot be a path component, or `None` when it can.
fn refusal(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > MAX_NAME {
        return Some("it is longer than 200 bytes");
    }
    if name == "." || name == ".." {
        return Some("it names a directory");
    }
    if name.starts_with('.') {
        return Some("it starts with a dot");
    }
    if name.contains("..") {
        return Some("it contains `..`");
    }
    if name.contains(['/', '\\']) {
        return Some("it contains a path separator");
    }
    if name.contains(':') && name.len() >= 2 && name.as_bytes()[1] == b':' {
        return Some("it looks like a drive letter");
    }
    if name.chars().any(|c| c.is_control()) {
        return Some("it contains NUL or a control character");
    }
    if name.ends_with(".tmp") || name.ends_with(' ') {
        return Some("it ends with `.tmp` or a space");
    }
    None
}

/// Whether `name` is a valid component, by one pass over its bytes (the writer checks every
/// tensor key of every forward): the same answer as [`refusal`], which then says why not.
fn plainly_fine(name: &str) -> bool {
    let b = name.as_bytes();
    if b.is_empty() || b.len() > MAX_NAME || b[0] == b'.' || b.get(1) == Some(&b':') {
        return false;
    }
    let mut prev = 0u8;
    for &c in b {
        // Control characters: C0 and DEL, and C1 (U+0080..U+009F, UTF-8 `C2 80`..`C2 9F`).
        let control = c < 0x20 || c == 0x7F || (prev == 0xC2 && (0x80..=0x9F).contains(&c));
        if control || c == b'/' || c == b'\\' || (c == b'.' && prev == b'.') {
            return false;
        }
        prev = c;
    }
    !(name.ends_with(".tmp") || name.ends_with(' '))
}

/// Check a name that becomes one path component of the store (`what`: run, writer, key).
pub fn check(what: &'static str, name: &str) -> Result<()> {
    if plainly_fine(name) {
        return Ok(());
    }
    match refusal(name) {
        None => Ok(()),
        Some(reason) => Err(StoreError::BadName {
            what,
            name: name.to_string(),
            reason,
        }),
    }
}

/// Check a run name.
pub fn run(name: &str) -> Result<()> {
    check("run", name)
}

/// Check a writer id.
pub fn writer(name: &str) -> Result<()> {
    check("writer", name)
}

/// Check a tensor key (it becomes the blob entry `<key>.npy`).
pub fn key(name: &str) -> Result<()> {
    check("tensor key", name)
}

/// Check a relative path inside the store: components joined by `/`, each a valid name
/// (the format file and fixed names such as `index.jsonl` pass too).
pub fn relative_path(path: &str) -> Result<()> {
    if path.is_empty() {
        return Err(StoreError::BadName {
            what: "path",
            name: String::new(),
            reason: "it is empty",
        });
    }
    path.split('/').try_for_each(|c| check("path component", c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_escape_are_refused() {
        let table: &[(&str, bool)] = &[
            ("tuesday", true),
            ("run-1.b_2", true),
            ("param.fc1.weight", true),
            ("act.layer1.0.conv1", true),
            ("émile", true),
            ("", false),
            (".", false),
            ("..", false),
            ("../x", false),
            ("a/b", false),
            ("/etc", false),
            ("a\\b", false),
            ("C:x", false),
            ("a\0b", false),
            ("a\nb", false),
            (".hidden", false),
            ("x..y", false),
            ("blob.tmp", false),
        ];
        for &(name, ok) in table {
            assert_eq!(
                check("run", name).is_ok(),
                ok,
                "name {name:?}: wanted ok={ok}"
            );
        }
        assert!(
            check("run", &"a".repeat(201)).is_err(),
            "201 bytes accepted"
        );
    }

    #[test]
    fn the_fast_check_agrees_with_the_full_one() {
        let pieces = [
            "a", ".", "..", "/", "\\", ":", "C", " ", "tmp", ".tmp", "\0", "\n", "\u{7f}",
            "\u{80}", "\u{85}", "\u{9f}", "\u{a0}", "é", "\u{2028}", "x.y",
        ];
        let mut names = vec!["a".repeat(200), "a".repeat(201)];
        for a in pieces {
            for b in pieces {
                for c in ["", "a", ".", "tmp", " "] {
                    names.push(format!("{a}{b}{c}"));
                }
            }
        }
        for name in &names {
            assert_eq!(plainly_fine(name), refusal(name).is_none(), "{name:?}");
        }
    }

    #[test]
    fn relative_paths_check_each_component() {
        assert!(relative_path("runs/a/w/index.jsonl").is_ok());
        assert!(relative_path("runs/../x").is_err());
        assert!(relative_path("/runs/a").is_err());
        assert!(relative_path("runs//a").is_err());
    }
}

//! A store on object storage shared as links (`somatize share`): every file a reader needs,
//! each as the objects it is made of with a URL to read each, presigned or under a public prefix.
//!
//! A browser or Node reads the store through this document with plain HTTP Range requests (no
//! cloud SDK, no credentials): pkg/sources.js `shareSource`. It is a picture of the store when
//! it was made: forwards written after it are not in it (share again to see them).

use super::error::{Result, StoreError};
use super::format;
use super::fs::StoreFs;
use super::object::{ObjectError, ObjectFs, SEGMENTS_DIR};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a share document says it is.
pub const SHARE_FORMAT: &str = "somatize-share";
/// The version of the share document this build writes and reads.
pub const SHARE_VERSION: u32 = 1;
/// The longest a presigned link may live: S3's own limit for a signature (7 days).
pub const MAX_EXPIRES: Duration = Duration::from_secs(7 * 24 * 3600);

/// How the objects are linked.
#[derive(Debug, Clone)]
pub enum Links {
    /// URLs signed with the store's credentials, good for this long.
    Presigned(Duration),
    /// Plain URLs under a public-read prefix: this URL is the store's root (what `s3://bucket/prefix`
    /// is served as, e.g. `https://bucket.s3.amazonaws.com/prefix`).
    Public(url::Url),
}

/// One object of a shared file: its URL and length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedPart {
    pub url: String,
    pub len: u64,
}

/// One file of the store as a reader sees it: its length and the objects it is the
/// concatenation of (one for most files; a writer's index and readings are several).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedFile {
    pub len: u64,
    pub parts: Vec<SharedPart>,
}

/// The share document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub format: String,
    pub version: u32,
    /// The store it was made of (its URL, which holds no credentials).
    pub store: String,
    /// When it was made, in seconds since 1970.
    pub created_s: u64,
    /// When its presigned links stop working (none for public links).
    pub expires_s: Option<u64>,
    /// Every file a reader needs, by its path in the store.
    pub files: BTreeMap<String, SharedFile>,
}

/// Share the store `fs` reads: the format file and every file of each run `keep` accepts.
pub fn share(fs: &ObjectFs, keep: &dyn Fn(&str) -> bool, links: &Links) -> Result<Share> {
    if let Links::Presigned(d) = links {
        if d.is_zero() || *d > MAX_EXPIRES {
            return Err(ObjectError::BadShare {
                url: fs.bucket().url().to_string(),
                reason: format!(
                    "presigned links live from 1 s to {} days, not {} s",
                    MAX_EXPIRES.as_secs() / 86400,
                    d.as_secs()
                ),
            }
            .into());
        }
    }
    let bucket = fs.bucket().clone();
    let link = |rel: &str| -> Result<String> {
        match links {
            Links::Presigned(d) => bucket.presign(rel, *d),
            Links::Public(base) => Ok(public_url(base, rel)),
        }
    };
    let mut files = BTreeMap::new();
    let mut add = |path: &str| -> Result<()> {
        let mut parts = Vec::new();
        for (rel, len) in fs.objects(path)? {
            parts.push(SharedPart {
                url: link(&rel)?,
                len,
            });
        }
        let len = parts.iter().map(|p| p.len).sum();
        files.insert(path.to_string(), SharedFile { len, parts });
        Ok(())
    };
    add(format::FORMAT_FILE)?;
    let runs = match fs.list(format::RUNS_DIR) {
        Ok(runs) => runs,
        Err(StoreError::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    for run in runs.iter().filter(|r| keep(r)) {
        let dir = format::run_dir(run);
        let (writers, run_files) = bucket.list_dir(&dir)?;
        for f in run_files
            .iter()
            .filter(|f| format::RUN_FILES.contains(&f.as_str()))
        {
            add(&format!("{dir}/{f}"))?;
        }
        for w in &writers {
            let wdir = format::writer_dir(run, w);
            for name in fs.list(&wdir)? {
                if name == SEGMENTS_DIR {
                    for p in fs.list(&format!("{wdir}/{SEGMENTS_DIR}"))? {
                        add(&format!("{wdir}/{SEGMENTS_DIR}/{p}"))?;
                    }
                } else {
                    add(&format!("{wdir}/{name}"))?;
                }
            }
        }
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok(Share {
        format: SHARE_FORMAT.into(),
        version: SHARE_VERSION,
        store: bucket.url().to_string(),
        created_s: now,
        expires_s: match links {
            Links::Presigned(d) => Some(now.saturating_add(d.as_secs())),
            Links::Public(_) => None,
        },
        files,
    })
}

/// `rel` under the public root `base`, each part of the path percent-encoded.
pub fn public_url(base: &url::Url, rel: &str) -> String {
    let mut u = base.clone();
    if let Ok(mut segs) = u.path_segments_mut() {
        segs.pop_if_empty();
        segs.extend(rel.split('/'));
    }
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_encode_each_part_under_the_root() {
        let cases = [
            (
                "https://b.example/pre",
                "runs/a b/w/index.jsonl",
                "https://b.example/pre/runs/a%20b/w/index.jsonl",
            ),
            (
                "https://b.example/pre/",
                "somatize-store.json",
                "https://b.example/pre/somatize-store.json",
            ),
            (
                "https://b.example",
                "runs/r#1/graph.json",
                "https://b.example/runs/r%231/graph.json",
            ),
        ];
        for (base, rel, want) in cases {
            let got = public_url(&url::Url::parse(base).unwrap(), rel);
            assert_eq!(got, want, "{base} + {rel}");
        }
    }
}

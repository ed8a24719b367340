//! Stores on object storage (`s3://`, `gs://`, `az://`) through the `object_store` crate: a
//! writer puts immutable segments and replaces its manifest by conditional put; a reader reads
//! manifests, never lists what they name. See docs/store-format.md, "On object storage".
//!
//! The reading side is a [`StoreFs`], so every reader (index parsing, blob fetches, scans) is
//! the folder one: a writer's `index.jsonl` and `readings.jsonl` are the concatenation of the
//! objects its manifest names, `segments/<n>-<session>.pack` are packs as on disk.

use super::blob::{self, ForwardRecord};
use super::error::{Result, StoreError};
use super::fact::Fields;
use super::format::{self, FormatFile};
use super::fs::StoreFs;
use super::index::IndexEntry;
use super::names;
use super::reading::{ExitRecord, Reading};
use bytes::Bytes;
use object_store::path::Path as Key;
use object_store::signer::{Method, Signer};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The URL schemes taken as object storage (anything else is a folder or a snapshot).
pub const SCHEMES: &[&str] = &[
    "s3://", "s3a://", "gs://", "az://", "azure://", "abfs://", "abfss://",
];

/// Whether a store argument names object storage rather than a local path.
pub fn is_url(store: &str) -> bool {
    SCHEMES.iter().any(|s| store.starts_with(s))
}

/// [`is_url`] of a path argument.
pub fn is_url_path(store: &std::path::Path) -> bool {
    store.to_str().is_some_and(is_url)
}

/// `url` as messages show it: without any user or password written into it.
pub fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut p) if !p.username().is_empty() || p.password().is_some() => {
            let _ = p.set_username("");
            let _ = p.set_password(None);
            p.to_string()
        }
        Ok(_) => url.to_string(),
        Err(_) => "the store URL".to_string(),
    }
}

/// A writer's manifest, `runs/<run>/<writer>/manifest.json`.
pub const MANIFEST_FILE: &str = "manifest.json";
/// What a manifest says it is.
pub const MANIFEST_FORMAT: &str = "somatize-writer-manifest";
/// The folder of a writer's segments.
pub const SEGMENTS_DIR: &str = "segments";
/// A writer begins a new segment when its pack has this many bytes …
pub const SEGMENT_BYTES: usize = 32 << 20;
/// … or this long after the segment's first forward.
pub const SEGMENT_EVERY: Duration = Duration::from_secs(1);
/// Segments from this size on go by multipart upload, in parts of [`PART_BYTES`].
pub const MULTIPART_FROM: usize = 16 << 20;
/// The size of a multipart upload's parts (S3's least is 5 MiB but for the last).
pub const PART_BYTES: usize = 8 << 20;
/// The largest manifest a reader reads.
pub const MAX_MANIFEST: u64 = 64 << 20;
/// The most objects a manifest may name.
pub const MAX_PARTS: usize = 1 << 20;
/// Index and readings objects up to this size are fetched whole and kept by a reader.
const CACHE_PART: u64 = 64 << 20;
/// A reader's manifest is read again when it is older than this.
const MANIFEST_FRESH: Duration = Duration::from_millis(500);
/// How often a writer retries a manifest put that lost a race to itself (a stale e-tag).
const PUT_RETRIES: usize = 3;

pub use super::object_error::ObjectError;

/// One bucket and prefix, with a runtime to drive its requests and a count of them.
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
    /// What signs URLs for this bucket's objects (`somatize share`).
    signer: Arc<dyn Signer>,
    prefix: String,
    url: String,
    rt: tokio::runtime::Runtime,
    requests: AtomicU64,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the store itself: its configuration may hold credentials.
        f.debug_struct("Bucket").field("url", &self.url).finish()
    }
}

/// Set (to anything) to have every bucket say on stderr, when it is dropped, how many
/// requests it made (benchmarks: `scripts/bench-objstore.sh`).
pub const COUNT_ENV: &str = "SOMATIZE_COUNT_REQUESTS";

impl Drop for Bucket {
    fn drop(&mut self) {
        if std::env::var_os(COUNT_ENV).is_some() {
            eprintln!("somatize: {} requests to {}", self.requests(), self.url);
        }
    }
}

impl Bucket {
    /// Open the store at `url` (`s3://bucket/prefix`, `gs://…`, `az://…`), configured from the
    /// environment as the crate reads it (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
    pub fn open(url: &str) -> Result<Arc<Bucket>> {
        let parsed = url::Url::parse(url);
        let shown = redacted(url);
        let bad = |reason: String| -> StoreError {
            ObjectError::BadUrl {
                url: shown.clone(),
                reason,
            }
            .into()
        };
        let parsed = parsed.map_err(|e| bad(e.to_string()))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad(
                "credentials do not belong in the URL; give them in the environment".into(),
            ));
        }
        fn both<T: ObjectStore + Signer>(t: T) -> (Arc<dyn ObjectStore>, Arc<dyn Signer>) {
            let t = Arc::new(t);
            (t.clone(), t)
        }
        let (store, signer) = match parsed.scheme() {
            "s3" | "s3a" => both(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(url)
                    .build()
                    .map_err(|e| bad(e.to_string()))?,
            ),
            "gs" => both(
                object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(url)
                    .build()
                    .map_err(|e| bad(e.to_string()))?,
            ),
            "az" | "azure" | "abfs" | "abfss" => both(
                object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(url)
                    .build()
                    .map_err(|e| bad(e.to_string()))?,
            ),
            other => return Err(bad(format!("unknown scheme {other:?}"))),
        };
        let prefix = parsed.path().trim_matches('/').to_string();
        if !prefix.is_empty() {
            names::relative_path(&prefix)?;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| bad(format!("no async runtime: {e}")))?;
        Ok(Arc::new(Bucket {
            store,
            signer,
            prefix,
            url: url.trim_end_matches('/').to_string(),
            rt,
            requests: AtomicU64::new(0),
        }))
    }

    /// The store URL, as given (it holds no credentials: [`Bucket::open`] refuses those).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How many requests this bucket has made so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn key(&self, rel: &str) -> Key {
        if self.prefix.is_empty() {
            Key::from(rel)
        } else {
            Key::from(format!("{}/{rel}", self.prefix))
        }
    }

    fn err(&self, rel: &str, op: &'static str, e: object_store::Error) -> StoreError {
        match e {
            object_store::Error::NotFound { .. } => StoreError::NotFound {
                path: format!("{}/{rel}", self.url),
            },
            source => ObjectError::Request {
                url: self.url.clone(),
                key: rel.to_string(),
                op,
                source,
            }
            .into(),
        }
    }

    fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The whole of object `rel`.
    pub fn get(&self, rel: &str) -> Result<Bytes> {
        self.count();
        let key = self.key(rel);
        self.rt
            .block_on(async { self.store.get(&key).await?.bytes().await })
            .map_err(|e| self.err(rel, "read", e))
    }

    /// The whole of object `rel` and its version, for a conditional put over it.
    fn get_versioned(&self, rel: &str) -> Result<(Bytes, UpdateVersion)> {
        self.count();
        let key = self.key(rel);
        self.rt
            .block_on(async {
                let got = self.store.get(&key).await?;
                let version = UpdateVersion {
                    e_tag: got.meta.e_tag.clone(),
                    version: got.meta.version.clone(),
                };
                Ok((got.bytes().await?, version))
            })
            .map_err(|e| self.err(rel, "read", e))
    }

    /// Bytes `[start, end)` of object `rel`.
    pub fn get_range(&self, rel: &str, start: u64, end: u64) -> Result<Bytes> {
        if start >= end {
            return Ok(Bytes::new());
        }
        self.count();
        let key = self.key(rel);
        self.rt
            .block_on(self.store.get_range(&key, start..end))
            .map_err(|e| self.err(rel, "read a range of", e))
    }

    /// A URL that reads object `rel` with a plain GET (ranges too) for `expires_in`, signed
    /// with this bucket's credentials (no request is made: the signature is computed here).
    pub fn presign(&self, rel: &str, expires_in: Duration) -> Result<String> {
        let key = self.key(rel);
        self.rt
            .block_on(self.signer.signed_url(Method::GET, &key, expires_in))
            .map(|u| u.to_string())
            .map_err(|e| self.err(rel, "sign a URL for", e))
    }

    /// The length of object `rel`.
    pub fn head(&self, rel: &str) -> Result<u64> {
        self.count();
        let key = self.key(rel);
        self.rt
            .block_on(self.store.head(&key))
            .map(|m| m.size)
            .map_err(|e| self.err(rel, "stat", e))
    }

    /// Put object `rel` whole, as `mode` says; the raw error is kept so that a caller can
    /// tell a lost condition from a failure.
    fn put_mode(
        &self,
        rel: &str,
        bytes: Bytes,
        mode: PutMode,
    ) -> std::result::Result<object_store::PutResult, object_store::Error> {
        self.count();
        let key = self.key(rel);
        let opts = PutOptions {
            mode,
            ..Default::default()
        };
        self.rt
            .block_on(self.store.put_opts(&key, PutPayload::from(bytes), opts))
    }

    /// Put object `rel`, replacing any: by multipart upload from [`MULTIPART_FROM`] bytes on.
    /// An upload that fails is aborted, so no part of it is ever an object.
    pub fn put(&self, rel: &str, bytes: Bytes) -> Result<()> {
        if bytes.len() < MULTIPART_FROM {
            return self
                .put_mode(rel, bytes, PutMode::Overwrite)
                .map(|_| ())
                .map_err(|e| self.err(rel, "put", e));
        }
        let key = self.key(rel);
        self.count();
        let mut upload = self
            .rt
            .block_on(self.store.put_multipart(&key))
            .map_err(|e| self.err(rel, "begin a multipart upload of", e))?;
        let mut at = 0;
        let mut sent = Ok(());
        while at < bytes.len() && sent.is_ok() {
            let end = (at + PART_BYTES).min(bytes.len());
            self.count();
            sent = self
                .rt
                .block_on(upload.put_part(PutPayload::from(bytes.slice(at..end))));
            at = end;
        }
        self.count();
        let done = sent.and_then(|_| self.rt.block_on(upload.complete()).map(|_| ()));
        if let Err(e) = done {
            self.count();
            let _ = self.rt.block_on(upload.abort());
            return Err(self.err(rel, "upload", e));
        }
        Ok(())
    }

    /// Delete object `rel` (missing is fine).
    fn delete(&self, rel: &str) -> Result<()> {
        self.count();
        let key = self.key(rel);
        match self.rt.block_on(self.store.delete(&key)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(rel, "delete", e)),
        }
    }

    /// The folders and objects directly under folder `rel` (`""`: the prefix), by name.
    pub fn list_dir(&self, rel: &str) -> Result<(Vec<String>, Vec<String>)> {
        self.count();
        let key = if rel.is_empty() {
            Key::from(self.prefix.as_str())
        } else {
            self.key(rel)
        };
        let got = self
            .rt
            .block_on(self.store.list_with_delimiter(Some(&key)))
            .map_err(|e| self.err(rel, "list", e))?;
        let last = |k: &Key| k.filename().map(str::to_string);
        let dirs = got.common_prefixes.iter().filter_map(last).collect();
        let files = got
            .objects
            .iter()
            .filter_map(|m| last(&m.location))
            .collect();
        Ok((dirs, files))
    }

    /// Create the store's format file if it has none; check the one it has otherwise.
    pub fn ensure_store(&self) -> Result<()> {
        match self.get(format::FORMAT_FILE) {
            Ok(bytes) => FormatFile::parse(&bytes).map(|_| ()),
            Err(StoreError::NotFound { .. }) => {
                let text = serde_json::to_vec(&FormatFile::current()).unwrap_or_default();
                match self.put_mode(format::FORMAT_FILE, text.into(), PutMode::Create) {
                    Ok(_) => Ok(()),
                    Err(object_store::Error::AlreadyExists { .. })
                    | Err(object_store::Error::Precondition { .. }) => {
                        FormatFile::parse(&self.get(format::FORMAT_FILE)?).map(|_| ())
                    }
                    Err(e) => Err(self.err(format::FORMAT_FILE, "create", e)),
                }
            }
            Err(e) => Err(e),
        }
    }
}

/// One object of a writer's index or readings: its key under the writer's folder, its
/// length, and how many segments' lines it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogPart {
    pub key: String,
    pub len: u64,
    pub segments: u64,
}

/// One pack segment: its key under the writer's folder and its length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackPart {
    pub key: String,
    pub len: u64,
}

/// A writer's manifest: everything of the writer that exists. Replaced whole by conditional
/// put after each segment; an object it does not name is not part of the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub run: String,
    pub writer: String,
    /// The process writing it (a random token); a second process taking the writer over
    /// writes its own, and the first stops at its next put.
    pub session: String,
    /// Counts the puts of this manifest.
    pub generation: u64,
    /// The number the next segment takes.
    pub next_segment: u64,
    /// The index, in order: `index.jsonl` is the concatenation of these objects.
    pub index: Vec<LogPart>,
    /// The machine readings, in order, likewise `readings.jsonl`.
    #[serde(default)]
    pub readings: Vec<LogPart>,
    /// The packs the index lines point into.
    #[serde(default)]
    pub packs: Vec<PackPart>,
    /// Whether `exit.json` is written.
    #[serde(default)]
    pub exit: bool,
    /// Objects this manifest no longer names (merged away); deleted after the next put, so a
    /// reader holding the previous manifest can still read them.
    #[serde(default)]
    pub retired: Vec<String>,
}

impl Manifest {
    fn new(run: &str, writer: &str, session: &str) -> Self {
        Manifest {
            format: MANIFEST_FORMAT.into(),
            run: run.into(),
            writer: writer.into(),
            session: session.into(),
            generation: 0,
            next_segment: 0,
            index: Vec::new(),
            readings: Vec::new(),
            packs: Vec::new(),
            exit: false,
            retired: Vec::new(),
        }
    }

    /// Parse and check a manifest read from `url` for `run`/`writer`.
    pub fn parse(bytes: &[u8], url: &str, run: &str, writer: &str) -> Result<Self> {
        let bad = |reason: String| -> StoreError {
            ObjectError::BadManifest {
                url: url.into(),
                run: run.into(),
                writer: writer.into(),
                reason,
            }
            .into()
        };
        if bytes.len() as u64 > MAX_MANIFEST {
            return Err(bad(format!("it is over {MAX_MANIFEST} bytes")));
        }
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if m.format != MANIFEST_FORMAT {
            return Err(bad(format!("its format is {:?}", m.format)));
        }
        if m.index.len() + m.readings.len() + m.packs.len() > MAX_PARTS {
            return Err(bad(format!("it names over {MAX_PARTS} objects")));
        }
        let keys = m.index.iter().chain(&m.readings).map(|p| &p.key);
        for key in keys.chain(m.packs.iter().map(|p| &p.key)) {
            let ok = key
                .strip_prefix("segments/")
                .is_some_and(|rest| !rest.contains('/') && names::relative_path(key).is_ok());
            if !ok {
                return Err(bad(format!("object {key:?} is not in its segments/")));
            }
        }
        Ok(m)
    }
}

fn manifest_path(run: &str, writer: &str) -> String {
    format!("{}/{MANIFEST_FILE}", format::writer_dir(run, writer))
}

/// A random token naming one writing process (not a secret: it only keeps object names of
/// two processes apart).
pub(crate) fn session_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// What the writer hands its uploader.
enum Job {
    /// A segment: pack bytes, index lines, readings lines.
    Segment {
        n: u64,
        pack: Vec<u8>,
        lines: String,
        readings: String,
    },
    /// `exit.json`, then the manifest saying so.
    Exit(Vec<u8>),
    /// Answer when everything before is put.
    Flush(mpsc::Sender<()>),
}

/// The uploader's state: the manifest as last put, and its version.
struct Uploader {
    bucket: Arc<Bucket>,
    dir: String,
    manifest: Manifest,
    version: UpdateVersion,
    /// Objects the last manifest put retired: deleted after the next put.
    retired: Vec<String>,
}

impl Uploader {
    fn gone(&self) -> ObjectError {
        ObjectError::UploaderGone {
            url: self.bucket.url.clone(),
            run: self.manifest.run.clone(),
            writer: self.manifest.writer.clone(),
        }
    }

    fn path(&self, key: &str) -> String {
        format!("{}/{key}", self.dir)
    }

    /// Append one object to a log, merging the last two while they hold as many segments
    /// each (so a log of `s` segments is at most log2(s) + 1 objects).
    fn push_log(&mut self, readings: bool, part: LogPart, n: u64) -> Result<()> {
        let mut log = std::mem::take(if readings {
            &mut self.manifest.readings
        } else {
            &mut self.manifest.index
        });
        log.push(part);
        let mut merged = Ok(());
        while merged.is_ok() && log.len() >= 2 {
            let (a, b) = (&log[log.len() - 2], &log[log.len() - 1]);
            if a.segments != b.segments {
                break;
            }
            merged = (|| {
                let mut bytes = Vec::with_capacity((a.len + b.len) as usize);
                bytes.extend_from_slice(&self.bucket.get(&self.path(&a.key))?);
                bytes.extend_from_slice(&self.bucket.get(&self.path(&b.key))?);
                let key = format!(
                    "segments/{n:06}-{}.{}{}.jsonl",
                    self.manifest.session,
                    if readings { "readings." } else { "" },
                    a.segments + b.segments
                );
                let part = LogPart {
                    key,
                    len: bytes.len() as u64,
                    segments: a.segments + b.segments,
                };
                self.bucket.put(&self.path(&part.key), bytes.into())?;
                Ok(part)
            })()
            .map(|part| {
                let b = log.pop();
                let a = log.pop();
                self.manifest
                    .retired
                    .extend(a.into_iter().chain(b).map(|p| p.key));
                log.push(part);
            });
        }
        if readings {
            self.manifest.readings = log;
        } else {
            self.manifest.index = log;
        }
        merged
    }

    fn segment(&mut self, n: u64, pack: Vec<u8>, lines: String, readings: String) -> Result<()> {
        let s = &self.manifest.session;
        if !pack.is_empty() {
            let key = format!("segments/{n:06}-{s}.pack");
            let len = pack.len() as u64;
            self.bucket.put(&self.path(&key), pack.into())?;
            self.manifest.packs.push(PackPart { key, len });
        }
        let s = self.manifest.session.clone();
        for (is_readings, text) in [(false, lines), (true, readings)] {
            if text.is_empty() {
                continue;
            }
            let key = if is_readings {
                format!("segments/{n:06}-{s}.readings.jsonl")
            } else {
                format!("segments/{n:06}-{s}.jsonl")
            };
            let len = text.len() as u64;
            self.bucket
                .put(&self.path(&key), text.into_bytes().into())?;
            let part = LogPart {
                key,
                len,
                segments: 1,
            };
            self.push_log(is_readings, part, n)?;
        }
        self.manifest.next_segment = n + 1;
        self.put_manifest()
    }

    /// Put the manifest over the version this writer last put; a lost condition is a second
    /// process that took the writer over (the writer stops), unless the manifest read back is
    /// still ours (a stale e-tag: retried).
    fn put_manifest(&mut self) -> Result<()> {
        self.manifest.generation += 1;
        let path = manifest_path(&self.manifest.run, &self.manifest.writer);
        let mut tries = 0;
        loop {
            let text = serde_json::to_vec(&self.manifest).unwrap_or_default();
            let mode = PutMode::Update(self.version.clone());
            match self.bucket.put_mode(&path, text.into(), mode) {
                Ok(put) => {
                    self.version = UpdateVersion {
                        e_tag: put.e_tag,
                        version: put.version,
                    };
                    break;
                }
                Err(object_store::Error::Precondition { .. }) if tries < PUT_RETRIES => {
                    tries += 1;
                    let (bytes, version) = self.bucket.get_versioned(&path)?;
                    let theirs = Manifest::parse(
                        &bytes,
                        &self.bucket.url,
                        &self.manifest.run,
                        &self.manifest.writer,
                    )?;
                    if theirs.session != self.manifest.session {
                        return Err(ObjectError::Superseded {
                            url: self.bucket.url.clone(),
                            run: self.manifest.run.clone(),
                            writer: self.manifest.writer.clone(),
                        }
                        .into());
                    }
                    self.version = version;
                }
                Err(e) => return Err(self.bucket.err(&path, "replace the manifest", e)),
            }
        }
        // Objects retired by the manifest put before this one: neither it nor this one names
        // them, and a reader holding the older one has had a segment's time to read them. A
        // failure to delete leaves garbage, never a wrong store.
        for key in std::mem::take(&mut self.retired) {
            let _ = self.bucket.delete(&self.path(&key));
        }
        self.retired = std::mem::take(&mut self.manifest.retired);
        Ok(())
    }

    fn run(mut self, jobs: mpsc::Receiver<Job>, failed: Arc<Mutex<Option<StoreError>>>) {
        for job in jobs {
            if failed.lock().map(|f| f.is_some()).unwrap_or(true) {
                if let Job::Flush(answer) = job {
                    let _ = answer.send(());
                }
                continue;
            }
            let done = match job {
                Job::Segment {
                    n,
                    pack,
                    lines,
                    readings,
                } => self.segment(n, pack, lines, readings),
                Job::Exit(bytes) => {
                    let path = self.path(format::EXIT_FILE);
                    self.bucket.put(&path, bytes.into()).and_then(|_| {
                        self.manifest.exit = true;
                        self.put_manifest()
                    })
                }
                Job::Flush(answer) => {
                    let _ = answer.send(());
                    Ok(())
                }
            };
            if let Err(e) = done {
                if let Ok(mut f) = failed.lock() {
                    *f = Some(e);
                }
            }
        }
    }
}

/// One process writing one run as one writer on object storage: forwards gather into a
/// segment (a pack and its index lines) that a background thread puts when it is
/// [`SEGMENT_BYTES`] or [`SEGMENT_EVERY`] old, then the manifest naming it. A forward is
/// stored once the manifest naming its segment is put: a killed writer loses the segment
/// being gathered and the ones being put.
pub struct ObjectWriter {
    bucket: Arc<Bucket>,
    run: String,
    writer: String,
    session: String,
    segment: u64,
    pack: Vec<u8>,
    lines: String,
    readings: String,
    began: Option<Instant>,
    last_forward: Option<u64>,
    last_accepted: Option<u64>,
    written: u64,
    scratch: blob::Scratch,
    jobs: Option<mpsc::SyncSender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    failed: Arc<Mutex<Option<StoreError>>>,
    segment_bytes: usize,
    segment_every: Duration,
    /// Kept for the folder writer's interface; a put is durable when it returns.
    pub durable: bool,
}

impl ObjectWriter {
    /// Open run `run` as writer `writer` in the store at `url`, creating the store's format
    /// file and the writer's manifest as needed. A writer id reopened continues after the
    /// last forward its manifest names; a process still writing as it is superseded.
    pub fn open(url: &str, run: &str, writer: &str) -> Result<Self> {
        names::run(run)?;
        names::writer(writer)?;
        let bucket = Bucket::open(url)?;
        Self::open_in(bucket, run, writer)
    }

    /// [`Self::open`] in a bucket already open.
    pub fn open_in(bucket: Arc<Bucket>, run: &str, writer: &str) -> Result<Self> {
        names::run(run)?;
        names::writer(writer)?;
        bucket.ensure_store()?;
        let session = session_token();
        let path = manifest_path(run, writer);
        let (mut manifest, version) = loop {
            match bucket.get_versioned(&path) {
                Ok((bytes, version)) => {
                    let m = Manifest::parse(&bytes, &bucket.url, run, writer)?;
                    break (m, Some(version));
                }
                Err(StoreError::NotFound { .. }) => {
                    let m = Manifest::new(run, writer, &session);
                    let text = serde_json::to_vec(&m).unwrap_or_default();
                    match bucket.put_mode(&path, text.into(), PutMode::Create) {
                        Ok(put) => {
                            let v = UpdateVersion {
                                e_tag: put.e_tag,
                                version: put.version,
                            };
                            break (m, Some(v));
                        }
                        // Another process created it first: read theirs and take over.
                        Err(object_store::Error::AlreadyExists { .. })
                        | Err(object_store::Error::Precondition { .. }) => continue,
                        Err(e) => return Err(bucket.err(&path, "create the manifest", e)),
                    }
                }
                Err(e) => return Err(e),
            }
        };
        let version = version.unwrap_or(UpdateVersion {
            e_tag: None,
            version: None,
        });
        // The last forward the manifest names, from its last index object's last line.
        let dir = format::writer_dir(run, writer);
        let mut last_forward = None;
        if let Some(part) = manifest.index.last() {
            // Its tail is enough: the last whole line is in its last MiB.
            let from = part.len.saturating_sub(1 << 20);
            let bytes = bucket.get_range(&format!("{dir}/{}", part.key), from, part.len)?;
            let text = String::from_utf8_lossy(&bytes);
            last_forward = text
                .lines()
                .rev()
                .find_map(|l| super::index::IndexLine::parse(l).ok())
                .map(|l| l.forward);
        }
        let segment = manifest.next_segment;
        let reopened = manifest.session != session;
        manifest.session = session.clone();
        let mut up = Uploader {
            bucket: bucket.clone(),
            dir,
            manifest,
            version,
            retired: Vec::new(),
        };
        if reopened {
            // Take the writer over now, so that a process still writing as it stops.
            up.put_manifest()?;
        }
        let failed = Arc::new(Mutex::new(None));
        let (tx, rx) = mpsc::sync_channel(0);
        let f2 = failed.clone();
        let gone = up.gone();
        let thread = std::thread::Builder::new()
            .name("somatize-upload".into())
            .spawn(move || up.run(rx, f2))
            .map_err(|_| StoreError::from(gone))?;
        Ok(ObjectWriter {
            bucket,
            run: run.into(),
            writer: writer.into(),
            session,
            segment,
            pack: Vec::new(),
            lines: String::new(),
            readings: String::new(),
            began: None,
            last_forward,
            last_accepted: last_forward,
            written: 0,
            scratch: blob::Scratch::default(),
            jobs: Some(tx),
            thread: Some(thread),
            failed,
            segment_bytes: SEGMENT_BYTES,
            segment_every: SEGMENT_EVERY,
            durable: true,
        })
    }

    /// The bucket written to (its URL, its request count).
    pub fn bucket(&self) -> &Arc<Bucket> {
        &self.bucket
    }

    /// Begin a new segment at this many pack bytes or this long after a segment's first
    /// forward (defaults [`SEGMENT_BYTES`], [`SEGMENT_EVERY`]).
    pub fn set_segment(&mut self, bytes: usize, every: Duration) {
        self.segment_bytes = bytes.max(1);
        self.segment_every = every;
    }

    /// The last forward stored (named by a manifest put), if any.
    pub fn last_forward(&self) -> Option<u64> {
        self.last_forward
    }

    /// Forwards accepted by this writer since it opened.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn failure(&self) -> Result<()> {
        match self.failed.lock() {
            Ok(mut f) => match f.take() {
                Some(e) => {
                    *f = Some(
                        ObjectError::UploaderGone {
                            url: self.bucket.url.clone(),
                            run: self.run.clone(),
                            writer: self.writer.clone(),
                        }
                        .into(),
                    );
                    Err(e)
                }
                None => Ok(()),
            },
            Err(_) => Err(self.gone()),
        }
    }

    fn gone(&self) -> StoreError {
        ObjectError::UploaderGone {
            url: self.bucket.url.clone(),
            run: self.run.clone(),
            writer: self.writer.clone(),
        }
        .into()
    }

    fn send(&self, job: Job) -> Result<()> {
        match &self.jobs {
            Some(tx) => tx.send(job).map_err(|_| self.gone()),
            None => Err(self.gone()),
        }
    }

    fn pack_name(&self) -> String {
        format!("{SEGMENTS_DIR}/{:06}-{}.pack", self.segment, self.session)
    }

    /// Hand the segment gathered so far to the uploader (waiting while it puts the last one).
    fn cut(&mut self) -> Result<()> {
        self.began = None;
        if self.pack.is_empty() && self.lines.is_empty() && self.readings.is_empty() {
            return Ok(());
        }
        let job = Job::Segment {
            n: self.segment,
            pack: std::mem::take(&mut self.pack),
            lines: std::mem::take(&mut self.lines),
            readings: std::mem::take(&mut self.readings),
        };
        self.segment += 1;
        self.send(job)?;
        self.failure()
    }

    fn cut_when_due(&mut self) -> Result<()> {
        let old = self
            .began
            .is_some_and(|t| t.elapsed() >= self.segment_every);
        if old || self.pack.len() >= self.segment_bytes {
            self.cut()?;
        }
        Ok(())
    }

    fn check_next(&self, forward: u64) -> Result<()> {
        super::writer::check_after(&self.run, &self.writer, self.last_accepted, forward)
    }

    fn push_line(&mut self, entry: &IndexEntry) {
        self.lines.push_str(&entry.to_line());
        self.lines.push('\n');
        self.last_accepted = Some(entry.forward);
        self.written += 1;
        self.began.get_or_insert_with(Instant::now);
    }

    /// Write one forward into the segment being gathered. `Ok` means accepted: a failure to
    /// put it is reported by a later call, [`Self::flush`] or [`Self::finish`].
    pub fn append(
        &mut self,
        rec: &ForwardRecord<'_>,
        fields: Fields<'static>,
    ) -> Result<IndexEntry> {
        self.append_with_crcs(rec, fields, None)
    }

    /// [`Self::append`] with each tensor's CRC-32 already known.
    pub fn append_with_crcs(
        &mut self,
        rec: &ForwardRecord<'_>,
        fields: Fields<'static>,
        crcs: Option<&[u32]>,
    ) -> Result<IndexEntry> {
        self.failure()?;
        self.check_next(rec.forward)?;
        rec.tensors.iter().try_for_each(|t| t.check())?;
        let stamp = super::writer::Stamp::of(rec);
        let meta = stamp.meta(&self.run, &self.writer, rec, &fields);
        let offset = self.pack.len() as u64;
        let mut pack = std::mem::take(&mut self.pack);
        let wrote = blob::write_with(&mut pack, &meta, rec, &mut self.scratch, crcs, Some(offset));
        let (len, crc) = match wrote {
            Ok((_, len, crc)) => (len, crc),
            Err(e) => {
                pack.truncate(offset as usize);
                self.pack = pack;
                return Err(StoreError::io(self.pack_name(), "gather", e));
            }
        };
        self.pack = pack;
        let entry = stamp.entry(rec.forward, fields, self.pack_name(), (offset, len, crc));
        self.push_line(&entry);
        self.cut_when_due()?;
        Ok(entry)
    }

    /// Mark forward `forward` broke with no blob.
    pub fn append_broke(&mut self, forward: u64, error: &str) -> Result<IndexEntry> {
        self.failure()?;
        self.check_next(forward)?;
        let entry = super::writer::broke_entry(forward, error);
        self.push_line(&entry);
        self.cut_when_due()?;
        Ok(entry)
    }

    /// Add a machine reading to the segment being gathered.
    pub fn append_reading(&mut self, reading: &Reading) -> Result<()> {
        self.failure()?;
        self.readings
            .push_str(&serde_json::to_string(reading).unwrap_or_default());
        self.readings.push('\n');
        self.began.get_or_insert_with(Instant::now);
        self.cut_when_due()
    }

    /// Put everything accepted so far and wait for it; the first failure is returned.
    pub fn flush(&mut self) -> Result<()> {
        self.cut()?;
        let (tx, rx) = mpsc::channel();
        self.send(Job::Flush(tx))?;
        rx.recv().map_err(|_| self.gone())?;
        self.failure()?;
        self.last_forward = self.last_accepted;
        Ok(())
    }

    /// Put everything, then `exit.json` and the manifest naming it.
    pub fn finish(&mut self, exit: &ExitRecord) -> Result<()> {
        self.flush()?;
        self.send(Job::Exit(serde_json::to_vec(exit).unwrap_or_default()))?;
        self.flush()
    }

    /// Stop the uploader, dropping what it was not given: the writer was killed (tests).
    #[doc(hidden)]
    pub fn abandon(mut self) {
        self.pack.clear();
        self.lines.clear();
        self.readings.clear();
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ObjectWriter {
    /// What was accepted is put; a failure can only be printed here.
    fn drop(&mut self) {
        if self.jobs.is_some() {
            if let Err(e) = self.flush() {
                eprintln!(
                    "somatize: run {:?}, writer {:?}: {e}",
                    self.run, self.writer
                );
            }
        }
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A manifest a reader holds: when it read it, and the manifest.
type Fetched = (Instant, Arc<Manifest>);

/// A store on object storage read as plain files: the reading side of this module.
pub struct ObjectFs {
    bucket: Arc<Bucket>,
    manifests: Mutex<HashMap<(String, String), Fetched>>,
    parts: Mutex<HashMap<String, Bytes>>,
}

/// What a path of the store is on object storage.
enum Node<'a> {
    /// The writer's manifest itself: not part of the store's tree.
    Hidden,
    /// Files a folder store has and object storage has not (`listing.jsonl`,
    /// `summaries.jsonl`: readers read the runs instead).
    Absent,
    /// A writer's folder.
    WriterDir(&'a str, &'a str),
    /// A writer's `segments/`.
    Segments(&'a str, &'a str),
    /// A writer's index or readings: the concatenation of the objects its manifest names.
    Log(&'a str, &'a str, bool),
    /// A writer's `exit.json`: read only when the manifest says it is written.
    Exit(&'a str, &'a str),
    /// A pack segment: its length is in the manifest.
    Pack(&'a str, &'a str, &'a str),
    /// Any other object (the format file, `graph.json`, `config.json`), read as it is.
    Plain,
}

fn node(path: &str) -> Node<'_> {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        [super::listing::LISTING_FILE] | [super::summary::SUMMARIES_FILE] => Node::Absent,
        ["runs", run, w] if !format::RUN_FILES.contains(w) => Node::WriterDir(run, w),
        ["runs", run, w, f] if *f == MANIFEST_FILE => {
            let _ = (run, w);
            Node::Hidden
        }
        ["runs", run, w, f] if *f == format::INDEX_FILE => Node::Log(run, w, false),
        ["runs", run, w, f] if *f == format::READINGS_FILE => Node::Log(run, w, true),
        ["runs", run, w, f] if *f == format::EXIT_FILE => Node::Exit(run, w),
        ["runs", run, w, f] if *f == SEGMENTS_DIR => Node::Segments(run, w),
        ["runs", run, w, "segments", p] => Node::Pack(run, w, p),
        _ => Node::Plain,
    }
}

impl ObjectFs {
    /// Read the store at `url`.
    pub fn open(url: &str) -> Result<Self> {
        Ok(Self::new(Bucket::open(url)?))
    }

    /// Read the store in a bucket already open.
    pub fn new(bucket: Arc<Bucket>) -> Self {
        ObjectFs {
            bucket,
            manifests: Mutex::new(HashMap::new()),
            parts: Mutex::new(HashMap::new()),
        }
    }

    /// The bucket (its URL, its request count).
    pub fn bucket(&self) -> &Arc<Bucket> {
        &self.bucket
    }

    /// The manifest of `run`/`writer`, read again when older than [`MANIFEST_FRESH`] or
    /// when `fresh` says so.
    fn manifest(&self, run: &str, writer: &str, fresh: bool) -> Result<Arc<Manifest>> {
        let k = (run.to_string(), writer.to_string());
        if !fresh {
            if let Some((at, m)) = self.manifests.lock().ok().and_then(|c| c.get(&k).cloned()) {
                if at.elapsed() < MANIFEST_FRESH {
                    return Ok(m);
                }
            }
        }
        names::run(run)?;
        names::writer(writer)?;
        let bytes = self.bucket.get(&manifest_path(run, writer))?;
        let m = Arc::new(Manifest::parse(&bytes, &self.bucket.url, run, writer)?);
        if let Ok(mut c) = self.manifests.lock() {
            c.insert(k, (Instant::now(), m.clone()));
        }
        Ok(m)
    }

    fn log(m: &Manifest, readings: bool) -> &[LogPart] {
        if readings {
            &m.readings
        } else {
            &m.index
        }
    }

    /// Bytes `[start, end)` of one log object, fetched whole (and kept) when small.
    fn part_range(&self, dir: &str, part: &LogPart, start: u64, end: u64) -> Result<Bytes> {
        let path = format!("{dir}/{}", part.key);
        if part.len > CACHE_PART {
            return self.bucket.get_range(&path, start, end);
        }
        let cached = self.parts.lock().ok().and_then(|c| c.get(&path).cloned());
        let whole = match cached {
            Some(b) => b,
            None => {
                let b = self.bucket.get(&path)?;
                if let Ok(mut c) = self.parts.lock() {
                    c.insert(path.clone(), b.clone());
                }
                b
            }
        };
        let s = (start as usize).min(whole.len());
        let e = (end as usize).min(whole.len()).max(s);
        Ok(whole.slice(s..e))
    }

    fn log_range(
        &self,
        run: &str,
        w: &str,
        readings: bool,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let mut retried = false;
        loop {
            let m = self.manifest(run, w, retried)?;
            match self.log_range_in(&m, run, w, readings, offset, len) {
                // An object merged away since this manifest was read: read the new one.
                Err(StoreError::NotFound { .. }) if !retried => retried = true,
                other => return other,
            }
        }
    }

    fn log_range_in(
        &self,
        m: &Manifest,
        run: &str,
        w: &str,
        readings: bool,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let dir = format::writer_dir(run, w);
        let end = offset.saturating_add(len);
        let mut out = Vec::new();
        let mut at = 0u64;
        for part in Self::log(m, readings) {
            let (p0, p1) = (at, at.saturating_add(part.len));
            at = p1;
            if p1 <= offset {
                continue;
            }
            if p0 >= end {
                break;
            }
            let s = offset.max(p0) - p0;
            let e = end.min(p1) - p0;
            out.extend_from_slice(&self.part_range(&dir, part, s, e)?);
        }
        Ok(out)
    }
}

impl StoreFs for ObjectFs {
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        if !dir.is_empty() {
            names::relative_path(dir)?;
        }
        match node(dir) {
            Node::WriterDir(run, w) => {
                let m = self.manifest(run, w, true)?;
                let mut out = vec![format::INDEX_FILE.to_string()];
                if !m.readings.is_empty() {
                    out.push(format::READINGS_FILE.into());
                }
                if m.exit {
                    out.push(format::EXIT_FILE.into());
                }
                if !m.packs.is_empty() {
                    out.push(SEGMENTS_DIR.into());
                }
                out.sort();
                Ok(out)
            }
            Node::Segments(run, w) => {
                let m = self.manifest(run, w, false)?;
                let mut out: Vec<String> = m
                    .packs
                    .iter()
                    .filter_map(|p| p.key.strip_prefix("segments/").map(str::to_string))
                    .collect();
                out.sort();
                Ok(out)
            }
            _ => {
                let (mut dirs, files) = self.bucket.list_dir(dir)?;
                dirs.extend(files.into_iter().filter(|f| f != MANIFEST_FILE));
                if dirs.is_empty() && !dir.is_empty() {
                    return Err(StoreError::NotFound {
                        path: format!("{}/{dir}", self.bucket.url),
                    });
                }
                dirs.sort();
                dirs.dedup();
                Ok(dirs)
            }
        }
    }

    fn read(&self, path: &str) -> Result<Vec<u8>> {
        names::relative_path(path)?;
        match node(path) {
            Node::Log(run, w, readings) => {
                let m = self.manifest(run, w, true)?;
                let total = Self::log(&m, readings).iter().map(|p| p.len).sum();
                self.log_range(run, w, readings, 0, total)
            }
            _ => {
                self.len_check(path)?;
                Ok(self.bucket.get(path)?.to_vec())
            }
        }
    }

    fn read_range(&self, path: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        names::relative_path(path)?;
        match node(path) {
            Node::Log(run, w, readings) => self.log_range(run, w, readings, offset, len),
            Node::Pack(..) => Ok(self
                .bucket
                .get_range(path, offset, offset.saturating_add(len))?
                .to_vec()),
            _ => {
                let size = self.len(path)?;
                let end = offset.saturating_add(len).min(size);
                Ok(self.bucket.get_range(path, offset.min(end), end)?.to_vec())
            }
        }
    }

    fn len(&self, path: &str) -> Result<u64> {
        names::relative_path(path)?;
        match node(path) {
            Node::Log(run, w, readings) => {
                let m = self.manifest(run, w, false)?;
                Ok(Self::log(&m, readings).iter().map(|p| p.len).sum())
            }
            Node::Pack(run, w, p) => {
                let m = self.manifest(run, w, false)?;
                let key = format!("segments/{p}");
                match m.packs.iter().find(|x| x.key == key) {
                    Some(x) => Ok(x.len),
                    None => Err(StoreError::NotFound {
                        path: format!("{}/{path}", self.bucket.url),
                    }),
                }
            }
            _ => {
                self.len_check(path)?;
                self.bucket.head(path)
            }
        }
    }
}

impl ObjectFs {
    /// The objects (key under the store's root, length) whose concatenation is the store's
    /// file `path`: a writer's index and readings are the parts its manifest names, any other
    /// file one object (`somatize share` links them).
    pub fn objects(&self, path: &str) -> Result<Vec<(String, u64)>> {
        names::relative_path(path)?;
        match node(path) {
            Node::Log(run, w, readings) => {
                let m = self.manifest(run, w, false)?;
                let dir = format::writer_dir(run, w);
                Ok(Self::log(&m, readings)
                    .iter()
                    .map(|p| (format!("{dir}/{}", p.key), p.len))
                    .collect())
            }
            _ => Ok(vec![(path.to_string(), self.len(path)?)]),
        }
    }

    /// Refuse paths that are not files of the store on object storage, without a request.
    fn len_check(&self, path: &str) -> Result<()> {
        let missing = || {
            Err(StoreError::NotFound {
                path: format!("{}/{path}", self.bucket.url),
            })
        };
        match node(path) {
            Node::Hidden | Node::Absent | Node::WriterDir(..) | Node::Segments(..) => missing(),
            Node::Exit(run, w) => {
                if self.manifest(run, w, false)?.exit {
                    Ok(())
                } else {
                    missing()
                }
            }
            _ => Ok(()),
        }
    }
}

/// Put a run file (`graph.json`, `config.json`) whole, replacing any.
pub fn put_run_file(url: &str, run: &str, file: &str, bytes: Vec<u8>) -> Result<()> {
    names::run(run)?;
    let bucket = Bucket::open(url)?;
    bucket.ensure_store()?;
    bucket.put(&format!("{}/{file}", format::run_dir(run)), bytes.into())
}

/// Put a run file unless it exists (conditional create: the first writer of a run writes
/// `graph.json`); returns whether this call wrote it.
pub fn put_run_file_once(url: &str, run: &str, file: &str, bytes: Vec<u8>) -> Result<bool> {
    names::run(run)?;
    let bucket = Bucket::open(url)?;
    bucket.ensure_store()?;
    let rel = format!("{}/{file}", format::run_dir(run));
    match bucket.put_mode(&rel, bytes.into(), PutMode::Create) {
        Ok(_) => Ok(true),
        Err(object_store::Error::AlreadyExists { .. })
        | Err(object_store::Error::Precondition { .. }) => Ok(false),
        Err(e) => Err(bucket.err(&rel, "create", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("s3://bucket/prefix"));
        assert!(is_url("gs://bucket"));
        assert!(is_url("az://container/p"));
        assert!(!is_url("/tmp/store"));
        assert!(!is_url("store.zip"));
        assert!(!is_url("s3:/bucket"));
    }

    #[test]
    fn manifests_naming_paths_outside_their_segments_are_refused() {
        let mut m = Manifest::new("r", "w", "s");
        m.index.push(LogPart {
            key: "segments/000000-s.jsonl".into(),
            len: 3,
            segments: 1,
        });
        let ok = serde_json::to_vec(&m).unwrap();
        assert!(Manifest::parse(&ok, "s3://b", "r", "w").is_ok());
        for bad in [
            "../../x",
            "segments/../x",
            "segments/a/b",
            "other/x",
            "/segments/x",
        ] {
            m.index[0].key = bad.into();
            let text = serde_json::to_vec(&m).unwrap();
            let e = Manifest::parse(&text, "s3://b", "r", "w").unwrap_err();
            assert!(e.to_string().contains("manifest unreadable"), "{bad}: {e}");
        }
        assert!(Manifest::parse(b"{", "s3://b", "r", "w").is_err());
    }

    #[test]
    fn paths_map_to_what_they_are() {
        assert!(matches!(
            node("runs/r/w/index.jsonl"),
            Node::Log("r", "w", false)
        ));
        assert!(matches!(
            node("runs/r/w/readings.jsonl"),
            Node::Log("r", "w", true)
        ));
        assert!(matches!(node("runs/r/w/manifest.json"), Node::Hidden));
        assert!(matches!(node("runs/r/graph.json"), Node::Plain));
        assert!(matches!(node("runs/r/w"), Node::WriterDir("r", "w")));
        assert!(matches!(node("summaries.jsonl"), Node::Absent));
        assert!(matches!(
            node("runs/r/w/segments/000001-x.pack"),
            Node::Pack("r", "w", _)
        ));
    }
}

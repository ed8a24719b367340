//! What a store on object storage can fail with: one enum, inside the store's own error.

/// Everything a store on object storage can fail with (inside `StoreError::Object`).
#[derive(Debug)]
pub enum ObjectError {
    /// The store URL is not one this build reads, or the object store could not be set up
    /// from it and the environment (no bucket, a bad option). Not retryable: fix the URL or
    /// the environment (`AWS_ENDPOINT_URL`, `AWS_REGION`, …).
    BadUrl { url: String, reason: String },
    /// A request failed: network, permission, throttling, the server (`op` on `key`). The
    /// crate has retried already; retrying later may help.
    Request {
        url: String,
        key: String,
        op: &'static str,
        source: object_store::Error,
    },
    /// Another process opened the same run and writer id and replaced this writer's
    /// manifest: this one stops rather than overwrite it. Give each process its own writer id.
    Superseded {
        url: String,
        run: String,
        writer: String,
    },
    /// A manifest is not valid JSON, is over the largest a reader reads (64 MiB), names too many objects, or
    /// names an object outside its writer's folder. Readers do not read that writer.
    BadManifest {
        url: String,
        run: String,
        writer: String,
        reason: String,
    },
    /// The writer's uploader thread is gone (it failed earlier, or could not be started);
    /// what it had not put is lost.
    UploaderGone {
        url: String,
        run: String,
        writer: String,
    },
    /// A share of the store cannot be made as asked (`somatize share`): a presigned link's
    /// lifetime outside 1 s to 7 days. Not retryable: change the option.
    BadShare { url: String, reason: String },
}

impl std::fmt::Display for ObjectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use ObjectError::*;
        match self {
            BadUrl { url, reason } => write!(f, "{url}: not a store this build can open: {reason}"),
            Request {
                url,
                key,
                op,
                source,
            } => write!(f, "{url}: could not {op} {key}: {source}"),
            Superseded { url, run, writer } => write!(
                f,
                "{url}: run {run:?}, writer {writer:?}: another process took this writer over \
                 (it replaced the manifest); give each process its own writer id"
            ),
            BadManifest {
                url,
                run,
                writer,
                reason,
            } => write!(
                f,
                "{url}: run {run:?}, writer {writer:?}: manifest unreadable: {reason}"
            ),
            BadShare { url, reason } => write!(f, "{url}: cannot share: {reason}"),
            UploaderGone { url, run, writer } => write!(
                f,
                "{url}: run {run:?}, writer {writer:?}: the uploader stopped; later forwards were not stored"
            ),
        }
    }
}

impl std::error::Error for ObjectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ObjectError::Request { source, .. } => Some(source),
            _ => None,
        }
    }
}

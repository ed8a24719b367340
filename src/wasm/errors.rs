//! The core's errors as JS `SomatizeError`s: a stable `code` per error variant, and the file, run and forward it concerns.
//!
//! The core knows nothing of JS: this module maps its error enums (`StoreError`,
//! `ReadbackError`, `HealthError`, `TensorError`) onto the codes of [`codes`], and [`with_code`] gives the JS
//! error leaving an exported call its code, its details and the package's `SomatizeError`
//! prototype (registered by the package's entry through `useErrorClass`).

use crate::health::store::HealthError;
use crate::readback::ReadbackError;
use crate::store::StoreError;
use crate::tensor::{Problem, TensorError};
use wasm_bindgen::prelude::*;

/// The stable `error.code`s of the package's `SomatizeError`, for a caller to branch on
/// instead of a message (pkg/README.md lists them). Each names what went wrong, not where.
pub mod codes {
    /// An option, or a field of a tensor or spec, that the call does not take.
    pub const UNKNOWN_OPTION: &str = "UNKNOWN_OPTION";
    /// An option of the wrong type or a missing one (`{run}` missing, a forward not a number).
    pub const BAD_OPTION: &str = "BAD_OPTION";
    /// The store holds no run of that name.
    pub const NO_SUCH_RUN: &str = "NO_SUCH_RUN";
    /// The run holds no forward of that number.
    pub const NO_SUCH_FORWARD: &str = "NO_SUCH_FORWARD";
    /// No store function of that name.
    pub const NO_SUCH_FUNCTION: &str = "NO_SUCH_FUNCTION";
    /// What was opened is not a somatize store (no format file, or not ours).
    pub const NOT_A_STORE: &str = "NOT_A_STORE";
    /// The store was written by a newer major format version than this package reads.
    pub const NEWER_FORMAT: &str = "NEWER_FORMAT";
    /// A forward's blob is truncated, fails its checksum, or holds a malformed entry.
    pub const CORRUPT_BLOB: &str = "CORRUPT_BLOB";
    /// A zip (a snapshot, or a blob's container) that cannot be read as one.
    pub const BAD_ZIP: &str = "BAD_ZIP";
    /// An index line that is not JSON or lacks a field.
    pub const BAD_INDEX_LINE: &str = "BAD_INDEX_LINE";
    /// A run, writer or tensor name the store refuses (empty, too long, could escape it).
    pub const BAD_NAME: &str = "BAD_NAME";
    /// A file the store should hold is not there.
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// A read failed (the operating system, the network, or a source object threw).
    pub const IO: &str = "IO";
    /// The run's `graph.json` is not a graph.
    pub const BAD_GRAPH: &str = "BAD_GRAPH";
    /// The run has no forward whose blob could be read: nothing to judge.
    pub const NO_FORWARDS: &str = "NO_FORWARDS";
    /// The format does not allow what was asked of a writer.
    pub const REFUSED: &str = "REFUSED";
    /// Another process holds the writer's lock.
    pub const WRITER_BUSY: &str = "WRITER_BUSY";
    /// A tensor file (a dump's step file) that cannot be read: truncated, corrupt, not a
    /// tensor file, or holding values the reader refuses.
    pub const BAD_TENSOR_FILE: &str = "BAD_TENSOR_FILE";
    /// A step's tensors that cannot be measured: a malformed shape, parameters that do not
    /// pair with the step before's, a declared layout that does not fit its output.
    pub const BAD_STEP: &str = "BAD_STEP";
    /// A step's summary that cannot be used: not a summary's structure, or offsets and
    /// counts that do not fit its numbers.
    pub const BAD_SUMMARY: &str = "BAD_SUMMARY";
}

/// What a JS error carries besides its message: its code and, when known, the store file,
/// run and forward it concerns.
#[derive(Default, Clone)]
pub(super) struct Details {
    pub code: &'static str,
    pub file: Option<String>,
    pub run: Option<String>,
    pub forward: Option<u64>,
}

impl Details {
    pub(super) fn code(code: &'static str) -> Self {
        Details {
            code,
            ..Details::default()
        }
    }
    pub(super) fn file(mut self, file: &str) -> Self {
        self.file = Some(file.to_string());
        self
    }
    fn run(mut self, run: &str) -> Self {
        self.run = Some(run.to_string());
        self
    }
    fn forward(mut self, forward: u64) -> Self {
        self.forward = Some(forward);
        self
    }
}

/// A core error with a code for JS.
pub(super) trait Coded: std::fmt::Display {
    /// The code and details of this error.
    fn details(&self) -> Details;
}

impl Coded for StoreError {
    fn details(&self) -> Details {
        use codes::*;
        use StoreError::*;
        match self {
            Io { path, .. } => Details::code(IO).file(path),
            NotFound { path } => Details::code(NOT_FOUND).file(path),
            NotAStore { path, .. } => Details::code(NOT_A_STORE).file(path),
            NewerFormat { .. } => Details::code(NEWER_FORMAT).file("somatize-store.json"),
            BadName { .. } => Details::code(BAD_NAME),
            BadIndexLine { run, .. } => Details::code(BAD_INDEX_LINE).run(run),
            BlobLength {
                run, forward, path, ..
            }
            | BlobChecksum {
                run, forward, path, ..
            } => Details::code(CORRUPT_BLOB)
                .file(path)
                .run(run)
                .forward(*forward),
            BadZip { path, .. } => Details::code(BAD_ZIP).file(path),
            BadEntry { path, .. } => Details::code(CORRUPT_BLOB).file(path),
            Refused { .. } => Details::code(REFUSED),
            WriterBusy { path } => Details::code(WRITER_BUSY).file(path),
        }
    }
}

impl Coded for ReadbackError {
    fn details(&self) -> Details {
        match self {
            ReadbackError::Store(e) => e.details(),
            ReadbackError::NoSuchRun { run } => Details::code(codes::NO_SUCH_RUN).run(run),
            ReadbackError::NoSuchForward { run, forward } => Details::code(codes::NO_SUCH_FORWARD)
                .run(run)
                .forward(*forward),
            ReadbackError::Forward {
                run,
                forward,
                source,
                ..
            } => {
                let inner = source.details();
                // A blob that cannot be read is a corrupt one, whatever layer noticed.
                let code = match inner.code {
                    codes::BAD_ZIP => codes::CORRUPT_BLOB,
                    code => code,
                };
                Details { code, ..inner }.run(run).forward(*forward)
            }
        }
    }
}

impl Coded for HealthError {
    fn details(&self) -> Details {
        match self {
            HealthError::Store(e) => e.details(),
            HealthError::NoSuchRun { run } => Details::code(codes::NO_SUCH_RUN).run(run),
            HealthError::Graph { path, .. } => Details::code(codes::BAD_GRAPH).file(path),
            HealthError::Empty { run, .. } => Details::code(codes::NO_FORWARDS).run(run),
        }
    }
}

impl Coded for TensorError {
    fn details(&self) -> Details {
        let code = match self.problem {
            // The source's read failed (a `readAtInto` that threw): not the file's fault.
            Problem::Io(_) => codes::IO,
            _ => codes::BAD_TENSOR_FILE,
        };
        Details::code(code).file(&self.file)
    }
}

thread_local! {
    /// The details of the error being returned by the current exported call (see [`coded`]).
    static PENDING: std::cell::RefCell<Option<Details>> = const { std::cell::RefCell::new(None) };
    /// The package's `SomatizeError` class, once its entry has registered it.
    static CLASS: std::cell::RefCell<Option<js_sys::Function>> = const { std::cell::RefCell::new(None) };
}

/// Register the package's `SomatizeError` class: errors with a code are made its instances.
#[wasm_bindgen(js_name = useErrorClass)]
pub fn use_error_class(class: js_sys::Function) {
    CLASS.with(|c| *c.borrow_mut() = Some(class));
}

/// A JS error with `message` whose code and details will be `details`: they are attached
/// where the error leaves wasm ([`with_code`]). Made only where the error is returned at once,
/// so they are those of the error thrown (wasm is single-threaded; each call starts clear).
pub(super) fn coded_with(details: Details, message: impl std::fmt::Display) -> JsError {
    PENDING.with(|p| *p.borrow_mut() = Some(details));
    JsError::new(&message.to_string())
}

/// A JS error with the core's message and the code `code`.
pub(super) fn coded(code: &'static str, message: impl std::fmt::Display) -> JsError {
    coded_with(Details::code(code), message)
}

/// A core error as a JS error with its code and details.
pub(super) fn core_err<E: Coded>(e: E) -> JsError {
    coded_with(e.details(), e)
}

/// A core error as a JS error, its message led by `name` (the store's name when opening).
pub(super) fn core_err_in<E: Coded>(name: &str, e: E) -> JsError {
    coded_with(e.details(), format!("{name}: {e}"))
}

/// Run an exported call and give its error the code and details [`coded`] chose for it, if
/// any, making it a `SomatizeError` (when the package has registered the class).
pub(super) fn with_code<T>(call: impl FnOnce() -> Result<T, JsError>) -> Result<T, JsValue> {
    PENDING.with(|p| *p.borrow_mut() = None);
    call().map_err(|e| {
        let value: JsValue = e.into();
        if let Some(d) = PENDING.with(|p| p.borrow_mut().take()) {
            // Setting properties on an Error object cannot fail.
            let set = |key: &str, v: JsValue| {
                let _ = js_sys::Reflect::set(&value, &JsValue::from_str(key), &v);
            };
            set("code", d.code.into());
            if let Some(file) = d.file {
                set("file", file.into());
            }
            if let Some(run) = d.run {
                set("run", run.into());
            }
            if let Some(forward) = d.forward {
                set("forward", JsValue::from_f64(forward as f64));
            }
            CLASS.with(|c| {
                let class = c.borrow();
                let proto = class
                    .as_ref()
                    .and_then(|class| js_sys::Reflect::get(class, &"prototype".into()).ok());
                if let Some(proto) = proto.as_ref().and_then(|p| p.dyn_ref::<js_sys::Object>()) {
                    js_sys::Object::set_prototype_of(
                        value.unchecked_ref::<js_sys::Object>(),
                        proto,
                    );
                }
            });
        }
        value
    })
}

//! The store: a versioned folder of runs; per writer an append-only index and packs of blobs,
//! one blob per forward. See docs/store-format.md for the exact format.

pub mod blob;
pub mod config;
pub mod error;
pub mod fact;
mod fastline;
pub mod format;
pub mod fs;
pub mod index;
pub mod listing;
pub mod names;
pub mod npy;
#[cfg(not(target_arch = "wasm32"))]
pub mod object;
#[cfg(not(target_arch = "wasm32"))]
pub mod object_error;
#[cfg(not(target_arch = "wasm32"))]
pub mod pack;
#[cfg(not(target_arch = "wasm32"))]
pub mod pipeline;
pub mod reading;
pub mod scan;
#[cfg(not(target_arch = "wasm32"))]
pub mod share;
#[cfg(not(target_arch = "wasm32"))]
pub mod snapshot;
pub mod summary;
#[cfg(not(target_arch = "wasm32"))]
pub mod writer;
pub mod zipfile;

pub use blob::{Blob, ForwardMeta, ForwardRecord, ObservedValues, TensorBytes};
pub use error::StoreError;
pub use fact::{Fact, Field, Fields, NodeStats, Num};
#[cfg(not(target_arch = "wasm32"))]
pub use fs::{DirFs, FileSource};
pub use fs::{RangeSource, StoreFs, ZipFs};
pub use index::{IndexEntry, IndexLine};
pub use listing::ListedFs;
pub use reading::{ExitRecord, Reading};
pub use scan::{RunScan, ScanItem, Store};
#[cfg(not(target_arch = "wasm32"))]
pub use writer::Writer;

//! Every native integration test in one binary: one link instead of forty (each linked the
//! whole crate with object storage, the server and faer: minutes of linking and gigabytes of
//! disk). Each file stays where it was and is one module here (`cargo test --test native cli::`).
//! Separate binaries: objstore.rs (it sets the process environment for the S3 client) and the
//! wasm_*.rs files (wasm-bindgen tests, built for wasm32 only).

/// Helpers the modules share (`use crate::common;`).
mod common;

#[path = "cli.rs"]
mod cli;
#[path = "cli_diagnose.rs"]
mod cli_diagnose;
#[path = "cli_health.rs"]
mod cli_health;
#[path = "cli_stats.rs"]
mod cli_stats;
#[path = "closed_pipe.rs"]
mod closed_pipe;
#[path = "compare.rs"]
mod compare;
#[path = "demo.rs"]
mod demo;
#[path = "demo_command.rs"]
mod demo_command;
#[path = "fuzz_regressions.rs"]
mod fuzz_regressions;
#[path = "gantt_kept.rs"]
mod gantt_kept;
#[path = "health_cache.rs"]
mod health_cache;
#[path = "health_docs.rs"]
mod health_docs;
#[path = "health_example_cnn.rs"]
mod health_example_cnn;
#[path = "health_import.rs"]
mod health_import;
#[path = "health_layouts.rs"]
mod health_layouts;
#[path = "health_measure.rs"]
mod health_measure;
#[path = "health_order.rs"]
mod health_order;
#[path = "health_runs.rs"]
mod health_runs;
#[path = "health_store.rs"]
mod health_store;
#[path = "linalg.rs"]
mod linalg;
#[path = "observe_files.rs"]
mod observe_files;
#[path = "readback.rs"]
mod readback;
#[path = "reductions.rs"]
mod reductions;
#[path = "report.rs"]
mod report;
#[path = "runtime.rs"]
mod runtime;
#[path = "serve.rs"]
mod serve;
#[path = "spec_ids.rs"]
mod spec_ids;
#[path = "store_crash.rs"]
mod store_crash;
#[path = "store_guard.rs"]
mod store_guard;
#[path = "store_listing.rs"]
mod store_listing;
#[path = "store_packs.rs"]
mod store_packs;
#[path = "store_record.rs"]
mod store_record;
#[path = "store_roundtrip.rs"]
mod store_roundtrip;
#[path = "summary_wire.rs"]
mod summary_wire;
#[path = "temporal.rs"]
mod temporal;
#[path = "tensor_dtypes.rs"]
mod tensor_dtypes;
#[path = "tensor_files.rs"]
mod tensor_files;

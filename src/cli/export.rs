//! `somatize export STORE --run R [--last N] -o snap.zip`: a snapshot zip of a store's tree.

use crate::store::{snapshot, DirFs, Store};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: a folder, or object storage (s3://bucket/prefix, gs://…, az://…).
    store: PathBuf,
    /// The run(s) to export (repeatable); all runs when not given.
    #[arg(long)]
    run: Vec<String>,
    /// Only the last N forwards of each run (and their blobs).
    #[arg(long)]
    last: Option<usize>,
    /// The snapshot file to write.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if let Some(url) = super::read::object_url(&args.store) {
        let fs = crate::store::object::ObjectFs::open(url).map_err(|e| e.to_string())?;
        let shown = crate::store::object::redacted(url);
        let store = Store::open(fs).map_err(|e| format!("{shown}: {e}"))?;
        return done(&store, &args);
    }
    let store = Store::open(DirFs::new(&args.store))
        .map_err(|e| format!("{}: {e}", args.store.display()))?;
    done(&store, &args)
}

fn done<F: crate::store::StoreFs>(store: &Store<F>, args: &Args) -> Result<ExitCode, String> {
    let sum =
        snapshot::export(store, &args.run, args.last, &args.output).map_err(|e| e.to_string())?;
    eprintln!(
        "somatize export: {} runs, {} writers, {} forwards, {} blobs, {} bytes -> {}",
        sum.runs,
        sum.writers,
        sum.forwards,
        sum.blobs,
        sum.bytes,
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

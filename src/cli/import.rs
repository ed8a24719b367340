//! `somatize import DIR --store S --run R`: per-step NPZ dumps become a run of a store.

use crate::import::import;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The folder of `step_<n>.npz` dumps (and an optional graph.json).
    dir: PathBuf,
    /// The store to write into (created if missing): a folder, or s3://bucket/prefix, gs://…, az://….
    #[arg(long)]
    store: PathBuf,
    /// The run's name.
    #[arg(long)]
    run: String,
    /// Keep only facts and statistics, not the tensors.
    #[arg(long)]
    no_tensors: bool,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let report = import(
        &args.dir,
        &args.store,
        &args.run,
        !args.no_tensors,
        &mut |_| {},
    )
    .map_err(|e| e.to_string())?;
    let steps = report
        .steps
        .map_or(String::new(), |(a, b)| format!(" (steps {a}..{b})"));
    let graph = if report.graph {
        "with its graph"
    } else {
        "without a graph.json (node order from the keys)"
    };
    eprintln!(
        "somatize import: {} forwards{steps} of run {} into {}, {graph}",
        report.forwards,
        args.run,
        args.store.display()
    );
    Ok(ExitCode::SUCCESS)
}

//! `somatize report STORE --run R -o report.html [--last N]`: one self-contained HTML file of a run;
//! `--runs GLOB` for one file of several runs (the page's run table with their health, to compare).

use crate::report::{write_report, ReportOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store folder (or snapshot .zip).
    store: PathBuf,
    /// The run to show.
    #[arg(long, required_unless_present = "runs")]
    run: Option<String>,
    /// Every run whose name matches this glob (`*`, `?`), in one file (with --run: that one too).
    #[arg(long)]
    runs: Option<String>,
    /// Only the run's last N forwards (a smaller file).
    #[arg(long)]
    last: Option<usize>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// The folder holding www/ and pkg/ (default: the source tree this binary was built from).
    #[arg(long, env = "SOMATIZE_ASSETS")]
    assets: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let assets = super::assets_dir(args.assets);
    let mut more = Vec::new();
    if let Some(glob) = &args.runs {
        let store = super::read::open(&args.store)?;
        more = store
            .runs()
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|r| crate::health::compare::glob_match(glob, r))
            .collect();
        if more.is_empty() {
            return Err(format!("{}: no run matches {glob:?}", args.store.display()));
        }
    }
    let run = match args.run {
        Some(r) => r,
        None => more.last().cloned().unwrap_or_default(),
    };
    let options = ReportOptions {
        assets,
        run,
        more,
        last: args.last,
    };
    let sum = write_report(&args.store, &options, &args.output).map_err(|e| e.to_string())?;
    eprintln!(
        "somatize report: run {}, {} forwards, {} bytes of snapshot, {} modules -> {} ({} bytes); opens offline",
        options.run,
        sum.forwards,
        sum.snapshot_bytes,
        sum.modules,
        args.output.display(),
        sum.bytes
    );
    Ok(ExitCode::SUCCESS)
}

//! `somatize report STORE --run R -o report.html [--last N]`: one self-contained HTML file of a run;
//! `--runs GLOB` for one file of several runs (the page's run table with their health, to compare);
//! `somatize report --widget -o page.html`: the notebook widget's page (no store) and its wasm
//! (`page.wasm`).

use crate::report::{write_report, write_widget_page, ReportOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store folder, snapshot .zip, or object storage URL (s3://bucket/prefix, gs://…, az://…).
    #[arg(required_unless_present = "widget")]
    store: Option<PathBuf>,
    /// The run to show.
    #[arg(long, required_unless_present_any = ["runs", "widget"])]
    run: Option<String>,
    /// Every run whose name matches this glob (`*`, `?`), in one file (with --run: that one too).
    #[arg(long)]
    runs: Option<String>,
    /// Write the notebook widget's page instead, and its wasm beside it (somatize.show ships them; no store).
    #[arg(long, conflicts_with_all = ["store", "run", "runs", "last"])]
    widget: bool,
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
    let Some(store) = args.store.filter(|_| !args.widget) else {
        let bytes = write_widget_page(&assets, &args.output).map_err(|e| e.to_string())?;
        eprintln!(
            "somatize report: the notebook widget's page -> {} ({bytes} bytes), its wasm -> {}",
            args.output.display(),
            args.output.with_extension("wasm").display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let mut more = Vec::new();
    if let Some(glob) = &args.runs {
        let opened = super::read::open(&store)?;
        more = opened
            .runs()
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|r| crate::health::compare::glob_match(glob, r))
            .collect();
        if more.is_empty() {
            return Err(format!("{}: no run matches {glob:?}", store.display()));
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
    let sum = write_report(&store, &options, &args.output).map_err(|e| e.to_string())?;
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

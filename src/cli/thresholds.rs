//! `somatize thresholds`: the default bounds a verdict is taken at, and where each comes from.

use crate::health::thresholds::to_json;
use somatize_verdict::{Origin, Thresholds, BOUNDS};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print `{"name": value, …}` (the shape `--thresholds FILE.json` reads) instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if args.json {
        outln!("{}", to_json(&Thresholds::default()));
        return Ok(ExitCode::SUCCESS);
    }
    let width = BOUNDS.iter().map(|b| b.name.len()).max().unwrap_or(0);
    outln!(
        "{:<width$}  {:>8}  {:<9}  source",
        "threshold",
        "default",
        "origin"
    );
    for b in BOUNDS {
        let (origin, source) = match b.origin {
            Origin::Published(s) => ("published", s),
            Origin::Ours(s) => ("ours", s),
        };
        let value = number(b.default);
        outln!("{:<width$}  {value:>8}  {origin:<9}  {source}", b.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// A bound's value for people: `1e-7` rather than `0.0000001`.
pub(super) fn number(v: f64) -> String {
    if v != 0.0 && v.abs() < 1e-2 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

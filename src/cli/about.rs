//! `somatize about FLAG`: what a flag means, what to do, and the bounds it is judged at.

use crate::health::json::{about_json, unknown_flag};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The flag, e.g. VANISHING or DEAD_CHANNELS (a counted form like DEAD_CHANNELS(3) works).
    flag: String,
    /// Print it as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let about = about_json(&args.flag).ok_or_else(|| unknown_flag(&args.flag))?;
    if args.json {
        let text = serde_json::to_string_pretty(&about).map_err(|e| e.to_string())?;
        outln!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", about.flag);
    outln!("  means       {}", about.means);
    outln!("  what to do  {}", about.todo);
    if about.bounds.is_empty() {
        outln!("  judged at   any count above 0 (no threshold)");
    }
    for (i, b) in about.bounds.iter().enumerate() {
        let label = if i == 0 { "judged at" } else { "" };
        outln!(
            "  {label:<10}  {} = {} ({}: {})",
            b.name,
            super::thresholds::number(b.default),
            b.origin,
            b.source
        );
    }
    outln!("  reads       {}", about.metrics.join(", "));
    outln!("  sources     {}", about.sources);
    outln!("  (the bounds are one opinion; `somatize thresholds` lists them all)");
    Ok(ExitCode::SUCCESS)
}

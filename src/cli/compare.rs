//! `somatize compare STORE [--runs GLOB] [--json]`: every run at a glance, one row per run:
//! its verdict (healthy, or each fault's root flag, node and since when), the final and best
//! of its loss, forwards, breaks and how it ended.

use super::read::{open, opt, print_skips, table, utc};
use crate::health::compare::{compare, CompareOptions, RunSummary};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: a folder, or a snapshot .zip.
    store: PathBuf,
    /// Only runs whose names match this glob (`*` any characters, `?` one).
    #[arg(long)]
    runs: Option<String>,
    /// Print a JSON list of `{run, healthy, flags: [{flag, node, since, advice}], final, best,
    /// forwards, broke, ended_ok, …}`.
    #[arg(long)]
    json: bool,
}

/// Six significant digits, in exponent form when very large or small.
fn number(v: Option<f64>) -> String {
    match v {
        None => String::new(),
        Some(v) if v != 0.0 && !(1e-4..1e6).contains(&v.abs()) => format!("{v:.5e}"),
        Some(v) => format!("{v:.6}"),
    }
}

fn ended(r: &RunSummary) -> String {
    match r.ended_ok {
        Some(true) => "ok".into(),
        Some(false) => "failed".into(),
        None => "being written (or cut off)".into(),
    }
}

/// The rows as an aligned table.
pub fn compare_table(rows: &[RunSummary]) -> String {
    let body = rows
        .iter()
        .map(|r| {
            vec![
                r.run.clone(),
                r.verdict_text(),
                number(r.final_value),
                number(r.best),
                r.forwards.to_string(),
                r.broke.to_string(),
                ended(r),
                opt(r.last_written_us.map(utc)),
            ]
        })
        .collect();
    table(
        &[
            "run",
            "verdict",
            "final loss",
            "best loss",
            "forwards",
            "broke",
            "ended",
            "last written (UTC)",
        ],
        body,
    )
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let store = open(&args.store)?;
    let options = CompareOptions {
        runs: args.runs.clone(),
        lazy: false,
    };
    let answer = compare(&store, &options).map_err(|e| e.to_string())?;
    print_skips(&answer.skipped);
    if args.json {
        let text = serde_json::to_string_pretty(&answer.rows).map_err(|e| e.to_string())?;
        outln!("{text}");
    } else if answer.rows.is_empty() {
        outln!(
            "no run{}",
            args.runs
                .map(|g| format!(" matches {g:?}"))
                .unwrap_or_default()
        );
    } else {
        out!("{}", compare_table(&answer.rows));
    }
    Ok(ExitCode::SUCCESS)
}

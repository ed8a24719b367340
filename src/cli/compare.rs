//! `somatize compare STORE [--runs GLOB] [--json]`: every run at a glance, one row per run:
//! its verdict (healthy, or each fault's root flag, node and since when), the final and best
//! of its loss, forwards, breaks and how it ended. `--summarise` first judges every run matched
//! and appends its summary line to the store's `summaries.jsonl` (runs recorded before the
//! summaries carried what they carry now are then read from one file by later scans).

use super::read::{open, opt, print_skips, table, utc};
use crate::health::compare::{compare, group, CompareOptions, GroupSummary, RunSummary};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: a folder, a snapshot .zip, or object storage (s3://bucket/prefix, gs://…, az://…).
    store: PathBuf,
    /// Only runs whose names match this glob (`*` any characters, `?` one).
    #[arg(long)]
    runs: Option<String>,
    /// Print a JSON list of `{run, healthy, flags: [{flag, node, since, advice}], final, best,
    /// forwards, broke, ended_ok, …}`.
    #[arg(long)]
    json: bool,
    /// First judge every run matched now and append its summary (with the sketch of its loss)
    /// to the store's summaries.jsonl, as a recorder does when it finishes (a folder only).
    #[arg(long)]
    summarise: bool,
    /// One row per value of this recorded config field (`runs/<run>/config.json`, written by
    /// `somatize record --config KEY=VALUE`; `a.b` reaches into an object): its runs, how
    /// many were healthy, and their final and best loss.
    #[arg(long, value_name = "FIELD")]
    group_by: Option<String>,
}

/// The writer id a summary written by `compare --summarise` is appended as.
pub const SUMMARISE_WRITER: &str = "compare";

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

/// The groups as an aligned table.
pub fn group_table(groups: &[GroupSummary]) -> String {
    let field = groups.first().map_or("config", |g| g.field.as_str());
    let body = groups
        .iter()
        .map(|g| {
            vec![
                g.value.clone().unwrap_or_else(|| "(none)".into()),
                g.runs.len().to_string(),
                g.healthy.to_string(),
                g.sick.to_string(),
                g.unjudged.to_string(),
                number(g.final_mean),
                format!("{}–{}", number(g.final_min), number(g.final_max)),
                number(g.best),
            ]
        })
        .collect();
    table(
        &[
            field,
            "runs",
            "healthy",
            "sick",
            "not judged",
            "final loss (mean)",
            "final loss (min–max)",
            "best loss",
        ],
        body,
    )
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let store = open(&args.store)?;
    if args.summarise {
        if !args.store.is_dir() {
            return Err(format!(
                "--summarise writes into a store folder; {} is not one",
                args.store.display()
            ));
        }
        for run in store.runs().map_err(|e| e.to_string())? {
            if args
                .runs
                .as_deref()
                .is_some_and(|g| !crate::health::compare::glob_match(g, &run))
            {
                continue;
            }
            crate::health::compare::write_summary(&args.store, &run, SUMMARISE_WRITER, true, false)
                .map_err(|e| e.to_string())?;
        }
    }
    let options = CompareOptions {
        runs: args.runs.clone(),
        lazy: false,
    };
    let answer = compare(&store, &options).map_err(|e| e.to_string())?;
    print_skips(&answer.skipped);
    if let Some(field) = &args.group_by {
        let groups = group(&answer.rows, field);
        if args.json {
            let text = serde_json::to_string_pretty(&groups).map_err(|e| e.to_string())?;
            outln!("{text}");
        } else {
            out!("{}", group_table(&groups));
        }
        return Ok(ExitCode::SUCCESS);
    }
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

//! `somatize figure KIND STORE --run R [-o fig.json]`: a figure of a run as Plotly figure JSON
//! (stdout without -o): progress, spent, gantt, machines, and the health figures profile,
//! flags and overlaid; skips go to stderr.

use super::read::{open, pick_run, print_skips};
use crate::figures::{gantt, machines, progress, spent};
use crate::readback::LiveOptions;
use std::path::PathBuf;
use std::process::ExitCode;

/// Which figure.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The loss (or --of) per forward, its rolling mean, time per forward, breaks.
    Progress,
    /// Time per node, coloured by where it ran.
    Spent,
    /// One forward (--forward, default 0) on a timeline.
    Gantt,
    /// Working vs waited on, per machine.
    Machines,
    /// Health: one measurement (--of, default grad_norm) across the nodes, flagged ones in the alarm colour.
    Profile,
    /// Health: a table of node, flag and what to do.
    Flags,
    /// Health: the graph, flagged nodes outlined and badged.
    Overlaid,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The figure.
    kind: Kind,
    /// The store: a folder, or a snapshot .zip.
    store: PathBuf,
    /// The run (needed when the store holds more than one).
    #[arg(long)]
    run: Option<String>,
    /// progress: the rolling mean's window in forwards (0: none).
    #[arg(long, default_value_t = 0)]
    smooth: usize,
    /// progress: the field drawn (default loss.value); profile: the metric (default grad_norm).
    #[arg(long)]
    of: Option<String>,
    /// profile, flags, overlaid: thresholds to judge at (a JSON file of overrides).
    #[arg(long)]
    thresholds: Option<PathBuf>,
    /// spent, machines, and the health figures: only the last N forwards.
    #[arg(long)]
    last: Option<usize>,
    /// gantt: the forward.
    #[arg(long, default_value_t = 0)]
    forward: u64,
    /// Write the figure here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
}

/// Draw a health figure: the run judged at the thresholds given (or the defaults).
fn draw_health(args: &Args, run: String) -> Result<ExitCode, String> {
    use super::diagnose::Kind as H;
    let kind = match args.kind {
        Kind::Flags => H::Flags,
        Kind::Overlaid => H::Overlaid,
        _ => H::Profile,
    };
    let over = super::diagnose::Over {
        store: args.store.clone(),
        run,
        last: args.last,
    };
    let of = args.of.as_deref().unwrap_or("grad_norm");
    let figure = super::diagnose::health_figure(kind, &over, of, args.thresholds.as_deref())?;
    write(args, &figure)
}

fn write(args: &Args, figure: &crate::figures::Figure) -> Result<ExitCode, String> {
    let text = serde_json::to_string(&figure.to_value()).map_err(|e| e.to_string())?;
    match &args.output {
        Some(path) => std::fs::write(path, text + "\n")
            .map_err(|e| format!("{}: could not write: {e}", path.display()))?,
        None => outln!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let store = open(&args.store)?;
    let run = pick_run(&store, &args.run)?;
    let err = |e: crate::readback::ReadbackError| e.to_string();
    let answer = match args.kind {
        Kind::Progress => {
            let mut o = LiveOptions {
                smooth: args.smooth,
                ..LiveOptions::default()
            };
            if let Some(of) = &args.of {
                o.of = of.clone();
            }
            progress::progress(&store, &run, o).map_err(err)?
        }
        Kind::Spent => spent::spent(&store, &run, args.last).map_err(err)?,
        Kind::Machines => machines::machines(&store, &run, args.last).map_err(err)?,
        Kind::Gantt => {
            crate::readback::Answer::new(gantt::gantt(&store, &run, args.forward).map_err(err)?)
        }
        Kind::Profile | Kind::Flags | Kind::Overlaid => return draw_health(&args, run),
    };
    print_skips(&answer.skipped);
    write(&args, &answer.rows)
}

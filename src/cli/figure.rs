//! `somatize figure progress|spent|gantt|machines STORE --run R [-o fig.json]`: a figure of a
//! run as Plotly figure JSON (stdout without -o); skips go to stderr.

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
    /// progress: the field drawn.
    #[arg(long)]
    of: Option<String>,
    /// spent, machines: only the last N forwards.
    #[arg(long)]
    last: Option<usize>,
    /// gantt: the forward.
    #[arg(long, default_value_t = 0)]
    forward: u64,
    /// Write the figure here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
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
    };
    print_skips(&answer.skipped);
    let text = serde_json::to_string(&answer.rows.to_value()).map_err(|e| e.to_string())?;
    match &args.output {
        Some(path) => std::fs::write(path, text + "\n")
            .map_err(|e| format!("{}: could not write: {e}", path.display()))?,
        None => println!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

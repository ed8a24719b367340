//! The native command line: argument parsing and dispatch to one module per command.

mod about;
mod demo;
mod diagnose;
mod export;
mod import;
mod record;
mod spec_id;
mod stats;
mod thresholds;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// What happened in a training run, and was it healthy.
#[derive(Parser, Debug)]
#[command(name = "somatize", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the 16-hex-char id of an observable spec (JSON) and its canonical form.
    SpecId(spec_id::Args),
    /// What a health flag means, what to do about it, and the bounds it is judged at.
    About(about::Args),
    /// The default thresholds a verdict is taken at, and where each comes from.
    Thresholds(thresholds::Args),
    /// Run a training command and record what it sends into a store.
    Record(record::Args),
    /// Write a snapshot zip of a store (or of some runs, or their last N forwards).
    Export(export::Args),
    /// Print every tensor's key, shape, dtype and statistics from a .npy/.npz/.pt/.safetensors file.
    Stats(stats::Args),
    /// Judge a stored run: what is wrong where, with advice (exit 0 unless --fail-on matches).
    Diagnose(diagnose::DiagnoseArgs),
    /// The numbers a verdict on a stored run is taken over: the latest of each metric per node.
    Seen(diagnose::SeenArgs),
    /// A health figure of a stored run as Plotly JSON: profile, flags or overlaid.
    HealthFigure(diagnose::FigureArgs),
    /// Turn per-step NPZ dumps (step_<n>.npz, graph.json) into a run of a store.
    Import(import::Args),
    /// Train the built-in demo networks into a store and diagnose them.
    Demo(demo::Args),
}

/// Parse the process arguments, run the command, and turn an error into exit status 2.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::SpecId(args) => spec_id::run(args),
        Command::About(args) => about::run(args),
        Command::Thresholds(args) => thresholds::run(args),
        Command::Record(args) => record::run(args),
        Command::Export(args) => export::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Diagnose(args) => diagnose::diagnose(args),
        Command::Seen(args) => diagnose::seen(args),
        Command::HealthFigure(args) => diagnose::figure(args),
        Command::Import(args) => import::run(args),
        Command::Demo(args) => demo::run(args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("somatize: {message}");
            ExitCode::from(2)
        }
    }
}

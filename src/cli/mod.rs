//! The native command line: argument parsing and dispatch to one module per command.

mod about;
mod export;
mod observe;
mod record;
mod serve;
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
    /// Observe tensor files (one step per file) with generated observables, into a store.
    Observe(observe::Args),
    /// Serve the page, the package and a store on 127.0.0.1, and print the URL to open.
    Serve(serve::Args),
    /// Run a training command and record what it sends into a store.
    Record(record::Args),
    /// Write a snapshot zip of a store (or of some runs, or their last N forwards).
    Export(export::Args),
    /// Print every tensor's key, shape, dtype and statistics from a .npy/.npz/.pt/.safetensors file.
    Stats(stats::Args),
}

/// Parse the process arguments, run the command, and turn an error into exit status 2.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::SpecId(args) => spec_id::run(args),
        Command::About(args) => about::run(args),
        Command::Thresholds(args) => thresholds::run(args),
        Command::Observe(args) => observe::run(args),
        Command::Record(args) => record::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Export(args) => export::run(args),
        Command::Stats(args) => stats::run(args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("somatize: {message}");
            ExitCode::from(2)
        }
    }
}

//! The native command line: argument parsing and dispatch to one module per command.

mod spec_id;
mod stats;

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
    /// Print every tensor's key, shape, dtype and statistics from a .npy/.npz/.pt/.safetensors file.
    Stats(stats::Args),
}

/// Parse the process arguments, run the command, and turn an error into exit status 2.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::SpecId(args) => spec_id::run(args),
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

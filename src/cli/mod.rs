//! The native command line: argument parsing and dispatch to one module per command.

/// `println!` for every command: after a closed stdout pipe the text is dropped quietly (see
/// [`output`]).
macro_rules! outln {
    () => {
        $crate::cli::output::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::output::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for every command: after a closed stdout pipe the text is dropped quietly (see
/// [`output`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::output::print(format_args!($($arg)*))
    };
}

mod about;
mod compare;
mod demo;
mod diagnose;
mod export;
mod figure;
mod import;
mod observe;
pub mod output;
mod read;
mod record;
mod report;
mod seeds;
mod serve;
mod share;
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
    /// Share a store on object storage as links (presigned or public) the page and npm open.
    Share(share::Args),
    /// Print every tensor's key, shape, dtype and statistics from a .npy/.npz/.pt/.safetensors file.
    Stats(stats::Args),
    /// Every run in a store (folder or snapshot .zip), newest last: forwards, breaks, times.
    Runs(read::Args),
    /// Every run at a glance: its verdict, final and best loss, forwards, breaks, how it ended.
    Compare(compare::Args),
    /// Every forward of a run, with its summarised fields.
    Forwards(read::Args),
    /// One number per forward (--of, default loss.value): from the index, or a fetch each.
    Curve(read::Args),
    /// Everything that happened in one forward (--forward N), in arrival order.
    Facts(read::Args),
    /// Per node: times run, total and mean time, times read back, where (--last N).
    Nodes(read::Args),
    /// Per machine: what ran there, working vs waiting, its newest reading (--last N).
    Fleet(read::Args),
    /// Every machine's newest reading and how quiet it has been, writer against writer.
    Standing(read::Args),
    /// Write a figure of a run as Plotly JSON: progress, spent, gantt or machines.
    Figure(figure::Args),
    /// Judge a stored run: what is wrong where, with advice (exit 0 unless --fail-on matches).
    Diagnose(diagnose::DiagnoseArgs),
    /// The numbers a verdict on a stored run is taken over: the latest of each metric per node.
    Seen(diagnose::SeenArgs),
    /// Turn per-step NPZ dumps (step_<n>.npz, graph.json) into a run of a store.
    Import(import::Args),
    /// Train the built-in demo networks into a store and diagnose them.
    Demo(demo::Args),
    /// Write one self-contained HTML file showing a run as the page does (opens offline).
    Report(report::Args),
    /// The diagnosis folded onto the graph's nodes: {node: [flag, …]}, "LEAKAGE in net.2".
    Where(seeds::JudgedArgs),
    /// What is wrong, loudly: one alert per fault with its advice.
    Alerts(seeds::JudgedArgs),
    /// One measurement (--of, default grad_norm) of one node (--node) over the run.
    History(seeds::HistoryArgs),
    /// The node a key belongs to (net.2.attn within net.2 when --nodes has it).
    Within(seeds::WithinArgs),
    /// Whether `curve` would scan the index or fetch every blob: "scan" or "fetch".
    CurveCosts(seeds::CurveCostsArgs),
    /// One value `observe` wrote, read back by spec id (--id) and step (--step); null if none.
    Query(seeds::QueryArgs),
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
        Command::Share(args) => share::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Runs(args) => read::run(read::What::Runs, args),
        Command::Compare(args) => compare::run(args),
        Command::Forwards(args) => read::run(read::What::Forwards, args),
        Command::Curve(args) => read::run(read::What::Curve, args),
        Command::Facts(args) => read::run(read::What::Facts, args),
        Command::Nodes(args) => read::run(read::What::Nodes, args),
        Command::Fleet(args) => read::run(read::What::Fleet, args),
        Command::Standing(args) => read::run(read::What::Standing, args),
        Command::Figure(args) => figure::run(args),
        Command::Diagnose(args) => diagnose::diagnose(args),
        Command::Seen(args) => diagnose::seen(args),
        Command::Import(args) => import::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Report(args) => report::run(args),
        Command::Where(args) => seeds::where_(args),
        Command::Alerts(args) => seeds::alerts(args),
        Command::History(args) => seeds::history(args),
        Command::Within(args) => seeds::within(args),
        Command::CurveCosts(args) => seeds::curve_costs(args),
        Command::Query(args) => seeds::query(args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("somatize: {message}");
            ExitCode::from(2)
        }
    }
}

/// Where the page and package are served or embedded from: `--assets`/`SOMATIZE_ASSETS`, else
/// the source tree this binary was built from.
fn assets_dir(given: Option<std::path::PathBuf>) -> std::path::PathBuf {
    given.unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

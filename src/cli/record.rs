//! `somatize record --store DIR --run NAME [--every N] -- CMD ARGS…`: record a training command;
//! or `--listen PATH` with no command: record the process that connects to PATH.

use crate::record::companion::{self, Options};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: a folder (created if missing), or object storage (s3://bucket/prefix, gs://…, az://…).
    #[arg(long)]
    store: PathBuf,
    /// The run name.
    #[arg(long)]
    run: String,
    /// Keep tensors every N forwards (facts, statistics and the loss are kept every forward).
    #[arg(long, default_value_t = 1)]
    every: u64,
    /// This process's writer id (default `<host>-<pid>`).
    #[arg(long)]
    writer: Option<String>,
    /// Kinds of facts to summarise into the index (comma-separated).
    #[arg(long, default_value = "loss", value_delimiter = ',')]
    summarise: Vec<String>,
    /// Seconds between machine readings.
    #[arg(long, default_value_t = 1.0)]
    readings: f64,
    /// Forwards in flight, synced and indexed in batches (group commit) while the next are
    /// written; also at most 64 MiB of payload (1: each forward synced and indexed before
    /// the next; a kill loses at most what is in flight).
    #[arg(long, default_value_t = 16384)]
    pipeline: usize,
    /// Do not compute per-tensor statistics into stats.json.
    #[arg(long)]
    no_stats: bool,
    /// Write without fsync: faster, and a killed companion or training command still loses
    /// nothing written, but a crash of the machine itself (power, kernel) may lose the last
    /// forwards or leave a torn line (which readers skip). For scratch runs and benchmarks.
    #[arg(long)]
    no_fsync: bool,
    /// Start no command: open the channel at this socket path (it must not exist) and record
    /// what connects until every connection has closed (how `somatize.torch.watch` starts
    /// the companion itself).
    #[arg(long, conflicts_with = "command")]
    listen: Option<PathBuf>,
    /// A setting of the run (repeatable), recorded into its config (`runs/<run>/config.json`)
    /// before the command starts: `--config lr=0.01 --config optim=adam`. A value that reads
    /// as JSON is kept as such (a number, a boolean), anything else as text; runs can then be
    /// grouped by it (`somatize compare --group-by lr`, the page's overlay).
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::store::config::entry)]
    config: Vec<(String, serde_json::Value)>,
    /// With `--listen`: the training process's id, for the machine readings.
    #[arg(long, requires = "listen")]
    pid: Option<u32>,
    /// The training command and its arguments, after `--`.
    #[arg(last = true, required_unless_present = "listen")]
    command: Vec<String>,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if !(args.readings.is_finite() && args.readings > 0.0) {
        return Err("--readings must be a positive number of seconds".into());
    }
    if !args.config.is_empty() {
        let config: crate::store::config::Config = args.config.into_iter().collect();
        crate::store::config::write(&args.store, &args.run, &config)
            .map_err(|e| format!("the run's config: {e}"))?;
    }
    let opts = Options {
        store: args.store,
        run: args.run.clone(),
        every: args.every.max(1),
        writer: args.writer.unwrap_or_else(crate::record::default_writer_id),
        summarising: args
            .summarise
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect(),
        reading_every: Duration::from_secs_f64(args.readings),
        pipeline: args.pipeline.max(1),
        stats: !args.no_stats,
        durable: !args.no_fsync,
    };
    let report = match &args.listen {
        Some(socket) => companion::record_listen(opts, socket, args.pid)?,
        None => companion::record(opts, &args.command)?,
    };
    eprintln!(
        "somatize record: run {:?}: {} forwards recorded{}{}",
        args.run,
        report.forwards,
        match report.broke_at {
            Some(f) => format!(", broke at forward {f}"),
            None => String::new(),
        },
        if report.failures > 0 {
            format!(", {} writes FAILED", report.failures)
        } else {
            String::new()
        }
    );
    Ok(match (report.status, report.signal) {
        (Some(0), _) if report.failures == 0 => ExitCode::SUCCESS,
        (Some(0), _) => ExitCode::from(1),
        (Some(c), _) => ExitCode::from(c.clamp(1, 255) as u8),
        (None, Some(s)) => ExitCode::from((128 + s).clamp(1, 255) as u8),
        _ => ExitCode::from(1),
    })
}

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
    /// Several runs' field (--of, default loss.value) overlaid: --runs, --ema/--smooth, --x,
    /// --log-y, --group-by.
    Compare,
}

/// The x axis of `figure compare`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum X {
    /// The forward number.
    Forward,
    /// When each forward was written (the writer's clock).
    Wall,
    /// Seconds since each run began.
    Relative,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The figure.
    kind: Kind,
    /// The store: a folder, a snapshot .zip, or object storage (s3://bucket/prefix, gs://…, az://…).
    #[arg(required_unless_present = "rows")]
    store: Option<PathBuf>,
    /// progress only: draw these rows instead of a stored run, one JSON object a line
    /// `{forward, value, took_us, broke, error}` (`-`: stdin; a value may be "nan", "inf",
    /// "-inf"): what a Python `somatize.Live` tallied.
    #[arg(long, conflicts_with_all = ["store", "run"])]
    rows: Option<PathBuf>,
    /// progress --rows: the figure's title.
    #[arg(long, requires = "rows")]
    title: Option<String>,
    /// The run (needed when the store holds more than one).
    #[arg(long)]
    run: Option<String>,
    /// progress, compare: the rolling mean's window in forwards (0: none).
    #[arg(long, default_value_t = 0)]
    smooth: usize,
    /// compare: only runs whose names match this glob (`*`, `?`).
    #[arg(long)]
    runs: Option<String>,
    /// compare: smooth with TensorBoard's debiased EMA of this weight in [0, 1).
    #[arg(long)]
    ema: Option<f64>,
    /// compare: the x axis.
    #[arg(long, value_enum, default_value_t = X::Forward)]
    x: X,
    /// compare: a logarithmic y axis.
    #[arg(long)]
    log_y: bool,
    /// compare: draw runs whose names begin with PREFIX as one group (mean, min–max band).
    #[arg(long, num_args = 1..)]
    group_by: Vec<String>,
    /// compare: draw the runs of each value of this recorded config field as one group
    /// (`somatize record --config KEY=VALUE`; not with --group-by).
    #[arg(long, value_name = "FIELD", conflicts_with = "group_by")]
    group_config: Option<String>,
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
        store: args.store.clone().unwrap_or_default(),
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

/// The compare figure's options from the command line.
pub fn compare_options(args: &Args) -> Result<crate::figures::compare::CompareFigure, String> {
    use crate::figures::compare::{CompareFigure, Smooth, XAxis};
    let smooth = match (args.ema, args.smooth) {
        (Some(_), n) if n > 0 => return Err("give --ema or --smooth, not both".into()),
        (Some(w), _) => Smooth::Ema(w),
        (None, 0) => Smooth::None,
        (None, n) => Smooth::Mean(n),
    };
    let o = CompareFigure {
        runs: args.runs.clone(),
        of: args
            .of
            .clone()
            .unwrap_or_else(|| crate::readback::DEFAULT_FIELD.into()),
        smooth,
        x: match args.x {
            X::Forward => XAxis::Forward,
            X::Wall => XAxis::Wall,
            X::Relative => XAxis::Relative,
        },
        log_y: args.log_y,
        group_by: args.group_by.clone(),
        group_config: args.group_config.clone(),
        ..CompareFigure::default()
    };
    crate::figures::compare::check(&o)?;
    Ok(o)
}

/// One row of `--rows`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RowLine {
    forward: u64,
    value: Option<serde_json::Value>,
    #[serde(default)]
    took_us: u64,
    #[serde(default)]
    broke: bool,
    error: Option<String>,
}

/// A row's value: a number, or "nan", "inf", "-inf" (JSON has no such numbers).
fn row_value(v: Option<serde_json::Value>, line: usize) -> Result<Option<f64>, String> {
    use serde_json::Value;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) => match s.as_str() {
            "nan" => Ok(Some(f64::NAN)),
            "inf" => Ok(Some(f64::INFINITY)),
            "-inf" => Ok(Some(f64::NEG_INFINITY)),
            _ => Err(format!(
                "rows line {line}: value {s:?} is not a number, \"nan\", \"inf\" or \"-inf\""
            )),
        },
        Some(other) => Err(format!("rows line {line}: value {other} is not a number")),
    }
}

/// `figure progress --rows FILE`: the figure a `Live` given these rows draws.
fn progress_of_rows(args: &Args, path: &std::path::Path) -> Result<ExitCode, String> {
    use std::io::BufRead;
    if args.kind != Kind::Progress {
        return Err("--rows draws only the progress figure".into());
    }
    let reader: Box<dyn BufRead> = if path == std::path::Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Box::new(std::io::BufReader::new(f))
    };
    let mut o = LiveOptions {
        smooth: args.smooth,
        ..LiveOptions::default()
    };
    if let Some(of) = &args.of {
        o.of = of.clone();
    }
    if let Some(t) = &args.title {
        o.title = t.clone();
    }
    let mut live = crate::readback::Live::new(o);
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let r: RowLine =
            serde_json::from_str(&line).map_err(|e| format!("rows line {}: {e}", i + 1))?;
        live.row(crate::readback::ProgressRow {
            forward: r.forward,
            value: row_value(r.value, i + 1)?,
            smoothed: None,
            took_us: r.took_us,
            broke: r.broke,
            error: r.error,
        });
    }
    write(args, &progress::live(&mut live))
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    if let Some(rows) = &args.rows {
        return progress_of_rows(&args, rows);
    }
    let Some(store_path) = &args.store else {
        return Err("a store is needed (or --rows)".into());
    };
    let store = open(store_path)?;
    if args.kind == Kind::Compare {
        let o = compare_options(&args)?;
        let answer = crate::figures::compare::compare(&store, &o).map_err(|e| e.to_string())?;
        print_skips(&answer.skipped);
        return write(&args, &answer.rows);
    }
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
        Kind::Compare => return Err("compare is drawn above".into()),
    };
    print_skips(&answer.skipped);
    write(&args, &answer.rows)
}

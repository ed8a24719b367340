//! The seed functions that had no command of their own: `where`, `history`, `alerts`, `within`,
//! `curve-costs` and `query`, each answering as the seed's function (and npm's) does.

use super::diagnose::{health, thresholds, Over};
use super::read::{open, pick_run};
use std::path::PathBuf;
use std::process::ExitCode;

/// Print `value` as JSON (pretty), or `table` when not `--json`.
fn show(json: bool, value: &serde_json::Value, table: impl FnOnce() -> String) -> ExitCode {
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into())
        );
    } else {
        out!("{}", table());
    }
    ExitCode::SUCCESS
}

/// Options of `where` and `alerts`: a run judged at some thresholds.
#[derive(clap::Args, Debug)]
pub struct JudgedArgs {
    #[command(flatten)]
    over: Over,
    /// Thresholds: a JSON file of overrides, or the object itself inline (`{"name": value}`).
    #[arg(long)]
    thresholds: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `somatize where`: the diagnosis folded onto the graph's nodes, `{node: [flag, …]}` in
/// declaration order; a finding inside a node is named on its flag (`LEAKAGE in net.2`).
pub fn where_(args: JudgedArgs) -> Result<ExitCode, String> {
    let t = thresholds(args.thresholds.as_deref())?;
    let h = health(&args.over)?;
    let folded = h.overlay(&h.diagnose(&t));
    let value: serde_json::Map<String, serde_json::Value> = folded
        .iter()
        .map(|(n, f)| (n.clone(), serde_json::json!(f)))
        .collect();
    Ok(show(args.json, &value.into(), || {
        folded
            .iter()
            .map(|(n, f)| format!("{n}: {}\n", f.join(", ")))
            .collect()
    }))
}

/// `somatize alerts`: what is wrong, loudly: one alert per fault, with its advice.
pub fn alerts(args: JudgedArgs) -> Result<ExitCode, String> {
    let t = thresholds(args.thresholds.as_deref())?;
    let h = health(&args.over)?;
    let alerts = h.alerts(&h.diagnose(&t));
    let value = serde_json::to_value(&alerts).map_err(|e| e.to_string())?;
    Ok(show(args.json, &value, || {
        alerts
            .iter()
            .map(|a| {
                format!(
                    "{} {} since {}: {}\n",
                    a.node, a.flag, a.first_forward, a.advice
                )
            })
            .collect()
    }))
}

/// Options of `history`.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    #[command(flatten)]
    over: Over,
    /// The node (or node.path.to.submodule).
    #[arg(long)]
    node: String,
    /// The measurement (any number the audit wrote down).
    #[arg(long, default_value = "grad_norm")]
    of: String,
    /// Print `[[forward, value], …]` as JSON (NaN as null).
    #[arg(long)]
    json: bool,
}

/// `somatize history`: one measurement of one node over the run, as `(forward, value)` pairs.
pub fn history(args: HistoryArgs) -> Result<ExitCode, String> {
    let h = health(&args.over)?;
    let pairs = h.history(&args.node, &args.of);
    let value: Vec<serde_json::Value> = pairs
        .iter()
        .map(|(f, v)| serde_json::json!([f, serde_json::Number::from_f64(*v)]))
        .collect();
    Ok(show(args.json, &value.into(), || {
        pairs.iter().map(|(f, v)| format!("{f}  {v:e}\n")).collect()
    }))
}

/// Options of `within`.
#[derive(clap::Args, Debug)]
pub struct WithinArgs {
    /// The key: a node, or node.path.to.submodule.
    key: String,
    /// The graph's node names (comma-separated); without them, the key's first dotted segment.
    #[arg(long, value_delimiter = ',')]
    nodes: Vec<String>,
    /// Print the answer as a JSON string.
    #[arg(long)]
    json: bool,
}

/// `somatize within KEY [--nodes a,b]`: the node a key belongs to.
pub fn within(args: WithinArgs) -> Result<ExitCode, String> {
    let names: Vec<&str> = args.nodes.iter().map(String::as_str).collect();
    let at = crate::health::store::within(&args.key, &names);
    Ok(show(args.json, &serde_json::json!(at), || {
        format!("{at}\n")
    }))
}

/// Options of `curve-costs`.
#[derive(clap::Args, Debug)]
pub struct CurveCostsArgs {
    /// The store: a folder, a snapshot .zip, or object storage (s3://bucket/prefix, gs://…, az://…).
    store: PathBuf,
    /// The run (needed when the store holds more than one).
    #[arg(long)]
    run: Option<String>,
    /// The field, `<kind>.<field>`.
    #[arg(long, default_value = crate::readback::DEFAULT_FIELD)]
    of: String,
    /// Print the answer as a JSON string.
    #[arg(long)]
    json: bool,
}

/// `somatize curve-costs`: whether `curve` would scan the index or fetch every blob, asked
/// before paying (reads the index only).
pub fn curve_costs(args: CurveCostsArgs) -> Result<ExitCode, String> {
    let store = open(&args.store)?;
    let run = pick_run(&store, &args.run)?;
    let cost = crate::readback::curve_costs(&store, &run, &args.of).map_err(|e| e.to_string())?;
    let word = cost.as_str();
    Ok(show(args.json, &serde_json::json!(word), || {
        format!("{word}\n")
    }))
}

/// Options of `query`.
#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// The store: a folder, a snapshot .zip, or object storage (s3://bucket/prefix, gs://…, az://…).
    store: PathBuf,
    /// The run `observe` wrote (needed when the store holds more than one).
    #[arg(long)]
    run: Option<String>,
    /// The observable's spec id (16 hex characters, as `observe --json` and `spec-id` give it).
    #[arg(long)]
    id: String,
    /// The step.
    #[arg(long)]
    step: u64,
    /// Print the value as JSON (`null` when nothing was written for that id and step).
    #[arg(long)]
    json: bool,
}

/// `somatize query`: one value `observe` wrote, read back by exact id and step. No value is
/// `null` (exit 0), not an error; a missing run is an error.
pub fn query(args: QueryArgs) -> Result<ExitCode, String> {
    let store = open(&args.store)?;
    let run = pick_run(&store, &args.run)?;
    let got =
        crate::readback::query(&store, &run, &args.id, args.step).map_err(|e| e.to_string())?;
    if got.is_none() {
        eprintln!(
            "somatize query: run {run:?} holds no value of {} at step {}",
            args.id, args.step
        );
    }
    let value = got.unwrap_or(serde_json::Value::Null);
    Ok(show(args.json, &value, || format!("{value}\n")))
}

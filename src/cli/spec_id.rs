//! `somatize spec-id`: the id of an observable spec, from JSON or from flags.

use crate::ObservableSpec;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The spec as JSON (`{"source":"param","selector":"fc1.weight","reduction":"l2"}`).
    #[arg(conflicts_with_all = ["source", "selector", "reduction"])]
    json: Option<String>,
    /// The source kind (param, grad, act, loss), when not giving JSON.
    #[arg(long)]
    source: Option<String>,
    /// The key within the source.
    #[arg(long)]
    selector: Option<String>,
    /// The reduction.
    #[arg(long)]
    reduction: Option<String>,
    /// Also print the canonical serialisation the id is taken over.
    #[arg(long)]
    canonical: bool,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let spec = match (&args.json, &args.source, &args.selector, &args.reduction) {
        (Some(json), ..) => ObservableSpec::from_json(json).map_err(|e| e.to_string())?,
        (None, Some(source), Some(selector), Some(reduction)) => {
            ObservableSpec::new(source, selector, reduction)
        }
        _ => return Err("give the spec as JSON, or --source, --selector and --reduction".into()),
    };
    let id = spec.id().map_err(|e| e.to_string())?;
    outln!("{id}");
    if args.canonical {
        outln!("{}", spec.canonical_json().map_err(|e| e.to_string())?);
    }
    Ok(ExitCode::SUCCESS)
}

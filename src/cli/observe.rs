//! `somatize observe FILE... --store DIR --run NAME`: observables over tensor files, one step per file, into a store.

use crate::generate::{generate_with, GenerateOptions};
use crate::record::StoreSink;
use crate::runtime::Runtime;
use crate::spec::ObservableSpec;
use crate::FileSource;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Tensor files (.npz dumps, .npy, .pt checkpoints, .safetensors), one step each, in order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The store folder (created when missing).
    #[arg(long)]
    store: PathBuf,
    /// The run to write the observed values into.
    #[arg(long)]
    run: String,
    /// Reductions, comma-separated (commas inside parentheses belong to the op).
    #[arg(long, default_value = "l2,mean,std,min,max,nonfinite")]
    reductions: String,
    /// Transforms applied before every reduction, comma-separated.
    #[arg(long, default_value = "")]
    transforms: String,
    /// Key kinds to observe, comma-separated.
    #[arg(long, default_value = "param,grad,act,loss", value_delimiter = ',')]
    kinds: Vec<String>,
    /// Which names within those kinds: `all`, a glob such as `fc*.weight`, or a name.
    #[arg(long, default_value = "all")]
    select: String,
    /// The writer id inside the run.
    #[arg(long, default_value = "observe")]
    writer: String,
    /// Print `{specs: {id: spec}, steps: {step: {id: value}}}` instead of a line per file.
    #[arg(long)]
    json: bool,
}

/// Split `a,b(1,2),c` at the commas outside parentheses; blanks are dropped.
pub fn split_ops(text: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The trailing number of a file's stem (`step_000012.npz` → 12).
fn trailing_number(path: &Path) -> Option<u64> {
    let stem = path.file_stem()?.to_str()?;
    let digits: String = stem
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

/// Steps: the files' trailing numbers when every file has one and they increase, else 0, 1, 2…
pub fn steps_of(files: &[PathBuf]) -> Vec<u64> {
    let numbers: Option<Vec<u64>> = files.iter().map(|f| trailing_number(f)).collect();
    match numbers {
        Some(n) if n.windows(2).all(|w| w[0] < w[1]) => n,
        _ => (0..files.len() as u64).collect(),
    }
}

/// Write the run's spec table beside the writer's index, so ids can be read back as specs.
fn write_specs(args: &Args, specs: &BTreeMap<String, ObservableSpec>) -> Result<(), String> {
    let dir = args
        .store
        .join(crate::store::format::writer_dir(&args.run, &args.writer));
    let tmp = dir.join("observables.json.tmp");
    let text = serde_json::to_vec_pretty(specs).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join("observables.json")).map_err(|e| e.to_string())
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let (reductions, transforms) = (split_ops(&args.reductions), split_ops(&args.transforms));
    let options = GenerateOptions {
        kinds: args.kinds.clone(),
        selector: args.select.clone(),
    };
    let first = FileSource::open(&args.files[0]).map_err(|e| e.to_string())?;
    let pack =
        generate_with(&first, &reductions, &transforms, &options).map_err(|e| e.to_string())?;
    let runtime = Runtime::new(pack).map_err(|e| e.to_string())?;
    let specs: BTreeMap<String, ObservableSpec> = runtime
        .observables()
        .iter()
        .map(|o| (o.id().to_string(), o.spec().clone()))
        .collect();
    let mut sink =
        StoreSink::new(&args.store, &args.run, &args.writer).map_err(|e| e.to_string())?;
    write_specs(&args, &specs)?;
    let mut steps = serde_json::Map::new();
    let mut failures = 0usize;
    for (file, step) in args.files.iter().zip(steps_of(&args.files)) {
        let source = FileSource::open(file).map_err(|e| e.to_string())?;
        let obs = runtime
            .observe_into(step, &source, &mut sink)
            .map_err(|e| e.to_string())?;
        for e in &obs.failed {
            eprintln!("somatize observe: {}: {e}", file.display());
        }
        failures += obs.failed.len();
        if args.json {
            steps.insert(step.to_string(), json!(obs.values));
        } else {
            outln!(
                "step {step}: {} values, {} skipped, {} failed  ({})",
                obs.values.len(),
                obs.skipped.len(),
                obs.failed.len(),
                file.display()
            );
        }
    }
    if args.json {
        outln!("{}", json!({"specs": specs, "steps": steps}));
    } else {
        outln!(
            "{} observables over {} files into run {:?} of {} (specs in {}/observables.json)",
            specs.len(),
            args.files.len(),
            args.run,
            args.store.display(),
            crate::store::format::writer_dir(&args.run, &args.writer)
        );
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

//! `somatize observe FILE... --store DIR --run NAME`: observables over tensor files, one step per file, into a store.

use crate::observe::generate::{generate_with, GenerateOptions};
use crate::observe::runtime::Runtime;
use crate::observe::spec::ObservableSpec;
use crate::record::StoreSink;
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
    /// Key kinds to observe, comma-separated: param (the default, as the seed's generate),
    /// grad, act, loss.
    #[arg(long, default_value = "param", value_delimiter = ',')]
    kinds: Vec<String>,
    /// Which names within those kinds: `all`, a glob such as `fc*.weight`, or a name.
    #[arg(long, default_value = "all")]
    select: String,
    /// The writer id inside the run.
    #[arg(long, default_value = "observe")]
    writer: String,
    /// Print `{specs: {id: spec}, steps: {step: {id: value}}, skipped: {step: [{id, reason, …}]}}`
    /// instead of a line per file.
    #[arg(long)]
    json: bool,
    /// Observe these specs instead of generating them: a JSON file holding an array of specs
    /// (or of `{id, spec}` pairs), with their own frequency and budget hints.
    #[arg(long, conflicts_with_all = ["reductions", "transforms", "kinds", "select"])]
    specs: Option<PathBuf>,
    /// The seed's `Budget(max_compute_ms)`: per step, run observables while the sum of their
    /// declared `budget_hint.compute_ms` fits (nothing is timed); the rest are skipped.
    #[arg(long)]
    budget_ms: Option<f64>,
}

/// The specs of a `--specs` file: an array of specs or of `{id, spec}` pairs (the id checked).
fn specs_file(path: &Path) -> Result<Vec<ObservableSpec>, String> {
    const CAP: u64 = 16 << 20;
    let say = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let len = std::fs::metadata(path).map_err(|e| say(&e))?.len();
    if len > CAP {
        return Err(say(&format!(
            "{len} bytes is over the {CAP}-byte cap for a specs file"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| say(&e))?;
    let items: Vec<serde_json::Value> = serde_json::from_str(&text).map_err(|e| say(&e))?;
    items
        .into_iter()
        .map(|item| {
            let pair = item
                .as_object()
                .filter(|m| m.len() == 2 && m.contains_key("id"))
                .and_then(|m| Some((m.get("id")?.clone(), m.get("spec")?.clone())));
            let (id, spec) = match pair {
                Some((id, spec)) => (Some(id), spec),
                None => (None, item),
            };
            let spec: ObservableSpec = serde_json::from_value(spec).map_err(|e| say(&e))?;
            let own = spec.id().map_err(|e| say(&e))?;
            match id {
                Some(id) if id.as_str() != Some(own.as_str()) => Err(say(&format!(
                    "the pair's id {id} is not its spec's id {own:?}"
                ))),
                _ => Ok(spec),
            }
        })
        .collect()
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
    let pack = match &args.specs {
        Some(path) => specs_file(path)?
            .into_iter()
            .map(crate::Observable::builtin)
            .collect::<Result<crate::Pack, _>>()
            .map_err(|e| e.to_string())?,
        None => {
            let first = FileSource::open(&args.files[0]).map_err(|e| e.to_string())?;
            generate_with(&first, &reductions, &transforms, &options).map_err(|e| e.to_string())?
        }
    };
    let mut runtime = Runtime::new(pack).map_err(|e| e.to_string())?;
    if let Some(max) = args.budget_ms {
        if !(max >= 0.0 && max.is_finite()) {
            return Err(format!("--budget-ms {max} is not a finite number >= 0"));
        }
        runtime = runtime.with_budget(crate::observe::runtime::Budget {
            max_compute_ms: max,
        });
    }
    let specs: BTreeMap<String, ObservableSpec> = runtime
        .observables()
        .iter()
        .map(|o| (o.id().to_string(), o.spec().clone()))
        .collect();
    let mut sink =
        StoreSink::new(&args.store, &args.run, &args.writer).map_err(|e| e.to_string())?;
    write_specs(&args, &specs)?;
    let mut steps = serde_json::Map::new();
    let mut skipped = serde_json::Map::new();
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
            if !obs.skipped.is_empty() {
                skipped.insert(step.to_string(), json!(obs.skipped));
            }
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
        outln!(
            "{}",
            json!({"specs": specs, "steps": steps, "skipped": skipped})
        );
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

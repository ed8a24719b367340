//! `somatize diagnose` and `somatize seen`: the verdict over a stored run and the numbers it is
//! taken over; also the health figures `somatize figure profile|flags|overlaid` draws.

use crate::health::store::{read, Diagnosis, RunHealth};
use crate::health::thresholds::load;
use crate::store::{DirFs, Store, StoreFs, ZipFs};
use somatize_verdict::{FlagKind, Thresholds};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What every health command reads: a store, a run, how far back, and at what bounds.
#[derive(clap::Args, Debug)]
pub struct Over {
    /// The store: a folder, a snapshot `.zip`, or object storage (s3://bucket/prefix, gs://…, az://…).
    pub store: PathBuf,
    /// The run.
    #[arg(long)]
    pub run: String,
    /// Only the last N forwards (one blob fetch per forward looked at).
    #[arg(long)]
    pub last: Option<usize>,
}

#[derive(clap::Args, Debug)]
pub struct DiagnoseArgs {
    #[command(flatten)]
    over: Over,
    /// Thresholds to judge at: a JSON file of overrides, `{"name": value, …}`, or that object
    /// itself given inline (an argument starting with `{`).
    #[arg(long)]
    thresholds: Option<PathBuf>,
    /// Print the seed's answer as JSON: `{where: [flag, …]}`, nodes in declaration order, a
    /// node with nothing wrong absent.
    #[arg(long)]
    json: bool,
    /// Print the diagnosis as written down beside the bounds it was taken at, as JSON:
    /// `{"run", "forwards", "diagnosis": {where: [flags]}, "faults", …, "thresholds"}`.
    #[arg(long)]
    with_bounds: bool,
    /// Exit 1 when any of these flags is raised (comma-separated, e.g. NAN,INF,DEAD).
    #[arg(long, value_delimiter = ',')]
    fail_on: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct SeenArgs {
    #[command(flatten)]
    over: Over,
    /// Print `{node: {"kind", metric: value, …}}` as JSON (NaN as null).
    #[arg(long)]
    json: bool,
}

pub use crate::health::store::HealthFigure as Kind;

/// Read the run through a folder or a snapshot zip.
pub(super) fn health(over: &Over) -> Result<RunHealth, String> {
    fn go<F: StoreFs>(fs: F, over: &Over) -> Result<RunHealth, String> {
        let store = Store::open(fs).map_err(|e| match e {
            // An object store's errors name its URL already.
            crate::store::StoreError::Object(_) => e.to_string(),
            e => format!("{}: {e}", super::read::shown(&over.store)),
        })?;
        read(&store, &over.run, over.last).map_err(|e| e.to_string())
    }
    if let Some(url) = super::read::object_url(&over.store) {
        let fs = crate::store::object::ObjectFs::open(url).map_err(|e| e.to_string())?;
        go(fs, over)
    } else if over.store.is_file() {
        let fs = ZipFs::open(&over.store).map_err(|e| e.to_string())?;
        go(fs, over)
    } else {
        go(DirFs::new(&over.store), over)
    }
}

/// The thresholds `--thresholds` names: a JSON file of overrides, or the JSON object itself
/// when the argument starts with `{` (the seed's `Thresholds(**over)` without a file).
pub(super) fn thresholds(path: Option<&Path>) -> Result<Thresholds, String> {
    match path {
        Some(p) => match p.to_str().filter(|t| t.trim_start().starts_with('{')) {
            Some(text) => crate::health::thresholds::from_json(text),
            None => load(p),
        }
        .map_err(|e| e.to_string()),
        None => Ok(Thresholds::default()),
    }
}

/// The flags named by `--fail-on`, refusing a name that is no flag.
fn fail_on(names: &[String]) -> Result<Vec<FlagKind>, String> {
    names
        .iter()
        .filter(|n| !n.trim().is_empty())
        .map(|n| {
            FlagKind::parse(n.trim()).ok_or_else(|| crate::health::json::unknown_flag(n.trim()))
        })
        .collect()
}

pub fn diagnose(args: DiagnoseArgs) -> Result<ExitCode, String> {
    let fail = fail_on(&args.fail_on)?;
    let t = thresholds(args.thresholds.as_deref())?;
    let h = health(&args.over)?;
    let d = h.diagnose(&t);
    for s in &h.skipped {
        eprintln!("somatize diagnose: skipped: {s}");
    }
    if args.with_bounds {
        let text = serde_json::to_string_pretty(&d.to_json()).map_err(|e| e.to_string())?;
        outln!("{text}");
    } else if args.json {
        let text =
            serde_json::to_string_pretty(&d.to_json()["diagnosis"]).map_err(|e| e.to_string())?;
        outln!("{text}");
    } else {
        print_diagnosis(&h, &d, args.thresholds.as_deref());
    }
    let failed = d
        .verdict
        .iter()
        .any(|(_, flags)| flags.iter().any(|f| fail.contains(&f.kind)));
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The diagnosis as a table of node, flag and advice, with what it was taken over.
pub fn print_diagnosis(h: &RunHealth, d: &Diagnosis, from: Option<&Path>) {
    let at = match from {
        Some(p) => format!("thresholds from {}", p.display()),
        None => "the default thresholds (`somatize thresholds`)".to_string(),
    };
    let span = match (d.forwards.first(), d.forwards.last()) {
        (Some(a), Some(b)) => format!("forwards {a}..{b}"),
        _ => "no forward".into(),
    };
    outln!(
        "run {}: {} forwards read ({span}) at {at}",
        d.run,
        d.forwards.len()
    );
    let j = &d.judgement;
    if let Some(at) = j.nonfinite_at {
        outln!(
            "  a number stopped being one at forward {at}: the {} forwards before it are judged",
            j.judged.len()
        );
    }
    let alerts = h.alerts(d);
    if alerts.is_empty() {
        outln!("  no flag raised: no measured number crossed a bound for long enough (`somatize seen` says what was measured)");
    } else {
        let nw = alerts
            .iter()
            .map(|a| a.node.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let fw = alerts
            .iter()
            .map(|a| a.flag.len())
            .max()
            .unwrap_or(4)
            .max(4);
        outln!(
            "  {:<nw$}  {:<fw$}  {:>5}  {:>5}  {:>7}  what to do",
            "node",
            "flag",
            "since",
            "until",
            "held"
        );
        for a in &alerts {
            outln!(
                "  {:<nw$}  {:<fw$}  {:>5}  {:>5}  {:>7}  {}",
                a.node,
                a.flag,
                a.first_forward,
                a.until,
                format!("{}/{}", a.window.0, a.window.1),
                a.advice
            );
            let evidence: Vec<String> = a
                .evidence
                .iter()
                .map(|(k, v)| match v {
                    Some(v) => format!("{k} {v:.3e}"),
                    None => format!("{k} NaN"),
                })
                .collect();
            if !evidence.is_empty() {
                outln!("  {:<nw$}  taken on: {}", "", evidence.join(", "));
            }
            if !a.folded.is_empty() {
                outln!("  {:<nw$}  explains: {}", "", a.folded.join("; "));
            }
        }
    }
    let said = |what: &str, list: &[somatize_verdict::Finding]| {
        if !list.is_empty() {
            let items: Vec<String> = list
                .iter()
                .map(|f| format!("{} at {} ({}..{})", f.flag, f.node, f.since, f.until))
                .collect();
            outln!("  {what}: {}", items.join("; "));
        }
    };
    said("held only at the start, then went away", &j.transients);
    said("held for a while earlier, then went away", &j.passed);
    said(
        "held just before the first NaN/Inf, while the numbers blew up (not judged)",
        &j.blowing_up,
    );
}

pub fn seen(args: SeenArgs) -> Result<ExitCode, String> {
    let h = health(&args.over)?;
    let seen = h.seen();
    if args.json {
        let out = crate::health::json::seen_json(&seen);
        let text = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
        outln!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let last = h.forwards.last().map_or(0, |f| f.number);
    outln!(
        "run {}: the latest of each metric over {} forwards (last {last})",
        h.run,
        h.forwards.len()
    );
    for n in &seen {
        let kind = if n.kind.is_empty() { "-" } else { &n.kind };
        outln!("{} ({kind})", n.name);
        for (k, v) in &n.metrics {
            outln!("    {k:<24} {v:.6e}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A health figure of a stored run, judged at `thresholds` (a JSON file of overrides).
pub fn health_figure(
    kind: Kind,
    over: &Over,
    of: &str,
    thresholds_file: Option<&Path>,
) -> Result<crate::figures::Figure, String> {
    let t = thresholds(thresholds_file)?;
    let h = health(over)?;
    let d = h.diagnose(&t);
    Ok(crate::figures::health::figure(&h, &d, kind, of))
}

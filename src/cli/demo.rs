//! `somatize demo [--store DIR] [--steps N] [--every N]`: trains every built-in demo condition
//! into a store through the real `Recorder`, then prints each run's diagnosis with advice and
//! how to look further.

use super::diagnose::print_diagnosis;
use crate::demo::{self, DEFAULT_STEPS};
use crate::health::store::read;
use crate::record::demo::record_condition;
use crate::store::{DirFs, Store, StoreFs};
use somatize_verdict::Thresholds;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store to record into (created when missing; an earlier demo recording in it is
    /// replaced, any other run of the same name is left alone and refused).
    #[arg(long, default_value = "somatize-demo")]
    store: PathBuf,
    /// Training steps per run.
    #[arg(long, default_value_t = DEFAULT_STEPS)]
    steps: u64,
    /// Record step 0, every N-th step and the last.
    #[arg(long, default_value_t = 10)]
    every: u64,
}

pub fn run(args: Args) -> Result<ExitCode, String> {
    let store = &args.store;
    let conditions = demo::conditions();
    eprintln!(
        "somatize demo: training {} small networks on a spiral, {} steps each, into {}",
        conditions.len(),
        args.steps,
        store.display()
    );
    let started = std::time::Instant::now();
    if let Some(url) = super::read::object_url(store) {
        // Objects cannot be replaced run by run as a folder's are: a demo goes to a new prefix.
        let existing = crate::store::object::ObjectFs::open(url)
            .and_then(Store::open)
            .and_then(|s| s.runs())
            .unwrap_or_default();
        if let Some(c) = conditions
            .iter()
            .find(|c| existing.iter().any(|r| r == c.name))
        {
            return Err(format!(
                "{}: run {:?} is already there; on object storage the demo does not replace \
                 runs: give it a new prefix",
                crate::store::object::redacted(url),
                c.name
            ));
        }
    }
    for c in conditions {
        if crate::record::demo::remove_demo_run(store, c.name).map_err(|e| e.to_string())? {
            eprintln!("  {:<13} replacing the earlier demo recording", c.name);
        }
    }
    for c in conditions {
        let s = record_condition(store, c, args.steps, args.every).map_err(|e| e.to_string())?;
        let broke = s
            .first_nonfinite
            .map_or(String::new(), |at| format!(", non-finite from step {at}"));
        eprintln!(
            "  {:<13} {:>3} forwards recorded in {:>6.2} s, loss {:.3} -> {:.3}{broke}",
            c.name,
            s.recorded,
            s.took_us as f64 / 1e6,
            s.first_loss,
            s.last_loss
        );
    }
    eprintln!(
        "somatize demo: recorded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if let Some(url) = super::read::object_url(store) {
        let fs = crate::store::object::ObjectFs::open(url).map_err(|e| e.to_string())?;
        return verdicts(&Store::open(fs).map_err(|e| e.to_string())?, store);
    }
    verdicts(
        &Store::open(DirFs::new(store)).map_err(|e| e.to_string())?,
        store,
    )
}

/// Each demo run's diagnosis read back from the store, and how to look further.
fn verdicts<F: StoreFs>(reader: &Store<F>, store: &Path) -> Result<ExitCode, String> {
    let conditions = demo::conditions();
    let t = Thresholds::default();
    outln!();
    for c in conditions {
        let h = read(reader, c.name, None).map_err(|e| e.to_string())?;
        let d = h.diagnose(&t);
        outln!("{}: {}", c.name, c.description);
        print_diagnosis(&h, &d, None);
        outln!();
    }
    let s = store.display();
    outln!("Look further:");
    outln!("  somatize serve {s}                               the page: every run, its figures and verdict, in a browser");
    outln!("  somatize report {s} --run vanishing -o vanishing.html   one HTML file of a run: opens offline, or in Jupyter");
    outln!("  somatize diagnose {s} --run vanishing            the verdict, with advice");
    outln!("  somatize diagnose {s} --run vanishing --json     the same, with the thresholds it was taken at");
    outln!("  somatize seen {s} --run vanishing                the numbers the verdict reads");
    outln!("  somatize figure profile {s} --run vanishing --of grad_norm -o profile.json");
    outln!("  somatize about VANISHING                         what a flag means and what to do");
    Ok(ExitCode::SUCCESS)
}

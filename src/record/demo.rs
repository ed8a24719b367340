//! Recording a built-in demo run through the real `Recorder`: per recorded step, the facts
//! (node, kind, took_us, where = `local`), the loss summarised, the per-node health metrics
//! in `stats.json` (the update this step applied: params after the step against before) and
//! the tensors; the run's `graph.json` once.

use super::recorder::Recorder;
use crate::demo::{self, Condition, StepRecord, Summary};
use crate::health::forward::Step;
use crate::health::record::{step_stats, write_graph, Graph};
use crate::health::MeasureError;
use crate::store::{ExitRecord, Fact, ForwardRecord, StoreError, TensorBytes};
use crate::tensor::{Provenance, TensorData, TypedTensor};
use std::fmt;
use std::path::Path;

/// The writer id demo runs are recorded as.
pub const DEMO_WRITER: &str = "demo";

/// Why a demo run could not be recorded.
#[derive(Debug)]
pub enum DemoError {
    /// The store already holds a run of this name; record into another store (or remove it).
    Exists { run: String, path: String },
    /// The store refused or failed a write (names the file).
    Store(StoreError),
    /// A step's tensors could not be measured (a bug in the demo: its shapes are its own).
    Measure {
        run: String,
        step: u64,
        error: MeasureError,
    },
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoError::Exists { run, path } => write!(
                f,
                "{path} already holds a run {run:?}; pass another --store, or remove that folder"
            ),
            DemoError::Store(e) => write!(f, "{e}"),
            DemoError::Measure { run, step, error } => {
                write!(f, "run {run:?}, step {step}: {error}")
            }
        }
    }
}

impl std::error::Error for DemoError {}

/// The loss as a 0-d f64 tensor keyed `loss`.
fn loss_tensor(loss: f64) -> TypedTensor {
    let provenance = Provenance {
        file: "<live>".into(),
        key: "loss".into(),
        dtype: "<f8".into(),
    };
    // A 0-d tensor holds exactly one value, so this cannot fail.
    TypedTensor::new(TensorData::F64(vec![loss]), Vec::new(), provenance)
        .unwrap_or_else(|| unreachable!("a 0-d tensor holds one value"))
}

/// A step as the dump convention keys it, with the parameters after the step (`param.*`),
/// and the parameters the step started from, keyed the same (the previous step's).
pub fn step_tensors(r: &StepRecord) -> (Step, Step) {
    let mut now = Step::new();
    let mut before = Step::new();
    for n in &r.nodes {
        now.insert(format!("act.{}", n.name), n.activation.clone());
        for p in &n.params {
            let key = format!("param.{}", p.name);
            now.insert(key.clone(), p.updated.clone());
            before.insert(key, p.value.clone());
            now.insert(format!("grad.{}", p.name), p.grad.clone());
        }
    }
    now.insert("loss".into(), loss_tensor(r.loss));
    (now, before)
}

/// One demo step as a forward record: facts with the node timings, the loss fact, the
/// node metrics, and the step's tensors.
pub fn step_forward(
    run: &str,
    graph: &Graph,
    r: &StepRecord,
    whole: bool,
) -> Result<ForwardRecord<'static>, DemoError> {
    let (mut now, before) = step_tensors(r);
    if !whole {
        // The cheap half only: parameters, gradients, the update and the loss; no output.
        now.retain(|k, _| !k.starts_with("act."));
    }
    let stats = step_stats(graph, &now, Some(&before)).map_err(|error| DemoError::Measure {
        run: run.to_string(),
        step: r.step,
        error,
    })?;
    let mut facts = Vec::with_capacity(r.nodes.len() + 1);
    let mut began = 0i64;
    for n in &r.nodes {
        let mut f = Fact::new(&n.name, n.kind);
        f.began_us = began;
        f.took_us = n.took_us;
        began = began.saturating_add(i64::try_from(n.took_us).unwrap_or(i64::MAX));
        facts.push(f);
    }
    facts.push(Fact::loss(r.loss));
    let tensors = if whole {
        now.iter()
            .map(|(k, t)| TensorBytes::from_typed(k, t))
            .collect()
    } else {
        Vec::new()
    };
    Ok(ForwardRecord {
        forward: r.step,
        facts,
        stats,
        tensors,
        ..Default::default()
    })
}

/// Whether run `run` of the store holds nothing but an earlier demo recording (its `demo`
/// writer and its graph), so that recording the demo again may replace it.
pub fn is_demo_run(store: &Path, run: &str) -> bool {
    let dir = store.join(crate::store::format::run_dir(run));
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return false;
    };
    entries.flatten().all(|e| {
        let name = e.file_name();
        name == DEMO_WRITER || name == crate::store::format::GRAPH_FILE
    })
}

/// Remove an earlier demo recording of `run` (see [`is_demo_run`]); anything else is left.
pub fn remove_demo_run(store: &Path, run: &str) -> Result<bool, DemoError> {
    if !is_demo_run(store, run) {
        return Ok(false);
    }
    let dir = store.join(crate::store::format::run_dir(run));
    std::fs::remove_dir_all(&dir).map_err(|e| {
        DemoError::Store(crate::store::StoreError::io(
            dir.display().to_string(),
            "remove",
            e,
        ))
    })?;
    Ok(true)
}

/// Train `condition` for `steps` steps and record it as run `condition.name` of the store at
/// `store` (writer `demo`), with its graph: every step's cheap numbers (parameters, gradients,
/// the update and the loss: what says a run blew up or stalled, whatever the sampling), and
/// step 0, every `every`-th and the last whole (activations measured, tensors kept).
pub fn record_condition(
    store: &Path,
    condition: &Condition,
    steps: u64,
    every: u64,
) -> Result<Summary, DemoError> {
    let run = condition.name;
    let run_dir = store.join(crate::store::format::run_dir(run));
    if run_dir.exists() {
        return Err(DemoError::Exists {
            run: run.into(),
            path: store.display().to_string(),
        });
    }
    let mut rec = Recorder::with_writer(store, run, DEMO_WRITER)
        .and_then(|r| r.pipelined(4))
        .map_err(DemoError::Store)?
        .summarising(["loss"]);
    let graph = Graph::of(demo::graph(condition));
    write_graph(store, run, &graph).map_err(DemoError::Store)?;
    let mut failed: Option<DemoError> = None;
    let every = every.max(1);
    let summary = demo::train(condition, steps, 1, &mut |r| {
        if failed.is_some() {
            return;
        }
        let whole = r.step % every == 0 || r.step + 1 == steps;
        let written = step_forward(run, &graph, r, whole)
            .and_then(|f| rec.record(&f).map(|_| ()).map_err(DemoError::Store));
        if let Err(e) = written {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    rec.flush().map_err(DemoError::Store)?;
    let exit = ExitRecord {
        written_us: crate::store::writer::now_us(),
        ok: true,
        code: Some(0),
        signal: None,
        forwards: rec.writer().written(),
        last_forward: rec.writer().last_forward(),
        error: None,
    };
    rec.finish(&exit).map_err(DemoError::Store)?;
    Ok(summary)
}

//! Observables, packs and the runtime that observes a step: eligibility, budget, one read per
//! key and one pass per tensor; and the offline analyzer that takes the same path over files.

use crate::observe::ops::blocks::BlockHelpers;
use crate::observe::ops::{Batch, Chunk, OpError};
use crate::observe::registry::{self, Plan, RegistryError};
use crate::observe::sink::{SinkError, ValueSink};
use crate::observe::source::{F32Stream, KeyIndex, Selector, SourceError, TensorSource};
use crate::observe::spec::{ObservableSpec, SpecError};
use crate::observe::value::Value;
use crate::tensor::TypedTensor;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

/// A hand-written compute over one tensor.
pub type CustomFn = Arc<dyn Fn(&TypedTensor) -> Result<Value, String> + Send + Sync>;

/// How an observable computes its value.
#[derive(Clone)]
pub enum Compute {
    /// The registry's transforms and reduction (fused with the others on the same tensor).
    Builtin(Plan),
    /// A caller's function, given the one tensor the spec selects.
    Custom(CustomFn),
}

/// A spec with its id and the compute that realises it.
#[derive(Clone)]
pub struct Observable {
    spec: ObservableSpec,
    id: String,
    compute: Compute,
}

impl fmt::Debug for Observable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.compute {
            Compute::Builtin(_) => "builtin",
            Compute::Custom(_) => "custom",
        };
        write!(f, "Observable({} {kind} {:?})", self.id, self.spec)
    }
}

impl Observable {
    /// An observable computed by the registry; its names are validated here.
    pub fn builtin(spec: ObservableSpec) -> Result<Self, RegistryError> {
        let id = spec.id().map_err(RegistryError::Spec)?;
        let plan = registry::plan(&spec)?;
        Ok(Observable {
            spec,
            id,
            compute: Compute::Builtin(plan),
        })
    }

    /// An observable computed by a caller's function (its reduction name is only a label).
    pub fn custom(spec: ObservableSpec, compute: CustomFn) -> Result<Self, SpecError> {
        Ok(Observable {
            id: spec.id()?,
            spec,
            compute: Compute::Custom(compute),
        })
    }

    pub fn spec(&self) -> &ObservableSpec {
        &self.spec
    }

    /// The spec's 16-hex-char id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn compute(&self) -> &Compute {
        &self.compute
    }

    fn describe(&self) -> String {
        self.spec
            .canonical_json()
            .unwrap_or_else(|_| format!("{:?}", self.spec))
    }
}

/// An ordered collection of observables. Duplicates are allowed here and refused by
/// [`Runtime::new`].
#[derive(Debug, Clone, Default)]
pub struct Pack(Vec<Observable>);

impl Pack {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, o: Observable) {
        self.0.push(o);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Observable> {
        self.0.iter()
    }
}

impl FromIterator<Observable> for Pack {
    fn from_iter<I: IntoIterator<Item = Observable>>(iter: I) -> Self {
        Pack(iter.into_iter().collect())
    }
}

impl IntoIterator for Pack {
    type Item = Observable;
    type IntoIter = std::vec::IntoIter<Observable>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Pack {
    type Item = &'a Observable;
    type IntoIter = std::slice::Iter<'a, Observable>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A cap on the sum of the declared `budget_hint.compute_ms` of the observables run in one
/// call. The hints are the spec author's estimates; nothing is timed or recalibrated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Budget {
    pub max_compute_ms: f64,
}

/// Why an eligible observable was not computed this step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// Its declared cost did not fit in what was left of the budget.
    Budget { cost_ms: f64, left_ms: f64 },
    /// The source has no tensor its selector picks.
    NoTensor { source: String, selector: String },
}

/// An observable left out of a step, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub id: String,
    #[serde(flatten)]
    pub reason: SkipReason,
}

/// Why the runtime could not build or an observable could not be computed.
#[derive(Debug, Clone, PartialEq)]
pub enum RuntimeError {
    /// Two observables in a pack have the same id; both specs are given. Fix the pack.
    DuplicateId {
        id: String,
        first: String,
        second: String,
    },
    /// A transform or reduction cannot take the tensor's shape.
    Op {
        id: String,
        key: String,
        shape: Vec<usize>,
        error: Box<OpError>,
    },
    /// The source could not hand out a tensor the observable needs.
    Source { id: String, error: SourceError },
    /// A custom compute failed, or was given more than one tensor.
    Custom {
        id: String,
        key: String,
        message: String,
    },
    /// The sink could not store or read values.
    Sink(SinkError),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::DuplicateId { id, first, second } => {
                write!(f, "two observables have id {id}: {first} and {second}")
            }
            RuntimeError::Op {
                id,
                key,
                shape,
                error,
            } => write!(f, "observable {id} on {key} (shape {shape:?}): {error}"),
            RuntimeError::Source { id, error } => write!(f, "observable {id}: {error}"),
            RuntimeError::Custom { id, key, message } => {
                write!(f, "observable {id} on {key}: {message}")
            }
            RuntimeError::Sink(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// What one call observed: values by spec id, temporal values (when asked for), what was
/// skipped and what failed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    pub step: u64,
    pub values: BTreeMap<String, Value>,
    pub temporal: BTreeMap<String, Option<f64>>,
    pub skipped: Vec<Skipped>,
    pub failed: Vec<RuntimeError>,
}

impl Observation {
    /// The observation, or its first failure.
    pub fn ok(self) -> Result<Observation, RuntimeError> {
        match self.failed.first() {
            Some(e) => Err(e.clone()),
            None => Ok(self),
        }
    }
}

/// Runs a pack of observables over sources, one step at a time.
#[derive(Debug, Clone)]
pub struct Runtime {
    observables: Vec<Observable>,
    budget: Option<Budget>,
    temporal: bool,
}

/// Work on one tensor: fused plans and custom computes, by observable index.
#[derive(Default)]
struct PerKey {
    plans: Vec<(usize, Plan)>,
    customs: Vec<usize>,
}

/// Plans over several tensors reduced as one flat vector.
struct Across {
    keys: Vec<String>,
    set: HashSet<String>,
    batch: Batch,
    slots: Vec<(usize, usize)>,
    failed: bool,
}

impl Runtime {
    /// A runtime over a pack; refuses a pack with two equal ids, naming both observables.
    pub fn new(pack: Pack) -> Result<Runtime, RuntimeError> {
        let mut seen: BTreeMap<&str, &Observable> = BTreeMap::new();
        for o in &pack {
            if let Some(first) = seen.insert(o.id(), o) {
                return Err(RuntimeError::DuplicateId {
                    id: o.id().to_string(),
                    first: first.describe(),
                    second: o.describe(),
                });
            }
        }
        Ok(Runtime {
            observables: pack.into_iter().collect(),
            budget: None,
            temporal: false,
        })
    }

    /// Cap the declared cost per call (observables without a hint count as 0 ms).
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Whether [`Runtime::observe_into`] also applies each spec's temporal function over
    /// the history of its id stored in the sink.
    pub fn with_temporal(mut self, apply: bool) -> Self {
        self.temporal = apply;
        self
    }

    pub fn observables(&self) -> &[Observable] {
        &self.observables
    }

    /// The observables due at this step (`step % frequency == 0`), in pack order, while their
    /// declared costs fit the budget; the ones that do not fit are skipped.
    pub fn eligible(&self, step: u64) -> (Vec<usize>, Vec<Skipped>) {
        let mut left = self.budget.map_or(f64::INFINITY, |b| b.max_compute_ms);
        let (mut run, mut skipped) = (Vec::new(), Vec::new());
        for (i, o) in self.observables.iter().enumerate() {
            if !step.is_multiple_of(o.spec.frequency.max(1)) {
                continue;
            }
            let cost = o.spec.budget_hint.as_ref().map_or(0.0, |h| h.compute_ms);
            if cost <= left {
                left -= cost;
                run.push(i);
            } else {
                skipped.push(Skipped {
                    id: o.id.clone(),
                    reason: SkipReason::Budget {
                        cost_ms: cost,
                        left_ms: left,
                    },
                });
            }
        }
        (run, skipped)
    }

    /// Compute every eligible observable at `step` over a source: each key read once, every
    /// builtin reduction over one tensor in one pass.
    pub fn observe(&self, step: u64, source: &dyn TensorSource) -> Observation {
        let (run, skipped) = self.eligible(step);
        let mut obs = Observation {
            step,
            skipped,
            ..Observation::default()
        };
        let keys = match source.list() {
            Ok(keys) => keys,
            Err(error) => {
                for i in run {
                    let id = self.observables[i].id.clone();
                    obs.failed.push(RuntimeError::Source {
                        id,
                        error: error.clone(),
                    });
                }
                return obs;
            }
        };
        let mut per_key: BTreeMap<String, PerKey> = BTreeMap::new();
        let mut across: Vec<Across> = Vec::new();
        let index = KeyIndex::new(&keys);
        for i in run {
            self.plan_one(i, &index, &mut per_key, &mut across, &mut obs);
        }
        let in_across: HashSet<String> =
            across.iter().flat_map(|a| a.set.iter().cloned()).collect();
        for key in &keys {
            let work = per_key.remove(key);
            let wanted = work.is_some() || in_across.contains(key);
            if wanted {
                self.observe_key(key, work.unwrap_or_default(), source, &mut across, &mut obs);
            }
        }
        for a in across.into_iter().filter(|a| !a.failed) {
            let key = a.keys.join(",");
            for ((i, _), result) in a.slots.iter().zip(a.batch.finish()) {
                self.record(*i, &key, &[], result, &mut obs);
            }
        }
        obs
    }

    /// Sort one observable into the work of its key, or of a set of keys.
    fn plan_one(
        &self,
        i: usize,
        index: &KeyIndex<'_>,
        per_key: &mut BTreeMap<String, PerKey>,
        across: &mut Vec<Across>,
        obs: &mut Observation,
    ) {
        let o = &self.observables[i];
        let selected = index.select(&o.spec.source, &Selector::parse(&o.spec.selector));
        match (selected.as_slice(), &o.compute) {
            ([], _) => obs.skipped.push(Skipped {
                id: o.id.clone(),
                reason: SkipReason::NoTensor {
                    source: o.spec.source.clone(),
                    selector: o.spec.selector.clone(),
                },
            }),
            ([key], Compute::Builtin(plan)) => per_key
                .entry(key.to_string())
                .or_default()
                .plans
                .push((i, plan.clone())),
            ([key], Compute::Custom(_)) => {
                per_key.entry(key.to_string()).or_default().customs.push(i)
            }
            (many, Compute::Custom(_)) => obs.failed.push(RuntimeError::Custom {
                id: o.id.clone(),
                key: many.join(","),
                message: format!(
                    "a custom compute takes one tensor; the selector picked {}",
                    many.len()
                ),
            }),
            (many, Compute::Builtin(plan)) => {
                let many: Vec<String> = many.iter().map(|k| k.to_string()).collect();
                let a = match across.iter().position(|a| a.keys == many) {
                    Some(p) => &mut across[p],
                    None => {
                        across.push(Across {
                            set: many.iter().cloned().collect(),
                            keys: many,
                            batch: Batch::flat(),
                            slots: Vec::new(),
                            failed: false,
                        });
                        across.last_mut().expect("just pushed")
                    }
                };
                let slot = a.batch.add(plan);
                a.slots.push((i, slot));
            }
        }
    }

    /// Read one key once and feed it, in one pass, to every plan on it: streamed in blocks
    /// when the source offers that and no custom compute needs the whole tensor.
    fn observe_key(
        &self,
        key: &str,
        work: PerKey,
        source: &dyn TensorSource,
        across: &mut [Across],
        obs: &mut Observation,
    ) {
        if work.customs.is_empty() {
            if let Some(stream) = source.stream_f32(key) {
                let shape = stream.shape().to_vec();
                let helped = source.helpers().map(|h| (stream, h));
                self.reduce_key(
                    key,
                    &shape,
                    &work.plans,
                    across,
                    obs,
                    helped,
                    &mut |len, f| feed_stream(stream, len, f),
                );
                return;
            }
        }
        let tensor = match source.read(key) {
            Ok(t) => t,
            Err(error) => return self.read_failed(key, &work, error, across, obs),
        };
        self.reduce_key(
            key,
            &tensor.shape,
            &work.plans,
            across,
            obs,
            None,
            &mut |len, f| crate::observe::ops::for_each_native_chunk(&tensor.data, len, f),
        );
        for &i in &work.customs {
            let o = &self.observables[i];
            let Compute::Custom(f) = &o.compute else {
                continue;
            };
            match f(&tensor) {
                Ok(v) => {
                    obs.values.insert(o.id.clone(), v);
                }
                Err(message) => obs.failed.push(RuntimeError::Custom {
                    id: o.id.clone(),
                    key: key.to_string(),
                    message,
                }),
            }
        }
    }

    /// Every observable on a key that could not be read fails, and so do the sets it is in.
    fn read_failed(
        &self,
        key: &str,
        work: &PerKey,
        error: SourceError,
        across: &mut [Across],
        obs: &mut Observation,
    ) {
        let mut ids: Vec<usize> = work.plans.iter().map(|(i, _)| *i).collect();
        ids.extend(&work.customs);
        for a in across
            .iter_mut()
            .filter(|a| a.keys.iter().any(|k| k == key))
        {
            a.failed = true;
            ids.extend(a.slots.iter().map(|(i, _)| *i));
        }
        for i in ids {
            let id = self.observables[i].id.clone();
            obs.failed.push(RuntimeError::Source {
                id,
                error: error.clone(),
            });
        }
    }

    /// Feed one key's values (handed out by `feed` in chunks at most as long as asked) to the
    /// plans on it and to the sets it is in, in one pass, and record the plans' values. A
    /// streamed tensor with helpers, in no set, is fed with their help when its plans allow.
    #[allow(clippy::too_many_arguments)]
    fn reduce_key(
        &self,
        key: &str,
        shape: &[usize],
        plans: &[(usize, Plan)],
        across: &mut [Across],
        obs: &mut Observation,
        helped: Option<(&dyn F32Stream, &dyn BlockHelpers)>,
        feed: &mut Feed<'_>,
    ) {
        let mut batch = Batch::new(shape);
        let slots: Vec<(usize, usize)> = plans.iter().map(|(i, p)| (*i, batch.add(p))).collect();
        let feeding: Vec<usize> = (0..across.len())
            .filter(|&j| !across[j].failed && across[j].set.contains(key))
            .collect();
        let len = feeding
            .iter()
            .map(|&j| across[j].batch.chunk_len())
            .fold(batch.chunk_len(), usize::min);
        let fed = match helped {
            Some((stream, helpers)) if feeding.is_empty() => {
                crate::observe::ops::blocks::feed_helped(key, stream, helpers, &mut batch)
            }
            _ => false,
        };
        if !fed {
            feed(len, &mut |chunk| {
                if !slots.is_empty() {
                    batch.feed_chunk(chunk);
                }
                for &j in &feeding {
                    across[j].batch.feed_chunk(chunk);
                }
            });
        }
        for ((i, _), result) in slots.iter().zip(batch.finish()) {
            self.record(*i, key, shape, result, obs);
        }
    }

    fn record(
        &self,
        i: usize,
        key: &str,
        shape: &[usize],
        result: Result<Value, OpError>,
        obs: &mut Observation,
    ) {
        let id = self.observables[i].id.clone();
        match result {
            Ok(v) => {
                obs.values.insert(id, v);
            }
            Err(error) => {
                let shape = match &error {
                    OpError::Shape { shape: s, .. } if shape.is_empty() => s.clone(),
                    _ => shape.to_vec(),
                };
                obs.failed.push(RuntimeError::Op {
                    id,
                    key: key.to_string(),
                    shape,
                    error: Box::new(error),
                });
            }
        }
    }

    /// [`Runtime::observe`], then write the values to a sink; with the temporal option, also
    /// apply each spec's temporal function over the stored history of its id (scalars only;
    /// the temporal values are returned, not stored).
    pub fn observe_into(
        &self,
        step: u64,
        source: &dyn TensorSource,
        sink: &mut dyn ValueSink,
    ) -> Result<Observation, RuntimeError> {
        let mut obs = self.observe(step, source);
        sink.write(step, &obs.values).map_err(RuntimeError::Sink)?;
        if !self.temporal {
            return Ok(obs);
        }
        for o in &self.observables {
            let Some(temporal) = &o.spec.temporal else {
                continue;
            };
            if !obs.values.contains_key(&o.id) {
                continue;
            }
            let history: Vec<f64> = sink
                .history(&o.id, step)
                .map_err(RuntimeError::Sink)?
                .iter()
                .map(|(_, v)| v.as_scalar().unwrap_or(f64::NAN))
                .collect();
            obs.temporal.insert(o.id.clone(), temporal.last(&history));
        }
        Ok(obs)
    }
}

/// Hands a key's values, in order, to a sink in chunks at most as long as asked.
type Feed<'a> = dyn FnMut(usize, &mut dyn FnMut(Chunk<'_>)) + 'a;

/// Copy a streamed tensor into one reused buffer a block at a time
/// ([`crate::observe::ops::engine::stream_len`] values, so that the result is the same as fed whole)
/// and hand it on in chunks of at most `chunk_len` values while it is in cache.
fn feed_stream(stream: &dyn F32Stream, chunk_len: usize, f: &mut dyn FnMut(Chunk<'_>)) {
    let total: usize = stream.shape().iter().product();
    let block = crate::observe::ops::engine::stream_len(chunk_len);
    let mut buf = vec![0f32; block.min(total)];
    let mut start = 0;
    while start < total {
        let n = block.min(total - start);
        let part = &mut buf[..n];
        stream.copy_f32(start, part);
        part.chunks(chunk_len.max(1)).for_each(|c| f(Chunk::F32(c)));
        start += n;
    }
}

/// The runtime's path over files: a step's source (an NPZ dump, a checkpoint) handed in.
#[derive(Debug, Clone)]
pub struct OfflineAnalyzer {
    runtime: Runtime,
}

impl OfflineAnalyzer {
    pub fn new(runtime: Runtime) -> Self {
        OfflineAnalyzer { runtime }
    }

    /// Observe one step over the source that holds it.
    pub fn analyze(&self, step: u64, context: &dyn TensorSource) -> Observation {
        self.runtime.observe(step, context)
    }

    /// Observe one step and write it to a sink (see [`Runtime::observe_into`]).
    pub fn analyze_into(
        &self,
        step: u64,
        context: &dyn TensorSource,
        sink: &mut dyn ValueSink,
    ) -> Result<Observation, RuntimeError> {
        self.runtime.observe_into(step, context, sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::source::HookSource;
    use std::borrow::Cow;
    use std::cell::Cell;

    /// A hook source that streams its float32 tensors and counts whole reads.
    struct Streaming {
        inner: HookSource,
        whole_reads: Cell<usize>,
    }

    /// A float32 tensor held in a plain vector, streamed out of it.
    /// (and counts the values copied out).
    struct Held(Vec<f32>, Vec<usize>, Cell<usize>);

    impl F32Stream for Held {
        fn shape(&self) -> &[usize] {
            &self.1
        }
        fn copy_f32(&self, start: usize, out: &mut [f32]) {
            out.copy_from_slice(&self.0[start..start + out.len()]);
            self.2.set(self.2.get() + out.len());
        }
    }

    struct StreamingSource {
        hook: Streaming,
        streams: BTreeMap<String, Held>,
    }

    impl TensorSource for StreamingSource {
        fn list(&self) -> Result<Vec<String>, SourceError> {
            self.hook.inner.list()
        }
        fn read(&self, key: &str) -> Result<Cow<'_, TypedTensor>, SourceError> {
            self.hook.whole_reads.set(self.hook.whole_reads.get() + 1);
            self.hook.inner.read(key)
        }
        fn stream_f32(&self, key: &str) -> Option<&dyn F32Stream> {
            self.streams.get(key).map(|h| h as &dyn F32Stream)
        }
    }

    /// Values with zeros, negatives and a long tail, not a whole number of blocks long.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let v = (x >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0;
                if i % 97 == 0 {
                    0.0
                } else {
                    v * (1.0 + (i % 1000) as f32)
                }
            })
            .collect()
    }

    fn sources() -> (HookSource, StreamingSource) {
        let mut hook = HookSource::new();
        let mut streams = BTreeMap::new();
        let rows = 1024 + 7;
        for (key, shape, seed) in [
            ("param.big", vec![rows, 1024 + 3], 1),
            ("param.small", vec![5, 7], 2),
            ("grad.big", vec![rows * 2, 517], 3),
        ] {
            let v = values(shape.iter().product(), seed);
            hook.put_f32(key, v.clone(), shape.clone()).unwrap();
            streams.insert(key.to_string(), Held(v, shape, Cell::new(0)));
        }
        hook.put_loss(0.5);
        let streaming = StreamingSource {
            hook: Streaming {
                inner: hook.clone(),
                whole_reads: Cell::new(0),
            },
            streams,
        };
        (hook, streaming)
    }

    #[test]
    fn streamed_tensors_give_the_same_bits_as_whole_ones() {
        let keys = ["param.big", "param.small", "grad.big", "loss"].map(String::from);
        let reductions = [
            "mean",
            "std",
            "min",
            "max",
            "absmax",
            "l1",
            "l2",
            "rms",
            "zero_fraction",
            "sparsity",
            "quantiles(0.1,0.5,0.99)",
            "histogram(16,-2,2)",
            "histogram(8)",
        ]
        .map(String::from);
        let mut specs = Vec::new();
        let o = crate::GenerateOptions {
            kinds: crate::observe::generate::ALL_KINDS
                .iter()
                .map(|k| k.to_string())
                .collect(),
            ..crate::GenerateOptions::default()
        };
        for transforms in [vec![], vec!["abs".to_string()]] {
            specs.extend(crate::generate_specs(&keys, &reductions, &transforms, &o).unwrap());
        }
        let per_row = ["per_row".to_string()];
        specs.extend(crate::generate_specs(&keys, &reductions[..10], &per_row, &o).unwrap());
        specs.push(ObservableSpec::new("param", "all", "l2"));
        specs.push(ObservableSpec::new("grad", "*", "mean"));
        let pack: Pack = specs
            .into_iter()
            .map(|s| Observable::builtin(s).unwrap())
            .collect();
        let runtime = Runtime::new(pack).unwrap();
        let (whole, streamed) = sources();
        let a = runtime.observe(0, &whole);
        let b = runtime.observe(0, &streamed);
        assert!(a.values.len() > 100, "{} values", a.values.len());
        assert_eq!(a.failed.len(), b.failed.len());
        assert_eq!(
            serde_json::to_string(&a.values).unwrap(),
            serde_json::to_string(&b.values).unwrap()
        );
        for (id, v) in &a.values {
            let w = &b.values[id];
            let bits = |v: &Value| format!("{:?}", v.as_scalar().map(f64::to_bits));
            assert_eq!(bits(v), bits(w), "{id}");
        }
        assert_eq!(
            streamed.hook.whole_reads.get(),
            1,
            "only the loss is read whole"
        );
    }

    /// Helpers standing in for other threads: each time this thread claims a block, they
    /// take one from the back (as `accumulate_block` elsewhere would), failing the blocks in
    /// `fail`; `decline` refuses to start, `greedy` takes every block before this one claims.
    #[derive(Default)]
    struct StandIn {
        values: BTreeMap<String, Vec<f32>>,
        fail: Vec<usize>,
        decline: bool,
        greedy: bool,
        job: std::cell::RefCell<
            Option<(String, crate::observe::ops::blocks::BlockKind, usize, usize)>,
        >,
        front: Cell<usize>,
        back: Cell<usize>,
        started: Cell<usize>,
    }

    impl StandIn {
        fn take_back(&self) -> bool {
            let blocks = self.job.borrow().as_ref().map_or(0, |j| j.3);
            let free = self.front.get() + (blocks - self.back.get()) < blocks;
            if free {
                self.back.set(self.back.get() - 1);
            }
            free
        }
    }

    impl BlockHelpers for StandIn {
        fn min_len(&self) -> usize {
            1 << 21
        }
        fn start(
            &self,
            key: &str,
            kind: crate::observe::ops::blocks::BlockKind,
            len: usize,
            blocks: usize,
        ) -> bool {
            self.started.set(self.started.get() + 1);
            *self.job.borrow_mut() = Some((key.to_string(), kind, len, blocks));
            self.front.set(0);
            self.back.set(blocks);
            while self.greedy && self.take_back() {}
            !self.decline
        }
        fn claim(&self) -> bool {
            self.take_back_then_front()
        }
        fn finish(&self, first: usize) -> Vec<f64> {
            while self.take_back() {}
            let job = self.job.borrow();
            let (key, kind, len, blocks) = job.as_ref().unwrap();
            assert_eq!(first, self.front.get());
            let v = &self.values[key];
            let mut out = Vec::new();
            for b in first..*blocks {
                let part = &v[b * len..((b + 1) * len).min(v.len())];
                let mut f = crate::observe::ops::blocks::accumulate_block(*kind, part);
                if self.fail.contains(&b) {
                    f[0] = f64::NAN;
                }
                out.extend(f);
            }
            out
        }
    }

    impl StandIn {
        /// This thread's claim: a helper takes a block from the back first, then this
        /// thread takes the next from the front if any is left.
        fn take_back_then_front(&self) -> bool {
            self.take_back();
            let blocks = self.job.borrow().as_ref().map_or(0, |j| j.3);
            let free = self.front.get() < self.back.get().min(blocks);
            if free {
                self.front.set(self.front.get() + 1);
            }
            free
        }
    }

    /// A streaming source with stand-in helpers.
    struct Helped {
        inner: StreamingSource,
        helpers: StandIn,
    }

    impl TensorSource for Helped {
        fn list(&self) -> Result<Vec<String>, SourceError> {
            self.inner.list()
        }
        fn read(&self, key: &str) -> Result<Cow<'_, TypedTensor>, SourceError> {
            self.inner.read(key)
        }
        fn stream_f32(&self, key: &str) -> Option<&dyn F32Stream> {
            self.inner.stream_f32(key)
        }
        fn helpers(&self) -> Option<&dyn BlockHelpers> {
            Some(&self.helpers)
        }
    }

    #[test]
    fn blocks_taken_by_helpers_give_the_same_bits_as_one_thread() {
        // 3.5 blocks of 2^20 values; the eight statistics (full moments), l2 alone (light)
        // and, not helped, a spec that needs more than moments.
        let n = (7 << 20) / 2;
        let v = values(n, 9);
        let mut hook = HookSource::new();
        hook.put_f32("param.w", v.clone(), vec![n]).unwrap();
        let eight = crate::math::stats::Stats::FLOATS;
        let runtime = |reductions: &[&str]| {
            let specs = reductions
                .iter()
                .map(|r| ObservableSpec::new("param", "w", r));
            Runtime::new(specs.map(|s| Observable::builtin(s).unwrap()).collect()).unwrap()
        };
        let bits = |o: &Observation| {
            let mut out: Vec<(String, Option<u64>)> = o
                .values
                .iter()
                .map(|(id, v)| (id.clone(), v.as_scalar().map(f64::to_bits)))
                .collect();
            out.sort();
            out
        };
        // Each case with the values this thread copies in for the eight and again for l2
        // (blocks 0 and 1, every block, or none; the quantiles need every value here).
        let cases: [(&str, StandIn, usize); 4] = [
            ("one block each in turn", StandIn::default(), 2 << 20),
            (
                "blocks 3 and 2 failed by the helpers",
                StandIn {
                    fail: vec![2, 3],
                    ..Default::default()
                },
                n,
            ),
            (
                "helpers declined",
                StandIn {
                    decline: true,
                    ..Default::default()
                },
                n,
            ),
            (
                "helpers took every block",
                StandIn {
                    greedy: true,
                    ..Default::default()
                },
                0,
            ),
        ];
        for (case, helpers, here) in cases {
            let inner = StreamingSource {
                hook: Streaming {
                    inner: hook.clone(),
                    whole_reads: Cell::new(0),
                },
                streams: BTreeMap::from([(
                    "param.w".to_string(),
                    Held(v.clone(), vec![n], Cell::new(0)),
                )]),
            };
            let mut source = Helped { inner, helpers };
            source
                .helpers
                .values
                .insert("param.w".to_string(), v.clone());
            for reductions in [&eight[..], &["l2"], &["mean", "quantiles(0.5)"]] {
                let r = runtime(reductions);
                let want = r.observe(0, &hook);
                let got = r.observe(0, &source);
                assert!(got.failed.is_empty(), "{case}: {:?}", got.failed);
                assert_eq!(bits(&got), bits(&want), "{case}, {reductions:?}");
            }
            let copied = source.inner.streams["param.w"].2.get();
            assert_eq!(copied, 2 * here + n, "{case}: values copied in here");
            let helped = source.helpers.started.get();
            assert_eq!(
                helped, 2,
                "{case}: helpers asked for the eight and for l2 only"
            );
        }
    }
}

//! Health over a store: `seen`, `diagnose`, `history`, `where`, `within` and `alerts`, read
//! from a run's blobs (`stats.json`, `facts.json`) and graph through any [`StoreFs`].
//!
//! Costs: the index is scanned (or, with `last = Some(n)`, read backwards for its last `n`
//! lines) and each forward looked at costs one fetch of its blob; nothing else is read.

use super::graph::{graph_path, Graph};
use super::thresholds::AsJson;
use crate::store::{Fact, NodeStats, ScanItem, Store, StoreError, StoreFs};
use serde::Serialize;
use serde_json::{json, Value};
use somatize_verdict::{
    about, judge, Finding, Flag, Forward, Judgement, NodeSeen, Thresholds, Verdict,
};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Why health could not be read from a store.
#[derive(Debug)]
pub enum HealthError {
    /// The store could not be read (see the inner error; retrying helps only for I/O).
    Store(StoreError),
    /// The store holds no run of this name (worded as the record functions word it). Not
    /// retryable: `runs` lists what is there.
    NoSuchRun { run: String },
    /// The run's `graph.json` is not a graph; fix or remove the file.
    Graph {
        /// The file in the store.
        path: String,
        reason: String,
    },
    /// The run has no forward whose blob could be read, so there is nothing to judge.
    Empty {
        run: String,
        /// What was skipped and why (bad lines, missing or corrupt blobs), if anything.
        skipped: Vec<String>,
    },
}

impl fmt::Display for HealthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HealthError::Store(e) => write!(f, "{e}"),
            HealthError::NoSuchRun { run } => write!(f, "the store holds no run {run:?}"),
            HealthError::Graph { path, reason } => write!(f, "{path}: {reason}"),
            HealthError::Empty { run, skipped } if skipped.is_empty() => {
                write!(f, "run {run:?} has no recorded forward to judge")
            }
            HealthError::Empty { run, skipped } => write!(
                f,
                "run {run:?} has no readable forward to judge; skipped: {}",
                skipped.join("; ")
            ),
        }
    }
}

impl std::error::Error for HealthError {}

impl From<StoreError> for HealthError {
    fn from(e: StoreError) -> Self {
        HealthError::Store(e)
    }
}

impl HealthError {
    /// A store error met listing `run`'s writers or indexes: a missing folder is `NoSuchRun`.
    fn in_run(run: &str, e: HealthError) -> Self {
        match e {
            HealthError::Store(StoreError::NotFound { .. }) => HealthError::NoSuchRun {
                run: run.to_string(),
            },
            e => e,
        }
    }
}

/// Stats rows keyed like tensors (`act.x`, `param.x.weight`, `grad.x.weight`, `update.x.weight`) are the
/// companion's per-tensor statistics, not nodes.
fn is_tensor_key(key: &str) -> bool {
    ["act.", "param.", "grad.", "update."]
        .iter()
        .any(|p| key.starts_with(p))
}

/// A run's graph from its `graph.json`, if it has one.
pub fn graph<F: StoreFs>(store: &Store<F>, run: &str) -> Result<Option<Graph>, HealthError> {
    crate::store::names::run(run)?;
    let path = graph_path(run);
    match store.fs().read(&path) {
        Ok(bytes) => Graph::parse(&bytes, &path)
            .map(Some)
            .map_err(|reason| HealthError::Graph { path, reason }),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What health reads of a run: its graph, and per forward looked at every node's metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct RunHealth {
    pub run: String,
    /// The graph, when the run has a `graph.json`.
    pub graph: Option<Graph>,
    /// The forwards looked at, oldest first; nodes in declaration order (the graph's, else
    /// the order of the forward's facts, then any other `stats.json` rows).
    pub forwards: Vec<Forward>,
    /// Where each node ran (`where` of its latest fact).
    pub places: BTreeMap<String, String>,
    /// Forwards or lines skipped, and why (a bad index line, a missing or corrupt blob).
    pub skipped: Vec<String>,
    /// Each writer's own forwards, when the run's writers are processes of one network (the
    /// ranks of a data-parallel job: [`somatize_verdict::same_network`]); else empty. The
    /// verdict judges them apart and reads them together ([`somatize_verdict::ranks`]).
    pub writers: Vec<(String, Vec<Forward>)>,
}

/// One forward's nodes from its stats and facts, in declaration order.
fn nodes_of(stats: NodeStats, facts: &[Fact], graph: Option<&Graph>) -> Vec<NodeSeen> {
    let mut order: Vec<String> = Vec::new();
    let mut kinds: HashMap<String, String> = HashMap::new();
    if let Some(g) = graph {
        for n in &g.nodes {
            order.push(n.name.clone());
            kinds.insert(n.name.clone(), n.kind.clone());
        }
    }
    for f in facts {
        if !kinds.contains_key(&f.node) {
            order.push(f.node.clone());
            kinds.insert(f.node.clone(), f.kind.clone());
        }
    }
    let mut stats = stats;
    let mut out = Vec::new();
    for name in order {
        if let Some(row) = stats.remove(&name) {
            out.push(node(
                name.clone(),
                kinds.remove(&name).unwrap_or_default(),
                row,
            ));
        }
    }
    for (name, row) in stats {
        if !is_tensor_key(&name) {
            out.push(node(name, String::new(), row));
        }
    }
    out
}

fn node(name: String, kind: String, row: BTreeMap<String, crate::store::Num>) -> NodeSeen {
    NodeSeen {
        name,
        kind,
        metrics: row.into_iter().map(|(k, v)| (k, v.0)).collect(),
    }
}

/// The index lines of `run` to look at: all of them, or the last `n`.
fn lines<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
    skipped: &mut Vec<String>,
) -> Result<Vec<ScanItem>, HealthError> {
    let mut bad = |e: StoreError| skipped.push(e.to_string());
    Ok(match last {
        Some(n) => store.last(run, n, &mut bad)?,
        None => {
            let mut out = Vec::new();
            for item in store.scan(run)? {
                match item {
                    Ok(i) => out.push(i),
                    Err(e) => bad(e),
                }
            }
            out
        }
    })
}

/// Read what health needs of `run`: the graph, and for each forward looked at (all, or the
/// last `last`) its node metrics, one blob fetch each. Forwards several writers wrote under
/// one number are merged. A forward with no blob or a bad one is skipped and said so.
pub fn read<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
) -> Result<RunHealth, HealthError> {
    let graph = graph(store, run)?;
    let mut skipped = Vec::new();
    let items = lines(store, run, last, &mut skipped).map_err(|e| HealthError::in_run(run, e))?;
    let mut forwards: Vec<Forward> = Vec::new();
    let mut places = BTreeMap::new();
    let mut by_writer: BTreeMap<String, Vec<Forward>> = BTreeMap::new();
    for item in items {
        if item.entry.blob.is_none() {
            continue;
        }
        let read = store.fetch(run, &item.writer, &item.entry).and_then(|b| {
            let facts = b.facts()?;
            Ok((b.stats()?, facts))
        });
        let (stats, facts) = match read {
            Ok(x) => x,
            Err(e) => {
                skipped.push(e.to_string());
                continue;
            }
        };
        for f in &facts {
            places.insert(f.node.clone(), f.where_.clone());
        }
        let nodes = nodes_of(stats, &facts, graph.as_ref());
        let own = by_writer.entry(item.writer.to_string()).or_default();
        match own.last_mut() {
            Some(f) if f.number == item.entry.forward => f.nodes.extend(nodes.iter().cloned()),
            _ => own.push(Forward {
                number: item.entry.forward,
                nodes: nodes.clone(),
            }),
        }
        match forwards.last_mut() {
            Some(f) if f.number == item.entry.forward => f.nodes.extend(nodes),
            _ => forwards.push(Forward {
                number: item.entry.forward,
                nodes,
            }),
        }
    }
    if forwards.is_empty() {
        return Err(HealthError::Empty {
            run: run.to_string(),
            skipped,
        });
    }
    let mut writers: Vec<(String, Vec<Forward>)> = by_writer.into_iter().collect();
    // rank2 before rank10.
    writers.sort_by_key(|(a, _)| natural(a));
    if !somatize_verdict::same_network(&writers) {
        writers.clear();
    }
    Ok(RunHealth {
        run: run.to_string(),
        graph,
        forwards,
        places,
        skipped,
        writers,
    })
}

/// A name's digits read as a number, so `rank2` sorts before `rank10`.
fn natural(name: &str) -> (String, u64, String) {
    let head = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &name[head.len()..];
    (
        head.to_string(),
        digits.parse().unwrap_or(0),
        name.to_string(),
    )
}

/// A diagnosis: the verdict, the thresholds it was taken at, and over what.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    pub run: String,
    /// The forwards read (their numbers, oldest first).
    pub forwards: Vec<u64>,
    /// The root flags of the faults, `{where: [flag, …]}` (the seed's shape).
    pub verdict: Verdict,
    /// The whole answer over time: faults with what they fold, transients, what passed, the
    /// forwards judged and the first non-finite one.
    pub judgement: Judgement,
    pub thresholds: Thresholds,
}

/// A finding as JSON: `{node, flag, since, until, held, window: {held, of}, evidence}`.
fn finding_json(f: &Finding) -> Value {
    let evidence: serde_json::Map<String, Value> = f
        .evidence
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number),
            )
        })
        .collect();
    json!({
        "node": f.node,
        "flag": f.flag.to_string(),
        "since": f.since,
        "until": f.until,
        "held": f.held,
        "window": {"held": f.in_window.0, "of": f.in_window.1},
        "evidence": evidence,
    })
}

impl Diagnosis {
    /// `{"run", "forwards": {"count", "first", "last"}, "diagnosis": {where: [flag, …]},
    /// "faults": [{root finding…, "folded": [finding, …]}], "transients": [finding, …],
    /// "passed": [finding, …], "judged": {"count", "first", "last"}, "nonfinite_at",
    /// "thresholds": {name: value, …}}`: the verdict written out with its bounds. `diagnosis`
    /// holds the faults' roots only, so it has one row per fault.
    pub fn to_json(&self) -> Value {
        let diagnosis: serde_json::Map<String, Value> = self
            .verdict
            .to_names()
            .into_iter()
            .map(|(node, flags)| (node, json!(flags)))
            .collect();
        let j = &self.judgement;
        let faults: Vec<Value> = j
            .faults
            .iter()
            .map(|f| {
                let mut v = finding_json(&f.root);
                v["folded"] = Value::Array(f.folded.iter().map(finding_json).collect());
                v
            })
            .collect();
        json!({
            "run": self.run,
            "forwards": {
                "count": self.forwards.len(),
                "first": self.forwards.first(),
                "last": self.forwards.last(),
            },
            "diagnosis": diagnosis,
            "faults": faults,
            "transients": j.transients.iter().map(finding_json).collect::<Vec<_>>(),
            "passed": j.passed.iter().map(finding_json).collect::<Vec<_>>(),
            "judged": {
                "count": j.judged.len(),
                "first": j.judged.first(),
                "last": j.judged.last(),
            },
            "nonfinite_at": j.nonfinite_at,
            "blowing_up": j.blowing_up.iter().map(finding_json).collect::<Vec<_>>(),
            "thresholds": serde_json::to_value(AsJson(&self.thresholds)).unwrap_or(Value::Null),
        })
    }
}

/// What is wrong, loudly: one fault, where it starts, since when, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    /// Where it starts (a node, or node.path for a submodule).
    pub node: String,
    /// The flag as raised (`DEAD_CHANNELS(3)`).
    pub flag: String,
    /// The first forward judged whose own numbers raise it here (for LOSING_PLASTICITY, a
    /// trend, the first forward judged; for NAN/INF, the forward it appeared at).
    pub first_forward: u64,
    /// The last forward judged that raises it here.
    pub until: u64,
    /// On how many forwards judged it held, and on how many of the last window's.
    pub held: usize,
    pub window: (usize, usize),
    /// The numbers it was taken on (the metrics its rule reads, at `until`).
    pub evidence: BTreeMap<String, Option<f64>>,
    /// What it explains, folded under it: `FLAG at node (since forward)`.
    pub folded: Vec<String>,
    /// What it means.
    pub means: &'static str,
    /// What to do about it.
    pub advice: &'static str,
}

/// The health figures: the only ones whose colour says good or bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthFigure {
    /// One measurement across the nodes, flagged nodes in the alarm colour.
    Profile,
    /// A table of node, flag and what to do.
    Flags,
    /// The graph as a chain of boxes, flagged nodes outlined and badged.
    Overlaid,
}

impl RunHealth {
    /// The latest of each metric per node, in declaration order.
    pub fn seen(&self) -> Vec<NodeSeen> {
        let mut seen = somatize_verdict::latest(&self.forwards);
        if let Some(g) = &self.graph {
            for n in &mut seen {
                if n.kind.is_empty() {
                    n.kind = g.kind_of(&n.name).unwrap_or_default().to_string();
                }
            }
        }
        seen
    }

    /// The verdict at `t` over the forwards read, judged over time (the writers of one
    /// network each on their own, then read together).
    pub fn diagnose(&self, t: &Thresholds) -> Diagnosis {
        let judgement = if self.writers.is_empty() {
            judge(&self.forwards, t)
        } else {
            somatize_verdict::judge_writers(&self.writers, t)
        };
        Diagnosis {
            run: self.run.clone(),
            forwards: self.forwards.iter().map(|f| f.number).collect(),
            verdict: judgement.verdict.clone(),
            judgement,
            thresholds: t.clone(),
        }
    }

    /// One node's values of one metric over the forwards read, as `(forward, value)`; at
    /// `writer/node`, that writer's (the verdict's name for a finding of one rank).
    pub fn history(&self, node: &str, of: &str) -> Vec<(u64, f64)> {
        if let Some((fs, name)) = self.writer_of(node) {
            return somatize_verdict::series(fs, name, of);
        }
        somatize_verdict::series(&self.forwards, node, of)
    }

    /// The writer's forwards and the node's own name, for a name `writer/node` of one of the
    /// run's writers of one network.
    fn writer_of<'a>(&'a self, node: &'a str) -> Option<(&'a [Forward], &'a str)> {
        let (w, name) = node.split_once('/')?;
        self.writers
            .iter()
            .find(|(x, _)| x == w)
            .map(|(_, fs)| (fs.as_slice(), name))
    }

    /// The graph's node names in declaration order (else the nodes seen, in order).
    pub fn node_names(&self) -> Vec<String> {
        match &self.graph {
            Some(g) => g.nodes.iter().map(|n| n.name.clone()).collect(),
            None => self.seen().into_iter().map(|n| n.name).collect(),
        }
    }

    /// The diagnosis folded onto the graph's nodes: `{node: [flag, …]}` in declaration
    /// order; a flag found inside a node (`node.path`) is named on it (`LEAKAGE in net.2`).
    pub fn overlay(&self, d: &Diagnosis) -> Vec<(String, Vec<String>)> {
        let names = self.node_names();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        if self.writers.is_empty() {
            return fold(&d.verdict, &refs);
        }
        // A finding of one rank (`rank3/fc1`) is drawn on its node, named with the rank.
        let mut plain = Verdict::new();
        let mut ranked: Vec<(String, String)> = Vec::new();
        for (key, flags) in d.verdict.iter() {
            match self.writer_of(key) {
                Some((_, name)) => {
                    let w = &key[..key.len() - name.len() - 1];
                    let at = within(name, &refs);
                    for f in flags {
                        ranked.push((
                            at.to_string(),
                            if at == name {
                                format!("{f} on {w}")
                            } else {
                                format!("{f} in {name} on {w}")
                            },
                        ));
                    }
                }
                None => flags.iter().for_each(|f| plain.raise(key, *f)),
            }
        }
        let mut out = fold(&plain, &refs);
        for (at, label) in ranked {
            match out.iter_mut().find(|(n, _)| *n == at) {
                Some((_, list)) => list.push(label),
                None => out.push((at, vec![label])),
            }
        }
        out.sort_by_key(|(n, _)| refs.iter().position(|r| r == n).unwrap_or(usize::MAX));
        out
    }

    /// What is wrong, loudly: one alert per fault of the diagnosis (the head first), with
    /// what it folds, its evidence and the advice.
    pub fn alerts(&self, d: &Diagnosis) -> Vec<Alert> {
        d.judgement
            .faults
            .iter()
            .map(|f| {
                let r = &f.root;
                let a = about(r.flag.kind.name());
                Alert {
                    node: r.node.clone(),
                    flag: r.flag.to_string(),
                    first_forward: r.since,
                    until: r.until,
                    held: r.held,
                    window: r.in_window,
                    evidence: r
                        .evidence
                        .iter()
                        .map(|(k, v)| (k.clone(), v.is_finite().then_some(*v)))
                        .collect(),
                    folded: f
                        .folded
                        .iter()
                        .map(|x| format!("{} at {} (since {})", x.flag, x.node, x.since))
                        .collect(),
                    means: a.map_or("", |a| a.means),
                    advice: a.map_or("", |a| a.todo),
                }
            })
            .collect()
    }
}

/// Nodes in depth order: each key inside another (`net.0` inside `net`) right after the node it
/// is within and its earlier keys, so a profile reads as the shape over depth; otherwise in
/// the order given (declaration order).
pub fn depth_order(seen: Vec<NodeSeen>) -> Vec<NodeSeen> {
    let names: Vec<String> = seen.iter().map(|n| n.name.clone()).collect();
    // The nearest proper dotted prefix of each name that is itself a name.
    let parent: Vec<Option<usize>> = names
        .iter()
        .map(|name| {
            let mut path = name.as_str();
            while let Some((head, _)) = path.rsplit_once('.') {
                if let Some(i) = names.iter().position(|n| n == head) {
                    return Some(i);
                }
                path = head;
            }
            None
        })
        .collect();
    let mut order = Vec::with_capacity(names.len());
    let mut stack: Vec<usize> = (0..names.len())
        .rev()
        .filter(|&i| parent[i].is_none())
        .collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend((0..names.len()).rev().filter(|&j| parent[j] == Some(i)));
    }
    let mut slots: Vec<Option<NodeSeen>> = seen.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// The node a key belongs to: the longest of `nodes` that is the key or a dotted prefix of
/// it (`layer1.0.conv1` is within `layer1.0` when the graph has `layer1.0`), else the key's
/// first dotted segment when no node matches.
pub fn within<'a>(key: &'a str, nodes: &[&'a str]) -> &'a str {
    let mut path = key;
    loop {
        if let Some(n) = nodes.iter().find(|n| **n == path) {
            return n;
        }
        match path.rsplit_once('.') {
            Some((head, _)) => path = head,
            None => return key.split('.').next().unwrap_or(key),
        }
    }
}

/// A verdict folded onto `nodes`: each flag lands on the node its key is within, named with
/// the key when it came from inside (`LEAKAGE in net.2`); nodes in declaration order, then
/// any key no node holds.
pub fn fold(v: &Verdict, nodes: &[&str]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let rank: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    for (key, flags) in v.iter() {
        let at = within(key, nodes);
        let names = flags.iter().map(|f: &Flag| {
            if at == key {
                f.to_string()
            } else {
                format!("{f} in {key}")
            }
        });
        match out.iter_mut().find(|(n, _)| n == at) {
            Some((_, list)) => list.extend(names),
            None => out.push((at.to_string(), names.collect())),
        }
    }
    out.sort_by_key(|(n, _)| rank.get(n.as_str()).copied().unwrap_or(usize::MAX));
    out
}

/// The length of each of a run's index files, by writer. Writers only append, and every
/// writer of a run writes as it trains, so unchanged lengths mean an unchanged record.
type Stamp = Vec<(String, Option<u64>)>;

fn stamp<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    writers: &[String],
) -> Result<Stamp, HealthError> {
    writers
        .iter()
        .map(
            |w| match store.fs().len(&crate::store::scan::index_path(run, w)) {
                Ok(n) => Ok((w.clone(), Some(n))),
                Err(StoreError::NotFound { .. }) => Ok((w.clone(), None)),
                Err(e) => Err(HealthError::from(e)),
            },
        )
        .collect()
}

/// The last health read of a store, kept while the run's record is unchanged: every health
/// answer and figure over the same run and window (`seen`, `diagnose` at any thresholds,
/// `history` of any node, …) then costs no blob fetch. Whether it is unchanged is asked of
/// the store as the length of each index it was read from (one length per writer; over HTTP
/// one HEAD request), so a run being written is read again once it grew: by [`read`](Self::read)
/// every time, by [`read_at`](Self::read_at) at most once per [`FRESH_MS`] of the caller's
/// clock. A read that skipped anything is not kept (a blob may be readable on the next try).
#[derive(Debug, Default)]
pub struct HealthCache {
    kept: Option<Kept>,
}

/// How long, in milliseconds, a kept read found unchanged is trusted by
/// [`HealthCache::read_at`] without asking the store again: one check per interaction of a
/// person (a threshold edit's answers, a node chosen then its measurement), at most a second
/// behind a run being written.
pub const FRESH_MS: f64 = 1000.0;

#[derive(Debug)]
struct Kept {
    run: String,
    last: Option<usize>,
    stamp: Stamp,
    health: std::sync::Arc<RunHealth>,
    /// When the run was last found unchanged (or read), by the clock of `read_at`'s caller.
    checked_ms: Option<f64>,
}

impl HealthCache {
    /// [`read`] of `run` (all forwards, or the last `last`), or the kept read when the run is
    /// unchanged since (asked of the store each time).
    pub fn read<F: StoreFs>(
        &mut self,
        store: &Store<F>,
        run: &str,
        last: Option<usize>,
    ) -> Result<std::sync::Arc<RunHealth>, HealthError> {
        self.read_checked(store, run, last, None)
    }

    /// [`read`](Self::read) at time `now_ms` (milliseconds, any monotonic-enough clock): the
    /// kept read of the same run and window is given without asking the store when it was
    /// found unchanged (or read) less than [`FRESH_MS`] before `now_ms`.
    pub fn read_at<F: StoreFs>(
        &mut self,
        store: &Store<F>,
        run: &str,
        last: Option<usize>,
        now_ms: f64,
    ) -> Result<std::sync::Arc<RunHealth>, HealthError> {
        if let Some(k) = &self.kept {
            let recent = k
                .checked_ms
                .is_some_and(|t| now_ms >= t && now_ms - t < FRESH_MS);
            if k.run == run && k.last == last && recent {
                return Ok(k.health.clone());
            }
        }
        self.read_checked(store, run, last, Some(now_ms))
    }

    fn read_checked<F: StoreFs>(
        &mut self,
        store: &Store<F>,
        run: &str,
        last: Option<usize>,
        now_ms: Option<f64>,
    ) -> Result<std::sync::Arc<RunHealth>, HealthError> {
        crate::store::names::run(run)?;
        if let Some(k) = &mut self.kept {
            if k.run == run && k.last == last {
                let writers: Vec<String> = k.stamp.iter().map(|(w, _)| w.clone()).collect();
                if stamp(store, run, &writers)? == k.stamp {
                    k.checked_ms = now_ms.or(k.checked_ms);
                    return Ok(k.health.clone());
                }
            }
        }
        self.kept = None;
        let writers = store
            .writers(run)
            .map_err(|e| HealthError::in_run(run, e.into()))?;
        let before = stamp(store, run, &writers)?;
        let health = std::sync::Arc::new(read(store, run, last)?);
        if health.skipped.is_empty() {
            self.kept = Some(Kept {
                run: run.to_string(),
                last,
                stamp: before,
                health: health.clone(),
                checked_ms: now_ms,
            });
        }
        Ok(health)
    }

    /// Ask the store again on the next read, however recently it was checked (after a
    /// refresh of the store's files, say).
    pub fn recheck(&mut self) {
        if let Some(k) = &mut self.kept {
            k.checked_ms = None;
        }
    }

    /// Forget the kept read.
    pub fn clear(&mut self) {
        self.kept = None;
    }
}

/// The latest of each metric per node over `run` (all forwards, or the last `last`).
pub fn seen<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    last: Option<usize>,
) -> Result<Vec<NodeSeen>, HealthError> {
    Ok(read(store, run, last)?.seen())
}

/// `{where: [flag, …]}` for `run` at `t`, with the thresholds it was taken at.
pub fn diagnose<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    t: &Thresholds,
    last: Option<usize>,
) -> Result<Diagnosis, HealthError> {
    Ok(read(store, run, last)?.diagnose(t))
}

/// One node's values of metric `of` over `run`, as `(forward, value)` pairs.
pub fn history<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    node: &str,
    of: &str,
    last: Option<usize>,
) -> Result<Vec<(u64, f64)>, HealthError> {
    Ok(read(store, run, last)?.history(node, of))
}

/// The diagnosis of `run` folded onto its graph's nodes (the seed's `where`).
pub fn where_<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    t: &Thresholds,
    last: Option<usize>,
) -> Result<Vec<(String, Vec<String>)>, HealthError> {
    let h = read(store, run, last)?;
    let d = h.diagnose(t);
    Ok(h.overlay(&d))
}

/// What is wrong with `run` at `t`, loudly (see [`Alert`]).
pub fn alerts<F: StoreFs>(
    store: &Store<F>,
    run: &str,
    t: &Thresholds,
    last: Option<usize>,
) -> Result<Vec<Alert>, HealthError> {
    let h = read(store, run, last)?;
    let d = h.diagnose(t);
    Ok(h.alerts(&d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use somatize_verdict::FlagKind;

    #[test]
    fn depth_order_puts_inner_keys_after_their_node() {
        let seen = ["net", "head", "1", "loss", "net.0", "net.0.a", "net.2"]
            .map(|n| NodeSeen {
                name: n.into(),
                kind: String::new(),
                metrics: Default::default(),
            })
            .to_vec();
        let got: Vec<String> = depth_order(seen).into_iter().map(|n| n.name).collect();
        assert_eq!(
            got,
            ["net", "net.0", "net.0.a", "net.2", "head", "1", "loss"].map(String::from)
        );
    }

    #[test]
    fn keys_fall_within_the_longest_node_that_holds_them() {
        let nodes = ["layer1", "layer1.0", "fc"];
        for (key, want) in [
            ("layer1.0.conv1", "layer1.0"),
            ("layer1.1", "layer1"),
            ("fc", "fc"),
            ("head.proj", "head"),
            ("loss", "loss"),
        ] {
            assert_eq!(within(key, &nodes), want, "within({key:?})");
        }
    }

    #[test]
    fn a_verdict_folds_onto_nodes_naming_the_inside() {
        let mut v = Verdict::new();
        v.raise("net.2", Flag::plain(FlagKind::Leakage));
        v.raise("net", Flag::plain(FlagKind::Stalled));
        v.raise("head", Flag::plain(FlagKind::Nan));
        let got = fold(&v, &["head", "net"]);
        assert_eq!(
            got,
            vec![
                ("head".to_string(), vec!["NAN".to_string()]),
                (
                    "net".to_string(),
                    vec!["LEAKAGE in net.2".to_string(), "STALLED".to_string()]
                ),
            ]
        );
    }
}

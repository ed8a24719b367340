//! The verdict over time: each forward judged on its own numbers, a flag the run's only when it
//! held persistently, the first number that stopped being one first, one row per fault.
//!
//! The rules (DESIGN.md, "A verdict over time"):
//! - A forward is judged on its own numbers only ([`crate::verdict`] over that forward's nodes).
//! - The first forward where a NaN or an Inf appears is the answer's head, at the node it was
//!   born at (the first whose parameters or output broke, else the loss, else the last whose
//!   gradients did); no rule reads that forward or any after it.
//! - Over the forwards judged, a flag at a node is the run's when it held on `persist_count` of
//!   the last `persist_window` of them (in proportion when fewer were judged). One that held
//!   only within `start_forwards` of the first forward judged and then went away is a
//!   transient of the initialisation; one that held persistently earlier and went away has
//!   passed. Neither is raised, both are said.
//! - EXPLODING is also judged over time: every node's gradient norm together grown more than
//!   `exploding_growth` times its smallest at an earlier forward judged, while the loss is no
//!   lower than it was then; named at the first node with a gradient.
//! - Raised flags are grouped into faults: one per flag kind, rooted where it started (the
//!   earliest forward, then the first node), and a fault that explains another folds it under
//!   itself (STALLED under VANISHING, NARROWING under SATURATED, …). The head folds what
//!   started in the window before it, and what held on the forward right before it.

use crate::flags::{Flag, FlagKind, Verdict};
use crate::metrics as m;
use crate::seen::{Forward, NodeSeen};
use crate::thresholds::Thresholds;
use std::collections::HashMap;

/// One flag at one node over the forwards judged: when it held.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Where (a node, or `loss`).
    pub node: String,
    /// The flag as last raised there (`DEAD_CHANNELS(3)` carries its latest count).
    pub flag: Flag,
    /// The first and last forwards it held on.
    pub since: u64,
    pub until: u64,
    /// On how many forwards judged it held.
    pub held: usize,
    /// On how many of the last window's forwards it held, and the window's length.
    pub in_window: (usize, usize),
    /// The numbers it was taken on: the metrics its rule reads, at `until`.
    pub evidence: Vec<(String, f64)>,
}

/// A fault: a root finding and what it explains, folded under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// Where it starts.
    pub root: Finding,
    /// The same flag elsewhere, and the flags it explains (consequences), each once.
    pub folded: Vec<Finding>,
}

/// What a run's forwards say, judged over time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Judgement {
    /// The root flags, `{where: [flag, …]}` in declaration order (the seed's shape).
    pub verdict: Verdict,
    /// One per fault, the head (NAN/INF) first, then by the forward they started at.
    pub faults: Vec<Fault>,
    /// Flags that held only at the start of training and went away.
    pub transients: Vec<Finding>,
    /// Flags that held persistently earlier in the run and went away.
    pub passed: Vec<Finding>,
    /// The numbers of the forwards judged (those before the first non-finite one).
    pub judged: Vec<u64>,
    /// The first forward where a number stopped being one, if any.
    pub nonfinite_at: Option<u64>,
    /// What held in the forwards right before it, while the numbers were blowing up, that
    /// could not have caused it (DEAD, NARROWING, …): said, not raised.
    pub blowing_up: Vec<Finding>,
}

/// The flags that can lead to a NaN or an Inf: what the head folds from the forwards before it.
fn leads_to_nonfinite(kind: FlagKind) -> bool {
    matches!(
        kind,
        FlagKind::Exploding
            | FlagKind::Overstepping
            | FlagKind::MissingNormalisation
            | FlagKind::Inf
    )
}

impl Judgement {
    /// Every finding raised, roots and what they fold, in the faults' order.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.faults
            .iter()
            .flat_map(|f| std::iter::once(&f.root).chain(f.folded.iter()))
    }

    /// Whether a flag of `kind` was raised at `node` (any node when `None`), as a root or
    /// folded under one.
    pub fn shows(&self, node: Option<&str>, kind: FlagKind) -> bool {
        self.findings()
            .any(|f| f.flag.kind == kind && node.is_none_or(|n| n == f.node))
    }
}

/// Where a fault explains another: anywhere in the network, or only at the nodes it holds at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Anywhere,
    SameNode,
}

/// Whether a fault of `parent` explains one of `child` (when it started no later), and where.
fn explains(parent: FlagKind, child: FlagKind) -> Option<Scope> {
    use FlagKind::*;
    use Scope::*;
    match (parent, child) {
        // A gradient that vanished stops the update; a dead or saturated layer passes none.
        (Vanishing, Stalled | Narrowing)
        | (Dead, Stalled | DeadChannels | IgnoredChannels | Narrowing | LosingPlasticity | Vanishing)
        | (DeadChannels, IgnoredChannels | LosingPlasticity)
        | (Saturated, Stalled | Narrowing | IgnoredChannels | Vanishing)
        | (Stalled, Narrowing)
        // Steps too big (growing gradients, or updates the size of the weights) kill units,
        // blow the signal up and collapse the rest.
        | (
            Exploding | Overstepping,
            Dead | DeadChannels | IgnoredChannels | MissingNormalisation | Narrowing
            | LosingPlasticity | Vanishing,
        )
        | (Exploding, Overstepping)
        // Overstepping at the start is what a run that then blows up began with.
        | (Overstepping, Exploding)
        | (MissingNormalisation, Exploding | Overstepping) => Some(Anywhere),
        // A layer that does not move keeps the gradient it is given: it grows there.
        (Stalled, Exploding) => Some(SameNode),
        _ => None,
    }
}

/// The first forward with a NaN or an Inf, its index in `forwards`, and the nodes that have
/// one there with the flag each raises: the node where it was born first ([`origin`]), then
/// the others in declaration order.
fn first_nonfinite(forwards: &[Forward]) -> Option<(usize, Vec<(String, FlagKind)>)> {
    forwards.iter().enumerate().find_map(|(i, f)| {
        let mut broken: Vec<(&NodeSeen, FlagKind)> = f
            .nodes
            .iter()
            .filter_map(|n| {
                let loss = n.get(m::LOSS);
                if n.get(m::NAN).is_some_and(|c| c > 0.0) || loss.is_some_and(f64::is_nan) {
                    Some((n, FlagKind::Nan))
                } else if n.get(m::INF).is_some_and(|c| c > 0.0)
                    || loss.is_some_and(f64::is_infinite)
                {
                    Some((n, FlagKind::Inf))
                } else {
                    None
                }
            })
            .collect();
        if broken.is_empty() {
            return None;
        }
        let head = origin(f, &broken);
        let first = broken.remove(head);
        broken.insert(0, first);
        Some((
            i,
            broken
                .into_iter()
                .map(|(n, k)| (n.name.clone(), k))
                .collect(),
        ))
    })
}

/// Which of a forward's broken nodes (declaration order) a NaN or an Inf was born at. A step
/// runs the forward in declaration order, then the loss, then the backward in reverse, and a
/// non-finite value spreads along that order: once the loss is NaN every gradient is, the
/// first node's included. So it is the first node whose parameters or output are not finite
/// (its `nonfinite` beyond its `grad_nonfinite`); else the loss, when it is not finite; else
/// (a NaN born in the backward, every number of the forward finite) the last node whose
/// gradients are not. A record without `grad_nonfinite` (written before it was measured)
/// cannot tell the passes apart: the first node, as then.
fn origin(f: &Forward, broken: &[(&NodeSeen, FlagKind)]) -> usize {
    if !f.nodes.iter().any(|n| n.get(m::GRAD_NONFINITE).is_some()) {
        return 0;
    }
    let count = |n: &NodeSeen, metric: &str| n.get(metric).unwrap_or(0.0);
    let is_loss = |n: &NodeSeen| n.get(m::LOSS).is_some();
    // `nonfinite` is nan + inf; a picture built by hand may carry only those two.
    let all = |n: &NodeSeen| {
        n.get(m::NONFINITE)
            .unwrap_or_else(|| count(n, m::NAN) + count(n, m::INF))
    };
    let in_forward = |n: &NodeSeen| all(n) > count(n, m::GRAD_NONFINITE);
    let in_grads = |n: &NodeSeen| count(n, m::GRAD_NONFINITE) > 0.0;
    broken
        .iter()
        .position(|(n, _)| !is_loss(n) && in_forward(n))
        .or_else(|| broken.iter().position(|(n, _)| is_loss(n)))
        .or_else(|| broken.iter().rposition(|(n, _)| in_grads(n)))
        .unwrap_or(0)
}

/// The gradient norm of every node together (`None` when no node has one).
fn total_grad_norm(f: &Forward) -> Option<f64> {
    let mut sq = 0.0;
    let mut any = false;
    for n in &f.nodes {
        if let Some(g) = n.get(m::GRAD_NORM).filter(|g| g.is_finite()) {
            sq += g * g;
            any = true;
        }
    }
    any.then(|| sq.sqrt())
}

/// The loss of a forward (the `loss` metric of any node).
fn loss_of(f: &Forward) -> Option<f64> {
    f.nodes.iter().find_map(|n| n.get(m::LOSS))
}

/// EXPLODING over time: for each forward judged, whether every node's gradient norm together
/// is more than `exploding_growth` times its smallest at an earlier forward, while the loss
/// (when recorded) is no lower than at that forward. Returns the growth factor where it holds.
fn growth_over_time(forwards: &[Forward], t: &Thresholds) -> Vec<Option<f64>> {
    let mut smallest: Option<(f64, Option<f64>)> = None;
    forwards
        .iter()
        .map(|f| {
            let g = total_grad_norm(f)?;
            let loss = loss_of(f);
            let out = smallest.and_then(|(s, loss_then)| {
                let factor = g / s;
                let worse = match (loss, loss_then) {
                    (Some(now), Some(then)) => now >= then,
                    _ => true,
                };
                (factor > t.exploding_growth && worse).then_some(factor)
            });
            if g > 0.0 && smallest.is_none_or(|(s, _)| g < s) {
                smallest = Some((g, loss));
            }
            out
        })
        .collect()
}

/// The metrics a flag's rule reads, as measured at one node.
fn evidence(
    node: Option<&NodeSeen>,
    kind: FlagKind,
    extra: Option<(String, f64)>,
) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    if let (Some(n), Some(a)) = (node, crate::about::about(kind.name())) {
        for metric in a.metrics() {
            if let Some(v) = n.get(metric) {
                out.push((metric.to_string(), v));
            }
        }
    }
    out.extend(extra);
    out
}

/// Where a flag held: the forward's index, the flag as raised, and (EXPLODING over time) the
/// growth factor.
type Hold = (usize, Flag, Option<f64>);

/// Every node's flags at every forward judged, on that forward's own numbers.
struct Held {
    /// (node, kind) in first-raised order → (forward index, flag, growth factor) where held.
    order: Vec<(String, FlagKind)>,
    at: HashMap<(String, FlagKind), Vec<Hold>>,
}

fn held(forwards: &[Forward], t: &Thresholds) -> Held {
    let mut h = Held {
        order: Vec::new(),
        at: HashMap::new(),
    };
    let mut put = |node: &str, flag: Flag, i: usize, extra: Option<f64>| {
        let key = (node.to_string(), flag.kind);
        let list = h.at.entry(key.clone()).or_insert_with(|| {
            h.order.push(key);
            Vec::new()
        });
        if list.last().is_none_or(|(j, _, _)| *j != i) {
            list.push((i, flag, extra));
        }
    };
    let growth = growth_over_time(forwards, t);
    for (i, f) in forwards.iter().enumerate() {
        let v = crate::verdict(&f.nodes, t);
        for (node, flags) in v.iter() {
            for flag in flags {
                put(node, *flag, i, None);
            }
        }
        if let Some(factor) = growth[i] {
            // Every layer at once: a statement about the network, named at its first layer
            // with a gradient (where the gradient ends its way back), the same node at every
            // forward so that it can persist.
            if let Some(n) = f.nodes.iter().find(|n| n.get(m::GRAD_NORM).is_some()) {
                put(&n.name, Flag::plain(FlagKind::Exploding), i, Some(factor));
            }
        }
    }
    h
}

/// How many of a window of `len` forwards a flag must hold on to be the run's.
fn needed(len: usize, t: &Thresholds) -> usize {
    let window = t.persist_window.max(1.0);
    let share = (t.persist_count / window).clamp(0.0, 1.0);
    ((share * len as f64).ceil() as usize).max(1)
}

/// The verdict over a run's forwards (oldest first), judged over time at `t`.
pub fn judge(forwards: &[Forward], t: &Thresholds) -> Judgement {
    let head = first_nonfinite(forwards);
    let cut = head.as_ref().map_or(forwards.len(), |(i, _)| *i);
    let judged = &forwards[..cut];
    let numbers: Vec<u64> = judged.iter().map(|f| f.number).collect();
    let order: Vec<&str> = declaration_order(forwards);
    let rank: HashMap<&str, usize> = order.iter().enumerate().map(|(i, n)| (*n, i)).collect();

    let full_window = t.persist_window.max(1.0) as usize;
    let window = full_window.min(judged.len());
    let start_limit = numbers
        .first()
        .map(|f| f.saturating_add(t.start_forwards.max(0.0) as u64));

    let h = held(judged, t);
    let mut ongoing: Vec<Finding> = Vec::new();
    let mut transients = Vec::new();
    let mut passed = Vec::new();
    let mut precursors = Vec::new();
    for key in &h.order {
        let list = &h.at[key];
        let (node, kind) = key;
        // The forwards that measured what this flag's rule reads at this node: a flag is
        // judged over those (activations may be measured every k-th forward only).
        let measured = measured_at(judged, node, *kind);
        // Positions in `measured` of the forwards it held on.
        let pos: Vec<usize> = list
            .iter()
            .filter_map(|(i, _, _)| measured.binary_search(i).ok())
            .collect();
        let window = full_window.min(measured.len());
        let need = needed(window, t);
        let in_window = pos
            .iter()
            .filter(|p| **p >= measured.len() - window)
            .count();
        let (last_i, last_flag, extra) = list[list.len() - 1];
        let at_node = judged[last_i].nodes.iter().find(|n| &n.name == node);
        let finding = Finding {
            node: node.clone(),
            flag: last_flag,
            since: judged[list[0].0].number,
            until: judged[last_i].number,
            held: list.len(),
            in_window: (in_window, window),
            evidence: evidence(
                at_node,
                *kind,
                extra.map(|x| ("grad_norm_growth".to_string(), x)),
            ),
        };
        // Measured only at the start of a run that went on: what it says is the start's.
        let only_at_start = start_limit.is_some_and(|s| {
            measured.last().is_some_and(|&i| judged[i].number <= s)
                && numbers.last().is_some_and(|&l| l > s)
        });
        // On how many of the last forwards measured it held in a row: one that holds now and
        // has for a few forwards is the run's, however short the run.
        let streak = pos
            .iter()
            .rev()
            .zip((0..measured.len()).rev())
            .take_while(|(p, want)| **p == *want)
            .count();
        let persistent = in_window >= need || streak as f64 >= t.persist_streak.max(1.0);
        if persistent && !only_at_start {
            ongoing.push(finding);
        } else if head.is_some() && streak > 0 {
            // Held on the last forward measured before the first NaN/Inf: what came before it.
            precursors.push(finding);
        } else if only_at_start || (streak == 0 && start_limit.is_some_and(|s| finding.until <= s))
        {
            transients.push(finding);
        } else if persisted_somewhere(&pos, window, need) {
            passed.push(finding);
        }
    }
    // LOSING_PLASTICITY is a trend over the forwards judged, not a per-forward rule.
    let mut trend = Verdict::new();
    crate::time::plasticity(judged, t, &mut trend);
    for (node, flags) in trend.iter() {
        for flag in flags {
            let at_node = judged
                .last()
                .and_then(|f| f.nodes.iter().find(|n| n.name == node));
            // A trend is a conclusion at the last forward, not a start: a fault that began
            // before it (the units an overstep killed) is its root.
            ongoing.push(Finding {
                node: node.to_string(),
                flag: *flag,
                since: numbers[numbers.len() - 1],
                until: numbers[numbers.len() - 1],
                held: judged.len(),
                in_window: (window, window),
                evidence: evidence(at_node, flag.kind, None),
            });
        }
    }

    // A flag that held at the start or for a while and went away is still the root of a
    // fault it explains that holds now (Adam's first steps overstep, the units they killed
    // stay dead): it is promoted, and the fault is folded under it.
    // Only a fault's root can be explained so: what it folds already has its cause.
    let roots: Vec<Finding> = group(ongoing.clone(), &rank)
        .into_iter()
        .map(|f| f.root)
        .collect();
    let mut promoted = Vec::new();
    for pool in [&mut transients, &mut passed] {
        let mut keep = Vec::new();
        for f in pool.drain(..) {
            let roots = roots.iter().any(|o| {
                f.since <= o.since
                    && match explains(f.flag.kind, o.flag.kind) {
                        Some(Scope::Anywhere) => true,
                        Some(Scope::SameNode) => f.node == o.node,
                        None => false,
                    }
            });
            if roots {
                promoted.push(f);
            } else {
                keep.push(f);
            }
        }
        *pool = keep;
    }
    ongoing.extend(promoted);
    let mut faults = group(ongoing, &rank);
    let mut verdict = Verdict::new();
    let mut blowing_up = Vec::new();
    let nonfinite_at = head.as_ref().map(|(i, _)| forwards[*i].number);
    if let Some((i, broken)) = head {
        let f = &forwards[i];
        let mut nodes = broken.into_iter();
        if let Some((node, kind)) = nodes.next() {
            let finding = |node: &str, kind: FlagKind| Finding {
                node: node.to_string(),
                flag: Flag::plain(kind),
                since: f.number,
                until: f.number,
                held: 1,
                in_window: (1, 1),
                evidence: evidence(f.nodes.iter().find(|n| n.name == node), kind, None),
            };
            let root = finding(&node, kind);
            let mut folded: Vec<Finding> = nodes.map(|(n, k)| finding(&n, k)).collect();
            let (causes, rest): (Vec<Finding>, Vec<Finding>) = precursors
                .drain(..)
                .partition(|f| leads_to_nonfinite(f.flag.kind));
            folded.extend(causes);
            blowing_up.extend(rest);
            // What started in the window before it came before it, and is folded under it.
            let recent = numbers
                .len()
                .checked_sub(window)
                .and_then(|k| numbers.get(k))
                .copied()
                .unwrap_or(0);
            let (before, rest): (Vec<Fault>, Vec<Fault>) =
                faults.into_iter().partition(|x| x.root.since >= recent);
            for x in before {
                for f in std::iter::once(x.root).chain(x.folded) {
                    if leads_to_nonfinite(f.flag.kind) {
                        folded.push(f);
                    } else {
                        blowing_up.push(f);
                    }
                }
            }
            faults = rest;
            faults.insert(0, Fault { root, folded });
        }
    }
    for fault in &faults {
        verdict.raise(&fault.root.node, fault.root.flag);
    }
    verdict.order_by(order.iter().copied());
    Judgement {
        verdict,
        faults,
        transients,
        passed,
        judged: numbers,
        nonfinite_at,
        blowing_up,
    }
}

/// The metrics that decide a flag of `kind` (what must have been measured for its rule to be
/// asked at all).
fn reads(kind: FlagKind) -> &'static [&'static str] {
    use FlagKind::*;
    match kind {
        Nan => &[m::NAN, m::LOSS],
        Inf => &[m::INF, m::LOSS],
        Vanishing => &[m::GRAD_NORM, m::GRAD_MEAN_ABS],
        Exploding => &[m::GRAD_NORM],
        Dead => &[m::DEAD_UNIT_FRACTION],
        Saturated => &[m::SATURATED_UNIT_FRACTION, m::ACT_SATURATED_FRACTION],
        Stalled | Overstepping => &[m::UPDATE_RATIO],
        DeadChannels => &[m::DEAD_UNITS],
        IgnoredChannels => &[m::IGNORED_UNITS],
        Leakage => &[m::CKA],
        Narrowing => &[m::UPDATE_ERANK, m::GRAD_ERANK],
        MissingNormalisation => &[m::ACT_VAR],
        LosingPlasticity => &[
            m::PARAM_MEAN_ABS,
            m::DORMANT_UNIT_FRACTION,
            m::FEATURE_ERANK,
        ],
    }
}

/// The indices of the forwards in `judged` whose `node` has a metric that decides `kind`.
fn measured_at(judged: &[Forward], node: &str, kind: FlagKind) -> Vec<usize> {
    let metrics = reads(kind);
    judged
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.nodes
                .iter()
                .any(|n| n.name == node && metrics.iter().any(|m| n.metrics.contains_key(*m)))
        })
        .map(|(i, _)| i)
        .collect()
}

/// Whether some window of `window` consecutive forwards held at least `need` of `idx`.
fn persisted_somewhere(idx: &[usize], window: usize, need: usize) -> bool {
    idx.iter().enumerate().any(|(k, &start)| {
        idx[k..]
            .iter()
            .take_while(|&&i| i < start + window.max(1))
            .count()
            >= need
    })
}

/// Node names in declaration order: the order of the nodes in the forwards, first seen first.
fn declaration_order(forwards: &[Forward]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in forwards {
        for n in &f.nodes {
            if seen.insert(n.name.as_str()) {
                out.push(n.name.as_str());
            }
        }
    }
    out
}

/// Findings grouped into faults: one per flag kind, rooted at the earliest forward then the
/// first node; then a fault that explains another (and started no later) folds it.
fn group(mut findings: Vec<Finding>, rank: &HashMap<&str, usize>) -> Vec<Fault> {
    let pos = |n: &str| rank.get(n).copied().unwrap_or(usize::MAX);
    findings.sort_by(|a, b| {
        (a.since, pos(&a.node), a.flag.kind).cmp(&(b.since, pos(&b.node), b.flag.kind))
    });
    let mut faults: Vec<Fault> = Vec::new();
    for f in findings {
        match faults.iter_mut().find(|x| x.root.flag.kind == f.flag.kind) {
            Some(x) => x.folded.push(f),
            None => faults.push(Fault {
                root: f,
                folded: Vec::new(),
            }),
        }
    }
    // Fold consequences: each fault under the earliest-started fault that explains it.
    let nodes_of = |f: &Fault| -> Vec<String> {
        std::iter::once(&f.root)
            .chain(f.folded.iter().filter(|x| x.flag.kind == f.root.flag.kind))
            .map(|x| x.node.clone())
            .collect()
    };
    loop {
        let mut moved = false;
        for c in 0..faults.len() {
            let child = (faults[c].root.flag.kind, faults[c].root.since);
            let parent = (0..faults.len())
                .filter(|&p| p != c)
                .filter(|&p| faults[p].root.since <= child.1)
                .filter(|&p| match explains(faults[p].root.flag.kind, child.0) {
                    Some(Scope::Anywhere) => true,
                    Some(Scope::SameNode) => nodes_of(&faults[p]).contains(&faults[c].root.node),
                    None => false,
                })
                // A pair that explain each other: the earlier is the parent; at a tie, the
                // one listed first in FlagKind order.
                .filter(|&p| {
                    explains(child.0, faults[p].root.flag.kind).is_none()
                        || (faults[p].root.since, faults[p].root.flag.kind) < (child.1, child.0)
                })
                .min_by_key(|&p| (faults[p].root.since, faults[p].root.flag.kind));
            if let Some(p) = parent {
                let x = faults.remove(c);
                let p = if p > c { p - 1 } else { p };
                faults[p].folded.push(x.root);
                faults[p].folded.extend(x.folded);
                moved = true;
                break;
            }
        }
        if !moved {
            break;
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forwards 0..n, each with the nodes `at(i)` gives.
    fn run(n: usize, at: impl Fn(usize) -> Vec<NodeSeen>) -> Vec<Forward> {
        (0..n)
            .map(|i| Forward {
                number: i as u64,
                nodes: at(i),
            })
            .collect()
    }

    fn rows(j: &Judgement) -> Vec<(String, String)> {
        j.faults
            .iter()
            .map(|f| (f.root.node.clone(), f.root.flag.to_string()))
            .collect()
    }

    fn row(node: &str, flag: &str) -> (String, String) {
        (node.to_string(), flag.to_string())
    }

    /// One forward's nodes `emb, attn, fc1, fc2` then `loss`, each given its (nonfinite,
    /// grad_nonfinite) counts, the loss value; `legacy` leaves `grad_nonfinite` out.
    fn broken_at(counts: [(f64, f64); 4], loss: f64, legacy: bool) -> Vec<Forward> {
        run(1, |_| {
            let mut nodes: Vec<NodeSeen> = ["emb", "attn", "fc1", "fc2"]
                .iter()
                .zip(counts)
                .map(|(name, (all, grads))| {
                    let mut m = vec![("nan", all), ("inf", 0.0), ("nonfinite", all)];
                    if !legacy {
                        m.push(("grad_nonfinite", grads));
                    }
                    NodeSeen::new(name, "Linear", m)
                })
                .collect();
            nodes.push(NodeSeen::new("loss", "", [("loss", loss)]));
            nodes
        })
    }

    /// One case of where a NaN was born: per node `(nonfinite, of them in gradients)`, the
    /// loss, whether the record predates `grad_nonfinite`, and the head wanted.
    struct Born {
        what: &'static str,
        counts: [(f64, f64); 4],
        loss: f64,
        legacy: bool,
        head: &'static str,
    }

    #[test]
    fn a_nonfinite_value_is_named_where_it_was_born_not_where_the_backward_carried_it() {
        let t = Thresholds::default();
        let nan = f64::NAN;
        let born = |what, counts, loss, legacy, head| Born {
            what,
            counts,
            loss,
            legacy,
            head,
        };
        let cases = [
            // A weight of fc1 went NaN: its output and the loss follow, then the backward
            // fills every gradient, emb's first in declaration order.
            born(
                "a weight in the middle",
                [(7., 7.), (9., 9.), (12., 10.), (5., 5.)],
                nan,
                false,
                "fc1",
            ),
            // Only attn's output broke (an overflow): emb and its gradients before it.
            born(
                "an output in the middle",
                [(3., 3.), (40., 8.), (9., 9.), (9., 9.)],
                nan,
                false,
                "attn",
            ),
            // Every parameter and output finite, the loss NaN (log 0): then every gradient.
            born(
                "the loss",
                [(3., 3.), (8., 8.), (9., 9.), (9., 9.)],
                nan,
                false,
                "loss",
            ),
            // The loss finite and the backward broke between fc2 and fc1 (sqrt at 0): the
            // gradients broke from fc1 back to emb; fc1 is where the backward first had them.
            born(
                "a backward",
                [(3., 3.), (8., 8.), (9., 9.), (0., 0.)],
                2.0,
                false,
                "fc1",
            ),
            // The first node's own weight: first whichever way.
            born(
                "the first node",
                [(9., 4.), (8., 8.), (9., 9.), (9., 9.)],
                nan,
                false,
                "emb",
            ),
            // A record from before grad_nonfinite: the first node, as then.
            born(
                "a record without grad_nonfinite",
                [(7., 0.), (9., 0.), (12., 0.), (5., 0.)],
                nan,
                true,
                "emb",
            ),
        ];
        for Born {
            what,
            counts,
            loss,
            legacy,
            head,
        } in cases
        {
            let j = judge(&broken_at(counts, loss, legacy), &t);
            let got = rows(&j);
            assert_eq!(
                got.first(),
                Some(&row(head, "NAN")),
                "{what}: got {got:?}, wanted {head} first"
            );
            assert_eq!(got.len(), 1, "{what}: one row for one NaN, got {got:?}");
            let folded: Vec<&str> = j.faults[0].folded.iter().map(|f| f.node.as_str()).collect();
            let broken =
                counts.iter().filter(|c| c.0 > 0.0).count() + usize::from(!loss.is_finite());
            assert_eq!(
                folded.len(),
                broken - 1,
                "{what}: the other broken nodes folded: {folded:?}"
            );
        }
    }

    #[test]
    fn a_picture_without_nonfinite_is_read_from_its_nan_and_inf() {
        // A weight of fc1 went NaN, as the first case above, in a hand-built picture that
        // gives `nan`, `inf` and `grad_nonfinite` but not their total, `nonfinite`.
        let counts = [(7., 7.), (9., 9.), (12., 10.), (5., 5.)];
        let forwards = run(1, |_| {
            let mut nodes: Vec<NodeSeen> = ["emb", "attn", "fc1", "fc2"]
                .iter()
                .zip(counts)
                .map(|(name, (all, grads))| {
                    let m = [("nan", all - 1.0), ("inf", 1.0), ("grad_nonfinite", grads)];
                    NodeSeen::new(name, "Linear", m)
                })
                .collect();
            nodes.push(NodeSeen::new("loss", "", [("loss", f64::NAN)]));
            nodes
        });
        let got = rows(&judge(&forwards, &Thresholds::default()));
        assert_eq!(got, [row("fc1", "NAN")], "got {got:?}, wanted fc1 alone");
    }

    #[test]
    fn the_first_nonfinite_forward_is_the_head_and_nothing_after_it_is_read() {
        let t = Thresholds::default();
        // Gradients grow tenfold a forward from 4 on while the loss rises; NaN at forward 9
        // in `b` and `c` (declaration order a, b, c); after it everything is garbage.
        let fwd = run(12, |i| {
            let g = if i < 4 {
                0.1
            } else {
                0.1 * 10f64.powi(i as i32 - 3)
            };
            let nan = if i >= 9 { 5.0 } else { 0.0 };
            vec![
                NodeSeen::new(
                    "a",
                    "Linear",
                    [("grad_norm", g), ("nan", 0.0), ("update_ratio", 1e-3)],
                ),
                NodeSeen::new(
                    "b",
                    "Linear",
                    [
                        ("grad_norm", g),
                        ("nan", nan),
                        ("update_ratio", if i >= 9 { 0.0 } else { 1e-3 }),
                    ],
                ),
                NodeSeen::new(
                    "c",
                    "ReLU",
                    [
                        ("nan", nan),
                        ("dead_unit_fraction", if i >= 9 { 1.0 } else { 0.0 }),
                    ],
                ),
                NodeSeen::new(
                    "loss",
                    "",
                    [("loss", if i >= 9 { f64::NAN } else { 1.0 + i as f64 })],
                ),
            ]
        });
        let j = judge(&fwd, &t);
        assert_eq!(j.nonfinite_at, Some(9));
        assert_eq!(j.judged, (0..9).collect::<Vec<u64>>());
        assert_eq!(rows(&j), vec![row("b", "NAN")], "one row: {:#?}", j.faults);
        let head = &j.faults[0];
        assert_eq!((head.root.since, head.root.until), (9, 9));
        // What came before it (EXPLODING) and the other broken nodes are folded under it.
        let folded: Vec<(String, String)> = head
            .folded
            .iter()
            .map(|f| (f.node.clone(), f.flag.to_string()))
            .collect();
        assert!(folded.contains(&row("c", "NAN")), "{folded:?}");
        assert!(folded.contains(&row("loss", "NAN")), "{folded:?}");
        assert!(folded.iter().any(|(_, f)| f == "EXPLODING"), "{folded:?}");
        // Nothing computed from the broken forwards raises anything.
        assert!(!folded.iter().any(|(_, f)| f == "STALLED" || f == "DEAD"));
        assert_eq!(
            j.verdict.to_names(),
            vec![("b".to_string(), vec!["NAN".to_string()])]
        );
    }

    #[test]
    fn a_flag_is_the_runs_when_it_held_persistently() {
        let t = Thresholds::default();
        // Each row: the forwards (of 40) STALLED holds on at node `w`, and where it lands.
        let cases: &[(&str, &[usize], &str)] = &[
            ("every forward", &(0..40).collect::<Vec<_>>(), "raised"),
            ("5 of the last 10", &[30, 32, 34, 36, 38], "raised"),
            ("4 of the last 10", &[32, 34, 36, 38], "none"),
            ("only the first forwards", &[0, 1, 2, 3, 4, 5], "transient"),
            (
                "persistently mid-run, then gone",
                &(20..30).collect::<Vec<_>>(),
                "passed",
            ),
            ("a flicker", &[25], "none"),
        ];
        for (what, on, want) in cases {
            let fwd = run(40, |i| {
                let r = if on.contains(&i) { 1e-9 } else { 1e-3 };
                vec![NodeSeen::new("w", "Linear", [("update_ratio", r)])]
            });
            let j = judge(&fwd, &t);
            let got = if !j.faults.is_empty() {
                "raised"
            } else if !j.transients.is_empty() {
                "transient"
            } else if !j.passed.is_empty() {
                "passed"
            } else {
                "none"
            };
            assert_eq!(got, *want, "{what}: {j:#?}");
        }
        // Fewer forwards than the window: in proportion (2 of 3 is enough, 1 of 3 is not).
        for (on, want) in [(&[1usize, 2][..], 1usize), (&[2][..], 0)] {
            let fwd = run(3, |i| {
                let r = if on.contains(&i) { 1e-9 } else { 1e-3 };
                vec![NodeSeen::new("w", "Linear", [("update_ratio", r)])]
            });
            assert_eq!(judge(&fwd, &t).faults.len(), want, "held on {on:?} of 3");
        }
    }

    #[test]
    fn a_metric_measured_once_is_not_carried_to_later_forwards() {
        // F-LATEST: an update ratio of 23.5 at forward 0 and none after is not OVERSTEPPING
        // at the end of the run.
        let fwd = run(30, |i| {
            let mut m = vec![("grad_norm", 0.1)];
            if i == 0 {
                m.push(("update_ratio", 23.5));
            }
            vec![NodeSeen::new("fc3", "Linear", m)]
        });
        let j = judge(&fwd, &Thresholds::default());
        assert!(j.faults.is_empty(), "{:#?}", j.faults);
        assert_eq!(j.transients.len(), 1);
        assert_eq!(j.transients[0].flag.to_string(), "OVERSTEPPING");
    }

    #[test]
    fn exploding_over_time_needs_growth_and_a_loss_no_better() {
        let t = Thresholds::default();
        for (loss_rises, want) in [(true, true), (false, false)] {
            let fwd = run(20, |i| {
                let g = 0.01 * 2f64.powi(i as i32);
                let loss = if loss_rises {
                    1.0 + i as f64
                } else {
                    1.0 / (1.0 + i as f64)
                };
                vec![
                    NodeSeen::new("a", "Linear", [("grad_norm", g)]),
                    NodeSeen::new("b", "Linear", [("grad_norm", g)]),
                    NodeSeen::new("loss", "", [("loss", loss)]),
                ]
            });
            let j = judge(&fwd, &t);
            let raised = rows(&j).contains(&row("a", "EXPLODING"));
            assert_eq!(raised, want, "loss rises: {loss_rises}: {:#?}", j.faults);
            if want {
                let e = &j.faults[0].root.evidence;
                assert!(
                    e.iter().any(|(k, v)| k == "grad_norm_growth" && *v > 100.0),
                    "{e:?}"
                );
            }
        }
    }

    #[test]
    fn one_row_per_fault_with_its_consequences_folded() {
        // VANISHING at a, b, c and STALLED at a, b (its consequence): one row, at a.
        let fwd = run(20, |_| {
            ["a", "b", "c"]
                .iter()
                .map(|n| {
                    let stalled = if *n == "c" { 1e-3 } else { 1e-9 };
                    NodeSeen::new(
                        n,
                        "Linear",
                        [("grad_mean_abs", 1e-9), ("update_ratio", stalled)],
                    )
                })
                .collect()
        });
        let j = judge(&fwd, &Thresholds::default());
        assert_eq!(rows(&j), vec![row("a", "VANISHING")]);
        let mut folded: Vec<(String, String)> = j.faults[0]
            .folded
            .iter()
            .map(|f| (f.node.clone(), f.flag.to_string()))
            .collect();
        folded.sort();
        assert_eq!(
            folded,
            vec![
                row("a", "STALLED"),
                row("b", "STALLED"),
                row("b", "VANISHING"),
                row("c", "VANISHING")
            ]
        );
        // Evidence: the numbers the rule read, and how many forwards agreed.
        let root = &j.faults[0].root;
        assert_eq!((root.since, root.until, root.held), (0, 19, 20));
        assert_eq!(root.in_window, (10, 10));
        assert!(root.evidence.iter().any(|(k, _)| k == "grad_mean_abs"));
    }

    #[test]
    fn the_window_is_a_threshold() {
        // STALLED on the last 2 of 40: not the run's at the defaults (2 of 10, 2 in a row),
        // the run's with a window of 4 and a count of 2.
        let fwd = run(40, |i| {
            let r = if i >= 38 { 1e-9 } else { 1e-3 };
            vec![NodeSeen::new("w", "Linear", [("update_ratio", r)])]
        });
        assert!(judge(&fwd, &Thresholds::default()).faults.is_empty());
        let t = Thresholds::with([("persist_window", 4.0), ("persist_count", 2.0)]).unwrap();
        assert_eq!(rows(&judge(&fwd, &t)), vec![row("w", "STALLED")]);
        // Three in a row at the end is the run's at the defaults: it holds now.
        let fwd = run(40, |i| {
            let r = if i >= 37 { 1e-9 } else { 1e-3 };
            vec![NodeSeen::new("w", "Linear", [("update_ratio", r)])]
        });
        assert_eq!(
            rows(&judge(&fwd, &Thresholds::default())),
            vec![row("w", "STALLED")]
        );
    }

    #[test]
    fn a_start_that_explains_what_holds_now_is_its_root() {
        // Updates as big as the weights on the first two forwards only (Adam's first steps
        // at a learning rate far too high), then a ReLU layer dead for the rest of the run:
        // one fault, rooted at the overstepping, the dead layer folded under it.
        let fwd = run(60, |i| {
            vec![
                NodeSeen::new(
                    "fc",
                    "Linear",
                    [("update_ratio", if i < 2 { 5.0 } else { 0.01 })],
                ),
                NodeSeen::new(
                    "relu",
                    "ReLU",
                    [
                        ("dead_unit_fraction", if i < 3 { 0.0 } else { 0.9 }),
                        ("unit_samples", 64.0),
                    ],
                ),
            ]
        });
        let j = judge(&fwd, &Thresholds::default());
        assert_eq!(rows(&j), vec![row("fc", "OVERSTEPPING")], "{:#?}", j.faults);
        assert!(j.shows(Some("relu"), FlagKind::Dead));
        assert!(j.transients.is_empty());
        // A flicker that comes after the dead layer began explains nothing that holds now,
        // even if it precedes what the dead layer explains (VANISHING upstream).
        let late = run(60, |i| {
            vec![
                NodeSeen::new(
                    "fc",
                    "Linear",
                    [
                        (
                            "grad_norm",
                            if i == 12 {
                                5.0
                            } else if i > 12 {
                                0.0
                            } else {
                                0.1
                            },
                        ),
                        ("grad_mean_abs", if i > 12 { 0.0 } else { 0.01 }),
                    ],
                ),
                NodeSeen::new(
                    "relu",
                    "ReLU",
                    [
                        ("dead_unit_fraction", if i < 3 { 0.0 } else { 0.9 }),
                        ("unit_samples", 64.0),
                    ],
                ),
                NodeSeen::new("out", "Linear", [("grad_norm", 0.05)]),
            ]
        });
        let j = judge(&late, &Thresholds::default());
        assert_eq!(rows(&j), vec![row("relu", "DEAD")], "{:#?}", j.faults);
        assert!(j.shows(Some("fc"), FlagKind::Vanishing));
        assert!(!j.shows(None, FlagKind::Exploding), "{:#?}", j.faults);
        // Without the dead layer after it, the same start is only a transient.
        let calm = run(60, |i| {
            vec![NodeSeen::new(
                "fc",
                "Linear",
                [("update_ratio", if i < 2 { 5.0 } else { 0.01 })],
            )]
        });
        let j = judge(&calm, &Thresholds::default());
        assert!(j.faults.is_empty());
        assert_eq!(j.transients.len(), 1);
    }

    #[test]
    fn a_frozen_layers_gradient_is_not_exploding() {
        // fc2 never moves (STALLED) and its gradient grows over depth: a gradient too big to
        // step on is no reading where nothing steps, so only STALLED is said.
        let fwd = run(30, |_| {
            vec![
                NodeSeen::new(
                    "fc1",
                    "Linear",
                    [("grad_norm", 0.1), ("update_ratio", 1e-2)],
                ),
                NodeSeen::new(
                    "fc2",
                    "Linear",
                    [("grad_norm", 40.0), ("update_ratio", 0.0)],
                ),
                NodeSeen::new(
                    "out",
                    "Linear",
                    [("grad_norm", 0.2), ("update_ratio", 1e-2)],
                ),
            ]
        });
        let j = judge(&fwd, &Thresholds::default());
        assert_eq!(rows(&j), vec![row("fc2", "STALLED")], "{:#?}", j.faults);
        assert!(!j.shows(None, FlagKind::Exploding), "{:#?}", j.faults);
    }
}

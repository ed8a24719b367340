//! One run written by several processes of the same network (the ranks of a data-parallel
//! job): each judged on its own forwards, then read together.
//!
//! Every rule reads one network over depth and over time, so the writers are never pooled: a
//! stretch of layers running from rank 0's head into rank 1's input means nothing. Each
//! writer is judged alone ([`judge`]); then a finding every writer raises at the same node is
//! said once under the node's own name, as a run of one process says it, and a finding only
//! some raise is said per writer, at `writer/node` (`rank3/fc1`).
//!
//! A NaN is named on the writer it started on. In data-parallel training the gradients are
//! averaged across the ranks every step, so a NaN on one rank reaches every rank's gradients
//! in the same forward; but the loss (and the outputs) are each rank's own. So among the
//! writers whose first non-finite forward is the earliest, those whose loss is non-finite
//! there are where it started: their NaN is the head, and the others' (the same NaN, arrived
//! through the averaging) are folded under it. When every writer's loss is non-finite there,
//! or none is (it arose in a backward pass, which the averaging mixes), it is said of every
//! writer, unqualified.

use crate::judge::{judge, Fault, Finding, Judgement};
use crate::seen::Forward;
use crate::{FlagKind, Thresholds, Verdict};
use std::collections::BTreeSet;

/// The name a finding of `writer` is said at when not every writer raises it.
pub fn qualified(writer: &str, node: &str) -> String {
    format!("{writer}/{node}")
}

/// Whether the writers of a run are processes of one network: two or more of them report a
/// node besides the loss under the same name (stages of a pipeline, each with nodes of its
/// own, are one network read together instead).
pub fn same_network(writers: &[(String, Vec<Forward>)]) -> bool {
    if writers.len() < 2 {
        return false;
    }
    let names: Vec<BTreeSet<&str>> = writers
        .iter()
        .map(|(_, fs)| {
            fs.iter()
                .flat_map(|f| f.nodes.iter().map(|n| n.name.as_str()))
                .filter(|n| *n != "loss")
                .collect()
        })
        .collect();
    names
        .iter()
        .enumerate()
        .any(|(i, a)| names[i + 1..].iter().any(|b| !a.is_disjoint(b)))
}

/// The judgement of a run whose `writers` (name, forwards) are processes of one network:
/// each judged alone, then read together (see the module's doc).
pub fn judge_writers(writers: &[(String, Vec<Forward>)], t: &Thresholds) -> Judgement {
    let each: Vec<(&str, Judgement)> = writers
        .iter()
        .map(|(w, fs)| (w.as_str(), judge(fs, t)))
        .collect();
    let all = each.len();
    let nonfinite_at = each.iter().filter_map(|(_, j)| j.nonfinite_at).min();

    // Where the NaN started: the head of the writers whose loss went first.
    let mut origin: Vec<&str> = Vec::new();
    if let Some(first) = nonfinite_at {
        let earliest: Vec<&str> = each
            .iter()
            .filter(|(_, j)| j.nonfinite_at == Some(first))
            .map(|(w, _)| *w)
            .collect();
        let lossy: Vec<&str> = earliest
            .iter()
            .copied()
            .filter(|w| loss_nonfinite(writers, w, first))
            .collect();
        origin = if !lossy.is_empty() && lossy.len() < all {
            lossy
        } else if earliest.len() < all {
            earliest
        } else {
            Vec::new() // every writer at once: said of all of them
        };
    }
    let is_head = |f: &Fault| matches!(f.root.flag.kind, FlagKind::Nan | FlagKind::Inf);
    let mut faults: Vec<Fault> = Vec::new();
    let mut rest: Vec<(&str, Vec<Fault>)> = Vec::new();
    if origin.is_empty() {
        rest = each.iter().map(|(w, j)| (*w, j.faults.clone())).collect();
    } else {
        let mut head: Option<Fault> = None;
        let mut reached: Vec<Finding> = Vec::new();
        for (w, j) in &each {
            let (heads, others): (Vec<Fault>, Vec<Fault>) =
                j.faults.iter().cloned().partition(|f| is_head(f));
            for f in heads {
                let f = qualify_fault(w, f);
                if origin.contains(w) && head.is_none() {
                    head = Some(f);
                } else {
                    reached.push(f.root);
                    reached.extend(f.folded);
                }
            }
            rest.push((w, others));
        }
        if let Some(mut h) = head {
            h.folded.extend(reached);
            faults.push(h);
        }
    }
    let mut merged = merge_faults(&rest, all);
    merged.sort_by_key(|f| (!is_head(f), f.root.since));
    faults.extend(merged);

    let mut verdict = Verdict::new();
    for fault in &faults {
        verdict.raise(&fault.root.node, fault.root.flag);
    }
    let order = node_order(writers);
    verdict.order_by(order.iter().map(String::as_str));
    let lists = |pick: fn(&Judgement) -> &Vec<Finding>| -> Vec<Finding> {
        let per: Vec<(&str, Vec<Finding>)> =
            each.iter().map(|(w, j)| (*w, pick(j).clone())).collect();
        merge_findings(&per, all)
    };
    let judged: BTreeSet<u64> = each
        .iter()
        .flat_map(|(_, j)| j.judged.iter().copied())
        .collect();
    Judgement {
        verdict,
        faults,
        transients: lists(|j| &j.transients),
        passed: lists(|j| &j.passed),
        judged: judged.into_iter().collect(),
        nonfinite_at,
        blowing_up: lists(|j| &j.blowing_up),
    }
}

/// Whether `writer`'s loss at forward `number` is not a finite number.
fn loss_nonfinite(writers: &[(String, Vec<Forward>)], writer: &str, number: u64) -> bool {
    writers
        .iter()
        .filter(|(w, _)| w == writer)
        .flat_map(|(_, fs)| fs.iter().filter(|f| f.number == number))
        .flat_map(|f| f.nodes.iter().filter(|n| n.name == "loss"))
        .any(|n| {
            n.metrics.get("nonfinite").is_some_and(|v| *v > 0.0)
                || n.metrics.get("loss").is_some_and(|v| !v.is_finite())
        })
}

/// The nodes in the order the writers first report them, then each writer's names of them.
fn node_order(writers: &[(String, Vec<Forward>)]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for (_, fs) in writers {
        for n in fs.iter().flat_map(|f| &f.nodes) {
            if seen.insert(n.name.clone()) {
                names.push(n.name.clone());
            }
        }
    }
    let mut out = names.clone();
    for name in &names {
        out.extend(writers.iter().map(|(w, _)| qualified(w, name)));
    }
    out
}

fn qualify(writer: &str, mut f: Finding) -> Finding {
    f.node = qualified(writer, &f.node);
    f
}

fn qualify_fault(writer: &str, f: Fault) -> Fault {
    Fault {
        root: qualify(writer, f.root),
        folded: f.folded.into_iter().map(|x| qualify(writer, x)).collect(),
    }
}

/// The writers' items grouped by `key`, in the order the keys are first met: per key, each
/// writer that has an item of that key with its (first) one.
fn by_key<'a, T, K: PartialEq>(
    per: &'a [(&'a str, Vec<T>)],
    key: impl Fn(&T) -> K,
) -> Vec<Vec<(&'a str, &'a T)>> {
    let mut keys: Vec<K> = Vec::new();
    for (_, items) in per {
        for x in items {
            let k = key(x);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .map(|k| {
            per.iter()
                .filter_map(|(w, items)| items.iter().find(|x| key(x) == k).map(|x| (*w, x)))
                .collect()
        })
        .collect()
}

/// Findings of each writer, read together: one raised by all `all` writers at the same node
/// once, unqualified (since its earliest start, until its latest end, the first writer's
/// numbers otherwise); the others per writer at `writer/node`. In the order first met.
fn merge_findings(per: &[(&str, Vec<Finding>)], all: usize) -> Vec<Finding> {
    let mut out = Vec::new();
    for holders in by_key(per, |f| (f.node.clone(), f.flag.kind)) {
        if holders.len() == all {
            let mut f = holders[0].1.clone();
            f.since = holders
                .iter()
                .map(|(_, x)| x.since)
                .min()
                .unwrap_or(f.since);
            f.until = holders
                .iter()
                .map(|(_, x)| x.until)
                .max()
                .unwrap_or(f.until);
            out.push(f);
        } else {
            out.extend(holders.into_iter().map(|(w, f)| qualify(w, f.clone())));
        }
    }
    out
}

/// Faults of each writer, read together as [`merge_findings`] reads findings (by their
/// root); what a fault raised by every writer folds is merged the same way.
fn merge_faults(per: &[(&str, Vec<Fault>)], all: usize) -> Vec<Fault> {
    let mut out = Vec::new();
    for holders in by_key(per, |f| (f.root.node.clone(), f.root.flag.kind)) {
        if holders.len() == all {
            let part = |pick: fn(&Fault) -> Vec<Finding>| -> Vec<(&str, Vec<Finding>)> {
                holders.iter().map(|(w, f)| (*w, pick(f))).collect()
            };
            let root = merge_findings(&part(|f| vec![f.root.clone()]), all).remove(0);
            out.push(Fault {
                root,
                folded: merge_findings(&part(|f| f.folded.clone()), all),
            });
        } else {
            out.extend(
                holders
                    .into_iter()
                    .map(|(w, f)| qualify_fault(w, f.clone())),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeSeen;

    /// One writer's forwards 0..n: a Linear `a` and a ReLU `b`, its `update_ratio` (of `a`),
    /// NaN counts from `nan_at` on in `a` (the gradients) and, when `loss_nan`, in the loss.
    fn writer(n: u64, ratio: f64, nan_at: Option<u64>, loss_nan: bool) -> Vec<Forward> {
        (0..n)
            .map(|i| {
                let broken = nan_at.is_some_and(|k| i >= k);
                Forward {
                    number: i,
                    nodes: vec![
                        NodeSeen::new(
                            "a",
                            "Linear",
                            [
                                ("grad_norm", 1.0),
                                ("update_ratio", ratio),
                                ("nan", if broken { 3.0 } else { 0.0 }),
                            ],
                        ),
                        NodeSeen::new("b", "ReLU", [("dead_unit_fraction", 0.0)]),
                        NodeSeen::new(
                            "loss",
                            "",
                            [("loss", if broken && loss_nan { f64::NAN } else { 1.0 })],
                        ),
                    ],
                }
            })
            .collect()
    }

    fn ranks(ws: Vec<Vec<Forward>>) -> Vec<(String, Vec<Forward>)> {
        ws.into_iter()
            .enumerate()
            .map(|(i, f)| (format!("rank{i}"), f))
            .collect()
    }

    fn rows(j: &Judgement) -> Vec<String> {
        j.faults
            .iter()
            .map(|f| format!("{} {}", f.root.flag, f.root.node))
            .collect()
    }

    #[test]
    fn the_writers_of_one_network_are_told_from_those_of_a_pipeline() {
        let w = writer(3, 1e-3, None, false);
        assert!(same_network(&ranks(vec![w.clone(), w.clone()])));
        assert!(!same_network(&ranks(vec![w.clone()])));
        // Two stages: nodes of their own, only the loss in common.
        let rename = |fs: &[Forward], to: &str| -> Vec<Forward> {
            fs.iter()
                .map(|f| Forward {
                    number: f.number,
                    nodes: f
                        .nodes
                        .iter()
                        .map(|n| {
                            let mut n = n.clone();
                            if n.name != "loss" {
                                n.name = format!("{to}.{}", n.name);
                            }
                            n
                        })
                        .collect(),
                })
                .collect()
        };
        assert!(!same_network(&ranks(vec![
            rename(&w, "s0"),
            rename(&w, "s1")
        ])));
    }

    #[test]
    fn ranks_read_together() {
        let t = Thresholds::default();
        // Each row: what each of four ranks did, and the rows the verdict should have.
        let stalled = 1e-9; // update_ratio under the STALLED bound
                            // Per rank: update_ratio, the forward its NaN starts at, whether its loss goes too.
        type Rank = (f64, Option<u64>, bool);
        let cases: &[(&str, [Rank; 4], &[&str])] = &[
            ("healthy everywhere", [(1e-3, None, false); 4], &[]),
            (
                "stalled on every rank: said once, as one process's run",
                [(stalled, None, false); 4],
                &["STALLED a"],
            ),
            (
                "stalled on one rank: said of it",
                [
                    (1e-3, None, false),
                    (1e-3, None, false),
                    (stalled, None, false),
                    (1e-3, None, false),
                ],
                &["STALLED rank2/a"],
            ),
            (
                "a NaN from rank 3's loss, averaged into every rank's gradients at once",
                [
                    (1e-3, Some(12), false),
                    (1e-3, Some(12), false),
                    (1e-3, Some(12), false),
                    (1e-3, Some(12), true),
                ],
                &["NAN rank3/a"],
            ),
            (
                "a NaN in every rank's loss at once: every rank's",
                [(1e-3, Some(12), true); 4],
                &["NAN a"],
            ),
            (
                "a NaN in the gradients only (a backward pass, mixed by the averaging)",
                [(1e-3, Some(12), false); 4],
                &["NAN a"],
            ),
            (
                "one rank's NaN a forward before the others'",
                [
                    (1e-3, Some(13), false),
                    (1e-3, Some(12), false),
                    (1e-3, Some(13), false),
                    (1e-3, Some(13), false),
                ],
                &["NAN rank1/a"],
            ),
        ];
        for (what, spec, want) in cases {
            let ws = ranks(
                spec.iter()
                    .map(|&(r, nan, loss)| writer(20, r, nan, loss))
                    .collect(),
            );
            let j = judge_writers(&ws, &t);
            let got = rows(&j);
            assert_eq!(got, *want, "{what}: got {got:?}, wanted {want:?}");
        }
    }

    #[test]
    fn the_nan_reaching_the_other_ranks_is_folded_under_its_origin() {
        let t = Thresholds::default();
        let ws = ranks(vec![
            writer(20, 1e-3, Some(12), false),
            writer(20, 1e-3, Some(12), true),
        ]);
        let j = judge_writers(&ws, &t);
        assert_eq!(j.nonfinite_at, Some(12));
        let head = &j.faults[0];
        assert_eq!(head.root.node, "rank1/a");
        let folded: Vec<String> = head
            .folded
            .iter()
            .map(|f| format!("{} {}", f.flag, f.node))
            .collect();
        assert!(folded.contains(&"NAN rank0/a".to_string()), "{folded:?}");
        assert_eq!(
            j.verdict.to_names(),
            vec![("rank1/a".to_string(), vec!["NAN".to_string()])]
        );
    }
}

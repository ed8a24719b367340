//! Flags and the verdict: `{where: [flag, …]}` in declaration order, nothing for healthy nodes.

use std::collections::HashMap;
use std::fmt;

/// The health flags, in the order a node's flags are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FlagKind {
    Nan,
    Inf,
    Vanishing,
    Exploding,
    Dead,
    Saturated,
    Stalled,
    Overstepping,
    DeadChannels,
    IgnoredChannels,
    Leakage,
    Narrowing,
    MissingNormalisation,
    LosingPlasticity,
}

impl FlagKind {
    /// Every flag, in listing order.
    pub const ALL: [FlagKind; 14] = [
        FlagKind::Nan,
        FlagKind::Inf,
        FlagKind::Vanishing,
        FlagKind::Exploding,
        FlagKind::Dead,
        FlagKind::Saturated,
        FlagKind::Stalled,
        FlagKind::Overstepping,
        FlagKind::DeadChannels,
        FlagKind::IgnoredChannels,
        FlagKind::Leakage,
        FlagKind::Narrowing,
        FlagKind::MissingNormalisation,
        FlagKind::LosingPlasticity,
    ];

    /// The flag's name, as written in a verdict.
    pub fn name(self) -> &'static str {
        match self {
            FlagKind::Nan => "NAN",
            FlagKind::Inf => "INF",
            FlagKind::Vanishing => "VANISHING",
            FlagKind::Exploding => "EXPLODING",
            FlagKind::Dead => "DEAD",
            FlagKind::Saturated => "SATURATED",
            FlagKind::Stalled => "STALLED",
            FlagKind::Overstepping => "OVERSTEPPING",
            FlagKind::DeadChannels => "DEAD_CHANNELS",
            FlagKind::IgnoredChannels => "IGNORED_CHANNELS",
            FlagKind::Leakage => "LEAKAGE",
            FlagKind::Narrowing => "NARROWING",
            FlagKind::MissingNormalisation => "MISSING_NORMALISATION",
            FlagKind::LosingPlasticity => "LOSING_PLASTICITY",
        }
    }

    /// The flag named `name`; a counted form such as `DEAD_CHANNELS(3)` names `DEAD_CHANNELS`.
    pub fn parse(name: &str) -> Option<FlagKind> {
        let base = match name.split_once('(') {
            Some((base, rest)) if rest.ends_with(')') => base,
            Some(_) => return None,
            None => name,
        };
        FlagKind::ALL.into_iter().find(|k| k.name() == base)
    }
}

/// One raised flag; the channel flags carry how many channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Flag {
    pub kind: FlagKind,
    /// The `n` of `DEAD_CHANNELS(n)` / `IGNORED_CHANNELS(n)`; `None` for the others.
    pub count: Option<u64>,
}

impl Flag {
    /// A flag with no count.
    pub fn plain(kind: FlagKind) -> Self {
        Flag { kind, count: None }
    }

    /// A flag with a count, such as `DEAD_CHANNELS(3)`.
    pub fn counted(kind: FlagKind, count: u64) -> Self {
        Flag {
            kind,
            count: Some(count),
        }
    }
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.count {
            Some(n) => write!(f, "{}({n})", self.kind.name()),
            None => f.write_str(self.kind.name()),
        }
    }
}

/// What is wrong, where: nodes in declaration order, each with its flags in [`FlagKind::ALL`]
/// order. A node with nothing wrong is absent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    entries: Vec<(String, Vec<Flag>)>,
    /// Where each node's entry is, so raising stays cheap on graphs of thousands of nodes.
    index: HashMap<String, usize>,
}

impl Verdict {
    /// An empty verdict.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raise `flag` at `node`; nodes keep the order they were first raised at, and a
    /// flag already raised there is not raised twice.
    pub fn raise(&mut self, node: &str, flag: Flag) {
        let i = match self.index.get(node) {
            Some(&i) => i,
            None => {
                self.entries.push((node.to_string(), Vec::new()));
                self.index.insert(node.to_string(), self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        let flags = &mut self.entries[i].1;
        if !flags.iter().any(|f| f.kind == flag.kind) {
            flags.push(flag);
            flags.sort();
        }
    }

    /// Put the nodes in the order of `names` (declaration order); nodes not named go last,
    /// in the order they had.
    /// Take back a flag of `kind` at `node` (a node left with none is no longer listed).
    pub fn lower(&mut self, node: &str, kind: FlagKind) {
        let Some(&i) = self.index.get(node) else {
            return;
        };
        self.entries[i].1.retain(|f| f.kind != kind);
        if self.entries[i].1.is_empty() {
            self.entries.remove(i);
            self.reindex();
        }
    }

    /// The index from node name to entry, rebuilt after entries moved.
    fn reindex(&mut self) {
        self.index = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
    }

    pub fn order_by<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        let mut rank: HashMap<&str, usize> = HashMap::new();
        for (i, name) in names.into_iter().enumerate() {
            rank.entry(name).or_insert(i);
        }
        self.entries
            .sort_by_key(|(n, _)| rank.get(n.as_str()).copied().unwrap_or(usize::MAX));
        self.reindex();
    }

    /// The flags raised at `node` (empty if none).
    pub fn flags_of(&self, node: &str) -> &[Flag] {
        self.index
            .get(node)
            .map(|&i| self.entries[i].1.as_slice())
            .unwrap_or(&[])
    }

    /// Whether `node` has a flag of this kind.
    pub fn has(&self, node: &str, kind: FlagKind) -> bool {
        self.flags_of(node).iter().any(|f| f.kind == kind)
    }

    /// Every node with a flag, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[Flag])> {
        self.entries.iter().map(|(n, f)| (n.as_str(), f.as_slice()))
    }

    /// Whether nothing was raised (which is not the same as healthy: see `seen`).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The verdict with flags as their names: `[(where, ["DEAD_CHANNELS(3)", …])]`.
    pub fn to_names(&self) -> Vec<(String, Vec<String>)> {
        self.iter()
            .map(|(n, f)| (n.to_string(), f.iter().map(Flag::to_string).collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_counted_forms_parse() {
        for k in FlagKind::ALL {
            assert_eq!(FlagKind::parse(k.name()), Some(k), "{}", k.name());
        }
        for (name, want) in [
            ("DEAD_CHANNELS(3)", Some(FlagKind::DeadChannels)),
            ("DEAD_CHANNELS(3", None),
            ("dead", None),
            ("", None),
        ] {
            assert_eq!(FlagKind::parse(name), want, "parse({name:?})");
        }
        assert_eq!(
            Flag::counted(FlagKind::IgnoredChannels, 2).to_string(),
            "IGNORED_CHANNELS(2)"
        );
    }

    #[test]
    fn raising_keeps_node_order_and_sorts_flags_once() {
        let mut v = Verdict::new();
        v.raise("b", Flag::plain(FlagKind::Stalled));
        v.raise("a", Flag::plain(FlagKind::Nan));
        v.raise("b", Flag::plain(FlagKind::Nan));
        v.raise("b", Flag::plain(FlagKind::Nan));
        assert_eq!(
            v.to_names(),
            vec![
                (
                    "b".to_string(),
                    vec!["NAN".to_string(), "STALLED".to_string()]
                ),
                ("a".to_string(), vec!["NAN".to_string()]),
            ]
        );
        v.order_by(["a", "b"]);
        assert_eq!(v.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["a", "b"]);
        assert!(v.has("b", FlagKind::Stalled) && !v.has("a", FlagKind::Stalled));
        // Lowering a node's last flag drops the node, and the index follows.
        v.lower("a", FlagKind::Nan);
        v.lower("b", FlagKind::Stalled);
        assert_eq!(
            v.to_names(),
            vec![("b".to_string(), vec!["NAN".to_string()])]
        );
        assert!(v.has("b", FlagKind::Nan) && v.flags_of("a").is_empty());
    }
}

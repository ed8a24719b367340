//! The built-in demo: small networks trained in Rust on a synthetic spiral, one healthy and
//! six with a fault people meet in practice, each step recorded through a callback.
//!
//! `conditions()` lists them; `train(condition, steps, every, on_step)` runs one and hands
//! every recorded step's [`StepRecord`] to `on_step`. docs/demo.md describes the task, the
//! networks and the flags each condition is meant to raise.

mod conditions;
pub mod layer;
mod loss;
pub mod net;
pub mod rng;
pub mod task;
mod train;

pub use conditions::Condition;
pub use layer::{Init, LayerSpec};
pub use loss::cross_entropy;
pub use train::{train, NodeRecord, ParamRecord, StepRecord, Summary, BATCH, DEFAULT_STEPS};

/// Every demo condition, `healthy` first.
pub fn conditions() -> &'static [Condition] {
    conditions::CONDITIONS
}

/// The condition called `name`, if there is one.
pub fn condition(name: &str) -> Option<&'static Condition> {
    conditions::CONDITIONS.iter().find(|c| c.name == name)
}

/// The graph of a condition's network: each node's name and kind in declaration order
/// (what `graph.json` holds).
pub fn graph(condition: &Condition) -> Vec<(String, &'static str)> {
    net::Net::new(condition.layers(), task::FEATURES, condition.seed())
        .nodes
        .into_iter()
        .map(|n| (n.name, n.spec.kind()))
        .collect()
}

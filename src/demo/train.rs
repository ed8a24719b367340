//! The training loop: minibatch SGD on the spiral, handing a full record of every recorded
//! step (loss, and per node its output, parameters, gradients and updated parameters) to a
//! callback.

use super::conditions::Condition;
use super::loss::cross_entropy;
use super::net::{Grads, Net, Node, Trace, PARAM_NAMES};
use super::rng::Rng;
use super::task::{self, Dataset, CLASSES, FEATURES};
use crate::tensor::TypedTensor;

/// Samples per minibatch (and rows of every recorded activation).
pub const BATCH: usize = 64;
/// Steps a demo run takes by default.
pub const DEFAULT_STEPS: u64 = 300;
/// Salt that separates the minibatch stream from the weight draws of the same seed.
const BATCH_SALT: u64 = 0x0ba7_c4e5_0000_0001;

/// One parameter tensor of a node at one step.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamRecord {
    /// `<node>.weight` or `<node>.bias`.
    pub name: String,
    /// The value the step's forward and gradient were taken at (key `param.<name>`,
    /// stage `forward`).
    pub value: TypedTensor,
    /// Its gradient of the loss (key `grad.<name>`, stage `backward`).
    pub grad: TypedTensor,
    /// The value after this step's SGD update (key `param.<name>`, stage `after_step`):
    /// `updated - value` is the update actually applied, in f32.
    pub updated: TypedTensor,
}

/// One node of the network at one step.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRecord {
    /// The node's name (`fc1`, `relu1`, …).
    pub name: String,
    /// Its kind, as PyTorch names the module (`Linear`, `ReLU`, `Tanh`, `Sigmoid`, `LayerNorm`).
    pub kind: &'static str,
    /// Microseconds its forward took (0 in wasm32, which has no clock here).
    pub took_us: u64,
    /// Microseconds its backward took (0 in wasm32).
    pub backward_us: u64,
    /// Its output on the step's minibatch, `[BATCH, width]` (key `act.<name>`).
    pub activation: TypedTensor,
    /// Its parameters in PyTorch's order (weight, bias); empty for activations.
    pub params: Vec<ParamRecord>,
}

/// Everything a recorder needs of one training step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The step number, from 0.
    pub step: u64,
    /// The minibatch's mean cross-entropy before the update; may be NaN or infinite.
    pub loss: f64,
    /// Every node, in declaration order.
    pub nodes: Vec<NodeRecord>,
}

impl StepRecord {
    /// The weight of the first Linear after node `index`: the layer that reads its units
    /// (what the per-node health metrics need to find ignored units).
    pub fn next_weight(&self, index: usize) -> Option<&TypedTensor> {
        self.nodes
            .iter()
            .skip(index.checked_add(1)?)
            .find(|n| n.kind == "Linear")
            .and_then(|n| n.params.first())
            .map(|p| &p.value)
    }
}

/// How a run went, in a few numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The condition's name.
    pub condition: &'static str,
    /// Steps trained.
    pub steps: u64,
    /// Steps handed to the callback.
    pub recorded: u64,
    /// The loss of the first step (NaN when no step ran).
    pub first_loss: f64,
    /// The loss of the last step (NaN when no step ran).
    pub last_loss: f64,
    /// The first step whose loss was NaN or infinite, if any.
    pub first_nonfinite: Option<u64>,
    /// Microseconds the whole run took, recording callbacks included (0 in wasm32).
    pub took_us: u64,
}

/// Train `condition` for `steps` minibatch SGD steps, handing the record of step 0, every
/// `every`-th step after it, and the last step to `on_step` (an `every` of 0 counts as 1).
/// Deterministic: the same condition and steps give the same records, bit for bit.
pub fn train(
    condition: &Condition,
    steps: u64,
    every: u64,
    on_step: &mut dyn FnMut(&StepRecord),
) -> Summary {
    #[cfg(not(target_arch = "wasm32"))]
    let start = std::time::Instant::now();
    let data = task::spiral();
    let mut net = Net::new(condition.layers, FEATURES, condition.seed);
    let mut rng = Rng::new(condition.seed ^ BATCH_SALT);
    let every = every.max(1);
    let mut summary = Summary {
        condition: condition.name,
        steps,
        recorded: 0,
        first_loss: f64::NAN,
        last_loss: f64::NAN,
        first_nonfinite: None,
        took_us: 0,
    };
    for step in 0..steps {
        let recording = step % every == 0 || step + 1 == steps;
        let done = one_step(&mut net, &data, &mut rng, condition, recording);
        if step == 0 {
            summary.first_loss = done.loss;
        }
        summary.last_loss = done.loss;
        if !done.loss.is_finite() && summary.first_nonfinite.is_none() {
            summary.first_nonfinite = Some(step);
        }
        if done.before.is_some() {
            on_step(&record(step, &net, done));
            summary.recorded += 1;
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        summary.took_us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
    }
    summary
}

/// What one step leaves behind for its record.
struct Done {
    loss: f64,
    /// Rows in the minibatch.
    rows: usize,
    trace: Trace,
    grads: Grads,
    /// Every node's parameters before the update; kept only when the step is recorded.
    before: Option<Vec<Vec<Vec<f32>>>>,
}

/// Forward, loss, backward and SGD on one minibatch.
fn one_step(
    net: &mut Net,
    data: &Dataset,
    rng: &mut Rng,
    condition: &Condition,
    recording: bool,
) -> Done {
    let (x, y) = task::batch(data, BATCH, rng);
    let trace = net.forward(x);
    let logits = trace.outputs.last().unwrap_or(&trace.input);
    let (loss, d_logits) = cross_entropy(logits, &y, CLASSES);
    let grads = net.backward(&trace, d_logits);
    let before = recording.then(|| net.nodes.iter().map(|n| n.params.clone()).collect());
    net.sgd(&grads, condition.lr, condition.weight_decay);
    Done {
        loss,
        rows: y.len(),
        trace,
        grads,
        before,
    }
}

/// A tensor with a key and a stage. The shapes are the network's own, so they always hold
/// their values; a mismatch is a bug in this module.
fn tensor(key: String, values: Vec<f32>, shape: Vec<usize>, stage: &str) -> TypedTensor {
    let len = values.len();
    let mut t = TypedTensor::from_f32(&key, values, shape.clone())
        .unwrap_or_else(|| panic!("{key}: shape {shape:?} does not hold {len} values"));
    t.stage = Some(stage.into());
    t
}

/// A node's parameter records, from its values before the step and their gradients (the
/// values after the step are the node's own).
fn param_records(node: &Node, before: Vec<Vec<f32>>, grads: Vec<Vec<f32>>) -> Vec<ParamRecord> {
    let pairs = before.into_iter().zip(grads).enumerate();
    pairs
        .map(|(p, (value, grad))| {
            let name = format!("{}.{}", node.name, PARAM_NAMES[p]);
            let shape = node.param_shape(p);
            let after = node.params[p].clone();
            ParamRecord {
                value: tensor(format!("param.{name}"), value, shape.clone(), "forward"),
                grad: tensor(format!("grad.{name}"), grad, shape.clone(), "backward"),
                updated: tensor(format!("param.{name}"), after, shape, "after_step"),
                name,
            }
        })
        .collect()
}

/// The record of a step, from the network after it and what the step left behind.
fn record(step: u64, net: &Net, done: Done) -> StepRecord {
    let before = done.before.unwrap_or_default();
    let parts = before
        .into_iter()
        .zip(done.trace.outputs)
        .zip(done.grads.params);
    let nodes = net
        .nodes
        .iter()
        .zip(parts)
        .enumerate()
        .map(|(i, (node, ((values, output), grads)))| NodeRecord {
            name: node.name.clone(),
            kind: node.spec.kind(),
            took_us: done.trace.forward_us[i],
            backward_us: done.grads.backward_us[i],
            activation: tensor(
                format!("act.{}", node.name),
                output,
                vec![done.rows, node.width()],
                "forward",
            ),
            params: param_records(node, values, grads),
        })
        .collect();
    StepRecord {
        step,
        loss: done.loss,
        nodes,
    }
}

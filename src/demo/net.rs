//! A sequential network of named layers: forward, backward and plain SGD, each node timed.

use super::layer::{self, LayerSpec};
use super::rng::Rng;

/// The names PyTorch gives a module's parameters, in the order they are kept.
pub const PARAM_NAMES: [&str; 2] = ["weight", "bias"];

/// One declared layer with its name, its input width and its parameters.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub spec: LayerSpec,
    pub input: usize,
    pub params: Vec<Vec<f32>>,
}

impl Node {
    /// The output width.
    pub fn width(&self) -> usize {
        self.spec.width(self.input)
    }

    /// The shape of parameter `i`: `[out, in]` for a Linear weight, `[width]` otherwise.
    pub fn param_shape(&self, i: usize) -> Vec<usize> {
        match (self.spec, i) {
            (LayerSpec::Linear { out, .. }, 0) => vec![out, self.input],
            _ => vec![self.width()],
        }
    }
}

/// A network in declaration order, like a PyTorch `nn.Sequential`.
#[derive(Debug, Clone)]
pub struct Net {
    pub nodes: Vec<Node>,
}

/// What a forward pass leaves for the backward pass: every node's output, and its time.
#[derive(Debug, Clone)]
pub struct Trace {
    pub input: Vec<f32>,
    pub outputs: Vec<Vec<f32>>,
    pub forward_us: Vec<u64>,
}

/// What a backward pass gives: every node's parameter gradients, and its time.
#[derive(Debug, Clone)]
pub struct Grads {
    pub params: Vec<Vec<Vec<f32>>>,
    pub backward_us: Vec<u64>,
}

/// A stopwatch in microseconds natively; always 0 in wasm32, where `Instant` panics.
struct Watch {
    #[cfg(not(target_arch = "wasm32"))]
    start: std::time::Instant,
}

impl Watch {
    fn start() -> Self {
        Watch {
            #[cfg(not(target_arch = "wasm32"))]
            start: std::time::Instant::now(),
        }
    }

    fn us(&self) -> u64 {
        #[cfg(not(target_arch = "wasm32"))]
        {
            u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
        }
        #[cfg(target_arch = "wasm32")]
        {
            0
        }
    }
}

/// Node names as in a readable PyTorch model: `fc1`, `relu1`, `fc2`, …, where an
/// activation or norm takes the number of the Linear before it.
fn name_of(spec: &LayerSpec, linears: usize) -> String {
    match spec {
        LayerSpec::Linear { .. } => format!("fc{linears}"),
        LayerSpec::ReLU => format!("relu{linears}"),
        LayerSpec::Tanh => format!("tanh{linears}"),
        LayerSpec::Sigmoid => format!("sigmoid{linears}"),
        LayerSpec::LayerNorm { .. } => format!("norm{linears}"),
    }
}

impl Net {
    /// The network `specs` over inputs of width `input`, its parameters drawn from `seed`.
    pub fn new(specs: &[LayerSpec], input: usize, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut width = input;
        let mut linears = 0;
        let mut nodes = Vec::with_capacity(specs.len());
        for spec in specs {
            if matches!(spec, LayerSpec::Linear { .. }) {
                linears += 1;
            }
            nodes.push(Node {
                name: name_of(spec, linears),
                spec: *spec,
                input: width,
                params: spec.init(width, &mut rng),
            });
            width = spec.width(width);
        }
        Net { nodes }
    }

    /// The width of the last node's output (the input width for an empty network).
    pub fn output_width(&self, input: usize) -> usize {
        self.nodes.last().map_or(input, Node::width)
    }

    /// Every node's output on `x` (`[batch, input]`), in order, with its time.
    pub fn forward(&self, x: Vec<f32>) -> Trace {
        let mut outputs: Vec<Vec<f32>> = Vec::with_capacity(self.nodes.len());
        let mut forward_us = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let watch = Watch::start();
            let from = outputs.last().unwrap_or(&x);
            let y = layer::forward(&node.spec, &node.params, from, node.input);
            forward_us.push(watch.us());
            outputs.push(y);
        }
        Trace {
            input: x,
            outputs,
            forward_us,
        }
    }

    /// Every node's parameter gradients, given the loss gradient at the last output.
    pub fn backward(&self, trace: &Trace, d_out: Vec<f32>) -> Grads {
        let n = self.nodes.len();
        let mut params = vec![Vec::new(); n];
        let mut backward_us = vec![0; n];
        let mut dy = d_out;
        for i in (0..n).rev() {
            let node = &self.nodes[i];
            let watch = Watch::start();
            let x = if i == 0 {
                &trace.input
            } else {
                &trace.outputs[i - 1]
            };
            let (dx, dp) = layer::backward(
                &node.spec,
                &node.params,
                x,
                &trace.outputs[i],
                &dy,
                node.input,
            );
            backward_us[i] = watch.us();
            params[i] = dp;
            dy = dx;
        }
        Grads {
            params,
            backward_us,
        }
    }

    /// One plain SGD step as PyTorch's `SGD(lr, weight_decay)` takes it: every parameter
    /// moves by `-lr` times (its gradient plus `weight_decay` times itself).
    pub fn sgd(&mut self, grads: &Grads, lr: f32, weight_decay: f32) {
        for (node, g) in self.nodes.iter_mut().zip(&grads.params) {
            for (p, g) in node.params.iter_mut().zip(g) {
                for (w, &d) in p.iter_mut().zip(g) {
                    *w -= lr * (d + weight_decay * *w);
                }
            }
        }
    }
}

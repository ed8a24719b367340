//! Where tensors come from: the `TensorSource` trait, key naming, selectors and `HookSource`.
//!
//! Keys follow the per-step dump convention: `param.<name>`, `grad.<name>`, `act.<node>`, and
//! bare `loss`. A key splits at its first dot into a *kind* (a spec's `source`) and a *name*
//! (what a spec's `selector` matches); a key without a dot is its own kind and name, so
//! `loss` is kind `loss`, name `loss`. A file or checkpoint source only has to list its keys
//! and read one by key.

pub use crate::observe::ops::blocks::F32Stream;
use crate::tensor::TypedTensor;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Why a source could not hand out a tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceError {
    /// No tensor has this key; the source does not have it at this step.
    NotFound { key: String },
    /// The tensor exists but could not be read (a reader's error message, naming the file).
    Read { key: String, message: String },
    /// Values and shape handed to a hook source do not agree.
    BadTensor {
        key: String,
        len: usize,
        shape: Vec<usize>,
    },
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::NotFound { key } => write!(f, "no tensor {key:?} in the source"),
            SourceError::Read { key, message } => write!(f, "reading {key:?}: {message}"),
            SourceError::BadTensor { key, len, shape } => {
                write!(
                    f,
                    "tensor {key:?}: {len} values do not fill shape {shape:?}"
                )
            }
        }
    }
}

impl std::error::Error for SourceError {}

/// Anything tensors can be read from by key: live hooks, an NPZ dump, a checkpoint.
pub trait TensorSource {
    /// Every key the source holds, e.g. `param.fc1.weight`, `loss`.
    fn list(&self) -> Result<Vec<String>, SourceError>;
    /// One tensor by key (borrowed when the source holds it in memory).
    fn read(&self, key: &str) -> Result<Cow<'_, TypedTensor>, SourceError>;
    /// One float32 tensor by key as a stream of blocks, when the source holds it where the
    /// engine cannot read it in place (e.g. in JS memory), so that it need not be copied whole;
    /// `None` to [`Self::read`] it whole instead.
    fn stream_f32(&self, _key: &str) -> Option<&dyn F32Stream> {
        None
    }
    /// Helpers on other threads that can take blocks of a streamed tensor (see
    /// [`crate::observe::ops::blocks`]), when the source has them; `None` to take every block here.
    fn helpers(&self) -> Option<&dyn crate::observe::ops::blocks::BlockHelpers> {
        None
    }
}

/// Split a key into its kind and name (`param.fc1.weight` → `param`, `fc1.weight`;
/// `loss` → `loss`, `loss`).
pub fn split_key(key: &str) -> (&str, &str) {
    key.split_once('.').unwrap_or((key, key))
}

/// A spec's `selector`: every name, a glob (`*` any run, `?` one char), or one exact name.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    All,
    Glob(String),
    Exact(String),
}

impl Selector {
    /// `all`, a text with `*` or `?`, or an exact name.
    pub fn parse(text: &str) -> Selector {
        match text.trim() {
            "all" => Selector::All,
            t if t.contains(['*', '?']) => Selector::Glob(t.to_string()),
            t => Selector::Exact(t.to_string()),
        }
    }

    /// Whether a name is selected.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Selector::All => true,
            Selector::Glob(g) => glob_match(g.as_bytes(), name.as_bytes()),
            Selector::Exact(e) => e == name,
        }
    }
}

/// Glob matching with `*` and `?`, iterative with one backtrack point (linear-ish time).
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The keys of one kind whose names a selector picks, in the source's order.
pub fn select<'k>(keys: &'k [String], kind: &str, selector: &Selector) -> Vec<&'k str> {
    keys.iter()
        .map(String::as_str)
        .filter(|k| {
            let (k_kind, name) = split_key(k);
            k_kind == kind && selector.matches(name)
        })
        .collect()
}

/// Keys indexed by kind and by (kind, name), so that resolving many selectors over many
/// keys does not scan every key for each one.
#[derive(Debug, Clone, Default)]
pub struct KeyIndex<'k> {
    by_kind: HashMap<&'k str, Vec<&'k str>>,
    exact: HashMap<(&'k str, &'k str), &'k str>,
}

impl<'k> KeyIndex<'k> {
    /// Index keys (their order within a kind is kept).
    pub fn new(keys: &'k [String]) -> Self {
        let mut index = KeyIndex::default();
        for key in keys {
            let (kind, name) = split_key(key);
            index.by_kind.entry(kind).or_default().push(key);
            index.exact.entry((kind, name)).or_insert(key);
        }
        index
    }

    /// The keys of one kind whose names a selector picks, in the source's order.
    pub fn select(&self, kind: &str, selector: &Selector) -> Vec<&'k str> {
        match selector {
            Selector::Exact(name) => self
                .exact
                .get(&(kind, name.as_str()))
                .copied()
                .into_iter()
                .collect(),
            _ => self
                .by_kind
                .get(kind)
                .map(|keys| {
                    keys.iter()
                        .copied()
                        .filter(|k| selector.matches(split_key(k).1))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// Tensors handed in live (by a training hook or a caller), held until replaced or cleared.
#[derive(Debug, Clone, Default)]
pub struct HookSource {
    tensors: BTreeMap<String, TypedTensor>,
}

impl HookSource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Hold a tensor under a key, replacing any before.
    pub fn put(&mut self, key: &str, tensor: TypedTensor) {
        self.tensors.insert(key.to_string(), tensor);
    }

    /// Hold f32 values of a shape under a key.
    pub fn put_f32(
        &mut self,
        key: &str,
        values: Vec<f32>,
        shape: Vec<usize>,
    ) -> Result<(), SourceError> {
        let len = values.len();
        let t =
            TypedTensor::from_f32(key, values, shape.clone()).ok_or(SourceError::BadTensor {
                key: key.to_string(),
                len,
                shape,
            })?;
        self.put(key, t);
        Ok(())
    }

    /// Hold the loss (a 0-d tensor under `loss`).
    pub fn put_loss(&mut self, loss: f64) {
        let provenance = crate::tensor::Provenance {
            file: "<live>".into(),
            key: "loss".into(),
            dtype: "float64".into(),
        };
        if let Some(t) = TypedTensor::new(
            crate::tensor::TensorData::F64(vec![loss]),
            vec![],
            provenance,
        ) {
            self.put("loss", t);
        }
    }

    /// Drop every tensor (e.g. after a step).
    pub fn clear(&mut self) {
        self.tensors.clear();
    }
}

impl TensorSource for HookSource {
    fn list(&self) -> Result<Vec<String>, SourceError> {
        Ok(self.tensors.keys().cloned().collect())
    }

    fn read(&self, key: &str) -> Result<Cow<'_, TypedTensor>, SourceError> {
        self.tensors
            .get(key)
            .map(Cow::Borrowed)
            .ok_or_else(|| SourceError::NotFound {
                key: key.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_pick_names() {
        for (selector, name, want) in [
            ("all", "fc1.weight", true),
            ("fc*.weight", "fc1.weight", true),
            ("fc*.weight", "fc1.bias", false),
            ("*.bias", "0.bias", true),
            ("fc?.weight", "fc12.weight", false),
            ("fc1.weight", "fc1.weight", true),
            ("fc1.weight", "fc1.weights", false),
            ("*", "", true),
        ] {
            assert_eq!(
                Selector::parse(selector).matches(name),
                want,
                "selector {selector:?} on {name:?}"
            );
        }
    }

    #[test]
    fn keys_split_into_kind_and_name() {
        assert_eq!(split_key("param.fc1.weight"), ("param", "fc1.weight"));
        assert_eq!(split_key("loss"), ("loss", "loss"));
        let keys: Vec<String> = ["param.a", "grad.a", "param.b", "loss"]
            .map(String::from)
            .into();
        assert_eq!(
            select(&keys, "param", &Selector::All),
            vec!["param.a", "param.b"]
        );
        assert_eq!(
            select(&keys, "loss", &Selector::parse("loss")),
            vec!["loss"]
        );
    }
}

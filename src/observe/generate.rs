//! `generate`: one observable per tensor and reduction over the keys a source holds.

use crate::observe::registry::{self, RegistryError};
use crate::observe::runtime::{Observable, Pack};
use crate::observe::source::{split_key, Selector, SourceError, TensorSource};
use crate::observe::spec::ObservableSpec;
use std::fmt;

/// The kinds `generate` covers by default: parameters only, as the seed's 0.1.0 does (it
/// discovers no activations, gradients or loss; ask for them with [`ALL_KINDS`]).
pub const DEFAULT_KINDS: &[&str] = &["param"];

/// Every kind `generate` can cover: parameters, gradients, activations and the loss.
pub const ALL_KINDS: &[&str] = &["param", "grad", "act", "loss"];

/// Which keys `generate` covers.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Key kinds to cover (see [`DEFAULT_KINDS`]).
    pub kinds: Vec<String>,
    /// Which names within those kinds: `all`, a glob such as `fc*.weight`, or an exact name.
    pub selector: String,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            kinds: DEFAULT_KINDS.iter().map(|k| k.to_string()).collect(),
            selector: "all".into(),
        }
    }
}

/// Why observables could not be generated.
#[derive(Debug, Clone, PartialEq)]
pub enum GenerateError {
    /// A transform or reduction name is unknown or badly argued; names it.
    Registry(RegistryError),
    /// The source could not list its keys.
    Source(SourceError),
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenerateError::Registry(e) => write!(f, "{e}"),
            GenerateError::Source(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for GenerateError {}

/// Specs for every selected key × reduction, transforms shared, names validated up front.
pub fn generate_specs<S: AsRef<str>>(
    keys: &[String],
    reductions: &[S],
    transforms: &[S],
    options: &GenerateOptions,
) -> Result<Vec<ObservableSpec>, GenerateError> {
    let transforms: Vec<String> = transforms.iter().map(|t| t.as_ref().to_string()).collect();
    for r in reductions {
        let mut probe = ObservableSpec::new("param", "probe", r.as_ref());
        probe.transforms = transforms.clone();
        registry::plan(&probe).map_err(GenerateError::Registry)?;
    }
    let selector = Selector::parse(&options.selector);
    let mut specs = Vec::new();
    for key in keys {
        let (kind, name) = split_key(key);
        if !options.kinds.iter().any(|k| k == kind) || !selector.matches(name) {
            continue;
        }
        for r in reductions {
            let mut spec = ObservableSpec::new(kind, name, r.as_ref());
            spec.transforms = transforms.clone();
            specs.push(spec);
        }
    }
    Ok(specs)
}

/// One observable per parameter, gradient, activation and loss of a source × reduction.
pub fn generate<S: AsRef<str>>(
    source: &dyn TensorSource,
    reductions: &[S],
    transforms: &[S],
) -> Result<Pack, GenerateError> {
    generate_with(source, reductions, transforms, &GenerateOptions::default())
}

/// [`generate`] over the kinds and names the options select.
pub fn generate_with<S: AsRef<str>>(
    source: &dyn TensorSource,
    reductions: &[S],
    transforms: &[S],
    options: &GenerateOptions,
) -> Result<Pack, GenerateError> {
    let keys = source.list().map_err(GenerateError::Source)?;
    generate_specs(&keys, reductions, transforms, options)?
        .into_iter()
        .map(|s| Observable::builtin(s).map_err(GenerateError::Registry))
        .collect()
}

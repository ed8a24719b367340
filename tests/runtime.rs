//! The runtime: packs, duplicate ids, frequency, budget, one read per key, multi-key
//! selectors, errors naming id/key/shape, sinks and the temporal option; and generate.

use somatize::observe::runtime::{RuntimeError, SkipReason};
use somatize::observe::source::SourceError;
use somatize::observe::spec::{BudgetHint, Temporal};
use somatize::tensor::TypedTensor;
use somatize::{
    generate, generate_specs, Budget, GenerateOptions, HookSource, MemorySink, Observable,
    ObservableSpec, OfflineAnalyzer, Pack, Runtime, TensorSource, Value, ValueSink,
};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A hook source that counts how often each key is read.
struct Counting {
    inner: HookSource,
    reads: RefCell<BTreeMap<String, usize>>,
}

impl TensorSource for Counting {
    fn list(&self) -> Result<Vec<String>, SourceError> {
        self.inner.list()
    }
    fn read(&self, key: &str) -> Result<Cow<'_, TypedTensor>, SourceError> {
        *self.reads.borrow_mut().entry(key.to_string()).or_default() += 1;
        self.inner.read(key)
    }
}

/// A small model: two weights, their gradients, an activation and the loss.
fn model() -> Counting {
    let mut s = HookSource::new();
    s.put_f32(
        "param.fc1.weight",
        vec![3.0, -4.0, 0.0, 12.0, 1.0, -1.0],
        vec![2, 3],
    )
    .unwrap();
    s.put_f32("param.fc1.bias", vec![1.0, 2.0], vec![2])
        .unwrap();
    s.put_f32(
        "grad.fc1.weight",
        vec![0.5, 0.5, 0.5, 0.5, 0.0, 0.0],
        vec![2, 3],
    )
    .unwrap();
    s.put_f32("grad.fc1.bias", vec![1.0, 1.0], vec![2]).unwrap();
    s.put_f32("act.relu1", vec![0.0, 1.0, 2.0, 0.0], vec![2, 2])
        .unwrap();
    s.put_loss(0.75);
    Counting {
        inner: s,
        reads: RefCell::default(),
    }
}

fn spec(source: &str, selector: &str, reduction: &str) -> ObservableSpec {
    ObservableSpec::new(source, selector, reduction)
}

fn pack(specs: Vec<ObservableSpec>) -> Pack {
    specs
        .into_iter()
        .map(|s| Observable::builtin(s).unwrap())
        .collect()
}

fn scalar(obs: &somatize::Observation, s: &ObservableSpec) -> f64 {
    let id = s.id().unwrap();
    obs.values
        .get(&id)
        .and_then(Value::as_scalar)
        .unwrap_or_else(|| panic!("no value for {s:?} in {obs:?}"))
}

#[test]
fn each_key_is_read_once_and_values_are_right() {
    let specs = vec![
        spec("param", "fc1.weight", "l2"),
        spec("param", "fc1.weight", "max"),
        spec("param", "fc1.weight", "quantiles(0.5)"),
        spec("param", "fc1.weight", "stable_rank"),
        spec("grad", "all", "l2"),
        spec("param", "fc*", "count"),
        spec("loss", "loss", "mean"),
    ];
    let source = model();
    let rt = Runtime::new(pack(specs.clone())).unwrap();
    let obs = rt.observe(0, &source).ok().unwrap();
    assert!(
        (scalar(&obs, &specs[0]) - 171f64.sqrt()).abs() < 1e-12,
        "sqrt(9+16+144+1+1)"
    );
    assert_eq!(scalar(&obs, &specs[1]), 12.0);
    // Global gradient norm over both gradient tensors: sqrt(4 * 0.25 + 2) = sqrt(3).
    assert!((scalar(&obs, &specs[4]) - 3f64.sqrt()).abs() < 1e-12);
    assert_eq!(scalar(&obs, &specs[5]), 8.0, "fc* spans weight and bias");
    assert_eq!(scalar(&obs, &specs[6]), 0.75);
    let median = obs.values[&specs[2].id().unwrap()]
        .as_vector()
        .unwrap()
        .to_vec();
    assert_eq!(median, vec![Some(0.5)], "np.median([3, -4, 0, 12, 1, -1])");
    // numpy: s = svd([[3, -4, 0], [12, 1, -1]]); (s**2).sum() / s[0]**2
    assert!((scalar(&obs, &specs[3]) - 1.1108109905624617).abs() < 1e-12);
    let reads = source.reads.borrow();
    assert!(reads.values().all(|&n| n == 1), "reads {reads:?}");
    assert!(
        !reads.contains_key("act.relu1"),
        "unselected keys are not read: {reads:?}"
    );
}

#[test]
fn duplicate_ids_are_refused_naming_both() {
    let a = spec("param", "fc1.weight", "l2");
    let b = spec("param", " fc1.weight", "L2");
    let err = Runtime::new(pack(vec![a.clone(), b])).unwrap_err();
    match &err {
        RuntimeError::DuplicateId { id, first, second } => {
            assert_eq!(id, &a.id().unwrap());
            assert!(
                first.contains("fc1.weight") && second.contains("fc1.weight"),
                "{err}"
            );
        }
        other => panic!("wanted DuplicateId, got {other:?}"),
    }
}

#[test]
fn frequency_and_budget_decide_what_runs() {
    let mut every10 = spec("param", "fc1.weight", "l1");
    every10.frequency = 10;
    let mut costly = spec("param", "fc1.weight", "l2");
    costly.budget_hint = Some(BudgetHint { compute_ms: 8.0 });
    let mut cheap = spec("param", "fc1.weight", "max");
    cheap.budget_hint = Some(BudgetHint { compute_ms: 3.0 });
    let mut also_costly = spec("param", "fc1.weight", "min");
    also_costly.budget_hint = Some(BudgetHint { compute_ms: 5.0 });
    let specs = vec![
        every10.clone(),
        costly.clone(),
        cheap.clone(),
        also_costly.clone(),
    ];
    let rt = Runtime::new(pack(specs)).unwrap().with_budget(Budget {
        max_compute_ms: 11.5,
    });
    let source = model();
    let at3 = rt.observe(3, &source);
    let at20 = rt.observe(20, &source);
    let ids = |o: &somatize::Observation| o.values.keys().cloned().collect::<Vec<_>>();
    let mut want3 = vec![costly.id().unwrap(), cheap.id().unwrap()];
    want3.sort();
    assert_eq!(
        ids(&at3),
        want3,
        "step 3: l1 is not due, min does not fit (8 + 3 + 5 > 11.5)"
    );
    assert_eq!(
        at20.values.len(),
        3,
        "step 20: l1 is due (0 ms), min still does not fit"
    );
    assert_eq!(
        at3.skipped[0].reason,
        SkipReason::Budget {
            cost_ms: 5.0,
            left_ms: 0.5
        },
        "{:?}",
        at3.skipped
    );
}

#[test]
fn shape_errors_name_the_spec_id_the_key_and_the_shape() {
    let bad = spec("param", "fc1.bias", "stable_rank");
    let good = spec("param", "fc1.bias", "l1");
    let rt = Runtime::new(pack(vec![bad.clone(), good.clone()])).unwrap();
    let obs = rt.observe(0, &model());
    assert_eq!(scalar(&obs, &good), 3.0, "the other observable still runs");
    let message = obs.failed[0].to_string();
    for part in [
        bad.id().unwrap().as_str(),
        "param.fc1.bias",
        "[2]",
        "stable_rank",
    ] {
        assert!(message.contains(part), "{message:?} lacks {part}");
    }
    assert!(obs.ok().is_err());
}

#[test]
fn missing_tensors_are_skipped_and_customs_run() {
    let missing = spec("grad", "fc9.weight", "l2");
    let custom_spec = spec("act", "relu1", "dead_units");
    let custom = Observable::custom(
        custom_spec.clone(),
        Arc::new(|t: &TypedTensor| {
            let zeros = t.data.to_f64().iter().filter(|&&x| x == 0.0).count();
            Ok(Value::Scalar(Some(zeros as f64)))
        }),
    )
    .unwrap();
    let mut p = pack(vec![missing.clone()]);
    p.push(custom);
    let obs = Runtime::new(p).unwrap().observe(0, &model());
    assert_eq!(scalar(&obs, &custom_spec), 2.0);
    assert!(
        matches!(obs.skipped[0].reason, SkipReason::NoTensor { .. }),
        "{:?}",
        obs.skipped
    );
}

#[test]
fn sink_reads_back_and_temporal_runs_over_stored_history() {
    let mut loss = spec("loss", "loss", "mean");
    loss.temporal = Some(Temporal::Delta);
    let rt = Runtime::new(pack(vec![loss.clone()]))
        .unwrap()
        .with_temporal(true);
    let analyzer = OfflineAnalyzer::new(rt);
    let mut sink = MemorySink::new();
    let mut last = None;
    for (step, value) in [(0u64, 2.0), (1, 1.5), (2, 1.25)] {
        let mut s = HookSource::new();
        s.put_loss(value);
        last = Some(analyzer.analyze_into(step, &s, &mut sink).unwrap());
    }
    let id = loss.id().unwrap();
    assert_eq!(sink.query(&id, 1).unwrap(), Some(Value::Scalar(Some(1.5))));
    assert_eq!(last.unwrap().temporal.get(&id), Some(&Some(-0.25)));
}

#[test]
fn generate_covers_params_grads_acts_and_loss() {
    // The keys of ../shared/runs/example_cnn/step_000000.npz (a real PyTorch dump).
    let keys: Vec<String> = [
        "param.0.weight",
        "param.0.bias",
        "param.8.weight",
        "grad.0.weight",
        "grad.8.weight",
        "act.0",
        "act.7",
        "loss",
        "other.thing",
    ]
    .map(String::from)
    .into();
    let params = generate_specs(&keys, &["l2"], &[], &GenerateOptions::default()).unwrap();
    assert!(
        params.iter().all(|s| s.source == "param"),
        "parameters only by default, as the seed's 0.1.0"
    );
    let every = GenerateOptions {
        kinds: somatize::observe::generate::ALL_KINDS
            .iter()
            .map(|k| k.to_string())
            .collect(),
        ..GenerateOptions::default()
    };
    let specs = generate_specs(&keys, &["l2", "mean"], &[], &every).unwrap();
    assert_eq!(specs.len(), 8 * 2, "every key but other.thing, twice");
    assert_eq!(
        (specs[0].source.as_str(), specs[0].selector.as_str()),
        ("param", "0.weight")
    );
    let only = GenerateOptions {
        kinds: vec!["param".into()],
        selector: "*.weight".into(),
    };
    let specs = generate_specs(&keys, &["l2"], &["abs"], &only).unwrap();
    let selectors: Vec<&str> = specs.iter().map(|s| s.selector.as_str()).collect();
    assert_eq!(selectors, vec!["0.weight", "8.weight"]);
    assert_eq!(specs[0].transforms, vec!["abs".to_string()]);
    let err = generate_specs(&keys, &["l2", "l3"], &[], &only).unwrap_err();
    assert!(err.to_string().contains("\"l3\""), "{err}");
    let err = generate_specs(&keys, &["l2"], &["sqrt"], &only).unwrap_err();
    assert!(err.to_string().contains("\"sqrt\""), "{err}");
}

#[test]
fn generated_pack_observes_a_source() {
    let source = model();
    let every = GenerateOptions {
        kinds: somatize::observe::generate::ALL_KINDS
            .iter()
            .map(|k| k.to_string())
            .collect(),
        ..GenerateOptions::default()
    };
    let params = generate(&source, &["l2"], &[]).unwrap();
    assert!(
        params.iter().all(|o| o.spec().source == "param"),
        "parameters only by default"
    );
    let pack = somatize::generate_with(&source, &["l2", "zero_fraction"], &[], &every).unwrap();
    assert_eq!(pack.len(), 6 * 2);
    let obs = Runtime::new(pack)
        .unwrap()
        .observe(0, &source)
        .ok()
        .unwrap();
    assert_eq!(obs.values.len(), 12);
}

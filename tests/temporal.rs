//! Temporal functions against numpy on one history.
//!
//! References from numpy 2.4 (python3), on the history `H` below:
//! delta = `np.diff(H)`; ema = the loop `y[i] = (1 - 0.3) * y[i-1] + 0.3 * H[i]`, `y[0] = H[0]`
//! (pandas `ewm(alpha=0.3, adjust=False).mean()`); slope = `np.polyfit(arange(4), window, 1)[0]`
//! over each window of 4; rolling_std = `np.std(window, ddof=1)` (pandas `rolling(4).std()`).

use somatize::observe::spec::Temporal;
use somatize::observe::temporal::{delta, ema, rolling_std, slope};

const H: [f64; 12] = [2.5, 2.1, 2.3, 1.7, 1.9, 1.2, 1.25, 0.9, 1.1, 0.6, 0.75, 0.4];

fn assert_series(what: &str, got: &[f64], nan_head: usize, want: &[f64]) {
    assert_eq!(got.len(), nan_head + want.len(), "{what}: got {got:?}");
    assert!(
        got[..nan_head].iter().all(|v| v.is_nan()),
        "{what}: head {got:?}"
    );
    for (g, w) in got[nan_head..].iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-9,
            "{what}: got {got:?}, wanted {want:?}"
        );
    }
}

#[test]
fn delta_matches_np_diff() {
    let want = [
        -0.3999999999999999,
        0.19999999999999973,
        -0.5999999999999999,
        0.19999999999999996,
        -0.7,
        0.050000000000000044,
        -0.35,
        0.20000000000000007,
        -0.5000000000000001,
        0.15000000000000002,
        -0.35,
    ];
    assert_series("delta", &delta(&H), 1, &want);
}

#[test]
fn ema_matches_the_adjust_false_recursion() {
    let want = [
        2.5,
        2.38,
        2.356,
        2.1592,
        2.0814399999999997,
        1.8170079999999995,
        1.6469055999999995,
        1.4228339199999995,
        1.3259837439999995,
        1.1081886207999996,
        1.0007320345599995,
        0.8205124241919995,
    ];
    assert_series("ema", &ema(&H, 0.3), 0, &want);
}

#[test]
fn slope_matches_polyfit() {
    let want = [
        -0.22000000000000036,
        -0.12000000000000043,
        -0.3100000000000005,
        -0.20500000000000032,
        -0.2950000000000003,
        -0.0650000000000001,
        -0.17500000000000027,
        -0.09500000000000008,
        -0.19500000000000017,
    ];
    assert_series("slope", &slope(&H, 4), 3, &want);
}

#[test]
fn rolling_std_matches_sample_std() {
    let want = [
        0.3415650255319866,
        0.2581988897471611,
        0.45734742446707477,
        0.34247870980057527,
        0.4210601698886593,
        0.15478479684172256,
        0.2809952550014561,
        0.21360009363293833,
        0.295451631687264,
    ];
    assert_series("rolling_std", &rolling_std(&H, 4), 3, &want);
}

#[test]
fn last_is_the_end_of_the_series() {
    for t in [
        Temporal::Delta,
        Temporal::Ema { alpha: 0.3 },
        Temporal::Slope { window: 4 },
        Temporal::RollingStd { window: 4 },
    ] {
        let series = t.series(&H);
        let last = t.last(&H).unwrap();
        assert!(
            (last - series[11]).abs() < 1e-12,
            "{t:?}: {last} vs {}",
            series[11]
        );
    }
    assert_eq!(
        Temporal::Slope { window: 4 }.last(&H[..3]),
        None,
        "too short"
    );
    assert_eq!(Temporal::Delta.last(&[]), None);
    let with_nan = [1.0, f64::NAN, 3.0];
    assert_eq!(
        ema(&with_nan, 0.5),
        vec![1.0, 1.0, 2.0],
        "NaN carries the average"
    );
    assert!(
        rolling_std(&with_nan, 2).iter().all(|v| v.is_nan()),
        "NaN in a window"
    );
}

//! A tiny seeded PRNG (SplitMix64) with uniform and normal draws, so every demo run is reproducible.

/// SplitMix64 (Steele, Lea and Flood 2014): 64 bits of state, one add and three mixes a draw.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator started at `seed`; the same seed gives the same sequence everywhere.
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// A standard normal draw (Box–Muller; one of the pair is discarded to keep no state).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // in (0, 1], so the log is finite
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// An index in [0, n); `n` must be positive (0 is treated as 1).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.uniform() * n.max(1) as f64) as usize).min(n.max(1) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs of the reference splitmix64.c seeded with 1234567.
        let mut r = Rng::new(1234567);
        let got: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let want = [
            6457827717110365317,
            3203168211198807973,
            9817491932198370423,
        ];
        assert_eq!(got, want, "got {got:?}, wanted {want:?}");
    }

    #[test]
    fn normal_draws_have_unit_moments() {
        let mut r = Rng::new(7);
        let n = 20000;
        let v: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "variance {var}");
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(3);
        assert!((0..1000).all(|_| r.below(5) < 5));
        assert_eq!(r.below(0), 0);
    }
}

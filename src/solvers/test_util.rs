//! Shared by the solvers' unit tests.

/// A deterministic uniform(−1, 1) stream (Knuth's MMIX linear congruential generator).
pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

//! xorshift64: a tiny seeded generator whose sequence never changes, for tests that must
//! make the same random choices on every run and for benchmark workloads.

/// The generator's state; any non-zero seed.
#[derive(Clone, Debug)]
pub struct XorShift64(pub u64);

impl XorShift64 {
    /// The next value of the sequence.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (0 when `n` is 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_xorshift64() {
        let mut rng = XorShift64(1);
        assert_eq!(rng.next_u64(), 1082269761);
        assert_eq!(rng.below(10), 1152992998833853505 % 10);
        assert_eq!(XorShift64(5).below(0), 0);
    }
}

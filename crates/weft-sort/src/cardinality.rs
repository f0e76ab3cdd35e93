//! Is the abbreviated key still worth computing? PostgreSQL's cardinality check, for
//! text: HyperLogLog estimates of distinct abbreviations and of distinct full keys over
//! the tuples seen so far; if abbreviations tell apart far fewer tuples than the keys do
//! (long common prefixes: URLs, padded codes), every comparison would fall through to the
//! full key anyway, and abbreviation is abandoned.

/// A HyperLogLog sketch with 2^10 registers (standard error about 3%).
pub(crate) struct HyperLogLog {
    registers: Vec<u8>,
}

const REGISTER_BITS: u32 = 10;

impl HyperLogLog {
    pub fn new() -> HyperLogLog {
        HyperLogLog { registers: vec![0; 1 << REGISTER_BITS] }
    }

    pub fn add_hash(&mut self, hash: u64) {
        let index = (hash >> (64 - REGISTER_BITS)) as usize;
        let rest = hash << REGISTER_BITS;
        let rank = (rest.leading_zeros() + 1).min(64 - REGISTER_BITS + 1) as u8;
        if rank > self.registers[index] {
            self.registers[index] = rank;
        }
    }

    pub fn estimate(&self) -> f64 {
        let m = self.registers.len() as f64;
        let sum: f64 = self.registers.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            m * (m / zeros as f64).ln() // linear counting for small cardinalities
        } else {
            raw
        }
    }
}

/// A 64-bit mix (splitmix64's finalizer): spreads abbreviations, which are prefixes.
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

/// FNV-1a over the bytes, then mixed: a cheap hash of the full key.
pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    mix64(h)
}

/// The running decision for one participant's input.
pub(crate) struct AbbreviationCheck {
    abbreviated: HyperLogLog,
    full: HyperLogLog,
    seen: u64,
    next_check: u64,
    /// Decided for good: abbreviation pays off.
    settled: bool,
}

/// Abbreviations this distinct are worth keeping whatever the input size.
const ENOUGH_DISTINCT: f64 = 100_000.0;
/// Abandon when distinct abbreviations fall below this share of distinct keys.
const MIN_PROPORTION: f64 = 0.2;

impl AbbreviationCheck {
    pub fn new() -> AbbreviationCheck {
        AbbreviationCheck { abbreviated: HyperLogLog::new(), full: HyperLogLog::new(), seen: 0, next_check: 10_000, settled: false }
    }

    pub fn settled(&self) -> bool {
        self.settled
    }

    /// Record one tuple; `false` means: stop abbreviating.
    pub fn observe(&mut self, abbrev: u64, key_bytes: &[u8]) -> bool {
        self.abbreviated.add_hash(mix64(abbrev));
        self.full.add_hash(hash_bytes(key_bytes));
        self.seen += 1;
        if self.seen < self.next_check {
            return true;
        }
        self.next_check *= 2;
        let abbreviated = self.abbreviated.estimate();
        if abbreviated > ENOUGH_DISTINCT {
            self.settled = true;
            return true;
        }
        abbreviated >= self.full.estimate() * MIN_PROPORTION
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_are_close() {
        for n in [100u64, 10_000, 200_000] {
            let mut h = HyperLogLog::new();
            for i in 0..n {
                h.add_hash(mix64(i));
            }
            let e = h.estimate();
            assert!((e - n as f64).abs() / (n as f64) < 0.1, "n={n} estimate={e}");
        }
    }

    #[test]
    fn common_prefixes_abandon_abbreviation() {
        let mut check = AbbreviationCheck::new();
        let mut keep = true;
        for i in 0..20_000u64 {
            let key = format!("http://example.com/{i}");
            let mut prefix = [0u8; 8];
            prefix.copy_from_slice(&key.as_bytes()[..8]);
            keep &= check.observe(u64::from_be_bytes(prefix), key.as_bytes());
        }
        assert!(!keep);
        let mut check = AbbreviationCheck::new();
        for i in 0..20_000u64 {
            let key = format!("{:016x}", mix64(i));
            let mut prefix = [0u8; 8];
            prefix.copy_from_slice(&key.as_bytes()[..8]);
            assert!(check.observe(u64::from_be_bytes(prefix), key.as_bytes()));
        }
    }
}

//! Least-significant-digit radix sort of the sort array by abbreviated key.
//!
//! A comparison sort of a sub-run costs `log2 n` passes over the array (20 for a million
//! tuples), each a chain of data-dependent branches. Sorting by the abbreviation's bytes
//! costs one counting pass and one scatter pass per byte that varies, and for integer keys
//! only a few do (an int4 abbreviation has 4). Bytes on which every tuple agrees are
//! skipped, so small ranges (ids, dates as integers, booleans) take fewer passes still.
//!
//! The scatter is stable, so tuples with equal abbreviations keep the order they were
//! pushed in; the caller orders those runs by the full comparison afterwards (for an
//! index build they are already in heap order, and checking that costs one comparison
//! per tie).

use crate::memtuples::SortTuple;

/// Beyond this many varying bytes a comparison sort is as fast (measured on a million
/// random `u64` keys: 6 scatter passes cost about what pdqsort does).
pub(crate) const MAX_PASSES: usize = 5;

/// Sort `tuples` by abbreviation, stably, using `scratch` (whose contents are lost) as
/// the second buffer. Returns false, leaving `tuples` untouched, when more than
/// [`MAX_PASSES`] bytes of the abbreviations vary.
pub(crate) fn sort_by_abbrev(tuples: &mut Vec<SortTuple>, scratch: &mut Vec<SortTuple>) -> bool {
    let n = tuples.len();
    if n < 2 {
        return true;
    }
    let mut counts = vec![[0usize; 256]; 8];
    for t in tuples.iter() {
        let key = t.abbrev;
        for (digit, count) in counts.iter_mut().enumerate() {
            count[(key >> (8 * digit)) as u8 as usize] += 1;
        }
    }
    let digits: Vec<usize> = (0..8).filter(|&d| !counts[d].iter().any(|&c| c == n)).collect();
    if digits.len() > MAX_PASSES {
        return false;
    }
    scratch.clear();
    scratch.resize(n, SortTuple::default());
    for &digit in &digits {
        let mut next = [0usize; 256];
        let mut sum = 0;
        for (slot, &count) in next.iter_mut().zip(counts[digit].iter()) {
            *slot = sum;
            sum += count;
        }
        let shift = 8 * digit;
        for t in tuples.iter() {
            let bucket = (t.abbrev >> shift) as u8 as usize;
            scratch[next[bucket]] = *t;
            next[bucket] += 1;
        }
        std::mem::swap(tuples, scratch);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tuples(keys: &[u64]) -> Vec<SortTuple> {
        keys.iter().enumerate().map(|(i, &k)| SortTuple::new(k, i as u64)).collect()
    }

    proptest! {
        #[test]
        fn sorts_stably_like_a_stable_comparison_sort(
            keys in proptest::collection::vec(prop_oneof![0u64..4, 0u64..100_000, any::<u32>().prop_map(|k| k as u64 * 3)], 0..3000),
        ) {
            let mut sorted = tuples(&keys);
            let mut scratch = Vec::new();
            prop_assert!(sort_by_abbrev(&mut sorted, &mut scratch));
            let mut expected = tuples(&keys);
            expected.sort_by_key(|t| t.abbrev);
            let got: Vec<(u64, u64)> = sorted.iter().map(|t| (t.abbrev, t.location())).collect();
            let want: Vec<(u64, u64)> = expected.iter().map(|t| (t.abbrev, t.location())).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn declines_keys_that_vary_in_every_byte() {
        let keys: Vec<u64> = (0..1000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let mut sorted = tuples(&keys);
        assert!(!sort_by_abbrev(&mut sorted, &mut Vec::new()));
        assert_eq!(sorted.iter().map(|t| t.abbrev).collect::<Vec<_>>(), keys, "left untouched");
    }
}

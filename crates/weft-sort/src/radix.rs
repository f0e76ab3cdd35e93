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

/// From this many tuples the first pass splits by the most significant varying byte and
/// each bucket is then sorted on the other bytes while it sits in the cache (a scatter
/// over a whole array of a hundred megabytes misses the cache on nearly every write).
const SPLIT_FIRST_TUPLES: usize = 1 << 16;

type Counts = [[usize; 256]; 8];

/// Sort `tuples` by abbreviation, stably, using `scratch` (whose contents are lost) as
/// the second buffer. Returns false, leaving `tuples` untouched, when more than
/// [`MAX_PASSES`] bytes of the abbreviations vary.
pub(crate) fn sort_by_abbrev(tuples: &mut Vec<SortTuple>, scratch: &mut Vec<SortTuple>) -> bool {
    let n = tuples.len();
    if n < 2 {
        return true;
    }
    // The bytes on which some tuple differs from the first: the only ones to sort by.
    let first = tuples[0].abbrev;
    let differing = tuples.iter().fold(0u64, |acc, t| acc | (t.abbrev ^ first));
    let digits: Vec<usize> = (0..8).filter(|&d| (differing >> (8 * d)) as u8 != 0).collect();
    if digits.len() > MAX_PASSES {
        return false;
    }
    if digits.is_empty() {
        return true;
    }
    scratch.clear();
    if scratch.capacity() < n {
        *scratch = Vec::with_capacity(n);
        weft_storage::memhint::advise_huge_pages(scratch);
    }
    scratch.resize(n, SortTuple::default());
    if digits.len() < 3 || n < SPLIT_FIRST_TUPLES {
        let counts = count_bytes(tuples, &digits);
        if passes(tuples, scratch, &digits, &counts) {
            std::mem::swap(tuples, scratch);
        }
        return true;
    }
    let (&top, rest) = digits.split_last().expect("at least three digits");
    let counts = count_bytes(tuples, &[top]);
    let starts = scatter(tuples, scratch, top, &counts[top]);
    for bucket in 0..256 {
        let (from, to) = (starts[bucket], starts.get(bucket + 1).copied().unwrap_or(n));
        let (sorted, spare) = (&mut scratch[from..to], &mut tuples[from..to]);
        let local = count_bytes(sorted, rest);
        let local_digits = varying(&local, rest, to - from);
        if !passes(sorted, spare, &local_digits, &local) {
            spare.copy_from_slice(sorted);
        }
    }
    true
}

/// Per byte position in `digits`, how many tuples have each value there.
fn count_bytes(tuples: &[SortTuple], digits: &[usize]) -> Box<Counts> {
    let mut counts = Box::new([[0usize; 256]; 8]);
    for t in tuples {
        for &digit in digits {
            counts[digit][(t.abbrev >> (8 * digit)) as u8 as usize] += 1;
        }
    }
    counts
}

/// The byte positions among `digits` on which not every one of the `n` tuples agrees.
fn varying(counts: &Counts, digits: &[usize], n: usize) -> Vec<usize> {
    digits.iter().copied().filter(|&d| !counts[d].iter().any(|&c| c == n)).collect()
}

/// One stable scatter pass by byte `digit` from `from` into `to`; returns where each
/// bucket starts.
fn scatter(from: &[SortTuple], to: &mut [SortTuple], digit: usize, counts: &[usize; 256]) -> [usize; 256] {
    let mut starts = [0usize; 256];
    let mut sum = 0;
    for (start, &count) in starts.iter_mut().zip(counts.iter()) {
        *start = sum;
        sum += count;
    }
    let mut next = starts;
    let shift = 8 * digit;
    for t in from {
        let bucket = (t.abbrev >> shift) as u8 as usize;
        to[next[bucket]] = *t;
        next[bucket] += 1;
    }
    starts
}

/// Scatter passes over `digits`, least significant first, alternating between the two
/// buffers; returns true when the result ended in `spare`.
fn passes(data: &mut [SortTuple], spare: &mut [SortTuple], digits: &[usize], counts: &Counts) -> bool {
    let mut in_spare = false;
    for &digit in digits {
        if in_spare {
            scatter(spare, data, digit, &counts[digit]);
        } else {
            scatter(data, spare, digit, &counts[digit]);
        }
        in_spare = !in_spare;
    }
    in_spare
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tuples(keys: &[u64]) -> Vec<SortTuple> {
        keys.iter().enumerate().map(|(i, &k)| SortTuple::new(k, i as u64)).collect()
    }

    /// (key, position pushed) after the radix sort, and after a stable comparison sort.
    fn radix_and_stable_order(keys: &[u64]) -> (Vec<(u64, u64)>, Vec<(u64, u64)>) {
        let mut sorted = tuples(keys);
        assert!(sort_by_abbrev(&mut sorted, &mut Vec::new()));
        let mut expected = tuples(keys);
        expected.sort_by_key(|t| t.abbrev);
        let pairs = |v: &[SortTuple]| v.iter().map(|t| (t.abbrev, t.payload())).collect();
        (pairs(&sorted), pairs(&expected))
    }

    proptest! {
        #[test]
        fn sorts_stably_like_a_stable_comparison_sort(
            keys in proptest::collection::vec(prop_oneof![0u64..4, 0u64..100_000, any::<u32>().prop_map(|k| k as u64 * 3)], 0..3000),
        ) {
            let (got, want) = radix_and_stable_order(&keys);
            prop_assert_eq!(got, want);
        }
    }

    /// Large enough for the first pass to split by the top byte, with skewed buckets.
    #[test]
    fn sorts_large_arrays_split_by_their_top_byte() {
        let keys: Vec<u64> = (0..200_000u64)
            .map(|i| {
                let mixed = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24;
                if i % 3 == 0 { mixed & 0xFF_FFFF } else { mixed & 0xFFFF_FFFF }
            })
            .collect();
        let (got, want) = radix_and_stable_order(&keys);
        assert_eq!(got, want);
    }

    #[test]
    fn declines_keys_that_vary_in_every_byte() {
        let keys: Vec<u64> = (0..1000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let mut sorted = tuples(&keys);
        assert!(!sort_by_abbrev(&mut sorted, &mut Vec::new()));
        assert_eq!(sorted.iter().map(|t| t.abbrev).collect::<Vec<_>>(), keys, "left untouched");
    }
}

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
    let digits = varying_bytes(tuples, abbrev_of);
    if digits.len() > MAX_PASSES {
        return false;
    }
    lsd_sort(tuples, scratch, &digits);
    true
}

/// What a sub-run of tuples is sorted by before its ties (`MemTuples::sort`): the MSD
/// sort when the abbreviations vary in more than [`MAX_PASSES`] bytes (any key type),
/// else, when `lsd` (the key suits it), [`sort_by_abbrev`]'s passes — the varying bytes
/// counted once for both. Not stable. Returns false, leaving `tuples` untouched, when
/// neither applies.
pub(crate) fn sort_tuples_by_abbrev(tuples: &mut Vec<SortTuple>, scratch: &mut Vec<SortTuple>, lsd: bool) -> bool {
    let digits = varying_bytes(tuples, abbrev_of);
    if digits.len() > MAX_PASSES {
        if tuples.len() < SPLIT_FIRST_TUPLES {
            return false;
        }
        msd_sort(tuples, *digits.last().expect("varying bytes"), Ties::Unordered);
        return true;
    }
    if lsd {
        lsd_sort(tuples, scratch, &digits);
    }
    lsd
}

/// [`sort_by_abbrev`]'s passes over `digits` (at most [`MAX_PASSES`]), stable.
fn lsd_sort(tuples: &mut Vec<SortTuple>, scratch: &mut Vec<SortTuple>, digits: &[usize]) {
    let n = tuples.len();
    if digits.is_empty() {
        return;
    }
    scratch.clear();
    if scratch.capacity() < n {
        *scratch = Vec::with_capacity(n);
        weft_storage::memhint::advise_huge_pages(scratch);
    }
    scratch.resize(n, SortTuple::default());
    if digits.len() < 3 || n < SPLIT_FIRST_TUPLES {
        let counts = count_bytes(tuples, digits, abbrev_of);
        if passes(tuples, scratch, digits, &counts, abbrev_of) {
            std::mem::swap(tuples, scratch);
        }
        return;
    }
    let (&top, rest) = digits.split_last().expect("at least three digits");
    let counts = count_bytes(tuples, &[top], abbrev_of);
    let starts = scatter(tuples, scratch, top, &counts[top], abbrev_of);
    for bucket in 0..256 {
        let (from, to) = (starts[bucket], starts.get(bucket + 1).copied().unwrap_or(n));
        let (sorted, spare) = (&mut scratch[from..to], &mut tuples[from..to]);
        let local = count_bytes(sorted, rest, abbrev_of);
        let local_digits = varying(&local, rest, to - from);
        if !passes(sorted, spare, &local_digits, &local, abbrev_of) {
            spare.copy_from_slice(sorted);
        }
    }
}

/// What the radix sorts move: an element with a key the passes sort by and, for pairs,
/// a tie-breaker that orders elements with equal keys.
pub(crate) trait RadixItem: Copy + Default {
    fn key(&self) -> u64;
    fn tie(&self) -> u64;
}

impl RadixItem for SortTuple {
    #[inline(always)]
    fn key(&self) -> u64 {
        self.abbrev
    }

    #[inline(always)]
    fn tie(&self) -> u64 {
        self.payload()
    }
}

/// What the passes sort by: a tuple's abbreviation, or (pairs) its payload.
fn abbrev_of<T: RadixItem>(t: &T) -> u64 {
    t.key()
}

fn payload_of<T: RadixItem>(t: &T) -> u64 {
    t.tie()
}

/// The byte positions on which some tuple's `key` differs from the first's: the only
/// ones to sort by.
fn varying_bytes<T: RadixItem>(tuples: &[T], key: impl Fn(&T) -> u64) -> Vec<usize> {
    let Some(first) = tuples.first().map(&key) else { return Vec::new() };
    let differing = tuples.iter().fold(0u64, |acc, t| acc | (key(t) ^ first));
    (0..8).filter(|&d| (differing >> (8 * d)) as u8 != 0).collect()
}

/// Per byte position in `digits` of `key`, how many tuples have each value there.
fn count_bytes<T: RadixItem>(tuples: &[T], digits: &[usize], key: impl Fn(&T) -> u64) -> Box<Counts> {
    let mut counts = Box::new([[0usize; 256]; 8]);
    for t in tuples {
        let k = key(t);
        for &digit in digits {
            counts[digit][(k >> (8 * digit)) as u8 as usize] += 1;
        }
    }
    counts
}

/// The byte positions among `digits` on which not every one of the `n` tuples agrees.
fn varying(counts: &Counts, digits: &[usize], n: usize) -> Vec<usize> {
    digits.iter().copied().filter(|&d| !counts[d].iter().any(|&c| c == n)).collect()
}

/// One stable scatter pass by byte `digit` of `key` from `from` into `to`; returns where
/// each bucket starts.
fn scatter<T: RadixItem>(from: &[T], to: &mut [T], digit: usize, counts: &[usize; 256], key: impl Fn(&T) -> u64) -> [usize; 256] {
    let mut starts = [0usize; 256];
    let mut sum = 0;
    for (start, &count) in starts.iter_mut().zip(counts.iter()) {
        *start = sum;
        sum += count;
    }
    let mut next = starts;
    let shift = 8 * digit;
    for t in from {
        let bucket = (key(t) >> shift) as u8 as usize;
        to[next[bucket]] = *t;
        next[bucket] += 1;
    }
    starts
}

/// Scatter passes over `digits` of `key`, least significant first, alternating between
/// the two buffers; returns true when the result ended in `spare`.
fn passes<T: RadixItem>(data: &mut [T], spare: &mut [T], digits: &[usize], counts: &Counts, key: impl Fn(&T) -> u64 + Copy) -> bool {
    let mut in_spare = false;
    for &digit in digits {
        if in_spare {
            scatter(spare, data, digit, &counts[digit], key);
        } else {
            scatter(data, spare, digit, &counts[digit], key);
        }
        in_spare = !in_spare;
    }
    in_spare
}

/// Sort pairs (`pairs.rs`) by (abbreviation, payload) with no second buffer the size of
/// the array: the most significant varying byte of the abbreviations partitions the array
/// in place (American flag sort: each pair is swapped straight into its bucket), and each
/// bucket is then sorted on the other bytes through a buffer the size of the largest
/// bucket. A second array would be hundreds of megabytes touched for the first time,
/// which costs about as much as the sort itself on these machines.
///
/// The partition is not stable, so pairs with equal abbreviations lose their push
/// order; a bucket puts them back in payload order, by sorting the few tie runs when
/// ties are rare, or by sorting the bucket by payload first and then stably by
/// abbreviation when they are not.
///
/// Abbreviations varying in more than [`MAX_PASSES`] bytes (a hash, a random
/// `bigint`) are sorted by [`msd_sort_pairs`] instead, in place all the way down.
/// Returns false, leaving `pairs` untouched, for small arrays and for abbreviations
/// varying in fewer than two bytes (one pass is cheap with the ordinary second buffer).
///
/// `scratch` never grows past `scratch_cap` pairs: a bucket larger than that (keys
/// crowded into one top byte) is sorted by comparison, in place.
pub(crate) fn sort_pairs_in_place<T: RadixItem>(pairs: &mut [T], scratch: &mut Vec<T>, scratch_cap: usize) -> bool {
    let n = pairs.len();
    if n < SPLIT_FIRST_TUPLES {
        return false;
    }
    let digits = varying_bytes(pairs, abbrev_of);
    if digits.len() < 2 {
        return false;
    }
    let (&top, rest) = digits.split_last().expect("two digits at least");
    if digits.len() > MAX_PASSES {
        msd_sort_pairs(pairs, top);
        return true;
    }
    let counts = count_bytes(pairs, &[top], abbrev_of);
    let bounds = permute_in_place(pairs, top, &counts[top]);
    let largest = bounds.windows(2).map(|w| w[1] - w[0]).filter(|&len| len <= scratch_cap).max().unwrap_or(0);
    scratch.clear();
    if scratch.capacity() < largest {
        *scratch = Vec::with_capacity(largest);
    }
    scratch.resize(largest, T::default());
    for bucket in bounds.windows(2) {
        let (from, to) = (bucket[0], bucket[1]);
        if to - from > largest {
            pairs[from..to].sort_unstable_by_key(|p| (p.key(), p.tie()));
        } else if to - from > 1 {
            sort_bucket_of_pairs(&mut pairs[from..to], &mut scratch[..to - from], rest);
        }
    }
    true
}

/// From this many tuples down, a bucket of [`msd_sort`] is sorted by comparison.
const MSD_SMALL: usize = 48;

/// What [`msd_sort`] orders tuples with equal abbreviations by.
#[derive(Clone, Copy, PartialEq)]
enum Ties {
    /// Pairs: by payload.
    Payload,
    /// Tuples: left as they fall; the caller orders them by the full key.
    Unordered,
}

/// Sort pairs by (abbreviation, payload) in place, from byte `digit` of the
/// abbreviations down ([`msd_sort`]).
fn msd_sort_pairs<T: RadixItem>(pairs: &mut [T], digit: usize) {
    msd_sort(pairs, digit, Ties::Payload);
}

/// Sort by abbreviation in place, most significant byte first, from byte `digit` down:
/// each level swaps the tuples into the buckets of one byte ([`permute_in_place`]) and
/// sorts each bucket on the bytes below. Random 8-byte keys need about two levels
/// before the buckets are small enough for an insertion sort, so the work does not grow
/// with the number of bytes that vary, as the LSD passes' does, and a bucket below the
/// first level sits in the cache while it is sorted. A byte on which a whole bucket
/// agrees is skipped without moving anything; tuples whose abbreviations agree in every
/// byte are ordered as `ties` says.
fn msd_sort<T: RadixItem>(tuples: &mut [T], digit: usize, ties: Ties) {
    if tuples.len() <= MSD_SMALL {
        match ties {
            Ties::Payload => tuples.sort_unstable_by_key(|p| (p.key(), p.tie())),
            Ties::Unordered => tuples.sort_unstable_by_key(abbrev_of),
        }
        return;
    }
    let mut digit = Some(digit);
    while let Some(d) = digit {
        let mut counts = [0usize; 256];
        let shift = 8 * d;
        for t in tuples.iter() {
            counts[(t.key() >> shift) as u8 as usize] += 1;
        }
        if counts.contains(&tuples.len()) {
            digit = d.checked_sub(1);
            continue;
        }
        let bounds = permute_in_place(tuples, d, &counts);
        for bucket in bounds.windows(2) {
            let bucket = &mut tuples[bucket[0]..bucket[1]];
            match d.checked_sub(1) {
                _ if bucket.len() < 2 => {}
                Some(below) => msd_sort(bucket, below, ties),
                None if ties == Ties::Payload => bucket.sort_unstable_by_key(T::tie),
                None => {}
            }
        }
        return;
    }
    // Every byte agrees: one abbreviation.
    if ties == Ties::Payload {
        tuples.sort_unstable_by_key(T::tie);
    }
}

/// Pairs ahead of a bucket's next slot that [`permute_in_place`] prefetches (two lines).
const PERMUTE_AHEAD: usize = 8;

/// Move every tuple into the bucket of its byte `digit`, in place; returns the buckets'
/// bounds (bucket `b` is `bounds[b]..bounds[b + 1]`).
fn permute_in_place<T: RadixItem>(tuples: &mut [T], digit: usize, counts: &[usize; 256]) -> [usize; 257] {
    let mut bounds = [0usize; 257];
    for b in 0..256 {
        bounds[b + 1] = bounds[b] + counts[b];
    }
    let shift = 8 * digit;
    let bucket_of = |t: &T| (t.key() >> shift) as u8 as usize;
    let mut heads: [usize; 256] = bounds[..256].try_into().expect("256 bounds");
    for b in 0..256 {
        let end = bounds[b + 1];
        while heads[b] < end {
            // Follow the cycle from this slot until a tuple of bucket `b` comes back.
            let mut t = tuples[heads[b]];
            let mut d = bucket_of(&t);
            while d != b {
                std::mem::swap(&mut t, &mut tuples[heads[d]]);
                heads[d] += 1;
                // Each bucket's next slot moves forward one pair at a time, but 256 such
                // streams interleaved at random defeat the hardware prefetcher: ask for
                // this bucket's slots a few lines ahead (a swap waits on its slot's load).
                if let Some(ahead) = tuples.get(heads[d] + PERMUTE_AHEAD) {
                    weft_storage::memhint::prefetch(ahead);
                }
                d = bucket_of(&t);
            }
            tuples[heads[b]] = t;
            heads[b] += 1;
        }
    }
    bounds
}

/// Stable LSD passes over the bytes of `key` that vary in `data` among `digits`; the
/// result ends in `data`.
pub(crate) fn sort_by_bytes<T: RadixItem>(data: &mut [T], spare: &mut [T], digits: &[usize], key: impl Fn(&T) -> u64 + Copy) {
    let counts = count_bytes(data, digits, key);
    let varying = varying(&counts, digits, data.len());
    if passes(data, spare, &varying, &counts, key) {
        data.copy_from_slice(spare);
    }
}

/// Sort one bucket of the in-place partition by (abbreviation, payload).
fn sort_bucket_of_pairs<T: RadixItem>(bucket: &mut [T], spare: &mut [T], abbrev_digits: &[usize]) {
    sort_by_bytes(bucket, spare, abbrev_digits, abbrev_of);
    // Tie runs out of payload order, and how many pairs they hold.
    let mut unordered = Vec::new();
    let mut unordered_pairs = 0;
    let mut start = 0;
    while start < bucket.len() {
        let key = bucket[start].key();
        let end = start + bucket[start..].iter().take_while(|p| p.key() == key).count();
        if end - start > 1 && !bucket[start..end].windows(2).all(|w| w[0].tie() <= w[1].tie()) {
            unordered.push(start..end);
            unordered_pairs += end - start;
        }
        start = end;
    }
    if unordered_pairs * 16 <= bucket.len() {
        for run in unordered {
            bucket[run].sort_unstable_by_key(T::tie);
        }
    } else {
        // Many ties: payload order first, then the stable passes keep it within ties.
        let payload_digits = varying_bytes(bucket, payload_of);
        sort_by_bytes(bucket, spare, &payload_digits, payload_of);
        sort_by_bytes(bucket, spare, abbrev_digits, abbrev_of);
    }
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

    /// The in-place partition gives (abbreviation, payload) order whatever the ties:
    /// unique keys, a few hot keys, every pair in one of two top buckets.
    #[test]
    fn in_place_pair_sort_orders_by_abbreviation_then_payload() {
        let mix = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let cases: Vec<Vec<u64>> = vec![
            (0..150_000u64).map(|i| mix(i) >> 32).collect(),
            (0..150_000u64).map(|i| (mix(i) >> 32) % 50 * 0x0101_0101).collect(),
            (0..150_000u64).map(|i| if i % 7 == 0 { 1 << 24 } else { mix(i) >> 48 }).collect(),
            (0..150_000u64).map(|i| if i % 1000 == 0 { mix(i) >> 32 } else { 0x00AB_CD00 }).collect(),
        ];
        for keys in cases {
            // Payloads pushed in a scrambled order, as a merge of chunks might.
            let mut pairs: Vec<SortTuple> = keys.iter().enumerate().map(|(i, &k)| SortTuple::new(k, mix(i as u64) >> 20)).collect();
            let mut expected = pairs.clone();
            expected.sort_by_key(|p| (p.abbrev, p.payload()));
            assert!(sort_pairs_in_place(&mut pairs, &mut Vec::new(), usize::MAX));
            let got: Vec<(u64, u64)> = pairs.iter().map(|p| (p.abbrev, p.payload())).collect();
            let want: Vec<(u64, u64)> = expected.iter().map(|p| (p.abbrev, p.payload())).collect();
            assert_eq!(got, want);
        }
    }

    /// Keys varying in every byte take the MSD path: unique hashes, hashes with
    /// duplicates (ties put in payload order), and hashes sharing their top bytes.
    #[test]
    fn in_place_pair_sort_of_keys_varying_in_every_byte() {
        let mix = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let cases: Vec<Vec<u64>> = vec![
            (0..150_000u64).map(mix).collect(),
            (0..150_000u64).map(|i| mix(i % 9_000)).collect(),
            (0..150_000u64).map(|i| 0xABCD_0000_0000_0000 | mix(i) >> 16 | (i & 1)).collect(),
            (0..150_000u64).map(|i| if i % 3 == 0 { u64::MAX } else { mix(i) }).collect(),
        ];
        for keys in cases {
            let mut pairs: Vec<SortTuple> = keys.iter().enumerate().map(|(i, &k)| SortTuple::new(k, mix(i as u64) >> 20)).collect();
            let mut expected: Vec<(u64, u64)> = pairs.iter().map(|p| (p.abbrev, p.payload())).collect();
            expected.sort();
            assert!(sort_pairs_in_place(&mut pairs, &mut Vec::new(), 0));
            let got: Vec<(u64, u64)> = pairs.iter().map(|p| (p.abbrev, p.payload())).collect();
            assert_eq!(got, expected);
        }
    }

    /// The unstable MSD sort of tuples orders abbreviations (ties in any order) and
    /// declines what the LSD passes take.
    #[test]
    fn unstable_sort_of_tuples_by_abbreviation() {
        let mix = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for keys in [(0..100_000u64).map(mix).collect::<Vec<_>>(), (0..100_000u64).map(|i| mix(i % 500)).collect()] {
            let mut sorted = tuples(&keys);
            assert!(sort_tuples_by_abbrev(&mut sorted, &mut Vec::new(), false));
            let mut want = keys.clone();
            want.sort_unstable();
            assert_eq!(sorted.iter().map(|t| t.abbrev).collect::<Vec<_>>(), want);
            let mut positions: Vec<u64> = sorted.iter().map(SortTuple::payload).collect();
            positions.sort_unstable();
            assert_eq!(positions, (0..100_000).collect::<Vec<_>>(), "every tuple once");
        }
        let narrow: Vec<u64> = (0..100_000u64).map(|i| mix(i) >> 40).collect();
        assert!(!sort_tuples_by_abbrev(&mut tuples(&narrow), &mut Vec::new(), false), "three bytes: the LSD passes");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn in_place_pair_sort_matches_a_comparison_sort(
            keys in proptest::collection::vec(prop_oneof![0u64..4, 0u64..100_000, any::<u32>().prop_map(|k| k as u64 * 3), any::<u64>()], 70_000..70_500),
            scramble in any::<u64>(),
        ) {
            let mut pairs: Vec<SortTuple> = keys.iter().enumerate().map(|(i, &k)| SortTuple::new(k, (i as u64 ^ scramble) % 100_000)).collect();
            let mut expected: Vec<(u64, u64)> = pairs.iter().map(|p| (p.abbrev, p.payload())).collect();
            expected.sort();
            if sort_pairs_in_place(&mut pairs, &mut Vec::new(), usize::MAX) {
                let got: Vec<(u64, u64)> = pairs.iter().map(|p| (p.abbrev, p.payload())).collect();
                prop_assert_eq!(got, expected);
            }
        }
    }
}

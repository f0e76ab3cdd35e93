//! Tuples held in memory: an arena of chunks plus an array of (abbreviated key, location)
//! pairs, which is what the in-memory sort permutes.
//!
//! Invariant: `bytes()` is what the buffer holds (chunk capacities and the pair array's
//! capacity), so a participant keeps it within its budget by asking before each push.

use std::cmp::Ordering;

use crate::arena::TupleChunks;
use crate::keys::SortKeys;
use crate::memrun::{MemRun, MemRunWriter};
use crate::radix;

/// Arena chunks: a sixteenth of the budget, between 4 kB and 32 MiB. Chunks of 2 MiB and
/// more are backed by huge pages where the kernel allows: the sorted order visits the
/// arena at random, and with 4 kB pages nearly every visit would miss the TLB.
const MAX_CHUNK_BYTES: usize = 32 << 20;
const MIN_CHUNK_BYTES: usize = 4 << 10;
/// How many tuples ahead a reader of the sorted order prefetches.
pub(crate) const PREFETCH_AHEAD: usize = 12;

/// One tuple in the sort array: 16 bytes, so that sorting moves little memory.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SortTuple {
    pub abbrev: u64,
    /// `chunk << 32 | offset` of the tuple's length word in the arena.
    location: u64,
}

impl SortTuple {
    pub fn new(abbrev: u64, location: u64) -> SortTuple {
        SortTuple { abbrev, location }
    }

    /// The second half read as a pair-form payload (`pairs.rs`) rather than a location.
    #[inline(always)]
    pub fn payload(&self) -> u64 {
        self.location
    }
}

/// Below this many tuples a comparison sort is as fast as counting bytes.
const RADIX_MIN_TUPLES: usize = 1024;

#[derive(Default)]
pub(crate) struct MemTuples {
    /// Minimum growth of the pair array, in entries.
    array_step_min: usize,
    chunks: TupleChunks,
    tuples: Vec<SortTuple>,
    /// Radix sort by abbreviation (first keys of fixed width): the second buffer it
    /// scatters into is counted with the array, slot for slot, from the first push.
    radix: bool,
    scratch: Vec<SortTuple>,
}

impl MemTuples {
    /// Buffers sized for a budget of `budget` bytes; `radix` when the first key's
    /// abbreviation suits a radix sort (see `radix.rs`).
    pub fn new(budget: usize, radix: bool) -> MemTuples {
        MemTuples {
            array_step_min: (budget / 256).clamp(64, 4096),
            chunks: TupleChunks::new((budget / 16).clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES)),
            tuples: Vec::new(),
            radix,
            scratch: Vec::new(),
        }
    }

    /// Bytes one slot of the sort array costs: the pair, and its scratch twin if radix.
    fn slot_bytes(&self) -> usize {
        std::mem::size_of::<SortTuple>() * if self.radix { 2 } else { 1 }
    }

    /// Arena chunk size: also a good chunk size for runs laid out from this buffer.
    pub fn chunk_size(&self) -> usize {
        self.chunks.chunk_size()
    }

    pub fn len(&self) -> usize {
        self.tuples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tuples.is_empty()
    }

    /// Memory held, by capacity.
    pub fn bytes(&self) -> usize {
        self.chunks.bytes() + self.tuples.capacity().max(self.scratch.capacity()) * self.slot_bytes()
    }

    /// Memory `push(tuple)` would add (0 if it fits in what is already held).
    pub fn growth_for(&self, tuple_len: usize) -> usize {
        let chunk = self.chunks.growth_for(tuple_len);
        let array = if self.tuples.len() == self.tuples.capacity() { self.array_step() * self.slot_bytes() } else { 0 };
        chunk + array
    }

    fn array_step(&self) -> usize {
        // Grow the array by an eighth (at least 4096 entries): close to the budget
        // without reallocating often.
        (self.tuples.capacity() / 8).max(self.array_step_min)
    }

    pub fn push(&mut self, tuple: &[u8], abbrev: u64) {
        let (chunk_index, offset) = self.chunks.push(tuple);
        if self.tuples.len() == self.tuples.capacity() {
            self.tuples.reserve_exact(self.array_step());
        }
        self.tuples.push(SortTuple { abbrev, location: (chunk_index as u64) << 32 | offset as u64 });
    }

    #[inline(always)]
    pub fn tuple(&self, t: &SortTuple) -> &[u8] {
        self.chunks.tuple_at((t.location >> 32) as u32, t.location as u32)
    }

    pub fn get(&self, index: usize) -> &[u8] {
        self.tuple(&self.tuples[index])
    }

    /// Start loading the `index`-th tuple (if any) into cache: reading a sorted run visits
    /// the arena at random, so the reader asks for tuples a few places ahead.
    #[inline(always)]
    pub fn prefetch(&self, index: usize) {
        if let Some(t) = self.tuples.get(index) {
            self.chunks.prefetch((t.location >> 32) as u32, t.location as u32);
        }
    }

    /// Forget abbreviations (after the cardinality check gave up on them).
    pub fn clear_abbreviations(&mut self) {
        for t in &mut self.tuples {
            t.abbrev = 0;
        }
    }

    /// Sort by (abbreviation, full key). With an exact abbreviation, equal abbreviations
    /// mean equal first keys and only the remaining keys are compared.
    pub fn sort(&mut self, keys: &SortKeys, exact: bool) {
        let mut tuples = std::mem::take(&mut self.tuples);
        let mut scratch = std::mem::take(&mut self.scratch);
        // Abbreviations varying in many bytes (text prefixes, hashes) go most significant
        // byte first, whatever the key's type: every abbreviation is order-preserving.
        let by_radix = tuples.len() >= RADIX_MIN_TUPLES && radix::sort_tuples_by_abbrev(&mut tuples, &mut scratch, self.radix);
        let this = &*self;
        let ties = |a: &SortTuple, b: &SortTuple| -> Ordering {
            if !exact {
                keys.compare(this.tuple(a), this.tuple(b))
            } else if keys.len() == 1 {
                Ordering::Equal
            } else {
                keys.compare_after_first(this.tuple(a), this.tuple(b))
            }
        };
        if !by_radix {
            tuples.sort_unstable_by(|a, b| a.abbrev.cmp(&b.abbrev).then_with(|| ties(a, b)));
        } else if !(exact && keys.len() == 1) {
            // Order each run of equal abbreviations by the rest of the key (already in
            // order when tuples came in that order: one comparison per tie).
            let mut start = 0;
            while start < tuples.len() {
                let abbrev = tuples[start].abbrev;
                let end = start + tuples[start..].iter().take_while(|t| t.abbrev == abbrev).count();
                if end - start > 1 {
                    tuples[start..end].sort_unstable_by(ties);
                }
                start = end;
            }
        }
        self.tuples = tuples;
        self.scratch = scratch;
    }

    /// Copy the tuples, in their sorted order, into a run laid out in memory.
    pub fn lay_out(&self) -> MemRun {
        let mut writer = MemRunWriter::new(self.chunk_size());
        for (i, t) in self.tuples.iter().enumerate() {
            self.prefetch(i + PREFETCH_AHEAD);
            writer.write(self.tuple(t));
        }
        writer.finish()
    }

    /// Forget every tuple, keeping the memory for the next sub-run (still counted by
    /// `bytes()`).
    pub fn reset(&mut self) {
        self.chunks.reset();
        self.tuples.clear();
    }

    /// Drop everything, returning the memory.
    pub fn clear(&mut self) {
        *self = MemTuples {
            array_step_min: self.array_step_min,
            chunks: TupleChunks::new(self.chunk_size()),
            tuples: Vec::new(),
            radix: self.radix,
            scratch: Vec::new(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::SortColumn;
    use proptest::prelude::*;
    use weft_common::tuple::RowLayout;
    use weft_common::{DataType, Datum};

    fn sorted_rows(keys: &SortKeys, rows: &[Vec<Datum>], radix: bool) -> Vec<Vec<u8>> {
        let mut mem = MemTuples::new(1 << 24, radix);
        let mut bytes = Vec::new();
        for row in rows {
            bytes.clear();
            keys.layout().encode(row, &mut bytes).unwrap();
            mem.push(&bytes, keys.abbreviate(&bytes));
        }
        mem.sort(keys, keys.abbreviation_is_exact());
        (0..mem.len()).map(|i| mem.get(i).to_vec()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// The radix path (with ties ordered by the later keys) gives the comparison
        /// sort's order, for exact (int4) and inexact (int8 beyond 5 bytes) first keys.
        #[test]
        fn radix_sort_orders_like_the_comparison_sort(
            first in prop::sample::select(vec![DataType::Int4, DataType::Int8]),
            descending in any::<bool>(),
            nulls_first in any::<bool>(),
            values in prop::collection::vec((prop_oneof![Just(None), (-40i64..40).prop_map(Some), any::<i32>().prop_map(|v| Some(v as i64))], any::<i16>()), 1024..4000),
        ) {
            let layout = RowLayout::new(&[first, DataType::Int4]);
            let columns = [SortColumn { column: 0, descending, nulls_first }, SortColumn::new(1, false)];
            let keys = SortKeys::new(layout, &columns).unwrap();
            let rows: Vec<Vec<Datum>> = values
                .iter()
                .map(|&(v, second)| {
                    let v = match (v, first) {
                        (None, _) => Datum::Null,
                        (Some(v), DataType::Int4) => Datum::Int4(v as i32),
                        (Some(v), _) => Datum::Int8(v * 1_000_003),
                    };
                    vec![v, Datum::Int4(second as i32)]
                })
                .collect();
            let by_radix = sorted_rows(&keys, &rows, true);
            let by_comparison = sorted_rows(&keys, &rows, false);
            for pair in by_radix.windows(2) {
                prop_assert_ne!(keys.compare(&pair[0], &pair[1]), Ordering::Greater);
            }
            prop_assert_eq!(by_radix, by_comparison);
        }
    }
}

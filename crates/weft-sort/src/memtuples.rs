//! Tuples held in memory: an arena of chunks plus an array of (abbreviated key, location)
//! pairs, which is what the in-memory sort permutes.
//!
//! Invariant: `bytes()` is what the buffer holds (chunk capacities and the pair array's
//! capacity), so a participant keeps it within its budget by asking before each push.

use std::cmp::Ordering;

use crate::arena::TupleChunks;
use crate::keys::SortKeys;
use crate::memrun::{MemRun, MemRunWriter};

/// Arena chunks: a sixteenth of the budget, between 4 kB and 32 MiB. Chunks of 2 MiB and
/// more are backed by huge pages where the kernel allows: the sorted order visits the
/// arena at random, and with 4 kB pages nearly every visit would miss the TLB.
const MAX_CHUNK_BYTES: usize = 32 << 20;
const MIN_CHUNK_BYTES: usize = 4 << 10;
/// How many tuples ahead a reader of the sorted order prefetches.
pub(crate) const PREFETCH_AHEAD: usize = 12;

/// One tuple in the sort array: 16 bytes, so that sorting moves little memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SortTuple {
    pub abbrev: u64,
    /// `chunk << 32 | offset` of the tuple's length word in the arena.
    location: u64,
}

#[derive(Default)]
pub(crate) struct MemTuples {
    /// Minimum growth of the pair array, in entries.
    array_step_min: usize,
    chunks: TupleChunks,
    tuples: Vec<SortTuple>,
}

impl MemTuples {
    /// Buffers sized for a budget of `budget` bytes.
    pub fn new(budget: usize) -> MemTuples {
        MemTuples {
            array_step_min: (budget / 256).clamp(64, 4096),
            chunks: TupleChunks::new((budget / 16).clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES)),
            tuples: Vec::new(),
        }
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
        self.chunks.bytes() + self.tuples.capacity() * std::mem::size_of::<SortTuple>()
    }

    /// Memory `push(tuple)` would add (0 if it fits in what is already held).
    pub fn growth_for(&self, tuple_len: usize) -> usize {
        let chunk = self.chunks.growth_for(tuple_len);
        let array = if self.tuples.len() == self.tuples.capacity() { self.array_step() * 16 } else { 0 };
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
        let this = &*self;
        let compare = |a: &SortTuple, b: &SortTuple| -> Ordering {
            match a.abbrev.cmp(&b.abbrev) {
                Ordering::Equal if exact => {
                    if keys.len() == 1 {
                        Ordering::Equal
                    } else {
                        keys.compare_after_first(this.tuple(a), this.tuple(b))
                    }
                }
                Ordering::Equal => keys.compare(this.tuple(a), this.tuple(b)),
                other => other,
            }
        };
        tuples.sort_unstable_by(compare);
        self.tuples = tuples;
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
        };
    }
}

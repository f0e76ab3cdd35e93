//! The page-table lookup workload shared by `benches/mapping_lookup.rs` and
//! `tests/bench_mapping.rs`: the pages of 16 relations (main fork), each an equal run of
//! blocks from 0, probed in a fixed pseudo-random order of resident pages.

use weft_storage::{BufferTag, ForkNumber, RelFileLocator};

const RELATIONS: u32 = 16;

/// The `index`th of `entries` resident pages.
pub fn tag_of(index: usize, entries: usize) -> BufferTag {
    let per_relation = entries / RELATIONS as usize;
    let rel = (index / per_relation) as u32;
    let block = (index % per_relation) as u32;
    BufferTag::new(RelFileLocator::new(1663, 5, 16384 + rel), ForkNumber::Main, block)
}

/// A random sequence of resident tags (xorshift, fixed seed), per thread.
pub fn probes(entries: usize, thread: u64) -> Vec<BufferTag> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64 ^ (thread + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
    (0..1 << 16)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            tag_of((x % entries as u64) as usize, entries)
        })
        .collect()
}

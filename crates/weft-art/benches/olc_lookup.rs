//! `OlcArt::get` at 16k and 1M entries, one thread, 4-byte big-endian block numbers
//! (the shape of the page table's inner trees), hits in a pseudo-random order.
//! Two-thread figures are measured in weft-storage against the partitioned hash table.

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use weft_art::olc::{NodePool, OlcArt};

const LOOKUPS_PER_ITERATION: usize = 1024;

fn build(entries: u32) -> OlcArt {
    let pool = NodePool::new(NodePool::worst_case_bytes(entries as usize, 4));
    let tree = OlcArt::new(4, Arc::clone(&pool));
    for block in 0..entries {
        tree.insert_if_absent(&block.to_be_bytes(), block as u64).expect("pool sized").expect("fresh key");
    }
    tree
}

fn lookup_keys(entries: u32) -> Vec<[u8; 4]> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..LOOKUPS_PER_ITERATION)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state % entries as u64) as u32).to_be_bytes()
        })
        .collect()
}

fn olc_get(c: &mut Criterion) {
    let mut group = c.benchmark_group("olc_get");
    group.throughput(Throughput::Elements(LOOKUPS_PER_ITERATION as u64));
    for entries in [16 * 1024u32, 1024 * 1024] {
        let tree = build(entries);
        let keys = lookup_keys(entries);
        group.bench_with_input(BenchmarkId::from_parameter(entries), &keys, |b, keys| {
            b.iter(|| {
                let mut sum = 0u64;
                for key in keys {
                    sum = sum.wrapping_add(tree.get(black_box(key)).unwrap_or(0));
                }
                black_box(sum)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, olc_get);
criterion_main!(benches);

//! `OlcArt::get` at 16k and 1M entries, one thread, 4-byte big-endian block numbers
//! (the shape of the page table's inner trees), hits in a pseudo-random order.
//!
//! Beside it, for scale, the same lookups in a 128-partition `RwLock<HashMap>` (the
//! shape of weft-storage's hash page table: parking_lot locks, a multiplicative
//! hasher). Two-thread figures are measured in weft-storage on the real page tables.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use parking_lot::RwLock;
use weft_art::olc::{NodePool, OlcArt};

const LOOKUPS_PER_ITERATION: usize = 1 << 16;
const PARTITIONS: usize = 128;

fn build(entries: u32) -> OlcArt {
    let pool = NodePool::new(NodePool::worst_case_bytes(entries as usize, 4));
    let tree = OlcArt::new(4, Arc::clone(&pool));
    for block in 0..entries {
        tree.insert_if_absent(&block.to_be_bytes(), block as u64).expect("pool sized").expect("fresh key");
    }
    tree
}

fn lookup_keys(entries: u32) -> Vec<u32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..LOOKUPS_PER_ITERATION)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % entries as u64) as u32
        })
        .collect()
}

#[derive(Default)]
struct MultiplyHasher(u64);
impl Hasher for MultiplyHasher {
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0.rotate_left(26) ^ i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Partition = HashMap<u32, u64, BuildHasherDefault<MultiplyHasher>>;

#[repr(align(128))]
struct Padded(RwLock<Partition>);

fn partition_of(key: u32) -> usize {
    let mut hasher = MultiplyHasher::default();
    hasher.write_u32(key);
    (hasher.finish() >> 57) as usize % PARTITIONS
}

fn olc_get(c: &mut Criterion) {
    let mut group = c.benchmark_group("olc_get");
    group.throughput(Throughput::Elements(LOOKUPS_PER_ITERATION as u64));
    for entries in [16 * 1024u32, 1024 * 1024] {
        let tree = build(entries);
        let keys = lookup_keys(entries);
        let key_bytes: Vec<[u8; 4]> = keys.iter().map(|k| k.to_be_bytes()).collect();
        group.bench_with_input(BenchmarkId::new("art", entries), &key_bytes, |b, keys| {
            b.iter(|| {
                let mut sum = 0u64;
                for key in keys {
                    sum = sum.wrapping_add(tree.get(black_box(key)).unwrap_or(0));
                }
                black_box(sum)
            })
        });
        drop(tree);
        let partitions: Vec<Padded> = (0..PARTITIONS).map(|_| Padded(RwLock::new(Partition::default()))).collect();
        for block in 0..entries {
            partitions[partition_of(block)].0.write().insert(block, block as u64);
        }
        group.bench_with_input(BenchmarkId::new("hash128", entries), &keys, |b, keys| {
            b.iter(|| {
                let mut sum = 0u64;
                for &key in keys {
                    let key = black_box(key);
                    sum = sum.wrapping_add(partitions[partition_of(key)].0.read().get(&key).copied().unwrap_or(0));
                }
                black_box(sum)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, olc_get);
criterion_main!(benches);

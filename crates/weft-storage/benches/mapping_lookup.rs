//! Page-table lookups per second: the ART mapping (tree of trees) against the
//! partitioned hash mapping, the `congee` crate's concurrent ART, and a plain
//! `hashbrown` map behind one `parking_lot::RwLock`; 16k and 1M entries, 1 and
//! 2 threads.
//!
//! The entries are the pages of 16 relations (main fork), each holding an
//! equal run of blocks from 0, as a buffer pool full of a few tables holds
//! them; lookups pick uniformly random resident pages (a precomputed random
//! sequence, the same for every structure). `congee` takes 8-byte keys, so
//! its key is `relation << 32 | block` (the tag without tablespace,
//! database and fork): it does strictly less work per key than the others.
//!
//! cargo bench -p weft-storage --bench mapping_lookup

use std::hash::BuildHasherDefault;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use parking_lot::RwLock;
use weft_storage::mapping::{ArtMapping, BufferMapping, PartitionedHashMapping, TagHasher};
use weft_storage::BufferTag;

#[path = "../tests/common/lookup_workload.rs"]
mod lookup_workload;
use lookup_workload::{probes, tag_of};

/// Lookups per thread per measured iteration.
const BATCH: usize = 4096;
const SIZES: [usize; 2] = [16 * 1024, 1024 * 1024];

fn congee_key(tag: &BufferTag) -> usize {
    ((tag.rel.rel_number as usize) << 32) | tag.block as usize
}

trait Table: Sync {
    fn get(&self, tag: &BufferTag) -> Option<usize>;
}

struct Mapping(Box<dyn BufferMapping>);

impl Table for Mapping {
    #[inline]
    fn get(&self, tag: &BufferTag) -> Option<usize> {
        self.0.lookup(tag)
    }
}

struct Congee(congee::Congee<usize, usize>);

impl Table for Congee {
    #[inline]
    fn get(&self, tag: &BufferTag) -> Option<usize> {
        let guard = self.0.pin();
        self.0.get(&congee_key(tag), &guard)
    }
}

type LockedMap = RwLock<hashbrown::HashMap<BufferTag, usize, BuildHasherDefault<TagHasher>>>;

struct Locked(LockedMap);

impl Table for Locked {
    #[inline]
    fn get(&self, tag: &BufferTag) -> Option<usize> {
        self.0.read().get(tag).copied()
    }
}

fn build(name: &str, entries: usize) -> Arc<dyn Table + Send> {
    match name {
        "art" | "hash" => {
            let mapping: Box<dyn BufferMapping> = if name == "art" {
                Box::new(ArtMapping::new(entries))
            } else {
                Box::new(PartitionedHashMapping::new(entries))
            };
            for i in 0..entries {
                mapping.insert(tag_of(i, entries), i).unwrap().unwrap();
            }
            Arc::new(Mapping(mapping))
        }
        "congee" => {
            let tree = congee::Congee::default();
            let guard = tree.pin();
            for i in 0..entries {
                tree.insert(congee_key(&tag_of(i, entries)), i, &guard).unwrap();
            }
            drop(guard);
            Arc::new(Congee(tree))
        }
        "hashbrown_rwlock" => {
            let mut map = hashbrown::HashMap::with_capacity_and_hasher(entries, Default::default());
            for i in 0..entries {
                map.insert(tag_of(i, entries), i);
            }
            Arc::new(Locked(RwLock::new(map)))
        }
        _ => unreachable!("unknown table {name}"),
    }
}

/// `iters` batches of lookups on each of `threads` threads; wall time.
fn run(table: &Arc<dyn Table + Send>, probes: &[Vec<BufferTag>], threads: usize, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for probes in probes.iter().take(threads) {
            let table = table.clone();
            s.spawn(move || {
                let mut found = 0usize;
                let mut at = 0usize;
                for _ in 0..iters {
                    for _ in 0..BATCH {
                        found += table.get(&probes[at]).is_some() as usize;
                        at = (at + 1) & (probes.len() - 1);
                    }
                }
                assert_eq!(found, iters as usize * BATCH);
            });
        }
    });
    start.elapsed()
}

fn lookups(c: &mut Criterion) {
    for entries in SIZES {
        let probes: Vec<Vec<BufferTag>> = (0..2).map(|t| probes(entries, t)).collect();
        for name in ["art", "hash", "congee", "hashbrown_rwlock"] {
            let table = build(name, entries);
            for threads in [1usize, 2] {
                let mut group = c.benchmark_group(format!("lookup/{}k/{threads}t", entries / 1024));
                group.throughput(Throughput::Elements((BATCH * threads) as u64));
                group.measurement_time(Duration::from_secs(3));
                group.warm_up_time(Duration::from_secs(1));
                group.sample_size(20);
                group.bench_function(BenchmarkId::from_parameter(name), |b| {
                    b.iter_custom(|iters| run(&table, &probes, threads, iters))
                });
                group.finish();
            }
        }
    }
}

criterion_group!(benches, lookups);
criterion_main!(benches);

//! Lookups per second of the ART mapping against the partitioned hash,
//! interleaved (art, hash, art, hash, ... in short slices) so that a machine
//! shared with other work slows both alike; medians and the ratio art/hash.
//! The criterion bench (`benches/mapping_lookup.rs`) measures the same
//! lookups one structure after the other, with congee and hashbrown beside.
//!
//! cargo test -p weft-storage --release --test bench_mapping -- --ignored --nocapture
//! (WEFT_BENCH_ROUNDS, default 15 slices of 200 ms per structure and configuration;
//! WEFT_BENCH_ENTRIES, default 16384,1048576)

use std::sync::Arc;
use std::time::{Duration, Instant};

use weft_storage::mapping::{ArtMapping, BufferMapping, PartitionedHashMapping};
use weft_storage::BufferTag;

#[path = "common/lookup_workload.rs"]
mod lookup_workload;
use lookup_workload::{probes, tag_of};

const SLICE: Duration = Duration::from_millis(200);

/// Lookups per second over one slice on `threads` threads.
fn slice(mapping: &Arc<dyn BufferMapping>, probes: &[Vec<BufferTag>], threads: usize) -> f64 {
    let start = Instant::now();
    let total: usize = std::thread::scope(|s| {
        let handles: Vec<_> = probes
            .iter()
            .take(threads)
            .map(|probes| {
                let mapping = mapping.clone();
                s.spawn(move || {
                    let (mut done, mut at) = (0usize, 0usize);
                    while start.elapsed() < SLICE {
                        for _ in 0..1024 {
                            assert!(mapping.lookup(&probes[at]).is_some());
                            at = (at + 1) & (probes.len() - 1);
                        }
                        done += 1024;
                    }
                    done
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    total as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[test]
#[ignore = "benchmark: run in --release with --ignored --nocapture"]
fn bench_mapping_lookups() {
    let rounds: usize = std::env::var("WEFT_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    println!("| entries | threads | art M lookups/s | hash M lookups/s | art/hash |");
    println!("|---|---|---|---|---|");
    let sizes: Vec<usize> = match std::env::var("WEFT_BENCH_ENTRIES") {
        Ok(list) => list.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) => vec![16 * 1024, 1024 * 1024],
    };
    for entries in sizes {
        let art: Arc<dyn BufferMapping> = Arc::new(ArtMapping::new(entries));
        let hash: Arc<dyn BufferMapping> = Arc::new(PartitionedHashMapping::new(entries));
        for mapping in [&art, &hash] {
            for i in 0..entries {
                mapping.insert(tag_of(i, entries), i).unwrap().unwrap();
            }
        }
        let probes: Vec<Vec<BufferTag>> = (0..2).map(|t| probes(entries, t)).collect();
        for threads in [1, 2] {
            let (mut a, mut h) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                a.push(slice(&art, &probes, threads));
                h.push(slice(&hash, &probes, threads));
            }
            let (a, h) = (median(a) / 1e6, median(h) / 1e6);
            println!("| {}k | {threads} | {a:.1} | {h:.1} | {:.2} |", entries / 1024, a / h);
        }
    }
}

fn resident_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<usize>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Resident memory of the ART mapping's node pool: carved for its worst case at start-up,
/// resident only as nodes are used (slab_memory.rs). Prints, per pool size, the pool's
/// capacity and the resident growth after creating it and after filling it.
#[test]
#[ignore = "measurement: run in --release with --ignored --nocapture"]
fn art_mapping_resident_memory() {
    println!("| buffers | ART node pool carved | ART resident after new | ART resident, every buffer mapped | hash resident, every buffer mapped |");
    println!("|---|---|---|---|---|");
    for nbuffers in [16 * 1024, 128 * 1024, 1024 * 1024] {
        // The hash first, so that it cannot reuse pages the ART's structures freed.
        let before = resident_bytes();
        let hash = PartitionedHashMapping::new(nbuffers);
        for i in 0..nbuffers {
            hash.insert(tag_of(i, nbuffers), i).unwrap().unwrap();
        }
        let hash_filled = resident_bytes().saturating_sub(before);
        let before = resident_bytes();
        let art = ArtMapping::new(nbuffers);
        let created = resident_bytes().saturating_sub(before);
        for i in 0..nbuffers {
            art.insert(tag_of(i, nbuffers), i).unwrap().unwrap();
        }
        let filled = resident_bytes().saturating_sub(before);
        let (_, carved) = art.node_bytes();
        println!("| {nbuffers} | {} MiB | {} MiB | {} MiB | {} MiB |", carved >> 20, created >> 20, filled >> 20, hash_filled >> 20);
    }
}


//! Sequential-scan benchmark: `read_buffer` per block against `read_buffers`
//! in batches of `READ_BATCH_BLOCKS_MAX`, both through a bulk-read ring on a
//! 16 MB pool, over a 320 MB relation that sits in the OS page cache.
//!
//! `cargo test -p weft-storage --release --test bench_scan -- --ignored --nocapture`
//! (`WEFT_BENCH_BLOCKS` and `WEFT_BENCH_ROUNDS` override the size and rounds.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use weft_storage::page;
use weft_storage::{
    BufferAccessStrategy, BufferMappingKind, BufferPool, BufferPoolConfig, BufferTag, ForkNumber, Page,
    RelFileLocator, StorageManager, PAGE_SIZE, READ_BATCH_BLOCKS_MAX,
};

const POOL_BYTES: usize = 16 * 1024 * 1024;

fn env_or(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn fresh_pool(smgr: &Arc<StorageManager>) -> Arc<BufferPool> {
    BufferPool::new(smgr.clone(), BufferPoolConfig { shared_buffers_bytes: POOL_BYTES, mapping: BufferMappingKind::Hash })
}

/// What a scan does with each page: count its items (touches the header only).
fn visit(p: &Page) -> u64 {
    page::item_count(p) as u64
}

fn scan_single(pool: &BufferPool, r: RelFileLocator, blocks: u32) -> u64 {
    let mut ring = BufferAccessStrategy::bulk_read();
    let mut items = 0;
    for block in 0..blocks {
        let buffer = pool.read_buffer(BufferTag::new(r, ForkNumber::Main, block), Some(&mut ring)).unwrap();
        items += visit(&buffer.read());
    }
    items
}

fn scan_batched(pool: &BufferPool, r: RelFileLocator, blocks: u32) -> u64 {
    let mut ring = BufferAccessStrategy::bulk_read();
    let mut items = 0;
    let mut first = 0;
    while first < blocks {
        let count = READ_BATCH_BLOCKS_MAX.min(blocks - first);
        let batch = pool.read_buffers(r, ForkNumber::Main, first, count, Some(&mut ring)).unwrap();
        for buffer in &batch {
            items += visit(&buffer.read());
        }
        first += count;
    }
    items
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

#[test]
#[ignore = "benchmark: run in --release with --ignored --nocapture"]
fn bench_scan() {
    let blocks = env_or("WEFT_BENCH_BLOCKS", 40_000);
    let rounds = env_or("WEFT_BENCH_ROUNDS", 5);
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    let r = RelFileLocator::new(1663, 5, 16384);
    smgr.create(r, ForkNumber::Main).unwrap();
    let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    for block in 0..blocks {
        p.fill(0);
        page::init(&mut p, 0);
        let item = [(block % 251) as u8; 100];
        while page::add_item(&mut p, &item).is_some() {}
        page::set_checksum(&mut p, block);
        smgr.write_block(r, ForkNumber::Main, block, &p).unwrap();
    }
    let expected = page::item_count(&p) as u64 * blocks as u64;
    // Warm the page cache and both code paths.
    assert_eq!(scan_single(&fresh_pool(&smgr), r, blocks), expected);
    assert_eq!(scan_batched(&fresh_pool(&smgr), r, blocks), expected);

    let (mut single, mut batched) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // WEFT_BENCH_ONLY=single|batched runs one side (for profiling).
        let only = std::env::var("WEFT_BENCH_ONLY").unwrap_or_default();
        for batch in [round % 2 == 1, round % 2 == 0] {
            if (only == "single" && batch) || (only == "batched" && !batch) {
                continue;
            }
            let pool = fresh_pool(&smgr);
            let start = Instant::now();
            let items = if batch { scan_batched(&pool, r, blocks) } else { scan_single(&pool, r, blocks) };
            let elapsed = start.elapsed();
            assert_eq!(items, expected);
            assert_eq!(pool.stats().reads, blocks as u64);
            if batch { batched.push(elapsed) } else { single.push(elapsed) }
        }
    }
    let mb = blocks as f64 * PAGE_SIZE as f64 / (1024.0 * 1024.0);
    let report = |name: &str, times: &[Duration]| {
        let m = median(times.to_vec());
        println!(
            "{name:<28} median {:>8.1} ms  {:>6.0} MB/s  {:>5.0} ns/block  (runs: {:?})",
            m.as_secs_f64() * 1e3,
            mb / m.as_secs_f64(),
            m.as_secs_f64() * 1e9 / blocks as f64,
            times.iter().map(|t| format!("{:.1}", t.as_secs_f64() * 1e3)).collect::<Vec<_>>()
        );
        m
    };
    println!("scan of {blocks} blocks ({mb:.0} MB), 16 MB pool, bulk-read ring, {rounds} rounds alternating");
    let s = report("read_buffer per block", &single);
    let b = report(&format!("read_buffers x{READ_BATCH_BLOCKS_MAX}"), &batched);
    if !s.is_zero() && !b.is_zero() {
        println!("batched / single = {:.3}", b.as_secs_f64() / s.as_secs_f64());
    }
}

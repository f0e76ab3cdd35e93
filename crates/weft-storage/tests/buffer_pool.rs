//! The buffer pool: a concurrent stress test against a model, rings, pin
//! exhaustion, corruption, concurrent extension.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use weft_common::SqlState;
use weft_storage::page;
use weft_storage::{
    BufferAccessStrategy, BufferPool, BufferTag, ForkNumber, Page,
    RelFileLocator, StorageManager, PAGE_SIZE, READ_BATCH_BLOCKS_MAX,
};

#[macro_use]
mod common;
use common::{pool_with, BufferMappingKind, rel, Xorshift};



/// Copies of the stamp in item 1: a torn or half-copied page shows up as a mismatch.
const STAMP_COPIES: usize = 64;

/// Puts `stamp` in item 1, initialising a new page first.
fn stamp_page(p: &mut Page, stamp: u64) {
    let bytes: Vec<u8> = std::iter::repeat_n(stamp.to_le_bytes(), STAMP_COPIES).flatten().collect();
    if page::is_new(p) {
        page::init(p, 8);
        page::add_item(p, &bytes).unwrap();
    } else {
        // Copy by copy, so a concurrent reader of the bytes would see a mix.
        let item = page::item_mut(p, 1).unwrap();
        for chunk in item.chunks_exact_mut(8) {
            chunk.copy_from_slice(&stamp.to_le_bytes());
        }
    }
}

fn page_stamp(p: &Page) -> Option<u64> {
    if page::is_new(p) {
        return None;
    }
    let item = page::item(p, 1).expect("stamped page has item 1");
    assert_eq!(item.len(), 8 * STAMP_COPIES);
    let first = u64::from_le_bytes(item[..8].try_into().unwrap());
    for chunk in item.chunks_exact(8) {
        assert_eq!(u64::from_le_bytes(chunk.try_into().unwrap()), first, "torn stamp");
    }
    Some(first)
}

/// Writes `blocks` stamped pages straight through the storage manager.
fn write_relation(smgr: &StorageManager, r: RelFileLocator, blocks: u32, stamp_base: u64) {
    smgr.create(r, ForkNumber::Main).unwrap();
    let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    for block in 0..blocks {
        p.fill(0);
        stamp_page(&mut p, stamp_base + block as u64);
        page::set_checksum(&mut p, block);
        smgr.write_block(r, ForkNumber::Main, block, &p).unwrap();
    }
}


const STRESS_RELATIONS: usize = 3;
const STRESS_BLOCKS: u32 = 64;
const STRESS_BLOCKS_MAX: u32 = 96;
const STRESS_THREADS: u64 = 8;
const STRESS_OPS_PER_THREAD: u64 = 4000;

/// `WEFT_STRESS_OPS` overrides the operations per thread (for long runs in release).
fn stress_ops_per_thread() -> u64 {
    std::env::var("WEFT_STRESS_OPS").ok().and_then(|v| v.parse().ok()).unwrap_or(STRESS_OPS_PER_THREAD)
}

struct Stress {
    smgr: Arc<StorageManager>,
    pool: Arc<BufferPool>,
    /// Stands in for relation locks: ordinary work shares, DROP/TRUNCATE excludes.
    rel_locks: Vec<RwLock<()>>,
    /// (relation, block) → latest stamp; updated under the page's exclusive lock.
    model: Mutex<HashMap<(usize, u32), u64>>,
    next_stamp: AtomicU64,
}

impl Stress {
    fn check(&self, r: usize, block: u32, p: &Page) {
        let expected = self.model.lock().get(&(r, block)).copied();
        if page_stamp(p) != expected {
            let mut disk: Box<Page> = Box::new([0u8; PAGE_SIZE]);
            let on_disk = self.smgr.read_block(rel(r as u32), ForkNumber::Main, block, &mut disk).map(|()| page_stamp(&disk));
            panic!(
                "relation {r} block {block}: page has {:?}, model {expected:?}; on disk {on_disk:?}, file blocks {:?}, pool blocks {:?}",
                page_stamp(p),
                self.smgr.nblocks(rel(r as u32), ForkNumber::Main),
                self.pool.nblocks(rel(r as u32), ForkNumber::Main),
            );
        }
    }

    fn run_thread(&self, seed: u64) {
        let mut rng = Xorshift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(1));
        let mut ring = BufferAccessStrategy::bulk_read();
        let skip: Vec<u64> = std::env::var("WEFT_SKIP_OPS")
            .unwrap_or_default()
            .split(',')
            .filter_map(|v| v.parse().ok())
            .collect();
        for _ in 0..stress_ops_per_thread() {
            let r = rng.below(STRESS_RELATIONS as u64) as usize;
            let locator = rel(r as u32);
            let dice = rng.below(100);
            if skip.contains(&dice) {
                continue;
            }
            if dice >= 97 {
                self.exclusive_op(r, dice, &mut rng);
                continue;
            }
            let _shared = self.rel_locks[r].read();
            let n = self.pool.nblocks(locator, ForkNumber::Main).unwrap();
            let block = if n == 0 { 0 } else { rng.below(n as u64) as u32 };
            let tag = BufferTag::new(locator, ForkNumber::Main, block);
            match dice {
                _ if n == 0 || (dice < 6 && n < STRESS_BLOCKS_MAX) => {
                    let buffer = self.pool.extend(locator, ForkNumber::Main, None).unwrap();
                    let mut p = buffer.write();
                    // Another thread may already have written the new block: it is
                    // visible in nblocks as soon as extend() allocates it.
                    self.check(r, buffer.block_number(), &p);
                    let stamp = self.next_stamp.fetch_add(1, Ordering::Relaxed);
                    stamp_page(&mut p, stamp);
                    self.model.lock().insert((r, buffer.block_number()), stamp);
                }
                0..=49 => {
                    let strategy = if dice < 10 { Some(&mut ring) } else { None };
                    let buffer = self.pool.read_buffer(tag, strategy).unwrap();
                    self.check(r, block, &buffer.read());
                }
                50..=89 => {
                    let buffer = self.pool.read_buffer(tag, None).unwrap();
                    let mut p = buffer.write();
                    self.check(r, block, &p);
                    let stamp = self.next_stamp.fetch_add(1, Ordering::Relaxed);
                    stamp_page(&mut p, stamp);
                    self.model.lock().insert((r, block), stamp);
                }
                90..=94 => self.pool.flush_relation(locator).unwrap(),
                _ => self.pool.flush_all().unwrap(),
            }
        }
    }

    /// Batched reads of random ranges (some crossing the end of the
    /// relation), with and without a ring, checked page by page.
    fn run_batch_reader(&self, seed: u64) {
        let mut rng = Xorshift(seed.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(7));
        let mut ring = BufferAccessStrategy::bulk_read();
        for op in 0..stress_ops_per_thread() / 4 {
            let r = rng.below(STRESS_RELATIONS as u64) as usize;
            let locator = rel(r as u32);
            let _shared = self.rel_locks[r].read();
            let n = self.pool.nblocks(locator, ForkNumber::Main).unwrap();
            let first = rng.below(n as u64 + 4) as u32;
            let count = 1 + rng.below(READ_BATCH_BLOCKS_MAX as u64) as u32;
            let strategy = if op % 2 == 0 { Some(&mut ring) } else { None };
            let buffers = self.pool.read_buffers(locator, ForkNumber::Main, first, count, strategy).unwrap();
            assert_eq!(buffers.len(), count as usize);
            for (i, buffer) in buffers.iter().enumerate() {
                assert_eq!(buffer.block_number(), first + i as u32);
                self.check(r, buffer.block_number(), &buffer.read());
            }
        }
    }

    /// DROP-like work under the relation's exclusive lock.
    fn exclusive_op(&self, r: usize, dice: u64, rng: &mut Xorshift) {
        let locator = rel(r as u32);
        let _exclusive = self.rel_locks[r].write();
        match dice {
            97 => {
                // Write out, forget, and the pages must come back from disk.
                self.pool.flush_relation(locator).unwrap();
                self.pool.drop_relation_buffers(locator);
            }
            98 => {
                let n = self.pool.nblocks(locator, ForkNumber::Main).unwrap();
                let keep = rng.below(n as u64 + 1) as u32;
                self.pool.truncate_relation(locator, ForkNumber::Main, keep).unwrap();
                self.model.lock().retain(|&(rr, b), _| rr != r || b < keep);
            }
            _ if rng.below(4) != 0 => {
                // DROP and re-create: dirty buffers must be forgotten, not written.
                self.pool.drop_relation_buffers(locator);
                self.smgr.unlink(locator).unwrap();
                self.smgr.create(locator, ForkNumber::Main).unwrap();
                self.model.lock().retain(|&(rr, _), _| rr != r);
            }
            _ => {
                // DROP of two tables in one statement, re-created; locks in index order.
                drop(_exclusive);
                let other = (r + 1 + rng.below(STRESS_RELATIONS as u64 - 1) as usize) % STRESS_RELATIONS;
                let (low, high) = (r.min(other), r.max(other));
                let _first = self.rel_locks[low].write();
                let _second = self.rel_locks[high].write();
                let pair = [rel(low as u32), rel(high as u32)];
                self.pool.drop_relations_buffers(&pair);
                for locator in pair {
                    self.smgr.unlink(locator).unwrap();
                    self.smgr.create(locator, ForkNumber::Main).unwrap();
                }
                self.model.lock().retain(|&(rr, _), _| rr != low && rr != high);
            }
        }
    }
}

/// Runs `STRESS_THREADS` threads on a pool of `frames`, the first
/// `batch_readers` of them doing batched reads, the others the usual mix;
/// checks the pool, then rereads everything from disk against the model.
fn stress_against_model(frames: usize, batch_readers: u64, kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    let pool = pool_with(&smgr, frames, kind);
    let stress = Stress {
        smgr: smgr.clone(),
        pool: pool.clone(),
        rel_locks: (0..STRESS_RELATIONS).map(|_| RwLock::new(())).collect(),
        model: Mutex::new(HashMap::new()),
        next_stamp: AtomicU64::new(1_000_000),
    };
    for r in 0..STRESS_RELATIONS {
        write_relation(&smgr, rel(r as u32), STRESS_BLOCKS, (r as u64) << 20);
        let mut model = stress.model.lock();
        for block in 0..STRESS_BLOCKS {
            model.insert((r, block), ((r as u64) << 20) + block as u64);
        }
    }
    std::thread::scope(|s| {
        for t in 0..STRESS_THREADS {
            let stress = &stress;
            if t < batch_readers {
                s.spawn(move || stress.run_batch_reader(t));
            } else {
                s.spawn(move || stress.run_thread(t));
            }
        }
    });
    pool.check_invariants(true).unwrap();
    let stats = pool.stats();
    assert!(stats.hits > 100 && stats.invalidation_visits > 0, "{stats:?}");
    if frames < STRESS_RELATIONS * STRESS_BLOCKS_MAX as usize {
        assert!(stats.evictions > 50 && stats.writes > 100, "{stats:?}");
    }

    pool.flush_all().unwrap();
    let sizes: Vec<u32> =
        (0..STRESS_RELATIONS).map(|r| pool.nblocks(rel(r as u32), ForkNumber::Main).unwrap()).collect();
    drop(pool);
    // Reread everything from disk through a fresh storage manager and pool.
    let smgr = StorageManager::open(dir.path()).unwrap();
    let fresh = pool_with(&smgr, 16, kind);
    let model = stress.model.lock();
    for (r, &size) in sizes.iter().enumerate() {
        let locator = rel(r as u32);
        assert_eq!(fresh.nblocks(locator, ForkNumber::Main).unwrap(), size, "relation {r} size on disk");
        for block in 0..size {
            let buffer = fresh.read_buffer(BufferTag::new(locator, ForkNumber::Main, block), None).unwrap();
            assert_eq!(page_stamp(&buffer.read()), model.get(&(r, block)).copied(), "relation {r} block {block}");
        }
        assert!(model.keys().all(|&(rr, b)| rr != r || b < size), "model has blocks past relation {r}'s end");
    }
    fresh.check_invariants(true).unwrap();
}

fn concurrent_stress_against_model(kind: BufferMappingKind) {
    stress_against_model(16, 0, kind);
}

/// A pool larger than the data: no evictions, but drop and truncate of a
/// small relation take the hash mapping's per-block lookups
/// (`NBuffers / 32` = 128 blocks > `STRESS_BLOCKS_MAX`).
fn concurrent_stress_large_pool(kind: BufferMappingKind) {
    stress_against_model(4096, 2, kind);
}

/// Four threads batch-read overlapping ranges (up to `READ_BATCH_BLOCKS_MAX`
/// pins each, hence the larger pool, still smaller than the relations) while
/// four others write, extend, flush, drop and truncate.
fn concurrent_batch_reads_against_model(kind: BufferMappingKind) {
    stress_against_model(96, 4, kind);
}

fn bulk_read_ring_spares_hot_pages(kind: BufferMappingKind) {
    const HOT: u32 = 100;
    const BIG: u32 = 1000;
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), HOT, 0);
    write_relation(&smgr, rel(1), BIG, 1 << 20);
    let resident_hot_after_scan = |strategy: Option<BufferAccessStrategy>| {
        let pool = pool_with(&smgr, 256, kind);
        for _ in 0..2 {
            for block in 0..HOT {
                pool.read_buffer(BufferTag::new(rel(0), ForkNumber::Main, block), None).unwrap();
            }
        }
        let mut strategy = strategy;
        for block in 0..BIG {
            let buffer = pool.read_buffer(BufferTag::new(rel(1), ForkNumber::Main, block), strategy.as_mut()).unwrap();
            assert_eq!(page_stamp(&buffer.read()), Some((1 << 20) + block as u64));
        }
        pool.check_invariants(true).unwrap();
        (0..HOT).filter(|&b| pool.is_resident(BufferTag::new(rel(0), ForkNumber::Main, b))).count()
    };
    let with_ring = resident_hot_after_scan(Some(BufferAccessStrategy::bulk_read()));
    assert!(with_ring >= 95, "only {with_ring} of {HOT} hot pages survived a ring scan");
    let without_ring = resident_hot_after_scan(None);
    assert!(without_ring <= 10, "{without_ring} hot pages survived a scan without a ring");
}

fn bulk_write_ring_spares_hot_pages(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 100, 0);
    smgr.create(rel(1), ForkNumber::Main).unwrap();
    let pool = pool_with(&smgr, 256, kind);
    for block in 0..100 {
        pool.read_buffer(BufferTag::new(rel(0), ForkNumber::Main, block), None).unwrap();
        pool.read_buffer(BufferTag::new(rel(0), ForkNumber::Main, block), None).unwrap();
    }
    let mut ring = BufferAccessStrategy::bulk_write();
    for i in 0..600u64 {
        let buffer = pool.extend(rel(1), ForkNumber::Main, Some(&mut ring)).unwrap();
        stamp_page(&mut buffer.write(), i);
    }
    let resident = (0..100).filter(|&b| pool.is_resident(BufferTag::new(rel(0), ForkNumber::Main, b))).count();
    assert!(resident >= 95, "only {resident} hot pages survived a bulk load");
    pool.flush_all().unwrap();
    assert_eq!(smgr.nblocks(rel(1), ForkNumber::Main).unwrap(), 600);
    for block in (0..600).step_by(37) {
        let buffer = pool.read_buffer(BufferTag::new(rel(1), ForkNumber::Main, block), None).unwrap();
        assert_eq!(page_stamp(&buffer.read()), Some(block as u64));
    }
}

fn all_buffers_pinned_is_an_error(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 20, 0);
    let pool = pool_with(&smgr, 16, kind);
    let tag = |b| BufferTag::new(rel(0), ForkNumber::Main, b);
    let mut pins: Vec<_> = (0..16).map(|b| pool.read_buffer(tag(b), None).unwrap()).collect();
    let err = pool.read_buffer(tag(16), None).unwrap_err();
    assert_eq!(err.sqlstate, SqlState("53400"));
    assert_eq!(err.message, "no unpinned buffers available");
    assert!(pool.extend(rel(0), ForkNumber::Main, None).is_err());
    // A page already in the pool can still be pinned again.
    let again = pool.read_buffer(tag(3), None).unwrap();
    assert_eq!(page_stamp(&again.read()), Some(3));
    pins.truncate(15);
    let buffer = pool.read_buffer(tag(16), None).unwrap();
    assert_eq!(page_stamp(&buffer.read()), Some(16));
}

fn corrupt_page_read_through_pool_names_file_and_block(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 4, 0);
    let path = smgr.file_path(rel(0), ForkNumber::Main);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[3 * PAGE_SIZE + 100] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let pool = pool_with(&smgr, 16, kind);
    let tag = BufferTag::new(rel(0), ForkNumber::Main, 3);
    for _ in 0..2 {
        let err = pool.read_buffer(tag, None).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::DATA_CORRUPTED);
        assert_eq!(err.message, format!("invalid page in block 3 of relation {}", path.display()));
    }
    assert!(!pool.is_resident(tag));
    pool.read_buffer(BufferTag::new(rel(0), ForkNumber::Main, 2), None).unwrap();
    pool.check_invariants(true).unwrap();
}

fn concurrent_extend_allocates_distinct_blocks(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    smgr.create(rel(0), ForkNumber::Main).unwrap();
    let pool = pool_with(&smgr, 16, kind);
    let mut blocks: Vec<u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                let pool = &pool;
                s.spawn(move || {
                    (0..50u64)
                        .map(|i| {
                            let buffer = pool.extend(rel(0), ForkNumber::Main, None).unwrap();
                            stamp_page(&mut buffer.write(), t * 1000 + i);
                            buffer.block_number()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    blocks.sort_unstable();
    assert_eq!(blocks, (0..400).collect::<Vec<_>>());
    assert_eq!(pool.nblocks(rel(0), ForkNumber::Main).unwrap(), 400);
    pool.flush_all().unwrap();
    assert_eq!(smgr.nblocks(rel(0), ForkNumber::Main).unwrap(), 400);
    for block in 0..400 {
        let buffer = pool.read_buffer(BufferTag::new(rel(0), ForkNumber::Main, block), None).unwrap();
        assert!(page_stamp(&buffer.read()).is_some(), "block {block} lost its stamp");
    }
}

fn dropped_buffers_are_not_written(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 4, 0);
    let pool = pool_with(&smgr, 16, kind);
    let tag = BufferTag::new(rel(0), ForkNumber::Main, 1);
    stamp_page(&mut pool.read_buffer(tag, None).unwrap().write(), 777);
    pool.extend(rel(0), ForkNumber::Main, None).unwrap();
    assert_eq!(pool.nblocks(rel(0), ForkNumber::Main).unwrap(), 5);
    pool.drop_relation_buffers(rel(0));
    assert_eq!(pool.nblocks(rel(0), ForkNumber::Main).unwrap(), 4);
    pool.flush_all().unwrap();
    let buffer = pool.read_buffer(tag, None).unwrap();
    assert_eq!(page_stamp(&buffer.read()), Some(1));
    drop(buffer);
    pool.check_invariants(true).unwrap();
}

/// A write that lands while the page is being written out must leave it dirty
/// (PostgreSQL's BM_JUST_DIRTIED): after each round of racing writes and
/// flushes, one more flush must bring the disk up to the last write.
fn write_during_flush_keeps_the_page_dirty(kind: BufferMappingKind) {
    const ROUNDS: u64 = 500;
    const WRITES_PER_ROUND: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 1, 0);
    let pool = pool_with(&smgr, 16, kind);
    let tag = BufferTag::new(rel(0), ForkNumber::Main, 0);
    let barrier = std::sync::Barrier::new(3);
    let writing = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..ROUNDS {
                let buffer = pool.read_buffer(tag, None).unwrap();
                for i in 0..WRITES_PER_ROUND {
                    stamp_page(&mut buffer.write(), round * 1000 + i);
                    // Spread the writes over a few flushes.
                    for _ in 0..(i * 97 + round * 31) % 2000 {
                        std::hint::spin_loop();
                    }
                }
                drop(buffer);
                writing.store(false, Ordering::Release);
                barrier.wait(); // round written
                barrier.wait(); // round checked
                writing.store(true, Ordering::Release);
            }
        });
        s.spawn(|| {
            for _ in 0..ROUNDS {
                while writing.load(Ordering::Acquire) {
                    pool.write_relation_buffers(rel(0)).unwrap();
                }
                barrier.wait();
                barrier.wait();
            }
        });
        let mut disk: Box<Page> = Box::new([0u8; PAGE_SIZE]);
        let mut stale_rounds = Vec::new();
        for round in 0..ROUNDS {
            barrier.wait();
            pool.write_relation_buffers(rel(0)).unwrap();
            smgr.read_block(rel(0), ForkNumber::Main, 0, &mut disk).unwrap();
            // No panic here: the other threads would wait at the barrier forever.
            if page_stamp(&disk) != Some(round * 1000 + WRITES_PER_ROUND - 1) {
                stale_rounds.push(round);
            }
            barrier.wait();
        }
        assert!(stale_rounds.is_empty(), "disk missed the last write in rounds {stale_rounds:?}");
    });
}

both_mappings!(concurrent_stress_against_model, concurrent_stress_large_pool, concurrent_batch_reads_against_model, bulk_read_ring_spares_hot_pages, bulk_write_ring_spares_hot_pages, all_buffers_pinned_is_an_error, corrupt_page_read_through_pool_names_file_and_block, concurrent_extend_allocates_distinct_blocks, dropped_buffers_are_not_written, write_during_flush_keeps_the_page_dirty);

/// An ART pool whose every buffer holds a page of a different relation, over
/// and over (each eviction retires one inner tree and attaches another): the
/// node pool and the slots sized from shared_buffers never run out.
#[test]
fn art_pool_of_distinct_relations_never_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    let pool = pool_with(&smgr, 64, BufferMappingKind::Art);
    for r in 0..512u32 {
        write_relation(&smgr, rel(1000 + r), 1, r as u64);
    }
    for round in 0..3 {
        for r in 0..512u32 {
            let buffer = pool.read_buffer(BufferTag::new(rel(1000 + r), ForkNumber::Main, 0), None).unwrap();
            assert_eq!(page_stamp(&buffer.read()), Some(r as u64), "round {round}");
        }
    }
    pool.check_invariants(true).unwrap();
    pool.drop_relations_buffers(&(0..512).map(|r| rel(1000 + r)).collect::<Vec<_>>());
    pool.check_invariants(true).unwrap();
}

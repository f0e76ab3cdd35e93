//! `BufferPool::read_buffers`: same pages as `read_buffer` block by block,
//! across resident/non-resident mixes, the end of the file, corruption, pin
//! exhaustion, rings, and concurrent batches that must not read a page twice.


use weft_common::SqlState;
use weft_storage::page;
use weft_storage::{
    BufferAccessStrategy, BufferPool, BufferTag, ForkNumber, Page,
    RelFileLocator, StorageManager, PAGE_SIZE, READ_BATCH_BLOCKS_MAX,
};

#[macro_use]
mod common;
use common::{pool_with, BufferMappingKind, rel, Xorshift};



fn tag(r: RelFileLocator, block: u32) -> BufferTag {
    BufferTag::new(r, ForkNumber::Main, block)
}

/// A valid page whose one item is `stamp` repeated, plus `block` in the special space.
fn stamped_page(stamp: u64, block: u32) -> Box<Page> {
    let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    page::init(&mut p, 8);
    let item: Vec<u8> = std::iter::repeat_n(stamp.to_le_bytes(), 64).flatten().collect();
    page::add_item(&mut p, &item).unwrap();
    page::special_mut(&mut p)[..4].copy_from_slice(&block.to_le_bytes());
    p
}

fn stamp_of(p: &Page) -> Option<u64> {
    if page::is_new(p) {
        return None;
    }
    let item = page::item(p, 1).unwrap();
    Some(u64::from_le_bytes(item[..8].try_into().unwrap()))
}

fn write_relation(smgr: &StorageManager, r: RelFileLocator, blocks: u32, stamp_base: u64) {
    smgr.create(r, ForkNumber::Main).unwrap();
    for block in 0..blocks {
        let mut p = stamped_page(stamp_base + block as u64, block);
        page::set_checksum(&mut p, block);
        smgr.write_block(r, ForkNumber::Main, block, &p).unwrap();
    }
}

fn corrupt_block(smgr: &StorageManager, r: RelFileLocator, block: u32) {
    let path = smgr.file_path(r, ForkNumber::Main);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[block as usize * PAGE_SIZE + 200] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
}


/// Every range `first .. first + count` over a relation with some pages
/// resident (some of them dirty with changes not on disk) returns, block by
/// block, exactly what `read_buffer` returns in a pool set up the same way.
fn same_pages_as_read_buffer_for_mixed_ranges(kind: BufferMappingKind) {
    const BLOCKS: u32 = 80;
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), BLOCKS, 1000);
    let setup = |pool: &BufferPool, rng: &mut Xorshift| {
        for _ in 0..30 {
            let block = rng.below(BLOCKS as u64 + 8) as u32;
            let buffer = pool.read_buffer(tag(rel(0), block), None).unwrap();
            if rng.below(3) == 0 {
                let mut p = buffer.write();
                *p = *stamped_page(900_000 + block as u64, block);
            }
        }
    };
    let mut rng = Xorshift(0x1234_5678);
    for round in 0..40 {
        let seed = 7 + round;
        // Big enough that nothing is evicted: the two pools stay comparable.
        let batched = pool_with(&smgr, 256, kind);
        let single = pool_with(&smgr, 256, kind);
        setup(&batched, &mut Xorshift(seed));
        setup(&single, &mut Xorshift(seed));
        let before = batched.stats();
        let mut expected_reads = 0;
        let mut expected_hits = 0;
        let mut ranges = Vec::new();
        let mut first = rng.below(4) as u32;
        while first < BLOCKS + 20 {
            let count = 1 + rng.below(READ_BATCH_BLOCKS_MAX as u64) as u32;
            ranges.push((first, count));
            first += count + rng.below(3) as u32;
        }
        for &(first, count) in &ranges {
            for block in first..first + count {
                if batched.is_resident(tag(rel(0), block)) {
                    expected_hits += 1;
                } else {
                    expected_reads += 1;
                }
            }
            let strategy = if round % 2 == 0 { Some(BufferAccessStrategy::bulk_read()) } else { None };
            let mut strategy = strategy;
            let buffers = batched.read_buffers(rel(0), ForkNumber::Main, first, count, strategy.as_mut()).unwrap();
            assert_eq!(buffers.len(), count as usize);
            for (i, buffer) in buffers.iter().enumerate() {
                let block = first + i as u32;
                assert_eq!(buffer.tag(), tag(rel(0), block));
                let reference = single.read_buffer(tag(rel(0), block), None).unwrap();
                assert!(buffer.read()[..] == reference.read()[..], "round {round}: block {block} differs");
                if block < BLOCKS {
                    assert!(stamp_of(&buffer.read()).is_some(), "block {block}");
                }
            }
        }
        let after = batched.stats();
        assert_eq!(after.reads - before.reads, expected_reads, "round {round}");
        assert_eq!(after.hits - before.hits, expected_hits, "round {round}");
        batched.check_invariants(true).unwrap();
        single.check_invariants(true).unwrap();
    }
}

fn ranges_crossing_the_end_read_new_pages(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 20, 0);
    let pool = pool_with(&smgr, 64, kind);
    let buffers = pool.read_buffers(rel(0), ForkNumber::Main, 12, 16, None).unwrap();
    for (i, buffer) in buffers.iter().enumerate() {
        let block = 12 + i as u32;
        let p = buffer.read();
        if block < 20 {
            assert_eq!(stamp_of(&p), Some(block as u64));
            assert_eq!(page::special(&p)[..4], block.to_le_bytes());
        } else {
            assert!(p.iter().all(|&b| b == 0), "block {block} past the end is not a new page");
        }
    }
    drop(buffers);
    // Entirely past the end, and an empty batch.
    let buffers = pool.read_buffers(rel(0), ForkNumber::Main, 100, 5, None).unwrap();
    assert!(buffers.iter().all(|b| page::is_new(&b.read())));
    assert!(pool.read_buffers(rel(0), ForkNumber::Main, 3, 0, None).unwrap().is_empty());
    drop(buffers);
    // A partial last block (a torn extension) fails its checksum like read_block does.
    let path = smgr.file_path(rel(0), ForkNumber::Main);
    let file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut &file, &[1u8; 100]).unwrap();
    let smgr2 = StorageManager::open(dir.path()).unwrap();
    let fresh = pool_with(&smgr2, 64, kind);
    let mut single = Box::new([0u8; PAGE_SIZE]);
    let single_err = smgr2.read_block(rel(0), ForkNumber::Main, 20, &mut single).unwrap_err();
    let err = fresh.read_buffers(rel(0), ForkNumber::Main, 18, 4, None).unwrap_err();
    assert_eq!(err.message, single_err.message);
    assert!(fresh.is_resident(tag(rel(0), 19)));
    fresh.check_invariants(true).unwrap();
    pool.check_invariants(true).unwrap();
}

fn corrupt_block_in_a_batch_names_it_and_leaves_nothing_pinned(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 40, 0);
    corrupt_block(&smgr, rel(0), 21);
    let path = smgr.file_path(rel(0), ForkNumber::Main);
    let pool = pool_with(&smgr, 64, kind);
    // Make some of the batch resident, so the corrupt block sits in a run in the middle.
    pool.read_buffer(tag(rel(0), 18), None).unwrap();
    pool.read_buffer(tag(rel(0), 25), None).unwrap();
    let mut ring = BufferAccessStrategy::bulk_read();
    for attempt in 0..2 {
        let err = pool.read_buffers(rel(0), ForkNumber::Main, 16, 16, Some(&mut ring)).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::DATA_CORRUPTED, "attempt {attempt}");
        assert_eq!(err.message, format!("invalid page in block 21 of relation {}", path.display()));
        pool.check_invariants(true).unwrap();
        assert!(!pool.is_resident(tag(rel(0), 21)));
    }
    // The pages read before it, and with it in one run (19..=24, between
    // the resident 18 and 25), are valid and resident; the batch stops there.
    for block in (16..25).filter(|&b| b != 21) {
        assert!(pool.is_resident(tag(rel(0), block)), "block {block}");
    }
    let ok = pool.read_buffers(rel(0), ForkNumber::Main, 16, 5, Some(&mut ring)).unwrap();
    assert_eq!(ok.iter().map(|b| stamp_of(&b.read())).collect::<Vec<_>>(), (16..21).map(Some).collect::<Vec<_>>());
    drop(ok);
    // A single read of it still fails the same way; a batch after the block is fine.
    assert_eq!(pool.read_buffer(tag(rel(0), 21), None).unwrap_err().message, err_message(&path, 21));
    assert_eq!(pool.read_buffers(rel(0), ForkNumber::Main, 22, 16, None).unwrap().len(), 16);
    pool.check_invariants(true).unwrap();
}

fn err_message(path: &std::path::Path, block: u32) -> String {
    format!("invalid page in block {block} of relation {}", path.display())
}

fn missing_file_is_an_error_without_pins(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    let pool = pool_with(&smgr, 16, kind);
    let err = pool.read_buffers(rel(9), ForkNumber::Main, 0, 4, None).unwrap_err();
    assert_eq!(err.sqlstate, SqlState::UNDEFINED_FILE);
    assert!(err.message.contains(&smgr.file_path(rel(9), ForkNumber::Main).display().to_string()), "{}", err.message);
    pool.check_invariants(true).unwrap();
}

fn pin_exhaustion_mid_batch_gives_back_the_pins(kind: BufferMappingKind) {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 64, 0);
    let pool = pool_with(&smgr, 16, kind);
    let held: Vec<_> = (40..50).map(|b| pool.read_buffer(tag(rel(0), b), None).unwrap()).collect();
    let err = pool.read_buffers(rel(0), ForkNumber::Main, 0, 16, None).unwrap_err();
    assert_eq!(err.sqlstate, SqlState("53400"));
    pool.check_invariants(false).unwrap();
    drop(held);
    pool.check_invariants(true).unwrap();
    let buffers = pool.read_buffers(rel(0), ForkNumber::Main, 0, 16, None).unwrap();
    assert_eq!(buffers.iter().map(|b| stamp_of(&b.read()).unwrap()).collect::<Vec<_>>(), (0..16).collect::<Vec<_>>());
}

#[test]
#[should_panic(expected = "read_buffers: count 17")]
fn batch_larger_than_the_maximum_panics() {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), 1, 0);
    let pool = pool_with(&smgr, 64, BufferMappingKind::Hash);
    let _ = pool.read_buffers(rel(0), ForkNumber::Main, 0, READ_BATCH_BLOCKS_MAX + 1, None);
}

/// A batched scan with a bulk-read ring, holding each batch while reading
/// the next, stays in its ring and spares pages other sessions use.
fn batched_ring_scan_spares_hot_pages(kind: BufferMappingKind) {
    const HOT: u32 = 100;
    const BIG: u32 = 1000;
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), HOT, 0);
    write_relation(&smgr, rel(1), BIG, 1 << 20);
    let pool = pool_with(&smgr, 256, kind);
    for _ in 0..2 {
        for block in 0..HOT {
            pool.read_buffer(tag(rel(0), block), None).unwrap();
        }
    }
    let mut ring = BufferAccessStrategy::bulk_read();
    let mut previous = Vec::new();
    for first in (0..BIG).step_by(READ_BATCH_BLOCKS_MAX as usize) {
        let count = READ_BATCH_BLOCKS_MAX.min(BIG - first);
        let batch = pool.read_buffers(rel(1), ForkNumber::Main, first, count, Some(&mut ring)).unwrap();
        for (i, buffer) in batch.iter().enumerate() {
            assert_eq!(stamp_of(&buffer.read()), Some((1 << 20) + (first as u64 + i as u64)));
        }
        previous = batch; // the previous batch is still pinned while the next is read
    }
    drop(previous);
    pool.check_invariants(true).unwrap();
    let resident = (0..HOT).filter(|&b| pool.is_resident(tag(rel(0), b))).count();
    assert!(resident >= 95, "only {resident} of {HOT} hot pages survived a batched ring scan");
    assert!(ring.ring_buffers() >= 2 * READ_BATCH_BLOCKS_MAX as usize);
}

/// Threads batch-reading overlapping ranges at different offsets share the
/// I/O: with no evictions, every block is read from disk exactly once.
fn concurrent_batches_read_each_block_once(kind: BufferMappingKind) {
    const BLOCKS: u32 = 600;
    const THREADS: u32 = 4;
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    write_relation(&smgr, rel(0), BLOCKS, 0);
    for round in 0..5u32 {
        let pool = pool_with(&smgr, 1024, kind);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let pool = &pool;
                s.spawn(move || {
                    let mut rng = Xorshift(0x9e37_79b9 + (t + round * THREADS) as u64);
                    let mut first = t * 3 % 7;
                    while first < BLOCKS {
                        let count = (1 + rng.below(READ_BATCH_BLOCKS_MAX as u64) as u32).min(BLOCKS - first);
                        let batch = pool.read_buffers(rel(0), ForkNumber::Main, first, count, None).unwrap();
                        for (i, buffer) in batch.iter().enumerate() {
                            assert_eq!(stamp_of(&buffer.read()), Some(first as u64 + i as u64));
                        }
                        first += count;
                    }
                    // And the blocks skipped at the start, one by one.
                    for block in 0..t * 3 % 7 {
                        let buffer = pool.read_buffer(tag(rel(0), block), None).unwrap();
                        assert_eq!(stamp_of(&buffer.read()), Some(block as u64));
                    }
                });
            }
        });
        let stats = pool.stats();
        assert_eq!(stats.reads, BLOCKS as u64, "round {round}: {stats:?}");
        assert_eq!(stats.hits, (THREADS as u64 - 1) * BLOCKS as u64, "round {round}: {stats:?}");
        pool.check_invariants(true).unwrap();
    }
}

both_mappings!(same_pages_as_read_buffer_for_mixed_ranges, ranges_crossing_the_end_read_new_pages, corrupt_block_in_a_batch_names_it_and_leaves_nothing_pinned, missing_file_is_an_error_without_pins, pin_exhaustion_mid_batch_gives_back_the_pins, batched_ring_scan_spares_hot_pages, concurrent_batches_read_each_block_once);

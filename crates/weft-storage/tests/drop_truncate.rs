//! Drop and truncate through both page tables: the right buffers are
//! forgotten (and never written), the others stay, and the work done is
//! what each mapping promises: with the ART the relation's cached pages,
//! with the hash every descriptor, or one lookup per block when the
//! relation is small (`NBuffers / 32`, PostgreSQL's threshold).

use std::sync::Arc;

use weft_storage::page;
use weft_storage::{BufferPool, BufferTag, ForkNumber, Page, RelFileLocator, StorageManager, PAGE_SIZE};

#[macro_use]
mod common;
use common::{pool_with, rel, BufferMappingKind};

const FRAMES: usize = 1024;
/// `FRAMES / 32`: below it the hash mapping looks blocks up one by one.
const LOOKUP_LIMIT: u64 = 32;

fn stamped(stamp: u64, block: u32) -> Box<Page> {
    let mut p: Box<Page> = Box::new([0u8; PAGE_SIZE]);
    page::init(&mut p, 0);
    page::add_item(&mut p, &stamp.to_le_bytes()).unwrap();
    page::set_checksum(&mut p, block);
    p
}

fn stamp_of(p: &Page) -> Option<u64> {
    (!page::is_new(p)).then(|| u64::from_le_bytes(page::item(p, 1).unwrap().try_into().unwrap()))
}

fn write_fork(smgr: &StorageManager, r: RelFileLocator, fork: ForkNumber, blocks: u32, base: u64) {
    smgr.create(r, fork).unwrap();
    for block in 0..blocks {
        smgr.write_block(r, fork, block, &stamped(base + block as u64, block)).unwrap();
    }
}

/// Reads every block of the fork into the pool; dirties every third one.
fn load(pool: &BufferPool, r: RelFileLocator, fork: ForkNumber, blocks: u32) {
    for block in 0..blocks {
        let buffer = pool.read_buffer(BufferTag::new(r, fork, block), None).unwrap();
        if block % 3 == 0 {
            let mut p = buffer.write();
            *p = *stamped(7_000_000 + block as u64, block);
        }
    }
}

fn resident(pool: &BufferPool, r: RelFileLocator, fork: ForkNumber, blocks: u32) -> u32 {
    (0..blocks).filter(|&b| pool.is_resident(BufferTag::new(r, fork, b))).count() as u32
}

struct Fixture {
    _dir: tempfile::TempDir,
    smgr: Arc<StorageManager>,
    pool: Arc<BufferPool>,
}

/// rel(0): 20 main + 3 fsm blocks; rel(1): 10; rel(2): 5; rel(3): 200.
fn fixture(kind: BufferMappingKind) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let smgr = StorageManager::open(dir.path()).unwrap();
    let shapes = [(0, ForkNumber::Main, 20), (0, ForkNumber::Fsm, 3), (1, ForkNumber::Main, 10), (2, ForkNumber::Main, 5), (3, ForkNumber::Main, 200)];
    for &(r, fork, blocks) in &shapes {
        write_fork(&smgr, rel(r), fork, blocks, (r as u64) << 20);
    }
    let pool = pool_with(&smgr, FRAMES, kind);
    // The shortcut is off by default; the tests below expect it unless they say so.
    pool.set_drop_lookup_shortcut(true);
    for &(r, fork, blocks) in &shapes {
        load(&pool, rel(r), fork, blocks);
    }
    pool.check_invariants(true).unwrap();
    Fixture { _dir: dir, smgr, pool }
}

/// Visits expected from a drop or truncate of `blocks` cached blocks.
fn expected_visits(kind: BufferMappingKind, blocks: u64, shortcut: bool) -> u64 {
    match kind {
        BufferMappingKind::Hash if shortcut && blocks < LOOKUP_LIMIT => blocks,
        BufferMappingKind::Hash => FRAMES as u64,
        _ => blocks,
    }
}

fn drop_forgets_only_the_relation(kind: BufferMappingKind) {
    for shortcut in [true, false] {
        let f = fixture(kind);
        f.pool.set_drop_lookup_shortcut(shortcut);
        let before = f.pool.stats();
        f.pool.drop_relation_buffers(rel(0));
        let after = f.pool.stats();
        assert_eq!(after.invalidation_visits - before.invalidation_visits, expected_visits(kind, 23, shortcut));
        assert_eq!(after.writes, before.writes, "dropped dirty pages were written");
        assert_eq!(resident(&f.pool, rel(0), ForkNumber::Main, 20), 0);
        assert_eq!(resident(&f.pool, rel(0), ForkNumber::Fsm, 3), 0);
        assert_eq!(resident(&f.pool, rel(1), ForkNumber::Main, 10), 10);
        assert_eq!(resident(&f.pool, rel(3), ForkNumber::Main, 200), 200);
        f.pool.check_invariants(true).unwrap();

        // Many relations in one call: one pass (hash) or one tree each (ART).
        let before = f.pool.stats();
        f.pool.drop_relations_buffers(&[rel(1), rel(2), rel(9)]);
        let after = f.pool.stats();
        assert_eq!(after.invalidation_visits - before.invalidation_visits, expected_visits(kind, 15, shortcut));
        assert_eq!(resident(&f.pool, rel(1), ForkNumber::Main, 10), 0);
        assert_eq!(resident(&f.pool, rel(2), ForkNumber::Main, 5), 0);
        assert_eq!(resident(&f.pool, rel(3), ForkNumber::Main, 200), 200);
        f.pool.check_invariants(true).unwrap();

        // A big relation: the hash scans everything, the ART its 200 pages.
        let before = f.pool.stats();
        f.pool.drop_relations_buffers(&[rel(3)]);
        let after = f.pool.stats();
        assert_eq!(after.invalidation_visits - before.invalidation_visits, expected_visits(kind, 200, shortcut));
        assert_eq!(resident(&f.pool, rel(3), ForkNumber::Main, 200), 0);
        assert_eq!(f.pool.stats().writes, 0);
        f.pool.check_invariants(true).unwrap();

        // The files were not written: the pages come back as they were on disk.
        let buffer = f.pool.read_buffer(BufferTag::new(rel(1), ForkNumber::Main, 3), None).unwrap();
        assert_eq!(stamp_of(&buffer.read()), Some((1 << 20) + 3));
        drop(buffer);
        // Dropping again (nothing cached) visits nothing but the hash's scan.
        f.pool.drop_relation_buffers(rel(1));
        f.pool.drop_relation_buffers(rel(1));
        f.pool.check_invariants(true).unwrap();
        assert!(f.pool.stats().invalidation_visits > after.invalidation_visits);
        let _ = &f.smgr;
    }
}

fn truncate_forgets_the_tail(kind: BufferMappingKind) {
    let f = fixture(kind);
    let r = rel(3);
    let before = f.pool.stats();
    f.pool.truncate_relation(r, ForkNumber::Main, 150).unwrap();
    let visits = f.pool.stats().invalidation_visits - before.invalidation_visits;
    match kind {
        // 50 blocks >= 32: the hash scans every descriptor.
        BufferMappingKind::Hash => assert_eq!(visits, FRAMES as u64),
        // The ART lists the fork's 200 entries and invalidates those past 150.
        _ => assert_eq!(visits, 50),
    }
    assert_eq!(resident(&f.pool, r, ForkNumber::Main, 200), 150);
    assert_eq!(f.pool.nblocks(r, ForkNumber::Main).unwrap(), 150);
    assert_eq!(f.smgr.nblocks(r, ForkNumber::Main).unwrap(), 150);
    f.pool.check_invariants(true).unwrap();

    let before = f.pool.stats();
    f.pool.truncate_relation(r, ForkNumber::Main, 140).unwrap();
    assert_eq!(f.pool.stats().invalidation_visits - before.invalidation_visits, 10);
    assert_eq!(resident(&f.pool, r, ForkNumber::Main, 200), 140);
    // Other forks and relations untouched; truncating to 0 empties the fork.
    f.pool.truncate_relation(rel(0), ForkNumber::Fsm, 0).unwrap();
    assert_eq!(resident(&f.pool, rel(0), ForkNumber::Fsm, 3), 0);
    assert_eq!(resident(&f.pool, rel(0), ForkNumber::Main, 20), 20);
    f.pool.check_invariants(true).unwrap();
    // Blocks past the new end read as new pages; those before, as written.
    let buffer = f.pool.read_buffer(BufferTag::new(r, ForkNumber::Main, 145), None).unwrap();
    assert!(page::is_new(&buffer.read()));
    drop(buffer);
    let buffer = f.pool.read_buffer(BufferTag::new(r, ForkNumber::Main, 1), None).unwrap();
    assert_eq!(stamp_of(&buffer.read()), Some((3 << 20) + 1));
}

/// A block read past the end of its file (a new page) is still forgotten by
/// the hash mapping's per-block lookups: the bound covers mapped blocks, not
/// the file's size.
fn drop_finds_blocks_read_past_the_end(kind: BufferMappingKind) {
    let f = fixture(kind);
    let tag = BufferTag::new(rel(2), ForkNumber::Main, 25);
    drop(f.pool.read_buffer(tag, None).unwrap());
    assert!(f.pool.is_resident(tag));
    f.pool.drop_relation_buffers(rel(2));
    assert!(!f.pool.is_resident(tag));
    f.pool.check_invariants(true).unwrap();
}

both_mappings!(drop_forgets_only_the_relation, truncate_forgets_the_tail, drop_finds_blocks_read_past_the_end);

//! The B-tree against a model (a sorted `Vec` of entries): random bulk builds cut into
//! batches and ranges as a partitioned build cuts them, random inserts that split leaves,
//! internal pages and the root, range scans forward and backward with random prefix
//! bounds, equal-key visits, the checker after every step and on injected corruption,
//! and readers scanning while a writer inserts.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use weft_access::btree::{self, BTree, BTreeDesc, BTreeWriter, KeyColumn, LeafPacker, ScanDirection, TidWord};
use weft_access::Tid;
use weft_common::{DataType, Datum, SqlState};
use weft_storage::{page, BufferMappingKind, BufferPool, BufferPoolConfig, BufferTag, ForkNumber, RelFileLocator, StorageManager, PAGE_SIZE};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn pool(dir: &std::path::Path, frames: usize) -> Arc<BufferPool> {
    let smgr = StorageManager::open(dir).unwrap();
    BufferPool::new(smgr, BufferPoolConfig { shared_buffers_bytes: frames * PAGE_SIZE, mapping: BufferMappingKind::Hash })
}

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: n }
}

/// A random value of `ty`; `distinct` bounds how many different values appear.
fn value(rng: &mut Rng, ty: DataType, distinct: u64) -> Datum {
    if rng.below(12) == 0 {
        return Datum::Null;
    }
    let v = rng.below(distinct) as i64 - (distinct / 2) as i64;
    match ty {
        DataType::Int4 => Datum::Int4(v as i32),
        DataType::Int8 => Datum::Int8(v * 1_000_000_007),
        DataType::Float8 => match rng.below(20) {
            0 => Datum::Float8(f64::NAN),
            1 => Datum::Float8(-0.0),
            2 => Datum::Float8(f64::INFINITY),
            _ => Datum::Float8(v as f64 / 3.0),
        },
        DataType::Bool => Datum::Bool(v % 2 == 0),
        DataType::Text => {
            let long = if rng.below(10) == 0 { "x".repeat(300) } else { String::new() };
            Datum::Text(format!("k{long}{:05}", v.unsigned_abs()))
        }
        _ => unreachable!(),
    }
}

fn random_desc(rng: &mut Rng) -> BTreeDesc {
    let types = [DataType::Int4, DataType::Int8, DataType::Float8, DataType::Bool, DataType::Text];
    let n = 1 + rng.below(3) as usize;
    let columns: Vec<KeyColumn> = (0..n)
        .map(|_| {
            let descending = rng.below(3) == 0;
            KeyColumn {
                data_type: types[rng.below(types.len() as u64) as usize],
                descending,
                nulls_first: if rng.below(4) == 0 { !descending } else { descending },
            }
        })
        .collect();
    BTreeDesc::new(&columns).unwrap()
}

fn random_entries(rng: &mut Rng, desc: &BTreeDesc, count: usize, distinct: u64, first_block: u32) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let key: Vec<Datum> = desc.columns().iter().map(|c| value(rng, c.data_type, distinct)).collect();
            let tid = Tid { block: first_block + (i / 100) as u32, offset: (i % 100) as u16 + 1 };
            let mut out = Vec::new();
            desc.encode(&key, TidWord::new(tid, first_block > 0), &mut out).unwrap();
            out
        })
        .collect()
}

/// Build from sorted `entries`, packed by `packers` separate packers (ranges of a
/// partitioned build) whose pages are appended in several batches.
fn build(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc, entries: &[Vec<u8>], fillfactor: u8, packers: usize, rng: &mut Rng) {
    pool.smgr().create(r, ForkNumber::Main).unwrap();
    let mut writer = BTreeWriter::new(pool, r, desc).unwrap();
    let per = entries.len().div_ceil(packers.max(1)).max(1);
    for range in entries.chunks(per) {
        let mut packer = LeafPacker::new(desc, fillfactor);
        for e in range {
            packer.add(e).unwrap();
            if rng.below(500) == 0 {
                writer.append_leaves(packer.take_full_pages()).unwrap();
            }
        }
        writer.append_leaves(packer.finish()).unwrap();
    }
    let summary = writer.finish().unwrap();
    assert_eq!(summary.tuples, entries.len() as u64);
}

fn all_entries(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    btree::for_each_entry(pool, r, desc, |_, e| {
        out.push(e.to_vec());
        Ok(())
    })
    .unwrap();
    out
}

/// A random key prefix taken from an entry (or invented), for bounds.
fn random_prefix(rng: &mut Rng, desc: &BTreeDesc, model: &[Vec<u8>]) -> Vec<Datum> {
    let n = rng.below(desc.key_count() as u64 + 1) as usize;
    let key = if !model.is_empty() && rng.below(3) > 0 {
        desc.key_datums(&model[rng.below(model.len() as u64) as usize]).unwrap()
    } else {
        desc.columns().iter().map(|c| value(rng, c.data_type, 50)).collect()
    };
    key[..n].to_vec()
}

/// Where an entry lies relative to a prefix bound, by the model's own comparison.
fn prefix_cmp(desc: &BTreeDesc, entry: &[u8], prefix: &[Datum]) -> Ordering {
    let mut key = desc.key_datums(entry).unwrap();
    key.truncate(prefix.len());
    let mut a = Vec::new();
    let mut full: Vec<Datum> = key.clone();
    full.resize(desc.key_count(), Datum::Null);
    desc.encode(&full, TidWord(0), &mut a).unwrap();
    let mut b = Vec::new();
    let mut p: Vec<Datum> = prefix.to_vec();
    p.resize(desc.key_count(), Datum::Null);
    desc.encode(&p, TidWord(0), &mut b).unwrap();
    // Compare only the prefix columns: pad both with the same NULLs, same tid word.
    desc.compare(&a, &b)
}

fn check_scans(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc, model: &[Vec<u8>], rng: &mut Rng) {
    let tree = BTree::open(pool, r, desc);
    for _ in 0..20 {
        let bound = |rng: &mut Rng| match rng.below(3) {
            0 => Bound::Unbounded,
            1 => Bound::Included(random_prefix(rng, desc, model)),
            _ => Bound::Excluded(random_prefix(rng, desc, model)),
        };
        let lower = bound(rng);
        let upper = bound(rng);
        let expected: Vec<&Vec<u8>> = model
            .iter()
            .filter(|e| match &lower {
                Bound::Unbounded => true,
                Bound::Included(p) => prefix_cmp(desc, e, p) != Ordering::Less,
                Bound::Excluded(p) => prefix_cmp(desc, e, p) == Ordering::Greater,
            })
            .filter(|e| match &upper {
                Bound::Unbounded => true,
                Bound::Included(p) => prefix_cmp(desc, e, p) != Ordering::Greater,
                Bound::Excluded(p) => prefix_cmp(desc, e, p) == Ordering::Less,
            })
            .collect();
        for direction in [ScanDirection::Forward, ScanDirection::Backward] {
            let mut scan = tree.scan(lower.clone(), upper.clone(), direction).unwrap();
            let mut got = Vec::new();
            while let Some(e) = scan.next().unwrap() {
                got.push(e.to_vec());
            }
            if direction == ScanDirection::Backward {
                got.reverse();
            }
            let want: Vec<Vec<u8>> = expected.iter().map(|e| (*e).clone()).collect();
            assert_eq!(got.len(), want.len(), "{direction:?} scan {lower:?}..{upper:?}");
            assert!(got == want, "{direction:?} scan {lower:?}..{upper:?} returned other entries");
        }
    }
    // Equal-key visits.
    for _ in 0..10 {
        if model.is_empty() {
            break;
        }
        let probe = &model[rng.below(model.len() as u64) as usize];
        let mut got = Vec::new();
        tree.visit_equal(probe, |e| {
            got.push(e.to_vec());
            Ok(true)
        })
        .unwrap();
        let n = desc.key_count();
        let prefix: Vec<Datum> = desc.key_datums(probe).unwrap()[..n].to_vec();
        let want: Vec<Vec<u8>> = model.iter().filter(|e| prefix_cmp(desc, e, &prefix) == Ordering::Equal).cloned().collect();
        assert_eq!(got, want);
    }
}

#[test]
fn builds_and_inserts_agree_with_the_model() {
    let dir = tempfile::tempdir().unwrap();
    // A small pool: trees bigger than it are evicted and re-read.
    let pool = pool(dir.path(), 64);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..24u32 {
        let desc = random_desc(&mut rng);
        let count = [0, 1, 5, 300, 3000, 20000][rng.below(6) as usize];
        let distinct = [2, 30, 100_000][rng.below(3) as usize];
        let mut model = random_entries(&mut rng, &desc, count, distinct, 0);
        model.sort_by(|a, b| desc.compare(a, b));
        let fillfactor = [10, 50, 90, 100][rng.below(4) as usize];
        let packers = 1 + rng.below(4) as usize;
        let r = rel(20000 + case);
        build(&pool, r, &desc, &model, fillfactor, packers, &mut rng);
        let summary = btree::check(&pool, r, &desc, "model").unwrap();
        assert_eq!(summary.entries, model.len() as u64);
        assert_eq!(all_entries(&pool, r, &desc), model);
        check_scans(&pool, r, &desc, &model, &mut rng);

        // Inserts after the build, in random order, in batches checked as they go.
        let tree = BTree::open(&pool, r, &desc);
        let how_many = [10, 2000, 8000][rng.below(3) as usize];
        let extra = random_entries(&mut rng, &desc, how_many, distinct, 1_000_000 + case * 1000);
        for batch in extra.chunks(1500) {
            for e in batch {
                tree.insert(e).unwrap();
                let at = model.partition_point(|m| desc.compare(m, e) == Ordering::Less);
                model.insert(at, e.clone());
            }
            let summary = btree::check(&pool, r, &desc, "model").unwrap();
            assert_eq!(summary.entries, model.len() as u64);
        }
        assert_eq!(all_entries(&pool, r, &desc), model);
        check_scans(&pool, r, &desc, &model, &mut rng);
    }
}

#[test]
fn inserts_alone_grow_a_deep_tree() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), 32);
    let desc = BTreeDesc::new(&[KeyColumn { data_type: DataType::Text, descending: false, nulls_first: false }]).unwrap();
    let r = rel(30000);
    build(&pool, r, &desc, &[], 90, 1, &mut Rng(7));
    let tree = BTree::open(&pool, r, &desc);
    let mut rng = Rng(12345);
    let mut model = Vec::new();
    for i in 0..6000u32 {
        // Long keys: few per page, so internal pages split and the root grows several times.
        let key = Datum::Text(format!("{:08}{}", rng.below(1_000_000), "y".repeat(900)));
        let mut e = Vec::new();
        desc.encode(&[key], TidWord::new(Tid { block: i, offset: 1 }, true), &mut e).unwrap();
        tree.insert(&e).unwrap();
        model.push(e);
    }
    model.sort_by(|a, b| desc.compare(a, b));
    let summary = btree::check(&pool, r, &desc, "deep").unwrap();
    assert!(summary.levels >= 4, "{summary:?}");
    assert_eq!(all_entries(&pool, r, &desc), model);
    check_scans(&pool, r, &desc, &model, &mut rng);
}

/// Rewrite one page of the index through the pool.
fn corrupt_page(pool: &BufferPool, r: RelFileLocator, block: u32, f: impl FnOnce(&mut [u8; PAGE_SIZE])) {
    let buffer = pool.read_buffer(BufferTag { rel: r, fork: ForkNumber::Main, block }, None).unwrap();
    let mut guard = buffer.write();
    f(&mut guard);
}

#[test]
fn the_checker_finds_injected_corruption() {
    let desc = BTreeDesc::new(&[KeyColumn { data_type: DataType::Int4, descending: false, nulls_first: false }]).unwrap();
    let entries: Vec<Vec<u8>> = (0..5000)
        .map(|i| {
            let mut e = Vec::new();
            desc.encode(&[Datum::Int4(i)], TidWord::new(Tid { block: i as u32, offset: 1 }, false), &mut e).unwrap();
            e
        })
        .collect();
    let corruptions: Vec<(&str, Box<dyn Fn(&mut [u8; PAGE_SIZE])>)> = vec![
        // Swap the first two items' line pointers: out of order.
        ("swap", Box::new(|p: &mut [u8; PAGE_SIZE]| {
            let (a, b) = (page::HEADER_SIZE, page::HEADER_SIZE + page::LINE_POINTER_SIZE);
            let first: [u8; 4] = p[a..a + 4].try_into().unwrap();
            let second: [u8; 4] = p[b..b + 4].try_into().unwrap();
            p[a..a + 4].copy_from_slice(&second);
            p[b..b + 4].copy_from_slice(&first);
        })),
        // Break the right link.
        ("right link", Box::new(|p: &mut [u8; PAGE_SIZE]| {
            let special = PAGE_SIZE - 16;
            p[special + 4..special + 8].copy_from_slice(&9999u32.to_le_bytes());
        })),
        // A wrong level.
        ("level", Box::new(|p: &mut [u8; PAGE_SIZE]| {
            let special = PAGE_SIZE - 16;
            p[special + 8..special + 12].copy_from_slice(&3u32.to_le_bytes());
        })),
    ];
    for (name, corruption) in corruptions {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(dir.path(), 256);
        let r = rel(40000);
        build(&pool, r, &desc, &entries, 90, 1, &mut Rng(3));
        btree::check(&pool, r, &desc, "victim").unwrap();
        corrupt_page(&pool, r, 2, corruption);
        let err = btree::check(&pool, r, &desc, "victim").unwrap_err();
        assert_eq!(err.sqlstate, SqlState::INDEX_CORRUPTED, "{name}: {err:?}");
        assert!(err.message.contains("index \"victim\" block"), "{name}: {}", err.message);
    }
}

#[test]
fn readers_scanning_during_inserts_see_every_committed_entry_once() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), 128);
    let desc = BTreeDesc::new(&[KeyColumn { data_type: DataType::Int8, descending: false, nulls_first: false }]).unwrap();
    let r = rel(50000);
    let encode = |k: i64, block: u32| {
        let mut e = Vec::new();
        desc.encode(&[Datum::Int8(k)], TidWord::new(Tid { block, offset: 1 }, block >= 100_000), &mut e).unwrap();
        e
    };
    // Even keys exist before the readers start; the writer adds odd keys meanwhile.
    let base: Vec<Vec<u8>> = (0..20000).map(|k| encode(k * 2, k as u32)).collect();
    build(&pool, r, &desc, &base, 100, 1, &mut Rng(5));
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for reader in 0..4 {
            let (pool, desc, done) = (&pool, &desc, &done);
            scope.spawn(move || {
                let tree = BTree::open(pool, r, desc);
                let direction = if reader % 2 == 0 { ScanDirection::Forward } else { ScanDirection::Backward };
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut scan = tree.scan(Bound::Unbounded, Bound::Unbounded, direction).unwrap();
                    let mut evens = 0;
                    let mut last: Option<Vec<u8>> = None;
                    while let Some(e) = scan.next().unwrap() {
                        let Datum::Int8(k) = desc.key_datums(e).unwrap()[0] else { panic!() };
                        // Entries (key, tid) strictly in order: none twice, none out of place.
                        if let Some(prev) = &last {
                            let want = if direction == ScanDirection::Forward { Ordering::Less } else { Ordering::Greater };
                            assert_eq!(desc.compare(prev, e), want, "{direction:?} at key {k}");
                        }
                        last = Some(e.to_vec());
                        evens += (k % 2 == 0) as usize;
                    }
                    assert_eq!(evens, 20000, "{direction:?} scan missed entries");
                }
            });
        }
        let tree = BTree::open(&pool, r, &desc);
        let mut rng = Rng(99);
        for i in 0..20000u32 {
            let k = rng.below(20000) as i64 * 2 + 1;
            tree.insert(&encode(k, 100_000 + i)).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    btree::check(&pool, r, &desc, "concurrent").unwrap();
}

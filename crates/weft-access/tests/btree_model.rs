//! The B-tree against an independent model: entries are ordered here by comparing
//! `Datum`s column by column (direction, NULL placement, PostgreSQL's float order with
//! NaN above everything and -0 = 0, text by bytes), then by tid word — not by the
//! `SortKeys` the tree uses. Covers builds cut into batches and ranges, inserts that
//! split leaves, internal pages and roots (ascending, descending and random), prefix
//! range scans both ways, equal-key visits, the checker (passing, and catching injected
//! damage without panicking on it), and scans interleaved with splits — in one thread,
//! step by step, and in many threads at once.
//!
//! `nbtree_model.rs` holds the first, coarser model tests.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use proptest::prelude::*;
use weft_access::btree::{self, BTree, BTreeDesc, BTreeWriter, BuildSummary, KeyColumn, LeafPacker, ScanDirection, TidWord};
use weft_access::Tid;
use weft_common::{DataType, Datum, SqlState};
use weft_storage::{page, BufferMappingKind, BufferPool, BufferPoolConfig, BufferTag, ForkNumber, RelFileLocator, StorageManager, PAGE_SIZE};

// ---------------------------------------------------------------------------------------
// The model.

#[derive(Clone, Debug)]
struct Entry {
    key: Vec<Datum>,
    word: i64,
    bytes: Vec<u8>,
}

fn cmp_datum(a: &Datum, b: &Datum, c: &KeyColumn) -> Ordering {
    let o = match (a, b) {
        (Datum::Null, Datum::Null) => return Ordering::Equal,
        (Datum::Null, _) => return if c.nulls_first { Ordering::Less } else { Ordering::Greater },
        (_, Datum::Null) => return if c.nulls_first { Ordering::Greater } else { Ordering::Less },
        (Datum::Int4(x), Datum::Int4(y)) => x.cmp(y),
        (Datum::Int8(x), Datum::Int8(y)) => x.cmp(y),
        (Datum::Bool(x), Datum::Bool(y)) => x.cmp(y),
        (Datum::Text(x), Datum::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Datum::Float8(x), Datum::Float8(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).unwrap(),
        },
        (a, b) => panic!("model compares {a:?} with {b:?}"),
    };
    if c.descending {
        o.reverse()
    } else {
        o
    }
}

/// Compare the first `prefix.len()` key columns of `key` with `prefix`.
fn cmp_prefix(columns: &[KeyColumn], key: &[Datum], prefix: &[Datum]) -> Ordering {
    for (i, p) in prefix.iter().enumerate() {
        let o = cmp_datum(&key[i], p, &columns[i]);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn cmp_entry(columns: &[KeyColumn], a: &Entry, b: &Entry) -> Ordering {
    cmp_prefix(columns, &a.key, &b.key).then(a.word.cmp(&b.word))
}

fn make_entry(desc: &BTreeDesc, key: Vec<Datum>, tid: Tid, flagged: bool) -> Entry {
    let word = TidWord::new(tid, flagged);
    let mut bytes = Vec::new();
    desc.encode(&key, word, &mut bytes).unwrap();
    Entry { key, word: word.0, bytes }
}

fn sort_model(columns: &[KeyColumn], model: &mut Vec<Entry>) {
    model.sort_by(|a, b| cmp_entry(columns, a, b));
    model.dedup_by(|a, b| cmp_entry(columns, a, b) == Ordering::Equal);
}

fn in_bounds(columns: &[KeyColumn], e: &Entry, lower: &Bound<Vec<Datum>>, upper: &Bound<Vec<Datum>>) -> bool {
    let lower_ok = match lower {
        Bound::Unbounded => true,
        Bound::Included(p) => cmp_prefix(columns, &e.key, p) != Ordering::Less,
        Bound::Excluded(p) => cmp_prefix(columns, &e.key, p) == Ordering::Greater,
    };
    let upper_ok = match upper {
        Bound::Unbounded => true,
        Bound::Included(p) => cmp_prefix(columns, &e.key, p) != Ordering::Greater,
        Bound::Excluded(p) => cmp_prefix(columns, &e.key, p) == Ordering::Less,
    };
    lower_ok && upper_ok
}

// ---------------------------------------------------------------------------------------
// Helpers.

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

fn col(data_type: DataType) -> KeyColumn {
    KeyColumn { data_type, descending: false, nulls_first: false }
}

/// Build from the sorted model: `packers` separate packers over consecutive ranges (a
/// partitioned build), each handing over its full pages at random moments.
fn build(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc, model: &[Entry], fillfactor: u8, packers: usize, rng: &mut Rng) -> BuildSummary {
    pool.smgr().create(r, ForkNumber::Main).unwrap();
    let mut writer = BTreeWriter::new(pool, r, desc).unwrap();
    let per = model.len().div_ceil(packers.max(1)).max(1);
    for range in model.chunks(per) {
        let mut packer = LeafPacker::new(desc, fillfactor);
        for e in range {
            packer.add(&e.bytes).unwrap();
            if rng.below(300) == 0 {
                writer.append_leaves(packer.take_full_pages()).unwrap();
            }
        }
        writer.append_leaves(packer.finish()).unwrap();
    }
    let summary = writer.finish().unwrap();
    assert_eq!(summary.tuples, model.len() as u64);
    assert_eq!(summary.total_blocks, btree::index_size_blocks(pool, r).unwrap());
    summary
}

fn leaf_entries(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    btree::for_each_entry(pool, r, desc, |_, e| {
        out.push(e.to_vec());
        Ok(())
    })
    .unwrap();
    out
}

fn assert_same(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc, model: &[Entry]) {
    let summary = btree::check(pool, r, desc, "model").unwrap();
    assert_eq!(summary.entries, model.len() as u64);
    let got = leaf_entries(pool, r, desc);
    assert_eq!(got.len(), model.len());
    for (i, (g, m)) in got.iter().zip(model).enumerate() {
        assert!(g == &m.bytes, "entry {i}: tree has {:?}, model {:?}", desc.key_datums(g).unwrap(), m.key);
    }
}

fn drain(scan: &mut btree::BTreeScan<'_>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(e) = scan.next().unwrap() {
        out.push(e.to_vec());
    }
    out
}

fn random_value(rng: &mut Rng, ty: DataType, distinct: u64) -> Datum {
    if rng.below(10) == 0 {
        return Datum::Null;
    }
    let v = rng.below(distinct) as i64 - (distinct / 2) as i64;
    match ty {
        DataType::Int4 => Datum::Int4(v as i32),
        DataType::Int8 => Datum::Int8(v.wrapping_mul(1_000_000_007)),
        DataType::Float8 => match rng.below(16) {
            0 => Datum::Float8(f64::NAN),
            1 => Datum::Float8(-0.0),
            2 => Datum::Float8(0.0),
            3 => Datum::Float8(f64::NEG_INFINITY),
            _ => Datum::Float8(v as f64 / 7.0),
        },
        DataType::Bool => Datum::Bool(v % 2 == 0),
        DataType::Text => {
            let pad = match rng.below(12) {
                0 => "x".repeat(600),
                1 => "é".repeat(40),
                _ => String::new(),
            };
            Datum::Text(format!("{:04}{pad}", v.unsigned_abs() % 10_000))
        }
        _ => unreachable!(),
    }
}

fn random_columns(rng: &mut Rng) -> Vec<KeyColumn> {
    let types = [DataType::Int4, DataType::Int8, DataType::Float8, DataType::Bool, DataType::Text];
    (0..1 + rng.below(3))
        .map(|_| KeyColumn {
            data_type: types[rng.below(types.len() as u64) as usize],
            descending: rng.below(3) == 0,
            nulls_first: rng.below(2) == 0,
        })
        .collect()
}

fn random_model(rng: &mut Rng, desc: &BTreeDesc, count: usize, distinct: u64, first_block: u32, flagged: bool) -> Vec<Entry> {
    (0..count)
        .map(|i| {
            let key = desc.columns().iter().map(|c| random_value(rng, c.data_type, distinct)).collect();
            make_entry(desc, key, Tid { block: first_block + (i / 200) as u32, offset: (i % 200) as u16 + 1 }, flagged)
        })
        .collect()
}

/// A bound prefix: the leading values of an entry of the model (so bounds hit ties) or
/// random ones, 0..=key_count of them.
fn random_prefix(rng: &mut Rng, desc: &BTreeDesc, model: &[Entry], distinct: u64) -> Vec<Datum> {
    let n = rng.below(desc.key_count() as u64 + 1) as usize;
    let key: Vec<Datum> = if !model.is_empty() && rng.below(3) > 0 {
        model[rng.below(model.len() as u64) as usize].key.clone()
    } else {
        desc.columns().iter().map(|c| random_value(rng, c.data_type, distinct)).collect()
    };
    key[..n].to_vec()
}

fn random_bound(rng: &mut Rng, desc: &BTreeDesc, model: &[Entry], distinct: u64) -> Bound<Vec<Datum>> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(random_prefix(rng, desc, model, distinct)),
        _ => Bound::Excluded(random_prefix(rng, desc, model, distinct)),
    }
}

fn check_scans(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc, model: &[Entry], distinct: u64, rng: &mut Rng, rounds: usize) {
    let columns = desc.columns();
    let tree = BTree::open(pool, r, desc);
    for _ in 0..rounds {
        let lower = random_bound(rng, desc, model, distinct);
        let upper = random_bound(rng, desc, model, distinct);
        let want: Vec<&Vec<u8>> = model.iter().filter(|e| in_bounds(columns, e, &lower, &upper)).map(|e| &e.bytes).collect();
        let forward = drain(&mut tree.scan(lower.clone(), upper.clone(), ScanDirection::Forward).unwrap());
        assert!(forward.iter().eq(want.iter().copied()), "forward {lower:?}..{upper:?}: {} entries, model {}", forward.len(), want.len());
        let mut backward = drain(&mut tree.scan(lower.clone(), upper.clone(), ScanDirection::Backward).unwrap());
        backward.reverse();
        assert!(backward.iter().eq(want.iter().copied()), "backward {lower:?}..{upper:?}: {} entries, model {}", backward.len(), want.len());
    }
    for _ in 0..rounds / 2 {
        if model.is_empty() {
            break;
        }
        let probe = &model[rng.below(model.len() as u64) as usize];
        let mut got = Vec::new();
        tree.visit_equal(&probe.bytes, |e| {
            got.push(e.to_vec());
            Ok(true)
        })
        .unwrap();
        let want: Vec<&Vec<u8>> =
            model.iter().filter(|e| cmp_prefix(columns, &e.key, &probe.key) == Ordering::Equal).map(|e| &e.bytes).collect();
        assert!(got.iter().eq(want.iter().copied()), "visit_equal {:?}: {} entries, model {}", probe.key, got.len(), want.len());
        // Stopping early.
        let mut seen = 0;
        tree.visit_equal(&probe.bytes, |_| {
            seen += 1;
            Ok(false)
        })
        .unwrap();
        assert_eq!(seen, 1);
    }
}

// ---------------------------------------------------------------------------------------
// (a)–(e): builds, inserts, scans, checks against the model.

#[test]
fn random_builds_then_inserts_match_the_model() {
    let dir = tempfile::tempdir().unwrap();
    // A small pool: most trees are bigger, so pages are evicted and read back.
    let pool = pool(dir.path(), 48);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..28u32 {
        let columns = random_columns(&mut rng);
        let desc = BTreeDesc::new(&columns).unwrap();
        let count = [0, 1, 2, 700, 5000, 20_000, 50_000][rng.below(7) as usize];
        let distinct = [3, 40, 1_000_000][rng.below(3) as usize];
        let mut model = random_model(&mut rng, &desc, count, distinct, 0, false);
        sort_model(&columns, &mut model);
        let fillfactor = [10, 50, 90, 100][rng.below(4) as usize];
        let packers = 1 + rng.below(5) as usize;
        let r = rel(1000 + case);
        let summary = build(&pool, r, &desc, &model, fillfactor, packers, &mut rng);
        assert_same(&pool, r, &desc, &model);
        let checked = btree::check(&pool, r, &desc, "model").unwrap();
        assert_eq!((checked.levels, checked.leaf_pages, checked.internal_pages), (summary.levels, summary.leaf_pages, summary.internal_pages));
        check_scans(&pool, r, &desc, &model, distinct, &mut rng, 12);

        let tree = BTree::open(&pool, r, &desc);
        let inserts = [5, 3000, 12_000][rng.below(3) as usize];
        let extra = random_model(&mut rng, &desc, inserts, distinct, 100_000 + case * 1000, true);
        for batch in extra.chunks(4000) {
            for e in batch {
                tree.insert(&e.bytes).unwrap();
            }
            model.extend(batch.iter().cloned());
            sort_model(&columns, &mut model);
            assert_same(&pool, r, &desc, &model);
        }
        check_scans(&pool, r, &desc, &model, distinct, &mut rng, 12);
    }
}

#[test]
fn build_pages_do_not_depend_on_how_the_stream_is_cut() {
    let mut rng = Rng(77);
    for _ in 0..6 {
        let columns = random_columns(&mut rng);
        let desc = BTreeDesc::new(&columns).unwrap();
        let mut model = random_model(&mut rng, &desc, 8000, 500, 0, false);
        sort_model(&columns, &mut model);
        let fillfactor = [10, 70, 100][rng.below(3) as usize];
        let mut whole = LeafPacker::new(&desc, fillfactor);
        for e in &model {
            whole.add(&e.bytes).unwrap();
        }
        let whole = whole.finish();
        let mut cut = LeafPacker::new(&desc, fillfactor);
        let mut pages = Vec::new();
        let mut high_keys = Vec::new();
        let mut tuples = 0;
        for e in &model {
            cut.add(&e.bytes).unwrap();
            if rng.below(50) == 0 {
                assert!(cut.full_pages() <= whole.pages.len());
                let part = cut.take_full_pages();
                assert_eq!(cut.full_pages(), 0);
                tuples += part.tuples;
                pages.extend(part.pages);
                high_keys.extend(part.high_keys);
            }
        }
        let part = cut.finish();
        tuples += part.tuples;
        pages.extend(part.pages);
        high_keys.extend(part.high_keys);
        assert_eq!(tuples, model.len() as u64);
        assert_eq!(whole.tuples, model.len() as u64);
        assert_eq!(high_keys, whole.high_keys);
        assert_eq!(pages.len(), whole.pages.len());
        assert!(pages.iter().zip(&whole.pages).all(|(a, b)| a[..] == b[..]), "page images differ");
        // Fill factor: every page but the last is filled up to it (give or take an entry).
        let limit = PAGE_SIZE * fillfactor as usize / 100;
        for p in &whole.pages[..whole.pages.len().saturating_sub(1)] {
            let used = PAGE_SIZE - page::free_space(p);
            assert!(used <= limit.max(PAGE_SIZE / 10) + 2 * 700 + 64, "page uses {used} of {limit}");
        }
    }
}

#[test]
fn builds_reject_bad_input() {
    let desc = BTreeDesc::new(&[col(DataType::Text), col(DataType::Int4)]).unwrap();
    let entry = |s: &str, n: i32, block: u32| make_entry(&desc, vec![Datum::Text(s.into()), Datum::Int4(n)], Tid { block, offset: 1 }, false).bytes;
    // Too big: PostgreSQL's words and SQLSTATE 54000.
    let mut packer = LeafPacker::new(&desc, 90);
    let err = packer.add(&entry(&"z".repeat(3000), 1, 1)).unwrap_err();
    assert_eq!(err.sqlstate, SqlState::PROGRAM_LIMIT_EXCEEDED);
    assert!(err.message.starts_with("index row size 30") && err.message.contains("exceeds btree maximum"), "{}", err.message);
    // Largest allowed entries still pack, three and a high key to a page at most.
    let mut packer = LeafPacker::new(&desc, 100);
    let big = |i: u32| {
        let mut s = format!("{i:04}");
        while entry(&s, 0, i).len() < btree::MAX_ENTRY_SIZE {
            s.push('b');
        }
        s.pop();
        entry(&s, 0, i)
    };
    for i in 0..10 {
        packer.add(&big(i)).unwrap();
    }
    assert!(packer.finish().pages.len() >= 4);
    // Out of order, within a page and across a page boundary (checked in debug builds,
    // as PostgreSQL asserts it; `weft_index_check` checks any built tree).
    if cfg!(debug_assertions) {
        let mut packer = LeafPacker::new(&desc, 90);
        packer.add(&entry("b", 1, 1)).unwrap();
        assert!(packer.add(&entry("a", 1, 1)).is_err());
        assert!(packer.add(&entry("b", 1, 1)).is_err(), "equal entries are out of order too");
        let mut packer = LeafPacker::new(&desc, 10);
        let mut i = 0;
        while packer.full_pages() == 0 {
            packer.add(&entry(&format!("{i:06}"), 0, 1)).unwrap();
            i += 1;
        }
        packer.take_full_pages();
        assert!(packer.add(&entry("000000", 0, 1)).is_err(), "order is checked across pages");
    }
    // Ranges appended out of order.
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), 64);
    let r = rel(7);
    pool.smgr().create(r, ForkNumber::Main).unwrap();
    let mut writer = BTreeWriter::new(&pool, r, &desc).unwrap();
    let mut high = LeafPacker::new(&desc, 90);
    high.add(&entry("m", 0, 1)).unwrap();
    let mut low = LeafPacker::new(&desc, 90);
    low.add(&entry("c", 0, 1)).unwrap();
    writer.append_leaves(high.finish()).unwrap();
    assert!(writer.append_leaves(low.finish()).is_err());
    // A second build into a file that is not empty.
    assert!(BTreeWriter::new(&pool, r, &desc).is_err());
    // Types that cannot be indexed.
    assert!(BTreeDesc::new(&[]).is_err());
}

#[test]
fn inserts_grow_roots_and_fill_pages_like_a_build() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), 40);
    let desc = BTreeDesc::new(&[col(DataType::Int8)]).unwrap();
    let columns = desc.columns().to_vec();
    let mut rng = Rng(4242);
    // Ascending, descending and random, each into an empty index.
    for (case, order) in ["ascending", "descending", "random"].iter().enumerate() {
        let r = rel(2000 + case as u32);
        build(&pool, r, &desc, &[], 90, 1, &mut rng);
        let tree = BTree::open(&pool, r, &desc);
        let n = 40_000i64;
        let mut model = Vec::new();
        for i in 0..n {
            let k = match *order {
                "ascending" => i,
                "descending" => n - i,
                _ => rng.below(1 << 40) as i64,
            };
            let e = make_entry(&desc, vec![Datum::Int8(k)], Tid { block: i as u32, offset: 1 }, true);
            tree.insert(&e.bytes).unwrap();
            model.push(e);
            if i % 13_000 == 0 {
                btree::check(&pool, r, &desc, "grow").unwrap();
            }
        }
        sort_model(&columns, &mut model);
        assert_same(&pool, r, &desc, &model);
        let summary = btree::check(&pool, r, &desc, "grow").unwrap();
        assert!(summary.levels >= 2, "{order}: {summary:?}");
        // 21 bytes an entry: about 350 to a leaf filled to 90%, 190 to one half full.
        let leaf_limit = if *order == "ascending" { 40_000 / 330 + 2 } else { 40_000 / 170 + 2 };
        assert!(summary.leaf_pages <= leaf_limit as u64, "{order}: {summary:?}");
        check_scans(&pool, r, &desc, &model, 1 << 40, &mut rng, 10);
        // Inserting an entry that is there already changes nothing.
        let again = &model[model.len() / 2];
        tree.insert(&again.bytes).unwrap();
        assert_eq!(btree::check(&pool, r, &desc, "grow").unwrap().entries, model.len() as u64);
        // Too big for the tree.
        let text_desc = BTreeDesc::new(&[col(DataType::Text)]).unwrap();
        let huge = make_entry(&text_desc, vec![Datum::Text("h".repeat(2800))], Tid { block: 1, offset: 1 }, true);
        let err = BTree::open(&pool, r, &text_desc).insert(&huge.bytes).unwrap_err();
        assert_eq!(err.sqlstate, SqlState::PROGRAM_LIMIT_EXCEEDED);
    }
    // Long keys: few to a page, so internal pages split often and the tree gets deep.
    let desc = BTreeDesc::new(&[KeyColumn { data_type: DataType::Text, descending: true, nulls_first: true }]).unwrap();
    let columns = desc.columns().to_vec();
    let r = rel(2100);
    let mut model = random_model(&mut rng, &desc, 300, 50, 0, false);
    sort_model(&columns, &mut model);
    build(&pool, r, &desc, &model, 100, 2, &mut rng);
    let tree = BTree::open(&pool, r, &desc);
    for i in 0..5000u32 {
        let key = if i % 50 == 0 { Datum::Null } else { Datum::Text(format!("{:07}{}", rng.below(10_000_000), "L".repeat(1200 + (i as usize % 1000)))) };
        let e = make_entry(&desc, vec![key], Tid { block: 10_000 + i, offset: 2 }, true);
        tree.insert(&e.bytes).unwrap();
        model.push(e);
    }
    sort_model(&columns, &mut model);
    assert_same(&pool, r, &desc, &model);
    let summary = btree::check(&pool, r, &desc, "deep").unwrap();
    assert!(summary.levels >= 5, "{summary:?}");
    check_scans(&pool, r, &desc, &model, 50, &mut rng, 10);
}

// Small random trees through proptest, so that a failure shrinks to a small case.
proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn small_trees_match_the_model(
        seed in any::<u64>(),
        count in 0usize..1500,
        inserts in 0usize..1500,
        distinct in prop_oneof![Just(2u64), Just(20), Just(10_000)],
        fillfactor in prop_oneof![Just(10u8), Just(50), Just(90), Just(100)],
        packers in 1usize..4,
    ) {
        let mut rng = Rng(seed | 1);
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(dir.path(), 32);
        let columns = random_columns(&mut rng);
        let desc = BTreeDesc::new(&columns).unwrap();
        let mut model = random_model(&mut rng, &desc, count, distinct, 0, false);
        sort_model(&columns, &mut model);
        let r = rel(3);
        build(&pool, r, &desc, &model, fillfactor, packers, &mut rng);
        assert_same(&pool, r, &desc, &model);
        let tree = BTree::open(&pool, r, &desc);
        for e in random_model(&mut rng, &desc, inserts, distinct, 50_000, true) {
            tree.insert(&e.bytes).unwrap();
            model.push(e);
        }
        sort_model(&columns, &mut model);
        assert_same(&pool, r, &desc, &model);
        check_scans(&pool, r, &desc, &model, distinct, &mut rng, 6);
    }
}

// ---------------------------------------------------------------------------------------
// (e): the checker finds damage, and nothing panics on it.

/// Int4 keys 0..5000 step 2 (with a text column so that pages hold ~60 entries), at
/// fill factor 100: three levels.
fn victim(pool: &BufferPool, r: RelFileLocator) -> (BTreeDesc, Vec<Entry>) {
    let desc = BTreeDesc::new(&[col(DataType::Int4), col(DataType::Text)]).unwrap();
    let model: Vec<Entry> = (0..5000)
        .map(|i| make_entry(&desc, vec![Datum::Int4(i * 2), Datum::Text(format!("{i:0100}"))], Tid { block: i as u32, offset: 1 }, false))
        .collect();
    let summary = build(pool, r, &desc, &model, 100, 1, &mut Rng(1));
    assert!(summary.levels >= 3, "{summary:?}");
    (desc, model)
}

fn with_page(pool: &BufferPool, r: RelFileLocator, block: u32, f: impl FnOnce(&mut [u8; PAGE_SIZE])) {
    let buffer = pool.read_buffer(BufferTag { rel: r, fork: ForkNumber::Main, block }, None).unwrap();
    let mut guard = buffer.write();
    f(&mut guard);
}

const SPECIAL: usize = PAGE_SIZE - 16;

fn set_u32(p: &mut [u8; PAGE_SIZE], at: usize, v: u32) {
    p[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn line_pointer_at(off: usize) -> usize {
    page::HEADER_SIZE + (off - 1) * page::LINE_POINTER_SIZE
}

/// Everything a reader or writer can do with a damaged index: errors are fine, panics
/// and endless loops are not.
fn exercise(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc, model: &[Entry]) {
    let tree = BTree::open(pool, r, desc);
    for direction in [ScanDirection::Forward, ScanDirection::Backward] {
        if let Ok(mut scan) = tree.scan(Bound::Unbounded, Bound::Unbounded, direction) {
            while let Ok(Some(_)) = scan.next() {}
        }
        if let Ok(mut scan) = tree.scan(Bound::Included(vec![Datum::Int4(3001)]), Bound::Excluded(vec![Datum::Int4(6000)]), direction) {
            while let Ok(Some(_)) = scan.next() {}
        }
    }
    let _ = tree.visit_equal(&model[1234].bytes, |_| Ok(true));
    let _ = btree::for_each_entry(pool, r, desc, |_, _| Ok(()));
    let _ = tree.insert(&make_entry(desc, vec![Datum::Int4(77), Datum::Text("n".repeat(900))], Tid { block: 9, offset: 9 }, true).bytes);
}

#[test]
fn the_checker_reports_injected_damage() {
    type Damage = Box<dyn Fn(&mut [u8; PAGE_SIZE])>;
    // (what, which page: 1 = first leaf, or the root, damage).
    let cases: Vec<(&str, bool, Damage)> = vec![
        ("swapped items", false, Box::new(|p| {
            let (a, b) = (line_pointer_at(3), line_pointer_at(4));
            let x: [u8; 4] = p[a..a + 4].try_into().unwrap();
            let y: [u8; 4] = p[b..b + 4].try_into().unwrap();
            p[a..a + 4].copy_from_slice(&y);
            p[b..b + 4].copy_from_slice(&x);
        })),
        ("right link", false, Box::new(|p| set_u32(p, SPECIAL + 4, 4))),
        ("right link past the end", false, Box::new(|p| set_u32(p, SPECIAL + 4, 999_999))),
        ("left link", false, Box::new(|p| set_u32(p, SPECIAL, 5))),
        ("level", false, Box::new(|p| set_u32(p, SPECIAL + 8, 1))),
        ("root level", true, Box::new(|p| set_u32(p, SPECIAL + 8, 7))),
        ("leaf flag", false, Box::new(|p| p[SPECIAL + 12] = 0)),
        ("high key lowered", false, Box::new(|p| {
            let n = page::item_count(p);
            page::item_mut(p, n).unwrap()[1..5].copy_from_slice(&(-5i32).to_le_bytes());
        })),
        ("item raised above the high key", false, Box::new(|p| {
            let n = page::item_count(p);
            page::item_mut(p, n - 1).unwrap()[1..5].copy_from_slice(&1_000_000i32.to_le_bytes());
        })),
        ("item shortened", false, Box::new(|p| {
            let at = line_pointer_at(2);
            let lp = u32::from_le_bytes(p[at..at + 4].try_into().unwrap());
            let short = (lp & 0x1_ffff) | (3 << 17);
            p[at..at + 4].copy_from_slice(&short.to_le_bytes());
        })),
        ("item text length", false, Box::new(|p| {
            let item = page::item_mut(p, 2).unwrap();
            item[13..17].copy_from_slice(&5000u32.to_le_bytes());
        })),
        ("separator changed", true, Box::new(|p| {
            page::item_mut(p, 1).unwrap()[5..9].copy_from_slice(&(-100i32).to_le_bytes());
        })),
        ("downlink to the metapage", true, Box::new(|p| page::item_mut(p, 1).unwrap()[..4].copy_from_slice(&0u32.to_le_bytes()))),
        // The root is two levels up: a downlink straight to a leaf skips one.
        ("downlink skips a level", true, Box::new(|p| page::item_mut(p, 1).unwrap()[..4].copy_from_slice(&1u32.to_le_bytes()))),
        ("header", false, Box::new(|p| p[14..16].copy_from_slice(&9000u16.to_le_bytes()))),
        ("special space size", false, Box::new(|p| p[18..20].copy_from_slice(&((PAGE_SIZE - 8) as u16).to_le_bytes()))),
        ("zeroed page", false, Box::new(|p| p.fill(0))),
    ];
    for (what, on_root, damage) in cases {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(dir.path(), 1024);
        let r = rel(9);
        let (desc, model) = victim(&pool, r);
        btree::check(&pool, r, &desc, "victim").unwrap();
        let block = if on_root {
            let meta = pool.read_buffer(BufferTag { rel: r, fork: ForkNumber::Main, block: 0 }, None).unwrap();
            let item = page::item(&meta.read(), 1).unwrap().to_vec();
            u32::from_le_bytes(item[8..12].try_into().unwrap())
        } else {
            2
        };
        with_page(&pool, r, block, |p| damage(p));
        let err = btree::check(&pool, r, &desc, "victim").expect_err(what);
        assert_eq!(err.sqlstate, SqlState::INDEX_CORRUPTED, "{what}: {err:?}");
        assert!(err.message.starts_with("index \"victim\" block "), "{what}: {}", err.message);
        exercise(&pool, r, &desc, &model);
    }
    // The metapage.
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), 1024);
    let r = rel(10);
    let (desc, model) = victim(&pool, r);
    with_page(&pool, r, 0, |p| page::item_mut(p, 1).unwrap()[0] ^= 0xff);
    let err = btree::check(&pool, r, &desc, "victim").unwrap_err();
    assert_eq!(err.sqlstate, SqlState::INDEX_CORRUPTED);
    assert_eq!(err.message, "index \"victim\" block 0: invalid metapage");
    exercise(&pool, r, &desc, &model);
}

#[test]
fn garbage_pages_never_panic() {
    let mut rng = Rng(31337);
    for round in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(dir.path(), 1024);
        let r = rel(11);
        let (desc, model) = victim(&pool, r);
        let nblocks = btree::index_size_blocks(&pool, r).unwrap();
        let block = 1 + rng.below(nblocks as u64 - 1) as u32;
        with_page(&pool, r, block, |p| {
            // Half the rounds keep the header and special space: garbage items and links.
            let (from, to) = if round % 2 == 0 { (0, PAGE_SIZE) } else { (page::HEADER_SIZE, PAGE_SIZE) };
            for _ in 0..1 + rng.below(60) {
                let at = from + rng.below((to - from) as u64) as usize;
                p[at] = rng.next() as u8;
            }
        });
        if let Err(err) = btree::check(&pool, r, &desc, "victim") {
            assert_eq!(err.sqlstate, SqlState::INDEX_CORRUPTED, "{err:?}");
        }
        exercise(&pool, r, &desc, &model);
    }
}

#[test]
fn cycles_in_sibling_links_end_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), 1024);
    let r = rel(12);
    let (desc, model) = victim(&pool, r);
    // Leaf 6 leads back to leaf 3 (right) and leaf 3 back to leaf 6 (left).
    with_page(&pool, r, 6, |p| set_u32(p, SPECIAL + 4, 3));
    with_page(&pool, r, 3, |p| set_u32(p, SPECIAL, 6));
    assert_eq!(btree::check(&pool, r, &desc, "victim").unwrap_err().sqlstate, SqlState::INDEX_CORRUPTED);
    assert_eq!(btree::for_each_entry(&pool, r, &desc, |_, _| Ok(())).unwrap_err().sqlstate, SqlState::INDEX_CORRUPTED);
    let tree = BTree::open_named(&pool, r, &desc, "victim");
    let mut scan = tree.scan(Bound::Unbounded, Bound::Unbounded, ScanDirection::Forward).unwrap();
    let err = loop {
        match scan.next() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a scan around a cycle ended"),
            Err(e) => break e,
        }
    };
    assert_eq!(err.sqlstate, SqlState::INDEX_CORRUPTED);
    assert!(err.message.starts_with("index \"victim\" block "), "{}", err.message);
    exercise(&pool, r, &desc, &model);
}

// ---------------------------------------------------------------------------------------
// (f): scans while pages split.

/// Int8 keys 0, 10, 20, ... with a long text column: about 30 entries to a leaf.
fn wide(pool: &BufferPool, r: RelFileLocator, count: i64) -> (BTreeDesc, Vec<Entry>) {
    let desc = BTreeDesc::new(&[col(DataType::Int8), col(DataType::Text)]).unwrap();
    let model: Vec<Entry> = (0..count).map(|i| wide_entry(&desc, i * 10, i as u32, false)).collect();
    build(pool, r, &desc, &model, 100, 1, &mut Rng(2));
    (desc, model)
}

fn wide_entry(desc: &BTreeDesc, k: i64, block: u32, flagged: bool) -> Entry {
    make_entry(desc, vec![Datum::Int8(k), Datum::Text(format!("{k:0250}"))], Tid { block, offset: 1 }, flagged)
}

fn key_of(desc: &BTreeDesc, e: &[u8]) -> i64 {
    match desc.key_datums(e).unwrap()[0] {
        Datum::Int8(k) => k,
        ref d => panic!("{d:?}"),
    }
}

/// Strictly in scan order, and every key of `base` in `lo..=hi` is there.
fn assert_complete(desc: &BTreeDesc, got: &[Vec<u8>], direction: ScanDirection, base: &[Entry], lo: i64, hi: i64) {
    for pair in got.windows(2) {
        let want = if direction == ScanDirection::Forward { Ordering::Less } else { Ordering::Greater };
        assert_eq!(desc.compare(&pair[0], &pair[1]), want, "{direction:?}: keys {} then {}", key_of(desc, &pair[0]), key_of(desc, &pair[1]));
    }
    let seen: HashSet<&[u8]> = got.iter().map(Vec::as_slice).collect();
    for e in base {
        let k = key_of(desc, &e.bytes);
        if lo <= k && k <= hi {
            assert!(seen.contains(e.bytes.as_slice()), "{direction:?} scan {lo}..={hi} missed key {k}");
        }
    }
}

/// Leaf blocks in key order with their first and last key.
fn leaves(pool: &BufferPool, r: RelFileLocator, desc: &BTreeDesc) -> Vec<(u32, i64, i64)> {
    let mut out: Vec<(u32, i64, i64)> = Vec::new();
    btree::for_each_entry(pool, r, desc, |block, e| {
        let k = key_of(desc, e);
        match out.last_mut() {
            Some(last) if last.0 == block => last.2 = k,
            _ => out.push((block, k, k)),
        }
        Ok(())
    })
    .unwrap();
    out
}

/// Insert `n` new keys strictly between `lo` and `hi` (not multiples of 10).
fn insert_between(tree: &BTree<'_>, desc: &BTreeDesc, lo: i64, hi: i64, n: usize, rng: &mut Rng, next_block: &mut u32) {
    for _ in 0..n {
        let mut k = lo + 1 + rng.below((hi - lo - 1).max(1) as u64) as i64;
        if k % 10 == 0 {
            k += 1;
        }
        if k >= hi {
            continue;
        }
        *next_block += 1;
        tree.insert(&wide_entry(desc, k, *next_block, true).bytes).unwrap();
    }
}

#[test]
fn scans_interleaved_with_splits_step_by_step() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), 64);
    let mut rng = Rng(8);
    let mut next_block = 1_000_000;
    for round in 0..6u32 {
        let r = rel(100 + round);
        let (desc, base) = wide(&pool, r, 3000);
        let tree = BTree::open(&pool, r, &desc);
        let lv = leaves(&pool, r, &desc);
        let mid = lv.len() / 2;
        match round % 3 {
            0 => {
                // The start page of a backward scan splits between the descent and the read.
                let hi = lv[mid].1 + 10 * (rng.below(20) as i64);
                let mut scan = tree.scan(Bound::Unbounded, Bound::Included(vec![Datum::Int8(hi)]), ScanDirection::Backward).unwrap();
                insert_between(&tree, &desc, lv[mid].1 - 1, hi + 1, 300, &mut rng, &mut next_block);
                let got = drain(&mut scan);
                assert_complete(&desc, &got, ScanDirection::Backward, &base, i64::MIN, hi);
                // The forward twin.
                let lo = lv[mid + 3].1 + 10 * (rng.below(20) as i64);
                let mut scan = tree.scan(Bound::Included(vec![Datum::Int8(lo)]), Bound::Unbounded, ScanDirection::Forward).unwrap();
                insert_between(&tree, &desc, lv[mid + 3].1 - 1, lo + 1, 300, &mut rng, &mut next_block);
                let got = drain(&mut scan);
                assert_complete(&desc, &got, ScanDirection::Forward, &base, lo, i64::MAX);
            }
            1 => {
                // A backward scan reads a page; the pages to its left split (repeatedly)
                // before it steps left through a left link that is now stale.
                let mut scan = tree.scan(Bound::Unbounded, Bound::Included(vec![Datum::Int8(lv[mid].2)]), ScanDirection::Backward).unwrap();
                let mut got = vec![scan.next().unwrap().unwrap().to_vec()];
                insert_between(&tree, &desc, lv[mid - 1].1, lv[mid - 1].2, 200, &mut rng, &mut next_block);
                insert_between(&tree, &desc, lv[mid - 2].1, lv[mid].1, 200, &mut rng, &mut next_block);
                got.extend(drain(&mut scan));
                assert_complete(&desc, &got, ScanDirection::Backward, &base, i64::MIN, lv[mid].2);
            }
            _ => {
                // A forward scan reads a page that then splits, as do the ones after it.
                let mut scan = tree.scan(Bound::Included(vec![Datum::Int8(lv[mid].1)]), Bound::Unbounded, ScanDirection::Forward).unwrap();
                let mut got = vec![scan.next().unwrap().unwrap().to_vec()];
                insert_between(&tree, &desc, lv[mid].1, lv[mid + 2].2, 400, &mut rng, &mut next_block);
                got.extend(drain(&mut scan));
                assert_complete(&desc, &got, ScanDirection::Forward, &base, lv[mid].1, i64::MAX);
            }
        }
        btree::check(&pool, r, &desc, "interleaved").unwrap();
    }
}

#[test]
fn concurrent_readers_see_every_committed_entry_once() {
    let dir = tempfile::tempdir().unwrap();
    // Small enough that readers and the writer evict each other's pages.
    let pool = pool(dir.path(), 96);
    let r = rel(200);
    let (desc, base) = wide(&pool, r, 6000);
    // The writer's keys, decided up front: readers know which ones were inserted before
    // their scan started.
    let mut rng = Rng(555);
    let mut used = HashSet::new();
    let inserts: Vec<Entry> = (0..12_000u32)
        .filter_map(|i| {
            let k = rng.below(60_000) as i64;
            (k % 10 != 0 && used.insert(k)).then(|| wide_entry(&desc, k, 2_000_000 + i, true))
        })
        .collect();
    let inserted = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let scans = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for reader in 0..6u64 {
            let (pool, desc, base, inserts, inserted, done, scans) = (&pool, &desc, &base, &inserts, &inserted, &done, &scans);
            scope.spawn(move || {
                let tree = BTree::open(pool, r, desc);
                let mut rng = Rng(reader * 7919 + 13);
                while !done.load(AtomicOrdering::Acquire) {
                    let committed = inserted.load(AtomicOrdering::Acquire);
                    let direction = if rng.below(2) == 0 { ScanDirection::Forward } else { ScanDirection::Backward };
                    let (lo, hi) = match rng.below(3) {
                        0 => (i64::MIN, i64::MAX),
                        _ => {
                            let a = rng.below(61_000) as i64;
                            (a, a + rng.below(20_000) as i64)
                        }
                    };
                    let bound = |k: i64, unbounded: bool| if unbounded { Bound::Unbounded } else { Bound::Included(vec![Datum::Int8(k)]) };
                    let got = if rng.below(8) == 0 && lo != i64::MIN {
                        let mut got = Vec::new();
                        tree.visit_equal(&wide_entry(desc, lo - lo % 10, 0, false).bytes, |e| {
                            got.push(e.to_vec());
                            Ok(true)
                        })
                        .unwrap();
                        assert_eq!(got.len(), usize::from(lo - lo % 10 < 60_000), "visit_equal {}", lo - lo % 10);
                        continue;
                    } else {
                        drain(&mut tree.scan(bound(lo, lo == i64::MIN), bound(hi, hi == i64::MAX), direction).unwrap())
                    };
                    assert_complete(desc, &got, direction, base, lo, hi);
                    assert_complete(desc, &got, direction, &inserts[..committed], lo, hi);
                    scans.fetch_add(1, AtomicOrdering::Relaxed);
                }
            });
        }
        let tree = BTree::open(&pool, r, &desc);
        for (i, e) in inserts.iter().enumerate() {
            tree.insert(&e.bytes).unwrap();
            inserted.store(i + 1, AtomicOrdering::Release);
        }
        done.store(true, AtomicOrdering::Release);
    });
    assert!(scans.load(AtomicOrdering::Relaxed) >= 6, "readers barely ran");
    let mut model: Vec<Entry> = base.into_iter().chain(inserts).collect();
    sort_model(desc.columns(), &mut model);
    assert_same(&pool, r, &desc, &model);
}

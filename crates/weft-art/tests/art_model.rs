//! `Art` against `BTreeMap<Vec<u8>, u64>`: random operation sequences over key
//! families chosen so that shared paths, prefix-of-other keys, the empty key,
//! long (heap-stored) prefixes and dense/sparse integer keys are common.
//! `verify()` runs after every operation.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use proptest::sample::select;
use weft_art::art::{Art, NodeStats, NODE16_SHRINK_AT, NODE256_SHRINK_AT, NODE48_SHRINK_AT};

#[derive(Clone, Debug)]
enum Op {
    Insert(Vec<u8>, u64),
    Remove(Vec<u8>),
    Get(Vec<u8>),
    RemovePrefix(Vec<u8>),
    Iter,
    PrefixIter(Vec<u8>),
    IterFrom(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
}

/// Short keys over a 4-letter alphabet: many shared paths, the empty key,
/// keys that are prefixes of others.
fn small_alphabet_key() -> BoxedStrategy<Vec<u8>> {
    proptest::collection::vec(select(vec![0u8, 1, b'a', 255]), 0..=6).boxed()
}

fn dense_u32_key() -> BoxedStrategy<Vec<u8>> {
    (0u32..600).prop_map(|i| i.to_be_bytes().to_vec()).boxed()
}

/// Spread over the whole u32 range but drawn from a small pool, so removes
/// and gets hit.
fn sparse_u32_key() -> BoxedStrategy<Vec<u8>> {
    (0u32..200).prop_map(|i| i.wrapping_mul(0x9E37_79B9).to_be_bytes().to_vec()).boxed()
}

/// A long run of one byte cut at any length, then a short tail: prefixes
/// longer than the inline capacity get split and merged at every position.
fn long_path_key() -> BoxedStrategy<Vec<u8>> {
    (0usize..=34, proptest::collection::vec(0u8..3, 0..3))
        .prop_map(|(run, tail)| {
            let mut key = vec![b'z'; run];
            key.extend(tail);
            key
        })
        .boxed()
}

fn mixed_key() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![small_alphabet_key(), dense_u32_key(), sparse_u32_key(), long_path_key()].boxed()
}

/// A key of the family cut short by up to 4 bytes: a prefix that often
/// covers something.
fn prefix_of(keys: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    (keys, 0usize..=4).prop_map(|(key, cut)| key[..key.len().saturating_sub(cut)].to_vec()).boxed()
}

fn bound(keys: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        3 => keys.clone().prop_map(Bound::Included),
        3 => keys.prop_map(Bound::Excluded),
    ]
    .boxed()
}

fn op(keys: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Op> {
    prop_oneof![
        12 => (keys.clone(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        6 => keys.clone().prop_map(Op::Remove),
        3 => keys.clone().prop_map(Op::Get),
        1 => prefix_of(keys.clone()).prop_map(Op::RemovePrefix),
        1 => Just(Op::Iter),
        2 => prefix_of(keys.clone()).prop_map(Op::PrefixIter),
        2 => keys.clone().prop_map(Op::IterFrom),
        2 => (bound(keys.clone()), bound(keys)).prop_map(|(lo, hi)| Op::Range(lo, hi)),
    ]
    .boxed()
}

fn within(key: &[u8], lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
    let above = match lower {
        Bound::Included(lo) => key >= lo.as_slice(),
        Bound::Excluded(lo) => key > lo.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match upper {
        Bound::Included(hi) => key <= hi.as_slice(),
        Bound::Excluded(hi) => key < hi.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

fn collect<'a>(iter: impl Iterator<Item = (&'a [u8], &'a u64)>) -> Vec<(Vec<u8>, u64)> {
    iter.map(|(k, v)| (k.to_vec(), *v)).collect()
}

fn collect_model<'a>(iter: impl Iterator<Item = (&'a Vec<u8>, &'a u64)>) -> Vec<(Vec<u8>, u64)> {
    iter.map(|(k, v)| (k.clone(), *v)).collect()
}

fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Applies `ops` to both maps and compares every answer.
fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut art = Art::new();
    let mut model = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(k, v) => prop_assert_eq!(art.insert(k, *v), model.insert(k.clone(), *v)),
            Op::Remove(k) => prop_assert_eq!(art.remove(k), model.remove(k)),
            Op::Get(k) => prop_assert_eq!(art.get(k), model.get(k)),
            Op::RemovePrefix(p) => {
                let doomed: Vec<Vec<u8>> = model.keys().filter(|k| k.starts_with(p)).cloned().collect();
                for k in &doomed {
                    model.remove(k);
                }
                prop_assert_eq!(art.remove_prefix(p), doomed.len());
            }
            Op::Iter => prop_assert_eq!(collect(art.iter()), collect_model(model.iter())),
            Op::PrefixIter(p) => prop_assert_eq!(
                collect(art.prefix_iter(p)),
                collect_model(model.iter().filter(|(k, _)| k.starts_with(p)))
            ),
            Op::IterFrom(k) => prop_assert_eq!(collect(art.iter_from(k)), collect_model(model.range(k.clone()..))),
            Op::Range(lo, hi) => prop_assert_eq!(
                collect(art.range((as_slice_bound(lo), as_slice_bound(hi)))),
                collect_model(model.iter().filter(|(k, _)| within(k, lo, hi)))
            ),
        }
        prop_assert_eq!(art.len(), model.len());
        if let Err(e) = art.verify() {
            return Err(TestCaseError::fail(format!("verify after {op:?}: {e}")));
        }
    }
    prop_assert_eq!(collect(art.iter()), collect_model(model.iter()));
    for (k, v) in &model {
        prop_assert_eq!(art.get(k), Some(v));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn model_small_alphabet(ops in proptest::collection::vec(op(small_alphabet_key()), 1..300)) {
        run(&ops)?;
    }

    #[test]
    fn model_dense_u32(ops in proptest::collection::vec(op(dense_u32_key()), 1..400)) {
        run(&ops)?;
    }

    #[test]
    fn model_sparse_u32(ops in proptest::collection::vec(op(sparse_u32_key()), 1..300)) {
        run(&ops)?;
    }

    #[test]
    fn model_long_paths(ops in proptest::collection::vec(op(long_path_key()), 1..200)) {
        run(&ops)?;
    }

    #[test]
    fn model_mixed(ops in proptest::collection::vec(op(mixed_key()), 1..400)) {
        run(&ops)?;
    }

    /// All 256 children of one node inserted and then removed, each in a
    /// random order: the node passes through every kind both ways, at the
    /// child counts the thresholds prescribe.
    #[test]
    fn node_grows_and_shrinks_through_all_kinds(
        insert_order in Just((0..=255u8).collect::<Vec<u8>>()).prop_shuffle(),
        remove_order in Just((0..=255u8).collect::<Vec<u8>>()).prop_shuffle(),
        with_value in any::<bool>(),
    ) {
        let mut art = Art::new();
        // A sibling outside the node, so the node is not the root.
        art.insert(b"q", 0u64);
        if with_value {
            art.insert(b"p", 0);
        }
        for (n, &byte) in insert_order.iter().enumerate() {
            art.insert(&[b'p', byte, 7], u64::from(byte));
            art.verify().map_err(TestCaseError::fail)?;
            let children = n + 1;
            let expected = match children {
                1 if !with_value => None, // one key below "p": just a leaf
                1..=4 => Some(0),
                5..=16 => Some(1),
                17..=48 => Some(2),
                _ => Some(3),
            };
            prop_assert_eq!(kind_of_p(&art.stats()), expected, "{} children", children);
        }
        for (n, &byte) in remove_order.iter().enumerate() {
            prop_assert_eq!(art.remove(&[b'p', byte, 7]), Some(u64::from(byte)));
            art.verify().map_err(TestCaseError::fail)?;
            let children = 255 - n;
            let expected = match children {
                0 => None,
                1 if !with_value => None,
                c if c <= NODE16_SHRINK_AT => Some(0),
                c if c <= NODE48_SHRINK_AT => Some(1),
                c if c <= NODE256_SHRINK_AT => Some(2),
                _ => Some(3),
            };
            prop_assert_eq!(kind_of_p(&art.stats()), expected, "{} children left", children);
        }
        prop_assert_eq!(art.len(), 1 + usize::from(with_value));
    }
}

/// The kind (0..=3 for Node4..Node256) of the node below "p". The root is a
/// Node4 over 'p' and 'q' while anything starts with "p" (one Node4 to
/// discount), else the leaf "q" (no Node4 at all).
fn kind_of_p(stats: &NodeStats) -> Option<usize> {
    let counts = [stats.node4.saturating_sub(1), stats.node16, stats.node48, stats.node256];
    assert!(counts.iter().sum::<usize>() <= 1, "{stats:?}");
    counts.iter().position(|&c| c == 1)
}

#[test]
fn memory_returns_to_baseline_after_remove_prefix() {
    let mut art = Art::new();
    art.insert(b"other", 1u64);
    let baseline = art.memory_bytes();
    for i in 0..5000u32 {
        let mut key = vec![1, 2, 3];
        key.extend_from_slice(&i.wrapping_mul(2_654_435_761).to_be_bytes());
        art.insert(&key, u64::from(i));
    }
    let stats = art.stats();
    assert!(stats.node256 + stats.node48 > 0, "{stats:?}");
    assert_eq!(art.remove_prefix(&[1, 2]), 5000);
    art.verify().unwrap();
    assert_eq!(art.memory_bytes(), baseline);
    assert_eq!(art.len(), 1);
}

//! `OlcArt` against a `BTreeMap` model, single-threaded, with `verify()` after every
//! operation: keys of 1, 4, 13 and 16 bytes, dense and sparse, growth and shrinking
//! through every node kind, `remove_prefix` at every prefix length.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use weft_art::olc::{LastLevelHint, NodeCounts, NodePool, OlcArt};

type Model = BTreeMap<Vec<u8>, u64>;

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, u64),
    Upsert(Vec<u8>, u64),
    Remove(Vec<u8>),
    RemoveIf(Vec<u8>, u64),
    Get(Vec<u8>),
    RemovePrefix(Vec<u8>, usize),
    ForEachPrefix(Vec<u8>, usize),
    ForEach,
    Clear,
}

/// Dense (one node fills up), binary (many Node4s), clustered and sparse keys.
fn key_strategy(key_len: usize) -> BoxedStrategy<Vec<u8>> {
    let dense = (any::<u8>(), 0u8..3).prop_map(move |(last, middle)| {
        let mut key = vec![7u8; key_len];
        key[key_len - 1] = last;
        if key_len > 1 {
            key[key_len / 2] = middle;
        }
        key
    });
    let binary = proptest::collection::vec(0u8..2, key_len);
    let clustered = proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0x80), Just(0xff), 0u8..20], key_len);
    let sparse = proptest::collection::vec(any::<u8>(), key_len);
    prop_oneof![3 => dense, 2 => binary, 2 => clustered, 1 => sparse].boxed()
}

/// Small values (held inline in last-level nodes) and values too large for that
/// (held in leaves), so both representations and conversions between them occur.
fn value_strategy() -> BoxedStrategy<u64> {
    prop_oneof![3 => 0u64..1000, 1 => (1u64 << 61)..=u64::MAX, 1 => any::<u64>()].boxed()
}

fn op_strategy(key_len: usize) -> impl Strategy<Value = Op> {
    let key = key_strategy(key_len);
    prop_oneof![
        6 => (key.clone(), value_strategy()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => (key.clone(), value_strategy()).prop_map(|(k, v)| Op::Upsert(k, v)),
        4 => key.clone().prop_map(Op::Remove),
        1 => (key.clone(), 0u64..3).prop_map(|(k, v)| Op::RemoveIf(k, v)),
        2 => key.clone().prop_map(Op::Get),
        1 => (key.clone(), 0..=key_len).prop_map(|(k, l)| Op::RemovePrefix(k, l)),
        1 => (key, 0..=key_len).prop_map(|(k, l)| Op::ForEachPrefix(k, l)),
        1 => Just(Op::ForEach),
        1 => Just(Op::Clear).prop_filter("rare", |_| true),
    ]
}

fn model_prefix(model: &Model, prefix: &[u8]) -> Vec<(Vec<u8>, u64)> {
    model.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(k, v)| (k.clone(), *v)).collect()
}

fn collect_prefix(tree: &OlcArt, prefix: &[u8]) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    tree.for_each_prefix(prefix, |k, v| out.push((k.to_vec(), v)));
    out
}

/// `hint` lives across the operations, so hinted lookups meet nodes that grew, shrank,
/// were replaced or freed since the hint was taken.
fn apply(tree: &OlcArt, model: &mut Model, hint: &mut LastLevelHint, op: &Op) -> Result<(), TestCaseError> {
    match op {
        Op::Insert(k, v) => {
            let expected = match model.get(k) {
                Some(&old) => Err(old),
                None => {
                    model.insert(k.clone(), *v);
                    Ok(())
                }
            };
            prop_assert_eq!(tree.insert_if_absent(k, *v).expect("memory"), expected);
        }
        Op::Upsert(k, v) => {
            prop_assert_eq!(tree.upsert(k, *v).expect("memory"), model.insert(k.clone(), *v));
        }
        Op::Remove(k) => prop_assert_eq!(tree.remove(k), model.remove(k)),
        Op::RemoveIf(k, v) => {
            let expected = model.get(k) == Some(v);
            if expected {
                model.remove(k);
            }
            prop_assert_eq!(tree.remove_if(k, *v), expected);
        }
        Op::Get(k) => {
            prop_assert_eq!(tree.get(k), model.get(k).copied());
            prop_assert_eq!(tree.get_hinted(k, hint), model.get(k).copied());
        }
        Op::RemovePrefix(k, l) => {
            let expected = model_prefix(model, &k[..*l]);
            for (key, _) in &expected {
                model.remove(key);
            }
            prop_assert_eq!(tree.remove_prefix(&k[..*l]), expected);
        }
        Op::ForEachPrefix(k, l) => prop_assert_eq!(collect_prefix(tree, &k[..*l]), model_prefix(model, &k[..*l])),
        Op::ForEach => prop_assert_eq!(collect_prefix(tree, &[]), model_prefix(model, &[])),
        Op::Clear => {
            let expected: Vec<_> = std::mem::take(model).into_iter().collect();
            prop_assert_eq!(tree.clear(), expected);
        }
    }
    if let Err(violation) = tree.verify() {
        return Err(TestCaseError::fail(format!("verify after {op:?}: {violation}")));
    }
    prop_assert_eq!(tree.len(), model.len());
    Ok(())
}

fn run_ops(key_len: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let pool = NodePool::new(NodePool::worst_case_bytes(ops.len() + 1, key_len));
    let mut model = Model::new();
    {
        let tree = OlcArt::new(key_len, Arc::clone(&pool));
        let mut hint = LastLevelHint::EMPTY;
        for op in ops {
            apply(&tree, &mut model, &mut hint, op)?;
        }
        prop_assert_eq!(collect_prefix(&tree, &[]), model_prefix(&model, &[]));
    }
    // Dropping the tree returned its nodes; what is left is in the grace period.
    let mut retired_left = pool.retired_nodes();
    for _ in 0..4 {
        if retired_left == 0 {
            break;
        }
        let fresh = OlcArt::new(key_len, Arc::clone(&pool));
        drop(fresh);
        retired_left = pool.retired_nodes();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn model_key_len_1(ops in proptest::collection::vec(op_strategy(1), 1..300)) {
        run_ops(1, &ops)?;
    }

    #[test]
    fn model_key_len_4(ops in proptest::collection::vec(op_strategy(4), 1..400)) {
        run_ops(4, &ops)?;
    }

    #[test]
    fn model_key_len_13(ops in proptest::collection::vec(op_strategy(13), 1..400)) {
        run_ops(13, &ops)?;
    }

    #[test]
    fn model_key_len_16(ops in proptest::collection::vec(op_strategy(16), 1..400)) {
        run_ops(16, &ops)?;
    }
}

fn key4(prefix: [u8; 3], last: u8) -> [u8; 4] {
    [prefix[0], prefix[1], prefix[2], last]
}

/// One node grows Node4 -> 16 -> 48 -> 256 and shrinks back with the hysteresis of
/// README rule 3, then collapses into its last leaf.
#[test]
fn grow_and_shrink_through_every_kind() {
    let pool = NodePool::new(NodePool::worst_case_bytes(1024, 4));
    let tree = OlcArt::new(4, pool);
    let kind_of = |counts: NodeCounts| -> &'static str {
        match (counts.node4, counts.node16, counts.node48, counts.node256) {
            (0, 0, 0, 0) => "none",
            (1, 0, 0, 0) => "4",
            (0, 1, 0, 0) => "16",
            (0, 0, 1, 0) => "48",
            (0, 0, 0, 1) => "256",
            _ => "mixed",
        }
    };
    for last in 0..=255u8 {
        tree.insert_if_absent(&key4([1, 2, 3], last), last as u64).unwrap().unwrap();
        tree.verify().unwrap();
        let n = last as usize + 1;
        let expected = match n {
            1 => "none",
            2..=4 => "4",
            5..=16 => "16",
            17..=48 => "48",
            _ => "256",
        };
        assert_eq!(kind_of(tree.node_counts()), expected, "after {n} inserts");
    }
    for last in (0..=255u8).rev() {
        assert_eq!(tree.remove(&key4([1, 2, 3], last)), Some(last as u64));
        tree.verify().unwrap();
        let n = last as usize;
        let expected = match n {
            0 | 1 => "none",
            38..=256 => "256",
            13..=37 => "48",
            4..=12 => "16",
            _ => "4",
        };
        assert_eq!(kind_of(tree.node_counts()), expected, "after removing down to {n}");
    }
    assert!(tree.is_empty());
}

/// `remove_prefix` of every prefix length (and of absent prefixes) on trees with
/// compressed paths, leaves at every depth, and all node kinds.
#[test]
fn remove_prefix_every_length() {
    for key_len in [1usize, 4, 13, 16] {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for a in 0..3u8 {
            for b in [0u8, 1, 200] {
                for c in 0..20u8 {
                    let mut key = vec![9u8; key_len];
                    key[0] = a * 40;
                    if key_len > 1 {
                        key[key_len / 2] = b;
                        key[key_len - 1] = c.wrapping_mul(13);
                    } else {
                        key[0] = a * 40 + b.wrapping_mul(3) + c;
                    }
                    keys.push(key);
                }
            }
        }
        keys.sort();
        keys.dedup();
        let mut prefixes: Vec<Vec<u8>> = Vec::new();
        for key in &keys {
            for len in 0..=key_len {
                prefixes.push(key[..len].to_vec());
            }
        }
        prefixes.push(vec![255u8; key_len.min(2)]);
        prefixes.push(vec![0u8, 3, 3, 3][..key_len.min(4)].to_vec());
        prefixes.sort();
        prefixes.dedup();
        let pool = NodePool::new(NodePool::worst_case_bytes(keys.len(), key_len));
        for prefix in &prefixes {
            let tree = OlcArt::new(key_len, Arc::clone(&pool));
            let mut model = Model::new();
            for (i, key) in keys.iter().enumerate() {
                tree.insert_if_absent(key, i as u64).unwrap().unwrap();
                model.insert(key.clone(), i as u64);
            }
            let expected = model_prefix(&model, prefix);
            assert_eq!(tree.remove_prefix(prefix), expected, "key_len {key_len} prefix {prefix:?}");
            tree.verify().unwrap_or_else(|e| panic!("key_len {key_len} prefix {prefix:?}: {e}"));
            model.retain(|k, _| !k.starts_with(prefix));
            assert_eq!(collect_prefix(&tree, &[]), model_prefix(&model, &[]));
            assert_eq!(tree.len(), model.len());
        }
    }
}

/// Scans longer than one batch (the restart-from-last-key path) in order.
#[test]
fn long_scans_cross_batches() {
    let pool = NodePool::new(NodePool::worst_case_bytes(5000, 4));
    let tree = OlcArt::new(4, pool);
    for i in 0..5000u32 {
        tree.insert_if_absent(&(i * 7919 % 100_000).to_be_bytes(), i as u64).unwrap().unwrap();
    }
    let mut seen = Vec::new();
    tree.for_each(|k, _| seen.push(u32::from_be_bytes(k.try_into().unwrap())));
    assert_eq!(seen.len(), 5000);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    let mut in_prefix = 0;
    tree.for_each_prefix(&[0, 1], |k, _| {
        assert_eq!(&k[..2], &[0, 1]);
        in_prefix += 1;
    });
    assert_eq!(in_prefix, seen.iter().filter(|&&k| k >> 16 == 1).count());
}

/// A callback may use the tree (the scan holds no pin while calling it).
#[test]
fn callback_may_modify_the_tree() {
    let pool = NodePool::new(NodePool::worst_case_bytes(1000, 4));
    let tree = OlcArt::new(4, pool);
    for i in 0..500u32 {
        tree.insert_if_absent(&i.to_be_bytes(), i as u64).unwrap().unwrap();
    }
    let mut visited = 0;
    tree.for_each(|k, v| {
        visited += 1;
        assert_eq!(tree.remove(k), Some(v));
    });
    assert_eq!(visited, 500);
    assert!(tree.is_empty());
    tree.verify().unwrap();
}

/// The tree and the pool are shared between threads.
#[test]
fn tree_and_pool_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<OlcArt>();
    assert_send_sync::<NodePool>();
}

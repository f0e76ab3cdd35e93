//! The node pool: `worst_case_bytes` is an upper bound (trees built in the worst shape
//! of every node kind fit a pool of exactly that size), and a pool that is too small
//! answers `OutOfNodeMemory` — never a panic — and leaves the tree consistent.

use std::collections::BTreeMap;
use std::sync::Arc;

use weft_art::olc::{NodeCounts, NodePool, OlcArt, OutOfNodeMemory};

/// All keys of `len` bytes over the alphabet `0..arity`, in order.
fn all_keys(arity: u8, len: usize) -> Vec<Vec<u8>> {
    let mut keys = vec![Vec::new()];
    for _ in 0..len {
        keys = keys.into_iter().flat_map(|k| (0..arity).map(move |b| [k.clone(), vec![b]].concat())).collect();
    }
    keys
}

/// A complete `arity`-ary trie of depth `len` whose every inner node is of the kind
/// that holds `arity` children at the kind's minimum fill: built with `arity`
/// children, then, where the kind is larger than the smallest that fits `arity`,
/// grown by temporary keys (bytes `arity..grow_to`) that are removed again.
fn build_min_fill(tree: &OlcArt, arity: u8, len: usize, grow_to: u8) -> usize {
    let keys = all_keys(arity, len);
    for (i, key) in keys.iter().enumerate() {
        tree.insert_if_absent(key, i as u64).unwrap().unwrap();
    }
    if grow_to > arity {
        for depth in 0..len {
            for prefix in all_keys(arity, depth) {
                let temporary: Vec<Vec<u8>> = (arity..grow_to)
                    .map(|b| {
                        let mut key = prefix.clone();
                        key.push(b);
                        key.resize(len, 0);
                        key
                    })
                    .collect();
                for key in &temporary {
                    tree.insert_if_absent(key, 0).unwrap().unwrap();
                }
                for key in &temporary {
                    assert_eq!(tree.remove(key), Some(0));
                }
            }
        }
    }
    tree.verify().unwrap();
    keys.len()
}

fn inner_nodes(arity: usize, len: u32) -> usize {
    (arity.pow(len) - 1) / (arity - 1)
}

/// Four trees, each the worst shape for one inner kind (every node at that kind's
/// minimum fill), share one pool sized by `worst_case_bytes` of their total entries
/// (plus the temporary keys of the construction).
#[test]
fn worst_shapes_fit_worst_case_bytes() {
    // (arity, key length, grow_to, expected counts of that kind)
    // Node4 at 2 children: binary trie; Node16 at 4: grown at 5; Node48 at 13: grown
    // at 17; Node256 at 38: grown at 49.
    let binary_entries = 1usize << 13;
    let entries = binary_entries + 4usize.pow(6) + 13usize.pow(3) + 38usize.pow(2);
    let temporary_max = 49 - 38;
    let bytes = NodePool::worst_case_bytes(entries + temporary_max, 16);
    let pool = NodePool::new(bytes);
    assert!(pool.capacity_bytes() <= bytes);

    type Shape = (u8, usize, u8, fn(NodeCounts) -> usize);
    let shapes: [Shape; 4] = [
        (2, 13, 2, |c| c.node4),
        (4, 6, 5, |c| c.node16),
        (13, 3, 17, |c| c.node48),
        (38, 2, 49, |c| c.node256),
    ];
    let mut trees = Vec::new();
    for (arity, len, grow_to, of_kind) in shapes {
        let tree = OlcArt::new(len, Arc::clone(&pool));
        let n = build_min_fill(&tree, arity, len, grow_to);
        let counts = tree.node_counts();
        assert_eq!(counts.leaves + counts.inline_values, n);
        assert_eq!(of_kind(counts), inner_nodes(arity as usize, len as u32), "arity {arity}: {counts:?}");
        trees.push(tree);
    }
    let total: usize = trees.iter().map(|t| t.len()).sum();
    assert_eq!(total, entries);
    assert!(pool.used_bytes() <= pool.capacity_bytes());
}

/// The bound is close: a single binary trie of n entries uses n - 1 Node4 slots, and
/// the pool has exactly n + slack of them.
#[test]
fn worst_case_is_tight_for_node4() {
    let n = 1usize << 12;
    let pool = NodePool::new(NodePool::worst_case_bytes(n, 12));
    let tree = OlcArt::new(12, Arc::clone(&pool));
    build_min_fill(&tree, 2, 12, 2);
    let free = pool.free_slots();
    let counts = tree.node_counts();
    assert_eq!(counts.node4, n - 1);
    // n - 1 Node4s used; the slack (64 per class) and one Node4 are left. The entries
    // under last-level nodes are inline values, the others leaves.
    assert_eq!(free[1], 65);
    assert_eq!(counts.leaves + counts.inline_values, n);
    assert_eq!(free[0], n + 64 - counts.leaves);
}

/// A pool too small: inserts eventually return OutOfNodeMemory, the tree stays
/// consistent and holds exactly what was inserted, and removals make room again.
#[test]
fn out_of_node_memory_is_an_error_not_a_panic() {
    for bytes in [0usize, 3000, 20_000, NodePool::worst_case_bytes(300, 8)] {
        let pool = NodePool::new(bytes);
        let tree = OlcArt::new(8, Arc::clone(&pool));
        let mut model = BTreeMap::new();
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut failures = 0;
        for i in 0..5000u64 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let key = state.to_be_bytes();
            let result = if i % 2 == 0 { tree.insert_if_absent(&key, i).map(|r| r.is_ok()) } else { tree.upsert(&key, i).map(|r| r.is_none()) };
            match result {
                Ok(true) => {
                    model.insert(key.to_vec(), i);
                }
                Ok(false) => unreachable!("random 8-byte keys do not repeat here"),
                Err(OutOfNodeMemory) => {
                    failures += 1;
                    assert_eq!(tree.get(&key), None, "a failed insert left its key");
                }
            }
            tree.verify().unwrap();
        }
        assert!(failures > 0, "pool of {bytes} bytes never ran out");
        assert_eq!(tree.len(), model.len());
        let mut contents = BTreeMap::new();
        tree.for_each(|k, v| {
            contents.insert(k.to_vec(), v);
        });
        assert_eq!(contents, model);
        if model.is_empty() {
            continue;
        }
        // Free half, then inserting works again (slots come back after the grace period).
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        for key in keys.iter().step_by(2) {
            assert_eq!(tree.remove(key), model.remove(key));
            tree.verify().unwrap();
        }
        let mut reinserted = 0;
        for key in keys.iter().step_by(2) {
            if tree.insert_if_absent(key, 7).unwrap().is_ok() {
                reinserted += 1;
            }
            tree.verify().unwrap();
        }
        assert_eq!(reinserted, keys.iter().step_by(2).count());
    }
}

/// Dropping a tree returns its nodes; the pool's byte count falls back.
#[test]
fn drop_returns_nodes() {
    let pool = NodePool::new(NodePool::worst_case_bytes(10_000, 4));
    {
        let tree = OlcArt::new(4, Arc::clone(&pool));
        for i in 0..10_000u32 {
            tree.insert_if_absent(&i.wrapping_mul(2_654_435_761).to_be_bytes(), 1).unwrap().unwrap();
        }
        assert!(pool.used_bytes() > 10_000 * 24);
        for i in 0..5_000u32 {
            tree.remove(&i.wrapping_mul(2_654_435_761).to_be_bytes()).unwrap();
        }
    }
    // What remains is in the reclamation queue; a fresh tree's failing insert would
    // drain it, and so does any later collection. Force one through a tiny tree.
    let used_after_drop = pool.used_bytes();
    assert!(used_after_drop <= pool.retired_nodes() * 2080);
}

/// Removing from a last-level node whose other child is an inline value needs a leaf
/// for that value (it moves up, where only leaves live). With no leaf to be had, the
/// removal still succeeds: the node stays with one child, and removing that child
/// unlinks the node. The tree stays consistent throughout.
#[test]
fn removal_without_memory_for_a_collapse_leaf() {
    // 8 slots in every class.
    let pool = NodePool::new(NodePool::worst_case_bytes(0, 2) / 64 * 8);
    let tree = OlcArt::new(2, Arc::clone(&pool));
    let mut model = BTreeMap::new();
    // Three last-level Node4s holding inline values [a, 1] and [a, 2] (the first key
    // under a new node is a leaf, [a, 0], removed again).
    for a in [10u8, 20, 30] {
        for b in [0u8, 1, 2] {
            tree.insert_if_absent(&[a, b], (a + b) as u64).unwrap().unwrap();
        }
        assert_eq!(tree.remove(&[a, 0]), Some(a as u64));
        for b in [1u8, 2] {
            model.insert(vec![a, b], (a + b) as u64);
        }
    }
    assert_eq!(tree.node_counts().leaves, 0);
    // Exhaust the leaves with values too large to be inline.
    let mut filler = 100u8;
    loop {
        match tree.insert_if_absent(&[filler, 0], u64::MAX - filler as u64) {
            Ok(Ok(())) => {
                model.insert(vec![filler, 0], u64::MAX - filler as u64);
                filler += 1;
            }
            Err(OutOfNodeMemory) => break,
            Ok(Err(_)) => unreachable!(),
        }
    }
    tree.verify().unwrap();
    // Each removal would collapse a Node4 into an inline value that needs a leaf.
    for a in [10u8, 20, 30] {
        assert_eq!(tree.remove(&[a, 1]), Some(a as u64 + 1));
        model.remove(&vec![a, 1]);
        tree.verify().unwrap();
    }
    // One-child nodes are left where no leaf could be had (no collapse happened).
    let counts = tree.node_counts();
    assert_eq!(counts.node4, 3, "{counts:?}");
    assert_eq!(counts.inline_values, 3, "{counts:?}");
    // Removing the last child unlinks them.
    for a in [10u8, 20, 30] {
        assert_eq!(tree.get(&[a, 2]), Some(a as u64 + 2));
        assert_eq!(tree.remove(&[a, 2]), Some(a as u64 + 2));
        model.remove(&vec![a, 2]);
        tree.verify().unwrap();
    }
    let mut contents = BTreeMap::new();
    tree.for_each(|k, v| {
        contents.insert(k.to_vec(), v);
    });
    assert_eq!(contents, model);
    assert_eq!(tree.len(), model.len());
    let counts = tree.node_counts();
    assert_eq!(counts.leaves, model.len(), "{counts:?}");
    assert_eq!(counts.node4 + counts.node16 + counts.node48 + counts.node256, 1, "{counts:?}");
}

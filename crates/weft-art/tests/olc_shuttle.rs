//! The optimistic-lock-coupling protocol under shuttle's schedulers (randomized and
//! PCT). Built only with the `shuttle` feature, which routes every atomic, lock and
//! thread-local of `olc/` through shuttle (`olc/sync.rs`):
//!
//! ```text
//! cargo test --release -p weft-art --features shuttle --test olc_shuttle
//! ```
//!
//! Scenarios: concurrent inserts that grow a node; an insert and a remove on the same
//! node (collapse); a reader racing node replacements (grow, shrink, collapse); and
//! `remove_prefix` racing inserts inside and outside the prefix; slot reuse (epoch
//! reclamation) racing a reader in a pool too small to work without it. Each iteration checks
//! the exact outcome every interleaving must give, then `verify()`.
#![cfg(feature = "shuttle")]

use std::collections::BTreeSet;
use std::sync::Arc;

use shuttle::thread;
use weft_art::olc::{LastLevelHint, NodePool, OlcArt};

const RANDOM_ITERATIONS: usize = 1500;
const PCT_ITERATIONS: usize = 1500;
const PCT_DEPTH: usize = 3;

/// A small pool: `slots` slots in every size class.
fn small_pool(slots: usize) -> Arc<NodePool> {
    // worst_case_bytes(0, _) is the slack alone: 64 slots of each class.
    NodePool::new(NodePool::worst_case_bytes(0, 4) / 64 * slots)
}

fn key(a: u8, b: u8) -> [u8; 4] {
    [0, a, 0, b]
}

fn check(name: &str, scenario: fn()) {
    let _ = name;
    shuttle::check_random(scenario, RANDOM_ITERATIONS);
    shuttle::check_pct(scenario, PCT_ITERATIONS, PCT_DEPTH);
}

fn contents(tree: &OlcArt) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    tree.for_each(|k, v| out.push((k.to_vec(), v)));
    out
}

/// Two writers add the 4th and 5th children of a Node4 (one of them grows it into a
/// Node16) while a reader looks up the three that were there.
fn concurrent_inserts_grow() {
    let tree = Arc::new(OlcArt::new(4, small_pool(12)));
    for b in 0..3u8 {
        tree.insert_if_absent(&key(1, b), b as u64).unwrap().unwrap();
    }
    let writers: Vec<_> = [3u8, 4]
        .into_iter()
        .map(|b| {
            let tree = Arc::clone(&tree);
            thread::spawn(move || tree.insert_if_absent(&key(1, b), b as u64).unwrap().unwrap())
        })
        .collect();
    let reader = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            for b in 0..3u8 {
                assert_eq!(tree.get(&key(1, b)), Some(b as u64));
            }
        })
    };
    for writer in writers {
        writer.join().unwrap();
    }
    reader.join().unwrap();
    tree.verify().unwrap();
    let expected: Vec<_> = (0..5u8).map(|b| (key(1, b).to_vec(), b as u64)).collect();
    assert_eq!(contents(&tree), expected);
    assert_eq!(tree.node_counts().node16, 1);
}

/// On a two-child Node4 one thread removes a child (collapsing the node into the
/// grandparent) while another inserts a third child into it and a third inserts into
/// the grandparent in front of it (shifting the grandparent's child words).
fn insert_vs_remove_same_node() {
    let tree = Arc::new(OlcArt::new(4, small_pool(12)));
    // A Node4 under the root at [0, 1, 0, *] with children 1 and 2, beside [0, 2, ..].
    tree.insert_if_absent(&key(1, 1), 11).unwrap().unwrap();
    tree.insert_if_absent(&key(1, 2), 12).unwrap().unwrap();
    tree.insert_if_absent(&key(2, 9), 29).unwrap().unwrap();
    let remover = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || assert_eq!(tree.remove(&key(1, 1)), Some(11)))
    };
    let inserter = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || tree.insert_if_absent(&key(1, 3), 13).unwrap().unwrap())
    };
    let grandparent_inserter = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || tree.insert_if_absent(&key(0, 5), 5).unwrap().unwrap())
    };
    let reader = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            assert_eq!(tree.get(&key(1, 2)), Some(12));
            assert_eq!(tree.get(&key(2, 9)), Some(29));
        })
    };
    remover.join().unwrap();
    inserter.join().unwrap();
    grandparent_inserter.join().unwrap();
    reader.join().unwrap();
    tree.verify().unwrap();
    assert_eq!(
        contents(&tree),
        vec![
            (key(0, 5).to_vec(), 5),
            (key(1, 2).to_vec(), 12),
            (key(1, 3).to_vec(), 13),
            (key(2, 9).to_vec(), 29)
        ]
    );
}

/// A reader looks up (also through a last-level hint) and scans stable keys while a
/// writer replaces their node again and again: grow Node4 -> Node16, shrink back,
/// collapse, split.
fn reader_races_replacement() {
    let tree = Arc::new(OlcArt::new(4, small_pool(16)));
    for b in [10u8, 20, 30] {
        tree.insert_if_absent(&key(5, b), b as u64).unwrap().unwrap();
    }
    let writer = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            for b in [1u8, 2] {
                tree.insert_if_absent(&key(5, b), 0).unwrap().unwrap();
            }
            // 5 children: a Node16. Removing two shrinks it to a Node4 (3 left).
            for b in [1u8, 2] {
                assert_eq!(tree.remove(&key(5, b)), Some(0));
            }
            assert_eq!(tree.upsert(&key(5, 20), 21).unwrap(), Some(20));
        })
    };
    let reader = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            assert_eq!(tree.get(&key(5, 10)), Some(10));
            let twenty = tree.get(&key(5, 20));
            assert!(twenty == Some(20) || twenty == Some(21));
            // A hint taken before a replacement must not serve a lookup after it.
            let mut hint = LastLevelHint::EMPTY;
            for _ in 0..2 {
                assert_eq!(tree.get_hinted(&key(5, 30), &mut hint), Some(30));
                let twenty = tree.get_hinted(&key(5, 20), &mut hint);
                assert!(twenty == Some(20) || twenty == Some(21));
                assert_eq!(tree.get_hinted(&key(5, 3), &mut hint), None);
            }
            let seen: Vec<Vec<u8>> = contents(&tree).into_iter().map(|(k, _)| k).collect();
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "scan out of order");
            for stable in [key(5, 10), key(5, 20), key(5, 30)] {
                assert!(seen.contains(&stable.to_vec()), "scan lost a stable key");
            }
        })
    };
    writer.join().unwrap();
    reader.join().unwrap();
    tree.verify().unwrap();
    assert_eq!(
        contents(&tree),
        vec![(key(5, 10).to_vec(), 10), (key(5, 20).to_vec(), 21), (key(5, 30).to_vec(), 30)]
    );
    assert_eq!(tree.node_counts().node16, 0);
}

/// `remove_prefix([0, 1])` races an insert inside the prefix (into the subtree being
/// cut) and one outside it (into the subtree's parent). The inside key is either in the
/// returned entries or still in the tree, never both, never lost.
fn remove_prefix_races_inserts() {
    let tree = Arc::new(OlcArt::new(4, small_pool(16)));
    for b in [1u8, 2, 3] {
        tree.insert_if_absent(&key(1, b), b as u64).unwrap().unwrap();
    }
    tree.insert_if_absent(&key(2, 1), 21).unwrap().unwrap();
    let remover = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || tree.remove_prefix(&[0, 1]))
    };
    let inside = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || tree.insert_if_absent(&key(1, 4), 14).unwrap().unwrap())
    };
    let outside = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || tree.insert_if_absent(&key(3, 1), 31).unwrap().unwrap())
    };
    let removed = remover.join().unwrap();
    inside.join().unwrap();
    outside.join().unwrap();
    tree.verify().unwrap();
    let removed: BTreeSet<_> = removed.into_iter().collect();
    let left: BTreeSet<_> = contents(&tree).into_iter().collect();
    for b in [1u8, 2, 3] {
        assert!(removed.contains(&(key(1, b).to_vec(), b as u64)), "remove_prefix missed {b}");
    }
    let inside_entry = (key(1, 4).to_vec(), 14);
    assert!(removed.contains(&inside_entry) != left.contains(&inside_entry), "inside insert lost or doubled");
    assert!(left.contains(&(key(2, 1).to_vec(), 21)));
    assert!(left.contains(&(key(3, 1).to_vec(), 31)));
    assert!(removed.iter().all(|(k, _)| k.starts_with(&[0, 1])));
    assert_eq!(tree.len(), left.len());
}

/// Slots are recycled around a reader: a tiny pool, a writer that keeps replacing
/// leaves (values too large to be inline) and nodes, so its allocations succeed only
/// through `reclaim_blocking`, and a reader of stable keys that must always see their
/// values and of churned keys that must see nothing or a value the key really had.
/// Lookups do not pin (README rule 8, second line), so the reader may be inside a slot
/// while it is reused: this is the scenario that checks a reused slot costs only a
/// restart. (That no slot is reused while a pinned thread may see it is checked
/// directly by the unit tests in `olc/pool.rs`.)
fn reclamation_waits_for_readers() {
    let tree = Arc::new(OlcArt::new(4, small_pool(5)));
    let big = 1u64 << 62;
    for b in [1u8, 2] {
        tree.insert_if_absent(&[0, 1, 0, b], big + b as u64).unwrap().unwrap();
    }
    let writer = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            for round in 0..3u64 {
                for b in [3u8, 4] {
                    tree.insert_if_absent(&[0, 2, 0, b], big + 100 * round + b as u64).unwrap().unwrap();
                }
                for b in [3u8, 4] {
                    assert_eq!(tree.remove(&[0, 2, 0, b]), Some(big + 100 * round + b as u64));
                }
            }
        })
    };
    let reader = {
        let tree = Arc::clone(&tree);
        thread::spawn(move || {
            for _ in 0..2 {
                for b in [1u8, 2] {
                    assert_eq!(tree.get(&[0, 1, 0, b]), Some(big + b as u64));
                }
                for b in [3u8, 4] {
                    if let Some(value) = tree.get(&[0, 2, 0, b]) {
                        assert!((0..3u64).any(|round| value == big + 100 * round + b as u64), "{value}");
                    }
                }
            }
        })
    };
    writer.join().unwrap();
    reader.join().unwrap();
    tree.verify().unwrap();
    assert_eq!(tree.len(), 2);
}

#[test]
fn shuttle_reclamation_waits_for_readers() {
    check("reclamation_waits_for_readers", reclamation_waits_for_readers);
}

#[test]
fn shuttle_concurrent_inserts_grow() {
    check("concurrent_inserts_grow", concurrent_inserts_grow);
}

#[test]
fn shuttle_insert_vs_remove_same_node() {
    check("insert_vs_remove_same_node", insert_vs_remove_same_node);
}

#[test]
fn shuttle_reader_races_replacement() {
    check("reader_races_replacement", reader_races_replacement);
}

#[test]
fn shuttle_remove_prefix_races_inserts() {
    check("remove_prefix_races_inserts", remove_prefix_races_inserts);
}

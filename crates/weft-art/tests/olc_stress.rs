//! Eight threads (more than the machine's cores) on one `OlcArt` with overlapping key
//! sets, checked exactly through ownership:
//!
//! - region A (`[0, x, y, z]`): key id `i` belongs to thread `i % 8`, so neighbouring
//!   keys, which share nodes, belong to different threads. A thread inserts, removes
//!   (`remove_if`), reads and scans; for its own keys every answer must match its
//!   private model exactly (nobody else writes them), and a full scan must show its own
//!   keys exactly as the model has them.
//! - region B (`[0xEE, x, y, z]`): every thread inserts with globally unique values and
//!   any thread cuts whole subtrees with `remove_prefix`. At the end, every successful
//!   insert must have come back from exactly one `remove_prefix` or still be in the tree.
//!
//! Then `verify()` and a final comparison with the union of the models. No timing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Barrier};

use weft_art::olc::{LastLevelHint, NodePool, OlcArt};

const THREADS: usize = 8;
const KEYS_A: u32 = 2 * 1024;
const OPS_PER_THREAD: usize = 150_000;

/// xorshift64*: deterministic per-thread randomness.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn key_a(id: u32) -> [u8; 4] {
    // Hot, small nodes: 128 nodes of 16 keys (two per thread) that keep growing and
    // shrinking between Node4 and Node16 and collapsing, under one Node256 region of
    // 64 keys for the larger kinds. The low byte carries the owner (id % 8).
    if id < 2048 - 64 {
        [0, 1 + (id >> 11) as u8, (id >> 4) as u8, (id & 0xf) as u8 * 16 + (id & 7) as u8]
    } else {
        [0, 0, 0, (id & 0xff) as u8]
    }
}

fn key_b(x: u8, y: u8, z: u8) -> [u8; 4] {
    [0xEE, x, y, z]
}

struct ThreadResult {
    model: BTreeMap<[u8; 4], u64>,
    inserted_b: Vec<([u8; 4], u64)>,
    removed_b: Vec<(Vec<u8>, u64)>,
}

fn worker(tree: &OlcArt, thread: usize, barrier: &Barrier) -> ThreadResult {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (thread as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut model: BTreeMap<[u8; 4], u64> = BTreeMap::new();
    let mut inserted_b = Vec::new();
    let mut removed_b = Vec::new();
    let own_ids: Vec<u32> = (0..KEYS_A).filter(|id| *id as usize % THREADS == thread).collect();
    let mut unique = 0u64;
    let mut hint = LastLevelHint::EMPTY;
    barrier.wait();
    for step in 0..OPS_PER_THREAD {
        if step % 1024 == 0 {
            // Let the other threads in: two cores, eight threads.
            std::thread::yield_now();
        }
        let id = own_ids[rng.below(own_ids.len() as u64) as usize];
        let key = key_a(id);
        match rng.below(100) {
            0..=34 => {
                let value = rng.next();
                let expected = match model.get(&key) {
                    Some(&old) => Err(old),
                    None => Ok(()),
                };
                let got = tree.insert_if_absent(&key, value).expect("pool sized for every key");
                assert_eq!(got, expected, "thread {thread} insert {key:?}");
                if got.is_ok() {
                    model.insert(key, value);
                }
            }
            35..=59 => {
                let expected = model.get(&key).copied();
                let guess = if rng.below(4) == 0 { rng.next() } else { expected.unwrap_or(1) };
                let should = expected == Some(guess);
                assert_eq!(tree.remove_if(&key, guess), should, "thread {thread} remove_if {key:?}");
                if should {
                    model.remove(&key);
                }
            }
            60..=79 => {
                assert_eq!(tree.get(&key), model.get(&key).copied(), "thread {thread} get {key:?}");
                // Through a hint kept across steps: its node may have changed under other threads.
                assert_eq!(tree.get_hinted(&key, &mut hint), model.get(&key).copied(), "thread {thread} hinted {key:?}");
                // Another thread's key: any answer, but no crash and a consistent value type.
                let _ = tree.get(&key_a(rng.below(KEYS_A as u64) as u32));
            }
            80..=81 => {
                // A full scan: own keys exactly as the model has them, keys strictly increasing.
                let mut own = BTreeMap::new();
                let mut previous: Option<Vec<u8>> = None;
                tree.for_each(|k, v| {
                    if let Some(p) = &previous {
                        assert!(p.as_slice() < k, "scan out of order");
                    }
                    previous = Some(k.to_vec());
                    if k[0] == 0 && k[3] as usize % THREADS == thread {
                        own.insert(<[u8; 4]>::try_from(k).unwrap(), v);
                    }
                });
                assert_eq!(own, model, "thread {thread} scan at step {step}");
            }
            82..=95 => {
                unique += 1;
                let value = ((thread as u64) << 48) | unique;
                let key = key_b(rng.below(4) as u8, rng.below(16) as u8, rng.below(256) as u8);
                if tree.insert_if_absent(&key, value).expect("pool sized for every key").is_ok() {
                    inserted_b.push((key, value));
                }
            }
            _ => {
                let x = rng.below(4) as u8;
                let prefix: Vec<u8> =
                    if rng.below(3) == 0 { vec![0xEE, x] } else { vec![0xEE, x, rng.below(16) as u8] };
                let removed = tree.remove_prefix(&prefix);
                assert!(removed.iter().all(|(k, _)| k.starts_with(&prefix)));
                assert!(removed.windows(2).all(|w| w[0].0 < w[1].0));
                removed_b.extend(removed);
            }
        }
    }
    ThreadResult { model, inserted_b, removed_b }
}

#[test]
fn eight_threads_overlapping_keys() {
    let entries = KEYS_A as usize + 4 * 16 * 256;
    let pool = NodePool::new(NodePool::worst_case_bytes(entries, 4));
    let tree = Arc::new(OlcArt::new(4, Arc::clone(&pool)));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let tree = Arc::clone(&tree);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || worker(&tree, thread, &barrier))
        })
        .collect();
    let results: Vec<ThreadResult> = handles.into_iter().map(|h| h.join().expect("worker panicked")).collect();

    tree.verify().expect("tree invariants after the stress run");
    let mut expected_a = BTreeMap::new();
    let mut inserted_b = BTreeSet::new();
    let mut removed_b = BTreeSet::new();
    for result in &results {
        expected_a.extend(result.model.iter().map(|(k, v)| (k.to_vec(), *v)));
        for (k, v) in &result.inserted_b {
            assert!(inserted_b.insert((k.to_vec(), *v)), "duplicate insert record");
        }
        for entry in &result.removed_b {
            assert!(removed_b.insert(entry.clone()), "an entry came back from two remove_prefix calls");
        }
    }
    let mut actual_a = BTreeMap::new();
    let mut remaining_b = BTreeSet::new();
    tree.for_each(|k, v| {
        if k[0] == 0 {
            actual_a.insert(k.to_vec(), v);
        } else {
            remaining_b.insert((k.to_vec(), v));
        }
    });
    assert_eq!(actual_a, expected_a);
    assert!(removed_b.is_disjoint(&remaining_b));
    let accounted: BTreeSet<_> = removed_b.union(&remaining_b).cloned().collect();
    assert_eq!(accounted, inserted_b, "region B: inserts vs removed + remaining");
    assert_eq!(tree.len(), actual_a.len() + remaining_b.len());
}

/// A pool far too small for the key space: inserts run out of memory all the time,
/// removals must still succeed (shrinking or collapsing where memory allows, leaving a
/// node as it is where it does not), and ownership still makes every answer exact: an
/// insert that reports `OutOfNodeMemory` must have left its key absent.
#[test]
fn eight_threads_tight_pool() {
    const OPS: usize = 40_000;
    let pool = NodePool::new(NodePool::worst_case_bytes(KEYS_A as usize / 6, 4));
    let tree = Arc::new(OlcArt::new(4, Arc::clone(&pool)));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let tree = Arc::clone(&tree);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 ^ (thread as u64 + 7).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let own: Vec<u32> = (0..KEYS_A).filter(|id| *id as usize % THREADS == thread).collect();
                let mut model: BTreeMap<[u8; 4], u64> = BTreeMap::new();
                let mut out_of_memory = 0usize;
                barrier.wait();
                for step in 0..OPS {
                    if step % 512 == 0 {
                        std::thread::yield_now();
                    }
                    let key = key_a(own[rng.below(own.len() as u64) as usize]);
                    match rng.below(10) {
                        0..=4 => {
                            // Small values are inline, huge ones need leaves.
                            let value = if rng.below(2) == 0 { rng.below(1000) } else { u64::MAX - rng.below(1000) };
                            match tree.insert_if_absent(&key, value) {
                                Ok(Ok(())) => {
                                    assert!(model.insert(key, value).is_none(), "thread {thread}: inserted twice");
                                }
                                Ok(Err(existing)) => assert_eq!(Some(&existing), model.get(&key)),
                                Err(_) => {
                                    out_of_memory += 1;
                                    assert_eq!(tree.get(&key), model.get(&key).copied(), "failed insert changed {key:?}");
                                }
                            }
                        }
                        5..=8 => {
                            let expected = model.remove(&key);
                            assert_eq!(tree.remove(&key), expected, "thread {thread} remove {key:?}");
                        }
                        _ => assert_eq!(tree.get(&key), model.get(&key).copied()),
                    }
                }
                (model, out_of_memory)
            })
        })
        .collect();
    let mut expected = BTreeMap::new();
    let mut out_of_memory = 0;
    for handle in handles {
        let (model, failures) = handle.join().expect("worker panicked");
        expected.extend(model.into_iter().map(|(k, v)| (k.to_vec(), v)));
        out_of_memory += failures;
    }
    assert!(out_of_memory > 0, "the pool never ran out: the test does not test what it says");
    tree.verify().expect("tree invariants after the tight-pool run");
    let mut actual = BTreeMap::new();
    tree.for_each(|k, v| {
        actual.insert(k.to_vec(), v);
    });
    assert_eq!(actual, expected);
    assert_eq!(tree.len(), expected.len());
}

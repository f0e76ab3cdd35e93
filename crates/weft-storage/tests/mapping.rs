//! Both page tables against a `HashMap` model: lookups, insert-if-absent,
//! remove-if, fork listings, dropping a relation and truncating a fork the
//! way the pool does (list, then remove each entry), and concurrent
//! insert-if-absent races.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use weft_storage::mapping::{ArtMapping, BufferMapping, PartitionedHashMapping};
use weft_storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};

fn tag(rel: u32, fork: u8, block: u32) -> BufferTag {
    let fork = ForkNumber::ALL[fork as usize % 4];
    BufferTag::new(RelFileLocator::new(1663, 5, rel), fork, block)
}

/// Both mappings, sized for `capacity` buffers.
fn mappings(capacity: usize) -> Vec<Arc<dyn BufferMapping>> {
    vec![Arc::new(PartitionedHashMapping::new(capacity)), Arc::new(ArtMapping::new(capacity))]
}

#[derive(Debug, Clone)]
enum Op {
    Lookup(BufferTag),
    Insert(BufferTag, usize),
    Remove(BufferTag, usize),
    List(u32, u8),
    DropRelation(u32),
    Truncate(u32, u8, BlockNumber),
}

fn op() -> impl Strategy<Value = Op> {
    // Blocks spread over all four key bytes now and then.
    let block = prop_oneof![0u32..20, any::<u32>()];
    let t = (0u32..3, 0u8..4, block).prop_map(|(r, f, b)| tag(r, f, b));
    prop_oneof![
        4 => t.clone().prop_map(Op::Lookup),
        6 => (t.clone(), 0usize..8).prop_map(|(t, id)| Op::Insert(t, id)),
        3 => (t, 0usize..8).prop_map(|(t, id)| Op::Remove(t, id)),
        1 => (0u32..3, 0u8..4).prop_map(|(r, f)| Op::List(r, f)),
        1 => (0u32..3).prop_map(Op::DropRelation),
        1 => (0u32..3, 0u8..4, 0u32..20).prop_map(|(r, f, n)| Op::Truncate(r, f, n)),
    ]
}

/// Removes the entries of one fork at or past `from`, as the pool does: from
/// the mapping's listing, or (hash) from the model's knowledge of the tags.
fn remove_fork_tail(mapping: &dyn BufferMapping, model: &mut HashMap<BufferTag, usize>, rel: u32, fork: u8, from: BlockNumber) {
    let probe = tag(rel, fork, 0);
    let doomed: Vec<(BufferTag, usize)> = match mapping.fork_buffers(probe.rel, probe.fork) {
        Some(list) => list.into_iter().filter(|&(b, _)| b >= from).map(|(b, id)| (tag(rel, fork, b), id)).collect(),
        None => model.iter().filter(|(t, _)| t.rel == probe.rel && t.fork == probe.fork && t.block >= from).map(|(t, id)| (*t, *id)).collect(),
    };
    for (t, id) in doomed {
        assert!(mapping.remove(&t, id), "listed {t:?} -> {id} not removable");
        model.remove(&t);
    }
}

fn run_model(mapping: &dyn BufferMapping, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut model: HashMap<BufferTag, usize> = HashMap::new();
    for op in ops {
        match op {
            Op::Lookup(t) => prop_assert_eq!(mapping.lookup(&t), model.get(&t).copied()),
            Op::Insert(t, id) => {
                let expected = match model.get(&t) {
                    Some(&existing) => Err(existing),
                    None => {
                        model.insert(t, id);
                        Ok(())
                    }
                };
                prop_assert_eq!(mapping.insert(t, id).unwrap(), expected);
            }
            Op::Remove(t, id) => {
                let expected = model.get(&t) == Some(&id);
                if expected {
                    model.remove(&t);
                }
                prop_assert_eq!(mapping.remove(&t, id), expected);
            }
            Op::List(r, f) => {
                let probe = tag(r, f, 0);
                match mapping.fork_buffers(probe.rel, probe.fork) {
                    Some(mut list) => {
                        prop_assert!(mapping.lists_forks());
                        list.sort();
                        let mut expected: Vec<(BlockNumber, usize)> = model
                            .iter()
                            .filter(|(t, _)| t.rel == probe.rel && t.fork == probe.fork)
                            .map(|(t, id)| (t.block, *id))
                            .collect();
                        expected.sort();
                        prop_assert_eq!(list, expected);
                    }
                    None => prop_assert!(!mapping.lists_forks()),
                }
            }
            Op::DropRelation(r) => {
                for f in 0..4 {
                    remove_fork_tail(mapping, &mut model, r, f, 0);
                }
            }
            Op::Truncate(r, f, n) => remove_fork_tail(mapping, &mut model, r, f, n),
        }
        prop_assert_eq!(mapping.len(), model.len());
        if let Err(e) = mapping.verify() {
            return Err(TestCaseError::fail(e));
        }
    }
    for (t, id) in &model {
        prop_assert_eq!(mapping.lookup(t), Some(*id));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn mappings_match_model(ops in proptest::collection::vec(op(), 1..400)) {
        for mapping in mappings(64) {
            run_model(mapping.as_ref(), ops.clone())?;
        }
    }
}

/// Threads race to insert the same tags (over several relations, so that
/// inner trees are created concurrently): each tag has exactly one winner,
/// and the losers are told the winner's id.
#[test]
fn concurrent_insert_if_absent_has_one_winner() {
    for mapping in mappings(8192) {
        let winners: Vec<Vec<BufferTag>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4usize)
                .map(|thread| {
                    let mapping = mapping.as_ref();
                    s.spawn(move || {
                        let mut won = Vec::new();
                        for b in 0..2000u32 {
                            let t = tag(b % 5, (b / 5 % 2) as u8, b);
                            match mapping.insert(t, thread).unwrap() {
                                Ok(()) => won.push(t),
                                Err(other) => assert_ne!(other, thread, "{t:?} inserted twice by {thread}"),
                            }
                        }
                        won
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(winners.iter().map(Vec::len).sum::<usize>(), 2000, "{}", mapping.name());
        for (thread, won) in winners.iter().enumerate() {
            for t in won {
                assert_eq!(mapping.lookup(t), Some(thread));
            }
        }
        mapping.verify().unwrap();
    }
}

/// Eight threads insert and remove entries of a few relations (so inner trees
/// are retired and re-created under them) while racing on a few shared tags;
/// returns what each thread left in the mapping.
fn churn(mapping: &dyn BufferMapping) -> Vec<(BufferTag, usize)> {
    let kept: Vec<Vec<(BufferTag, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8usize)
            .map(|thread| {
                s.spawn(move || {
                    // Each thread owns the blocks congruent to its number.
                    let mut mine: HashMap<BufferTag, usize> = HashMap::new();
                    let mut x = 0x9e37_79b9_u64 + thread as u64;
                    for i in 0..20_000usize {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let t = tag((x % 3) as u32, ((x >> 8) % 2) as u8, ((x >> 16) % 16) as u32 * 8 + thread as u32);
                        let id = thread * 1_000_000 + i;
                        if let Some(old) = mine.remove(&t) {
                            assert!(mapping.remove(&t, old), "{t:?}");
                        } else {
                            assert_eq!(mapping.insert(t, id).unwrap(), Ok(()), "{t:?}");
                            mine.insert(t, id);
                        }
                        let shared = tag(7, 0, (x % 4) as u32);
                        if mapping.insert(shared, id).unwrap().is_ok() {
                            assert!(mapping.remove(&shared, id));
                        }
                    }
                    mine.into_iter().collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    kept.into_iter().flatten().collect()
}

/// After the churn the mapping holds exactly what each thread left.
#[test]
fn concurrent_churn_keeps_each_threads_entries() {
    for mapping in mappings(4096) {
        let kept = churn(mapping.as_ref());
        assert_eq!(mapping.len(), kept.len(), "{}", mapping.name());
        for (t, id) in &kept {
            assert_eq!(mapping.lookup(t), Some(*id));
        }
        mapping.verify().unwrap();
    }
}

/// Every ART node the churn allocated is, once the entries are gone, back on a
/// free list or waiting out its grace period: nothing leaks.
#[test]
fn art_churn_returns_every_node() {
    let mapping = ArtMapping::new(4096);
    let free_at_start = mapping.node_pool().free_slots();
    for round in 0..3 {
        for (t, id) in churn(&mapping) {
            assert!(mapping.remove(&t, id), "round {round}: {t:?}");
        }
        assert_eq!((mapping.len(), mapping.inner_trees()), (0, 0), "round {round}");
        let pool = mapping.node_pool();
        let taken: usize = free_at_start.iter().zip(pool.free_slots()).map(|(start, now)| start - now).sum();
        assert_eq!(taken, pool.retired_nodes(), "round {round}: slots neither free nor retired");
    }
}

/// The ART's node pool and slots are sized from the buffer count for the
/// worst case: every buffer (plus every eviction that may be in flight) a
/// page of a distinct relation fork, or all of them sparse blocks of one
/// fork. Neither may run out, repeatedly (freed nodes come back).
#[test]
fn art_node_pool_never_runs_out() {
    use weft_storage::mapping::art::INSERTS_IN_FLIGHT_MAX;
    let nbuffers = 4096;
    let entries = nbuffers + INSERTS_IN_FLIGHT_MAX;
    let mapping = ArtMapping::new(nbuffers);
    let (_, capacity) = mapping.node_bytes();
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for round in 0..3u32 {
        // Distinct relation forks (spread over all key bytes of the outer tree).
        let tags: Vec<BufferTag> = (0..entries as u32)
            .map(|i| {
                let scrambled = i.wrapping_mul(0x9e37_79b1) ^ round;
                BufferTag::new(RelFileLocator::new(1663 + (i & 7), 5 + (i >> 12), scrambled), ForkNumber::ALL[(i % 4) as usize], i)
            })
            .collect();
        for (id, t) in tags.iter().enumerate() {
            assert_eq!(mapping.insert(*t, id).unwrap(), Ok(()), "round {round}: distinct relation {id} of {entries}");
        }
        assert_eq!(mapping.inner_trees(), entries);
        mapping.verify().unwrap();
        for (id, t) in tags.iter().enumerate() {
            assert!(mapping.remove(t, id));
        }
        assert_eq!(mapping.inner_trees(), 0);
        // One fork, sparse random blocks: the deepest inner tree.
        let mut blocks = std::collections::HashSet::new();
        while blocks.len() < entries {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            blocks.insert(x as u32);
        }
        for (id, &block) in blocks.iter().enumerate() {
            let t = tag(1, 0, block);
            assert_eq!(mapping.insert(t, id).unwrap(), Ok(()), "round {round}: block {id} of {entries}");
        }
        mapping.verify().unwrap();
        assert_eq!(mapping.len(), entries);
        assert!(mapping.node_bytes().0 <= capacity);
        for (id, &block) in blocks.iter().enumerate() {
            assert!(mapping.remove(&tag(1, 0, block), id));
        }
        assert_eq!(mapping.len(), 0);
        mapping.verify().unwrap();
    }
}

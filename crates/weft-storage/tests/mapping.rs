//! The hash page table against a `HashMap` model.

use std::collections::HashMap;

use proptest::prelude::*;
use weft_storage::mapping::{BufferMapping, PartitionedHashMapping};
use weft_storage::{BufferTag, ForkNumber, RelFileLocator};

fn tag(rel: u32, fork: u8, block: u32) -> BufferTag {
    let fork = ForkNumber::ALL[fork as usize % 4];
    BufferTag::new(RelFileLocator::new(1663, 5, rel), fork, block)
}

#[derive(Debug, Clone)]
enum Op {
    Lookup(BufferTag),
    Insert(BufferTag, usize),
    Remove(BufferTag, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let t = (0u32..3, 0u8..4, 0u32..20).prop_map(|(r, f, b)| tag(r, f, b));
    prop_oneof![
        t.clone().prop_map(Op::Lookup),
        (t.clone(), 0usize..8).prop_map(|(t, id)| Op::Insert(t, id)),
        (t, 0usize..8).prop_map(|(t, id)| Op::Remove(t, id)),
    ]
}

proptest! {
    #[test]
    fn hash_mapping_matches_model(ops in proptest::collection::vec(op(), 1..300)) {
        let mapping = PartitionedHashMapping::new(16);
        let mut model: HashMap<BufferTag, usize> = HashMap::new();
        for op in ops {
            match op {
                Op::Lookup(t) => prop_assert_eq!(mapping.lookup(&t), model.get(&t).copied()),
                Op::Insert(t, id) => {
                    let expected = match model.get(&t) {
                        Some(&existing) => Err(existing),
                        None => { model.insert(t, id); Ok(()) }
                    };
                    prop_assert_eq!(mapping.insert(t, id), expected);
                }
                Op::Remove(t, id) => {
                    let expected = model.get(&t) == Some(&id);
                    if expected { model.remove(&t); }
                    prop_assert_eq!(mapping.remove(&t, id), expected);
                }
            }
            prop_assert_eq!(mapping.len(), model.len());
        }
        prop_assert!(mapping.relation_buffers(RelFileLocator::new(1663, 5, 0)).is_none());
    }
}

#[test]
fn concurrent_insert_if_absent_has_one_winner() {
    let mapping = PartitionedHashMapping::new(64);
    let winners: Vec<Vec<BufferTag>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4usize)
            .map(|thread| {
                let mapping = &mapping;
                s.spawn(move || {
                    (0..2000u32).map(|b| tag(1, 0, b)).filter(|t| mapping.insert(*t, thread).is_ok()).collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(winners.iter().map(Vec::len).sum::<usize>(), 2000);
    for (thread, won) in winners.iter().enumerate() {
        for t in won {
            assert_eq!(mapping.lookup(t), Some(thread));
        }
    }
}

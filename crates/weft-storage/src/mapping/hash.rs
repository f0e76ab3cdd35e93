//! The partitioned hash page table: PostgreSQL's `buf_table.c`, with
//! `NUM_BUFFER_PARTITIONS` = 128 partition locks. It cannot list a relation's
//! entries, so drop and truncate visit every buffer descriptor (or look up a
//! small relation's blocks one by one), as PostgreSQL does.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use super::BufferMapping;
use crate::sync::RwLock;
use crate::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};

/// Number of partitions of the hash page table (PostgreSQL's `NUM_BUFFER_PARTITIONS`).
pub const NUM_BUFFER_PARTITIONS: usize = 128;

/// A multiplicative hasher for fixed-size integer keys (the SipHash default
/// is several times slower and buys nothing: tags are not attacker-chosen).
#[derive(Default, Clone, Copy)]
pub struct TagHasher {
    hash: u64,
}

const TAG_HASH_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl TagHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(26) ^ word).wrapping_mul(TAG_HASH_SEED);
    }
}

impl Hasher for TagHasher {
    fn finish(&self) -> u64 {
        // Final avalanche so the low bits (used by hashbrown) and the high
        // bits (used for the partition) both depend on every field.
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_isize(&mut self, i: isize) {
        self.add(i as u64);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// The hash of a tag, as used to pick a partition.
pub fn tag_hash(tag: &BufferTag) -> u64 {
    let mut hasher = TagHasher::default();
    tag.hash(&mut hasher);
    hasher.finish()
}

type Partition = HashMap<BufferTag, usize, BuildHasherDefault<TagHasher>>;

/// One partition on its own cache lines, so neighbouring locks do not false-share.
#[repr(align(128))]
struct PaddedPartition(RwLock<Partition>);

/// The hash page table: 128 partitions, each a reader-writer lock around a
/// `HashMap`, the partition chosen by the tag's hash.
pub struct PartitionedHashMapping {
    partitions: Box<[PaddedPartition]>,
}

impl PartitionedHashMapping {
    /// `capacity` is the number of buffers; each partition reserves its share.
    pub fn new(capacity: usize) -> PartitionedHashMapping {
        let share = capacity.div_ceil(NUM_BUFFER_PARTITIONS) + 1;
        let partitions = (0..NUM_BUFFER_PARTITIONS)
            .map(|_| PaddedPartition(RwLock::new(Partition::with_capacity_and_hasher(share, Default::default()))))
            .collect();
        PartitionedHashMapping { partitions }
    }

    fn partition(&self, tag: &BufferTag) -> &RwLock<Partition> {
        // High bits: the HashMap inside uses the low ones.
        let index = (tag_hash(tag) >> 32) as usize % NUM_BUFFER_PARTITIONS;
        &self.partitions[index].0
    }
}

impl BufferMapping for PartitionedHashMapping {
    fn name(&self) -> &'static str {
        "hash"
    }

    fn lookup(&self, tag: &BufferTag) -> Option<usize> {
        self.partition(tag).read().get(tag).copied()
    }

    fn insert(&self, tag: BufferTag, buffer_id: usize) -> weft_common::Result<std::result::Result<(), usize>> {
        let mut partition = self.partition(&tag).write();
        Ok(match partition.get(&tag) {
            Some(&existing) => Err(existing),
            None => {
                partition.insert(tag, buffer_id);
                Ok(())
            }
        })
    }

    fn remove(&self, tag: &BufferTag, buffer_id: usize) -> bool {
        let mut partition = self.partition(tag).write();
        if partition.get(tag) == Some(&buffer_id) {
            partition.remove(tag);
            true
        } else {
            false
        }
    }

    fn lists_forks(&self) -> bool {
        false
    }

    fn fork_buffers(&self, _rel: RelFileLocator, _fork: ForkNumber) -> Option<Vec<(BlockNumber, usize)>> {
        None
    }

    fn len(&self) -> usize {
        self.partitions.iter().map(|p| p.0.read().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_spread_over_partitions() {
        let mut used = std::collections::HashSet::new();
        for block in 0..1024 {
            let tag = BufferTag::new(RelFileLocator::new(1663, 5, 16384), ForkNumber::Main, block);
            used.insert((tag_hash(&tag) >> 32) as usize % NUM_BUFFER_PARTITIONS);
        }
        assert!(used.len() > NUM_BUFFER_PARTITIONS * 9 / 10, "only {} partitions used", used.len());
    }
}

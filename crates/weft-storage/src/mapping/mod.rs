//! The page table: which buffer holds which page.
//!
//! The buffer pool talks to it only through [`BufferMapping`], so the
//! partitioned hash table ([`hash`], PostgreSQL's `buf_table.c`) and the
//! adaptive radix tree ([`art`], a tree of trees: relation fork → block) are
//! interchangeable, chosen at start-up (`buffer_mapping = hash | art`).
//!
//! The mapping is a hint, not the authority: the pool always re-checks a
//! buffer's tag under its header lock after a lookup, so a lookup racing with
//! an eviction returns a stale id at worst and the caller retries. What the
//! mapping must guarantee is that `insert` is insert-if-absent, atomically,
//! so two threads missing on the same page agree on one buffer.
//!
//! Dropping or truncating a relation asks `fork_buffers`: a structure that can
//! list one relation fork's entries cheaply (the ART, by its inner tree)
//! returns them, so the work is proportional to the fork's cached pages; the
//! hash table returns `None`, meaning "visit every descriptor (or look the
//! blocks up one by one)", as PostgreSQL does.

pub mod art;
pub mod hash;

pub use art::ArtMapping;
pub use hash::{tag_hash, PartitionedHashMapping, TagHasher, NUM_BUFFER_PARTITIONS};

use crate::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};

/// A concurrent map from page to buffer id.
pub trait BufferMapping: Send + Sync {
    /// Short name for EXPLAIN and statistics (`"hash"`, `"art"`).
    fn name(&self) -> &'static str;

    /// The buffer believed to hold `tag`.
    fn lookup(&self, tag: &BufferTag) -> Option<usize>;

    /// Maps `tag` to `buffer_id` unless `tag` is already mapped, in which case
    /// nothing changes and the existing id is returned (`Ok(Err(existing))`).
    /// `Err` only if the structure is out of memory (SQLSTATE 53200), which a
    /// mapping sized from `shared_buffers` rules out (see `art`).
    fn insert(&self, tag: BufferTag, buffer_id: usize) -> weft_common::Result<std::result::Result<(), usize>>;

    /// Removes `tag` if it maps to `buffer_id`; returns whether it did.
    fn remove(&self, tag: &BufferTag, buffer_id: usize) -> bool;

    /// Whether [`fork_buffers`](Self::fork_buffers) lists entries (`true`) or
    /// always answers `None` (`false`).
    fn lists_forks(&self) -> bool;

    /// Every entry of one fork of `rel` as (block, buffer id), if the
    /// structure can list them without a full scan; `None` tells the caller
    /// to scan all descriptors. Not a snapshot under concurrent change: the
    /// caller keeps other users of the relation out.
    fn fork_buffers(&self, rel: RelFileLocator, fork: ForkNumber) -> Option<Vec<(BlockNumber, usize)>>;

    /// Number of entries (exact only when no thread is changing the map).
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks the structure's own invariants (quiescent use only).
    fn verify(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

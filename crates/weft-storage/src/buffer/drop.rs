//! Forgetting a relation's buffers: DROP, TRUNCATE, and DROP of many
//! relations in one statement (PostgreSQL's `DropRelationBuffers` and
//! `DropRelationsAllBuffers`).
//!
//! How the buffers to forget are found depends on the page table:
//!
//! - **ART** (`BufferMapping::lists_forks`): each fork's inner tree lists
//!   exactly the fork's cached pages, so the work is proportional to the
//!   relation's cached pages, whatever `shared_buffers` is. Invalidating
//!   the last of them retires the (now empty) inner tree.
//! - **hash**: PostgreSQL's way. Visit every buffer descriptor, once for all
//!   the relations of the statement (a set lookup per descriptor); unless
//!   the relations are known to be small: when the blocks to forget number
//!   fewer than `NBuffers / 32` (`BUF_DROP_FULL_SCAN_THRESHOLD`), look each
//!   block up in the page table instead. PostgreSQL 15 knows the exact size
//!   of a fork only during recovery (`smgrnblocks_cached`); the pool knows
//!   it always, because it records for each fork an upper bound of the
//!   blocks it has ever mapped (`mapped_bounds`, kept only with the hash
//!   mapping, one sharded mutex per miss). The shortcut is off by default,
//!   as PostgreSQL 15 runs outside recovery (the `weft_buffer_drop_lookup`
//!   setting, `set_drop_lookup_shortcut(true)`, turns it on).
//!
//! Every path invalidates a buffer only after re-checking its tag under the
//! header lock (`invalidate_if`), so a stale listing or lookup is harmless.
//! The caller keeps other users of the relations out meanwhile (the
//! relation lock in PostgreSQL; the write lock and commit in weft).

use std::collections::{HashMap, HashSet};

use weft_common::Result;

use super::desc::{IO_IN_PROGRESS, REFCOUNT_MASK};
use super::{bump, BufferPool};
use crate::sync::{Mutex, Ordering};
use crate::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};

/// Shards of `mapped_bounds`, so that two threads missing on different
/// relations rarely meet on one mutex.
pub(crate) const MAPPED_BOUND_SHARDS: usize = 16;

/// For each fork: one more than the highest block ever mapped since the pool
/// started (or since the fork's last drop/truncate). Kept for the hash
/// mapping only; an absent fork has no buffers.
pub(crate) type MappedBounds = Box<[Mutex<HashMap<(RelFileLocator, ForkNumber), BlockNumber>>]>;

pub(crate) fn new_mapped_bounds() -> MappedBounds {
    (0..MAPPED_BOUND_SHARDS).map(|_| Mutex::new(HashMap::new())).collect()
}

fn bound_shard(rel: RelFileLocator) -> usize {
    (rel.rel_number as usize ^ rel.db_oid as usize) % MAPPED_BOUND_SHARDS
}

/// PostgreSQL's `BUF_DROP_FULL_SCAN_THRESHOLD` is `NBuffers / 32`.
pub const DROP_FULL_SCAN_DIVISOR: usize = 32;

impl BufferPool {
    /// With the hash mapping, whether drop and truncate of a relation known
    /// to be small look its blocks up one by one instead of visiting every
    /// descriptor (off by default, as PostgreSQL 15 outside recovery). Has no
    /// effect with the ART.
    pub fn set_drop_lookup_shortcut(&self, enabled: bool) {
        self.drop_lookup_shortcut.store(enabled, Ordering::Relaxed);
    }

    /// Records that `tag` is about to be mapped (hash mapping only).
    pub(super) fn note_mapped_block(&self, tag: &BufferTag) {
        if self.mapping.lists_forks() {
            return;
        }
        let mut shard = self.mapped_bounds[bound_shard(tag.rel)].lock();
        let bound = shard.entry((tag.rel, tag.fork)).or_insert(0);
        if *bound <= tag.block {
            *bound = tag.block + 1;
        }
    }

    pub(super) fn mapped_bound(&self, rel: RelFileLocator, fork: ForkNumber) -> BlockNumber {
        self.mapped_bounds[bound_shard(rel)].lock().get(&(rel, fork)).copied().unwrap_or(0)
    }

    /// Blocks below which the hash mapping looks blocks up one by one.
    fn drop_lookup_limit(&self) -> u64 {
        if self.drop_lookup_shortcut.load(Ordering::Relaxed) {
            (self.nbuffers() / DROP_FULL_SCAN_DIVISOR) as u64
        } else {
            0
        }
    }

    /// Forgets buffer `id` if its tag satisfies `doomed`, without writing it;
    /// waits for I/O in progress first. Pins are not waited for: a holder
    /// keeps reading its copy, its changes are discarded.
    pub(super) fn invalidate_if(&self, id: usize, doomed: &impl Fn(&BufferTag) -> bool) {
        bump(&self.stats.invalidation_visits);
        let desc = &self.arena.descs[id];
        let mut header = desc.header.lock();
        loop {
            match *header {
                Some(tag) if doomed(&tag) => {}
                _ => return,
            }
            if desc.load() & IO_IN_PROGRESS != 0 {
                desc.io_done.wait(&mut header);
                continue;
            }
            break;
        }
        if let Some(tag) = header.take() {
            desc.update(|s| s & REFCOUNT_MASK);
            self.mapping.remove(&tag, id);
        }
    }

    /// Invalidates the buffers of `fork` of `rel` at or past block `from`,
    /// through the mapping's listing (ART only).
    fn invalidate_listed(&self, rel: RelFileLocator, fork: ForkNumber, from: BlockNumber) {
        let Some(entries) = self.mapping.fork_buffers(rel, fork) else { return };
        let doomed = |tag: &BufferTag| tag.rel == rel && tag.fork == fork && tag.block >= from;
        for (block, id) in entries {
            if block >= from {
                self.invalidate_if(id, &doomed);
            }
        }
    }

    /// Invalidates blocks `from..to` of a fork by looking each one up.
    fn invalidate_looked_up(&self, rel: RelFileLocator, fork: ForkNumber, from: BlockNumber, to: BlockNumber) {
        for block in from..to {
            let tag = BufferTag { rel, fork, block };
            if let Some(id) = self.mapping.lookup(&tag) {
                self.invalidate_if(id, &|t: &BufferTag| *t == tag);
            }
        }
    }

    /// Visits every descriptor once, invalidating those `doomed` accepts.
    fn invalidate_full_scan(&self, doomed: &impl Fn(&BufferTag) -> bool) {
        for id in 0..self.nbuffers() {
            self.invalidate_if(id, doomed);
        }
    }

    /// Forgets every buffer of `rel` without writing (DROP, TRUNCATE) and its
    /// cached sizes. The caller must keep other users of `rel` out meanwhile.
    pub fn drop_relation_buffers(&self, rel: RelFileLocator) {
        self.drop_relations_buffers(&[rel]);
    }

    /// Forgets every buffer of every relation in `rels` without writing (a
    /// DROP of several tables, or a commit that dropped several relations):
    /// with the hash mapping one pass over the descriptors serves them all
    /// (PostgreSQL's `DropRelationsAllBuffers`); with the ART each fork's
    /// inner tree is emptied and retired. The caller must keep other users
    /// of these relations out meanwhile.
    pub fn drop_relations_buffers(&self, rels: &[RelFileLocator]) {
        if rels.is_empty() {
            return;
        }
        for &rel in rels {
            self.zone_maps.forget(rel);
        }
        let started = std::time::Instant::now();
        if self.mapping.lists_forks() {
            for &rel in rels {
                for fork in ForkNumber::ALL {
                    self.invalidate_listed(rel, fork, 0);
                }
            }
        } else {
            self.drop_relations_hash(rels);
        }
        let doomed: HashSet<RelFileLocator> = rels.iter().copied().collect();
        self.nblocks.lock().retain(|(r, _), _| !doomed.contains(r));
        let mut pending = self.pending_sync.lock();
        for rel in rels {
            pending.remove(rel);
        }
        self.stats.invalidation_ns.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn drop_relations_hash(&self, rels: &[RelFileLocator]) {
        let mut bounds = Vec::new();
        for &rel in rels {
            for fork in ForkNumber::ALL {
                let bound = self.mapped_bound(rel, fork);
                if bound > 0 {
                    bounds.push((rel, fork, bound));
                }
            }
        }
        let total: u64 = bounds.iter().map(|&(_, _, b)| b as u64).sum();
        if total < self.drop_lookup_limit() {
            for &(rel, fork, bound) in &bounds {
                self.invalidate_looked_up(rel, fork, 0, bound);
            }
        } else if rels.len() == 1 {
            let rel = rels[0];
            self.invalidate_full_scan(&|tag: &BufferTag| tag.rel == rel);
        } else {
            let doomed: HashSet<RelFileLocator> = rels.iter().copied().collect();
            self.invalidate_full_scan(&|tag: &BufferTag| doomed.contains(&tag.rel));
        }
        for &rel in rels {
            let mut shard = self.mapped_bounds[bound_shard(rel)].lock();
            for fork in ForkNumber::ALL {
                shard.remove(&(rel, fork));
            }
        }
    }

    /// Cuts a fork to `nblocks` blocks: forgets the buffers past it without
    /// writing them, then truncates the file. The caller must keep other
    /// users of `rel` out meanwhile.
    pub fn truncate_relation(&self, rel: RelFileLocator, fork: ForkNumber, nblocks: BlockNumber) -> Result<()> {
        self.zone_maps.forget(rel);
        let started = std::time::Instant::now();
        if self.mapping.lists_forks() {
            self.invalidate_listed(rel, fork, nblocks);
        } else {
            let bound = self.mapped_bound(rel, fork);
            if bound > nblocks {
                if ((bound - nblocks) as u64) < self.drop_lookup_limit() {
                    self.invalidate_looked_up(rel, fork, nblocks, bound);
                } else {
                    self.invalidate_full_scan(&|tag: &BufferTag| {
                        tag.rel == rel && tag.fork == fork && tag.block >= nblocks
                    });
                }
                self.mapped_bounds[bound_shard(rel)].lock().insert((rel, fork), nblocks);
            }
        }
        self.stats.invalidation_ns.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let mut sizes = self.nblocks.lock();
        self.smgr.truncate(rel, fork, nblocks)?;
        sizes.insert((rel, fork), nblocks);
        Ok(())
    }
}

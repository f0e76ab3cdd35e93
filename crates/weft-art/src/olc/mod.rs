//! `OlcArt`: a concurrent adaptive radix tree with optimistic lock coupling.
//!
//! The design, the version-word protocol, the restart rules, reclamation, the pool
//! and its worst case, and the numbered invariants are in `olc/README.md` (below).
//!
//! Module map:
//! - `sync`: every atomic, lock and thread-local (std, or shuttle's under the
//!   `shuttle` feature);
//! - `node`: node layouts, the version word, per-kind child operations;
//! - `pool`: `NodePool`, slabs per size class, free lists, reclamation queue;
//! - `epoch`: the epoch domain (pinning, advancing);
//! - `tree`: lookups, inserts, removals (optimistic lock coupling);
//! - `scan`: ordered iteration, `remove_prefix`, `verify`, statistics, drop.
//!
//! - `slab_memory`: the one module with `unsafe` (zeroed slab allocation and a
//!   `madvise` hint), with its safety contract at its top.
//!
//! Nothing else here uses `unsafe` (`deny` below, allowed only in `slab_memory`): nodes
//! are named by slab index and all their fields are atomics, so optimistic reads are
//! defined behaviour.
#![doc = include_str!("README.md")]
#![deny(unsafe_code)]

mod epoch;
mod slab_memory;
mod node;
mod pool;
mod scan;
mod sync;
mod tree;

use std::sync::Arc;

pub use pool::NodePool;
pub use scan::NodeCounts;

use node::key_from_bytes;
use sync::{AtomicU64, AtomicUsize};

/// A caller's memo of the last-level node (the one whose children are inline values)
/// that served a lookup, with the version it had then: [`OlcArt::get_hinted`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastLevelHint {
    node: node::NodeRef,
    version: u64,
    /// The key bytes the node covers (the key masked to the node's depth).
    prefix: u128,
}

impl LastLevelHint {
    /// A hint that names no node.
    pub const EMPTY: LastLevelHint = LastLevelHint { node: node::NULL_REF, version: 0, prefix: 0 };
}

/// The pool had no slot for a new node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfNodeMemory;

impl std::fmt::Display for OutOfNodeMemory {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("out of adaptive radix tree node memory")
    }
}

impl std::error::Error for OutOfNodeMemory {}

/// A concurrent adaptive radix tree: keys of exactly `key_len` bytes (1..=16),
/// compared as big-endian byte strings; `u64` values. Readers take no lock
/// (version validation, restart on conflict); writers lock only the nodes they change.
///
/// A key of the wrong length is a caller bug: debug builds panic on it; release
/// builds treat it as absent (`get`, `remove`, `remove_if`, iteration and
/// `remove_prefix` with a too-long prefix find nothing) and refuse to store it
/// (`insert_if_absent`/`upsert` return `Err(OutOfNodeMemory)`).
pub struct OlcArt {
    key_len: usize,
    pool: Arc<NodePool>,
    /// Version word of the root slot (the root slot is locked like a node's child word).
    root_version: AtomicU64,
    /// The root: null, a leaf, or an inner node.
    root: AtomicU64,
    /// Written by every insert and removal: on lines of its own, away from the root
    /// words every lookup reads.
    len: sync::Padded<AtomicUsize>,
    /// Removals that could not shrink a node for lack of memory (the node stays in its
    /// larger kind; `verify` then accepts fewer children than the kind's minimum).
    /// Written only when the pool is exhausted: it shares the root's line, and the tree
    /// is two 128-byte blocks (a buffer mapping keeps one tree per possible fork).
    shrinks_skipped: AtomicUsize,
}

impl OlcArt {
    /// An empty tree over keys of `key_len` bytes (1..=16) whose nodes come from `pool`.
    ///
    /// # Panics
    /// If `key_len` is not in 1..=16 (a construction-time programming error).
    pub fn new(key_len: usize, pool: Arc<NodePool>) -> OlcArt {
        assert!((1..=node::KEY_LEN_MAX).contains(&key_len), "OlcArt key_len {key_len} not in 1..=16");
        OlcArt {
            key_len,
            pool,
            root_version: AtomicU64::new(0),
            root: AtomicU64::new(node::NULL_REF),
            len: sync::Padded(AtomicUsize::new(0)),
            shrinks_skipped: AtomicUsize::new(0),
        }
    }

    pub fn key_len(&self) -> usize {
        self.key_len
    }

    /// The pool the tree's nodes come from.
    pub fn pool(&self) -> &Arc<NodePool> {
        &self.pool
    }

    fn key_ok(&self, key: &[u8]) -> bool {
        debug_assert_eq!(key.len(), self.key_len, "OlcArt key of wrong length");
        key.len() == self.key_len
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        if !self.key_ok(key) {
            return None;
        }
        self.get_key(key_from_bytes(key))
    }

    /// `get`, first trying the last-level node `hint` remembers (from an earlier
    /// lookup in this tree by the same caller), which skips the walk from the root
    /// when that node is unchanged since; the hint is updated when the walk is taken.
    /// A hint is only meaningful for the tree that filled it: the caller keeps one
    /// per tree (a hint from another tree could name a node holding the same prefix).
    #[inline]
    pub fn get_hinted(&self, key: &[u8], hint: &mut LastLevelHint) -> Option<u64> {
        if !self.key_ok(key) {
            return None;
        }
        self.get_key_hinted(key_from_bytes(key), hint)
    }

    /// Inserts unless present: Ok(Ok(())) inserted, Ok(Err(existing)) already there.
    pub fn insert_if_absent(&self, key: &[u8], value: u64) -> Result<Result<(), u64>, OutOfNodeMemory> {
        if !self.key_ok(key) {
            return Err(OutOfNodeMemory);
        }
        match self.insert_key(key_from_bytes(key), value, false)? {
            tree::InsertOutcome::Inserted => Ok(Ok(())),
            tree::InsertOutcome::Present(existing) => Ok(Err(existing)),
        }
    }

    /// Inserts or replaces; returns the old value.
    pub fn upsert(&self, key: &[u8], value: u64) -> Result<Option<u64>, OutOfNodeMemory> {
        if !self.key_ok(key) {
            return Err(OutOfNodeMemory);
        }
        match self.insert_key(key_from_bytes(key), value, true)? {
            tree::InsertOutcome::Inserted => Ok(None),
            tree::InsertOutcome::Present(old) => Ok(Some(old)),
        }
    }

    pub fn remove(&self, key: &[u8]) -> Option<u64> {
        if !self.key_ok(key) {
            return None;
        }
        self.remove_key(key_from_bytes(key), None)
    }

    /// Removes `key` only if it maps to `expected`.
    pub fn remove_if(&self, key: &[u8], expected: u64) -> bool {
        if !self.key_ok(key) {
            return false;
        }
        self.remove_key(key_from_bytes(key), Some(expected)).is_some()
    }

    /// Every entry in key order (each entry seen is one that was present at some
    /// point during the call; not a snapshot under concurrent change).
    pub fn for_each(&self, mut f: impl FnMut(&[u8], u64)) {
        self.scan(0, 0, &mut f);
    }

    /// Entries whose key starts with `prefix`, in key order.
    pub fn for_each_prefix(&self, prefix: &[u8], mut f: impl FnMut(&[u8], u64)) {
        debug_assert!(prefix.len() <= self.key_len, "OlcArt prefix longer than the key");
        if prefix.len() > self.key_len {
            return;
        }
        self.scan(key_from_bytes(prefix), prefix.len(), &mut f);
    }

    /// Unlinks the whole subtree under `prefix` at once and returns its entries
    /// (their nodes go back to the pool after the grace period).
    ///
    /// The entries come back in key order. Work is proportional to the subtree; the
    /// parent of the subtree stays locked meanwhile (README rule 6).
    pub fn remove_prefix(&self, prefix: &[u8]) -> Vec<(Vec<u8>, u64)> {
        debug_assert!(prefix.len() <= self.key_len, "OlcArt prefix longer than the key");
        if prefix.len() > self.key_len {
            return Vec::new();
        }
        self.remove_prefix_key(key_from_bytes(prefix), prefix.len())
            .into_iter()
            .map(|(key, value)| (key.to_be_bytes()[..self.key_len].to_vec(), value))
            .collect()
    }

    /// Removes everything (as remove_prefix(&[])).
    pub fn clear(&self) -> Vec<(Vec<u8>, u64)> {
        self.remove_prefix(&[])
    }

    /// Number of entries (exact when quiescent).
    pub fn len(&self) -> usize {
        self.len.load(sync::Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks the tree's invariants (quiescent use): node kinds vs child counts,
    /// sorted keys in Node4/16, Node48 index consistency, prefixes, key lengths,
    /// len, versions unlocked. Err names the first violation.
    pub fn verify(&self) -> Result<(), String> {
        self.verify_tree()
    }
}

impl Drop for OlcArt {
    /// Returns all nodes to the pool.
    fn drop(&mut self) {
        self.free_all();
    }
}
